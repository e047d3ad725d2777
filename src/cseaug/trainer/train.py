"""Train a sentence encoder on a published version with one paper's objective
(:func:`train_encoder`, the whole trainer stage, with ``SentenceTransformerTrainer``;
docs/trainer.md)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from cseaug.dataset import versions
from cseaug.devices import resolve_device, resolve_precision
from cseaug.encoders.minilm import model_location
from cseaug.errors import ConfigError, InputError, require
from cseaug.hashing import file_sha256
from cseaug.roots import default_work_dir
from cseaug.trainer.card import write_training_record
from cseaug.trainer.config import TrainConfig
from cseaug.trainer.data import TrainingData, load_training_data
from cseaug.trainer.evaluation import EvalSet, Scores, dev_set, eval_sets, evaluate
from cseaug.trainer.evaluation import max_seq_length as training_length
from cseaug.trainer.objectives import (
    LOSS_NAMES,
    MIXED,
    MIXED_COLUMN_LABELS,
    make_losses,
    training_sets,
)

logger = logging.getLogger(__name__)


@dataclass
class TrainResult:
    """Where the model went and its training record (also in ``<model_dir>/evaluation.json``)."""

    model_dir: Path
    record: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"model_dir": str(self.model_dir), **self.record}


def device_and_precision(cfg: TrainConfig) -> tuple[str, str]:
    """(device, precision) of ``cfg`` as :mod:`cseaug.devices` resolves them for training;
    ConfigError for cuda or float16 where there is no GPU."""
    device = resolve_device(cfg.device)
    return device, resolve_precision(cfg.precision, device)


def default_model_dir(root: str | Path, version_dir: str | Path, objective: str) -> Path:
    """``<root>/models/<dataset>-<version>-<objective>``, where a model goes unless told
    (under the local work directory when ``root`` is an object-store URI, :mod:`cseaug.roots`).

    Example:
        >>> default_model_dir("storage", "storage/datasets/wiki-sts/v0002", "ngcse")
        PosixPath('storage/models/wiki-sts-v0002-ngcse')
    """
    version_dir = Path(version_dir)
    return (
        default_work_dir(root)
        / "models"
        / f"{version_dir.parent.name}-{version_dir.name}-{objective}"
    )


def refuse_foreign_pooling(cfg: TrainConfig) -> None:
    """Raises ConfigError for ``pooling: prompt`` or ``head.evaluation_pooling`` on a
    sentence-transformers model: they replace a plain transformers model's pooling."""
    if cfg.pooling != "prompt" and not cfg.head.evaluation_pooling:
        return
    if model_location(cfg.model)[1]:
        asked = "pooling 'prompt'" if cfg.pooling == "prompt" else "head.evaluation_pooling"
        raise ConfigError(
            f"{cfg.model} is a sentence-transformers model with its own pooling; {asked} is the "
            "pooling of a plain transformers model: give one (e.g. --set model=bert-base-uncased) "
            "or train this model's own pooling (--set pooling=cls --set head.evaluation_pooling=null)"
        )


def load_encoder(cfg: TrainConfig, device: str, say: Callable[[str], None] = logger.info) -> Any:
    """The encoder to train, at its own length: a sentence-transformers model with
    ``cfg.head``'s MLP on its own pooling, or a transformers model with ``cfg.pooling`` and
    ``cfg.head`` (:mod:`cseaug.trainer.heads`); ConfigError when it cannot be loaded."""
    st = require("sentence_transformers", "hf", "Training a sentence encoder")
    from cseaug.trainer.heads import build_encoder, with_head  # imports torch

    refuse_foreign_pooling(cfg)
    location, is_sentence_transformer = model_location(cfg.model)
    require("transformers", "hf", "Training a sentence encoder").set_seed(cfg.seed)  # the head
    try:
        if is_sentence_transformer:
            model = with_head(st.SentenceTransformer(location, device=device), cfg)
            say(
                f"{cfg.model} is a sentence-transformers model: it trains its own pooling "
                f"({', '.join(type(m).__name__ for m in model)}); `pooling` applies to a plain "
                "transformers model"
            )
        else:
            model = build_encoder(cfg, location, device)
    except OSError as exc:
        raise ConfigError(
            f"cannot load the encoder {cfg.model!r} ({exc}); offline, give a local model "
            "directory or 'all-MiniLM-L6-v2'"
        ) from exc
    model.model_card_data.local_files_only = True  # the card must not reach for the hub
    return model


