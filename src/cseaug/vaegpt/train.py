"""Training of VAEGPT-Sim (section 3.1 loss, section 4.1.1 data, appendix A.1 settings):
AdamW on the loss of :mod:`.loss`, the best validation Avg-ROUGE kept in ``best/``, resumable
checkpoints (docs/vaegpt.md, "Validation, checkpoints, resume")."""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cseaug.devices import PrecisionName, resolve_device, resolve_precision
from cseaug.errors import ConfigError, require
from cseaug.metrics.quality import avg_rouge
from cseaug.progress import progress_bar
from cseaug.vaegpt.config import LossConfig, VAEGPTTrainConfig
from cseaug.vaegpt.data import Pair, PairSplits, load_pairs
from cseaug.vaegpt.generate import VAEGPTSimGenerator, load_tokenizer
from cseaug.vaegpt.layout import PairBatch, pair_batch
from cseaug.vaegpt.loss import FrozenJudge, LossParts, vaegpt_loss
from cseaug.vaegpt.model import VAEGPTSim, VAEGPTSimSettings

torch = require("torch", "hf", "VAEGPT-Sim training")

logger = logging.getLogger(__name__)

CHECKPOINT_PREFIX = "checkpoint-"
STATE_FILE = "trainer_state.pt"
STATE_JSON = "trainer_state.json"


