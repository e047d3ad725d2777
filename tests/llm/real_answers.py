"""The real model's recorded answers and human-written sentences, for the cleaning tests and
``benchmarks/measure_answer_cleaning.py``.

The answers (``tests/fixtures/smollm2_answers.json``, recorded by
``benchmarks/record_real_answers.py``) name their anchor by its wiki1m line; the anchor's text
and the prompt are rebuilt here as the recording built them. :func:`verdict` is the path an
answer takes in a build: answer cleaning, then the per-row checks that concern one view.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cseaug.config import CleaningConfig, QualityConfig
from cseaug.config.patterns import PatternConfig
from cseaug.llm.base import Message
from cseaug.llm.clean import clean_answer
from cseaug.patterns import load_examples
from cseaug.prompts import load_method_prompts
from cseaug.quality import checks
from cseaug.quality.rows import CHANGED_VIEWS

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "smollm2_answers.json"


@dataclass(frozen=True)
class Answer:
    line: int
    method: str
    view: str
    anchor: str
    prompt: tuple[Message, ...]
    raw: str


@cache
def _prompts(method: str) -> dict:
    return load_method_prompts(method)


@cache
def _examples(method: str) -> dict:
    return load_examples(PatternConfig(source="paper"), method).levels


def real_answers(shared_data: Path) -> list[Answer]:
    """Every recorded answer with its anchor and the prompt it answered."""
    record = json.loads(FIXTURE.read_text(encoding="utf-8"))
    lines = (shared_data / record["corpus"]).read_text(encoding="utf-8").splitlines()
    out = []
    for item in record["answers"]:
        anchor, method = lines[item["line"] - 1].strip(), item["method"]
        variables = {"sentence": anchor}
        if method != "ski":
            variables["examples"] = _examples(method)[item["view"]]
        prompt = _prompts(method)[item["view"]].render(**variables)
        out.append(Answer(item["line"], method, item["view"], anchor, prompt, item["answer"]))
    return out


def verdict(
    raw: str, anchor: str, method: str, view: str, prompt: tuple[Message, ...] = ()
) -> tuple[str | None, str]:
    """The view a build keeps of ``raw`` (None when rejected) and the reason of its reject:
    answer cleaning, then the per-row hidden-text and unchanged-view checks."""
    cleaned = clean_answer(
        raw, view=view, source_sentence=anchor, cfg=CleaningConfig(), prompt=prompt
    )
    if not cleaned.ok:
        return None, f"llm/{cleaned.reason}"
    failed = checks.hidden_text(anchor, cleaned.text)
    if failed is None and view in CHANGED_VIEWS.get(method, ()):
        threshold = QualityConfig().unchanged_view_similarity
        failed = checks.unchanged(anchor, cleaned.text, threshold)
    return (None, f"quality/{failed[0]}") if failed else (cleaned.text, "")


def human_sentences(shared_data: Path) -> list[tuple[str, str]]:
    """(input, sentence) pairs of human-written text: STS-B train and STS12 train (each
    sentence with its partner as the input) and SNLI dev/test (premise with the entailment
    and the contradiction)."""
    from tests.quality.sts_pairs import sts_pairs

    pairs = []
    for _, first, second in sts_pairs(shared_data):
        pairs += [(first, second), (second, first)]
    with (shared_data / "nli" / "nli_triples_snli_devtest.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            pairs += [(row["sent0"], row["sent1"]), (row["sent0"], row["hard_neg"])]
    return pairs
