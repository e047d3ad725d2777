"""The training config of one run (``configs/train/<objective>.yaml``; docs/trainer.md,
"Config keys"): the loss sections default to the papers' training details, the optimiser to
SimCSE's unsupervised BERT-base recipe, which every shipped config overrides.

Example:
    >>> cfg = TrainConfig.model_validate({"objective": "ngcse", "epochs": 1})
    >>> cfg.ngcse.margins, cfg.temperature
    ((0.005, 0.05), 0.05)
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from pydantic import Field, model_validator

from cseaug.config import StrictModel, TrainingPrecision, load_yaml_model

Objective = Literal[
    "simcse-unsup", "simcse-sup", "ngcse", "osscse", "skicse-unsup", "skicse-sup", "generate-cse"
]
"""What the model is trained to do with the version's rows (docs/trainer.md)."""

EvalSet = Literal["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R"]
EVAL_SETS: tuple[str, ...] = get_args(EvalSet)
"""The seven STS sets every paper reports (SentEval: STS12-16 all subsets, STS-B test, SICK-R test)."""


PROMPTBERT_TEMPLATES = (
    'This sentence : "{sentence}" means [MASK] .',
    'This sentence of "{sentence}" means [MASK] .',
)
"""PromptBERT's two templates as NGCSE (appendix) and OssCSE (section 4) print them."""


class HeadConfig(StrictModel):
    """What sits on the pooled embedding in training, and what is evaluated and saved."""

    mlp: Literal["none", "train-only", "kept"] = Field(
        "none",
        description="An MLP on the pooled embedding: 'train-only' (dropped for evaluation and "
        "saving: SimCSE unsupervised, NGCSE, SKICSE, VAEGPT-Sim), 'kept' (supervised SimCSE).",
    )
    mlp_activation: Literal["tanh", "identity"] = Field(
        "tanh", description="The MLP's activation: tanh (SimCSE) or identity (NGCSE, train-only)."
    )
    mlp_init: Literal["pytorch", "bert", "ngcse"] = Field(
        "pytorch",
        description="The MLP's initial weights: nn.Linear's, SimCSE's cl_init (N(0, 0.02), bias "
        "0) or NGCSE's custom_param_init (N(0, 6e-3)).",
    )
    evaluation_pooling: Literal["cls", "mean"] | None = Field(
        None,
        description="The pooling evaluated and saved (VAEGPT-Sim: 'mean'); None: the training one.",
    )
    templates: tuple[str, str] = Field(
        PROMPTBERT_TEMPLATES,
        description="pooling 'prompt': the template of every sentence ({sentence} once, [MASK] "
        "the representation) and of a sentence's second view.",
    )

    @model_validator(mode="after")
    def _templates_hold_a_sentence_and_a_mask(self) -> HeadConfig:
        for template in self.templates:
            if template.count("{sentence}") != 1 or "[MASK]" not in template:
                raise ValueError(
                    f"head.templates: {template!r} must hold {{sentence}} once and [MASK]"
                )
        if self.mlp == "kept" and self.mlp_activation != "tanh":
            raise ValueError(
                "head.mlp_activation identity is for a train-only MLP (NGCSE's); a kept MLP is "
                "supervised SimCSE's, with tanh"
            )
        return self


class NGCSELossConfig(StrictModel):
    """NGCSE (AAAI 2024): contrastive loss (eq. 1) plus the hierarchical triplet loss (eq. 6, 7)."""

    hierarchical: bool = Field(
        True,
        description="Rows with an intermediate view train eq. 6 (NGCSE 'Wiki.STS-HT'); False: "
        "like the NLI pattern, s^n a hard negative.",
    )
    margins: tuple[float, float] = Field(
        (5e-3, 5e-2),
        description="m1 (s^p above s^m) and m2 (s^m above s^n) of eq. 6 (Table 6, WikiSTS-HT).",
    )
    beta: float = Field(
        1.0, ge=0, description="Weight of the hierarchical loss, eq. 7 (Table 6: 1)."
    )
    batching: Literal["mixed", "per-set"] = Field(
        "mixed",
        description="'mixed': the authors' batches, generated rows cached into batches of "
        "other rows; 'per-set': each batch from one training set.",
    )
    generated_per_batch: int = Field(
        16,
        ge=1,
        description="batching 'mixed': the authors' --aigen_batch_size (16 in sts_ht.sh, 48 in "
        "the Final Performance scripts).",
    )


