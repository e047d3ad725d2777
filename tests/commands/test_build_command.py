"""``cseaug build``'s own checks, before any flow starts."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from cseaug.config import RunConfig, load_config
from cseaug.errors import ConfigError

DEMO = Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"


def test_an_override_holding_a_secret_is_refused_by_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The config becomes the flow run's parameter, stored by Prefect: a secret pasted into an
    override is refused where the overrides are parsed, and the message names the key, never
    the value."""
    key = "sk-test-SECRET-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    assert (
        load_config(DEMO, ["sample.size=500", "llm.model=gpt-4o-mini"]).llm.model == "gpt-4o-mini"
    )
    with pytest.raises(ConfigError, match=r"--set description=\.\.\.") as caught:
        load_config(DEMO, ["sample.size=500", f"description=built with {key}"])
    assert key not in str(caught.value) and "environment variable" in str(caught.value)


def test_a_build_reports_every_problem_in_seconds_before_prefect_starts(tmp_path: Path) -> None:
    """Proves 11.1: a real build (not a dry run) with a missing corpus and a missing API key
    names both, one line each, without a traceback, in seconds; no Prefect server started
    (no Prefect home was made) and nothing was written."""
    from tests.reliability.attack_tools import REPO, RecordingProxy, build_environment, run_cseaug

    args = ["build", "--config", str(REPO / "configs" / "demo.yaml")]
    for override in (
        f"corpus.path={tmp_path / 'missing.txt'}",
        "llm.backend=openai",
        "llm.model=gpt-4o-mini",
        "llm.api_key_env=CSEAUG_TEST_UNSET_KEY",
        f"output.root={tmp_path / 'storage'}",
    ):
        args += ["--set", override]
    started = time.perf_counter()
    with RecordingProxy() as proxy:
        done = run_cseaug(args, build_environment(tmp_path / "prefect-home", proxy), tmp_path, 120)
    elapsed = time.perf_counter() - started
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "error: the build cannot start (2 problems):", done.stderr
    assert "corpus file not found" in lines[1] and "CSEAUG_TEST_UNSET_KEY" in lines[2]
    assert len(lines) == 3 and elapsed < 20
    assert not (tmp_path / "prefect-home").exists() and not (tmp_path / "storage").exists()


def test_a_dry_run_of_a_shipped_config_works_offline_without_an_api_key(
    tmp_path: Path, shared_data: Path
) -> None:
    """Proves 22.2: `cseaug build --dry-run` of configs/wiki-sts.yaml (the OpenAI API) with no
    OPENAI_API_KEY and the hub offline prints requests, tokens and cost, lists what a real
    build would still need (the key, an encoder not in the cache), connects nowhere and exits 0."""
    from tests.reliability.attack_tools import REPO, RecordingProxy, build_environment, run_cseaug

    args = ["build", "--config", str(REPO / "configs" / "wiki-sts.yaml"), "--dry-run"]
    for override in (
        f"corpus.path={shared_data / 'wiki' / 'wiki1m_for_simcse_first11914.txt'}",
        f"patterns.path={shared_data / 'sts12_train'}",
        "sample.size=40",
        "diagnostics.encoder=nobody/no-encoder",
        f"output.root={tmp_path / 'storage'}",
    ):
        args += ["--set", override]
    with RecordingProxy() as proxy:
        env = build_environment(tmp_path / "prefect-home", proxy, HF_HUB_OFFLINE="1")
        env.pop("OPENAI_API_KEY", None)
        done = run_cseaug(args, env, tmp_path, 120)
    assert done.returncode == 0, done.stderr
    assert "requests" in done.stderr and "prompt tokens" in done.stderr
    assert "cost openai api" in done.stderr
    needs = done.stderr.split("a real build would still need:\n")[1].splitlines()
    assert len(needs) == 2, done.stderr
    assert "OPENAI_API_KEY, which is unset" in needs[0]
    assert needs[1].startswith("  - diagnostics.encoder: 'nobody/no-encoder' is not in")
    assert proxy.requests == []
    assert not (tmp_path / "storage").exists() and not (tmp_path / "prefect-home").exists()


