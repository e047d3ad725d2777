"""The one guard that keeps every writer but the publisher out of published versions: every
output path a user chose, and a build's ``output.root``, passes :func:`refuse_dataset_path`
first (docs/security.md, "Immutability").

Example:
    >>> refuse_dataset_path("storage/exports/wiki.csv", "storage")
    PosixPath('storage/exports/wiki.csv')
"""

from __future__ import annotations

from pathlib import Path

from cseaug.dataset import versions
from cseaug.errors import InputError
from cseaug.roots import is_uri


def published_version_of(path: str | Path) -> Path | None:
    """The published version directory that holds ``path`` (or is it), symlinks resolved."""
    resolved = Path(path).resolve()
    for candidate in (resolved, *resolved.parents):
        if (
            versions.version_number(candidate.name) is not None
            and (candidate / versions.MANIFEST_FILE).is_file()
        ):
            return candidate
    return None


def _uri_version(uri: str) -> str | None:
    """The ``.../datasets/<name>/<vNNNN>`` prefix of a URI, or None (no listing needed: on an
    object store a version's objects are never rewritten, committed or not)."""
    parts = uri.rstrip("/").split("/")
    for i in range(len(parts) - 2):
        if parts[i] == "datasets" and versions.version_number(parts[i + 2]) is not None:
            return "/".join(parts[: i + 3])
    return None


def refuse_dataset_path(
    path: str | Path, root: str | Path | None = None, what: str = "output"
) -> Path | str:
    """Return ``path`` unless it lies inside ``<root>/datasets/`` (the publisher's alone) or
    inside a published version wherever it lies (for a URI: any ``datasets/<name>/<vNNNN>``
    prefix); the InputError names ``what`` (the option, e.g. ``--out``)."""
    datasets: str | Path | None = None
    inside = False
    if is_uri(path):
        target = str(path).rstrip("/")
        version = _uri_version(target)
        if root is not None and is_uri(root):
            datasets = versions.datasets_location(root)
            inside = target == datasets or target.startswith(datasets + "/")
    else:
        version = published_version_of(path)
        if root is not None and not is_uri(root):
            datasets = versions.datasets_dir(root)
            resolved, top = Path(path).resolve(), datasets.resolve()
            inside = resolved == top or top in resolved.parents
    if version is not None:
        raise InputError(
            f"{what} {path} is inside the published version {version}: published versions are "
            "never changed; write somewhere else (e.g. under <root>/exports/)"
        )
    if inside:
        raise InputError(
            f"{what} {path} is inside {datasets}, which only the publisher writes; write "
            "somewhere else (e.g. under <root>/exports/)"
        )
    return str(path) if is_uri(path) else Path(path)
