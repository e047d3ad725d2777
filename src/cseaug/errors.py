"""The small error hierarchy every cseaug module raises.

Messages name the bad value and say how to fix it; the CLI prints them without a
traceback.
"""

from __future__ import annotations


class CseaugError(Exception):
    """Base class of every error cseaug raises on purpose."""


class ConfigError(CseaugError):
    """A configuration value is missing, malformed or inconsistent."""


class InputError(CseaugError):
    """An input file, column or record cannot be used."""


class BackendError(CseaugError):
    """An LLM or model backend cannot be reached or answered unusably."""


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
    """Import an optional module or raise :class:`MissingExtraError` naming its extra.

    Args:
        module: dotted module name, e.g. ``"transformers"``.
        extra: the pip extra that installs it, e.g. ``"hf"``.
        purpose: what needs it, for the message, e.g. ``"The transformers backend"``.

    Example:
        >>> json = require("json", "core", "Reading JSON")
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module.split(".")[0], extra, purpose) from exc