def _trainer(
    model: Any, cfg: TrainConfig, data: TrainingData, device: str, precision: str, out_dir: Path
) -> Any:
    st = require("sentence_transformers", "hf", "Training a sentence encoder")
    train_sets = data.datasets()
    losses = make_losses(cfg, model, tuple(data.sets.values()))
    extra: dict[str, Any] = {}
    collator = None
    if cfg.pooling == "prompt":
        from cseaug.trainer.heads import template_prompts

        columns = {name: list(s.columns) for name, s in data.sets.items()}
        extra["prompts"] = template_prompts(columns, cfg.head.templates[1])
    if data.epoch_blocks:
        from cseaug.trainer.sampler import EpochBlockBatchSampler

        extra["batch_sampler"] = partial(EpochBlockBatchSampler, blocks=data.epoch_blocks)
    if MIXED.name in data.sets:
        from cseaug.trainer.sampler import MixedBatchCollator, MixedBatchSampler

        extra["batch_sampler"] = partial(
            MixedBatchSampler, generated=data.generated, per_batch=cfg.ngcse.generated_per_batch
        )
        collator = MixedBatchCollator(  # its sparse columns only some rows have
            sparse_columns=MIXED_COLUMN_LABELS,
            preprocess_fn=model.preprocess,
            prompts=extra.get("prompts"),
        )
    args = st.SentenceTransformerTrainingArguments(
        output_dir=str(out_dir),
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps or -1,
        per_device_train_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate,
        warmup_steps=cfg.warmup_ratio,
        seed=cfg.seed,
        data_seed=cfg.seed,
        logging_steps=cfg.logging_steps,
        save_strategy="no",  # the selected weights are kept in memory (callbacks.BestCheckpoint)
        report_to="none",
        disable_tqdm=True,  # callbacks.StepProgress shows the steps
        use_cpu=device == "cpu",
        bf16=precision == "bfloat16",
        fp16=precision == "float16",
        multi_dataset_batch_sampler="proportional",
        **extra,
    )
    if len(train_sets) == 1:
        [(name, train_dataset)] = train_sets.items()
        loss = losses[name]
    else:  # sentence-transformers makes the dict a DatasetDict
        train_dataset, loss = train_sets, losses
    trainer = st.SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        loss=loss,
        data_collator=collator,
    )
    # transformers prints every logged loss as a dict to stdout; StepProgress reports instead
    transformers = require("transformers", "hf", "Training a sentence encoder")
    trainer.remove_callback(transformers.PrinterCallback)
    return trainer


def refuse_fallback_only(cfg: TrainConfig, data: TrainingData, version_dir: Path) -> None:
    """InputError when every row fell to the objective's last training set, the rows without
    its views: the run would train another paper's objective (SimCSE) under this one's name."""
    sets = training_sets(cfg)
    fallback = sets[-1]
    if len(sets) == 1 or set(data.rows) != {fallback.name}:  # rows: per set, mixed or not
        return
    views = " or ".join("(" + ", ".join(s.requires) + ")" for s in sets[:-1])
    raise InputError(
        f"no row of {version_dir} has the views of objective '{cfg.objective}' {views}: all "
        f"{data.rows[fallback.name]:,} rows would train only its '{fallback.name}' set, the "
        f"rows without those views, not {cfg.objective}; build the version with the objective's "
        "method (`cseaug show` lists its views) or train it as simcse-unsup / simcse-sup"
    )


def ngcse_setting(cfg: TrainConfig, corpus: str) -> str | None:
    """The line that says which of the authors' domain settings an ``ngcse`` run trains and
    how to train either (None for another objective): the version's corpus does not pick it.

    Example:
        >>> print(ngcse_setting(TrainConfig(objective="ngcse"), "wiki1m"))
        NGCSE on corpus 'wiki1m': 1 epoch(s), 16 generated rows per batch (Wiki domain setting of the authors); Wikipedia (wiki/sts_ht.sh): --set epochs=1 --set ngcse.generated_per_batch=16; NLI premises (nli/sts_ht.sh): --set epochs=3 --set ngcse.generated_per_batch=48
    """
    if cfg.objective != "ngcse":
        return None
    domain = {1: "Wiki", 3: "NLI"}.get(cfg.epochs, "no")  # appendix "Training Details"
    return (
        f"NGCSE on corpus '{corpus}': {cfg.epochs} epoch(s), {cfg.ngcse.generated_per_batch} "
        f"generated rows per batch ({domain} domain setting of the authors); Wikipedia "
        "(wiki/sts_ht.sh): --set epochs=1 --set ngcse.generated_per_batch=16; NLI premises "
        "(nli/sts_ht.sh): --set epochs=3 --set ngcse.generated_per_batch=48"
    )


