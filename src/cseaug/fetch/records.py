"""``<data dir>/.fetched.json``: what ``cseaug data fetch`` put there, from where, with which
sha256 (the trust-on-first-use reference of a file without a published one).

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_record(folder, "a.txt", {"sha256": "ab12", "checksum": "first use"})
    >>> read_records(folder)["a.txt"]["sha256"]
    'ab12'
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cseaug.dataset.atomic import write_text_atomic
from cseaug.errors import InputError

RECORDS_FILE = ".fetched.json"


def read_records(data_dir: Path) -> dict[str, dict[str, Any]]:
    """Every record of ``data_dir`` (empty when nothing was fetched there yet)."""
    path = Path(data_dir) / RECORDS_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot read {path}: {exc}; move it away and fetch again to rebuild it"
        ) from exc
    return dict(data.get("files", {}))


def write_record(data_dir: Path, target: str, record: dict[str, Any]) -> None:
    """Add or replace the record of ``target`` (a path relative to ``data_dir``)."""
    records = read_records(data_dir)
    records[target] = record
    document = {
        "about": "files written by `cseaug data fetch`: source URL and sha256 of each "
        "(checksum 'catalogue': matched the published sha256; 'first use': none is "
        "published, this sha256 is the reference later fetches are checked against)",
        "files": dict(sorted(records.items())),
    }
    write_text_atomic(Path(data_dir) / RECORDS_FILE, json.dumps(document, indent=2) + "\n")
