"""Row filters a config can switch on after the stage: pattern order and contamination.

Both come from the diagnostics (:mod:`cseaug.diagnostics.patterns`,
:mod:`cseaug.diagnostics.contamination`) and return a
:class:`~cseaug.step.StageResult`, so a dropped row always lands in rejects with its
reason (``pattern_order``, ``contamination``). Filtered anchors are removed, not kept as
``other`` rows: a contaminated sentence must not stay in the data at all.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import pyarrow as pa

from cseaug.config import RunConfig
from cseaug.dataset.schema import empty_rejects
from cseaug.step import StageResult

RowFilter = Callable[[pa.Table], StageResult]


@cache
def _encoder(cfg_json: str, cache_dir: str):
    from cseaug.config import DiagnosticsConfig
    from cseaug.encoders.loading import encoder_from_config

    return encoder_from_config(DiagnosticsConfig.model_validate_json(cfg_json), cache_dir)


@cache
def _eval_index(root: str):
    from cseaug.diagnostics.contamination import load_eval_index

    return load_eval_index(root)


def row_filters(cfg: RunConfig, *, generated: bool) -> list[RowFilter]:
    """The filters the config asks for, in order; the pattern filter only applies to generated rows."""
    diag = cfg.diagnostics
    filters: list[RowFilter] = []
    # Contamination first: a leaked sentence is rejected for that, whatever its pattern.
    if diag.remove_contaminated and diag.eval_data_dir:
        from cseaug.diagnostics.contamination import contamination_filter

        eval_dir, fields = diag.eval_data_dir, diag.contamination_fields
        filters.append(lambda rows: contamination_filter(rows, _eval_index(eval_dir), fields))
    if generated and diag.pattern_filter != "off":
        from cseaug.diagnostics.patterns import pattern_order_filter

        metric = diag.pattern_filter

        def by_pattern(rows: pa.Table) -> StageResult:
            encoder = None
            if metric in ("cs", "both"):
                encoder = _encoder(
                    diag.model_dump_json(), str(Path(cfg.output.root) / "cache" / "embeddings")
                )
            return pattern_order_filter(rows, metric, encoder)

        filters.append(by_pattern)
    return filters


def apply_filters(rows: pa.Table, filters: list[RowFilter]) -> StageResult:
    """Run ``rows`` through every filter; the rejects of all of them together."""
    rejects = [empty_rejects()]
    for row_filter in filters:
        result = row_filter(rows)
        rows = result.rows
        rejects.append(result.rejects)
    return StageResult(rows=rows, rejects=pa.concat_tables(rejects))