def _score(
    model: Any, sets: list[EvalSet], batch: int, when: str, say: Callable[[str], None]
) -> Scores:
    """:func:`~cseaug.trainer.evaluation.evaluate` with a line before and after it, for a log
    without progress bars."""
    if not sets:
        return Scores({}, {})
    pairs = sum(len(s.scores) for s in sets)
    say(f"scoring {len(sets)} STS sets ({pairs:,} pairs) {when}")
    scores = evaluate(model, sets, batch, f"Scoring STS {when}")
    shown = ", ".join(f"{name} {100 * value:.2f}" for name, value in scores.spearman.items())
    say(f"STS Spearman x100 {when}: {shown}")
    return scores


def train_encoder(
    version_dir: str | Path,
    cfg: TrainConfig,
    out_dir: str | Path,
    say: Callable[[str], None] | None = None,
) -> TrainResult:
    """Train ``cfg.model`` on a published version with ``cfg.objective`` and save it, its
    ``evaluation.json``, ``evaluation.md`` and card to ``out_dir``; with ``evaluation.dev``
    the saved and scored model is the checkpoint best on the dev set. ``say`` gets the
    progress lines (default: this module's logger).

    Raises:
        InputError: no row the objective trains on (:func:`refuse_fallback_only`), or a
            missing evaluation set.
        ConfigError: a device, precision or model that cannot be used here.
    """
    say = say or logger.info
    version_dir, out_dir = Path(version_dir), Path(out_dir)
    manifest = versions.read_manifest(version_dir)
    data = load_training_data(version_dir, cfg)
    refuse_fallback_only(cfg, data, version_dir)
    corpus = manifest["config"]["corpus"]
    if setting := ngcse_setting(cfg, corpus["name"] or corpus["path"] or corpus["hf_dataset"]):
        say(setting)
    sets = eval_sets(cfg.evaluation)  # before training: a missing set fails early
    dev = dev_set(cfg.evaluation)
    device, precision = device_and_precision(cfg)
    if device == "cpu" and cfg.torch_threads:
        require("torch", "hf", "Training a sentence encoder").set_num_threads(cfg.torch_threads)
    model = load_encoder(cfg, device, say)
    batch = cfg.evaluation.batch_size
    before = (
        _score(model, sets, batch, "before training", say)
        if sets and cfg.evaluation.before
        else None
    )
    from cseaug.trainer.callbacks import BestCheckpoint, StepProgress

    trainer = _trainer(model, cfg, data, device, precision, out_dir)
    trainer.add_callback(StepProgress(f"Training {cfg.objective}", say))
    selection = None
    if dev is not None:
        selection = BestCheckpoint(model, dev, cfg.evaluation.eval_steps, batch, say)
        trainer.add_callback(selection)
    with training_length(model, cfg.max_seq_length):  # evaluated and saved at the model's own
        output = trainer.train()
    step = output.global_step
    if selection is not None:
        selection.restore()
        step = selection.best_step or step
    after = _score(model, sets, batch, f"at step {step}", say)
    out_dir.mkdir(parents=True, exist_ok=True)
    from cseaug.trainer.heads import inference_encoder  # imports torch

    inference_encoder(model).save(str(out_dir))  # without the heads the paper drops
    record = {
        "dataset": f"{manifest['dataset']}/{manifest['version']}",
        "fingerprints": {
            "manifest": file_sha256(version_dir / versions.MANIFEST_FILE),
            "build": manifest["fingerprints"]["build"],
            "data": manifest["fingerprints"]["data"],
        },
        "objective": cfg.objective,
        "loss": LOSS_NAMES[cfg.objective],
        "base_model": cfg.model,
        "seed": cfg.seed,
        "training_rows": data.rows,
        "left_out": data.skipped,
        "steps": output.global_step,
        "seconds": round(output.metrics["train_runtime"], 3),
        "rows_per_second": round(output.metrics["train_samples_per_second"], 3),
        "device": device,
        "precision": precision,
        "losses": [[e["step"], e["loss"]] for e in trainer.state.log_history if "loss" in e],
        "selection": {
            "dev": cfg.evaluation.dev,
            "eval_steps": cfg.evaluation.eval_steps if dev is not None else None,
            "step": step,
            "dev_spearman": selection.best_score if selection and selection.best_step else None,
            "history": [list(h) for h in selection.history] if selection else [],
        },
        "scores": {
            "before": before.spearman if before else None,
            "after": after.spearman,
            "senteval": {
                "before": before.aggregates if before else None,
                "after": after.aggregates,
            },
        },
        "config": cfg.model_dump(mode="json"),
    }
    write_training_record(out_dir, record)
    return TrainResult(out_dir, record)
