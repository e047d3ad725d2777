"""The one place that hashes files (in blocks: flat memory for any size) and JSON (one
canonical form: the same data gives the same digest on any machine).

Example:
    >>> json_sha256({"b": 1, "a": [1, 2]}) == json_sha256({"a": [1, 2], "b": 1})
    True
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cseaug.errors import InputError


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes.

    Example:
        >>> from pathlib import Path
        >>> path = Path("/tmp/cseaug-hashing-doctest.txt")
        >>> _ = path.write_text("abc")
        >>> file_sha256(path)[:16]
        'ba7816bf8f01cfea'
    """
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def path_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, or of a directory: its files' relative paths and sha256, sorted."""
    path = Path(path)
    if path.is_file():
        return file_sha256(path)
    if path.is_dir():
        digest = hashlib.sha256()
        for item in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(f"{item.relative_to(path).as_posix()}\x00{file_sha256(item)}\n".encode())
        return digest.hexdigest()
    raise InputError(f"input {path} does not exist: cannot record its sha256")


def json_sha256(data: Any, *, ascii_only: bool = False) -> str:
    """Hex sha256 of the canonical JSON of ``data`` (sorted keys, no spaces, other values as
    ``str``); ``ascii_only`` escapes non-ASCII characters, as config fingerprints were defined.

    Example:
        >>> json_sha256({"a": "é"}) == json_sha256({"a": "é"}, ascii_only=True)
        False
    """
    canonical = json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii_only, default=str
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
