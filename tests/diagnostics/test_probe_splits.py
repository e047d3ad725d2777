"""OssCSE's Cont. / Oppn. rule, ties at the median, and the Table 2 reproduction on real STS files."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from cseaug.diagnostics.probe_splits import (
    PAPER_TABLE2,
    probe_splits,
    split_labels,
    table_markdown,
    write_probe_splits,
)
from cseaug.errors import InputError


def test_split_rule_on_a_hand_made_table_with_ties_at_both_medians():
    # median score 3.0 (rows 2 and 5), median MER 0.5 (rows 1 and 6)
    scores = np.array([4.0, 4.5, 3.0, 1.0, 2.0, 3.0, 5.0, 0.5, 3.5])
    mers = np.array([0.2, 0.5, 0.1, 0.9, 0.3, 0.8, 0.5, 0.6, 0.7])
    cont, median_score, median_mer = split_labels(scores, mers)
    assert (median_score, median_mer) == (3.0, 0.5)
    assert cont.tolist() == [
        True,  # above / below
        False,  # MER on its median: a tie is Oppn.
        False,  # score on its median
        True,  # below / above
        False,  # below / below
        False,  # score on its median, whatever the MER
        False,  # MER on its median
        True,  # below / above
        False,  # above / above
    ]


def test_even_sets_use_the_mean_of_the_middle_values():
    cont, median_score, median_mer = split_labels(
        np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.9, 0.7, 0.3, 0.1])
    )
    assert (median_score, median_mer) == (2.5, 0.5) and cont.all()


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="equally long"):
        split_labels(np.array([1.0]), np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="non-empty"):
        split_labels(np.array([]), np.array([]))


def _sts_dir(root, year, task, pairs, scores):
    folder = root / f"STS{year}-en-test"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"STS.input.{task}.txt").write_text("".join(f"{a}\t{b}\n" for a, b in pairs))
    (folder / f"STS.gs.{task}.txt").write_text("".join(f"{s}\n" for s in scores))


def test_sets_are_kept_by_their_median_score_in_a_closed_range(tmp_path):
    pairs = [("a b c d", "a b c d"), ("a b c d", "a b x y"), ("a b c d", "w x y z")]
    _sts_dir(tmp_path, 12, "low", pairs, ["1", "1.5", ""])  # unscored pair left out
    _sts_dir(tmp_path, 12, "edge", pairs, ["2", "2", "3.5"])
    _sts_dir(tmp_path, 13, "high", pairs, ["4", "5", "4.5"])
    result = probe_splits(tmp_path, min_median=2.0, max_median=3.5)
    by_name = {row["dataset"]: row for row in result.table}
    assert set(by_name) == {"STS2012-low", "STS2012-edge", "STS2013-high"}
    assert [by_name[n]["kept"] for n in ("STS2012-low", "STS2012-edge", "STS2013-high")] == [
        False,
        True,
        False,
    ]
    assert by_name["STS2012-low"]["pairs"] == 2
    assert set(result.pairs.column("dataset").to_pylist()) == {"STS2012-edge"}
    # edge: median score 2 (ties -> Oppn.) and the 3.5 pair has the highest MER -> Oppn.
    assert result.pairs.column("split").to_pylist() == ["oppn", "oppn", "oppn"]
    assert result.pairs.column("mer").to_pylist() == [0.0, 0.5, 1.0]
    with pytest.raises(InputError, match="exceeds"):
        probe_splits(tmp_path, min_median=3, max_median=2)
    with pytest.raises(InputError, match="no STS1x-en-test"):
        probe_splits(tmp_path / "STS2012-low")


def test_written_files(tmp_path):
    pairs = [("a b", "a b"), ("a b", "a c"), ("a b", "c d"), ("a b", "a b c")]
    _sts_dir(tmp_path / "sts", 14, "images", pairs, ["4", "3", "0", "2"])
    result = probe_splits(tmp_path / "sts")
    paths = write_probe_splits(result, tmp_path / "out")
    table = pq.read_table(paths["pairs"])
    assert table.num_rows == 4 and set(table.column("split").to_pylist()) <= {"cont", "oppn"}
    assert "STS2014-images" in paths["markdown"].read_text()
    assert '"max_median": 3.5' in paths["json"].read_text()
    assert "Sets of Table 2 not kept here" in table_markdown(result)


# Differences we document (docs/diagnostics.md): the paper's MER tokenisation of some sets is
# not recoverable; STS-B test differs most (47 pairs, 3.4% of the set).
TOLERANCE_SHARE = 0.04  # |Δ Cont.| per set, as a share of its pairs
TOLERANCE_TOTAL = 0.01  # Σ |Δ Cont.| over the 16 sets, as a share of their pairs
TOLERANCE_MEDIAN_MER = 0.03  # largest difference: STS2016-headlines, 0.6 against 0.625


@pytest.mark.shared_data
def test_table2_is_reproduced_within_the_documented_tolerance(shared_data):
    result = probe_splits(shared_data / "senteval_sts")
    rows = {row["dataset"]: row for row in result.table}
    total_delta = total_pairs = 0
    for name, (cont, oppn, median_score, median_mer) in PAPER_TABLE2.items():
        ours = rows[name]
        assert ours["kept"], name
        assert ours["pairs"] == cont + oppn, name
        assert ours["median_score"] == pytest.approx(median_score, abs=1e-9), name
        assert abs(ours["median_mer"] - median_mer) <= TOLERANCE_MEDIAN_MER, name
        assert abs(ours["cont"] - cont) <= TOLERANCE_SHARE * ours["pairs"], name
        total_delta += abs(ours["cont"] - cont)
        total_pairs += ours["pairs"]
    assert total_delta <= TOLERANCE_TOTAL * total_pairs
    for exact in ("STS2012-MSRvid", "STS2016-plagiarism", "STS2016-postediting"):
        assert rows[exact]["cont"] == PAPER_TABLE2[exact][0], exact


@pytest.mark.shared_data
def test_the_footnote_range_keeps_four_more_sets_than_table2_shows(shared_data):
    default = {row["dataset"] for row in probe_splits(shared_data / "senteval_sts").kept()}
    assert default - set(PAPER_TABLE2) == {
        "STS2012-MSRpar",
        "STS2014-OnWN",
        "STS2014-deft-news",
        "STS2014-tweet-news",
        "STSB-dev",
    }
    narrow = {row["dataset"] for row in probe_splits(shared_data, max_median=3.2).kept()}
    assert narrow == set(PAPER_TABLE2) | {"STSB-dev"}


@pytest.mark.shared_data
def test_project_words_move_the_medians(shared_data):
    paper = {r["dataset"]: r for r in probe_splits(shared_data / "senteval_sts").table}
    project = {
        r["dataset"]: r for r in probe_splits(shared_data / "senteval_sts", words="project").table
    }
    assert paper["STS2012-MSRvid"]["median_mer"] != project["STS2012-MSRvid"]["median_mer"]
