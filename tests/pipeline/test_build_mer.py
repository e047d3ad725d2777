"""The MER step: every mer_<view> column from its view, null where the view is null."""

from __future__ import annotations

import numpy as np

from cseaug.dataset.schema import rows_table
from cseaug.metrics.mer import mer
from cseaug.pipeline.mer import MERStep


def test_every_view_gets_its_mer_and_a_missing_view_none() -> None:
    rows = rows_table(
        [
            {
                "id": "a",
                "sentence": "A cat sat on the mat.",
                "split": "aigen",
                "positive": "A cat sits on a mat.",
                "negative": "A cat did not sit.",
            },
            {"id": "b", "sentence": "It rains.", "split": "other", "knowledge": "Rain is water."},
            {"id": "c", "sentence": "Plain.", "split": "other"},
        ]
    )
    result = MERStep()(rows)
    out = result.rows.to_pylist()
    for row in out:
        for view in ("positive", "intermediate", "negative", "knowledge"):
            expected = (
                None if row[view] is None else float(np.float32(mer(row["sentence"], row[view])))
            )
            assert row[f"mer_{view}"] == expected
    assert result.stats == {"pairs": 3}
    assert result.rows.drop_columns([c for c in rows.column_names if c.startswith("mer_")]).equals(
        rows.drop_columns([c for c in rows.column_names if c.startswith("mer_")])
    )
    assert result.rejects.num_rows == 0
