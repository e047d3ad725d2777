"""A build with the LLM judge, against the loopback fake server (tests/fake_openai_server.py):
the same server writes the views (model ``fake``) and judges them (model ``fake-model``),
scripted per anchor. What the judge rejects, what a rerun sends, what the dry run counts,
and that a build without a judge is the build it was (docs/quality.md, "The LLM judge")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from cseaug.config import RunConfig
from cseaug.errors import PublishGateError
from cseaug.pipeline.dry_run import estimate_build
from cseaug.pipeline.local import run_build
from cseaug.pipeline.publish import BuildSummary
from tests.fake_openai_server import Action, FakeOpenAIServer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SENTENCES = (REPO / "examples" / "demo_corpus.txt").read_text(encoding="utf-8").splitlines()[:12]
VIEWS = ("positive", "intermediate", "negative")
JUDGE_MODEL = "fake-model"
LOW = frozenset(SENTENCES[:3])
"""Anchors whose intermediate the judge scores 2 (below the default min_score 3)."""
UNREADABLE = SENTENCES[3]
"""The anchor whose judge answer is prose, not JSON."""


def judge_policy(body: dict) -> Action:
    """Generation (model ``fake``) gets the default echo; the judge scores by anchor."""
    if body["model"] != JUDGE_MODEL:
        return Action.ok()
    first_line = body["messages"][-1]["content"].splitlines()[0]
    anchor = first_line.removeprefix("Source sentence: ")
    if anchor == UNREADABLE:
        return Action.answer("These look good to me.")
    scores = {"positive": 5, "intermediate": 2 if anchor in LOW else 4, "negative": 5}
    return Action.answer(json.dumps({"scores": scores, "reason": "scripted"}))


def config(root: Path, base_url: str, cache: Path, judge: dict[str, Any] | None) -> RunConfig:
    corpus = root.parent / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    llm = {"backend": "openai-compatible", "base_url": base_url, "model": "fake"}
    data: dict[str, Any] = {
        "name": "judged",
        "method": "sts",
        "corpus": {"path": str(corpus)},
        "sample": {"size": len(SENTENCES), "include_other": False},
        "patterns": {"source": "paper"},
        "llm": llm,
        "output": {"root": str(root)},
        "diagnostics": {"enabled": False},
        "publish": {"min_pattern_share": 0},  # the fake answers are not graded
        "execution": {"cache_path": str(cache)},
    }
    if judge is not None:
        data["quality"] = {"judge": judge}
    return RunConfig.model_validate(data)


def judge_on(base_url: str) -> dict[str, Any]:
    return {"llm": {"backend": "openai-compatible", "base_url": base_url, "model": JUDGE_MODEL}}


def rows_and_rejects(summary: BuildSummary) -> tuple[list[dict], list[dict]]:
    data = sorted(summary.version_dir.glob("data/*.parquet"))
    rows = [row for path in data for row in pq.read_table(path).to_pylist()]
    return rows, pq.read_table(summary.version_dir / "rejects.parquet").to_pylist()


def manifest(summary: BuildSummary) -> dict[str, Any]:
    return json.loads((summary.version_dir / "manifest.json").read_text(encoding="utf-8"))


def test_the_judge_rejects_low_scored_rows_and_a_rerun_takes_its_answers_from_the_cache(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "llm.sqlite"
    with FakeOpenAIServer(policy=judge_policy) as server:
        first = run_build(config(tmp_path / "a", server.base_url, cache, judge_on(server.base_url)))
        sent = server.state.total

        rows, rejects = rows_and_rejects(first)
        judged = [r for r in rejects if r["stage"] == "quality"]
        assert sorted(r["sentence"] for r in rows) == sorted(set(SENTENCES) - LOW - {UNREADABLE})
        low = [r for r in judged if r["reason"] == "judge"]
        assert sorted(r["sentence"] for r in low) == sorted(LOW)
        assert {r["view"] for r in low} == {"intermediate"}
        assert json.loads(low[0]["detail"]) == {
            "scores": {"positive": 5, "intermediate": 2, "negative": 5},
            "reason": "scripted",
            "min_score": 3,
        }
        [unreadable] = [r for r in judged if r["reason"] == "judge_unparseable"]
        assert (unreadable["sentence"], unreadable["raw"]) == (UNREADABLE, "These look good to me.")

        # one judge request per generated row, counted apart from generation's requests
        usage = manifest(first)["token_usage"]
        assert usage["this_run"]["requests"] == len(SENTENCES) * len(VIEWS)
        assert usage["judge"]["this_run"]["requests"] == len(SENTENCES)
        assert usage["judge"]["build"]["answers"] == len(SENTENCES)
        assert usage["build"]["answers"] == len(SENTENCES) * len(VIEWS)
        assert sent == len(SENTENCES) * (len(VIEWS) + 1)
        judge_prompt = [p for p in manifest(first)["prompts"] if p["view"] == "judge"]
        assert [(p["name"], p["version"]) for p in judge_prompt] == [("judge_sts", 1)]
        assert manifest(first)["model"]["judge"]["model"] == JUDGE_MODEL

        # the same build in a new output root (a new run store), the same response cache
        again = run_build(config(tmp_path / "b", server.base_url, cache, judge_on(server.base_url)))
        assert server.state.total == sent  # nothing sent: views and verdicts from the cache
        judge_usage = manifest(again)["token_usage"]["judge"]["this_run"]
        assert (judge_usage["requests"], judge_usage["cached"]) == (0, len(SENTENCES))
        assert rows_and_rejects(again) == (rows, rejects)


def test_the_dry_run_counts_and_prices_the_judges_requests(tmp_path: Path) -> None:
    cache = tmp_path / "llm.sqlite"
    with FakeOpenAIServer(policy=judge_policy) as server:
        priced_judge = {
            "llm": {"backend": "openai", "model": "gpt-4o-mini", "max_tokens": 50},
            "min_score": 4,
        }
        cfg = config(tmp_path / "out", server.base_url, cache, priced_judge)
        found = estimate_build(cfg)
        assert found["requests"] == len(SENTENCES) * len(VIEWS)
        assert (found["judge_requests"], found["judge_to_send"]) == (len(SENTENCES),) * 2
        assert found["judge_max_completion_tokens"] == len(SENTENCES) * 50
        assert found["judge_prompt_tokens"] > 0
        assert "judge_cost_openai_api" in found and "cost_openai_api" not in found
        assert server.state.total == 0  # a dry run sends nothing

        judged = config(tmp_path / "out", server.base_url, cache, judge_on(server.base_url))
        run_build(judged)
        found = estimate_build(judged)
        assert (found["judge_cached"], found["judge_to_send"]) == (len(SENTENCES), 0)

        assert not any(
            key.startswith("judge_")
            for key in estimate_build(config(tmp_path / "out", server.base_url, cache, None))
        )


def test_without_a_judge_no_row_is_judged_and_nothing_more_is_sent(tmp_path: Path) -> None:
    with FakeOpenAIServer(policy=judge_policy) as server:
        summary = run_build(config(tmp_path / "out", server.base_url, tmp_path / "c.sqlite", None))
        rows, rejects = rows_and_rejects(summary)
        assert sorted(r["sentence"] for r in rows) == sorted(SENTENCES)
        assert not [r for r in rejects if r["stage"] == "quality"]
        assert server.state.total == len(SENTENCES) * len(VIEWS)
        assert "judge" not in manifest(summary)["token_usage"]
        assert summary.judge_usage == {}


def test_a_failed_judge_request_is_sent_again_by_a_rerun_and_nothing_else_is(
    tmp_path: Path,
) -> None:
    busy = SENTENCES[5]

    def flaky_judge(body: dict) -> Action:
        content = body["messages"][-1]["content"]
        if body["model"] == JUDGE_MODEL and content.startswith(f"Source sentence: {busy}\n"):
            return Action.status_code(503)
        return judge_policy(body)

    with FakeOpenAIServer(policy=flaky_judge) as server:
        judge = judge_on(server.base_url)
        judge["llm"]["max_retries"] = 0
        cfg = config(tmp_path / "out", server.base_url, tmp_path / "c.sqlite", judge)
        rows, rejects = rows_and_rejects(run_build(cfg))
        [failed] = [r for r in rejects if r["sentence"] == busy]
        assert (failed["stage"], failed["view"], failed["reason"]) == ("llm", "judge", "llm_error")
        assert json.loads(failed["detail"])["retryable"] is True
        assert busy not in {r["sentence"] for r in rows}
        sent = server.state.total

        server.state.policy = judge_policy  # the judge's endpoint recovers
        rows, rejects = rows_and_rejects(run_build(cfg))
        assert server.state.total == sent + 1  # only the failed verdict is asked again
        assert busy in {r["sentence"] for r in rows}
        assert not [r for r in rejects if r["stage"] == "llm"]


def test_a_judge_that_rejects_every_row_stops_the_build_from_publishing(tmp_path: Path) -> None:
    def harsh_judge(body: dict) -> Action:
        if body["model"] != JUDGE_MODEL:
            return Action.ok()
        scores = dict.fromkeys(VIEWS, 1)
        return Action.answer(json.dumps({"scores": scores, "reason": "off-definition"}))

    with FakeOpenAIServer(policy=harsh_judge) as server:
        cfg = config(
            tmp_path / "out", server.base_url, tmp_path / "c.sqlite", judge_on(server.base_url)
        )
        with pytest.raises(PublishGateError, match=f"their rejects: judge {len(SENTENCES)}"):
            run_build(cfg)
        assert not (tmp_path / "out" / "datasets" / "judged").exists()
