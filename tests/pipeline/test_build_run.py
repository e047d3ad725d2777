"""The build end to end without Prefect: plan, shards, publish, rerun from the cache, dry run.

The LLM is a real OpenAI-wire-format HTTP server on 127.0.0.1 (tests/fake_openai_server.py);
the corpus and the STS12 examples are the real files in ../shared/data.
"""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cseaug.config import RunConfig
from cseaug.dataset.reader import read_rows
from cseaug.errors import BackendError, InputError
from cseaug.pipeline.dry_run import estimate_build
from cseaug.pipeline.local import run_build
from cseaug.pipeline.plan import plan_build
from cseaug.pipeline.publish import BuildSummary, publish_build
from cseaug.pipeline.run import BuildRun
from cseaug.pipeline.shard import generate_shard
from cseaug.pipeline.stages import ServedModels
from cseaug.step import Step
from tests.augment.scripted_backend import ScriptedBackend
from tests.fake_openai_server import Action, FakeOpenAIServer
from tests.wiki_sts_config import wiki_sts_config


@pytest.fixture()
def server():
    with FakeOpenAIServer() as running:
        yield running


def make_config(shared_data: Path, root: Path, base_url: str, **extra) -> RunConfig:
    llm = {"backend": "openai-compatible", "base_url": base_url, "model": "fake", "concurrency": 8}
    data = wiki_sts_config(
        shared_data,
        root,
        "wiki-sts-test",
        llm,
        sample_size=130,
        seed=3,
        output={"root": str(root), "exports": ["simcse", "ngcse"]},
        execution={"shard_size": 100},
    )
    data.update(extra)
    return RunConfig.model_validate(data)


def read_rows_of_inputs(root: Path) -> list[dict]:
    """The sampled anchors of every input shard of the runs under ``root``."""
    return [
        r for p in sorted(root.glob("runs/*/input/*.parquet")) for r in pq.read_table(p).to_pylist()
    ]


def run(cfg: RunConfig) -> BuildSummary:
    return run_build(cfg)


def test_build_publishes_a_hybrid_version(shared_data: Path, tmp_path: Path, server) -> None:
    cfg = make_config(shared_data, tmp_path, server.base_url)
    summary = run(cfg)

    rows = read_rows(summary.version_dir)
    aigen = rows.filter(rows.column("split").to_numpy(zero_copy_only=False) == "aigen")
    assert summary.aigen == aigen.num_rows == 130
    assert summary.other == rows.num_rows - 130 > 11_000
    assert set(aigen.column("method").to_pylist()) == {"sts"}
    for view in ("positive", "intermediate", "negative"):
        assert aigen.column(view).null_count == 0
    assert sum(server.counts.values()) == 3 * 130
    manifest = json.loads((summary.version_dir / "manifest.json").read_text())
    assert manifest["token_usage"]["this_run"]["requests"] == 3 * 130
    assert {p["name"] for p in manifest["prompts"]} == {
        "sts_positive",
        "sts_intermediate",
        "sts_negative",
    }
    assert len(manifest["example_set"]["examples"]["examples"]["positive"]) == 3
    assert manifest["counts"]["rejects_by_stage"]["corpus"]["duplicate"] > 0
    assert manifest["heldout_fraction"] == 0.1  # NGCSE's share: the config leaves it unset
    assert 0 < manifest["counts"]["heldout"] < 0.15 * rows.num_rows
    assert {Path(p).suffix for p in summary.exports} == {".csv", ".jsonl"}
    # where the time went (issue 14); diagnostics are off in this config
    timings = manifest["timings"]
    assert {"plan", "generate", "publish", "orchestration"} <= set(timings)
    assert "diagnostics" not in timings
    assert all(seconds >= 0 for seconds in timings.values())


