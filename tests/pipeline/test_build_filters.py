"""The row filters as steps: what they drop, and that each frees what it loaded."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cseaug.dataset.schema import rows_table
from cseaug.diagnostics.contamination import load_eval_index
from cseaug.pipeline.cs import CSStep
from cseaug.pipeline.filters import ContaminationFilter, PatternOrderFilter
from tests.diagnostics.diag_helpers import BagOfWordsEncoder, canonical

ROWS = [
    {"sentence": "the cat sat down", "positive": "a dog", "negative": "the cat sat down now"},
    {"sentence": "A man is playing a harp.", "positive": "a man plays"},  # STS-B test
    {"sentence": "it rains", "positive": "it rains a lot", "negative": "the sun is out"},
]


def test_contamination_filter_drops_evaluation_sentences(shared_data: Path) -> None:
    step = ContaminationFilter(load_eval_index(shared_data), "anchor")
    result = step(rows_table(canonical(ROWS)))
    assert "A man is playing a harp." not in result.rows.column("sentence").to_pylist()
    assert result.rejects.column("reason").to_pylist() == ["contamination"]
    assert step.manifest() == {} and step.usage() == {}


def test_pattern_order_filter_reads_the_cs_step_s_columns() -> None:
    measured = CSStep(BagOfWordsEncoder, seed=0)(rows_table(canonical(ROWS))).rows
    result = PatternOrderFilter("both")(measured)
    assert result.rows.num_rows + result.rejects.num_rows == len(ROWS)
    assert set(result.stats) >= {"mer", "cs", "eligible", "rejected"}


class SlowEncoder(BagOfWordsEncoder):
    def encode(self, texts):
        time.sleep(0.05)
        return super().encode(texts)


def test_the_cs_step_shows_its_progress_by_view(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Off a terminal, lines (here every 10 ms): the step can take minutes where the encoder
    worker embedded little while the LLM generated."""
    from cseaug import progress

    monkeypatch.delenv("CSEAUG_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.01)
    CSStep(SlowEncoder, seed=0)(rows_table(canonical(ROWS)))
    assert "Cosine similarity: 2/2 views (100%)" in capsys.readouterr().err
