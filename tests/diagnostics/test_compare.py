"""The Figure 7 grid: reference builders, unsupervised views, shared bins."""

from __future__ import annotations

import json
import random

import pytest

from cseaug.diagnostics.compare import (
    PairSet,
    compare,
    nli_pairs,
    stsb_pairs,
    token_cutoff,
    unsupervised_pairs,
    version_pairs,
)
from cseaug.errors import InputError


def test_token_cutoff_removes_round_n_times_ratio_words_and_keeps_order():
    rng = random.Random(0)
    # Python's round (half to even), as NGCSE's tools: round(0.5) = 0, round(2.5) = 2.
    for n, removed in ((9, 0), (10, 0), (11, 1), (20, 1), (30, 2), (50, 2), (70, 4)):
        words = [f"x{i}" for i in range(n)]
        kept = token_cutoff(words, 0.05, rng)
        assert len(kept) == n - removed
        assert kept == [w for w in words if w in set(kept)]


def test_unsupervised_views_and_random_negatives():
    corpus = [" ".join(f"s{k}w{i}" for i in range(20)) for k in range(12)]
    sets = unsupervised_pairs(corpus, "Wiki", max_pairs=8, seed=2)
    assert [s.label for s in sets] == ["Wiki.dropout", "Wiki.token_shuffle", "Wiki.token_cutoff"]
    dropout, shuffle, cutoff = sets
    assert all(a == b for a, b in dropout.positives) and len(dropout.positives) == 8
    assert all(sorted(a.split()) == sorted(b.split()) for a, b in shuffle.positives)
    assert all(len(b.split()) == 19 for _, b in cutoff.positives)
    for pairs in sets:
        assert all(a != b for a, b in pairs.negatives)
        assert {a for a, _ in pairs.negatives} == {a for a, _ in dropout.positives}
    again = unsupervised_pairs(corpus, "Wiki", max_pairs=8, seed=2)
    assert [s.positives for s in again] == [s.positives for s in sets]
    with pytest.raises(InputError, match="unknown unsupervised view"):
        unsupervised_pairs(corpus, views=["mixup"])


def test_stsb_thresholds_are_strict(tmp_path):
    line = "main-captions\tMSRvid\t2012test\t{i}\t{score}\tfirst {i}\tsecond {i}\n"
    scores = ["5.0", "4.0", "4.2", "1.0", "0.8", "0.0", "2.5"]
    path = tmp_path / "sts-dev.csv"
    path.write_text("".join(line.format(i=i, score=s) for i, s in enumerate(scores)))
    pairs = stsb_pairs(path, max_pairs=None)
    assert [a for a, _ in pairs.positives] == ["first 0", "first 2"]
    assert [a for a, _ in pairs.negatives] == ["first 4", "first 5"]
    inclusive = stsb_pairs(path, positive_above=3.99, negative_below=1.01, max_pairs=None)
    assert len(inclusive.positives) == 3 and len(inclusive.negatives) == 3
    assert len(stsb_pairs(path, max_pairs=1).positives) == 1


def test_nli_triples_give_entailment_and_contradiction(tmp_path):
    path = tmp_path / "nli.csv"
    path.write_text("sent0,sent1,hard_neg\np1,e1,c1\np2,e2,c2\n")
    pairs = nli_pairs(path)
    assert pairs.positives == [("p1", "e1"), ("p2", "e2")]
    assert pairs.negatives == [("p1", "c1"), ("p2", "c2")]


def test_version_pairs_sample_views_and_fall_back_to_random_negatives(make_version):
    rows = [
        {"sentence": f"anchor {i}", "positive": f"pos {i}", "negative": f"neg {i}"}
        for i in range(30)
    ]
    rows += [{"sentence": f"other {i}"} for i in range(10)]
    pairs = version_pairs(make_version(rows, files=3), max_pairs=12, seed=1)
    assert pairs.label == "demo/v0001" and len(pairs.positives) == 12 and len(pairs.negatives) == 12
    assert all(a.replace("anchor", "pos") == b for a, b in pairs.positives)
    assert all(a.replace("anchor", "neg") == b for a, b in pairs.negatives)
    ski = [{"sentence": f"anchor {i}", "positive": f"pos {i}"} for i in range(5)]
    fallback = version_pairs(make_version(ski, name="v0002"), "SKI", max_pairs=None)
    assert fallback.label == "SKI" and "random other anchors" in fallback.note
    assert all(a != b and b.startswith("anchor") for a, b in fallback.negatives)


def test_grid_has_two_panels_per_setting_on_shared_bins(tmp_path, bow_encoder):
    sets = [
        PairSet("A", [("a b c", "a b c")], [("a b c", "x y z")]),
        PairSet("B", [("a b c", "a b d")], [("a b c", "a q z")]),
        PairSet("C", [("p q", "q p")], []),
    ]
    figure, summary = compare(
        sets, tmp_path / "fig", bow_encoder, mer_bins=10, cs_bins=20, per_row=2
    )
    assert figure.name == "figure7.png" and figure.read_bytes()[:4] == b"\x89PNG"
    data = json.loads(summary.read_text())
    assert [s["label"] for s in data["settings"]] == ["A", "B", "C"]
    assert data["bins"] == {"mer": 10, "cs": 20}
    a = data["settings"][0]
    assert a["positive"]["mer"]["histogram"]["counts"][0] == 1
    assert a["negative"]["mer"]["histogram"]["counts"][-1] == 1
    assert a["positive"]["cs"]["histogram"]["counts"][-1] == 1
    assert data["settings"][2]["negative"]["mer"]["n"] == 0
    with pytest.raises(InputError, match="at least one setting"):
        compare([], tmp_path, bow_encoder)


def test_a_setting_without_pairs_is_an_error():
    with pytest.raises(InputError, match="has no pairs"):
        PairSet("empty", [], [])


@pytest.mark.shared_data
def test_references_from_the_shared_data(shared_data):
    stsb = stsb_pairs(shared_data / "stsbenchmark" / "sts-dev.csv", max_pairs=None)
    assert len(stsb.positives) > 100 and len(stsb.negatives) > 100
    nli = nli_pairs(shared_data / "nli" / "nli_triples_snli_devtest.csv", max_pairs=None)
    assert len(nli.positives) == len(nli.negatives) == 5883
    wiki = unsupervised_pairs(
        shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt", max_pairs=50
    )
    assert [len(s.positives) for s in wiki] == [50, 50, 50]
