"""What the trainer does between optimisation steps: show progress, select the checkpoint."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

from cseaug.errors import require
from cseaug.progress import Bar, progress_bar, progress_enabled
from cseaug.trainer.evaluation import EvalSet, evaluate, max_seq_length

transformers = require("transformers", "hf", "Training a sentence encoder")

Say = Callable[[str], None]


class StepProgress(transformers.TrainerCallback):
    """A bar over the training steps, or a line per ``logging_steps`` where bars are off."""

    def __init__(self, description: str, say: Say) -> None:
        self.description = description
        self.say = say
        self._stack = ExitStack()
        self._bar: Bar | None = None
        self._started = 0.0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._started = time.perf_counter()
        if progress_enabled():
            self._bar = self._stack.enter_context(
                progress_bar(self.description, total=state.max_steps, unit="steps")
            )

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._bar is not None:
            self._bar.advance()

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any
    ) -> None:
        if self._bar is not None or not logs or "loss" not in logs:
            return
        step, total = state.global_step, state.max_steps
        elapsed = time.perf_counter() - self._started
        eta = str(timedelta(seconds=round(elapsed / step * (total - step)))) if step else "?"
        self.say(f"step {step}/{total}: loss {logs['loss']:.4f}, ETA {eta}")

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._stack.close()
        self._bar = None


class BestCheckpoint(transformers.TrainerCallback):
    """The papers' model selection (NGCSE appendix "Training Details", OssCSE appendix A;
    docs/trainer.md, "Checkpoint selection"): score ``dev`` every ``every`` steps and at the
    last, at the model's own length, keeping the best weights in CPU memory for
    :meth:`restore`; ``history`` holds every (step, dev Spearman)."""

    def __init__(self, model: Any, dev: EvalSet, every: int, batch_size: int, say: Say) -> None:
        self.model = model
        self.dev = dev
        self.every = every
        self.batch_size = batch_size
        self.say = say
        self.length = model.max_seq_length
        self.history: list[tuple[int, float]] = []
        self.best_step: int | None = None
        self.best_score = -math.inf
        self._weights: dict[str, Any] | None = None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        step = state.global_step
        if step % self.every == 0 or step >= state.max_steps:
            self.score(step)

    def score(self, step: int) -> None:
        name = self.dev.name
        label = f"{name} dev at step {step}"
        with max_seq_length(self.model, self.length):
            scores = evaluate(self.model, [self.dev], self.batch_size, f"Scoring {label}")
        value = scores.spearman[name]
        self.history.append((step, value))
        best = value > self.best_score
        if best:
            self.best_step, self.best_score = step, value
            self._weights = {
                key: tensor.detach().to("cpu", copy=True)
                for key, tensor in self.model.state_dict().items()
            }
        note = "best so far" if best else f"best {100 * self.best_score:.2f}, step {self.best_step}"
        self.say(f"{label}: Spearman {100 * value:.2f} ({note})")

    def restore(self) -> None:
        if self._weights is not None:
            self.model.load_state_dict(self._weights)
            self._weights = None
