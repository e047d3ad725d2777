"""The LLM judge's parts: its versioned prompts, the strict reading of its answers, what the
step makes of each answer, and the config that turns it on (docs/quality.md, "The LLM judge")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from cseaug.config import LLM_METHODS, RunConfig, config_fingerprint, load_config
from cseaug.dataset.schema import rows_table
from cseaug.errors import ConfigError
from cseaug.llm.base import TRANSIENT, ChatRequest, ChatResponse, LLMBackend, ProgressCallback
from cseaug.pipeline.preflight import preflight
from cseaug.prompts import METHOD_PROMPTS, default_prompts_dir, load_prompt
from cseaug.quality.judge import (
    LLMJudge,
    VerdictError,
    judge_prompt_name,
    parse_verdict,
    prompt_version,
)
from tests.fake_openai_server import FakeOpenAIServer

DEMO = Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"
STS_VIEWS = ("positive", "intermediate", "negative")


def verdict_json(reason: str = "Fits.", **scores: Any) -> str:
    return json.dumps({"scores": scores, "reason": reason})


# --- the prompts -------------------------------------------------------------------------


@pytest.mark.parametrize("method", sorted(LLM_METHODS))
def test_each_llm_method_has_a_versioned_judge_prompt_showing_the_anchor_and_every_view(
    method: str,
) -> None:
    prompt = load_prompt(judge_prompt_name(method))
    views = {view: f"the {view} text" for view in METHOD_PROMPTS[method]}

    system, user = prompt.render(sentence="A cat sat on the mat.", views=views)

    assert (system["role"], user["role"]) == ("system", "user")
    assert prompt_version(prompt) == 1
    assert "A cat sat on the mat." in user["content"]
    for view, text in views.items():
        assert f"{view}: {text}" in user["content"]
        # the answer format names every view the parser will demand
        assert f'"{view}": <1-5>' in system["content"]


def test_the_sts_judge_prompt_states_ngcses_three_definitions() -> None:
    system = load_prompt("judge_sts").render(sentence="s", views=dict.fromkeys(STS_VIEWS, "v"))[0]
    assert "maintains the same information" in system["content"]
    assert "significantly fewer details" in system["content"]
    assert "distinct or even contradictory meaning" in system["content"]


def test_a_judge_prompt_missing_a_view_is_an_error_not_an_empty_line() -> None:
    with pytest.raises(ConfigError, match="views"):
        load_prompt("judge_nli").render(sentence="s", views={"positive": "p"})


def test_a_judge_prompt_without_a_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / "judge_ski.jinja2").write_text("{{ sentence }} {{ views.knowledge }}\n")
    with pytest.raises(ConfigError, match="declares no version"):
        prompt_version(load_prompt("judge_ski", tmp_path))


def test_methods_without_an_llm_have_no_judge_prompt() -> None:
    with pytest.raises(ConfigError, match="no LLM judge"):
        judge_prompt_name("osscse")


# --- reading the answer -------------------------------------------------------------------


def test_a_valid_answer_gives_each_views_score_and_the_reason() -> None:
    answer = '\n {"scores": {"negative": 1, "positive": 5, "intermediate": 3}, "reason": "Ok."}\n'
    verdict = parse_verdict(answer, STS_VIEWS)
    assert verdict.scores == {"positive": 5, "intermediate": 3, "negative": 1}
    assert verdict.reason == "Ok."
    assert verdict.lowest() == "negative"


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("The views look fine.", "Invalid JSON"),
        ('{"scores": {"positive": 5, "negative": 4}, "reason": "ok"', "Invalid JSON"),
        ('Here you go: {"scores": {"positive": 5, "negative": 4}, "reason": "ok"}', "Invalid JSON"),
        (
            '```json\n{"scores": {"positive": 5, "negative": 4}, "reason": "ok"}\n```',
            "Invalid JSON",
        ),
        ('{"scores": {"positive": 5, "negative": 4}, "reason": "ok"} Hope it helps!', "JSON"),
        ("[5, 4]", "Input should be an object"),
    ],
    ids=["prose", "cut-off", "text-before", "code-fence", "text-after", "not-an-object"],
)
def test_anything_but_one_json_object_is_unparseable(answer: str, problem: str) -> None:
    with pytest.raises(VerdictError, match=problem):
        parse_verdict(answer, ("positive", "negative"))


@pytest.mark.parametrize(
    ("scores", "problem"),
    [
        (
            {"positive": 0, "negative": 4},
            r"scores\.positive: Input should be greater than or equal to 1",
        ),
        (
            {"positive": 5, "negative": 6},
            r"scores\.negative: Input should be less than or equal to 5",
        ),
        ({"positive": 4.5, "negative": 4}, r"scores\.positive: Input should be a valid integer"),
        ({"positive": "5", "negative": 4}, r"scores\.positive: Input should be a valid integer"),
        ({"positive": True, "negative": 4}, r"scores\.positive: Input should be a valid integer"),
        ({"positive": 5}, r"scores name views \['positive'\], the method's are"),
        ({"positive": 5, "negative": 4, "intermediate": 3}, "scores name views"),
    ],
    ids=["below-1", "above-5", "fraction", "string", "bool", "missing-view", "extra-view"],
)
def test_scores_must_be_whole_numbers_from_1_to_5_for_exactly_the_methods_views(
    scores: dict[str, Any], problem: str
) -> None:
    with pytest.raises(VerdictError, match=problem):
        parse_verdict(verdict_json(**scores), ("positive", "negative"))


def test_an_answer_without_a_reason_or_with_other_keys_is_unparseable() -> None:
    with pytest.raises(VerdictError, match="reason: Field required"):
        parse_verdict('{"scores": {"knowledge": 4}}', ("knowledge",))
    with pytest.raises(VerdictError, match="verdict: Extra inputs are not permitted"):
        parse_verdict(
            '{"scores": {"knowledge": 4}, "reason": "r", "verdict": "keep"}', ("knowledge",)
        )


# --- the step -----------------------------------------------------------------------------


class ScriptedBackend(LLMBackend):
    """Answers each request with the response scripted for its anchor (the key's row id)."""

    name = "scripted"

    def __init__(self, answers: dict[str, ChatResponse]) -> None:
        super().__init__(model="judge", sampling={})
        self.answers = answers
        self.requests: list[ChatRequest] = []

    def _generate(
        self, requests: list[ChatRequest], progress: ProgressCallback | None
    ) -> list[ChatResponse]:
        self.requests.extend(requests)
        out = []
        for request in requests:
            scripted = self.answers[request.key.split(":")[0]]
            out.append(
                ChatResponse(
                    key=request.key,
                    text=scripted.text,
                    error=scripted.error,
                    failure=scripted.failure,
                    prompt_tokens=7,
                    completion_tokens=3,
                )
            )
        return out


def nli_rows(ids: list[str]) -> pa.Table:
    return rows_table(
        [
            {
                "id": i,
                "sentence": f"anchor {i}",
                "positive": f"pos {i}",
                "negative": f"neg {i}",
                "split": "aigen",
                "method": "nli",
            }
            for i in ids
        ]
    )


def judge_with(answers: dict[str, ChatResponse], min_score: int = 3) -> LLMJudge:
    return LLMJudge("nli", ScriptedBackend(answers), load_prompt("judge_nli"), min_score)


def test_rows_scored_below_min_score_are_rejected_with_the_scores_and_the_judges_reason() -> None:
    judge = judge_with(
        {
            "good": ChatResponse("", text=verdict_json(positive=5, negative=3)),
            "bad": ChatResponse("", text=verdict_json("Negative agrees.", positive=4, negative=2)),
        }
    )
    result = judge(nli_rows(["good", "bad"]))

    assert result.rows.column("id").to_pylist() == ["good"]
    [reject] = result.rejects.to_pylist()
    assert (reject["id"], reject["stage"], reject["reason"], reject["view"]) == (
        "bad",
        "quality",
        "judge",
        "negative",
    )
    assert json.loads(reject["detail"]) == {
        "scores": {"positive": 4, "negative": 2},
        "reason": "Negative agrees.",
        "min_score": 3,
    }
    assert result.stats["outcomes"] == {"judge": 1, "kept": 1}
    assert judge.usage()["prompt_tokens"] == 14


def test_min_score_decides_which_scores_pass() -> None:
    answers = {"row": ChatResponse("", text=verdict_json(positive=4, negative=4))}
    assert judge_with(answers, min_score=4)(nli_rows(["row"])).rows.num_rows == 1
    assert judge_with(answers, min_score=5)(nli_rows(["row"])).rows.num_rows == 0


def test_an_unparseable_answer_is_a_reject_of_its_own_not_a_crash() -> None:
    judge = judge_with({"row": ChatResponse("", text="All good!")})
    [reject] = judge(nli_rows(["row"])).rejects.to_pylist()
    assert (reject["stage"], reject["reason"], reject["raw"]) == (
        "quality",
        "judge_unparseable",
        "All good!",
    )
    assert "Invalid JSON" in json.loads(reject["detail"])["error"]


def test_a_failed_judge_request_is_a_retryable_llm_reject_like_a_failed_generation() -> None:
    failed = ChatResponse("", error="HTTP 503: busy", failure=TRANSIENT)
    [reject] = judge_with({"row": failed})(nli_rows(["row"])).rejects.to_pylist()
    assert (reject["stage"], reject["view"], reject["reason"]) == ("llm", "judge", "llm_error")
    assert json.loads(reject["detail"]) == {"error": "HTTP 503: busy", "retryable": True}


def test_the_judges_manifest_records_its_prompt_version_and_model() -> None:
    judge = judge_with({})
    manifest = judge.manifest()
    [record] = manifest["prompts"]
    assert (record["view"], record["name"], record["version"]) == ("judge", "judge_nli", 1)
    assert record["sha256"] == load_prompt("judge_nli").sha256
    assert manifest["model"]["judge"]["model"] == "judge"


# --- the config ---------------------------------------------------------------------------


def run_config(method: str = "sts", **extra: Any) -> RunConfig:
    llm = {"backend": "openai-compatible", "model": "m", "base_url": "http://127.0.0.1:8000/v1"}
    data: dict[str, Any] = {"name": "judged", "method": method, "corpus": {"path": "c.txt"}}
    if method in LLM_METHODS:
        data["llm"] = llm
    if method in ("sts", "nli"):
        data["patterns"] = {"source": "paper"}
    return RunConfig.model_validate({**data, **extra})


def test_the_judge_is_off_by_default_and_uses_the_builds_llm_when_it_names_none() -> None:
    assert run_config().judge_llm is None
    cfg = run_config(quality={"judge": {}})
    assert cfg.judge_llm == cfg.llm and cfg.quality.judge.min_score == 3


@pytest.mark.parametrize("method", ["osscse", "generate_cse"])
def test_a_judge_on_a_method_without_an_llm_is_refused(method: str) -> None:
    with pytest.raises(ValueError, match=f"method '{method}' writes its views without one"):
        run_config(method, quality={"judge": {}})


def test_a_second_in_process_vllm_engine_for_the_judge_is_refused() -> None:
    vllm = {"backend": "vllm", "model": "m"}
    with pytest.raises(ValueError, match="second vLLM engine"):
        run_config(llm=vllm, quality={"judge": {}})


def test_the_judges_model_and_min_score_are_part_of_the_fingerprint_its_timing_is_not() -> None:
    judge_llm = {"backend": "openai-compatible", "model": "j", "base_url": "http://127.0.0.1:1/v1"}
    base = config_fingerprint(run_config(quality={"judge": {"llm": judge_llm}}))

    other_model = {"judge": {"llm": {**judge_llm, "model": "k"}}}
    assert config_fingerprint(run_config(quality=other_model)) != base
    stricter = {"judge": {"llm": judge_llm, "min_score": 4}}
    assert config_fingerprint(run_config(quality=stricter)) != base
    timing_only = {
        "judge": {"llm": {**judge_llm, "circuit_breaker": None, "price": {"input_per_1m": 1}}}
    }
    assert config_fingerprint(run_config(quality=timing_only)) == base
    assert config_fingerprint(run_config()) != base


NO_JUDGE_FINGERPRINT = "5b1a8a276f5d16a0e04cd2fc9d75487035a046a25d08732ad1504e51274232f3"
"""config_fingerprint(run_config()) without a judge: the judge settings must not change it, or
every earlier build's run store is lost. (It changed twice, on purpose: when the per-row checks
came, which are on by default and change which rows a build keeps, so their ``quality``
settings are part of every fingerprint (before them: eb21dbb9..., main at 6fd056e); and when
the ``cs_<view>`` columns came, whose deciding settings (encoder, pooling, truncation, CS
sample and seed) join the fingerprint of a build that measures CS (before: d28d3f93...).)"""


def test_a_config_without_a_judge_keeps_the_fingerprint_it_had_before_the_judge_existed() -> None:
    assert config_fingerprint(run_config()) == NO_JUDGE_FINGERPRINT


def test_the_preflight_names_the_judges_missing_key_and_missing_prompt(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    for template in default_prompts_dir().glob("sts_*.jinja2"):
        shutil.copy(template, prompts)
    with FakeOpenAIServer() as server:
        build_llm = [
            "llm.backend=openai-compatible",
            f"llm.base_url={server.base_url}",
            "llm.model=fake",
            f"output.root={tmp_path / 'storage'}",
        ]
        unset_key = "quality.judge={llm: {backend: openai, model: m, api_key_env: CSEAUG_UNSET_K}}"
        problems = preflight(load_config(DEMO, [*build_llm, unset_key])).problems
        assert len(problems) == 1 and problems[0].startswith("quality.judge.llm: ")
        assert "CSEAUG_UNSET_K" in problems[0]

        own_prompts = [*build_llm, "quality.judge={}", f"generation.prompts_dir={prompts}"]
        [problem] = preflight(load_config(DEMO, own_prompts)).problems
        assert "prompt template 'judge_sts' not found" in problem
