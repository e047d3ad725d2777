"""A version's rows -> the training sets of each objective (no model involved)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.dataset.reader import read_rows
from cseaug.errors import InputError
from cseaug.trainer.config import TrainConfig, load_train_config
from cseaug.trainer.data import load_training_data
from tests.canonical_rows import make_generate_cse_rows


def _rows(version) -> list[dict]:
    return read_rows(version).to_pylist()


PER_SET = {"batching": "per-set"}
PRESETS = Path(__file__).parents[2] / "configs" / "train"


def test_ngcse_trains_the_hierarchy_and_the_rest_as_dropout_pairs(publish, rows_factory) -> None:
    version = publish([rows_factory(20, 30)], heldout_fraction=0.3)
    data = load_training_data(version, TrainConfig(objective="ngcse", ngcse=PER_SET))
    rows = [r for r in _rows(version) if not r["heldout"]]
    aigen = [r for r in rows if r["split"] == "aigen"]
    hierarchy = data.tables["hierarchy"].to_pylist()
    assert hierarchy == [
        {"anchor": r["sentence"], "positive": r["positive"], "intermediate": r["intermediate"],
         "low": r["negative"]}
        for r in aigen
    ]  # fmt: skip
    dropout = data.tables["dropout"].to_pylist()
    assert dropout == [
        {"anchor": r["sentence"], "positive": r["sentence"]} for r in rows if r["split"] == "other"
    ]
    held = sum(r["heldout"] for r in _rows(version))
    assert data.skipped == {"heldout": held} and held > 0
    assert data.rows == {"hierarchy": len(aigen), "dropout": len(rows) - len(aigen)}


def test_ngcse_without_the_hierarchy_makes_s_n_a_hard_negative(publish, rows_factory) -> None:
    version = publish([rows_factory(10, 5)])
    cfg = TrainConfig.model_validate(
        {"objective": "ngcse", "ngcse": {"hierarchical": False, **PER_SET}}
    )
    data = load_training_data(version, cfg)
    assert set(data.tables) == {"pattern", "dropout"}
    assert data.tables["pattern"].column_names == ["anchor", "positive", "negative"]


@pytest.mark.parametrize("hierarchical", [True, False])
def test_ngcse_mixes_its_sets_into_one_generated_rows_first(
    publish, rows_factory, hierarchical: bool
) -> None:
    """The authors' batching (the default): one set, each row's kind in ``label``, the views a
    row's set lacks empty."""
    version = publish([rows_factory(7, 11)])
    ngcse = {"hierarchical": hierarchical}
    data = load_training_data(version, TrainConfig(objective="ngcse", ngcse=ngcse))
    per_set = load_training_data(
        version, TrainConfig(objective="ngcse", ngcse={**ngcse, **PER_SET})
    )
    assert list(data.tables) == ["mixed"] and data.generated == 7
    assert data.rows == per_set.rows
    generated_set = "hierarchy" if hierarchical else "pattern"
    expected = [
        {"anchor": r["anchor"], "positive": r["positive"],  "dropout_view": "",
         "intermediate": r.get("intermediate", ""), "negative": r.get("low", r.get("negative")),
         "label": 3 if hierarchical else 2}
        for r in per_set.tables[generated_set].to_pylist()
    ] + [
        {"anchor": r["anchor"], "positive": "", "dropout_view": r["anchor"],
         "intermediate": "", "negative": "", "label": 0}
        for r in per_set.tables["dropout"].to_pylist()
    ]  # fmt: skip
    assert data.tables["mixed"].to_pylist() == expected


def test_include_heldout_trains_on_every_row(publish, rows_factory) -> None:
    version = publish([rows_factory(10, 30)], heldout_fraction=0.5)
    cfg = TrainConfig(objective="simcse-unsup", include_heldout=True)
    data = load_training_data(version, cfg)
    assert data.rows == {"dropout": 40} and data.skipped == {}


