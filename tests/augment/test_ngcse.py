"""NGCSE pattern simulation stage with a scripted backend and real anchors from shared/data."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from cseaug.augment.ngcse import PatternSimulationStage
from cseaug.config import CleaningConfig, GenerationConfig, PatternConfig
from cseaug.dataset.schema import CANONICAL_SCHEMA, REJECTS_SCHEMA, row_id, rows_table
from cseaug.errors import ConfigError, InputError
from cseaug.llm.base import ChatRequest
from cseaug.patterns import load_examples
from cseaug.prompts import load_method_prompts
from tests.augment.scripted_backend import ScriptedBackend

# which prompt a request comes from, told by its system message
MARKERS = {
    "semantically similar to the user's input": "positive",
    "omitting certain details": "intermediate",
    "distinct or even contradictory meaning": "negative",
    "stands in an entailment relationship": "positive",
    "presents a contradiction": "negative",
}


def view_of(request: ChatRequest) -> str:
    system = request.messages[0]["content"]
    return next(view for marker, view in MARKERS.items() if marker in system)


def answer(request: ChatRequest) -> str:
    """Labelled answers, as chat models give them, built from the user's sentence."""
    sentence = request.messages[-1]["content"]
    words = sentence.rstrip(".").split()
    view = view_of(request)
    if view == "positive":
        return f'Sentence 2: "In other words, {sentence}"'
    if view == "intermediate":
        return "**Revised sentence:** " + " ".join(words[: max(3, len(words) // 2)]) + "."
    return "Hypothesis: It is not true that " + sentence


@pytest.fixture(scope="module")
def anchors(shared_data: Path) -> pa.Table:
    lines = (
        (shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt")
        .read_text(encoding="utf-8")
        .splitlines()
    )
    sentences = [s for s in lines[2:12] if len(s.split()) >= 8][:4]
    return rows_table({"id": row_id("wiki", s), "sentence": s, "split": "aigen"} for s in sentences)


def make_stage(
    method: str, backend: ScriptedBackend, derive_from: str = "input", source: str = "paper"
) -> PatternSimulationStage:
    return PatternSimulationStage(
        method,
        backend,
        load_examples(PatternConfig(source=source), method),
        load_method_prompts(method),
        CleaningConfig(),
        GenerationConfig(derive_from=derive_from),
    )


def test_sts_from_input_one_round_for_the_shard(anchors: pa.Table) -> None:
    backend = ScriptedBackend(answer)
    result = make_stage("sts", backend)(anchors)
    assert len(backend.calls) == 1
    requests = backend.calls[0]
    assert len(requests) == 3 * anchors.num_rows
    ids = anchors.column("id").to_pylist()
    assert [r.key for r in requests[:3]] == [
        f"{ids[0]}:positive",
        f"{ids[0]}:intermediate",
        f"{ids[0]}:negative",
    ]
    sentences = anchors.column("sentence").to_pylist()
    assert [r.messages[1]["content"] for r in requests] == [s for s in sentences for _ in range(3)]
    assert (
        "Shevaun Pennington" in requests[1].messages[0]["content"]
    )  # paper's intermediate examples

    rows = result.rows
    assert rows.schema.equals(CANONICAL_SCHEMA)
    assert rows.num_rows == anchors.num_rows
    first = rows.slice(0, 1).to_pylist()[0]
    assert first["positive"] == f"In other words, {sentences[0]}"
    assert first["negative"] == f"It is not true that {sentences[0]}"
    assert first["intermediate"].endswith(".") and not first["intermediate"].startswith("**")
    assert (
        first["method"],
        first["split"],
        first["positive_method"],
        first["negative_method"],
    ) == ("sts", "aigen", "llm", "llm")
    assert first["knowledge"] is None
    assert result.rejects.num_rows == 0
    assert result.stats["views"] == {v: {"ok": 4} for v in ("intermediate", "negative", "positive")}
    assert (result.stats["rows_in"], result.stats["rows_out"], result.stats["requests"]) == (
        4,
        4,
        12,
    )
    assert backend.usage.requests == 12


def test_sts_from_positive_asks_twice_with_the_cleaned_positive(anchors: pa.Table) -> None:
    backend = ScriptedBackend(answer)
    result = make_stage("sts", backend, derive_from="positive")(anchors)
    assert [len(call) for call in backend.calls] == [4, 8]
    assert {view_of(r) for r in backend.calls[0]} == {"positive"}
    positives = dict(
        zip(
            result.rows.column("id").to_pylist(),
            result.rows.column("positive").to_pylist(),
            strict=True,
        )
    )
    for request in backend.calls[1]:
        anchor_id, view = request.key.split(":")
        assert view in ("intermediate", "negative")
        assert (
            request.messages[1]["content"] == positives[anchor_id]
        )  # cleaned: no "Sentence 2:", no quotes
    first = result.rows.slice(0, 1).to_pylist()[0]
    assert first["negative"] == f"It is not true that {first['positive']}"
    assert result.stats["derive_from"] == "positive"


def failing_answer(request: ChatRequest) -> str | Exception:
    sentence = request.messages[-1]["content"]
    view = view_of(request)
    if "It was into this social setting" in sentence:
        if view == "negative":
            return "I'm sorry, but I cannot generate a contradiction for this request."
        if view == "intermediate":
            return f"Sentence 2: {sentence}"
    if "The compound of philosophical radicalism" in sentence and view == "positive":
        return TimeoutError("read timed out")
    return answer(request)


@pytest.mark.parametrize("derive_from", ["input", "positive"])
def test_failed_views_go_to_rejects_and_drop_their_row(anchors: pa.Table, derive_from: str) -> None:
    backend = ScriptedBackend(failing_answer)
    result = make_stage("sts", backend, derive_from=derive_from)(anchors)
    sentences = anchors.column("sentence").to_pylist()
    kept = result.rows.column("sentence").to_pylist()
    assert not any(s.startswith(("The compound", "It was into")) for s in kept)
    assert len(kept) == anchors.num_rows - 2
    rejects = result.rejects
    assert rejects.schema.equals(REJECTS_SCHEMA)
    by_view = {(r["view"], r["reason"]): r for r in rejects.to_pylist()}
    assert set(by_view) == {
        ("positive", "llm_error"),
        ("intermediate", "identical_to_input"),
        ("negative", "refusal"),
    }
    error = by_view[("positive", "llm_error")]
    assert error["stage"] == "llm"
    assert error["raw"] is None
    assert json.loads(error["detail"]) == {"error": "TimeoutError: read timed out"}
    refusal = by_view[("negative", "refusal")]
    assert refusal["raw"].startswith("I'm sorry")
    assert refusal["sentence"] == sentences[1]
    if derive_from == "positive":
        # no second-round request for a row whose positive failed; the input is recorded
        assert all("The compound" not in r.messages[1]["content"] for r in backend.calls[1])
        assert "input" in json.loads(refusal["detail"])
    # every dropped anchor is in the rejects
    dropped = set(anchors.column("id").to_pylist()) - set(result.rows.column("id").to_pylist())
    assert dropped <= set(rejects.column("id").to_pylist())
    asked = 3 if derive_from == "input" else 2  # from positives: not for the failed positive
    assert result.stats["views"]["negative"] == {"ok": asked, "refusal": 1}


def test_nli_writes_entailment_and_contradiction(anchors: pa.Table, shared_data: Path) -> None:
    backend = ScriptedBackend(answer)
    stage = PatternSimulationStage(
        "nli",
        backend,
        load_examples(
            PatternConfig(
                source="nli_csv", path=str(shared_data / "nli" / "nli_triples_snli_devtest.csv")
            ),
            "nli",
        ),
        load_method_prompts("nli"),
        CleaningConfig(),
        GenerationConfig(),
    )
    result = stage(anchors)
    assert len(backend.calls[0]) == 2 * anchors.num_rows
    row = result.rows.slice(0, 1).to_pylist()[0]
    assert row["method"] == "nli"
    assert row["intermediate"] is None
    assert row["positive"].startswith("In other words, ")
    assert row["negative"].startswith("It is not true that ")
    system = backend.calls[0][0].messages[0]["content"]
    assert system.count("- Example ") == 3 and " ." in system  # SNLI's tokenized examples
    stage.close()
    assert backend.closed


def test_construction_and_input_errors(anchors: pa.Table) -> None:
    backend = ScriptedBackend(answer)
    with pytest.raises(ConfigError, match="NLI patterns but the method is 'sts'"):
        PatternSimulationStage(
            "sts",
            backend,
            load_examples(PatternConfig(source="paper"), "nli"),
            load_method_prompts("sts"),
            CleaningConfig(),
            GenerationConfig(),
        )
    with pytest.raises(ConfigError, match=r"view\(s\) \['intermediate'\]"):
        PatternSimulationStage(
            "sts",
            backend,
            load_examples(PatternConfig(source="paper"), "sts"),
            load_method_prompts("nli"),
            CleaningConfig(),
            GenerationConfig(),
        )
    doubled = pa.concat_tables([anchors, anchors.slice(0, 1)])
    with pytest.raises(InputError, match="repeat ids"):
        make_stage("nli", backend)(doubled)
    with pytest.raises(InputError, match=r"\['sentence'\]"):
        make_stage("nli", backend)(anchors.select(["id"]))
    empty = make_stage("sts", backend)(anchors.slice(0, 0))
    assert empty.rows.num_rows == 0 and backend.calls == []


def test_rejects_of_any_backend_are_scrubbed_of_secrets(
    anchors: pa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend error or a rejected answer that holds the key reaches rejects as ``***``."""
    key = "sk-test-SECRET-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", key)

    def leaky(request: ChatRequest) -> str | Exception:
        view = view_of(request)
        if view == "negative":
            return RuntimeError(f"upstream said: Incorrect API key provided: {key}")
        if view == "intermediate":
            return f"I'm sorry, but I cannot use the key {key}."
        return answer(request)

    result = make_stage("sts", ScriptedBackend(leaky))(anchors)
    rejects = result.rejects.to_pylist()
    assert {r["reason"] for r in rejects} == {"llm_error", "refusal"}
    assert key not in json.dumps(rejects)
    assert any("Incorrect API key provided: ***" in r["detail"] for r in rejects if r["detail"])
    assert any(r["raw"] == "I'm sorry, but I cannot use the key ***." for r in rejects)


def test_an_answer_that_reveals_the_prompt_is_rejected(anchors: pa.Table) -> None:
    """The stage hands the prompt to answer cleaning: a model that prints its system message
    (its instructions and few-shot examples) writes no view."""

    def revealing(request: ChatRequest) -> str:
        if view_of(request) == "positive":
            return request.messages[0]["content"]
        return answer(request)

    result = make_stage("sts", ScriptedBackend(revealing))(anchors)
    assert result.rows.num_rows == 0
    reasons = {(r["view"], r["reason"]) for r in result.rejects.to_pylist()}
    assert reasons == {("positive", "prompt_echo")}


@pytest.mark.parametrize("method", ["sts", "nli"])
def test_every_request_of_a_view_starts_with_the_same_bytes_and_tokens(
    method: str, shared_data: Path, tmp_path: Path
) -> None:
    """Prefix caching (vLLM) reuses a view's instructions and k-shot examples only when every
    prompt of that view starts with the same tokens: the system message must not vary."""
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from tests.tiny_models import build_tiny_chat_model

    lines = (shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt").read_text().splitlines()
    sentences = [s for s in lines[:200] if len(s.split()) >= 5][:40]
    shard = rows_table(
        {"id": row_id("wiki", s), "sentence": s, "split": "aigen"} for s in sentences
    )
    backend = ScriptedBackend(answer)
    make_stage(method, backend)(shard)
    requests = backend.calls[0]
    tokenizer = AutoTokenizer.from_pretrained(build_tiny_chat_model(tmp_path / "chat"))
    by_view: dict[str, list[ChatRequest]] = {}
    for request in requests:
        by_view.setdefault(view_of(request), []).append(request)
    assert len(by_view) == (3 if method == "sts" else 2)
    for view_requests in by_view.values():
        assert len(view_requests) == len(sentences)
        systems = {r.messages[0]["content"].encode("utf-8") for r in view_requests}
        assert len(systems) == 1
        prefix = tokenizer.apply_chat_template([view_requests[0].messages[0]], tokenize=False)
        prefix_ids = tokenizer(prefix, add_special_tokens=False)["input_ids"]
        assert len(prefix_ids) > 100  # instructions and examples: what is worth caching
        for request in view_requests:
            prompt = tokenizer.apply_chat_template(
                list(request.messages), tokenize=False, add_generation_prompt=True
            )
            ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            assert ids[: len(prefix_ids)] == prefix_ids
