"""The sha256 of a version's exports, kept beside them so ``cseaug verify`` checks them too.

``<root>/exports/<name>/<version>/exports.json`` maps each export written into that folder
to its sha256 and the version's data fingerprint (updated under a lock, atomically); an
export written elsewhere is the user's file and is not recorded.

Example:
    >>> exports_folder("storage/datasets/wiki-sts/v0001")
    PosixPath('storage/exports/wiki-sts/v0001')
"""

from __future__ import annotations

import json
from pathlib import Path

from cseaug.dataset import versions
from cseaug.dataset.atomic import write_text_atomic
from cseaug.hashing import file_sha256

RECORD_FILE = "exports.json"
LOCK_FILE = ".exports.lock"


def exports_folder(version_dir: str | Path) -> Path | None:
    """``<root>/exports/<name>/<version>`` of ``<root>/datasets/<name>/<version>``; None for a
    version directory outside that layout (a copy elsewhere has no export folder)."""
    version_dir = Path(version_dir)
    if version_dir.parent.parent.name != "datasets":
        return None
    return version_dir.parents[2] / "exports" / version_dir.parent.name / version_dir.name


def record_export(version_dir: str | Path, written: str | Path) -> None:
    """Add the file (or a hybrid's directory of files) ``written`` to the version's record;
    nothing when ``written`` is not inside the export folder or ``version_dir`` has no
    manifest (not a published version)."""
    version_dir = Path(version_dir).resolve()
    folder = exports_folder(version_dir)
    written = Path(written).resolve()
    if folder is None or folder.resolve() not in written.parents:
        return
    if not (version_dir / versions.MANIFEST_FILE).is_file():
        return
    folder = folder.resolve()
    files = sorted(p for p in written.rglob("*") if p.is_file()) if written.is_dir() else [written]
    with versions.locked(folder / LOCK_FILE):
        path = folder / RECORD_FILE
        record = json.loads(path.read_text("utf-8")) if path.is_file() else {"files": {}}
        fingerprint = versions.read_manifest(version_dir)["fingerprints"]["data"]
        for path in files:
            record["files"][path.relative_to(folder).as_posix()] = {
                "sha256": file_sha256(path),
                "data_fingerprint": fingerprint,
            }
        write_text_atomic(folder / RECORD_FILE, json.dumps(record, indent=2, sort_keys=True) + "\n")