def test_osscse_keeps_every_sentence_and_its_two_views(publish, rows_factory) -> None:
    osscse = rows_factory(6, 9, views=("positive", "negative"), method="osscse")
    version = publish([osscse])
    data = load_training_data(version, TrainConfig(objective="osscse"))
    augmented = data.tables["augmented"]
    assert augmented.column_names == ["anchor", "dropout_view", "paraphrase", "negation"]
    assert augmented.column("anchor").to_pylist() == augmented.column("dropout_view").to_pylist()
    assert data.rows == {"augmented": 6, "dropout": 9}


def test_skicse_supervised_trains_quadruplets_and_plain_nli_triples(publish, rows_factory) -> None:
    quads = rows_factory(5, 0, views=("positive", "negative", "knowledge"), method="ski")
    triples = rows_factory(4, 0, views=("positive", "negative"), method="ski", start=50)
    bare = rows_factory(0, 3, start=90)
    version = publish([quads, triples, bare])
    data = load_training_data(version, TrainConfig(objective="skicse-sup"))
    assert data.rows == {"ski": 5, "nli": 4}
    assert data.skipped == {"no_training_set": 3}
    assert data.tables["ski"].column_names == ["anchor", "positive", "negative", "knowledge"]


def test_generate_cse_holds_one_block_per_epoch_cycling_through_the_views(publish) -> None:
    version = publish([make_generate_cse_rows(4, 2, n_other=3)])
    data = load_training_data(version, TrainConfig(objective="generate-cse", epochs=3))
    positives = data.tables["views"].column("positive").to_pylist()
    assert positives == [f"view {k % 2} of {i}" for k in range(3) for i in range(4)]
    assert data.epoch_blocks == 3 and data.rows == {"views": 4}
    assert data.skipped == {"missing_epoch_views": 3}  # the other rows have no views


def test_generate_cse_needs_a_version_with_views(publish, rows_factory) -> None:
    version = publish([rows_factory(5, 5)])
    with pytest.raises(InputError, match="no Generate-CSE views"):
        load_training_data(version, TrainConfig(objective="generate-cse"))


def test_a_version_without_the_objectives_views_is_an_error_naming_them(
    publish, rows_factory
) -> None:
    version = publish([rows_factory(0, 5)])
    with pytest.raises(InputError, match=r"\(positive, negative\).*cseaug show"):
        load_training_data(version, TrainConfig(objective="simcse-sup"))


def test_epoch_blocks_are_drawn_one_per_epoch(publish) -> None:
    pytest.importorskip("sentence_transformers")
    from cseaug.trainer.sampler import EpochBlockBatchSampler

    version = publish([make_generate_cse_rows(10, 3)])
    data = load_training_data(version, TrainConfig(objective="generate-cse", epochs=3))
    [dataset] = data.datasets().values()
    sampler = EpochBlockBatchSampler(dataset, batch_size=4, drop_last=False, seed=7, blocks=3)
    assert len(sampler) == 3
    seen = []
    for epoch in range(4):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        indices = sorted(i for batch in batches for i in batch)
        assert indices == list(range((epoch % 3) * 10, (epoch % 3) * 10 + 10))
        views = {dataset[i]["positive"].split(" of ")[0] for i in indices}
        assert views == {f"view {epoch % 3}"}
        seen.append([i for batch in batches for i in batch])
    assert any(order != sorted(order) for order in seen)  # shuffled within the block


@pytest.mark.parametrize(
    ("preset", "trains_heldout"),
    [("ngcse-wiki-sts-ht-final", True), ("ngcse-nli-sts-ht-final", True), ("ngcse", False)],
)
def test_ngcse_final_presets_train_the_whole_hybrid_file(
    publish, rows_factory, preset: str, trains_heldout: bool
) -> None:
    """The authors' Final scripts read the whole hybrid file; the pattern experiments of
    ngcse.yaml (sts_ht.sh) leave the 10% held-out rows out."""
    version = publish([rows_factory(20, 30)], heldout_fraction=0.1)
    rows = _rows(version)
    held = sum(r["heldout"] for r in rows)
    assert held > 0
    data = load_training_data(version, load_train_config(PRESETS / f"{preset}.yaml"))
    trained = sum(data.rows.values())
    assert trained == (len(rows) if trains_heldout else len(rows) - held)
    assert data.skipped == ({} if trains_heldout else {"heldout": held})
