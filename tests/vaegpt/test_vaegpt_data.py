"""VAEGPT-Sim training pairs: SICK relatedness > 3, MRPC label 1, 12:1 split, the self-paired variant."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.errors import ConfigError
from cseaug.vaegpt.config import PairDataConfig, load_train_config
from cseaug.vaegpt.data import load_pairs, self_pairs, split_pairs

SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tSemEval_set"


def write_sick(path: Path) -> Path:
    rows = [
        (1, "A dog runs", "A dog is running", "ENTAILMENT", 4.5, "TRAIN"),
        (2, "A cat sleeps", "A man cooks", "NEUTRAL", 1.2, "TRAIN"),
        (3, "Kids play", "Children are playing", "ENTAILMENT", 3.0, "TEST"),  # not above 3
        (4, "A boy jumps", "A child leaps", "ENTAILMENT", 3.1, "TEST"),
        (5, "A girl sings", "A girl is singing", "ENTAILMENT", 4.9, "TRIAL"),  # evaluation split
        (6, "A dog runs", "A dog is running", "ENTAILMENT", 4.5, "TRAIN"),  # duplicate pair
    ]
    lines = [SICK_HEADER] + ["\t".join(map(str, r)) for r in rows]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    return path


def write_mrpc(path: Path) -> Path:
    lines = [
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String",
        '1\t11\t12\tHe said "yes" today.\tToday he said "yes".',
        "0\t13\t14\tStocks fell.\tThe weather is nice.",
        "1\t15\t16\tThe firm grew fast.\tThe company expanded quickly.",
    ]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    return path


def test_filters_pairs_and_drops_duplicates(tmp_path: Path) -> None:
    config = PairDataConfig(
        sick=[str(write_sick(tmp_path / "SICK.txt"))],
        mrpc=[str(write_mrpc(tmp_path / "m.txt"))],
        validation_ratio=0,
    )
    splits = load_pairs(config, seed=0)
    assert sorted(splits.train) == sorted(
        [
            ("A dog runs", "A dog is running"),
            ("A boy jumps", "A child leaps"),
            ('He said "yes" today.', 'Today he said "yes".'),
            ("The firm grew fast.", "The company expanded quickly."),
        ]
    )
    assert splits.stats["duplicates_dropped"] == 1
    assert splits.validation == []


def test_trial_split_can_be_included_and_directions_doubled(tmp_path: Path) -> None:
    config = PairDataConfig(
        sick=[str(write_sick(tmp_path / "SICK.txt"))],
        sick_splits=["TRIAL"],
        both_directions=True,
        validation_ratio=0,
    )
    assert sorted(load_pairs(config, seed=0).train) == [
        ("A girl is singing", "A girl sings"),
        ("A girl sings", "A girl is singing"),
    ]


def test_self_pairing_is_the_fully_unsupervised_variant(tmp_path: Path) -> None:
    config = PairDataConfig(
        mrpc=[str(write_mrpc(tmp_path / "m.txt"))], pairing="self", validation_ratio=0
    )
    train = load_pairs(config, seed=0).train
    assert len(train) == 4 and all(s == t for s, t in train)
    assert self_pairs([("a", "b"), ("b", "c")]) == [("a", "a"), ("b", "b"), ("c", "c")]


def test_split_is_12_to_1_and_seeded() -> None:
    pairs = [(str(i), str(i)) for i in range(130)]
    train, validation = split_pairs(pairs, 1 / 13, seed=3)
    assert (len(train), len(validation)) == (120, 10)
    assert split_pairs(pairs, 1 / 13, seed=3) == (train, validation)
    assert split_pairs(pairs, 1 / 13, seed=4) != (train, validation)
    assert sorted(train + validation) == sorted(pairs)


def test_no_data_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"data\.sick"):
        load_pairs(PairDataConfig(), seed=0)


@pytest.mark.shared_data
def test_real_sick_and_mrpc_counts(shared_data: Path) -> None:
    config = PairDataConfig(
        sick=[str(shared_data / "sick" / "SICK.txt")],
        mrpc=[
            str(shared_data / "mrpc" / f"msr_paraphrase_{split}.txt") for split in ("train", "test")
        ],
    )
    splits = load_pairs(config, seed=0)
    files = splits.stats["files"]
    assert files[config.sick[0]] == {"read": 9840, "kept": 6882}  # relatedness > 3, TRAIN + TEST
    assert sum(files[m]["kept"] for m in config.mrpc) == 3900
    total = len(splits.train) + len(splits.validation)
    assert total == 6882 + 3900 - splits.stats["duplicates_dropped"]
    assert len(splits.train) / len(splits.validation) == pytest.approx(12, rel=0.01)


def test_shipped_training_config_validates() -> None:
    repo = Path(__file__).resolve().parents[2]
    cfg = load_train_config(repo / "configs" / "vaegpt" / "train.yaml")
    assert cfg.optim.learning_rate == 5e-7 and cfg.optim.batch_size == 32
    assert cfg.model.latent_weight == 0.1 and cfg.loss.kl_weight == 1e-4
    assert cfg.data.sick and cfg.data.mrpc
