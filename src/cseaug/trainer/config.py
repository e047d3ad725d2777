"""Training configuration of the trainer stage: pydantic models, YAML loading, ``--set`` overrides.

One YAML file describes one training run (``configs/train/<objective>.yaml``). Every model
forbids unknown keys. The defaults of the loss sections are the papers' training details;
the optimiser defaults are SimCSE's unsupervised BERT-base recipe, which every shipped
config overrides with its paper's values.

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
        description="An MLP on the pooled embedding: 'train-only' trains it and drops it for "
        "evaluation and from the saved encoder (SimCSE unsupervised, NGCSE, SKICSE, VAEGPT-Sim); "
        "'kept' evaluates and saves it (supervised SimCSE); 'none'.",
    )
    mlp_activation: Literal["tanh", "identity"] = Field(
        "tanh",
        description="Activation of the MLP: tanh (SimCSE's MLPLayer) or identity (NGCSE's "
        "nn.Linear, train-only); a kept MLP is SimCSE's, tanh.",
    )
    mlp_init: Literal["pytorch", "bert", "ngcse"] = Field(
        "pytorch",
        description="Initial weights of the MLP: 'pytorch' (nn.Linear's default), 'bert' "
        "(weight N(0, 0.02), BERT's initializer_range, bias 0: SimCSE's cl_init, which SKICSE "
        "and OssCSE's PromptBERT code share), 'ngcse' (weight and bias N(0, 6e-3): NGCSE's "
        "custom_param_init).",
    )
    evaluation_pooling: Literal["cls", "mean"] | None = Field(
        None,
        description="Pool the tokens this way for evaluation and in the saved encoder (VAEGPT-Sim: "
        "'mean', its last-pool); None: the training pooling.",
    )
    templates: tuple[str, str] = Field(
        PROMPTBERT_TEMPLATES,
        description="pooling 'prompt': the template of every sentence ({sentence} once, [MASK] "
        "the representation), and the template of a sentence's second view (PromptBERT's "
        "positive pair).",
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
        description="Train rows with an intermediate view with the hierarchical triplet loss "
        "(NGCSE 'Wiki.STS-HT'); False trains them like the NLI pattern, s^n as a hard negative.",
    )
    margins: tuple[float, float] = Field(
        (5e-3, 5e-2),
        description="m1 (s^p above s^m) and m2 (s^m above s^n) of eq. 6; appendix Table 6 "
        "(WikiSTS-HT) and the authors' scripts use 5e-3 and 5e-2 (the section 'Pattern "
        "Utilization' says m2 1e-2; NLISTS-HT 1e-1; docs/trainer.md).",
    )
    beta: float = Field(
        1.0, ge=0, description="Weight of the hierarchical loss, eq. 7 (Table 6: 1)."
    )
    batching: Literal["mixed", "per-set"] = Field(
        "mixed",
        description="'mixed': the authors' collator, generated rows cached until "
        "generated_per_batch of them join a batch of other rows, one softmax over both; "
        "'per-set': each batch from one training set, sets in proportion to their size.",
    )
    generated_per_batch: int = Field(
        16,
        ge=1,
        description="batching 'mixed': the generated rows cached before they join a batch "
        "(the authors' --aigen_batch_size: 16 in sts_ht.sh, the code's default 48 in the "
        "Final Performance scripts).",
    )


class OssCSELossConfig(StrictModel):
    """OssCSE: dropout InfoNCE (eq. 2) + recall loss (eq. 4) + lambda * two-way margin loss (eq. 3, 5)."""

    alpha: float = Field(0.05, description="Lower margin of eq. 3 (appendix A: 0.05).")
    beta: float = Field(0.2, description="Upper margin of eq. 3 (appendix A: 0.2).")
    margin_weight: float = Field(1e-3, ge=0, description="lambda of eq. 5 (appendix A: 1e-3).")
    recall_weight: float = Field(
        2e-3,
        ge=0,
        description="gamma of the recall loss, eq. 4 (appendix A: 2e-3); 0 leaves it out.",
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
        description="Eq. 6's denominator: 'bounded' adds the numerator's term e^{sim(h_i, "
        "h_i^ski)/tau} (as InfoNCE, loss >= 0); 'literal' is the printed sum over h_j^+, h_j^- "
        "only, which is unbounded below (docs/trainer.md).",
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
        description="'symmetric': the NT-Xent term of every one of the 2N sentences (each source "
        "against its view and each view against its source, averaged; SimCLR's and ConSERT's "
        "form, which the paper adopts); 'anchor': the N source sentences' terms only.",
    )


class EvaluationConfig(StrictModel):
    """Spearman correlation on the STS sets before and after training (SentEval layout), and
    the dev set that selects the checkpoint (docs/trainer.md, "Evaluation")."""

    data_dir: str = Field(
        "data",
        description="Directory in SentEval's layout, as `cseaug data fetch sts12-test ... "
        "stsb sick-splits` puts it under data/: senteval_sts/STS1x-en-test/, "
        "senteval_sts/STSBenchmark/sts-{test,dev}.csv, sick/semeval2014_splits_noheader/.",
    )
    sets: list[EvalSet] = Field(
        default_factory=lambda: list(EVAL_SETS),
        description="Which sets to score; [] scores none.",
    )
    max_pairs: int | None = Field(
        None,
        ge=10,
        description="Score a seeded sample of at most this many pairs per test set and of the "
        "dev set (quick runs; None: every pair, as the papers).",
    )
    batch_size: int = Field(64, ge=1, description="Sentences per encoder forward pass.")
    before: bool = Field(True, description="Score the model before training too.")
    dev: Literal["STS-B", "SICK-R"] | None = Field(
        "STS-B",
        description="Dev set of checkpoint selection (the papers select on STS-B dev, "
        "sts-dev.csv; SICK-R: SICK_trial.txt): scored every eval_steps and at the last step, "
        "the best-scoring weights are kept and scored on the test sets; None keeps the final "
        "model.",
    )
    eval_steps: int = Field(
        125,
        ge=1,
        description="Score the dev set every n training steps (NGCSE, OssCSE and SimCSE's "
        "released scripts: 125).",
    )


class TrainConfig(StrictModel):
    """One training run of a sentence encoder on a published version."""

    objective: Objective = Field(
        description="simcse-unsup, simcse-sup, ngcse, osscse, skicse-unsup, skicse-sup or "
        "generate-cse (docs/trainer.md maps each to its paper's loss)."
    )
    model: str = Field(
        "all-MiniLM-L6-v2",
        description="Encoder to start from: 'all-MiniLM-L6-v2' (from the Hugging Face hub at the "
        "pinned revision, cached), a local sentence-transformers or transformers model "
        "directory, or a Hugging Face id (offline only when cached).",
    )
    pooling: Literal["cls", "mean", "prompt"] = Field(
        "cls",
        description="Pooling of a plain transformers model: the [CLS] token (SimCSE, NGCSE), "
        "the mean of the tokens, or 'prompt', PromptBERT's [MASK] of a template (OssCSE, "
        "NGCSE's Final Performance); a sentence-transformers model keeps its own.",
    )
    head: HeadConfig = Field(
        default_factory=HeadConfig,
        description="MLP head and evaluation pooling of a plain transformers model (docs/trainer.md).",
    )
    max_seq_length: int | None = Field(
        32,
        ge=8,
        description="Truncate training sentences to this many tokens, [CLS] and [SEP] counted "
        "(SimCSE, NGCSE: 32; None: the model's own); evaluation and the saved model use the "
        "model's own length.",
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
        "auto",
        description="auto (cuda when available), cpu or cuda (choose the GPU with CUDA_VISIBLE_DEVICES).",
    )
    precision: TrainingPrecision = Field(
        "auto",
        description="auto: bfloat16 on GPUs that have it, float16 on other GPUs, float32 on "
        "CPU; float16 needs a GPU (fp32, bf16, fp16 are read as float32, bfloat16, float16).",
    )
    logging_steps: int = Field(10, ge=1, description="Record the training loss every n steps.")
    torch_threads: int | None = Field(
        None,
        ge=1,
        description="torch.set_num_threads when training on CPU (None keeps torch's default; on a "
        "busy 2-vCPU machine 1 thread was 5x faster than 2, docs/trainer.md).",
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
    """Read a YAML training config, apply ``key.path=value`` overrides and validate it.

    Raises:
        ConfigError: the file is missing or unreadable, or a value is invalid; the message
            names every bad key.

    Example:
        >>> load_train_config("configs/train/ngcse.yaml", ["max_steps=10"]).max_steps
        10
    """
    return load_yaml_model(TrainConfig, path, overrides, what="training config")
