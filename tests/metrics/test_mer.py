"""Match Error Rate: hand-computed values, OssCSE Example 1, equality with jiwer."""

from __future__ import annotations

import math
import random

import jiwer
import numpy as np
import pytest

from cseaug.metrics.mer import mer, mer_pairs, mer_words, normalize_words


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("The Cat sat.", ["the", "cat", "sat"]),
        ('He said: "Spin-off, (2010)!"', ["he", "said", "spin-off", "2010"]),
        ("don't  stop ... now", ["don't", "stop", "now"]),
        ("«Привет», — сказал он.", ["привет", "сказал", "он"]),
        ("U.S. troops", ["u.s", "troops"]),
        ("", []),
        ("  ... !! -- ", []),
    ],
)
def test_normalize_words(text, words):
    assert normalize_words(text) == words


@pytest.mark.parametrize(
    ("reference", "hypothesis", "expected"),
    [
        # S, D, I, C counted by hand: MER = (S + D + I) / (S + D + I + C)
        ("the cat sat", "the cat sat", 0.0),  # C=3
        ("the cat sat", "the black cat sat", 1 / 4),  # I=1, C=3
        ("the cat sat", "cat sat", 1 / 3),  # D=1, C=2
        ("the cat sat", "the dog sat", 1 / 3),  # S=1, C=2
        ("a b c d", "a x c", 2 / 4),  # S=1, D=1, C=2
        ("a b c", "x y z w", 1.0),  # S=3, I=1, C=0
        ("The cat sat.", "the CAT sat", 0.0),  # case and punctuation are normalised away
        ("", "", 0.0),
        ("", "a new sentence", 1.0),  # I=3, C=0
        ("a sentence", "", 1.0),  # D=2, C=0
        ("...", "!!", 0.0),  # punctuation only: both empty after normalising
        ("...", "word", 1.0),
    ],
)
def test_hand_computed(reference, hypothesis, expected):
    assert mer(reference, hypothesis) == pytest.approx(expected)


SOURCE = "Bryan Cranston will return as Walter White for breaking bad spin off, report claims."
EXAMPLE_1 = [
    # (transformation, printed MER, MER under the project normalisation to 3 decimals)
    (
        "It has been reported that Bryan Cranston will reprise his role as Walter White in a "
        "spin-off of Breaking Bad.",
        0.73,
        0.714,
    ),
    (
        "Bryan Cranston will not return as Walter White for Breaking Bad spin off, report claims.",
        0.06,
        0.067,
    ),
    ("Bryan will return as Walter White for Breaking Bad spin off, report claims.", 0.07, 0.071),
    (
        "Bryan Cranston will return as Walter White for breaking bad spin off, a latest report claims.",
        0.12,
        0.125,
    ),
    (
        "Bryan Cranston will come back as Walter White for Breaking Bad spin off, report claims.",
        0.13,
        0.133,
    ),
    ("Digital era threatens future of driveins.", 1.0, 1.0),
]


@pytest.mark.parametrize(
    ("hypothesis", "printed", "ours"), EXAMPLE_1, ids=["para", "neg", "del", "ins", "sub", "rand"]
)
def test_osscse_example_1(hypothesis, printed, ours):
    value = mer(SOURCE, hypothesis)
    assert round(value, 3) == ours
    if printed != 0.73:
        # The paper truncates to two decimals (0.0667 is printed 0.06).
        assert math.floor(value * 100) / 100 == printed
    else:
        # The paraphrase: 15 errors / 21 (S7 D1 I7 C6) under any normalisation tried; printed 0.73.
        assert abs(value - printed) < 0.02


def random_pairs(n: int, seed: int = 0) -> tuple[list[list[str]], list[list[str]]]:
    rng = random.Random(seed)
    vocab = ["a", "b", "c", "d", "e", "f"]  # few words: many ties between alignments
    refs = [rng.choices(vocab, k=rng.randint(0, 12)) for _ in range(n)]
    hyps = [rng.choices(vocab, k=rng.randint(0, 12)) for _ in range(n)]
    return refs, hyps


def test_identical_to_jiwer():
    refs, hyps = random_pairs(3000)
    ours = [mer_words(r, h) for r, h in zip(refs, hyps, strict=True)]
    theirs = [float(jiwer.mer(" ".join(r), " ".join(h))) for r, h in zip(refs, hyps, strict=True)]
    assert ours == theirs


def test_mer_pairs_matches_mer_and_jiwer_on_raw_text():
    refs = [SOURCE, "The Cat sat.", "", "a b", "Is it, really?"] * 3
    hyps = [h for h, _, _ in EXAMPLE_1[:5]] + [
        "the dog sat",
        "x",
        "b c",
        "it is really",
        "",
        *["z"] * 5,
    ]
    values = mer_pairs(refs, hyps)
    assert values.dtype == np.float64
    assert values.tolist() == [mer(r, h) for r, h in zip(refs, hyps, strict=True)]
    expected = [
        float(jiwer.mer(" ".join(normalize_words(r)), " ".join(normalize_words(h))))
        for r, h in zip(refs, hyps, strict=True)
    ]
    assert values.tolist() == expected


def test_mer_pairs_none_gives_nan_and_lengths_must_match():
    values = mer_pairs(["a", None, "b"], ["a", "b", None])
    assert values[0] == 0.0 and np.isnan(values[1]) and np.isnan(values[2])
    assert mer_pairs([], []).shape == (0,)
    with pytest.raises(ValueError, match="2 references but 1 hypotheses"):
        mer_pairs(["a", "b"], ["a"])
