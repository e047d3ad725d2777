"""bfloat16 against float32 for the diagnostics encoder on the CPU: speed and cosine error (issue 14).

The cosine-similarity pass of a build's diagnostics embeds anchor and views of up to
``diagnostics.cs_sample`` rows with all-MiniLM-L6-v2. This embeds real sentence triples
(SNLI dev/test from ../shared/data: anchor, entailment, contradiction; a Wikipedia-sentence
fallback pairs neighbours) with the project's encoder (:func:`cseaug.encoders.loading.load_encoder`)
in ``float32`` (the baseline) and ``bfloat16`` (torch autocast, what ``diagnostics.precision:
auto`` picks on a CPU with AMX-BF16 / AVX512-BF16), ``--rounds`` interleaved rounds with empty
caches, the median kept, at ``--threads`` torch threads.

Prints sentences/s of each, the speed ratio, whether the CPU has native bfloat16, and the error
of the cosine similarities a histogram shows: the largest and the 99th percentile of
|CS_bf16 - CS_fp32| over every pair and the largest error of q1 / median / q3 of each view,
against the 0.025-wide bins of the diagnostics' plots.

    python benchmarks/bench_encoder_precision.py [--triples 2000] [--threads 1]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from gpu_bench import sentences
from ratio import print_ratio

SNLI = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "nli" / "nli_triples_snli_devtest.csv"
)
BIN = 0.025


def triples(n: int) -> list[list[str]]:
    """``n`` (anchor, positive, negative) triples: SNLI's, else neighbouring Wikipedia sentences."""
    if SNLI.is_file():
        with SNLI.open(encoding="utf-8") as f:
            rows = list(csv.reader(f))[1:]
        return [row[:3] for row in rows[:n]]
    lines = sentences(3 * n)
    return [lines[i : i + 3] for i in range(0, 3 * n, 3)]


def timed(encoder, texts: list[str]) -> tuple[float, np.ndarray]:
    encoder._memory.clear()
    started = time.perf_counter()
    vectors = encoder.encode(texts)
    return time.perf_counter() - started, vectors


def view_cs(vectors: np.ndarray) -> list[np.ndarray]:
    anchors = np.arange(0, len(vectors), 3)
    return [(vectors[anchors] * vectors[anchors + k]).sum(axis=1) for k in (1, 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triples", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (the build's default)"
    )
    args = parser.parse_args()

    from cseaug.devices import cpu_has_native_bfloat16
    from cseaug.encoders.loading import load_encoder

    texts = [t for triple in triples(args.triples) for t in triple]
    encoders = {
        p: load_encoder(device="cpu", torch_threads=args.threads, precision=p)
        for p in ("float32", "bfloat16")
    }
    seconds: dict[str, list[float]] = {p: [] for p in encoders}
    vectors: dict[str, np.ndarray] = {}
    timed(encoders["float32"], texts[:256])  # warm-up: first-call allocations, oneDNN kernels
    timed(encoders["bfloat16"], texts[:256])
    for _ in range(args.rounds):
        for p, encoder in encoders.items():
            took, vectors[p] = timed(encoder, texts)
            seconds[p].append(took)
    rate = {p: len(texts) / statistics.median(s) for p, s in seconds.items()}

    print(
        f"all-MiniLM-L6-v2 on {len(texts):,} sentences ({'SNLI triples' if SNLI.is_file() else 'Wikipedia'}), "
        f"{args.threads} torch thread(s), median of {args.rounds}; native bfloat16: "
        f"{cpu_has_native_bfloat16()}"
    )
    for p in encoders:
        print(f"  {p:<9} {rate[p]:8.0f} sentences/s")
    exact, fast = view_cs(vectors["float32"]), view_cs(vectors["bfloat16"])
    diff = np.concatenate([np.abs(a - b) for a, b in zip(exact, fast, strict=True)])
    quartiles = max(
        abs(np.quantile(a, q) - np.quantile(b, q))
        for a, b in zip(exact, fast, strict=True)
        for q in (0.25, 0.5, 0.75)
    )
    print(
        f"  |CS bf16 - CS fp32| over {diff.size:,} pairs: max {diff.max():.4f} ({diff.max() / BIN:.2f} bin), "
        f"p99 {np.quantile(diff, 0.99):.4f}, mean {diff.mean():.5f}; quartiles move by at most "
        f"{quartiles:.4f} ({quartiles / BIN:.2f} bin)"
    )
    print_ratio(
        "encoder_bfloat16_vs_float32",
        rate["bfloat16"] / rate["float32"],
        "sentences/s, bfloat16 autocast / float32; >1 where the CPU has native bfloat16",
    )


if __name__ == "__main__":
    sys.exit(main())
