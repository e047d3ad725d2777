"""Corpus preparation: memory and time of cseaug's streaming Arrow path against a naive baseline.

Generates a synthetic one-sentence-per-line corpus shaped like wiki1m (see :func:`generate`),
then prepares it with N=20,000 three ways, each in a fresh process:

* cseaug: ``prepare_corpus`` (streamed readers, Arrow cleaning, hashed ids, seeded sample),
  then the sample and the ``other`` rows written to Parquet batch by batch.
* cseaug-lenient: the same with ``corpus.invisible_characters: keep`` and
  ``corpus.special_tokens: keep``, i.e. cleaning without the hostile-text rules (what it
  was before them), so that their cost shows as a ratio measured in the same run.
* naive: lines read into a Python list, normalised line by line (NFC, ``" ".join(split())``),
  set-dedup keeping order, ``random.Random(seed).sample``, ``row_id`` per line, Python lists
  to Arrow tables, Parquet.

For 250k and 1M lines it prints wall time (the median of ``--repeat`` runs, alternating the
approaches: the machine is shared) and peak RSS (each run alone, no tracing) and the peak of
Python-level allocations (tracemalloc, one more run of each), and the ratios.
Flat memory shows as the growth of the tracemalloc peak from 250k to 1M lines.

Run: ``.venv/bin/python benchmarks/bench_corpus_memory.py [--lines 1000000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from ratio import print_ratio

SAMPLE = 20_000
SEED = 42
APPROACHES = ("cseaug", "cseaug-lenient", "naive")


def generate(path: Path, lines: int, seed: int = 0) -> None:
    """A synthetic corpus of ``lines`` lines, shaped like wiki1m (deterministic for a seed).

    wiki1m_for_simcse's first 11,914 lines: 106 characters and 17.4 words per line on
    average, 12.5% of lines non-ASCII. Here: log-normal word counts (mean ~17), Zipf word
    frequencies over a random vocabulary, 11% of lines with a composed "café", 1% with a
    decomposed one (NFC changes it), 1% with doubled/edge spaces, 0.2% blank, 4% repeats.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    word_lengths = 2 + rng.poisson(4.5, size=50_000)
    vocabulary = [bytes(rng.choice(letters, size=n)).decode() for n in word_lengths]
    vocabulary[:5] = ["the", "of", "and", "in", "to"]
    lengths = np.clip(rng.lognormal(mean=2.75, sigma=0.45, size=lines).astype(int), 1, 120)
    words = (rng.zipf(1.3, size=int(lengths.sum())) - 1) % len(vocabulary)
    repeat_of = rng.integers(0, np.arange(1, lines + 1))
    kind = rng.random(lines)
    sentences: list[str] = []
    cursor = 0
    for i in range(lines):
        n = int(lengths[i])
        sentence = " ".join(vocabulary[w] for w in words[cursor : cursor + n]).capitalize() + "."
        cursor += n
        if kind[i] < 0.04 and i > 0:
            sentence = sentences[repeat_of[i] - 1]
        elif kind[i] < 0.042:
            sentence = ""
        elif kind[i] < 0.052:
            sentence = "  " + sentence.replace(" ", "  ", 2) + " "
        elif kind[i] < 0.062:
            sentence = "Cafe\u0301 " + sentence
        elif kind[i] < 0.172:
            sentence = "Café " + sentence
        sentences.append(sentence)
    path.write_text("\n".join(sentences) + "\n", encoding="utf-8")


def run_cseaug(corpus: Path, workdir: Path, lenient: bool = False) -> int:
    import pyarrow.parquet as pq

    from cseaug.config import CorpusConfig, SampleConfig
    from cseaug.corpus import prepare_corpus
    from cseaug.dataset.schema import CANONICAL_SCHEMA

    rules = {"invisible_characters": "keep", "special_tokens": "keep"} if lenient else {}
    prepared = prepare_corpus(
        CorpusConfig(path=str(corpus), **rules), SampleConfig(size=SAMPLE, seed=SEED), method="sts"
    )
    with pq.ParquetWriter(workdir / "rows.parquet", CANONICAL_SCHEMA) as writer:
        writer.write_table(prepared.sample)
        for batch in prepared.other_batches():
            writer.write_batch(batch)
    pq.write_table(prepared.rejects, workdir / "rejects.parquet")
    return prepared.sample.num_rows + prepared.num_other