def test_a_dry_run_without_a_key_counts_every_request_when_a_cache_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rerun's dry run (the response cache exists) without OPENAI_API_KEY: the cache's
    answers are matched by the backend's identity, which the API is asked for, so they
    cannot be read; the dry run says so and counts every request, rather than failing."""
    from typer.testing import CliRunner

    from cseaug.cli import app
    from cseaug.llm.cache import ResponseCache
    from tests.reliability.attack_tools import REPO

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ResponseCache(tmp_path / "storage" / "cache" / "llm.sqlite").close()
    args = ["build", "--config", str(REPO / "configs" / "demo.yaml"), "--dry-run"]
    for override in (
        f"corpus.path={REPO / 'examples' / 'demo_corpus.txt'}",
        "llm.backend=openai",
        "llm.model=gpt-4o-mini",
        "sample.size=8",
        f"output.root={tmp_path / 'storage'}",
    ):
        args += ["--set", override]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "not read (the endpoint is needed to match its answers)" in result.output
    assert "OPENAI_API_KEY, which is unset" in result.output.split("a real build would")[1]
    cells = [
        [c.strip() for c in line.split("│") if c.strip()] for line in result.output.splitlines()
    ]
    found = {row[0]: row[1] for row in cells if len(row) == 2}
    assert found["requests"] == found["to send"] == str(3 * 8) and found["cached"] == "0"


def test_a_rerun_dry_run_probes_the_endpoint_once_and_finds_every_cached_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 item 1: a dry run's preflight probes the endpoint (``GET /models``) and the
    estimate matches the response cache with what that probe reported, instead of asking the
    endpoint again for every lookup (it asked 4 times for this build before). After a build,
    every request of the same config is found in the cache."""
    from cseaug.commands.build import run_build_command
    from cseaug.pipeline.local import run_build
    from tests.fake_openai_server import FakeOpenAIServer
    from tests.reliability.attack_tools import REPO

    with FakeOpenAIServer() as server:
        cfg = load_config(
            DEMO,
            [
                f"corpus.path={REPO / 'examples' / 'demo_corpus.txt'}",
                "llm.backend=openai-compatible",
                f"llm.base_url={server.base_url}",
                "llm.model=fake",
                "sample.size=8",
                "diagnostics.enabled=false",
                "publish.min_pattern_share=0",  # the fake answers are not graded
                f"output.root={tmp_path / 'storage'}",
            ],
        )
        run_build(cfg)
        probes = server.state.model_requests
        capsys.readouterr()
        run_build_command(cfg, dry_run=True)
        assert server.state.model_requests - probes == 1
    cells = [
        [c.strip() for c in line.split("│") if c.strip()]
        for line in capsys.readouterr().err.splitlines()  # the CLI's console is stderr
    ]
    found = {row[0]: row[1] for row in cells if len(row) == 2}
    assert found["requests"] == found["cached"] == str(3 * 8) and found["to send"] == "0"


FULL_DISK_AT_FSYNC = """
import errno, os, sys
real_fsync, root = os.fsync, sys.argv.pop(1)

def fsync(fd):
    path = os.readlink(f"/proc/self/fd/{fd}")
    if path.startswith(root):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
    real_fsync(fd)

os.fsync = fsync
from cseaug.cli import main
main()
"""
"""``cseaug`` whose lowest-level write (``os.fsync``) fails under the given root as on a full disk."""


