"""Shard reuse follows every input, not only the config (issue 8, item 3).

A build's finished shards are reused by a rerun of the same config over the same inputs, and
by nothing else: replacing the corpus file's contents, a pattern file, a prompt template, the
VAEGPT-Sim generator's files or a translation model's files gives the build a new run store,
so its shards are generated anew.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cseaug.config import RunConfig
from cseaug.pipeline.inputs import input_fingerprints
from cseaug.pipeline.plan import plan_build
from cseaug.pipeline.run import BuildRun, run_id
from cseaug.pipeline.shard import generate_shard
from tests.fake_openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def inputs(tmp_path: Path, shared_data: Path) -> Path:
    """Copies of every input of an STS build: corpus, STS12 pattern files, prompt templates."""
    shutil.copy(REPO / "examples" / "demo_corpus.txt", tmp_path / "corpus.txt")
    shutil.copytree(shared_data / "sts12_train", tmp_path / "sts12")
    shutil.copytree(REPO / "prompts", tmp_path / "prompts")
    return tmp_path


def sts_config(inputs: Path, base_url: str) -> RunConfig:
    return RunConfig.model_validate(
        {
            "name": "keyed",
            "method": "sts",
            "corpus": {"name": "demo", "path": str(inputs / "corpus.txt")},
            "sample": {"size": 6, "seed": 1},
            "patterns": {"source": "sts12", "path": str(inputs / "sts12")},
            "generation": {"prompts_dir": str(inputs / "prompts")},
            "llm": {"backend": "openai-compatible", "base_url": base_url, "model": "fake"},
            "output": {"root": str(inputs / "storage")},
            "diagnostics": {"enabled": False},
        }
    )


def first_shard_reused(cfg: RunConfig) -> bool:
    with BuildRun(cfg) as run:
        plan_build(run)
        return generate_shard(run, 0).reused


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_each_changed_input_rebuilds_the_shards_and_an_unchanged_one_reuses_them(
    inputs: Path,
) -> None:
    changes = {
        "corpus": lambda: append(inputs / "corpus.txt", "A sentence that was not there before.\n"),
        "pattern file": lambda: (
            append(inputs / "sts12" / "STS.input.MSRvid.txt", "A man cooks.\tA man is cooking.\n"),
            append(inputs / "sts12" / "STS.gs.MSRvid.txt", "4.800\n"),
        ),
        "prompt template": lambda: append(inputs / "prompts" / "sts_positive.jinja2", "\n"),
    }
    with FakeOpenAIServer() as server:
        cfg = sts_config(inputs, server.base_url)
        assert not first_shard_reused(cfg)
        assert first_shard_reused(cfg)  # same config, same inputs
        for what, change in changes.items():
            change()
            assert not first_shard_reused(cfg), f"a changed {what} reused stale shards"
            assert first_shard_reused(cfg), what


def test_a_changed_generator_or_translation_model_names_a_new_run_store(
    tmp_path: Path, cached_hub_model
) -> None:
    """The models are identified by their files (local directories) or hub name and cached
    revision; replacing a checkpoint at the same path changes the run store."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("One sentence.\nAnother sentence.\n")
    generator, forward = tmp_path / "generator", tmp_path / "en-de"
    for model in (generator, forward):
        model.mkdir()
        (model / "model.safetensors").write_bytes(b"weights v1")
    generate_cse = RunConfig.model_validate(
        {
            "name": "g",
            "method": "generate_cse",
            "corpus": {"path": str(corpus)},
            "generate_cse": {"generator": str(generator)},
        }
    )
    osscse = RunConfig.model_validate(
        {
            "name": "o",
            "method": "osscse",
            "corpus": {"path": str(corpus)},
            "backtranslation": {"pivots": {"de": [str(forward), "facebook/wmt19-de-en"]}},
        }
    )
    cached_hub_model("facebook/wmt19-de-en", revision="a" * 40)
    before = (
        run_id(generate_cse, input_fingerprints(generate_cse)),
        run_id(osscse, input_fingerprints(osscse)),
    )
    assert (
        run_id(generate_cse, input_fingerprints(generate_cse)),
        run_id(osscse, input_fingerprints(osscse)),
    ) == before  # deterministic
    (generator / "model.safetensors").write_bytes(b"weights v2")
    (forward / "model.safetensors").write_bytes(b"weights v2")
    after = (
        run_id(generate_cse, input_fingerprints(generate_cse)),
        run_id(osscse, input_fingerprints(osscse)),
    )
    assert after[0] != before[0] and after[1] != before[1]
    cached_hub_model("facebook/wmt19-de-en", revision="b" * 40)  # a newer download of the hub model
    assert run_id(osscse, input_fingerprints(osscse)) != after[1]


def test_the_corpus_is_hashed_once_by_the_plan_and_never_by_a_run_of_the_plan(
    inputs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a run hashes nothing; the plan hashes the corpus once, for the run store's name
    and the plan's ``corpus.sha256`` both; a run made of the plan (a worker's) never does."""
    from cseaug.readers import source

    hashed: list[Path] = []
    file_sha256 = source.file_sha256
    monkeypatch.setattr(source, "file_sha256", lambda f: hashed.append(f) or file_sha256(f))
    with FakeOpenAIServer() as server:
        with BuildRun(sts_config(inputs, server.base_url)) as run:
            assert hashed == []
            plan = plan_build(run)
        assert hashed == [inputs / "corpus.txt"]
        with BuildRun.from_plan(plan) as worker:
            assert generate_shard(worker, 0).rows > 0
    assert hashed == [inputs / "corpus.txt"]
    corpus = json.loads(Path(plan.path).read_text(encoding="utf-8"))["corpus"]["sha256"]
    assert corpus == {str(inputs / "corpus.txt"): file_sha256(inputs / "corpus.txt")}