@dataclass
class TrainerState:
    """Where a run stands, saved with every checkpoint."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_metric: float | None = None
    best_step: int | None = None


@dataclass
class TrainResult:
    """What a training run produced."""

    final_dir: Path
    best_dir: Path | None
    steps: int
    best_rouge: float | None
    metrics_path: Path
    stats: dict[str, Any] = field(default_factory=dict)


def loss_on_batch(
    model: VAEGPTSim,
    judge: FrozenJudge,
    batch: PairBatch,
    settings: LossConfig,
    precision: PrecisionName,
) -> LossParts:
    """The loss of one batch (generator, then judge), autocast to ``precision``."""
    device_type = batch.input_ids.device.type
    with torch.autocast(device_type, getattr(torch, precision), enabled=precision != "float32"):
        out = model(
            batch.input_ids,
            batch.attention_mask,
            batch.position_ids,
            logits_to_keep=batch.target_positions,
        )
        return vaegpt_loss(out.logits, out.kl, batch.target_ids, batch.target_mask, judge, settings)


def checkpoints(output_dir: Path) -> list[Path]:
    """Complete resumable checkpoints of a run, oldest first."""
    found = [p for p in output_dir.glob(f"{CHECKPOINT_PREFIX}*") if (p / STATE_JSON).is_file()]
    return sorted(found, key=lambda p: int(p.name[len(CHECKPOINT_PREFIX) :]))


class _Run:
    """One training run: its model, judge, optimiser and state."""

    def __init__(self, cfg: VAEGPTTrainConfig, splits: PairSplits) -> None:
        self.cfg = cfg
        self.splits = splits
        self.out = Path(cfg.output_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.metrics_path = self.out / "metrics.jsonl"
        self.device = torch.device(resolve_device(cfg.device, "device"))
        # mixed precision: bfloat16 where the GPU has it, else float16 with loss scaling
        self.precision = resolve_precision(cfg.precision, str(self.device))
        torch.manual_seed(cfg.seed)

        existing = checkpoints(self.out) if cfg.schedule.resume else []
        self.resumed_from = existing[-1] if existing else None
        # a checkpoint brings its own settings; a fresh run takes the config's
        source = self.resumed_from or cfg.base_model
        settings = None if self.resumed_from else VAEGPTSimSettings(**cfg.model.model_dump())
        self.model = VAEGPTSim.from_pretrained(source, settings)
        self.tokenizer = load_tokenizer(source)
        self.judge = FrozenJudge.from_pretrained(self.model.settings.base_model, cfg.loss.pooling)
        self.model.to(self.device)
        # the judge is never trained: kept in the training precision, it is not cast per step
        self.judge.to(self.device, dtype=getattr(torch, self.precision))

        parameters = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            parameters, lr=cfg.optim.learning_rate, weight_decay=cfg.optim.weight_decay
        )
        warmup = cfg.optim.warmup_steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0
        )
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.precision == "float16")
        self.state = TrainerState()
        if self.resumed_from is not None:
            self._load_state(self.resumed_from)

        self.steps_per_epoch = math.ceil(len(splits.train) / cfg.optim.batch_size)
        planned = cfg.optim.epochs * self.steps_per_epoch
        self.total_steps = min(planned, cfg.optim.max_steps) if cfg.optim.max_steps else planned
        self.train_seconds = 0.0
        self.timed_steps = 0
        self.validated_at = self.saved_at = -1  # the steps of the last validation and checkpoint

    def log(self, kind: str, **values: Any) -> None:
        record = {"kind": kind, "step": self.state.step, "epoch": self.state.epoch, **values}
        with self.metrics_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        logger.info("%s %s", kind, json.dumps(values))

    def _load_state(self, directory: Path) -> None:
        saved = torch.load(directory / STATE_FILE, map_location="cpu", weights_only=True)
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        self.scaler.load_state_dict(saved["scaler"])
        torch.set_rng_state(saved["rng_cpu"])
        if self.device.type == "cuda" and saved.get("rng_cuda") is not None:
            torch.cuda.set_rng_state(saved["rng_cuda"], self.device)
        self.state = TrainerState(
            **json.loads((directory / STATE_JSON).read_text(encoding="utf-8"))
        )
        logger.info("resumed from %s at step %d", directory, self.state.step)

    def save_checkpoint(self) -> None:
        self.saved_at = self.state.step
        target = self.save_generator(f"{CHECKPOINT_PREFIX}{self.state.step:08d}", with_state=True)
        for old in checkpoints(self.out)[: -self.cfg.schedule.keep_checkpoints]:
            shutil.rmtree(old)
        self.log("checkpoint", path=str(target))

    def save_generator(self, name: str, with_state: bool = False) -> Path:
        """Write the generator (and, for a checkpoint, the trainer's state) beside
        ``<out>/<name>``, then swap it in: a crash never leaves half a generator."""
        tmp, target = self.out / f".tmp-{name}", self.out / name
        if tmp.exists():
            shutil.rmtree(tmp)
        self.model.save_pretrained(tmp, self.tokenizer)
        if with_state:
            cuda = self.device.type == "cuda"
            state = {
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "scaler": self.scaler.state_dict(),
                "rng_cpu": torch.get_rng_state(),
                "rng_cuda": torch.cuda.get_rng_state(self.device) if cuda else None,
            }
            torch.save(state, tmp / STATE_FILE)
            (tmp / STATE_JSON).write_text(json.dumps(asdict(self.state)), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
        return target

    def loss(self, pairs: list[Pair]) -> LossParts:
        o, separator = self.cfg.optim, self.model.settings.separator
        batch = pair_batch(
            self.tokenizer, pairs, separator, o.max_source_tokens, o.max_target_tokens
        )
        return loss_on_batch(
            self.model, self.judge, batch.to(self.device), self.cfg.loss, self.precision
        )

    def train_step(self, pairs: list[Pair]) -> LossParts:
        self.model.train()
        parts = self.loss(pairs)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(parts.total).backward()
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.max_grad_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        return parts

    def evaluate(self) -> dict[str, float]:
        """Validation loss (fixed Gumbel and latent noise) and Avg-ROUGE of generations."""
        validation = self.splits.validation
        if not validation:
            return {}
        self.model.eval()
        size = self.cfg.optim.batch_size
        totals = {"val_loss": 0.0, "val_cosine": 0.0, "val_kl": 0.0}
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            torch.manual_seed(self.cfg.seed)
            for start in range(0, len(validation), size):
                chunk = validation[start : start + size]
                parts = self.loss(chunk)
                totals["val_loss"] += float(parts.total.detach()) * len(chunk)
                totals["val_cosine"] += parts.cosine * len(chunk)
                totals["val_kl"] += parts.kl * len(chunk)
        result = {k: v / len(validation) for k, v in totals.items()}
        sample = validation[: self.cfg.schedule.val_rouge_samples]
        if sample:
            generation = self.cfg.generation.model_copy(
                update={"device": str(self.device), "dtype": "float32"}
            )
            generator = VAEGPTSimGenerator(self.model, self.tokenizer, generation)
            candidates = generator.generate([s for s, _ in sample])
            scores = avg_rouge([c[0] for c in candidates], [t for _, t in sample])
            result["val_rouge"] = sum(scores) / len(sample)
        self.model.train()
        return result

    def validate_and_keep_best(self) -> None:
        self.validated_at = self.state.step
        metrics = self.evaluate()
        if not metrics:
            return
        # the paper keeps the best average ROUGE; without ROUGE the lowest loss
        score = metrics["val_rouge"] if "val_rouge" in metrics else -metrics["val_loss"]
        improved = self.state.best_metric is None or score > self.state.best_metric
        if improved:
            self.state.best_metric, self.state.best_step = score, self.state.step
            self.save_generator("best")
        self.log("eval", **metrics, best=improved)

    def run(self) -> TrainResult:
        cfg = self.cfg
        stats: dict[str, Any] = {
            "data": self.splits.stats,
            "precision": self.precision,
            "device": str(self.device),
        }
        resumed_from = str(self.resumed_from) if self.resumed_from else None
        self.log("start", resumed_from=resumed_from, total_steps=self.total_steps, **stats)
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        train = self.splits.train
        size = cfg.optim.batch_size
        with progress_bar("Training VAEGPT-Sim", total=self.total_steps, unit="steps") as bar:
            bar.advance(self.state.step)
            while self.state.step < self.total_steps:
                order = list(range(len(train)))  # seeded by epoch: the same again on resume
                random.Random(f"{cfg.seed}:{self.state.epoch}").shuffle(order)
                for b in range(self.state.batch_in_epoch, self.steps_per_epoch):
                    started = time.perf_counter()
                    parts = self.train_step([train[i] for i in order[b * size : (b + 1) * size]])
                    self.train_seconds += time.perf_counter() - started
                    self.timed_steps += 1
                    self.state.step += 1
                    self.state.batch_in_epoch = b + 1
                    bar.advance()
                    if self.state.step % cfg.schedule.log_every == 0:
                        self.log(
                            "train",
                            loss=float(parts.total.detach()),
                            cosine=parts.cosine,
                            kl=parts.kl,
                            lm=parts.lm,
                            lr=self.scheduler.get_last_lr()[0],
                        )
                    if cfg.schedule.eval_every and self.state.step % cfg.schedule.eval_every == 0:
                        self.validate_and_keep_best()
                    if cfg.schedule.save_every and self.state.step % cfg.schedule.save_every == 0:
                        self.save_checkpoint()
                    if self.state.step >= self.total_steps:
                        break
                if self.state.batch_in_epoch >= self.steps_per_epoch:
                    self.state.epoch += 1
                    self.state.batch_in_epoch = 0
                    if cfg.schedule.eval_every is None:
                        self.validate_and_keep_best()
                    if cfg.schedule.save_every is None:
                        self.save_checkpoint()
        if self.validated_at != self.state.step and self.timed_steps:
            self.validate_and_keep_best()
        if self.saved_at != self.state.step and self.timed_steps:
            self.save_checkpoint()
        final_dir = self.save_generator("final")
        if self.timed_steps:
            stats["steps_per_second"] = self.timed_steps / self.train_seconds
        if self.device.type == "cuda":
            stats["peak_gpu_memory_bytes"] = torch.cuda.max_memory_allocated(self.device)
        self.log("end", **stats)
        best_dir = self.out / "best"
        return TrainResult(
            final_dir=final_dir,
            best_dir=best_dir if best_dir.is_dir() else None,
            steps=self.state.step,
            best_rouge=self.state.best_metric if cfg.schedule.val_rouge_samples else None,
            metrics_path=self.metrics_path,
            stats=stats,
        )


def train_vaegpt(cfg: VAEGPTTrainConfig, pairs: PairSplits | None = None) -> TrainResult:
    """Train (or resume training) a VAEGPT-Sim generator on ``pairs`` (default: read from
    ``cfg.data``, :func:`.data.load_pairs`)."""
    splits = pairs if pairs is not None else load_pairs(cfg.data, cfg.seed)
    if not splits.train:
        raise ConfigError("no training pairs: check the data section of the training config")
    return _Run(cfg, splits).run()