def run_naive(corpus: Path, workdir: Path) -> int:
    import random
    import unicodedata

    import pyarrow.parquet as pq

    from cseaug.dataset.schema import row_id, rows_table

    with open(corpus, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    seen: set[str] = set()
    kept: list[str] = []
    for line in lines:
        sentence = " ".join(unicodedata.normalize("NFC", line).split())
        if sentence and len(sentence) <= 1000 and sentence not in seen:
            seen.add(sentence)
            kept.append(sentence)
    chosen = set(random.Random(SEED).sample(range(len(kept)), min(SAMPLE, len(kept))))
    name = corpus.stem
    records = [
        {
            "id": row_id(name, s),
            "sentence": s,
            "split": "aigen" if i in chosen else "other",
            "method": "sts" if i in chosen else None,
        }
        for i, s in enumerate(kept)
    ]
    pq.write_table(rows_table(records), workdir / "rows.parquet")
    return len(records)


def worker(approach: str, corpus: Path, trace: bool) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    import pyarrow as pa

    runs = {
        "cseaug": run_cseaug,
        "cseaug-lenient": lambda corpus, workdir: run_cseaug(corpus, workdir, lenient=True),
        "naive": run_naive,
    }
    run = runs[approach]
    with tempfile.TemporaryDirectory() as workdir:
        # Warm-up on the first lines: the lazy imports (pyarrow pulls in pandas on first use)
        # are not part of the measurement.
        head = Path(workdir) / f"{corpus.stem}.txt"
        with open(corpus, encoding="utf-8") as source:
            head.write_text("".join(itertools.islice(source, 2_000)), encoding="utf-8")
        run(head, Path(workdir))
    pa.default_memory_pool().release_unused()
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trace:
        tracemalloc.start()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        rows = run(corpus, Path(workdir))
    elapsed = time.perf_counter() - began
    result = {
        "rows": rows,
        "time_s": elapsed,
        "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_start_mb": start_rss / 1024,
        "arrow_peak_mb": pa.default_memory_pool().max_memory() / 2**20,
    }
    if trace:
        result["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    print(json.dumps(result))


def measure(approach: str, corpus: Path, trace: bool) -> dict:
    command = [sys.executable, __file__, "--worker", approach, "--corpus", str(corpus)]
    if trace:
        command.append("--trace")
    env = {**os.environ, "CSEAUG_PROGRESS": "0"}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="Lines of the large corpus.")
    parser.add_argument("--small", type=int, default=250_000, help="Lines of the small corpus.")
    parser.add_argument(
        "--repeat", type=int, default=1, help="Timed runs per approach; the median is reported."
    )
    parser.add_argument("--worker", choices=[*APPROACHES, "generate"], help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "generate":
        generate(args.corpus, args.count)
        return
    if args.worker:
        worker(args.worker, args.corpus, args.trace)
        return

    with tempfile.TemporaryDirectory() as tmp:
        results: dict[tuple[str, int], dict] = {}
        for lines in (args.small, args.lines):
            corpus = Path(tmp) / f"synthetic_{lines}.txt"
            # In a child process: the generator's Python lists would otherwise raise this
            # process's peak RSS, which children inherit in ru_maxrss.
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--worker",
                    "generate",
                    "--corpus",
                    str(corpus),
                    "--count",
                    str(lines),
                ],
                check=True,
            )
            size_mb = corpus.stat().st_size / 2**20
            print(f"corpus: {lines:,} lines, {size_mb:.1f} MiB", flush=True)
            runs: dict[str, list[dict]] = {approach: [] for approach in APPROACHES}
            for _ in range(args.repeat):
                for approach in APPROACHES:
                    runs[approach].append(measure(approach, corpus, trace=False))
            for approach in APPROACHES:
                plain = sorted(runs[approach], key=lambda r: r["time_s"])[len(runs[approach]) // 2]
                traced = measure(approach, corpus, trace=True)
                plain["traced_peak_mb"] = traced["traced_peak_mb"]
                results[(approach, lines)] = plain
                print(
                    f"  {approach:14s} rows={plain['rows']:>9,}  time={plain['time_s']:6.2f} s  "
                    f"RSS peak={plain['rss_peak_mb']:7.1f} MiB (+{plain['rss_peak_mb'] - plain['rss_start_mb']:.1f} "
                    f"over imports)  Arrow pool peak={plain['arrow_peak_mb']:6.1f} MiB  "
                    f"Python allocations peak (tracemalloc)={plain['traced_peak_mb']:7.1f} MiB",
                    flush=True,
                )
            ours, naive = results[("cseaug", lines)], results[("naive", lines)]
            lenient = results[("cseaug-lenient", lines)]
            print(
                f"  ratio cseaug/cseaug-lenient (cost of the hostile-text rules): "
                f"time {ours['time_s'] / lenient['time_s']:.3f}x, Arrow pool peak "
                f"{ours['arrow_peak_mb'] / lenient['arrow_peak_mb']:.3f}x"
            )
            if ours["rows"] != naive["rows"]:
                print(f"  WARNING: row counts differ ({ours['rows']} vs {naive['rows']})")
            print(
                f"  ratio naive/cseaug: time {naive['time_s'] / ours['time_s']:.2f}x, "
                f"RSS over imports {(naive['rss_peak_mb'] - naive['rss_start_mb']) / (ours['rss_peak_mb'] - ours['rss_start_mb']):.2f}x, "
                f"Python allocations {naive['traced_peak_mb'] / ours['traced_peak_mb']:.1f}x"
            )
        print_ratio(
            "corpus_naive_vs_cseaug_time",
            naive["time_s"] / ours["time_s"],
            f"{args.lines:,} lines; higher: cseaug faster",
        )
        extra = args.lines - args.small
        print(f"growth of the tracemalloc peak from {args.small:,} to {args.lines:,} lines:")
        for approach in APPROACHES:
            grow = (
                results[(approach, args.lines)]["traced_peak_mb"]
                - results[(approach, args.small)]["traced_peak_mb"]
            )
            print(
                f"  {approach:14s} +{grow:7.1f} MiB  ({grow * 2**20 / extra:6.1f} bytes per extra line)"
            )


if __name__ == "__main__":
    main()
