"""cseaug: augmentation pipeline for contrastive sentence-embedding training data.

The library under ``cseaug`` computes everything and never imports Prefect; the
Prefect flows in ``flows/`` and tasks in ``tasks/`` only compose it.
"""

from __future__ import annotations

__version__ = "0.1.0"
