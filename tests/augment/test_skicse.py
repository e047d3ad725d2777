"""SKICSE stage: knowledge for pairs (x, x_ski) and quadruplets (x, x+, x-, x_ski)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from cseaug.augment.skicse import SKIStage
from cseaug.config import CleaningConfig
from cseaug.dataset.schema import CANONICAL_SCHEMA, row_id, rows_table
from cseaug.errors import ConfigError
from cseaug.llm.base import ChatRequest
from cseaug.prompts import load_method_prompts, load_prompt
from cseaug.readers.benchmarks import read_nli_csv
from tests.augment.scripted_backend import ScriptedBackend

TEMPLATE_START = "1) Answer objectively what you know about the sentence."


def knowledge_answer(request: ChatRequest) -> str | Exception:
    sentence = request.messages[-1]["content"].split("\n", 1)[1]
    if sentence.startswith("A man selling donuts"):
        return "As an AI language model, I have no knowledge of this."
    if sentence.startswith("Two young children"):
        return RuntimeError("HTTP 500")
    return (
        "Sure! Here's what I know about the sentence:\n"
        f"1) The sentence has {len(sentence.split())} tokens. It describes people.\n"
        "2) It comes from an image caption. Captions are short. They name objects. They are English."
    )


@pytest.fixture(scope="module")
def triples(shared_data: Path) -> list[dict]:
    return (
        read_nli_csv(shared_data / "nli" / "nli_triples_snli_devtest.csv").slice(0, 6).to_pylist()
    )


def stage_for(backend: ScriptedBackend) -> SKIStage:
    return SKIStage(backend, load_method_prompts("ski"), CleaningConfig())


def test_pairs_get_knowledge(triples: list[dict]) -> None:
    rows = rows_table(
        {"id": row_id("snli", t["premise"]), "sentence": t["premise"], "split": "aigen"}
        for t in triples[2:4]
    )
    backend = ScriptedBackend(knowledge_answer)
    result = stage_for(backend)(rows)
    assert len(backend.calls) == 1
    first_request = backend.calls[0][0]
    assert first_request.key == f"{rows['id'][0].as_py()}:knowledge"
    assert first_request.messages == load_prompt("ski").render(sentence=rows["sentence"][0].as_py())
    assert first_request.messages[0]["content"].startswith(TEMPLATE_START)
    out = result.rows
    assert out.schema.equals(CANONICAL_SCHEMA)
    row = out.slice(0, 1).to_pylist()[0]
    assert row["knowledge"].startswith("The sentence has ")
    assert row["knowledge"].count(". ") == 3  # cut to four sentences, one line
    assert (row["method"], row["positive"], row["positive_method"], row["negative_method"]) == (
        "ski",
        None,
        None,
        None,
    )
    assert result.stats["quadruplets"] == 0


def test_quadruplets_keep_given_views_and_failures_are_rejected(triples: list[dict]) -> None:
    rows = rows_table(
        {
            "id": row_id("snli", t["premise"]),
            "sentence": t["premise"],
            "split": "aigen",
            "positive": t["entailment"],
            "negative": t["contradiction"],
            "negative_method": "nli" if i == 0 else None,
        }
        for i, t in enumerate(triples)
    )
    backend = ScriptedBackend(knowledge_answer)
    result = stage_for(backend)(rows)
    kept = result.rows.to_pylist()
    failed = [
        t["premise"]
        for t in triples
        if t["premise"].startswith(("A man selling donuts", "Two young children"))
    ]
    assert failed and len(kept) == len(triples) - len(failed)
    given = {t["premise"]: t for t in triples}
    for row in kept:
        assert row["positive"] == given[row["sentence"]]["entailment"]
        assert row["negative"] == given[row["sentence"]]["contradiction"]
        assert row["knowledge"] and row["method"] == "ski"
        assert row["positive_method"] == "given"
    assert kept[0]["negative_method"] == "nli"  # a method the input already named is kept
    assert result.stats["quadruplets"] == len(kept)
    reasons = {r["reason"]: r for r in result.rejects.to_pylist()}
    assert set(reasons) == {"refusal", "llm_error"}
    assert reasons["llm_error"]["view"] == "knowledge"
    assert json.loads(reasons["llm_error"]["detail"]) == {"error": "RuntimeError: HTTP 500"}
    assert result.stats["views"] == {"knowledge": {"ok": len(kept), "refusal": 1, "llm_error": 1}}


def test_needs_a_knowledge_prompt() -> None:
    with pytest.raises(ConfigError, match="'knowledge' prompt"):
        SKIStage(ScriptedBackend(knowledge_answer), load_method_prompts("nli"), CleaningConfig())
    assert stage_for(ScriptedBackend(knowledge_answer))(rows_table([])).rows.num_rows == 0
    assert isinstance(rows_table([]), pa.Table)
