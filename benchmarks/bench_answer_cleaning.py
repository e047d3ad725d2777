"""Benchmark: answer cleaning (``cseaug.llm.clean.clean_answer``) with the punctuation table
of ``normalize_for_comparison`` against the per-character rule it replaced, in the same run.

Answers are the dry run's stand-ins (``pipeline.dry_run.stand_in``: the words of the
request's last message reversed, plus one) for NGCSE's ``sts_positive`` prompt on Wikipedia
sentences (``../shared/data/wiki``), the workload where a dry run of a shipped config spent
most of its time. Both ways give the same verdicts; the script exits 1 on any difference.

Usage:
    python benchmarks/bench_answer_cleaning.py [--answers 5000]
"""

from __future__ import annotations

import argparse
import time
import unicodedata
from pathlib import Path
from unittest import mock

from ratio import print_ratio

from cseaug.config import CleaningConfig
from cseaug.llm import clean
from cseaug.llm.base import ChatRequest
from cseaug.pipeline.dry_run import stand_in

WIKI = Path(__file__).resolve().parents[2] / "shared/data/wiki/wiki1m_for_simcse_first11914.txt"
SYSTEM = "Generate a sentence that means the same as the user's sentence, in other words."


def per_character(text: str) -> str:
    """The rule as it was written before the table: one ``unicodedata`` call per character."""
    kept = "".join(
        " " if unicodedata.category(ch).startswith("P") else ch for ch in text.casefold()
    )
    return " ".join(kept.split())


def clean_all(answers: list[tuple[str, str, tuple]]) -> tuple[float, list[str | None]]:
    cfg = CleaningConfig()
    start = time.perf_counter()
    reasons = [
        clean.clean_answer(a, view="positive", source_sentence=s, cfg=cfg, prompt=p).reason
        for a, s, p in answers
    ]
    return time.perf_counter() - start, reasons


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=5000)
    args = parser.parse_args()
    lines = [line.strip() for line in WIKI.read_text(encoding="utf-8").splitlines() if line.strip()]
    answers = []
    for i in range(args.answers):
        sentence = lines[i % len(lines)]
        prompt = ({"role": "system", "content": SYSTEM}, {"role": "user", "content": sentence})
        request = ChatRequest(key=str(i), messages=list(prompt))
        answers.append((stand_in(request), sentence, prompt))
    with mock.patch.object(clean, "normalize_for_comparison", per_character):
        before, expected = clean_all(answers)
    after, reasons = clean_all(answers)
    if reasons != expected:
        print("the table and the per-character rule gave different verdicts")
        return 1
    print(f"{args.answers:,} stand-in answers: per character {before:.2f} s, table {after:.2f} s")
    print_ratio("answer_cleaning_vs_per_character", before / after, "higher is better; target > 1")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
