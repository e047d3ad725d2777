"""What each paper trains on which rows: the training sets of an objective, whose columns are
its loss's inputs, trained as one sentence-transformers multi-dataset run but for NGCSE's
mixed batches (:data:`MIXED`); docs/trainer.md ("Objectives") has the papers' equations."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from cseaug.trainer.config import TrainConfig

EPOCH_VIEW = "epoch_view"  # the source of Generate-CSE's view of the epoch (augmentations)


@dataclass(frozen=True)
class TrainingSet:
    """The rows of a version that have ``requires``, as the columns ``(name, source)`` (a
    canonical column or :data:`EPOCH_VIEW`), trained with the loss named ``loss``."""

    name: str
    requires: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]
    loss: str


DROPOUT = TrainingSet("dropout", (), (("anchor", "sentence"), ("positive", "sentence")), "infonce")
TRIPLETS = TrainingSet(
    "triplets",
    ("positive", "negative"),
    (("anchor", "sentence"), ("positive", "positive"), ("negative", "negative")),
    "infonce",
)
HIERARCHY = TrainingSet(
    "hierarchy",
    ("positive", "intermediate", "negative"),
    (("anchor", "sentence"), ("positive", "positive"), ("intermediate", "intermediate"),
     ("low", "negative")),
    "ngcse",
)  # fmt: skip
PAIRS = TrainingSet(
    "pairs", ("positive",), (("anchor", "sentence"), ("positive", "positive")), "infonce"
)
OSSCSE_VIEWS = TrainingSet(
    "augmented",
    ("positive", "negative"),
    (("anchor", "sentence"), ("dropout_view", "sentence"), ("paraphrase", "positive"),
     ("negation", "negative")),
    "osscse",
)  # fmt: skip
SKI_PAIRS = TrainingSet(
    "ski",
    ("knowledge",),
    (("anchor", "sentence"), ("dropout_view", "sentence"), ("knowledge", "knowledge")),
    "skicse-unsup",
)
SKI_QUADRUPLETS = TrainingSet(
    "ski",
    ("positive", "negative", "knowledge"),
    (("anchor", "sentence"), ("positive", "positive"), ("negative", "negative"),
     ("knowledge", "knowledge")),
    "skicse-sup",
)  # fmt: skip
EPOCH_VIEWS = TrainingSet(
    "views", (EPOCH_VIEW,), (("anchor", "sentence"), ("positive", EPOCH_VIEW)), "nt-xent"
)


MIXED_KINDS = ("dropout", "pairs", "pattern", "hierarchy")  # a mixed row's set, by its label

MIXED_COLUMNS: dict[str, tuple[str, ...]] = {
    "positive": ("pairs", "pattern", "hierarchy"),
    "dropout_view": ("dropout",),
    "intermediate": ("hierarchy",),
    "negative": ("pattern", "hierarchy"),
}
"""The columns after ``anchor`` of NGCSE's mixed set, in order, and the kinds of row that have
them (the others hold ""): a batch carries each column for those rows only."""


MIXED_COLUMN_LABELS: dict[str, tuple[int, ...]] = {
    column: tuple(map(MIXED_KINDS.index, kinds)) for column, kinds in MIXED_COLUMNS.items()
}
"""Each column of :data:`MIXED_COLUMNS` and the labels of the rows that have it."""


MIXED = TrainingSet(
    "mixed",
    (),
    (("anchor", "sentence"), ("positive", "positive"), ("dropout_view", "sentence"),
     ("intermediate", "intermediate"), ("negative", "negative")),
    "ngcse-mixed",
)  # fmt: skip
"""NGCSE's sets as one, generated rows first, for the authors' mixed batches (docs/trainer.md)."""


def training_sets(cfg: TrainConfig) -> tuple[TrainingSet, ...]:
    """The training sets of ``cfg.objective``, in the order rows are assigned to them."""
    if cfg.objective == "ngcse":
        hierarchy = (HIERARCHY,) if cfg.ngcse.hierarchical else ()
        return (*hierarchy, replace(TRIPLETS, name="pattern"), PAIRS, DROPOUT)
    return {
        "simcse-unsup": (DROPOUT,),
        "simcse-sup": (TRIPLETS,),
        "osscse": (OSSCSE_VIEWS, replace(DROPOUT, loss="osscse")),
        "skicse-unsup": (SKI_PAIRS, DROPOUT),
        "skicse-sup": (SKI_QUADRUPLETS, replace(TRIPLETS, name="nli")),
        "generate-cse": (EPOCH_VIEWS,),
    }[cfg.objective]


def make_losses(cfg: TrainConfig, model: Any, sets: tuple[TrainingSet, ...]) -> dict[str, Any]:
    """One loss per training set, shared by the sets that name it."""
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from cseaug.trainer.losses.ngcse import NGCSEHierarchicalLoss, NGCSEMixedLoss
    from cseaug.trainer.losses.nt_xent import NT_XENT_DIRECTIONS, SymmetricNTXentLoss
    from cseaug.trainer.losses.osscse import OssCSELoss
    from cseaug.trainer.losses.skicse import SKICSESupervisedLoss, SKICSEUnsupervisedLoss

    tau = cfg.temperature
    ngcse = {"margins": cfg.ngcse.margins, "beta": cfg.ngcse.beta}

    def build(name: str) -> Any:
        if name == "infonce":
            # SimCSE's InfoNCE (NGCSE eq. 1, OssCSE eq. 2, SKICSE eq. 1 and 4): scale = 1/tau
            return MultipleNegativesRankingLoss(model, scale=1 / tau)
        if name == "nt-xent":
            # VAEGPT-Sim section 3.2: h_i against every other of the 2N sentences of the batch
            if cfg.generate_cse.nt_xent == "symmetric":
                return SymmetricNTXentLoss(model, scale=1 / tau)
            return MultipleNegativesRankingLoss(
                model, scale=1 / tau, directions=NT_XENT_DIRECTIONS, partition_mode="joint"
            )
        if name == "ngcse":
            return NGCSEHierarchicalLoss(model, tau, **ngcse)
        if name == "ngcse-mixed":
            return NGCSEMixedLoss(
                model, tau, kind_names=MIXED_KINDS, column_labels=MIXED_COLUMN_LABELS, **ngcse
            )
        if name == "osscse":
            return OssCSELoss(model, tau, **cfg.osscse.model_dump())
        if name == "skicse-unsup":
            return SKICSEUnsupervisedLoss(model, tau, ski_weight=cfg.skicse.ski_weight)
        return SKICSESupervisedLoss(model, tau, **cfg.skicse.model_dump(exclude={"ski_weight"}))

    built = {loss: build(loss) for loss in dict.fromkeys(s.loss for s in sets)}
    return {s.name: built[s.loss] for s in sets}


LOSS_NAMES: dict[str, str] = {
    "simcse-unsup": "unsupervised SimCSE: InfoNCE with a dropout positive",
    "simcse-sup": "supervised SimCSE: InfoNCE with a hard negative",
    "ngcse": "NGCSE eq. 7: contrastive loss (eq. 1) + beta * hierarchical triplet loss (eq. 6)",
    "osscse": "OssCSE eq. 5: dropout InfoNCE (eq. 2) + recall loss (eq. 4) + lambda * two-way margin loss (eq. 3)",
    "skicse-unsup": "SKICSE eq. 3: (1 - lambda) SimCSE (eq. 1) + lambda SKI InfoNCE (eq. 2)",
    "skicse-sup": "SKICSE eq. 7: supervised SimCSE (eq. 4) + lambda_1 eq. 5 + lambda_2 eq. 6",
    "generate-cse": "Generate-CSE (VAEGPT-Sim section 3.2): NT-Xent over 2N, view k in epoch k",
}
"""One line per objective: the loss it trains, with its paper's equations (model card, records)."""
