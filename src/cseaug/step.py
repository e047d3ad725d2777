"""What an augmentation stage is.

A stage is a callable that takes canonical rows (:data:`cseaug.dataset.schema.CANONICAL_SCHEMA`)
of anchors and returns the rows it could fill with views plus a rejects table
(:data:`cseaug.dataset.schema.REJECTS_SCHEMA`) naming every anchor or view it dropped and
why. Stages do no I/O of datasets (the writer owns files) and know nothing of Prefect or of
which LLM backend runs. The pipeline cuts the sample into shards and calls the stage once
per shard; an anchor missing from ``rows`` must appear in ``rejects``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from cseaug.dataset.schema import empty_rejects


@dataclass
class StageResult:
    """Output of a stage on one shard."""

    rows: pa.Table
    rejects: pa.Table = field(default_factory=empty_rejects)
    stats: dict[str, Any] = field(default_factory=dict)


class Stage(Protocol):
    """An augmentation stage (NGCSE pattern simulation, SKICSE, OssCSE, Generate-CSE)."""

    name: str

    def __call__(self, rows: pa.Table) -> StageResult: ...

    def close(self) -> None: ...
