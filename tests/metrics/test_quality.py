"""Generation-quality scorecard (VAEGPT-Sim Table 2) against values computed by hand."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from cseaug.errors import InputError
from cseaug.metrics.quality import (
    avg_rouge,
    multiple_diversity,
    score_generations,
    type_token_ratio,
    word_distance,
    words,
)

SOURCES = ["A man is cooking", "Dogs run."]
TARGETS = ["A man cooks food", "dogs run"]
GENERATIONS = [["a man is cooking food", "The man cooks the meal"], ["Dogs run"]]


class TableEncoder:
    """Unit vectors looked up in a table: cosines known by hand."""

    name = "table"
    dimension = 2

    def __init__(self) -> None:
        s = 1 / math.sqrt(2)
        self.table = {
            "A man cooks food": [1.0, 0.0],
            "a man is cooking food": [s, s],
            "The man cooks the meal": [0.0, 1.0],
            "dogs run": [1.0, 0.0],
            "Dogs run": [1.0, 0.0],
        }

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def test_words_are_lowercased_alphanumeric_runs() -> None:
    assert words("The man's dog, 2 cats!") == ["the", "man", "s", "dog", "2", "cats"]


def test_word_level_metrics_by_hand() -> None:
    # {a, man, is, cooking, food} vs {a, man, is, cooking}: only 'food' is not shared, of 5 words
    assert word_distance("a man is cooking food", "A man is cooking") == pytest.approx(1 / 5)
    # {the, man, cooks, meal} vs {a, man, is, cooking}: 6 of 7 distinct words not shared
    assert word_distance("The man cooks the meal", "A man is cooking") == pytest.approx(6 / 7)
    assert word_distance("", "") == 0.0
    assert type_token_ratio("The man cooks the meal") == pytest.approx(4 / 5)
    assert type_token_ratio("") == 0.0
    assert multiple_diversity(GENERATIONS[0]) == pytest.approx(7 / 8)
    assert multiple_diversity(["a b", "a c", "a b"]) == pytest.approx((2 / 3 + 0 + 2 / 3) / 3)
    assert multiple_diversity(["only one"]) is None


def test_avg_rouge_by_hand() -> None:
    # generation [a man is cooking food] vs target [a man cooks food]:
    # ROUGE-1 3 shared of 5/4 -> F 2/3; ROUGE-2 'a man' of 4/3 bigrams -> F 2/7; LCS 'a man food' -> F 2/3
    # [the man cooks the meal] vs [a man cooks food]: ROUGE-1 2 of 5/4 -> 4/9; ROUGE-2 1 of 4/3 -> 2/7; LCS 2 -> 4/9
    generations = ["a man is cooking food", "The man cooks the meal", "Dogs run"]
    targets = ["A man cooks food", "A man cooks food", "dogs run"]
    assert avg_rouge(generations, targets) == pytest.approx(
        [(2 / 3 + 2 / 7 + 2 / 3) / 3, (4 / 9 + 2 / 7 + 4 / 9) / 3, 1.0]
    )


def test_scorecard_by_hand() -> None:
    card = score_generations(SOURCES, TARGETS, GENERATIONS, encoder=TableEncoder())
    rouge = ((2 / 3 + 2 / 7 + 2 / 3) / 3 + (4 / 9 + 2 / 7 + 4 / 9) / 3 + 1.0) / 3
    cosine = (1 / math.sqrt(2) + 0.0 + 1.0) / 3
    source_diversity = (1 / 5 + 6 / 7 + 0.0) / 3
    multiple = 7 / 8  # only the first source has two candidates
    ttr = (1.0 + 4 / 5 + 1.0) / 3
    assert card.pairs == 2 and card.generations == 3
    assert card.avg_rouge == pytest.approx(rouge)
    assert card.cosine == pytest.approx(cosine, abs=1e-6)
    assert card.word_diversity_source == pytest.approx(source_diversity)
    assert card.diversity_multiple == pytest.approx(multiple)
    assert card.ttr == pytest.approx(ttr)
    similarity = (rouge + cosine) / 2
    diversity = (source_diversity + multiple + ttr) / 3
    assert card.similarity == pytest.approx(similarity, abs=1e-6)
    assert card.diversity == pytest.approx(diversity)
    assert card.average == pytest.approx(
        (rouge + cosine + source_diversity + multiple + ttr) / 5, abs=1e-6
    )
    assert card.deficiency == pytest.approx(min(similarity, diversity), abs=1e-6)
    assert set(card.as_dict()) >= {"avg_rouge", "cosine", "average", "deficiency"}


def test_copying_the_source_has_no_diversity_but_full_similarity() -> None:
    sources = ["a dog runs on the grass", "two kids swim"]
    card = score_generations(sources, sources, sources, encoder=None)
    assert card.avg_rouge == pytest.approx(1.0) and card.word_diversity_source == 0.0
    assert card.cosine is None and card.diversity_multiple is None
    assert card.similarity == pytest.approx(1.0)
    assert card.diversity == pytest.approx(0.5)  # mean of source diversity 0 and TTR 1
    assert card.deficiency == pytest.approx(0.5)


def test_mismatched_or_empty_inputs_are_refused() -> None:
    with pytest.raises(InputError, match="2 sources, 1 targets"):
        score_generations(SOURCES, TARGETS[:1], GENERATIONS, encoder=None)
    with pytest.raises(InputError, match="no generation"):
        score_generations(["a"], ["a"], [[]], encoder=None)


@pytest.mark.slow
def test_default_encoder_loads_offline() -> None:
    pytest.importorskip("sentence_transformers")
    card = score_generations(
        ["A man plays a guitar."], ["A man plays a guitar."], ["A man plays a guitar."]
    )
    assert card.cosine == pytest.approx(1.0, abs=1e-4)
