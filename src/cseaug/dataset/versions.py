"""Where versions live (``<root>/datasets/<name>/v0001``, ...), how they are found and
listed, and the lock that orders publishers (docs/dataset-contract.md, "Layout"). On an
object store only committed versions are listed and readers open a local copy.

Example:
    >>> parse_ref("wiki-sts/v0002"), parse_ref("wiki-sts"), parse_ref("wiki-sts/latest")
    (('wiki-sts', 'v0002'), ('wiki-sts', None), ('wiki-sts', None))
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cseaug.config import DATASET_NAME_RE as NAME_RE
from cseaug.config import dataset_name_problem
from cseaug.dataset.store import Store
from cseaug.errors import InputError
from cseaug.roots import default_work_dir, is_uri

VERSION_RE = re.compile(r"^v(\d{4,})$")
LATEST_FILE = "latest"
LOCK_FILE = ".lock"
STAGING_PREFIX = ".staging-"
MANIFEST_FILE = "manifest.json"
CLAIM_FILE = ".claim"
LEASE_FILE = ".lease"  # :mod:`cseaug.dataset.lease`
PRUNED_FILE = ".pruned"  # :mod:`cseaug.dataset.uncommitted`


def datasets_dir(root: str | Path) -> Path:
    """``<root>/datasets`` (of a local root)."""
    return Path(root) / "datasets"


def datasets_location(root: str | Path) -> str:
    """``<root>/datasets`` as users see it, for a local root or a URI (messages)."""
    return f"{str(root).rstrip('/')}/datasets" if is_uri(root) else str(datasets_dir(root))


def _committed(root: str | Path, pattern: str) -> list[tuple[str, str]]:
    """(dataset, version) of every committed version of a remote root matching ``pattern``."""
    found = []
    for path in Store.from_root(root).glob(f"datasets/{pattern}/{MANIFEST_FILE}"):
        _, dataset, version, _ = path.split("/")
        if NAME_RE.match(dataset) and version_number(version) is not None:
            found.append((dataset, version))
    return sorted(found, key=lambda pair: (pair[0], version_number(pair[1]) or 0))


def dataset_dir(root: str | Path, name: str) -> Path:
    """``<root>/datasets/<name>``, after checking that ``name`` is a safe directory name."""
    return datasets_dir(root) / check_name(name)


def check_name(name: str) -> str:
    """Raise InputError unless ``name`` is a plain dataset name (letters, digits, ``._-``)."""
    if problem := dataset_name_problem(name):
        raise InputError(problem)
    return name


def version_name(number: int) -> str:
    """``v0001`` for 1."""
    return f"v{number:04d}"


def version_number(name: str) -> int | None:
    """1 for ``v0001``; None for anything that is not a version name."""
    match = VERSION_RE.match(name)
    return int(match.group(1)) if match else None


def _is_published(entry: Path) -> bool:
    """A version directory as the publisher leaves it: a real directory holding a manifest."""
    return entry.is_dir() and not entry.is_symlink() and (entry / MANIFEST_FILE).is_file()


def _version_entries(root: str | Path, name: str) -> list[Path]:
    directory = dataset_dir(root, name)
    if not directory.is_dir():
        return []
    found = [entry for entry in directory.iterdir() if version_number(entry.name) is not None]
    return sorted(found, key=lambda entry: version_number(entry.name) or 0)


def list_versions(root: str | Path, name: str) -> list[str]:
    """Published versions of a dataset, oldest first (staging, hidden and stray entries left out;
    on an object store: the committed versions)."""
    if is_uri(root):
        return [version for _, version in _committed(root, f"{check_name(name)}/v*")]
    return [entry.name for entry in _version_entries(root, name) if _is_published(entry)]


def stray_versions(root: str | Path, name: str) -> list[Path]:
    """Entries named like a version that the publisher did not leave (no ``manifest.json``, a
    file, a symlink); none on an object store, where such a prefix is an upload (invisible)."""
    if is_uri(root):
        return []
    return [entry for entry in _version_entries(root, name) if not _is_published(entry)]


def list_datasets(root: str | Path) -> list[str]:
    """Names of the datasets under ``<root>/datasets`` that have at least one version, or a
    stray entry named like one (on an object store: at least one committed version)."""
    if is_uri(root):
        return sorted({dataset for dataset, _ in _committed(root, "*/v*")})
    directory = datasets_dir(root)
    if not directory.is_dir():
        return []
    return sorted(
        entry.name
        for entry in directory.iterdir()
        if entry.is_dir() and NAME_RE.match(entry.name) and _version_entries(root, entry.name)
    )


def parse_ref(ref: str) -> tuple[str, str | None]:
    """Split ``name[/version|/latest]`` into (name, version or None for the newest)."""
    name, _, version = ref.strip().strip("/").partition("/")
    return name, (None if version in ("", LATEST_FILE) else version)


def latest_version(root: str | Path, name: str) -> str | None:
    """The newest version: the ``latest`` pointer if it names a published version, else the
    highest (always the highest committed one on an object store)."""
    versions = list_versions(root, name)
    pointer = None if is_uri(root) else dataset_dir(root, name) / LATEST_FILE
    if pointer is not None and pointer.is_file():
        named = pointer.read_text(encoding="utf-8").strip()
        if named in versions:
            return named
    return versions[-1] if versions else None


def no_such_dataset(root: str | Path, name: str) -> InputError:
    """The error for a dataset ``name`` that ``root`` does not hold, listing those it does."""
    known = list_datasets(root)
    return InputError(
        f"no dataset '{name}' under {datasets_location(root)}; "
        + (f"datasets there: {', '.join(known)}" if known else "there are no datasets yet")
    )


def resolve(root: str | Path, ref: str) -> Path:
    """The directory of ``name``, ``name/latest``, ``name/vNNNN`` or a version directory's
    path (on an object store: its local copy); InputError listing what exists otherwise."""
    as_path = Path(ref)
    if as_path.is_dir() and (as_path / MANIFEST_FILE).is_file():
        return as_path
    name, version = resolve_version(root, ref)
    if is_uri(root):
        return local_copy(root, name, version)
    return dataset_dir(root, name) / version


def resolve_version(root: str | Path, ref: str) -> tuple[str, str]:
    """(name, version) of ``name``, ``name/latest`` or ``name/vNNNN`` under ``root``;
    InputError listing what exists otherwise."""
    name, version = parse_ref(ref)
    check_name(name)
    versions = list_versions(root, name)
    if not versions:
        raise no_such_dataset(root, name)
    if version is None:
        return name, str(latest_version(root, name))
    if version not in versions:
        raise InputError(
            f"dataset '{name}' has no version '{version}'; versions: {', '.join(versions)}"
        )
    return name, version


def local_copy(root: str | Path, name: str, version: str) -> Path:
    """A local copy of a committed version of a remote root in its work directory, reused
    while its manifest equals the stored one (readers verify it as they read it)."""
    store = Store.from_root(root)
    prefix = f"datasets/{check_name(name)}/{version}"
    stored = store.read_bytes(f"{prefix}/{MANIFEST_FILE}")
    target = default_work_dir(root) / "datasets" / name / version
    if (target / MANIFEST_FILE).is_file():
        if (target / MANIFEST_FILE).read_bytes() == stored:
            return target
        raise InputError(
            f"{target} is not a copy of {store.url(prefix)} (another manifest): remove it "
            "and run the command again"
        )
    manifest = parse_manifest(stored, store.url(f"{prefix}/{MANIFEST_FILE}"))
    partial = target.parent / f"{STAGING_PREFIX}{uuid.uuid4().hex}"
    try:
        for entry in manifest.get("files", []):
            relative = Path(entry["path"])
            if relative.is_absolute() or ".." in relative.parts:
                raise InputError(
                    f"{store.url(prefix)}: its manifest lists '{entry['path']}', which is not "
                    "a path inside the version; do not use this version"
                )
            store.get_file(f"{prefix}/{relative.as_posix()}", partial / relative)
        (partial / MANIFEST_FILE).write_bytes(stored)
        try:
            partial.rename(target)
        except OSError:
            if not (target / MANIFEST_FILE).is_file():  # not a concurrent copy: a real error
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def read_manifest(version_dir: str | Path) -> dict[str, Any]:
    """The parsed ``manifest.json`` of a version."""
    path = Path(version_dir) / MANIFEST_FILE
    if not path.is_file():
        raise InputError(f"{version_dir} is not a dataset version: no {MANIFEST_FILE} inside")
    return parse_manifest(path.read_bytes(), str(path))


def read_stored_manifest(root: str | Path, name: str, version: str) -> dict[str, Any]:
    """The manifest of a version of a local root or an object store, without copying the version."""
    if not is_uri(root):
        return read_manifest(dataset_dir(root, name) / version)
    relative = f"datasets/{check_name(name)}/{version}/{MANIFEST_FILE}"
    store = Store.from_root(root)
    return parse_manifest(store.read_bytes(relative), store.url(relative))


def parse_manifest(data: bytes, where: str) -> dict[str, Any]:
    """The manifest in ``data`` (read from ``where``, named in errors)."""
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{where} is damaged: not a JSON manifest ({exc})") from exc
    if not isinstance(manifest, dict):
        raise InputError(f"{where} is damaged: not a JSON object")
    return manifest


@dataclass
class FileLock:
    """An exclusive ``fcntl.flock`` on a file, released on close or when the process dies."""

    path: Path
    fd: int

    def release(self) -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def acquire(path: Path, blocking: bool = True) -> FileLock | None:
    """Lock ``path`` (created if needed); None when ``blocking`` is False and another holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return FileLock(path, fd)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock on ``path``, waiting for it."""
    lock = acquire(path)
    assert lock is not None  # a blocking acquire never returns None
    try:
        yield
    finally:
        lock.release()


def next_version(directory: Path) -> str:
    """The name after the highest version in ``directory`` (call it holding its ``.lock``)."""
    numbers = [version_number(e.name) for e in directory.iterdir()] if directory.is_dir() else []
    return version_name(max([n for n in numbers if n is not None], default=0) + 1)
