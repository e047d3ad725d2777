"""Builds against a server that answers every request, but out of the order it was asked for
(issue 20, item 2: the quality gate).

The loopback server answers each NGCSE prompt from human-written data: the STS Benchmark /
STS12 graded triples (an anchor with a pair of score > 4, one of 1-4 and one < 1) and the
SNLI triples, built as ``benchmarks/measure_pattern_share.py`` builds them, every one of
them, none chosen. A healthy server answers each level with its own sentence; a misbehaving
one exchanges or rotates the levels, or answers one sentence for all. The gate's threshold
is the default (``publish.min_pattern_share``, measured on the whole of these data sets),
never set here except to switch the gate off as a user would.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.config import RunConfig
from cseaug.dataset.versions import latest_version, list_versions
from cseaug.errors import PublishGateError
from cseaug.pipeline.plan import plan_build
from cseaug.pipeline.publish import BuildSummary, publish_build
from cseaug.pipeline.run import BuildRun
from cseaug.pipeline.shard import generate_shard
from tests.fake_openai_server import Action, FakeOpenAIServer
from tests.reliability.attack_tools import REPO, RecordingProxy, build_environment, run_cseaug

sys.path.insert(0, str(REPO / "benchmarks"))
from measure_pattern_share import nli_triples, sts_triples

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

LEVEL_PHRASES = {
    "semantically similar to the user's input sentence": "positive",
    "omitting certain details": "intermediate",
    "distinct or even contradictory meaning": "negative",
    "stands in an entailment relationship": "positive",
    "presents a contradiction": "negative",
}
"""Which view a prompt asks for, by its system message (prompts/sts_*.jinja2, nli_*.jinja2)."""

Answers = dict[str, dict[str, str]]
"""anchor -> view -> the answer a healthy model gives."""
Misbehaviour = Callable[[dict[str, str], str], str]
"""(the anchor's healthy answers, the view asked for) -> the answer sent."""

SWAP = {"positive": "negative", "negative": "positive"}
ROTATE = {"positive": "intermediate", "intermediate": "negative", "negative": "positive"}


def healthy(answers: dict[str, str], view: str) -> str:
    return answers[view]


def swapped(answers: dict[str, str], view: str) -> str:
    return answers[SWAP.get(view, view)]


def rotated(answers: dict[str, str], view: str) -> str:
    return answers[ROTATE[view]]


def one_paraphrase(answers: dict[str, str], view: str) -> str:
    return answers["positive"]


def answering(data: Answers, behaviour: Misbehaviour) -> Callable[[dict], Action]:
    """A server policy: the view the prompt asks for, answered as ``behaviour`` says."""

    def policy(body: dict[str, Any]) -> Action:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        (view,) = [v for phrase, v in LEVEL_PHRASES.items() if phrase in system]
        return Action.answer(behaviour(data[" ".join(user.split())], view))

    return policy


@pytest.fixture(scope="module")
def sts_answers(shared_data: Path) -> Answers:
    """Every STS graded triple with all three levels (44 anchors)."""
    rows = sts_triples(shared_data).to_pylist()
    views = ("positive", "intermediate", "negative")
    return {r["sentence"]: {v: r[v] for v in views} for r in rows if all(r[v] for v in views)}


@pytest.fixture(scope="module")
def nli_answers(shared_data: Path) -> Answers:
    """The first 40 SNLI triples with distinct premises."""
    answers: Answers = {}
    for r in nli_triples(shared_data).to_pylist():
        answers.setdefault(r["sentence"], {"positive": r["positive"], "negative": r["negative"]})
        if len(answers) == 40:
            break
    return answers


def config(root: Path, base_url: str, method: str, answers: Answers, **settings: Any) -> RunConfig:
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(answers) + "\n", encoding="utf-8")
    data: dict[str, Any] = {
        "name": f"gate-{method}",
        "method": method,
        "corpus": {"path": str(corpus)},
        "sample": {"size": len(answers)},
        "patterns": {"source": "paper"},
        "llm": {"backend": "openai-compatible", "base_url": base_url, "model": "fake"},
        "output": {"root": str(root)},
    }
    for dotted, value in settings.items():
        section, key = dotted.split("__")
        data.setdefault(section, {})[key] = value
    return RunConfig.model_validate(data)


