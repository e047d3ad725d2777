"""The CS step: every ``cs_<view>`` column of the rows on the CS sample, measured once.

Cosine similarity of each view to its anchor (NGCSE eq. 9, :mod:`cseaug.metrics.cosine`)
with the diagnostics encoder, in float32, on the rows of the CS sample
(``diagnostics.cs_sample``, ``diagnostics.seed``, chosen from each row's id:
:func:`~cseaug.diagnostics.views.in_cs_sample`); null outside it and where the view is null.
The pattern filter, the quality gate and the diagnostics read these columns and embed nothing
themselves (docs/architecture.md, "Where a similarity is computed").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from cseaug.diagnostics.views import in_cs_sample, present_views, view_cs
from cseaug.encoders.base import Encoder
from cseaug.errors import InputError
from cseaug.pipeline.mer import with_metric
from cseaug.progress import progress_bar
from cseaug.step import Step, StepResult


@dataclass(eq=False)
class CSStep(Step):
    """Fills every ``cs_<view>`` column of canonical rows (see the module docstring).

    Args:
        encoder: gives the encoder (the build's encoder worker, started on first use).
        seed: ``diagnostics.seed``.
        limit: gives the sample's :func:`~cseaug.diagnostics.views.cs_sample_limit` (the
            plan sets it once the corpus is sampled, after the steps are made); None: every row.
    """

    encoder: Callable[[], Encoder | None]
    seed: int
    limit: Callable[[], int | None] = lambda: None
    name = "cs"

    def __call__(self, rows: pa.Table) -> StepResult:
        sampled = in_cs_sample(rows.column("id").to_pylist(), self.limit(), self.seed)
        views = present_views(rows)
        wanted = [v for v in views if rows.column(v).null_count < rows.num_rows]
        encoder = self.encoder() if wanted and sampled.any() else None
        if encoder is None and wanted and sampled.any():
            raise InputError("the CS step has no encoder: the build measures no CS")
        values: dict[str, np.ndarray] = {}
        with progress_bar("Cosine similarity", total=len(wanted), unit="views") as bar:
            for view in views:
                values[view] = np.full(rows.num_rows, np.nan, dtype=np.float32)
                if encoder is not None and view in wanted:
                    values[view] = view_cs(rows, view, encoder, rows=sampled)
                    bar.advance()
        return with_metric(rows, "cs", values)
