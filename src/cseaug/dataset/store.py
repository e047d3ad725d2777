"""An output root on an object store (or a local directory): the few fsspec calls the
publisher and the readers need, on paths relative to the root; credentials come from the
environment (docs/deployment.md).

Example:
    >>> store = Store.from_root("memory://demo-store")
    >>> store.create("a/claim", b"1"), store.create("a/claim", b"2"), store.read_bytes("a/claim")
    (True, False, b'1')
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cseaug.errors import InputError
from cseaug.roots import check_root

CHUNK = 8 * 2**20


@dataclass(frozen=True)
class StoredObject:
    """Size and last-modified time (UTC) of one object, as the store lists them."""

    size: int
    modified: datetime


@dataclass(frozen=True)
class Store:
    """An fsspec filesystem and a root path on it."""

    fs: Any
    base: str
    uri: str

    @classmethod
    def from_root(cls, root: str | Path) -> Store:
        """The store of an output root (``s3://bucket/prefix``, ``memory://name``, a directory);
        ConfigError for an unknown protocol or one whose package is missing."""
        import fsspec

        uri = check_root(str(root)).rstrip("/")
        fs, base = fsspec.core.url_to_fs(uri)
        return cls(fs, base.rstrip("/"), uri)

    def path(self, relative: str) -> str:
        """The filesystem path of ``relative`` (no protocol)."""
        return f"{self.base}/{relative.strip('/')}" if relative else self.base

    def url(self, relative: str = "") -> str:
        """The full URI of ``relative`` (what users and ``datasets.load_dataset`` see)."""
        return f"{self.uri}/{relative.strip('/')}" if relative else self.uri

    def exists(self, relative: str) -> bool:
        return bool(self.fs.exists(self.path(relative)))

    def glob(self, pattern: str) -> list[str]:
        """Paths matching ``pattern``, relative to the root, sorted (listed afresh: another
        process may have published since this one last listed)."""
        self.fs.invalidate_cache()
        return sorted(p.removeprefix(f"{self.base}/") for p in self.fs.glob(self.path(pattern)))

    def find(self, relative: str) -> list[str]:
        """Every file under ``relative``, relative to it, sorted (listed afresh)."""
        self.fs.invalidate_cache(self.path(relative))
        found = self.fs.find(self.path(relative))
        return sorted(p.removeprefix(f"{self.path(relative)}/") for p in found)

    def listing(self, relative: str) -> dict[str, StoredObject]:
        """Every object under ``relative`` with its size and time, keyed by its path relative to
        the root, in one fresh listing (s3fs's directory entries left out)."""
        self.fs.invalidate_cache(self.path(relative))
        prefix = self.base + "/"
        found = self.fs.find(self.path(relative), detail=True)
        return {
            path[len(prefix) :]: StoredObject(
                int(info.get("size") or 0), self._modified(path, info)
            )
            for path, info in found.items()
            if info.get("type") != "directory"
        }

    def _modified(self, path: str, info: dict[str, Any]) -> datetime:
        """The time in a listing entry (s3fs ``LastModified``, local ``mtime``, memory
        ``created``), else asked for (one request)."""
        value = next((info[k] for k in ("LastModified", "mtime", "created") if k in info), None)
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value, UTC)
        stamp = value if isinstance(value, datetime) else self.fs.modified(path)
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)

    def remove(self, relatives: Iterable[str]) -> None:
        """Delete these objects (batched by the filesystem: S3 ``DeleteObjects``)."""
        if paths := [self.path(relative) for relative in relatives]:
            self.fs.rm(paths)
            self.fs.invalidate_cache()

    def read_bytes(self, relative: str) -> bytes:
        try:
            return bytes(self.fs.cat_file(self.path(relative)))
        except FileNotFoundError:
            raise InputError(f"{self.url(relative)} not found") from None

    def create(self, relative: str, data: bytes) -> bool:
        """Write ``data`` only if nothing is at ``relative`` yet (S3 ``If-None-Match: *``);
        False when something is."""
        try:
            self.fs.pipe_file(self.path(relative), data, mode="create")
        except FileExistsError:
            return False
        return True

    def put(self, relative: str, data: bytes) -> None:
        """Write ``data`` to ``relative``, replacing what is there (a writer's own lease)."""
        self.fs.pipe_file(self.path(relative), data)

    def put_file(self, local: Path, relative: str) -> None:
        """Upload one local file to ``relative`` (only into a prefix this writer claimed)."""
        self.fs.put_file(str(local), self.path(relative))

    def get_file(self, relative: str, local: Path) -> None:
        """Download one file to ``local``."""
        local.parent.mkdir(parents=True, exist_ok=True)
        self.fs.get_file(self.path(relative), str(local))

    def sha256(self, relative: str) -> str:
        """sha256 of a stored file, streamed in chunks (never whole in memory)."""
        with self.fs.open(self.path(relative), "rb", block_size=CHUNK) as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
