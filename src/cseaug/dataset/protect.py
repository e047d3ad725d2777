"""The one guard that keeps every writer but the publisher out of published versions.

Only the publisher (:mod:`cseaug.dataset.staging`) writes under ``<root>/datasets/``.
Every command that writes a path a user chose (``export --out``, ``diagnose``/``compare``/
``probe-splits --out``, ``train-encoder --out``, ``negate``/``backtranslate``/``mer
--output``, ``synonyms --output``, ``train-vaegpt --output-dir``, ``data fetch --dir``) and a
build's ``output.root`` pass through :func:`refuse_dataset_path` before any work, so a
typo cannot overwrite a data file or a manifest. File modes are no protection for root,
which ignores them, hence this check (docs/security.md, "Immutability").

Example:
    >>> refuse_dataset_path("storage/exports/wiki.csv", "storage")
    PosixPath('storage/exports/wiki.csv')
"""

from __future__ import annotations

from pathlib import Path

from cseaug.dataset import versions
from cseaug.errors import InputError


def published_version_of(path: str | Path) -> Path | None:
    """The published version directory that holds ``path`` (or is it), or None.

    Symlinks are resolved first: a link that points into a version counts as inside it.
    """
    resolved = Path(path).resolve()
    for candidate in (resolved, *resolved.parents):
        if (
            versions.version_number(candidate.name) is not None
            and (candidate / versions.MANIFEST_FILE).is_file()
        ):
            return candidate
    return None


def refuse_dataset_path(
    path: str | Path, root: str | Path | None = None, what: str = "output"
) -> Path:
    """Return ``path`` unless writing it could change a published dataset.

    Args:
        path: where a command is about to write (a file or a directory).
        root: the output root whose ``datasets/`` belongs to the publisher alone; None
            checks only for published versions around ``path``.
        what: the option that named ``path``, for the message (``--out``, ``output.root``).

    Raises:
        InputError: ``path`` is inside ``<root>/datasets/`` or inside (or is) a published
            version directory, wherever it lies.
    """
    version = published_version_of(path)
    if version is not None:
        raise InputError(
            f"{what} {path} is inside the published version {version}: published versions are "
            "never changed; write somewhere else (e.g. under <root>/exports/)"
        )
    if root is not None:
        datasets = versions.datasets_dir(root).resolve()
        resolved = Path(path).resolve()
        if resolved == datasets or datasets in resolved.parents:
            raise InputError(
                f"{what} {path} is inside {versions.datasets_dir(root)}, which only the publisher "
                "writes; write somewhere else (e.g. under <root>/exports/)"
            )
    return Path(path)