def test_the_summarys_time_is_the_wall_time_and_its_parts_add_up(
    shared_data: Path, tmp_path: Path, server
) -> None:
    """Proves 22.3: the summary reported 1.2 s for a 24 s rebuild (plan, generation and
    publishing only). Its time is now the wall time from the command's start (here marked
    3 s before the build, as `cseaug` marks its process's start) to the summary, and the
    parts it lists (start-up, Prefect, sampling, generation, publishing, the flow's end)
    add up to it."""
    import time

    from cseaug import wallclock
    from cseaug.commands.build import time_parts

    cfg = make_config(shared_data, tmp_path, server.base_url)
    started = time.time() - 3.0
    marks = {wallclock.CLI_STARTED: started, wallclock.FLOW_CALLED: started + 2.0}
    with BuildRun(cfg, clock=wallclock.Clock(marks)) as build:
        outcomes = [generate_shard(build, i) for i in range(plan_build(build).shards)]
        summary = publish_build(build, outcomes)
    time.sleep(0.3)  # Prefect's end of the flow, after publishing
    now = time.time()
    seconds, parts = time_parts(summary, now)
    assert seconds == pytest.approx(now - started, abs=0.01)
    assert sum(part for _, part in parts) == pytest.approx(seconds, abs=0.01)
    named = dict(parts)
    assert named["start-up"] == pytest.approx(2.0, abs=0.01) and named["flow end"] >= 0.3
    assert {"Prefect start", "sampling", "generation", "publishing"} <= set(named)
    assert "other" not in named


def test_rerun_sends_nothing_and_publishes_the_same_data(
    shared_data: Path, tmp_path: Path, server
) -> None:
    """A rerun from a full cache gives the same data: it publishes nothing new and reports
    the version that holds them (issue 8 item 7), unless output.force_new_version."""
    cfg = make_config(shared_data, tmp_path, server.base_url)
    first = run(cfg)
    sent = sum(server.counts.values())

    def drop_shards() -> None:  # a new run store (fresh shards) but the same cache
        for shard in (tmp_path / "runs").iterdir():
            for path in shard.rglob("*.parquet"):
                path.unlink()

    drop_shards()
    second = run(cfg)
    assert sum(server.counts.values()) == sent
    assert second.token_usage["requests"] == 0 and second.token_usage["cached"] == 3 * 130
    assert second.version == first.version == "v0001"
    assert second.reused_version == "wiki-sts-test/v0001" and first.reused_version is None
    assert second.message.startswith("unchanged: wiki-sts-test/v0001 already holds this data")
    # the summary times this run, not the build that made the reused version
    first_timings = json.loads((first.version_dir / "manifest.json").read_text())["timings"]
    assert second.timings != first_timings and "diagnostics" not in second.timings
    assert set(second.timings) >= {"plan", "generate", "publish"}
    dataset = tmp_path / "datasets" / "wiki-sts-test"
    assert sorted(p.name for p in dataset.iterdir() if not p.name.startswith(".")) == [
        "latest",
        "v0001",
    ]

    drop_shards()
    forced = run(
        cfg.model_copy(update={"output": cfg.output.model_copy(update={"force_new_version": True})})
    )
    assert forced.version == "v0002" and forced.reused_version is None
    m1 = json.loads((first.version_dir / "manifest.json").read_text())
    m2 = json.loads((forced.version_dir / "manifest.json").read_text())
    assert m1["fingerprints"]["data"] == m2["fingerprints"]["data"]


def test_a_failed_view_goes_to_rejects_and_keeps_the_anchor_as_other(
    shared_data: Path, tmp_path: Path, server
) -> None:
    cfg = make_config(shared_data, tmp_path, server.base_url, sample={"size": 20, "seed": 3})
    with BuildRun(cfg) as build:
        plan = plan_build(build)
        store_inputs = pq.read_table(Path(plan.path).parent / "input" / "shard-00000.parquet")
        victim = store_inputs.column("sentence")[0].as_py()
        server.script(victim, Action.status_code(400))

        outcomes = [generate_shard(build, i) for i in range(plan.shards)]
        summary = publish_build(build, outcomes)

    assert outcomes[0].demoted == 1 and summary.aigen == 19
    rows = read_rows(summary.version_dir).to_pylist()
    kept = [r for r in rows if r["sentence"] == victim]
    assert len(kept) == 1 and kept[0]["split"] == "other" and kept[0]["positive"] is None
    rejects = pq.read_table(summary.version_dir / "rejects.parquet").to_pylist()
    llm_rejects = [r for r in rejects if r["stage"] == "llm"]
    assert llm_rejects and all(r["sentence"] == victim for r in llm_rejects)
    assert summary.rejects_by_stage["llm"]


