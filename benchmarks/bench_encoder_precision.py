"""The CS encoder's float64 forward pass against a float32 one: what reproducibility costs.

The encoder (:class:`cseaug.encoders.loading.TorchEncoder`) computes in float64 and keeps
float32 rows, so that a text's vector, and every ``cs_<view>`` value a version publishes, is
the same whatever batch the text shared. This embeds real sentence triples (SNLI dev/test from
../shared/data: anchor, entailment, contradiction; a Wikipedia-sentence fallback pairs
neighbours) with all-MiniLM-L6-v2 in float64 (the project) and float32 (the baseline),
``--rounds`` interleaved rounds, the median kept, at ``--threads`` torch threads.

Prints sentences/s of each and, for each, how many of the anchor-view cosine similarities
change when the same texts are embedded again in other batches (size 7, reversed order), and
how far float32's values are from float64's against the 0.025-wide bins of the diagnostics.

    python benchmarks/bench_encoder_precision.py [--triples 1000] [--threads 1]
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


def view_cs(vectors: np.ndarray) -> np.ndarray:
    """CS of each anchor with its two views, as :func:`cseaug.metrics.cosine.cosine_pairs`."""
    anchors = np.arange(0, len(vectors), 3)
    pairs = [
        np.einsum("ij,ij->i", vectors[anchors], vectors[anchors + k], dtype=np.float64)
        for k in (1, 2)
    ]
    return np.concatenate(pairs).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triples", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (the build's default)"
    )
    args = parser.parse_args()

    import torch

    from cseaug.encoders.loading import TorchEncoder, resolve_model

    torch.set_num_threads(args.threads)
    texts = [t for triple in triples(args.triples) for t in triple]
    location, pooling = resolve_model("all-MiniLM-L6-v2")

    def encoder(batch_size: int, dtype: str) -> TorchEncoder:
        loaded = TorchEncoder(
            location, pooling=pooling, device="cpu", batch_size=batch_size, max_seq_length=None
        )
        loaded.model.to(getattr(torch, dtype))
        return loaded

    dtypes = ("float64", "float32")
    encoders = {d: encoder(64, d) for d in dtypes}
    for loaded in encoders.values():
        loaded.encode(texts[:256])  # warm-up: first-call allocations, kernels
    seconds: dict[str, list[float]] = {d: [] for d in dtypes}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for d, loaded in encoders.items():
            started = time.perf_counter()
            vectors[d] = loaded.encode(texts)
            seconds[d].append(time.perf_counter() - started)
    rate = {d: len(texts) / statistics.median(s) for d, s in seconds.items()}

    print(
        f"all-MiniLM-L6-v2 on {len(texts):,} sentences "
        f"({'SNLI triples' if SNLI.is_file() else 'Wikipedia'}), {args.threads} torch thread(s), "
        f"median of {args.rounds}"
    )
    cs = {d: view_cs(v) for d, v in vectors.items()}
    for d in dtypes:
        again = view_cs(encoder(7, d).encode(texts[::-1])[::-1])
        changed = int((again != cs[d]).sum())
        print(
            f"  {d}: {rate[d]:6.0f} sentences/s; {changed:,} of {cs[d].size:,} CS values "
            f"change in other batches (max {np.abs(again - cs[d]).max():.1e})"
        )
    diff = np.abs(cs["float32"] - cs["float64"])
    print(f"  |CS fp32 - CS fp64|: max {diff.max():.1e} ({diff.max() / BIN:.1e} bin)")
    print_ratio(
        "encoder_float64_vs_float32",
        rate["float64"] / rate["float32"],
        "sentences/s, float64 forward / float32; the price of the same cs_<view> in any batch",
    )


if __name__ == "__main__":
    sys.exit(main())
