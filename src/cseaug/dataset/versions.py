"""Where versions live, how they are named, found and listed, and the lock that orders publishers.

Layout: ``<root>/datasets/<name>/<version>/`` with versions named ``v0001``, ``v0002``, ...
in publishing order. Beside the versions, hidden entries belong to the writer: the lock
file ``.lock`` (held only while a version name is allocated and the staging directory is
renamed), staging directories ``.staging-<uuid>`` and their ``.staging-<uuid>.lock``
files, and the pointer file ``latest`` (the newest version's name). Anything hidden is
never a version.

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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cseaug.config import DATASET_NAME_RE as NAME_RE
from cseaug.config import dataset_name_problem
from cseaug.errors import InputError

VERSION_RE = re.compile(r"^v(\d{4,})$")
LATEST_FILE = "latest"
LOCK_FILE = ".lock"
STAGING_PREFIX = ".staging-"
MANIFEST_FILE = "manifest.json"


def datasets_dir(root: str | Path) -> Path:
    """``<root>/datasets``."""
    return Path(root) / "datasets"


def dataset_dir(root: str | Path, name: str) -> Path:
    """``<root>/datasets/<name>``, after checking that ``name`` is a safe directory name."""
    check_name(name)
    return datasets_dir(root) / name


def check_name(name: str) -> str:
    """Raise InputError unless ``name`` is a plain dataset name (letters, digits, ``._-``)."""
    problem = dataset_name_problem(name)
    if problem:
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
    """Published versions of a dataset, oldest first (staging, hidden and stray entries left out)."""
    return [entry.name for entry in _version_entries(root, name) if _is_published(entry)]


def stray_versions(root: str | Path, name: str) -> list[Path]:
    """Entries named like a version that the publisher did not leave: no ``manifest.json``
    inside, a file, or a symlink (``cseaug versions`` warns about them)."""
    return [entry for entry in _version_entries(root, name) if not _is_published(entry)]


def list_datasets(root: str | Path) -> list[str]:
    """Names of the datasets under ``<root>/datasets`` that have at least one version, or a
    stray entry named like one."""
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
    if not version or version == LATEST_FILE:
        return name, None
    return name, version


def latest_version(root: str | Path, name: str) -> str | None:
    """The newest version: the ``latest`` pointer if it names a published version, else the highest."""
    versions = list_versions(root, name)
    pointer = dataset_dir(root, name) / LATEST_FILE
    if pointer.is_file():
        named = pointer.read_text(encoding="utf-8").strip()
        if named in versions:
            return named
    return versions[-1] if versions else None


def resolve(root: str | Path, ref: str) -> Path:
    """The directory of ``name``, ``name/latest`` or ``name/vNNNN`` under ``root``.

    A path to an existing version directory (one holding ``manifest.json``) is accepted too.

    Raises:
        InputError: no such dataset or version; the message lists what exists.
    """
    as_path = Path(ref)
    if as_path.is_dir() and (as_path / MANIFEST_FILE).is_file():
        return as_path
    name, version = parse_ref(ref)
    check_name(name)
    versions = list_versions(root, name)
    if not versions:
        known = list_datasets(root)
        raise InputError(
            f"no dataset '{name}' under {datasets_dir(root)}; "
            + (f"datasets there: {', '.join(known)}" if known else "there are no datasets yet")
        )
    if version is None:
        version = latest_version(root, name)
    elif version not in versions:
        raise InputError(
            f"dataset '{name}' has no version '{version}'; versions: {', '.join(versions)}"
        )
    return dataset_dir(root, name) / str(version)


def read_manifest(version_dir: str | Path) -> dict[str, Any]:
    """The parsed ``manifest.json`` of a version."""
    path = Path(version_dir) / MANIFEST_FILE
    if not path.is_file():
        raise InputError(f"{version_dir} is not a dataset version: no {MANIFEST_FILE} inside")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path} is damaged: not a JSON manifest ({exc})") from exc
    if not isinstance(manifest, dict):
        raise InputError(f"{path} is damaged: not a JSON object")
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
def dataset_lock(root: str | Path, name: str) -> Iterator[Path]:
    """Hold the dataset's lock (``<root>/datasets/<name>/.lock``); yields the dataset directory.

    Held only for short, metadata-only work: allocating a version name and renaming a
    staging directory, so concurrent builds write their data in parallel.
    """
    directory = dataset_dir(root, name)
    lock = acquire(directory / LOCK_FILE)
    assert lock is not None  # a blocking acquire never returns None
    try:
        yield directory
    finally:
        lock.release()


def next_version(directory: Path) -> str:
    """The name after the highest version in ``directory`` (call it under :func:`dataset_lock`)."""
    numbers = [version_number(e.name) for e in directory.iterdir()] if directory.is_dir() else []
    return version_name(max([n for n in numbers if n is not None], default=0) + 1)