@pytest.mark.prefect
@pytest.mark.slow
def test_a_full_disk_mid_build_is_one_line(tmp_path: Path) -> None:
    """Proves 8.9: the disk fills up (ENOSPC) while the flow writes its first shard (every
    ``os.fsync`` of a file under the storage root fails as the operating system would). The
    user reads one line naming the file and what to do, exit status 2, and no traceback:
    Prefect's console log leaves out the traceback of an expected failure."""
    from tests.fake_openai_server import FakeOpenAIServer
    from tests.reliability.attack_tools import REPO, RecordingProxy, build_environment

    root = tmp_path / "storage"
    # the server answers the preflight's endpoint probe
    with FakeOpenAIServer() as server, RecordingProxy() as proxy:
        args = ["build", "--config", str(REPO / "configs" / "demo.yaml")]
        for override in (
            f"corpus.path={REPO / 'examples' / 'demo_corpus.txt'}",
            "llm.backend=openai-compatible",
            f"llm.base_url={server.base_url}",
            "llm.model=fake",
            f"output.root={root}",
        ):
            args += ["--set", override]
        done = subprocess.run(
            [sys.executable, "-c", FULL_DISK_AT_FSYNC, str(root), *args],
            env=build_environment(tmp_path / "prefect-home", proxy),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert "no space left on device" in line and str(root) in line


def test_offline_a_build_of_a_hub_model_fails_in_seconds_and_says_it_once(tmp_path: Path) -> None:
    """Proves 11.3: with the hub unreachable (here: HF_ENDPOINT on a closed port) and the
    model not cached, `cseaug build` of the demo config probes once, prints one note and one
    error (no retries, no traceback) within seconds, before Prefect starts. Measured on the
    demo with `make run` offline: 77-89 s and 258 lines before, 2.8 s and 3 lines after."""
    from tests.reliability.attack_tools import REPO, RecordingProxy, build_environment, run_cseaug

    args = ["build", "--config", str(REPO / "configs" / "demo.yaml")]
    args += ["--set", f"corpus.path={REPO / 'examples' / 'demo_corpus.txt'}"]
    args += ["--set", f"output.root={tmp_path / 'storage'}"]
    started = time.perf_counter()
    with RecordingProxy() as proxy:
        env = build_environment(
            tmp_path / "prefect-home",
            proxy,
            HF_ENDPOINT="http://127.0.0.1:9",
            HF_HUB_CACHE=str(tmp_path / "empty-hub-cache"),
        )
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
            env.pop(name, None)
        done = run_cseaug(args, env, tmp_path, 120)
    elapsed = time.perf_counter() - started
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 2 and elapsed < 20, done.stderr
    assert lines[0].startswith("note: the Hugging Face hub (http://127.0.0.1:9) is unreachable")
    assert "'Qwen/Qwen2.5-0.5B-Instruct' is not in the local Hugging Face cache" in lines[1]
    assert "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / "prefect-home").exists()


def test_force_new_version_reaches_the_flow_and_an_unchanged_build_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path, cached_hub_model
) -> None:
    """`--force-new-version` becomes output.force_new_version=true of the config the flow run
    is given; a summary that reuses a version is printed as the one `unchanged:` line first.
    The flow is given the build's clock: its process's start, then the hand-over to Prefect."""
    cached_hub_model("Qwen/Qwen2.5-0.5B-Instruct")  # the demo's model passes the preflight
    from typer.testing import CliRunner

    import cseaug.commands.build as build_command
    import cseaug_prefect.flows.build_hybrid_dataset as flow_module
    from cseaug.cli import app
    from cseaug.pipeline.publish import BuildSummary
    from cseaug.wallclock import CLI_STARTED, FLOW_CALLED, Clock, process_started

    calls: list[RunConfig] = []
    clocks: list[Clock] = []
    summary = BuildSummary(
        dataset="demo", version="v0003", version_dir=tmp_path / "v0003", rows=4, aigen=2,
        other=2, rejects=0, rejects_by_stage={}, token_usage={}, seconds=0.1, timings={},
        finished_at=time.time(), reused_version="demo/v0003",
    )  # fmt: skip

    def fake_flow(config: RunConfig, served: object, clock: Clock) -> BuildSummary:
        calls.append(config)
        clocks.append(clock)
        return summary

    monkeypatch.setattr(flow_module, "build_hybrid_dataset", fake_flow)
    monkeypatch.setattr(build_command, "temporary_server", lambda: None)  # no flow: no server
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("A cat sat.\n", encoding="utf-8")
    args = ["build", "--config", "configs/demo.yaml", "--set", f"corpus.path={corpus}"]
    result = CliRunner().invoke(app, [*args, "--force-new-version"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert calls[-1].output.force_new_version
    marks = clocks[-1].marks
    assert marks[CLI_STARTED] == pytest.approx(process_started(), abs=0.05)
    assert marks[CLI_STARTED] < marks[FLOW_CALLED] <= time.time()
    assert result.output.splitlines()[0] == (
        "unchanged: demo/v0003 already holds this data; nothing new published "
        "(--force-new-version publishes anyway)"
    )
    CliRunner().invoke(app, args)
    assert not calls[-1].output.force_new_version


def test_the_console_leaves_out_only_the_traceback_of_an_expected_failure() -> None:
    """Prefect's console formatter, wrapped: an expected failure keeps its message and loses
    its traceback; any other exception keeps both; the record itself is left as it was (other
    handlers, such as Prefect's log store, still see the traceback)."""
    import logging

    from cseaug.commands.quiet_logs import WithoutExpectedTraceback

    formatter = WithoutExpectedTraceback(logging.Formatter("%(message)s"))

    def record_of(exc: Exception) -> logging.LogRecord:
        try:
            raise exc
        except Exception:
            return logging.LogRecord("t", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())

    expected = record_of(ConfigError("bad value"))
    assert formatter.format(expected) == "failed" and expected.exc_info is not None
    assert formatter.format(record_of(OSError(28, "No space left on device"))) == "failed"
    assert "Traceback" in formatter.format(record_of(RuntimeError("a bug")))


def test_the_console_says_an_expected_failures_message_once() -> None:
    """Prefect repeats a failure's message in the task's and the flow's failure lines; for an
    expected failure the console keeps each line but not the message (the CLI's last line
    prints it), brackets closed; an unexpected failure's lines keep theirs."""
    import logging

    from cseaug.commands.quiet_logs import WithoutExpectedTraceback
    from cseaug.errors import PublishGateError

    formatter = WithoutExpectedTraceback(logging.Formatter("%(message)s"))
    gate = PublishGateError("demo: nothing published: 0 of 8 rows keep the order\n  1. 'x'")

    def record(message: str, *args: object, exc: Exception | None = None) -> logging.LogRecord:
        info = (type(exc), exc, None) if exc else None
        return logging.LogRecord("prefect", logging.ERROR, __file__, 1, message, args, info)

    lines = [
        formatter.format(record("Task run failed with exception: %r", gate, exc=gate)),
        formatter.format(record(f"Finished in state Failed('Task run encountered an exception PublishGateError: {gate}')")),
        formatter.format(record("Encountered exception during execution: %r", gate, exc=gate)),
    ]  # fmt: skip
    assert lines == [
        "Task run failed with exception: PublishGateError (the error below)",
        "Finished in state Failed('Task run encountered an exception PublishGateError (the error below)')",
        "Encountered exception during execution: PublishGateError (the error below)",
    ]  # fmt: skip
    bug = RuntimeError("a bug in the code")
    assert "a bug in the code" in formatter.format(record("failed: %r", bug, exc=bug))
