"""Configuration of VAEGPT-Sim training (``configs/vaegpt/train.yaml``; docs/vaegpt.md).

Defaults are the paper's (Table A1: learning rate 5e-7, batch 32, W 0.1, W_KL 1e-4;
section 4.1.1: SICK relatedness > 3 and MRPC label 1, split 12:1).

Example:
    >>> cfg = VAEGPTTrainConfig.model_validate({"data": {"mrpc": ["msr_paraphrase_train.txt"]}})
    >>> cfg.optim.learning_rate, cfg.optim.batch_size, cfg.model.latent_weight, cfg.loss.kl_weight
    (5e-07, 32, 0.1, 0.0001)
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from cseaug.config import StrictModel, SynonymGenerationConfig, TrainingPrecision, load_yaml_model


class PairDataConfig(StrictModel):
    """Which sentence pairs train the generator (section 4.1.1)."""

    sick: list[str] = Field(
        default_factory=list,
        description="SICK files: SICK.txt or SemEval-2014 split files (SICK_train.txt, ...).",
    )
    sick_min_relatedness: float = Field(
        3.0, description="Keep SICK pairs whose relatedness is strictly above this."
    )
    sick_splits: list[Literal["TRAIN", "TRIAL", "TEST"]] = Field(
        default_factory=lambda: ["TRAIN", "TEST"],
        description="SICK splits to use (the paper evaluates on TRIAL).",
    )
    mrpc: list[str] = Field(
        default_factory=list,
        description="MRPC files (msr_paraphrase_train.txt, msr_paraphrase_test.txt); label 1 kept.",
    )
    pairing: Literal["pairs", "self"] = Field(
        "pairs", description="'pairs'; 'self': every distinct sentence is its own target."
    )
    both_directions: bool = Field(False, description="Also train target -> source for every pair.")
    validation_ratio: float = Field(
        1 / 13, ge=0, lt=1, description="Share of pairs held out for validation (12:1)."
    )


class ModelConfig(StrictModel):
    """The latent structure added to GPT-2 (section 3.1)."""

    latent_weight: float = Field(
        0.1, gt=0, description="W in the noise weight W / e^(i+1) of block i."
    )
    latent_dropout: float = Field(0.1, ge=0, lt=1, description="Dropout on the sampled latent.")
    mean_bn_scale: float = Field(
        0.5, gt=0, description="Fixed scale of the batch-normalised mean (BN-VAE's gamma)."
    )
    separator: str = Field(
        "<|endoftext|>", description="Text between the source and the target / generation."
    )


class LossConfig(StrictModel):
    """The training loss: 1 - cosine(frozen GPT-2 of Gumbel output, of target) + W_KL * KL."""

    kl_weight: float = Field(
        1e-4, ge=0, description="W_KL, weight of the KL summed over the blocks."
    )
    gumbel_tau: float = Field(1.0, gt=0, description="Gumbel-softmax temperature.")
    gumbel_hard: bool = Field(
        True, description="Straight-through one-hot samples for the judge (False: soft)."
    )
    pooling: Literal["mean", "last"] = Field(
        "mean", description="How the frozen GPT-2's last hidden states become a sentence vector."
    )
    lm_weight: float = Field(
        0.0, ge=0, description="Weight of a cross-entropy term on the targets (not in the paper)."
    )


class OptimConfig(StrictModel):
    """Optimisation (Table A1)."""

    learning_rate: float = Field(5e-7, gt=0, description="AdamW learning rate.")
    batch_size: int = Field(32, ge=1, description="Pairs per optimisation step.")
    epochs: int = Field(3, ge=1, description="Passes over the training pairs.")
    max_steps: int | None = Field(
        None, ge=1, description="Stop after this many steps in all (None: run every epoch)."
    )
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    warmup_steps: int = Field(0, ge=0, description="Linear learning-rate warm-up steps.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping norm.")
    max_source_tokens: int = Field(64, ge=1, description="Sources are cut to this many tokens.")
    max_target_tokens: int = Field(64, ge=1, description="Targets are cut to this many tokens.")


class ScheduleConfig(StrictModel):
    """Logging, validation and checkpoints."""

    log_every: int = Field(10, ge=1, description="Log the training loss every this many steps.")
    eval_every: int | None = Field(
        None, ge=1, description="Validate every this many steps (None: after each epoch)."
    )
    save_every: int | None = Field(
        None, ge=1, description="Write a checkpoint every this many steps (None: each epoch)."
    )
    keep_checkpoints: int = Field(
        2, ge=1, description="Resumable checkpoints kept (the oldest are deleted)."
    )
    resume: bool = Field(
        True, description="Continue from the newest checkpoint in output_dir when there is one."
    )
    val_rouge_samples: int = Field(
        200, ge=0, description="Validation pairs whose generations ROUGE scores (0: none)."
    )


class VAEGPTTrainConfig(StrictModel):
    """A VAEGPT-Sim training run."""

    base_model: str = Field(
        "gpt2", description="GPT-2 checkpoint to start from (hub name or local path)."
    )
    output_dir: str = Field(
        "storage/models/vaegpt-sim", description="Where checkpoints and metrics.jsonl go."
    )
    seed: int = Field(
        0, description="Seed of the split, the data order, the weights' noise and the sampling."
    )
    device: str = Field("auto", description="auto (cuda when available), cpu, cuda, cuda:N.")
    precision: TrainingPrecision = Field(
        "auto", description="auto: bfloat16 or float16 (loss scaled) on a GPU, float32 on CPU."
    )
    data: PairDataConfig = Field(default_factory=PairDataConfig, description="Training pairs.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="Latent structure.")
    loss: LossConfig = Field(default_factory=LossConfig, description="Training loss.")
    optim: OptimConfig = Field(default_factory=OptimConfig, description="Optimisation.")
    schedule: ScheduleConfig = Field(
        default_factory=ScheduleConfig, description="Logging, validation, checkpoints."
    )
    generation: SynonymGenerationConfig = Field(
        default_factory=SynonymGenerationConfig,
        description="Decoding of the validation generations (ROUGE).",
    )


def load_train_config(
    path: str | Path | None, overrides: list[str] | None = None
) -> VAEGPTTrainConfig:
    """Read a training config (YAML; None: defaults) and apply ``key.path=value`` overrides
    (ConfigError naming every bad key, :func:`cseaug.config.load_yaml_model`).

    Example:
        >>> load_train_config(None, ["optim.max_steps=10"]).optim.max_steps
        10
    """
    return load_yaml_model(VAEGPTTrainConfig, path, overrides, what="training config")