def test_finished_shards_are_not_run_again(shared_data: Path, tmp_path: Path, server) -> None:
    cfg = make_config(shared_data, tmp_path, server.base_url, sample={"size": 20, "seed": 3})
    with BuildRun(cfg) as build:
        plan = plan_build(build)
        first = generate_shard(build, 0)
    sent = sum(server.counts.values())
    # Another process (a run made from the plan alone) finds the shard done and loads nothing.
    with BuildRun.from_plan(plan) as elsewhere:
        again = generate_shard(elsewhere, 0)
        assert elsewhere.usage() == {}, "a finished shard needs no stage"
    assert not first.reused and again.reused and again.rows == first.rows
    assert sum(server.counts.values()) == sent


def test_a_worker_runs_a_shard_on_the_plans_config_without_reading_or_validating_it(
    shared_data: Path, tmp_path: Path, server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Dask or Ray worker gets the shard task's arguments pickled: the plan carries the
    build's validated config, so the worker reads no YAML file and no plan file, and
    validates nothing again."""
    from cseaug.config import loading

    cfg = make_config(shared_data, tmp_path, server.base_url, sample={"size": 20, "seed": 3})
    with BuildRun(cfg) as build:
        plan = plan_build(build)
    Path(plan.path).unlink()

    def refuse(*args, **kwargs):
        raise AssertionError("a worker read or validated the config again")

    monkeypatch.setattr(loading, "load_yaml_model", refuse)
    monkeypatch.setattr(RunConfig, "model_validate", classmethod(refuse))
    with BuildRun.from_plan(pickle.loads(pickle.dumps(plan))) as run:
        outcome = generate_shard(run, 0)
    assert run.cfg == cfg and run.store.path == build.store.path
    assert outcome.rows > 0 and not outcome.reused


def test_the_plan_probes_the_endpoint_once_and_a_worker_reuses_what_it_reported(
    shared_data: Path, tmp_path: Path, server
) -> None:
    """The plan probes the LLM endpoint (``GET /models``) once; a worker's run, opened from
    the pickled plan, answers its shard on what the plan's probe reported, without probing
    again, and records the same backend identity in its stage's manifest."""
    cfg = make_config(shared_data, tmp_path, server.base_url, sample={"size": 20, "seed": 3})
    with BuildRun(cfg) as build:
        plan = plan_build(build)
        identity = build.view_steps()[0].manifest()["model"]["llm"]
    assert server.state.model_requests == 1 and identity["served"]["id"] == "fake"
    with BuildRun.from_plan(pickle.loads(pickle.dumps(plan))) as run:
        assert generate_shard(run, 0).rows > 0
        assert run.view_steps()[0].manifest()["model"]["llm"] == identity
    assert server.state.model_requests == 1


def test_a_worker_that_cannot_reach_the_endpoint_fails_its_shard_in_one_line(
    shared_data: Path, tmp_path: Path
) -> None:
    """A worker does not probe the endpoint before its shard (the plan did), but one that
    cannot reach it gets no answer: the endpoint is probed again, and the shard fails with
    the probe's one-line error, naming the URL and the cause, rather than passing on
    nothing but failed requests."""
    llm = {"max_retries": 0}
    with FakeOpenAIServer() as server:
        url = server.base_url
        cfg = make_config(shared_data, tmp_path, url, sample={"size": 20, "seed": 3})
        cfg.llm = cfg.llm.model_copy(update=llm)
        with BuildRun(cfg) as build:
            plan = plan_build(build)
    with (
        pytest.raises(BackendError, match=f"^LLM endpoint {url} cannot be reached: connection"),
        BuildRun.from_plan(pickle.loads(pickle.dumps(plan))) as worker,
    ):
        generate_shard(worker, 0)


def test_unloadable_model_stops_before_any_work(shared_data: Path, tmp_path: Path) -> None:
    cfg = make_config(shared_data, tmp_path, "http://127.0.0.1:9/v1")
    cfg.llm = cfg.llm.model_copy(
        update={"backend": "transformers", "model": str(tmp_path / "no-such-model")}
    )
    with pytest.raises(BackendError, match="base_url"), BuildRun(cfg) as build:
        plan_build(build)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "datasets").exists()