class OssCSELossConfig(StrictModel):
    """OssCSE: dropout InfoNCE (eq. 2) + recall loss (eq. 4) + lambda * two-way margin loss (eq. 3, 5)."""

    alpha: float = Field(0.05, description="Lower margin of eq. 3 (appendix A: 0.05).")
    beta: float = Field(0.2, description="Upper margin of eq. 3 (appendix A: 0.2).")
    margin_weight: float = Field(1e-3, ge=0, description="lambda of eq. 5 (appendix A: 1e-3).")
    recall_weight: float = Field(
        2e-3, ge=0, description="gamma of eq. 4 (appendix A: 2e-3); 0 leaves it out."
    )

    @model_validator(mode="after")
    def _ordered(self) -> OssCSELossConfig:
        if self.alpha > self.beta:
            raise ValueError(
                f"osscse.alpha ({self.alpha}) must not exceed osscse.beta ({self.beta}): the loss "
                "keeps alpha < sim(s, s^p) - sim(s, s^n) < beta"
            )
        return self


class SKICSELossConfig(StrictModel):
    """SKICSE: the knowable-information terms weighted against SimCSE's (eq. 3 and 7)."""

    ski_weight: float = Field(
        0.15, ge=0, le=1, description="lambda of eq. 3, unsupervised (appendix A: 0.15)."
    )
    ski_weights: tuple[float, float] = Field(
        (0.1, 0.3),
        description="lambda_1, lambda_2 of eq. 7, supervised (appendix A: 0.1 and 0.3).",
    )
    eq6_reading: Literal["bounded", "literal"] = Field(
        "bounded",
        description="Eq. 6's denominator: 'bounded' with the numerator's term (as InfoNCE), "
        "'literal' as printed (unbounded below).",
    )

    @model_validator(mode="after")
    def _weights_sum(self) -> SKICSELossConfig:
        if min(self.ski_weights) < 0 or sum(self.ski_weights) > 1:
            raise ValueError(
                f"skicse.ski_weights {list(self.ski_weights)} must be >= 0 and sum to at most 1 "
                "(eq. 7 weighs SimCSE's loss by 1 - lambda_1 - lambda_2)"
            )
        return self


class GenerateCSELossConfig(StrictModel):
    """Generate-CSE (VAEGPT-Sim section 3.2): NT-Xent over the 2N sentences of a batch."""

    nt_xent: Literal["symmetric", "anchor"] = Field(
        "symmetric",
        description="'symmetric': the terms of all 2N sentences (SimCLR's form, which the paper "
        "adopts); 'anchor': the N source sentences' terms only.",
    )


class EvaluationConfig(StrictModel):
    """Spearman correlation on the STS sets before and after training (SentEval layout), and
    the dev set that selects the checkpoint (docs/trainer.md, "Evaluation")."""

    data_dir: str = Field(
        "data",
        description="Directory in SentEval's layout, as `cseaug data fetch sts12-test ... "
        "stsb sick-splits` puts it under data/.",
    )
    sets: list[EvalSet] = Field(
        default_factory=lambda: list(EVAL_SETS),
        description="Which sets to score; [] scores none.",
    )
    max_pairs: int | None = Field(
        None,
        ge=10,
        description="A seeded sample of at most this many pairs per set, dev set included.",
    )
    batch_size: int = Field(64, ge=1, description="Sentences per encoder forward pass.")
    before: bool = Field(True, description="Score the model before training too.")
    dev: Literal["STS-B", "SICK-R"] | None = Field(
        "STS-B",
        description="Dev set of checkpoint selection (the papers': STS-B); None keeps the final "
        "model.",
    )
    eval_steps: int = Field(
        125, ge=1, description="Score the dev set every n steps (NGCSE, OssCSE, SimCSE: 125)."
    )


