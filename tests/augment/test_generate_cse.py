"""Generate-CSE random selection: the laws of each edit, seeding, recorded methods, the stage adapter."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest

from cseaug.augment.generate_cse import (
    GenerateCSEStage,
    RandomSelection,
    cutoff_range,
    cutoff_words,
    drop_words,
    repeat_words,
    repetition_range,
    shuffle_words,
    view_rng,
)
from cseaug.config import GenerateCSEConfig
from cseaug.dataset.schema import CANONICAL_SCHEMA, REJECTS_SCHEMA, row_id, rows_table


def sentence(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


class FakeGenerator:
    """Answers 'syn <sentence>', or nothing for sentences that start with 'mute'."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.closed = False

    def generate(self, sentences: Sequence[str], num_return_sequences: int = 1) -> list[list[str]]:
        self.calls.append(list(sentences))
        return [["  " if s.startswith("mute") else f"syn  {s}\nsecond line"] for s in sentences]

    def identity(self) -> dict[str, str]:
        return {"name": "fake"}

    def close(self) -> None:
        self.closed = True


def test_ranges_follow_appendix_a1() -> None:
    assert [cutoff_range(n) for n in (0, 1, 3)] == [None, None, None]
    assert cutoff_range(4) == (1, 1) and cutoff_range(6) == (1, 2) and cutoff_range(17) == (1, 5)
    assert cutoff_range(18) == (1, 6) and cutoff_range(100) == (1, 6)
    assert repetition_range(1) == (1, 1) and repetition_range(4) == (1, 1)
    assert (
        repetition_range(5) == (1, 1)
        and repetition_range(8) == (1, 2)
        and repetition_range(21) == (1, 6)
    )


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 12, 20, 40])
def test_cutoff_deletes_n_words_within_range(n: int) -> None:
    text = sentence(n)
    seen = set()
    for seed in range(300):
        out = cutoff_words(text, random.Random(seed)).split()
        deleted = n - len(out)
        bounds = cutoff_range(n)
        if bounds is None:
            assert out == text.split()
        else:
            assert bounds[0] <= deleted <= bounds[1]
            assert out == [w for w in text.split() if w in out]  # order kept, deletions only
        seen.add(deleted)
    expected = (
        {0} if cutoff_range(n) is None else set(range(cutoff_range(n)[0], cutoff_range(n)[1] + 1))
    )
    assert seen == expected


@pytest.mark.parametrize("n", [1, 2, 5, 8, 11, 30])
def test_repetition_copies_n_words_in_place(n: int) -> None:
    words = sentence(n).split()
    low, high = repetition_range(n)
    seen = set()
    for seed in range(300):
        out = repeat_words(sentence(n), random.Random(seed)).split()
        repeated = len(out) - n
        assert low <= repeated <= high
        # removing adjacent duplicates gives the sentence back (the copy sits beside the original)
        assert [w for i, w in enumerate(out) if i == 0 or out[i - 1] != w] == words
        seen.add(repeated)
    assert seen == set(range(low, high + 1))


def test_dropout_rate_and_at_least_one_word() -> None:
    rng = random.Random(0)
    kept = [len(drop_words(sentence(100), rng, 0.1).split()) for _ in range(200)]
    assert sum(kept) / (200 * 100) == pytest.approx(0.9, abs=0.01)
    assert drop_words(sentence(5), rng, 0.0) == sentence(5)
    assert all(len(drop_words("alone", random.Random(s), 0.99).split()) == 1 for s in range(50))


def test_shuffle_keeps_the_words() -> None:
    text = sentence(10)
    outs = {shuffle_words(text, random.Random(s)) for s in range(20)}
    assert all(sorted(o.split()) == sorted(text.split()) for o in outs) and len(outs) > 1


def anchors(n: int) -> list[tuple[str, str]]:
    return [(f"id{i}", f"sentence number {i} has several words in it") for i in range(n)]


def test_draw_is_seeded_per_anchor_and_view_not_per_shard() -> None:
    selection = RandomSelection(GenerateCSEConfig(views=3, seed=7))
    whole, _ = selection.views(anchors(10))
    halves = selection.views(anchors(10)[:4])[0] + selection.views(anchors(10)[4:])[0]
    assert whole == halves
    assert RandomSelection(GenerateCSEConfig(views=3, seed=8)).views(anchors(10))[0] != whole
    assert [[v.view for v in row] for row in whole] == [[0, 1, 2]] * 10