def build(cfg: RunConfig) -> BuildSummary:
    with BuildRun(cfg) as run:
        plan = plan_build(run)
        outcomes = [generate_shard(run, index) for index in range(plan.shards)]
        return publish_build(run, outcomes)


@dataclass
class Stop:
    """A build stopped at the quality gate: its config, the error, the versions of its dataset
    after it, the rows it listed as out of order."""

    cfg: RunConfig
    error: PublishGateError
    versions: list[str]
    failures: list[dict[str, Any]]


def stop_at_gate(cfg: RunConfig) -> Stop:
    """Build ``cfg``, which must stop at the quality gate; its output root holds no list of
    failures before."""
    with pytest.raises(PublishGateError) as stopped:
        build(cfg)
    root = Path(cfg.output.root)
    (listed,) = root.rglob("pattern_order_failures.jsonl")
    failures = [json.loads(line) for line in listed.read_text().splitlines()]
    return Stop(cfg, stopped.value, list_versions(root, cfg.dataset_name), failures)


def snapshot(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@dataclass
class SwappedHistory:
    """What one output root saw of an STS build against a server that exchanges positive and
    negative (:func:`swapped_history`); the tests below each assert on their part of it."""

    stop: Stop
    sent: int
    """Requests the stopped build sent; each ``sent_*`` is the server's total after a build."""
    anyway: BuildSummary
    sent_anyway: int
    published: dict[Path, bytes]
    """The files of the version published anyway, as published."""
    rebuild: Stop
    sent_rebuilding: int
    published_after_rebuild: dict[Path, bytes]
    fixed: BuildSummary
    sent_fixed: int


@pytest.fixture(scope="module")
def swapped_history(
    tmp_path_factory: pytest.TempPathFactory, sts_answers: Answers
) -> SwappedHistory:
    """An STS build against a swapping server, four builds in turn in one output root (each
    loads the gate's encoder: built once, asserted on by three tests): it stops at the gate;
    ``publish.min_pattern_share=0`` publishes the same answers anyway (v0001, gate off); the
    config built again with the default gate stops; a fixed model (a new
    ``llm.model_revision``, the server now healthy) publishes v0002."""
    root = tmp_path_factory.mktemp("swapped")
    with FakeOpenAIServer(policy=answering(sts_answers, swapped)) as server:
        cfg = config(root, server.base_url, "sts", sts_answers)
        stop = stop_at_gate(cfg)
        sent = server.state.total
        gate_off = cfg.publish.model_copy(update={"min_pattern_share": 0})
        anyway = build(cfg.model_copy(update={"publish": gate_off}))
        sent_anyway = server.state.total
        published = snapshot(anyway.version_dir)
        for listed in root.rglob("pattern_order_failures.jsonl"):
            listed.unlink()  # the stopped build's list: the rebuild writes its own
        rebuild = stop_at_gate(cfg)
        sent_rebuilding = server.state.total
        published_after_rebuild = snapshot(anyway.version_dir)

        server.state.policy = answering(sts_answers, healthy)
        revised = cfg.llm.model_copy(update={"model_revision": "fixed"})
        fixed = build(cfg.model_copy(update={"llm": revised}))
        sent_fixed = server.state.total
    return SwappedHistory(
        stop, sent, anyway, sent_anyway, published, rebuild, sent_rebuilding,
        published_after_rebuild, fixed, sent_fixed,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("method", "behaviour"),
    [
        ("sts", swapped),
        ("sts", rotated),
        ("nli", swapped),
    ],
)
def test_a_server_answering_out_of_order_stops_at_the_quality_gate(
    tmp_path: Path, request: pytest.FixtureRequest, method: str, behaviour: Misbehaviour
) -> None:
    """Proves 20.2: positive and negative exchanged, levels rotated: each build stops at the
    gate with the share below the default threshold, publishes nothing, and lists every row
    out of order. (One paraphrase for every level never reaches this gate: the per-row checks
    reject each such row as ``identical_views``, see below.) STS swapped is the first build of
    :func:`swapped_history`."""
    if (method, behaviour) == ("sts", swapped):
        stop = request.getfixturevalue("swapped_history").stop
    else:
        answers = request.getfixturevalue(f"{method}_answers")
        with FakeOpenAIServer(policy=answering(answers, behaviour)) as server:
            stop = stop_at_gate(config(tmp_path, server.base_url, method, answers))
    message = str(stop.error)
    assert "nothing published" in message and "publish.min_pattern_share 70%" in message
    assert stop.versions == []
    ordered, rows = map(int, re.search(r"(\d+) of (\d+) generated rows", message).groups())
    assert rows - ordered == len(stop.failures)
    assert ordered / rows < stop.cfg.publish.min_pattern_share
    # what the refused build made, for its summary: the rows the gate measured, the requests
    spent = stop.error.summary
    assert spent.aigen == rows and spent.token_usage["requests"] >= rows
    assert {"plan", "generate", "publish"} <= set(spent.timings), spent


def test_turning_the_diagnostics_off_does_not_turn_the_gate_off(
    tmp_path: Path, sts_answers: Answers
) -> None:
    """Proves 20.2 has no back door: with ``diagnostics.enabled: false`` a swapping server's
    build still stops at the gate (the encoder is loaded for the gate alone; no diagnostics
    are written), and only ``publish.min_pattern_share: 0`` lets it publish, recorded as
    unchecked."""
    with FakeOpenAIServer(policy=answering(sts_answers, swapped)) as server:
        cfg = config(tmp_path, server.base_url, "sts", sts_answers, diagnostics__enabled=False)
        with pytest.raises(PublishGateError, match="nothing published"):
            build(cfg)
        assert list_versions(tmp_path, cfg.dataset_name) == []
        anyway = cfg.model_copy(
            update={"publish": cfg.publish.model_copy(update={"min_pattern_share": 0})}
        )
        summary = build(anyway)
    gate = json.loads((summary.version_dir / "manifest.json").read_text())["quality_gate"]
    assert gate == {
        "check": "pattern_order",
        "checked": False,
        "reason": "publish.min_pattern_share is 0 and diagnostics.enabled is false",
    }
    assert not (summary.version_dir / "diagnostics").exists()


def refusing(answers: dict[str, str], view: str) -> str:
    return "I'm sorry, but I cannot help with that."


@pytest.mark.parametrize(
    ("method", "behaviour", "reason"),
    [
        ("sts", refusing, "refusal"),
        ("sts", one_paraphrase, "identical_views"),
        ("nli", one_paraphrase, "identical_views"),
    ],
)
def test_when_every_answer_is_rejected_the_generated_share_gate_speaks_first(
    tmp_path: Path,
    request: pytest.FixtureRequest,
    method: str,
    behaviour: Misbehaviour,
    reason: str,
) -> None:
    """Proves 20.2 beside the per-row rejects: a server whose every answer is rejected (a
    refusal by answer cleaning, one paraphrase for every level by the per-row checks) leaves
    no row to order; the generated-share gate stops the build with its own message (the
    share, the rejects' reason) and the quality gate is never reached."""
    answers = request.getfixturevalue(f"{method}_answers")
    with FakeOpenAIServer(policy=answering(answers, behaviour)) as server:
        cfg = config(tmp_path, server.base_url, method, answers)
        with pytest.raises(PublishGateError) as stopped:
            build(cfg)
    message = str(stopped.value)
    assert "generated views for 0 of" in message and reason in message
    assert "publish.min_generated_share=0" in message and "pattern" not in message
    assert not list(tmp_path.rglob("pattern_order_failures.jsonl"))


def test_rows_the_pattern_filter_dropped_count_as_out_of_order(
    tmp_path: Path, sts_answers: Answers
) -> None:
    """Proves 20.2 with the opt-in `diagnostics.pattern_filter`: it drops the rows a swapping
    server sent out of order, and the gate counts them, so the filter cannot leave a version
    of `other` rows that passes; the examples show what the filter measured."""
    with FakeOpenAIServer(policy=answering(sts_answers, swapped)) as server:
        cfg = config(
            tmp_path, server.base_url, "sts", sts_answers, diagnostics__pattern_filter="cs"
        )
        with pytest.raises(PublishGateError) as stopped:
            build(cfg)
    message = str(stopped.value)
    dropped = re.search(r"and none of the (\d+) the pattern filter dropped", message)
    assert dropped and int(dropped.group(1)) > 0
    assert "dropped by the pattern filter (cs: positive" in message
    assert list_versions(tmp_path, cfg.dataset_name) == []


@dataclass
class Published:
    root: Path
    cfg: RunConfig
    summary: BuildSummary


@pytest.fixture(scope="module")
def healthy_version(tmp_path_factory: pytest.TempPathFactory, sts_answers: Answers) -> Published:
    """v0001 of an STS build against a healthy server (in ``<tmp>/storage``), built once: the
    version the healthy-server test checks, and the good version the `cseaug build` test
    starts from (whose stopped build leaves it as it is, which that test asserts)."""
    root = tmp_path_factory.mktemp("healthy") / "storage"
    root.mkdir()
    with FakeOpenAIServer(policy=answering(sts_answers, healthy)) as server:
        cfg = config(root, server.base_url, "sts", sts_answers)
        return Published(root, cfg, build(cfg))


def test_a_healthy_server_publishes_and_the_version_states_what_was_checked(
    healthy_version: Published,
) -> None:
    """Proves 20.2: human-written graded answers pass the default gate; the manifest, the card
    and `cseaug show` carry the gate's figures (what was checked, the share that passed)."""
    summary, root = healthy_version.summary, healthy_version.root
    manifest = json.loads((summary.version_dir / "manifest.json").read_text())
    gate = manifest["quality_gate"]
    assert gate["checked"] and gate["passed"] and gate["rows"] == summary.aigen
    assert gate["order"] == "positive > intermediate > negative"
    assert gate["share"] >= gate["min_pattern_share"] == 0.7
    line = f"{gate['ordered_rows']} of {gate['rows']} generated rows ({gate['share']:.1%}"
    card = (summary.version_dir / "README.md").read_text()
    assert "- Quality gate: pattern order positive > intermediate > negative" in card
    assert line in card and "minimum 70%: passed" in card
    shown = CliRunner().invoke(app, ["show", "gate-sts/latest", "--root", str(root)])
    assert shown.exit_code == 0, shown.output
    assert "quality gate" in shown.output and line in " ".join(shown.output.split())


def test_after_the_gate_a_fixed_model_resumes_and_publishing_anyway_sends_nothing(
    swapped_history: SwappedHistory,
) -> None:
    """Proves 20.2: after a stop at the gate, `publish.min_pattern_share=0` publishes the same
    answers from the response cache (no request sent again) and the version says the gate
    was off; a fixed model (new `llm.model_revision`) generates anew and passes."""
    history = swapped_history
    assert history.sent_anyway == history.sent
    anyway = history.anyway.version_dir
    gate = json.loads((anyway / "manifest.json").read_text())["quality_gate"]
    assert gate["share"] < 0.7 and "gate off" in (anyway / "README.md").read_text()

    # between the two: the rebuild of test_a_rebuild_of_an_old_version_..., which sends nothing
    assert history.sent_fixed == 2 * history.sent
    manifest = json.loads((history.fixed.version_dir / "manifest.json").read_text())
    assert manifest["quality_gate"]["passed"] and history.fixed.version == "v0002"


def test_a_rebuild_of_an_old_version_says_which_rows_the_gate_now_rejects_and_changes_nothing(
    swapped_history: SwappedHistory,
) -> None:
    """Proves 20.2: a version published without the gate (here: with it off) from a swapping
    server stays as it is, byte for byte, when its config is built again with the default;
    the rebuild stops at the gate and lists every row it now rejects, sending nothing."""
    history = swapped_history
    rebuild = history.rebuild
    assert history.sent_rebuilding == history.sent_anyway
    failures = rebuild.failures
    old = history.anyway.version_dir
    gate = json.loads((old / "manifest.json").read_text())["quality_gate"]
    assert len(failures) == gate["rows"] - gate["ordered_rows"]
    assert str(len(failures)) in str(rebuild.error)
    assert {"id", "sentence", "positive", "negative", "cs", "mer"} <= set(failures[0])
    assert history.published_after_rebuild == history.published
    assert rebuild.versions == ["v0001"]


@pytest.mark.prefect
def test_cseaug_build_against_a_swapping_server_exits_at_the_gate_and_latest_stays(
    tmp_path: Path, sts_answers: Answers, healthy_version: Published, prefect_harness: None
) -> None:
    """Proves 20.2 as a user runs it: after a good version, `cseaug build` against a server
    that exchanges positive and negative exits with status 2; the message shows the share,
    five example rows and both remedies; no version is published and `latest` stays.

    The command reports to the suite's Prefect server (``PREFECT_API_URL``, as a user with a
    running server sets it): this test is about the gate, not the temporary server, whose
    start tests/reliability/test_stopping.py and tests/flows/test_temporary_server.py cover."""
    from prefect.settings import PREFECT_API_URL

    root, cfg = healthy_version.root, healthy_version.cfg
    assert latest_version(root, cfg.dataset_name) == "v0001"
    config_file = tmp_path / "build.yaml"
    with (
        FakeOpenAIServer(policy=answering(sts_answers, swapped)) as server,
        RecordingProxy() as proxy,
    ):
        data = cfg.model_dump(mode="json", exclude_unset=True)
        data["llm"] = {**data["llm"], "base_url": server.base_url, "model": "fake-model"}
        config_file.write_text(json.dumps(data), encoding="utf-8")
        env = build_environment(
            tmp_path / "prefect-home", proxy, COLUMNS="200", PREFECT_API_URL=PREFECT_API_URL.value()
        )
        done = run_cseaug(["build", "--config", str(config_file)], env, tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    # the reason once (Prefect's failure lines leave it out), after the build's summary
    assert output.count("keep the order positive > intermediate > negative") == 1, output
    summary = done.stderr[done.stderr.index("build summary") : done.stderr.index("error: ")]
    assert "none: nothing published" in summary and re.search(r"rows +│ \d+ \(\d+ aigen", summary)
    assert re.search(r"│ +│ \w+/\w+: \d+", summary) and "requests sent" in summary, summary
    assert "generation" in summary and "publishing" in summary, summary
    error = done.stderr[done.stderr.index("error: ") :]
    assert "nothing published" in error and "below publish.min_pattern_share 70%" in error
    examples = [
        line
        for line in error.splitlines()
        if line.lstrip()[:3] in {"1. ", "2. ", "3. ", "4. ", "5. "}
    ]
    assert len(examples) == 5 and all("positive" in line and "(cs " in line for line in examples)
    assert "`--set publish.min_pattern_share=0`" in error and "llm.model_revision" in error
    assert "pattern_order_failures.jsonl" in error
    assert list_versions(root, cfg.dataset_name) == ["v0001"]
    assert latest_version(root, cfg.dataset_name) == "v0001"
