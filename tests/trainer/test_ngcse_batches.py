"""NGCSE's mixed batches: the authors' schedule, its loss, its collation, a run on a tiny BERT.

The schedule is checked against a line-by-line transcription of the authors' collator
(``OurDataCollatorWithPadding.__call__`` in BDBC-KG-NLP/NGCSE ``ngcse/utils.py``, the branch
their code runs, ``combine_training=True``) on the same shuffled row stream.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")

from cseaug.trainer.config import TrainConfig  # noqa: E402
from cseaug.trainer.losses.ngcse import NGCSEMixedLoss  # noqa: E402
from cseaug.trainer.objectives import (  # noqa: E402
    MIXED_COLUMN_LABELS,
    MIXED_COLUMNS,
    MIXED_KINDS,
)
from cseaug.trainer.sampler import MixedBatchCollator, MixedBatchSampler  # noqa: E402
from tests.trainer.test_losses import (  # noqa: E402
    ANCHOR,
    DROPOUT_VIEW,
    INTERMEDIATE,
    NEGATIVE,
    POSITIVE,
    TAU,
    cos,
    neg_log_softmax,
    tensors,
)


def authors_collator(stream: list[list[int]], is_generated, aigen_batch_size: int):
    """The authors' collator, transcribed: one call per incoming batch of the shuffled stream."""
    aigen_features_cache, other_features_cache = [], []
    for features in stream:
        for feature in features:
            if is_generated(feature):
                aigen_features_cache.append(feature)
            else:
                other_features_cache.append(feature)
        if len(aigen_features_cache) >= aigen_batch_size:
            features = aigen_features_cache
            aigen_features_cache = []
            features += other_features_cache  # combine_training
            other_features_cache = []
        else:
            features = other_features_cache
            other_features_cache = []
        yield features


def _stream(rows: int, batch_size: int, seed: int) -> list[list[int]]:
    order = torch.randperm(rows, generator=torch.Generator().manual_seed(seed))
    return [chunk.tolist() for chunk in order.split(batch_size)]


@pytest.mark.parametrize(("rows", "generated", "batch_size", "per_batch"), [
    (2_000, 90, 32, 4), (5_000, 40, 64, 16), (3_000, 1_500, 16, 16), (500, 0, 16, 16),
])  # fmt: skip
def test_mixed_batches_follow_the_authors_collator(
    rows: int, generated: int, batch_size: int, per_batch: int
) -> None:
    sampler = MixedBatchSampler(
        range(rows), batch_size, False, seed=7, generated=generated, per_batch=per_batch
    )
    sampler.set_epoch(2)
    stream = _stream(rows, batch_size, 7 + 2)
    theirs = list(authors_collator(stream, lambda i: i < generated, per_batch))
    ours = list(sampler)
    # the authors' code would step on an empty batch where a chunk was all cached generated
    # rows, and carries the generated rows still cached into the next epoch: here those are
    # no step, and the epoch's last batch
    trained = {i for batch in theirs for i in batch}
    left = [i for chunk in stream for i in chunk if i < generated and i not in trained]
    assert ours == [b for b in theirs if b] + ([left] if left else [])
    assert sorted(i for b in ours for i in b) == list(range(rows))  # every row once
    assert len(sampler) == len(ours)


def test_at_wiki_scale_the_hierarchical_loss_trains_on_13x_more_steps_than_per_set() -> None:
    """18k generated rows among 900k, batch 256, 16 cached (the authors' sts_ht.sh): the
    hierarchical loss applies on every step whose batch holds generated rows."""
    from sentence_transformers.base.sampler import DefaultBatchSampler, ProportionalBatchSampler
    from torch.utils.data import ConcatDataset

    rows, generated, batch_size = 900_000, 18_000, 256
    mixed = MixedBatchSampler(
        range(rows), batch_size, False, seed=42, generated=generated, per_batch=16
    )
    mixed_steps = sum(1 for batch in mixed if min(batch) < generated)

    sets = ConcatDataset([range(generated), range(rows - generated)])
    per_set = ProportionalBatchSampler(
        sets,
        [DefaultBatchSampler(range(len(d)), batch_size, False) for d in sets.datasets],
        generator=torch.Generator().manual_seed(42),
        seed=42,
    )
    per_set_steps = sum(1 for batch in per_set if batch[0] < generated)

    assert per_set_steps == math.ceil(generated / batch_size)  # 71
    # a flush needs >= 16 cached rows; a chunk brings 256 * 2% = 5.12 of them on average,
    # so between 18000 / (16 + 5.12) and 18000 / 16 steps
    assert generated / (16 + batch_size * generated / rows) < mixed_steps < generated / 16
    assert mixed_steps / per_set_steps > 13
    print(f"hierarchical-loss steps: mixed {mixed_steps}, per-set {per_set_steps}")


