"""cseaug: augmentation pipeline for contrastive sentence-embedding training data.

From Python (docs/python-api.md; the functions live in :mod:`cseaug.api`)::

    import cseaug
    summary = cseaug.build_dataset("configs/wiki-sts.yaml", ["sample.size=500"])
    version = cseaug.open_version("wiki-sts/latest")
    table = version.rows()  # pyarrow.Table, checked against the manifest

Names are imported on first use, so ``import cseaug`` stays light. The library under
``cseaug`` computes everything and never imports Prefect; the Prefect flows and tasks of
``cseaug_prefect`` only compose it.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

__version__ = version("cseaug")
__all__ = ["Version", "__version__", "build_dataset", "load_config", "open_version"]


def __getattr__(name: str) -> Any:
    """The public names, imported when first used (PEP 562)."""
    if name in __all__:
        from cseaug import api

        return getattr(api, name)
    raise AttributeError(f"module 'cseaug' has no attribute {name!r}")
