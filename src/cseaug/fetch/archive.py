"""Put downloaded files in place: a verified file renamed, or the archive members an entry
names, each to its own target (never a path from the archive), checked before its rename.

Example:
    >>> import io, tarfile, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with tarfile.open(folder / "a.tgz", "w:gz") as tar:
    ...     info = tarfile.TarInfo("x/hello.txt"); info.size = 5
    ...     tar.addfile(info, io.BytesIO(b"hello"))
    >>> sha = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    >>> extract_members(folder / "a.tgz", [Member("x/hello.txt", "out/hello.txt", sha)], folder)
    >>> (folder / "out" / "hello.txt").read_text()
    'hello'
"""

from __future__ import annotations

import os
import shutil
import tarfile
from collections.abc import Sequence
from pathlib import Path

from cseaug.dataset.atomic import atomic_path, fsync_path
from cseaug.errors import DownloadError
from cseaug.fetch.catalog import Member
from cseaug.hashing import file_sha256


def place(part: Path, target: Path) -> None:
    """Rename a complete, verified part file onto ``target`` (fsynced, so a crash leaves
    either the old state or the whole file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fsync_path(part)
    os.replace(part, target)
    fsync_path(target.parent)


def extract_members(archive: Path, members: Sequence[Member], data_dir: Path) -> None:
    """Extract ``members`` of a tar archive to their targets under ``data_dir``; a
    DownloadError when the archive is unreadable or a member missing or changed."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in members:
                _extract(tar, archive, member, data_dir / member.target)
    except tarfile.TarError as exc:
        raise DownloadError(f"{archive} is not a readable tar archive: {exc}") from exc


def _extract(tar: tarfile.TarFile, archive: Path, member: Member, target: Path) -> None:
    try:
        info = tar.getmember(member.name)
    except KeyError:
        raise DownloadError(
            f"{archive} has no member {member.name} (needed for {target}); "
            "the archive differs from the one the catalogue describes"
        ) from None
    source = tar.extractfile(info) if info.isfile() else None
    if source is None:
        raise DownloadError(f"{member.name} in {archive} is not a regular file")
    with atomic_path(target) as tmp:
        with source, tmp.open("wb") as out:
            shutil.copyfileobj(source, out)
        got = file_sha256(tmp)
        if got != member.sha256:
            raise DownloadError(
                f"sha256 mismatch for {target} ({member.name} in {archive}): "
                f"expected {member.sha256}, got {got}; nothing was written to {target}"
            )
