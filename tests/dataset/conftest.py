"""Fixtures of the dataset-layer tests: canonical rows, a manifest, a tiny tokenizer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from cseaug.config import RunConfig
from cseaug.dataset.manifest import build_manifest
from cseaug.dataset.schema import rejects_table, row_id, rows_table

TRICKY = [
    'He said "no", then left.',
    "Commas, commas, everywhere",
    "A line\nbreak inside",
    "Ünïcödé — dashes … and emoji 🙂",
    "  leading and trailing spaces  ",
]
"""Sentences that break naive CSV/JSON writers."""


def make_rows(
    n_aigen: int,
    n_other: int,
    *,
    views: tuple[str, ...] = ("positive", "intermediate", "negative"),
    method: str = "sts",
    corpus: str = "test",
    start: int = 0,
) -> pa.Table:
    """Canonical rows: ``n_aigen`` anchors with ``views``, then ``n_other`` plain sentences."""
    records: list[dict[str, Any]] = []
    for i in range(start, start + n_aigen):
        sentence = (
            TRICKY[i % len(TRICKY)] + f" #{i}"
            if i % 7 == 0
            else f"the cat number {i} sat on the mat"
        )
        record = {
            "id": row_id(corpus, sentence),
            "sentence": sentence,
            "split": "aigen",
            "method": method,
        }
        for view in views:
            record[view] = f"{view} of {i}: " + (
                "a cat sat on a mat" if view != "negative" else "no cat ever sat"
            )
        records.append(record)
    for i in range(start + n_aigen, start + n_aigen + n_other):
        sentence = f"plain corpus sentence {i}"
        records.append({"id": row_id(corpus, sentence), "sentence": sentence, "split": "other"})
    return rows_table(records)


def make_rejects(n: int) -> pa.Table:
    reasons = ["refusal", "too_short", "empty"]
    return rejects_table(
        {
            "id": f"r{i}",
            "sentence": f"s{i}",
            "stage": "llm" if i % 2 else "corpus",
            "view": None,
            "reason": reasons[i % 3],
        }
        for i in range(n)
    )


@pytest.fixture
def rows_factory() -> Callable[..., pa.Table]:
    return make_rows


@pytest.fixture
def rejects_factory() -> Callable[[int], pa.Table]:
    return make_rejects


@pytest.fixture
def run_config(tmp_path: Path) -> RunConfig:
    return RunConfig.model_validate(
        {
            "name": "wiki-sts",
            "description": "test build",
            "method": "sts",
            "corpus": {"path": str(tmp_path / "corpus.txt")},
            "patterns": {"source": "paper"},
            "llm": {
                "backend": "openai-compatible",
                "model": "tiny",
                "base_url": "http://127.0.0.1:1/v1",
            },
            "output": {"root": str(tmp_path / "storage"), "rows_per_file": 50},
        }
    )


@pytest.fixture
def manifest(run_config: RunConfig, tmp_path: Path) -> dict[str, Any]:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a\nb\n", encoding="utf-8")
    return build_manifest(
        run_config,
        inputs={"corpus": corpus},
        prompts=[{"name": "sts_positive", "sha256": "ab" * 32}],
        example_set={"positive": [["a", "b"]]},
        model={"backend": "openai-compatible", "model": "tiny"},
        token_usage={"requests": 3, "prompt_tokens": 30, "completion_tokens": 9},
        timings={"generate": 1.5},
    )


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private datasets cache, so tests neither read nor litter the user's."""
    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised BERT with a word-piece vocabulary written here."""
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("tiny-bert")
    words = [
        "a",
        "cat",
        "sat",
        "sits",
        "on",
        "the",
        "mat",
        "of",
        "no",
        "ever",
        "positive",
        "negative",
        "intermediate",
        "plain",
        "corpus",
        "sentence",
        "number",
    ]
    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        *words,
        *"0123456789",
        ".",
        ",",
        ":",
        "#",
    ]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    transformers.BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    config = transformers.BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    transformers.BertModel(config).save_pretrained(folder)
    return folder
