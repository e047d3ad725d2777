"""Output roots: a local directory or an fsspec URI, and the local *work directory* of what is
written in place (run store, caches, staging): the root itself when local, else
``execution.work_dir`` or a directory under ``$XDG_CACHE_HOME/cseaug/roots/``
(docs/dataset-contract.md, "Object storage").

Example:
    >>> is_uri("s3://bucket/prefix"), is_uri("memory://demo"), is_uri("storage")
    (True, True, False)
    >>> str(work_dir("storage"))
    'storage'
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from cseaug.errors import ConfigError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def protocol(root: str | Path) -> str | None:
    """The URI scheme of ``root`` (``s3``), or None for a local path."""
    match = _SCHEME.match(str(root))
    return match.group(1).lower() if match else None


def is_uri(root: str | Path) -> bool:
    """True when ``root`` is an fsspec URI rather than a local path."""
    return protocol(root) is not None


def check_root(root: str) -> str:
    """``root``; a ConfigError naming the protocol (and the package to install) of a URI that
    fsspec does not know or cannot load."""
    scheme = protocol(root)
    if scheme is None:
        return root
    import fsspec

    try:
        fsspec.get_filesystem_class(scheme)
    except ValueError:
        raise ConfigError(
            f"output root {root}: unknown storage protocol '{scheme}'; use a local path or an "
            "fsspec URI such as s3://bucket/prefix, gs://bucket/prefix or memory://name"
        ) from None
    except ImportError as exc:
        raise ConfigError(
            f"output root {root}: protocol '{scheme}' needs a package that is not installed "
            f"({str(exc).splitlines()[0]}); for s3:// install cseaug[s3]"
        ) from None
    return root


def default_work_dir(root: str | Path) -> Path:
    """The work directory of ``root`` when ``execution.work_dir`` is not set (module docstring)."""
    scheme = protocol(root)
    if scheme is None:
        return Path(root)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    rest = str(root).split("://", 1)[1].strip("/")
    safe = re.sub(r"[^A-Za-z0-9._/-]", "_", rest).replace("..", "_")
    return cache / "cseaug" / "roots" / scheme / safe


def work_dir(root: str | Path, configured: str | Path | None = None) -> Path:
    """``configured`` (``execution.work_dir``) if given, else :func:`default_work_dir`."""
    return Path(configured) if configured else default_work_dir(root)