def test_mixed_loss_is_one_softmax_over_every_row_plus_eq_6_on_the_hierarchy_rows() -> None:
    """Rows: NLI pattern (s, s^p, s^n), hierarchy (s, s^p, s^m, s^n), dropout (x, x')."""
    m1, m2, beta = 5e-3, 5e-2, 0.7
    kinds = torch.tensor([MIXED_KINDS.index(k) for k in ("pattern", "hierarchy", "dropout")])
    columns = {  # as the collator sends them: each column for the rows that have it
        "positive": [POSITIVE[0], POSITIVE[1]],
        "dropout_view": [DROPOUT_VIEW[2]],
        "intermediate": [INTERMEDIATE[1]],
        "negative": [NEGATIVE[0], NEGATIVE[1]],
    }
    assert list(columns) == list(MIXED_COLUMNS)
    loss = NGCSEMixedLoss(
        model=None,
        temperature=TAU,
        kind_names=MIXED_KINDS,
        column_labels=MIXED_COLUMN_LABELS,
        margins=(m1, m2),
        beta=beta,
    )
    got = loss.mixed_loss(tensors(ANCHOR)[0], tensors(*columns.values()), kinds).item()

    positives = [POSITIVE[0], POSITIVE[1], DROPOUT_VIEW[2]]
    candidates = [*positives, NEGATIVE[0]]  # the pattern row's s^n; not the hierarchy row's
    contrastive = (
        sum(
            neg_log_softmax(cos(a, positives[i]), [cos(a, c) for c in candidates])
            for i, a in enumerate(ANCHOR)
        )
        / 3
    )
    s, sp, sm, sn = ANCHOR[1], POSITIVE[1], INTERMEDIATE[1], NEGATIVE[1]
    hierarchical = 0.5 * (
        max(cos(s, sm) - cos(s, sp) + m1, 0.0) + max(cos(s, sn) - cos(s, sm) + m2, 0.0)
    )
    assert hierarchical > 0
    assert got == pytest.approx(contrastive + beta * hierarchical, rel=1e-9)

    anchors = [ANCHOR[0], ANCHOR[2]]  # no hierarchy row: no intermediate column, no eq. 6
    without_hierarchy = loss.mixed_loss(
        tensors(anchors)[0],
        tensors([POSITIVE[0]], [DROPOUT_VIEW[2]], [NEGATIVE[0]]),
        kinds[[0, 2]],
    ).item()
    positives = [POSITIVE[0], DROPOUT_VIEW[2]]
    candidates = [*positives, NEGATIVE[0]]
    expected = (
        sum(
            neg_log_softmax(cos(a, positives[i]), [cos(a, c) for c in candidates])
            for i, a in enumerate(anchors)
        )
        / 2
    )
    assert without_hierarchy == pytest.approx(expected, rel=1e-9)


def test_the_collator_sends_each_sparse_column_for_the_rows_that_have_it(tiny_bert: Path) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    transformer = Transformer(str(tiny_bert))
    model = SentenceTransformer(modules=[transformer, Pooling(16, "cls")], device="cpu")
    collator = MixedBatchCollator(
        sparse_columns=MIXED_COLUMN_LABELS, preprocess_fn=model.preprocess
    )
    row = {"positive": "", "dropout_view": "", "intermediate": "", "negative": ""}
    batch = collator([
        {"anchor": "a cat", **row, "positive": "a dog", "intermediate": "the cat",
         "negative": "no cat", "label": 3},
        {"anchor": "the mat", **row, "dropout_view": "the mat", "label": 0},
        {"anchor": "a view", **row, "dropout_view": "a view", "label": 0},
    ])  # fmt: skip
    sizes = {k[: -len("_input_ids")]: len(v) for k, v in batch.items() if k.endswith("_input_ids")}
    assert sizes == {
        "anchor": 3,
        "positive": 1,
        "dropout_view": 2,
        "intermediate": 1,
        "negative": 1,
    }
    assert list(sizes) == ["anchor", *MIXED_COLUMNS]  # the order the loss reads them in
    assert batch["label"].tolist() == [3, 0, 0]


def test_ngcse_trains_a_tiny_bert_on_mixed_batches(
    publish, rows_factory, tiny_bert: Path, tmp_path: Path
) -> None:
    from cseaug.trainer.train import train_encoder

    version = publish([rows_factory(6, 40)])
    cfg = TrainConfig.model_validate(
        {
            "objective": "ngcse",
            "model": str(tiny_bert),
            "batch_size": 8,
            "max_steps": 4,
            "logging_steps": 1,
            "device": "cpu",
            "head": {"mlp": "train-only", "mlp_activation": "identity"},
            "ngcse": {"generated_per_batch": 2},
            "evaluation": {"sets": [], "dev": None},
        }
    )
    result = train_encoder(version, cfg, tmp_path / "model")
    assert result.record["steps"] == 4 and len(result.record["losses"]) == 4
    assert result.record["training_rows"] == {"hierarchy": 6, "dropout": 40}
    assert all(math.isfinite(loss) for _, loss in result.record["losses"])
