"""Benchmark: how fast diagnostics run on this machine, each figure against a baseline in the same run.

1. MER: :func:`cseaug.metrics.mer.mer_pairs` (the diagnostics' path) against a per-pair
   ``jiwer.mer`` loop on the same lower-cased pairs: pairs per second and the ratio.
2. Embeddings (all-MiniLM-L6-v2): sentences per second batched (``--batch-size``) against
   one sentence per call, and with ``torch.set_num_threads(1)`` against torch's default
   thread count.
3. A whole version: :func:`cseaug.diagnostics.version.write_diagnostics` on a synthetic
   version of ``--rows`` rows with three views each (anchor: a Wikipedia sentence; views:
   token cutoff, token shuffle, another sentence), MER on every row (no stored MER columns,
   the worst case), CS on ``--cs-sample`` rows, the contamination check when
   ``../shared/data`` is there. Then the estimate for a 1M-row version with and without
   the sample, from the measured rates.

Usage:
    python benchmarks/bench_diagnostics.py [--rows 1000000] [--cs-sample 2000]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

os.environ.setdefault("CSEAUG_PROGRESS", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import jiwer
import numpy as np
import pyarrow.parquet as pq
from ratio import print_ratio

from cseaug.augment.generate_cse import shuffle_words
from cseaug.config import DiagnosticsConfig
from cseaug.dataset.schema import rows_table
from cseaug.diagnostics.compare import token_cutoff
from cseaug.diagnostics.version import write_diagnostics
from cseaug.metrics.mer import mer_pairs

WIKI = (
    Path(__file__).resolve().parents[1].parent / "shared/data/wiki/wiki1m_for_simcse_first11914.txt"
)


def sentences() -> list[str]:
    if WIKI.is_file():
        return [
            line.strip() for line in WIKI.read_text(encoding="utf-8").split("\n") if line.strip()
        ]
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(5000)]
    return [" ".join(rng.choices(vocab, k=rng.randint(5, 40))) for _ in range(10_000)]


def views(texts: list[str], rng: random.Random) -> list[tuple[str, str, str, str]]:
    out = []
    for i, text in enumerate(texts):
        words = text.split()
        other = texts[(i * 7919 + 13) % len(texts)]
        out.append(
            (
                text,
                " ".join(token_cutoff(words, 0.1, rng)),
                shuffle_words(text, rng),
                other,
            )
        )
    return out


def bench_mer(pairs: list[tuple[str, str]]) -> float:
    refs = [a for a, _ in pairs]
    hyps = [b for _, b in pairs]
    start = time.perf_counter()
    mer_pairs(refs, hyps)
    ours = len(pairs) / (time.perf_counter() - start)
    baseline_pairs = pairs[: min(len(pairs), 20_000)]
    start = time.perf_counter()
    for a, b in baseline_pairs:
        jiwer.mer(a.lower(), b.lower())
    base = len(baseline_pairs) / (time.perf_counter() - start)
    print(
        f"MER   mer_pairs: {ours:,.0f} pairs/s | per-pair jiwer.mer: {base:,.0f} pairs/s | ratio {ours / base:.1f}x"
    )
    return ours


def bench_embeddings(texts: list[str], batch_size: int) -> dict[str, float]:
    import torch

    from cseaug.encoders.loading import load_encoder

    model = load_encoder("all-MiniLM-L6-v2", device="cpu", torch_threads=None).backend.model
    default_threads = torch.get_num_threads()
    rates: dict[str, float] = {}

    def rate(sample: list[str], size: int) -> float:
        model.encode(sample[:8], batch_size=size)  # warm-up
        start = time.perf_counter()
        if size == 1:
            for text in sample:
                model.encode([text], batch_size=1, normalize_embeddings=True)
        else:
            # One call, as CachedEncoder makes it: sentence-transformers sorts by length inside.
            model.encode(sample, batch_size=size, normalize_embeddings=True)
        return len(sample) / (time.perf_counter() - start)

    sample = texts[:384]  # the same sentences for every variant
    for threads in (1, default_threads):
        torch.set_num_threads(threads)
        rates[f"batched threads={threads}"] = rate(sample, batch_size)
    torch.set_num_threads(1)
    rates["one at a time threads=1"] = rate(sample, 1)
    batched = rates["batched threads=1"]
    print(
        f"EMBED batched (batch {batch_size}, 1 thread): {batched:,.0f} sentences/s | "
        f"one at a time: {rates['one at a time threads=1']:,.0f} sentences/s | ratio "
        f"{batched / rates['one at a time threads=1']:.1f}x"
    )
    if default_threads != 1:
        other = rates[f"batched threads={default_threads}"]
        print(
            f"EMBED batched with torch's default {default_threads} threads: {other:,.0f} sentences/s | "
            f"1 thread / default: {batched / other:.2f}x"
        )
    return rates


class TimedEncoder:
    """Wraps an encoder and adds up the seconds spent embedding, to split a run into CS and the rest."""

    def __init__(self, encoder) -> None:
        self.encoder = encoder
        self.name = encoder.name
        self.dimension = encoder.dimension
        self.seconds = 0.0

    def encode(self, texts):
        start = time.perf_counter()
        out = self.encoder.encode(texts)
        self.seconds += time.perf_counter() - start
        return out

    @property
    def sentences(self) -> int:
        """Sentences the model embedded (cache hits excluded)."""
        return self.encoder.stats["encoded"]


def bench_version(
    rows: int, cs_sample: int, pool: list[tuple[str, str, str, str]]
) -> dict[str, float]:
    from cseaug.encoders.loading import load_encoder

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "v0001"
        (directory / "data").mkdir(parents=True)
        per_file = 200_000
        for part, start in enumerate(range(0, rows, per_file)):
            records = []
            for i in range(start, min(rows, start + per_file)):
                anchor, positive, intermediate, negative = pool[i % len(pool)]
                records.append(
                    {
                        "id": f"{i:016x}",
                        "sentence": f"{anchor} {i}",
                        "split": "aigen",
                        "positive": positive,
                        "intermediate": intermediate,
                        "negative": negative,
                    }
                )
            pq.write_table(rows_table(records), directory / "data" / f"train-{part:05d}.parquet")
        # The contamination check runs too when the evaluation sets are beside the checkout.
        eval_dir = str(WIKI.parents[1]) if (WIKI.parents[1] / "senteval_sts").is_dir() else None
        cfg = DiagnosticsConfig(
            cs_sample=cs_sample, embedding_cache=False, device="cpu", eval_data_dir=eval_dir
        )
        encoder = TimedEncoder(load_encoder(device="cpu"))
        start = time.perf_counter()
        summary = write_diagnostics(directory, Path(tmp) / "diag", cfg, encoder=encoder)
        seconds = time.perf_counter() - start
    pairs = sum(v["mer"]["n"] for v in summary.summary["views"].values())
    rest = seconds - encoder.seconds
    print(
        f"VERSION {rows:,} rows, {pairs:,} MER pairs, CS on {summary.summary['cs']['rows']:,} rows: "
        f"{seconds:,.1f} s in all = {encoder.seconds:,.1f} s embedding {encoder.sentences:,} sentences "
        f"({encoder.sentences / max(encoder.seconds, 1e-9):,.0f}/s) + {rest:,.1f} s reading, MER, "
        f"checks{' incl. contamination' if eval_dir else ''}, plots ({rows / rest:,.0f} rows/s)"
    )
    return {
        "seconds": seconds,
        "rest": rest,
        "embed_rate": encoder.sentences / max(encoder.seconds, 1e-9),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the synthetic version")
    parser.add_argument(
        "--cs-sample", type=int, default=2_000, help="rows with CS in the version run"
    )
    parser.add_argument(
        "--mer-pairs", type=int, default=200_000, help="pairs of the MER measurement"
    )
    parser.add_argument("--batch-size", type=int, default=64, help="encoder batch size")
    args = parser.parse_args()

    rng = random.Random(0)
    texts = sentences()
    pool = views(texts, rng)
    mer_input = [(a, v) for a, p, i, n in pool for v in (p, i, n)]
    mer_input = (mer_input * (args.mer_pairs // len(mer_input) + 1))[: args.mer_pairs]
    mer_rate = bench_mer(mer_input)
    bench_embeddings(texts, args.batch_size)
    version = bench_version(args.rows, args.cs_sample, pool)

    sentences_per_row = 4  # anchor and three views, each embedded once
    embed_rate = version["embed_rate"]
    rest_1m = version["rest"] * 1_000_000 / args.rows
    print(
        f"ESTIMATE 1M rows x 3 views: reading, MER, checks, plots {rest_1m / 60:,.1f} min "
        f"(pure MER at {mer_rate:,.0f} pairs/s: {3_000_000 / mer_rate / 60:,.1f} min); "
        f"+ CS on 3,000 rows (default cs_sample) {3_000 * sentences_per_row / embed_rate / 60:,.1f} min; "
        f"+ CS on all 1M rows {1_000_000 * sentences_per_row / embed_rate / 3600:,.1f} h "
        f"(at the {embed_rate:,.0f} sentences/s of the version run)"
    )
    print(f"(machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})")
    print_ratio(
        "diagnostics_rest_vs_embedding",
        version["rest"] / (version["seconds"] - version["rest"]),
        "reading, MER, checks, plots / embedding time of the version run",
    )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