def test_dry_run_counts_requests_and_sends_nothing(
    shared_data: Path, tmp_path: Path, server
) -> None:
    cfg = make_config(shared_data, tmp_path, server.base_url)
    estimate = estimate_build(cfg)
    assert estimate["sample"] == 130 and estimate["requests"] == 3 * 130 and estimate["cached"] == 0
    assert estimate["prompt_tokens"] > 0
    # the corpus's kept sentences, whether or not the other rows are published
    assert estimate["corpus_kept"] == estimate["sample"] + estimate["other_rows"] > 10_000
    alone = cfg.model_copy(
        update={"sample": cfg.sample.model_copy(update={"include_other": False})}
    )
    assert estimate_build(alone)["corpus_kept"] == estimate["corpus_kept"]
    derived = cfg.model_copy(
        update={"generation": cfg.generation.model_copy(update={"derive_from": "positive"})}
    )
    assert estimate_build(derived)["requests"] == 3 * 130
    assert sum(server.counts.values()) == 0
    assert not (tmp_path / "datasets").exists()


def test_filters_drop_contaminated_and_disordered_rows(
    shared_data: Path, tmp_path: Path, server
) -> None:
    corpus = tmp_path / "corpus.txt"
    leaked = [  # STS-B test sentences, some sampled, some left as `other` rows
        "A girl is styling her hair.",
        "A group of men play soccer on the beach.",
        "One woman is measuring another woman's ankle.",
        "A man is cutting up a cucumber.",
        "A man is playing a harp.",
        "A woman is cutting onions.",
    ]
    lines = leaked + [f"The river number {i} floods the lower fields in spring." for i in range(60)]
    corpus.write_text("\n".join(lines) + "\n")
    cfg = make_config(
        shared_data,
        tmp_path,
        server.base_url,
        corpus={"name": "c", "path": str(corpus)},
        sample={"size": 30, "seed": 1},
        diagnostics={
            "enabled": False,
            "eval_data_dir": str(shared_data),
            "remove_contaminated": True,
            "pattern_filter": "mer",
        },
    )
    summary = run(cfg)
    sentences = set(read_rows(summary.version_dir).column("sentence").to_pylist())
    assert not sentences & set(leaked)
    rejects = pq.read_table(summary.version_dir / "rejects.parquet").to_pylist()
    reasons = {r["reason"] for r in rejects}
    contaminated = {r["sentence"] for r in rejects if r["reason"] == "contamination"}
    assert contaminated == set(leaked)
    plan = json.loads(next((tmp_path / "runs").glob("*/plan.json")).read_text())
    sampled = {r["sentence"] for r in read_rows_of_inputs(tmp_path)}
    assert set(leaked) - sampled, "no leaked sentence was left to the other rows"
    assert plan["other_rows"] > 0
    # The fake server echoes the same text for every view: no strict MER order, all dropped.
    assert "pattern_order" in reasons and summary.aigen == 0


