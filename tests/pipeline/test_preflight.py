"""The preflight (issue 11, items 1 and 2): every problem of a build, at once, in seconds,
before any server or flow starts; the dry run checks every stage's models."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.config import load_config
from cseaug.pipeline.preflight import preflight
from tests.fake_openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "configs" / "demo.yaml"


@pytest.fixture(scope="module")
def http_llm() -> Iterator[list[str]]:
    """Overrides for an OpenAI-compatible endpoint that answers (the loopback server): the
    backend's own check() probes it."""
    with FakeOpenAIServer() as server:
        yield [
            "llm.backend=openai-compatible",
            f"llm.base_url={server.base_url}",
            "llm.model=fake",
        ]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    """A missing corpus, a missing pattern source and a missing API key are three lines of
    one report; today a missing key hides the rest."""
    cfg = load_config(
        REPO / "configs" / "wiki-sts.yaml",
        [
            f"corpus.path={tmp_path / 'no-corpus.txt'}",
            f"patterns.path={tmp_path / 'no-sts12'}",
            "llm.backend=openai",
            "llm.api_key_env=CSEAUG_TEST_UNSET_KEY",
            f"output.root={tmp_path / 'storage'}",
        ],
    )
    problems = preflight(cfg).problems
    assert len(problems) == 3, problems
    assert "corpus file not found" in problems[0]
    assert "no-sts12" in problems[1]
    assert "CSEAUG_TEST_UNSET_KEY" in problems[2]
    assert not (tmp_path / "storage").exists()  # nothing written


def test_a_wrong_column_is_named_before_any_work(tmp_path: Path, http_llm: list[str]) -> None:
    corpus = tmp_path / "c.csv"
    corpus.write_text("sentence,label\nA cat sat.,1\n")
    cfg = load_config(DEMO, [f"corpus.path={corpus}", "corpus.text_column=text", *http_llm])
    (problem,) = preflight(cfg).problems
    assert "corpus.text_column 'text' is not a column" in problem and "sentence, label" in problem


def test_an_unwritable_storage_root_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http_llm: list[str]
) -> None:
    """Permission denied on the storage root (EACCES) is one line naming output.root. The
    suite may run as root, for whom every directory is writable: access is denied by
    replacing os.access for the root's directory."""
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == locked else real_access(p, mode)
    )
    cfg = load_config(DEMO, [*http_llm, f"output.root={locked / 'storage'}"])
    (problem,) = preflight(cfg).problems
    assert problem.startswith("output.root") and "permission denied" in problem


def write_osscse_config(tmp_path: Path, *overrides: str) -> Path:
    path = tmp_path / "osscse.yaml"
    path.write_text(
        "name: o\nmethod: osscse\n"
        f"corpus: {{path: {REPO / 'examples' / 'demo_corpus.txt'}}}\n"
        f"output: {{root: {tmp_path / 'storage'}}}\n"
    )
    return path


def test_osscse_models_missing_offline_stop_the_build_and_are_listed_by_its_dry_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proves 11.2 and 22.2: a build of an OssCSE config fails, in seconds and before any
    work, on a spaCy pipeline that is not installed and on each translation model the offline
    machine does not have, each with the hint that fixes it; its dry run (which loads none of
    them) counts, exits 0 and lists the same five as what a real build would still need.
    Issue 11.2's dry run stopped on them; issue 22 asks a dry run to work offline."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    config = write_osscse_config(tmp_path)
    args = ["build", "--config", str(config), "--set", "negation.spacy_model=no_such_pipeline_sm"]
    started = time.perf_counter()
    built = CliRunner().invoke(app, args)
    dry = CliRunner().invoke(app, [*args, "--dry-run"])
    assert time.perf_counter() - started < 30
    assert built.exit_code != 0
    message = str(built.exception)
    assert "5 problems" in message
    assert dry.exit_code == 0, dry.output
    needs = dry.output.split("a real build would still need:")[1]
    for report in (message, needs):
        assert "python -m spacy download no_such_pipeline_sm" in report
        for name in ("facebook/wmt19-en-de", "facebook/wmt19-de-en", "facebook/wmt19-ru-en"):
            assert f"'{name}' is not in the local Hugging Face cache" in report
        assert "`hf download" in report
    assert len(needs.strip().splitlines()) == 5
    assert not (tmp_path / "storage").exists()