def test_recorded_method_is_the_one_that_wrote_the_view() -> None:
    selection = RandomSelection(GenerateCSEConfig(views=4, seed=3))
    rows, _ = selection.views(anchors(200))
    for (anchor_id, text), views in zip(anchors(200), rows, strict=True):
        for view in views:
            # replay the view's stream: one draw of the method, then the edit
            rng = view_rng(3, anchor_id, view.view)
            rng.random()
            assert selection.edits[view.method](text, rng) == view.text
    assert {v.method for views in rows for v in views} == {
        "shuffle",
        "cutoff",
        "dropout",
        "repetition",
    }


def test_generator_is_left_out_when_absent_and_frequencies_follow_probabilities() -> None:
    config = GenerateCSEConfig(
        views=5,
        probabilities={"shuffle": 0.5, "cutoff": 0.25, "repetition": 0.25, "generator": 1.0},
    )
    rows, _ = RandomSelection(config).views(anchors(2000))
    counts = Counter(v.method for row in rows for v in row)
    assert set(counts) == {"shuffle", "cutoff", "repetition"}
    total = sum(counts.values())
    assert counts["shuffle"] / total == pytest.approx(0.5, abs=0.02)
    assert counts["cutoff"] / total == pytest.approx(0.25, abs=0.02)


def test_generator_views_and_empty_answers_fall_back() -> None:
    generator = FakeGenerator()
    config = GenerateCSEConfig(
        views=2, generator="g", probabilities={"generator": 1.0, "dropout": 0.0}
    )
    items = [("a", "a cat sits on the mat"), ("b", "mute dogs bark loudly today")]
    rows, rejects = RandomSelection(config, generator).views(items)
    assert len(generator.calls) == 1 and len(generator.calls[0]) == 4  # one batched call
    assert [(v.method, v.text) for v in rows[0]] == [("generator", "syn a cat sits on the mat")] * 2
    assert all(v.method in {"shuffle", "cutoff", "dropout", "repetition"} for v in rows[1])
    assert [r["reason"] for r in rejects] == ["empty_generation", "empty_generation"]
    assert [r["view"] for r in rejects] == ["augmentations[0]", "augmentations[1]"]
    assert all(r["id"] == "b" and r["stage"] == "generate_cse" for r in rejects)


def test_stage_fills_positive_and_augmentations() -> None:
    stage = GenerateCSEStage(GenerateCSEConfig(views=3, seed=1), FakeGenerator())
    texts = ["a man is playing the guitar on stage", "mute sentence with no generation at all"]
    table = rows_table(
        [{"id": row_id("c", t), "sentence": t, "split": "aigen", "heldout": True} for t in texts]
    )
    result = stage(table)
    assert result.rows.schema.equals(CANONICAL_SCHEMA) and result.rejects.schema.equals(
        REJECTS_SCHEMA
    )
    for row in result.rows.to_pylist():
        assert (
            row["method"] == "generate_cse" and row["split"] == "aigen" and row["heldout"] is True
        )
        assert [a["view"] for a in row["augmentations"]] == [0, 1, 2]
        assert row["positive"] == row["augmentations"][0]["text"]
        assert row["positive_method"] == row["augmentations"][0]["method"]
        assert row["mer_positive"] is None, "MER is the build's last step, not the stage's"
    assert sum(result.stats["methods"].values()) == 6 == result.stats["views"]
    assert result.stats["empty_generations"] == result.rejects.num_rows
    recorded = stage.manifest()["model"]["generate_cse"]
    assert recorded["views"] == 3 and sum(recorded["probabilities"].values()) == pytest.approx(1.0)
    assert set(recorded["probabilities"]) == {
        "shuffle",
        "cutoff",
        "dropout",
        "repetition",
        "generator",
    }
    assert recorded["generator"] == {"name": "fake"}
    generator = stage.generator
    stage.close()
    assert generator.closed and stage.generator is None


def test_probabilities_are_validated() -> None:
    with pytest.raises(ValueError, match="unknown method"):
        GenerateCSEConfig(probabilities={"shufle": 1.0})
    with pytest.raises(ValueError, match="no available method"):
        GenerateCSEConfig(probabilities={"generator": 1.0})
