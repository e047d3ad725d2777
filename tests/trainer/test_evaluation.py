"""SentEval's STS aggregates, written out by hand on a tiny example, and the dev split."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.errors import InputError
from cseaug.trainer.config import EvaluationConfig
from cseaug.trainer.evaluation import dev_set, eval_sets, read_eval_set, senteval_aggregates


def test_all_mean_and_wmean_are_sentevals_aggregates_of_a_hand_computed_example() -> None:
    # subset "a": 3 pairs ranked as gold (Spearman 1); subset "b": 2 pairs inverted (-1).
    predicted = [0.1, 0.2, 0.3, 0.4, 0.5]
    gold = [1.0, 2.0, 3.0, 5.0, 4.0]
    got = senteval_aggregates(predicted, gold, ["a", "a", "a", "b", "b"])
    # all: one Spearman over the five pairs pooled; rank differences 0,0,0,1,1:
    # 1 - 6 * (1 + 1) / (5 * (25 - 1)) = 0.9
    assert got["all"] == pytest.approx(0.9)
    assert got["mean"] == pytest.approx((1 + -1) / 2)  # plain mean over the two subsets
    assert got["wmean"] == pytest.approx((3 * 1 + 2 * -1) / 5)  # weighted by 3 and 2 pairs


@pytest.mark.shared_data
def test_dev_splits_are_stsb_dev_and_sick_trial(shared_data: Path) -> None:
    assert read_eval_set(shared_data, "STS-B", "dev").num_rows == 1500  # sts-dev.csv
    assert read_eval_set(shared_data, "SICK-R", "dev").num_rows == 500  # SICK_trial.txt
    sts12 = read_eval_set(shared_data, "STS12")
    assert set(sts12.column("task").to_pylist()) == {
        "MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"
    }  # fmt: skip
    with pytest.raises(InputError, match="STS12 has no dev split"):
        read_eval_set(shared_data, "STS12", "dev")


@pytest.mark.shared_data
def test_max_pairs_caps_the_dev_set_as_it_caps_the_test_sets(shared_data: Path) -> None:
    capped = EvaluationConfig(data_dir=str(shared_data), sets=["STS-B"], max_pairs=40)
    dev = dev_set(capped)
    assert dev is not None and len(dev.scores) == 40
    full = dev_set(EvaluationConfig(data_dir=str(shared_data)))
    assert full is not None and len(full.scores) == 1500
    pairs = set(zip(full.s1, full.s2, full.scores, strict=True))
    assert set(zip(dev.s1, dev.s2, dev.scores, strict=True)) <= pairs  # a sample of sts-dev.csv
    assert dev == dev_set(capped)  # seeded: every checkpoint scores the same pairs
    [test] = eval_sets(capped)
    assert len(test.scores) == 40 and test.s1 != dev.s1


def test_a_missing_set_says_how_to_fetch_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cseaug data fetch .*stsb") as caught:
        read_eval_set(tmp_path, "STS-B")
    assert "shared" not in str(caught.value)
