"""Benchmark: negation insertion against a plain ``nlp.pipe`` over the same sentences.

Both runs use the same loaded pipeline (the :class:`Negator`'s, same excluded components,
same batch size), so the difference is what the rules, result objects and progress cost.
Rounds alternate between the two and the best of each is kept, which evens out noise from
other processes. The target is a throughput ratio of at least 0.85 (rules cost < 15 %).

The default model is the test pipeline ``../shared/models/en_ud_ewt_sm`` (``en_core_web_sm``
cannot be installed offline); pass ``--model en_core_web_sm`` where it is installed.

Usage:
    python benchmarks/bench_negation.py [--sentences 2000] [--rounds 2] [--model PATH_OR_NAME]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ratio import print_ratio

from cseaug.augment.negation import Negator, negate_doc, negation_stats

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
WIKI = SHARED / "data/wiki/wiki1m_for_simcse_first11914.txt"
UD_MODEL = SHARED / "models/en_ud_ewt_sm"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--model", default=str(UD_MODEL) if UD_MODEL.exists() else "en_core_web_sm")
    args = parser.parse_args()
    if not WIKI.is_file():
        print(f"SKIPPED: {WIKI} not found (the benchmark reads Wikipedia sentences from ../shared)")
        return 0

    lines = [line.strip() for line in WIKI.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = lines[: args.sentences]
    negator = Negator(args.model, batch_size=args.batch_size)
    nlp = negator.nlp
    words = sum(len(t.split()) for t in texts)
    print(
        f"{len(texts):,} Wikipedia sentences ({words:,} words), model {args.model}, "
        f"components {nlp.pipe_names}, batch size {args.batch_size}"
    )

    negator.negate(texts[:64])  # warm-up: first-call allocations of the pipeline
    pipe_times, negate_times = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        for _doc in nlp.pipe(texts, batch_size=args.batch_size):
            pass
        pipe_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        results = negator.negate(texts)
        negate_times.append(time.perf_counter() - start)

    docs = list(nlp.pipe(texts, batch_size=args.batch_size))
    start = time.perf_counter()
    for doc in docs:
        negate_doc(doc)
    rules_only = time.perf_counter() - start

    pipe, negate = min(pipe_times), min(negate_times)
    stats = negation_stats(results)
    print(f"nlp.pipe        {len(texts) / pipe:>8,.0f} sentences/s (best of {args.rounds})")
    print(f"Negator.negate  {len(texts) / negate:>8,.0f} sentences/s (best of {args.rounds})")
    print_ratio(
        "negation_vs_spacy_pipe", pipe / negate, "throughput of negate / nlp.pipe; target >= 0.85"
    )
    print(
        f"rules alone on parsed docs: {rules_only / len(texts) * 1e6:.1f} us/sentence "
        f"({rules_only / pipe:.1%} of the parse)"
    )
    print(
        f"share negated {stats['share_negated']:.1%}; rules {stats['rules']}; refusals {stats['refusals']}"
    )
    return 0 if pipe / negate >= 0.85 else 1


if __name__ == "__main__":
    sys.exit(main())