class TrainConfig(StrictModel):
    """One training run of a sentence encoder on a published version."""

    objective: Objective = Field(
        description="The paper's objective (docs/trainer.md maps each to its loss)."
    )
    model: str = Field(
        "all-MiniLM-L6-v2",
        description="Encoder to start from: 'all-MiniLM-L6-v2' (pinned revision), a local model "
        "directory, or a Hugging Face id (offline only when cached).",
    )
    pooling: Literal["cls", "mean", "prompt"] = Field(
        "cls",
        description="Pooling of a plain transformers model: [CLS], mean, or PromptBERT's "
        "[MASK] of a template; a sentence-transformers model keeps its own.",
    )
    head: HeadConfig = Field(
        default_factory=HeadConfig,
        description="MLP head and evaluation pooling of a plain transformers model (docs/trainer.md).",
    )
    max_seq_length: int | None = Field(
        32,
        ge=8,
        description="Tokens per training sentence, [CLS] and [SEP] counted (None: the model's "
        "own, which evaluation and the saved model use).",
    )
    epochs: int = Field(1, ge=1, description="Passes over the training rows.")
    max_steps: int | None = Field(
        None, ge=1, description="Stop after this many optimisation steps (None: all epochs)."
    )
    batch_size: int = Field(64, ge=2, description="Rows per batch (in-batch negatives: >= 2).")
    learning_rate: float = Field(3e-5, gt=0, description="Peak learning rate of AdamW.")
    warmup_ratio: float = Field(0.0, ge=0, lt=1, description="Share of steps of linear warm-up.")
    temperature: float = Field(
        0.05, gt=0, description="tau of every InfoNCE term (all four papers: 0.05)."
    )
    seed: int = Field(42, description="Seed of the model initialisation and of batch order.")
    include_heldout: bool = Field(
        False, description="Train on the rows flagged heldout too (NGCSE holds 10% out)."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="auto (cuda when available), cpu or cuda."
    )
    precision: TrainingPrecision = Field(
        "auto",
        description="auto: bfloat16 or float16 on a GPU, float32 on CPU; float16 needs a GPU.",
    )
    logging_steps: int = Field(10, ge=1, description="Record the training loss every n steps.")
    torch_threads: int | None = Field(
        None, ge=1, description="torch.set_num_threads on CPU (None: torch's default)."
    )
    ngcse: NGCSELossConfig = Field(
        default_factory=NGCSELossConfig, description="NGCSE's loss settings (objective ngcse)."
    )
    osscse: OssCSELossConfig = Field(
        default_factory=OssCSELossConfig, description="OssCSE's loss settings (objective osscse)."
    )
    skicse: SKICSELossConfig = Field(
        default_factory=SKICSELossConfig,
        description="SKICSE's loss weights (objectives skicse-unsup, skicse-sup).",
    )
    generate_cse: GenerateCSELossConfig = Field(
        default_factory=GenerateCSELossConfig,
        description="Generate-CSE's loss settings (objective generate-cse).",
    )
    evaluation: EvaluationConfig = Field(
        default_factory=EvaluationConfig,
        description="The STS sets scored before and after training.",
    )

    @model_validator(mode="after")
    def _prompt_pooling_evaluates_its_mask(self) -> TrainConfig:
        if self.pooling == "prompt" and self.head.evaluation_pooling:
            raise ValueError(
                "head.evaluation_pooling must be unset with pooling 'prompt': the template's "
                "[MASK] is what a prompt-pooled encoder is evaluated on"
            )
        return self


def load_train_config(path: str | Path | None, overrides: list[str] | None = None) -> TrainConfig:
    """Read a YAML training config, apply ``key.path=value`` overrides and validate it
    (ConfigError naming every bad key, :func:`cseaug.config.load_yaml_model`).

    Example:
        >>> load_train_config("configs/train/ngcse.yaml", ["max_steps=10"]).max_steps
        10
    """
    return load_yaml_model(TrainConfig, path, overrides, what="training config")
