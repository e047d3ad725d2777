"""The error hierarchy of cseaug: messages name the bad value and say how to fix it; the CLI
prints them without a traceback."""

from __future__ import annotations

import errno
from typing import Any


class CseaugError(Exception):
    """Base class of every error cseaug raises on purpose."""


class ConfigError(CseaugError):
    """A configuration value is missing, malformed or inconsistent."""


class InputError(CseaugError):
    """An input file, column or record cannot be used."""


class BackendError(CseaugError):
    """An LLM or model backend cannot be reached or answered unusably."""


class PreflightError(CseaugError):
    """A build (or ``what`` else: its dry run) cannot start; ``problems`` lists every reason,
    one line each."""

    def __init__(self, problems: list[str], what: str = "the build") -> None:
        self.problems = [" ".join(p.split()) for p in problems]  # one line each
        if len(self.problems) == 1:
            message = f"{what} cannot start: {self.problems[0]}"
        else:
            lines = [f"{what} cannot start ({len(self.problems)} problems):"]
            message = "\n".join([*lines, *(f"  - {p}" for p in self.problems)])
        super().__init__(message)


class PublishGateError(CseaugError):
    """A finished build generated too little to publish (``publish.min_generated_share``), or
    its views keep the method's order too rarely (``publish.min_pattern_share``)."""

    summary: Any = None
    """What the build made before the gate stopped it: a
    :class:`cseaug.pipeline.publish.BuildSummary` without a version (a lower layer than
    ``pipeline``, this module cannot name the type)."""


class DownloadError(CseaugError):
    """A public input could not be downloaded, or what arrived does not match its sha256."""


class MissingExtraError(CseaugError, ImportError):
    """An optional dependency is not installed; the message names the pip extra."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the '{package}' package, which is not installed. "
            f"Install it with: pip install 'cseaug[{extra}]'"
        )
        self.package = package
        self.extra = extra


def require(module: str, extra: str, purpose: str):
    """Import the optional ``module`` or raise :class:`MissingExtraError` naming the pip
    ``extra`` that installs it and the ``purpose`` that needs it ("The transformers backend")."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module.split(".")[0], extra, purpose) from exc


OS_ERROR_HINTS: dict[int, str] = {
    errno.ENOSPC: "no space left on device: free some space or set output.root to another disk",
    errno.EDQUOT: "disk quota exceeded: free some space or set output.root to another disk",
    errno.EACCES: "permission denied: choose a directory this user can write (--set output.root=...)",
    errno.EPERM: "operation not permitted: choose a directory this user can write",
    errno.EROFS: "read-only file system: set output.root to a writable disk",
    errno.ENOENT: "no such file or directory",
}
"""The operating-system errors a user can meet (full disk, no permission, ...) and what to do."""


def expected_os_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an operating-system error of :data:`OS_ERROR_HINTS` (printed in one
    line, without a traceback)."""
    return isinstance(exc, OSError) and exc.errno in OS_ERROR_HINTS


def os_error_message(exc: OSError) -> str:
    """One line for an operating-system error: what happened, to which file, what to do.

    Example:
        >>> os_error_message(OSError(errno.ENOSPC, "No space left on device", "storage/x.parquet"))
        'storage/x.parquet: no space left on device: free some space or set output.root to another disk'
    """
    what = OS_ERROR_HINTS.get(exc.errno or 0) or (exc.strerror or str(exc))
    return f"{exc.filename}: {what}" if exc.filename is not None else what
