"""Checkpoint selection on the dev set: scored on schedule, the best weights put back."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from cseaug.trainer import callbacks  # noqa: E402
from cseaug.trainer.evaluation import EvalSet, Scores  # noqa: E402


def test_the_best_dev_checkpoint_is_restored_not_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    model = torch.nn.Linear(1, 1, bias=False)
    model.max_seq_length = 64  # as a sentence-transformers model has
    dev = EvalSet("STS-B", ["a"], ["b"], [1.0])
    # the dev score the model gets at steps 2, 4, 6 (max_steps 6): the best is step 4
    scripted = iter([0.50, 0.70, 0.60])
    monkeypatch.setattr(
        callbacks, "evaluate", lambda *a, **k: Scores({"STS-B": next(scripted)}, {})
    )
    lines: list[str] = []
    selection = callbacks.BestCheckpoint(model, dev, every=2, batch_size=8, say=lines.append)
    for step in range(1, 7):
        with torch.no_grad():
            model.weight.fill_(float(step))  # "training": the weights of step n are n
        state = SimpleNamespace(global_step=step, max_steps=6)
        selection.on_step_end(None, state, None)
    assert selection.history == [(2, 0.50), (4, 0.70), (6, 0.60)]
    assert (selection.best_step, selection.best_score) == (4, 0.70)
    selection.restore()
    assert model.weight.item() == 4.0  # the weights of step 4, not the final ones
    assert lines[-1] == "STS-B dev at step 6: Spearman 60.00 (best 70.00, step 4)"


def test_the_last_step_is_scored_when_it_is_off_the_schedule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(callbacks, "evaluate", lambda *a, **k: Scores({"STS-B": 0.1}, {}))
    model = torch.nn.Linear(1, 1)
    model.max_seq_length = 64
    selection = callbacks.BestCheckpoint(
        model, EvalSet("STS-B", ["a"], ["b"], [1.0]), 125, 8, lambda _: None
    )
    for step in range(1, 201):
        selection.on_step_end(None, SimpleNamespace(global_step=step, max_steps=200), None)
    assert [step for step, _ in selection.history] == [125, 200]