def test_generate_cse_builds_through_the_same_pipeline(shared_data: Path, tmp_path: Path) -> None:
    cfg = RunConfig.model_validate(
        {
            "name": "gcse-test",
            "method": "generate_cse",
            "corpus": {"path": str(shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt")},
            "sample": {"size": 50, "include_other": False},
            "generate_cse": {"generator": None, "views": 2},
            "output": {"root": str(tmp_path), "rows_per_file": 20},
            "diagnostics": {"enabled": False},
        }
    )
    summary = run(cfg)
    rows = read_rows(summary.version_dir).to_pylist()
    assert summary.rows == summary.aigen == 50
    assert len(list((summary.version_dir / "data").glob("*.parquet"))) == 3  # output.rows_per_file
    # Generate-CSE holds nothing out unless output.heldout_fraction says so (issue 10)
    assert not any(r["heldout"] for r in rows)
    manifest = json.loads((summary.version_dir / "manifest.json").read_text())
    assert manifest["heldout_fraction"] == 0.0
    assert all(r["mer_positive"] is not None for r in rows)  # the MER step ran
    assert all(r["method"] == "generate_cse" and len(r["augmentations"]) == 2 for r in rows)
    assert {r["positive_method"] for r in rows} <= {"shuffle", "cutoff", "dropout", "repetition"}


def test_contaminated_anchors_whose_views_failed_are_not_kept_as_other_rows(
    shared_data: Path, tmp_path: Path, server
) -> None:
    leaked = "A man is playing a harp."  # an STS-B test sentence
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "\n".join([leaked, *(f"The river number {i} floods the fields." for i in range(9))])
    )
    server.script(leaked, *[Action.status_code(400)] * 3)
    cfg = make_config(
        shared_data,
        tmp_path,
        server.base_url,
        corpus={"name": "c", "path": str(corpus)},
        sample={"size": 10, "seed": 1},  # every line is sampled
        diagnostics={
            "enabled": False,
            "eval_data_dir": str(shared_data),
            "remove_contaminated": True,
        },
    )
    summary = run(cfg)
    assert leaked not in read_rows(summary.version_dir).column("sentence").to_pylist()
    rejects = pq.read_table(summary.version_dir / "rejects.parquet").to_pylist()
    assert {r["reason"] for r in rejects if r["sentence"] == leaked} == {
        "llm_error",
        "contamination",
    }


def failing_stage(backend: ScriptedBackend) -> Step:
    """An NGCSE stage whose backend raises (a crashed engine), not a per-request error."""
    from cseaug.pipeline.stages import make_llm_stage

    cfg = RunConfig.model_validate(
        {
            "name": "t",
            "method": "sts",
            "corpus": {"path": "c.txt"},
            "patterns": {"source": "paper"},
            "llm": {
                "backend": "openai-compatible",
                "model": "m",
                "base_url": "http://127.0.0.1:1/v1",
            },
        }
    )
    return make_llm_stage(cfg, backend)


def crash(request):
    raise RuntimeError("the engine died")


def test_a_failing_shard_still_closes_the_backend_and_every_step(
    shared_data: Path, tmp_path: Path, monkeypatch
) -> None:
    backend = ScriptedBackend(crash)
    closed: list[str] = []
    monkeypatch.setattr(
        "cseaug.pipeline.stages.make_stage", lambda cfg, served, **_: failing_stage(backend)
    )
    monkeypatch.setattr("cseaug.pipeline.mer.MERStep.close", lambda self: closed.append(self.name))
    cfg = make_config(
        shared_data,
        tmp_path,
        "http://127.0.0.1:1/v1",
        sample={"size": 20, "seed": 3},
        diagnostics={"enabled": False, "pattern_filter": "mer"},
    )
    with pytest.raises(RuntimeError, match="engine died"):
        run_build(cfg, ServedModels())  # nothing probed: the stage is the failing one
    assert backend.closed and closed == ["mer"]


def test_a_closed_run_loads_nothing_again(shared_data: Path, tmp_path: Path, server) -> None:
    cfg = make_config(shared_data, tmp_path, server.base_url, sample={"size": 20, "seed": 3})
    build = BuildRun(cfg)
    assert [s.name for s in build.other_steps()] == ["mer"]
    build.close()
    with pytest.raises(InputError, match="is closed"):
        build.view_steps()


def test_planning_off_a_terminal_says_what_it_does(
    shared_data: Path, tmp_path: Path, server, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """A plan's long steps write lines where stderr is not a terminal (here captured): reading
    and cleaning the corpus, then the other rows' steps, which wrote nothing before."""
    from cseaug import progress

    monkeypatch.delenv("CSEAUG_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.01)
    cfg = make_config(shared_data, tmp_path, server.base_url, sample={"size": 20, "seed": 3})
    with BuildRun(cfg) as build:
        plan_build(build)
    lines = capsys.readouterr().err.splitlines()
    steps = list(dict.fromkeys(line.split(": ")[0] for line in lines))
    assert steps[0] == "Cleaning wiki" and steps[-1] == "Checking the other rows of wiki", lines
    other = [line for line in lines if line.startswith("Checking the other rows of wiki: ")]
    assert re.match(r".*: 11,\d{3}/11,\d{3} rows \(100%\), \d+ s, [\d,.]+ rows/s$", other[-1])