def test_a_missing_generator_stops_the_build_and_is_listed_by_its_dry_run(tmp_path: Path) -> None:
    config = tmp_path / "g.yaml"
    config.write_text(
        "name: g\nmethod: generate_cse\n"
        f"corpus: {{path: {REPO / 'examples' / 'demo_corpus.txt'}}}\n"
        f"generate_cse: {{generator: {tmp_path / 'no-generator'}}}\n"
        f"output: {{root: {tmp_path / 'storage'}}}\n"
    )
    built = CliRunner().invoke(app, ["build", "--config", str(config)])
    assert built.exit_code != 0
    assert "generate_cse.generator" in str(built.exception)
    assert "cseaug train-vaegpt" in str(built.exception)
    dry = CliRunner().invoke(app, ["build", "--config", str(config), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "generate_cse.generator" in dry.output.split("a real build would still need:")[1]


def test_a_dry_run_stops_on_the_configs_inputs(tmp_path: Path) -> None:
    """A corpus or pattern source that does not load stops the dry run too (it has nothing
    to count), while the missing key does not."""
    args = ["build", "--config", str(REPO / "configs" / "wiki-sts.yaml"), "--dry-run"]
    for override in (
        f"corpus.path={tmp_path / 'no-corpus.txt'}",
        f"patterns.path={tmp_path / 'no-sts12'}",
        "llm.api_key_env=CSEAUG_TEST_UNSET_KEY",
        f"output.root={tmp_path / 'storage'}",
    ):
        args += ["--set", override]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    message = str(result.exception)
    assert message.startswith("the dry run cannot start (2 problems):"), message
    assert "corpus file not found" in message and "no-sts12" in message
    assert "CSEAUG_TEST_UNSET_KEY" not in message


@pytest.fixture
def offline_empty_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub offline, its cache empty."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))


@pytest.mark.usefixtures("offline_empty_hub")
def test_a_diagnostics_encoder_missing_offline_stops_the_build_before_any_work(
    tmp_path: Path, http_llm: list[str]
) -> None:
    """Proves 22.1: a diagnostics encoder the offline machine does not have is named by the
    preflight, before anything is written, not at publish after every answer was bought."""
    args = ["build", "--config", str(DEMO), "--set", "diagnostics.encoder=nobody/no-encoder"]
    for override in (*http_llm, f"output.root={tmp_path / 'storage'}"):
        args += ["--set", override]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert str(result.exception) == (
        "the build cannot start: diagnostics.encoder: 'nobody/no-encoder' is not in the local "
        "Hugging Face cache and the hub is offline; download it where the hub is reachable "
        "(`hf download nobody/no-encoder`, then copy ~/.cache/huggingface), or set "
        "diagnostics.encoder to a local model directory"
    )
    assert not (tmp_path / "storage").exists()


@pytest.mark.usefixtures("offline_empty_hub")
def test_the_default_encoder_offline_without_a_copy_is_named_by_the_preflight(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    http_llm: list[str],
    cached_hub_model: Callable[..., Path],
) -> None:
    """Proves 22.1 for a `make setup` install (no dev extra, so no packaged copy of
    all-MiniLM-L6-v2) offline: the default encoder not in the cache is a problem of the
    preflight; in the cache at the pinned revision, it is none."""
    from cseaug.config import MINILM_REVISION
    from cseaug.encoders import minilm

    monkeypatch.setattr(minilm, "FALLBACK_PACKAGE", "cseaug_tests_no_packaged_minilm")
    cfg = load_config(DEMO, [*http_llm, f"output.root={tmp_path / 'storage'}"])
    (problem,) = preflight(cfg).problems
    assert problem.startswith(
        f"diagnostics.encoder: the encoder {minilm.MINILM_ID}@{MINILM_REVISION[:12]} is not in "
        "the Hugging Face cache and the hub cannot be reached"
    )
    cached_hub_model(minilm.MINILM_ID, MINILM_REVISION)
    assert preflight(cfg).problems == []


def test_a_cached_default_encoder_costs_no_probe_of_the_hub(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    http_llm: list[str],
    cached_hub_model: Callable[..., Path],
) -> None:
    """The default encoder at its pinned revision in the cache loads without the hub, so
    checking it must not probe the hub (2 s at most, a request) before a build that needs no
    other hub model."""
    from cseaug.config import MINILM_REVISION
    from cseaug.encoders.minilm import MINILM_ID

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # a probe would find it closed
    cached_hub_model(MINILM_ID, MINILM_REVISION)
    notes: list[str] = []
    cfg = load_config(DEMO, [*http_llm, f"output.root={tmp_path / 'storage'}"])
    assert preflight(cfg, say=notes.append).problems == [] and notes == []
    assert "HF_HUB_OFFLINE" not in os.environ


@pytest.mark.usefixtures("offline_empty_hub")
def test_the_pattern_filters_encoder_is_checked_with_the_diagnostics_off(
    tmp_path: Path, http_llm: list[str]
) -> None:
    """The pattern filter's cosine similarity (cs, both) loads the encoder during generation,
    and so does the quality gate (diagnostics off do not turn it off); the MER filter without
    the gate loads none."""
    base = [*http_llm, f"output.root={tmp_path / 's'}", "diagnostics.enabled=false"]
    base.append("diagnostics.encoder=nobody/no-encoder")
    no_gate = "publish.min_pattern_share=0"
    for settings in (
        ["diagnostics.pattern_filter=cs", no_gate],
        ["diagnostics.pattern_filter=both", no_gate],
        ["diagnostics.pattern_filter=mer"],
    ):
        (problem,) = preflight(load_config(DEMO, [*base, *settings])).problems
        assert problem.startswith("diagnostics.encoder: 'nobody/no-encoder' is not in")
    settings = ["diagnostics.pattern_filter=mer", no_gate]
    assert preflight(load_config(DEMO, [*base, *settings])).problems == []


def test_a_missing_evaluation_data_directory_is_named_before_any_work(
    tmp_path: Path, http_llm: list[str]
) -> None:
    """The diagnostics' contamination check reads diagnostics.eval_data_dir at publish, after
    every answer was bought: the preflight names a directory that is not there."""
    missing = tmp_path / "no-eval-data"
    cfg = load_config(
        DEMO, [*http_llm, f"output.root={tmp_path / 's'}", f"diagnostics.eval_data_dir={missing}"]
    )
    (problem,) = preflight(cfg).problems
    assert problem == f"evaluation data directory not found: {missing} (diagnostics.eval_data_dir)"


def test_a_missing_reference_file_is_named_before_any_work(
    tmp_path: Path, http_llm: list[str]
) -> None:
    """The Figure 7 reference is read at publish: the preflight names a file that is not there."""
    missing = tmp_path / "sts-dev.csv"
    cfg = load_config(
        DEMO, [*http_llm, f"output.root={tmp_path / 's'}", f"diagnostics.reference.stsb={missing}"]
    )
    assert preflight(cfg).problems == [f"diagnostics.reference.stsb: no such file: {missing}"]


def test_a_ready_config_passes(tmp_path: Path, http_llm: list[str]) -> None:
    cfg = load_config(DEMO, [*http_llm, f"output.root={tmp_path / 'storage'}"])
    assert preflight(cfg).problems == []


def test_a_sample_larger_than_the_corpus_warns_in_the_build_and_the_dry_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, http_llm: list[str]
) -> None:
    """Proves 11.6: a build (its plan) and its dry run that ask for more sentences than the
    corpus holds take them all and say how many; the OssCSE tools, which take every sentence
    on purpose, stay quiet."""
    from cseaug.commands.osscse import read_sentences
    from cseaug.pipeline.dry_run import estimate_build
    from cseaug.pipeline.plan import plan_build
    from cseaug.pipeline.run import BuildRun

    overrides = [*http_llm, "sample.size=10000", "diagnostics.enabled=false"]
    cfg = load_config(DEMO, [*overrides, f"output.root={tmp_path / 's'}"])
    with caplog.at_level("WARNING", logger="cseaug.corpus.prepare"):
        taken = estimate_build(cfg)["sample"]
        with BuildRun(cfg) as run:
            plan_build(run)
        read_sentences(REPO / "examples" / "demo_corpus.txt", "text")
    warnings = [r.getMessage() for r in caplog.records if r.name == "cseaug.corpus.prepare"]
    expected = f"sample.size 10,000 is larger than corpus demo: it holds {taken} sentences"
    assert len(warnings) == 2 and all(w.startswith(expected) for w in warnings), warnings
    assert warnings[0].endswith(f"and all {taken} were taken")


@pytest.mark.parametrize("backend", ["openai", "openai-batch"])
def test_an_api_model_is_not_looked_for_in_the_hub_cache(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http_llm: list[str]
) -> None:
    """Only backends that load the model here (transformers, vLLM) need it in the cache; an
    API backend's model is the endpoint's business (its check() probes it)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-preflight")
    endpoint = [o for o in http_llm if not o.startswith("llm.backend=")]
    cfg = load_config(DEMO, [f"llm.backend={backend}", *endpoint, f"output.root={tmp_path / 's'}"])
    assert preflight(cfg).problems == []
