"""Benchmark: batched MER (cseaug.metrics.mer) against a per-pair ``jiwer.mer`` loop.

Pairs are Wikipedia sentences (``../shared/data/wiki``, or synthetic sentences when it is
absent) against perturbed copies: a word deleted, "not" inserted, a word substituted, the
first words shuffled. Three measurements in the same run:

* core: :func:`mer_words` on already normalised words against ``jiwer.mer`` on the same
  normalised words (joined by spaces), per pair;
* end to end: :func:`mer_pairs` on raw strings (normalisation included) against
  normalisation + ``jiwer.mer`` per pair;
* scale: :func:`mer_pairs` over ``--pairs`` raw pairs (default one million).

Every value is checked against jiwer on the baseline subset; the script exits 1 on any
difference.

Usage:
    python benchmarks/bench_mer.py [--pairs 1000000] [--baseline-pairs 100000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import jiwer
import numpy as np
from ratio import print_ratio

from cseaug.metrics.mer import mer_pairs, mer_words, normalize_words

WIKI = (
    Path(__file__).resolve().parents[1].parent / "shared/data/wiki/wiki1m_for_simcse_first11914.txt"
)


def sentences() -> list[str]:
    if WIKI.is_file():
        return [
            line.strip() for line in WIKI.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(5000)] + [",", ".", "(", ")"]
    return [" ".join(rng.choices(vocab, k=rng.randint(3, 40))) for _ in range(10_000)]


def perturb(text: str, rng: random.Random) -> str:
    words = text.split()
    if len(words) > 2:
        words.pop(rng.randrange(len(words)))
        words.insert(rng.randrange(len(words) + 1), "not")
        words[rng.randrange(len(words))] = "substitute"
        if rng.random() < 0.3:
            head = words[:4]
            rng.shuffle(head)
            words[:4] = head
    return " ".join(words)


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:>12,.0f} pairs/s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1_000_000, help="pairs for the scale run")
    parser.add_argument(
        "--baseline-pairs", type=int, default=100_000, help="pairs for the jiwer loop"
    )
    args = parser.parse_args()

    rng = random.Random(0)
    source = sentences()
    refs = [source[i % len(source)] for i in range(args.pairs)]
    hyps = [perturb(r, rng) for r in refs]
    n_base = min(args.baseline_pairs, args.pairs)
    print(
        f"{args.pairs:,} pairs from {'wiki' if WIKI.is_file() else 'synthetic'} sentences; "
        f"baselines on the first {n_base:,}"
    )

    ref_words = [normalize_words(r) for r in refs[:n_base]]
    hyp_words = [normalize_words(h) for h in hyps[:n_base]]
    ref_joined = [" ".join(w) for w in ref_words]
    hyp_joined = [" ".join(w) for w in hyp_words]

    start = time.perf_counter()
    expected = np.array([jiwer.mer(r, h) for r, h in zip(ref_joined, hyp_joined, strict=True)])
    t_jiwer = time.perf_counter() - start

    start = time.perf_counter()
    core = np.array([mer_words(r, h) for r, h in zip(ref_words, hyp_words, strict=True)])
    t_core = time.perf_counter() - start

    start = time.perf_counter()
    for r, h in zip(refs[:n_base], hyps[:n_base], strict=True):
        jiwer.mer(" ".join(normalize_words(r)), " ".join(normalize_words(h)))
    t_jiwer_e2e = time.perf_counter() - start

    start = time.perf_counter()
    batched = mer_pairs(refs[:n_base], hyps[:n_base])
    t_e2e = time.perf_counter() - start

    start = time.perf_counter()
    full = mer_pairs(refs, hyps)
    t_full = time.perf_counter() - start

    print(
        f"core        jiwer.mer loop {rate(n_base, t_jiwer)} | mer_words {rate(n_base, t_core)}"
        f" | ratio {t_jiwer / t_core:.2f}x"
    )
    print(
        f"end to end  normalise+jiwer {rate(n_base, t_jiwer_e2e)} | mer_pairs {rate(n_base, t_e2e)}"
        f" | ratio {t_jiwer_e2e / t_e2e:.2f}x"
    )
    print(
        f"scale       mer_pairs over {args.pairs:,} raw pairs: {t_full:.1f} s ({rate(args.pairs, t_full).strip()}),"
        f" mean MER {np.nanmean(full):.3f}"
    )

    print_ratio(
        "mer_pairs_vs_jiwer",
        t_jiwer_e2e / t_e2e,
        "speed of mer_pairs / normalise+jiwer; higher is better",
    )
    mismatches = int(np.sum(core != expected) + np.sum(batched != expected))
    print(
        f"values identical to jiwer.mer on {n_base:,} pairs: {'yes' if mismatches == 0 else f'NO ({mismatches} differ)'}"
    )
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
