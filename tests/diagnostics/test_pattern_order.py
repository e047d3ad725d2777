"""The order check positive > intermediate > negative: arithmetic, counts, filter."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cseaug.dataset.schema import rows_table
from cseaug.diagnostics.patterns import (
    OrderCounts,
    order_holds,
    order_matrix,
    pattern_order_filter,
)
from cseaug.pipeline.cs import CSStep
from tests.diagnostics.diag_helpers import canonical

NAN = np.nan


def test_cs_must_fall_and_mer_must_rise_strictly():
    cs = np.array(
        [
            [0.9, 0.5, 0.1],  # ordered
            [0.9, 0.9, 0.1],  # tie between positive and intermediate: broken
            [0.5, 0.9, 0.1],  # intermediate above positive
            [0.9, 0.1, 0.5],  # negative above intermediate
            [0.9, NAN, 0.1],  # NLI row: p > n holds
            [0.1, NAN, 0.9],  # NLI row: reversed
            [0.9, NAN, NAN],  # one view: not eligible
            [NAN, NAN, NAN],  # other row
        ]
    )
    eligible, ordered = order_holds(cs, "cs")
    assert eligible.tolist() == [True] * 6 + [False, False]
    assert ordered.tolist() == [True, False, False, False, True, False, False, False]
    eligible, ordered = order_holds(1 - cs, "mer")
    assert ordered.tolist() == [True, False, False, False, True, False, False, False]


def test_the_full_chain_needs_positive_above_negative_too():
    # Adjacent pairs alone cannot be out of order here, but the check covers every pair.
    eligible, ordered = order_holds(np.array([[0.5, NAN, 0.5], [0.2, 0.3, NAN]]), "cs")
    assert eligible.tolist() == [True, True] and ordered.tolist() == [False, False]
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        order_holds(np.zeros((2, 2)), "cs")


def test_counts_and_shares_accumulate_over_batches():
    counts = OrderCounts("cs")
    counts.add(np.array([[0.9, 0.5, 0.1], [0.9, 0.95, 0.1]]))
    counts.add(np.array([[0.9, NAN, 0.1], [NAN, NAN, NAN]]))
    result = counts.to_dict()
    assert (result["eligible_rows"], result["ordered_rows"]) == (3, 2)
    assert result["share"] == pytest.approx(2 / 3)
    assert (result["rows_with_all_three"], result["all_three_ordered"]) == (2, 1)
    assert result["pairs"]["positive > intermediate"] == {"held": 1, "pairs": 2, "share": 0.5}
    assert result["pairs"]["intermediate > negative"] == {"held": 2, "pairs": 2, "share": 1.0}
    assert result["pairs"]["positive > negative"] == {"held": 3, "pairs": 3, "share": 1.0}


def test_no_eligible_rows_gives_no_share():
    counts = OrderCounts("mer")
    counts.add(np.full((3, 3), NAN))
    assert counts.to_dict()["share"] is None and counts.to_dict()["pairs"] == {}


ROWS = [
    # MER 0.2 < 0.5 < 1.0: ordered
    {
        "sentence": "a b c d",
        "positive": "a b c d e",
        "intermediate": "a b x y",
        "negative": "w x y z",
    },
    # positive further from the anchor than the negative: broken
    {"sentence": "the cat sat down", "positive": "dogs bark loudly", "negative": "the cat sat"},
    # no views: not eligible, kept
    {"sentence": "plain corpus sentence"},
    # knowledge only (SKICSE): not eligible, kept
    {"sentence": "it rains", "knowledge": "rain is water falling from clouds"},
]


def test_mer_matrix_reuses_stored_columns_and_fills_the_rest():
    table = rows_table(canonical(ROWS))
    matrix = order_matrix(table, "mer")
    np.testing.assert_allclose(matrix[0], [0.2, 0.5, 1.0])
    assert np.isnan(matrix[2]).all()
    stored = canonical(ROWS[:1])
    stored[0]["mer_positive"] = 0.9  # a stored value wins over recomputation
    assert order_matrix(rows_table(stored), "mer")[0, 0] == pytest.approx(0.9)


def test_filter_rejects_rows_that_break_the_order_and_keeps_the_rest():
    table = rows_table(canonical(ROWS))
    result = pattern_order_filter(table, "mer")
    assert result.rows.column("sentence").to_pylist() == [
        "a b c d",
        "plain corpus sentence",
        "it rains",
    ]
    rejects = result.rejects.to_pylist()
    assert len(rejects) == 1
    assert rejects[0]["reason"] == "pattern_order" and rejects[0]["stage"] == "diagnostics"
    assert rejects[0]["sentence"] == "the cat sat down" and rejects[0]["id"]
    detail = json.loads(rejects[0]["detail"])
    assert detail["mer"]["positive"] == 1.0 and detail["mer"]["intermediate"] is None
    assert result.stats["eligible"] == 2 and result.stats["rejected"] == 1
    assert result.rows.num_rows + len(rejects) == table.num_rows


def test_cs_and_both_read_the_cs_step_s_columns(bow_encoder):
    unmeasured = rows_table(canonical(ROWS))
    table = CSStep(lambda: bow_encoder, seed=0)(unmeasured).rows
    by_cs = pattern_order_filter(table, "cs")
    assert by_cs.rejects.column("sentence").to_pylist() == ["the cat sat down"]
    both = pattern_order_filter(table, "both")
    assert set(json.loads(both.rejects.to_pylist()[0]["detail"])) == {"mer", "cs"}
    assert both.rows.num_rows == 3
    with pytest.raises(ValueError, match="needs the cs_<view> columns"):
        pattern_order_filter(unmeasured, "cs")
