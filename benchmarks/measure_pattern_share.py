"""Measurement: how often human-written data keeps the pattern order the quality gate checks.

The quality gate (docs/quality.md, "The quality gate") stops a build whose generated views
keep the method's order too rarely. Its default threshold, ``publish.min_pattern_share``,
comes from this script: the same check (:func:`cseaug.diagnostics.patterns.order_matrix`
and :class:`~cseaug.diagnostics.patterns.OrderCounts`, the code the gate runs) on
human-written data with the structure an LLM is asked to produce:

* NLI (NGCSE's NLI patterns): the SNLI dev + test triples
  ``../shared/data/nli/nli_triples_snli_devtest.csv`` as (anchor = premise, positive =
  entailment, negative = contradiction);
* STS (NGCSE's STS patterns: positive score > 4, intermediate 1-4, negative < 1): graded
  triples built from the STS Benchmark (raw release, train + dev + test) and the STS12
  train pairs: every sentence that is paired with sentences of at least two of the three
  levels becomes an anchor, its first pair of each level a view (pairs read in file
  order, both sides of a pair may be an anchor, duplicate pairs counted once).

Each share is printed with its standard error sqrt(p(1-p)/n) and for cosine similarity
(the diagnostics encoder, float32), MER, and both together (a row keeps both orders).
Also printed: the shares of the same rows with positive and negative exchanged, what a
server that swaps them produces.

Usage:
    python benchmarks/measure_pattern_share.py [--data ../shared/data] [--limit N]
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from cseaug.diagnostics.patterns import OrderMetric, order_holds, order_matrix
from cseaug.encoders.loading import load_encoder
from cseaug.readers.benchmarks import read_nli_csv, read_sts_dir, read_sts_table

LEVELS = ("positive", "intermediate", "negative")


def level_of(score: float) -> str | None:
    """NGCSE's STS level of a gold score (patterns.md: > 4, 1-4, < 1)."""
    if score > 4:
        return "positive"
    if 1 <= score <= 4:
        return "intermediate"
    if score < 1:
        return "negative"
    return None


def sts_triples(data: Path) -> pa.Table:
    """Graded (anchor, positive, intermediate, negative) rows from STS-B and STS12 train."""
    tables = [
        read_sts_table(data / "stsbenchmark" / f"sts-{s}.csv") for s in ("train", "dev", "test")
    ]
    tables.append(read_sts_dir(data / "sts12_train"))
    by_anchor: dict[str, dict[str, str]] = defaultdict(dict)
    seen: set[tuple[str, str]] = set()
    for table in tables:
        for row in table.select(["s1", "s2", "score"]).to_pylist():
            pair = (row["s1"], row["s2"])
            level = level_of(row["score"])
            if pair in seen or level is None or row["s1"] == row["s2"]:
                continue
            seen.add(pair)
            for anchor, view in (pair, pair[::-1]):
                by_anchor[anchor].setdefault(level, view)
    rows = [
        {"sentence": anchor, **{level: views.get(level) for level in LEVELS}}
        for anchor, views in by_anchor.items()
        if len(views) >= 2
    ]
    return _canonical(rows)


def nli_triples(data: Path) -> pa.Table:
    """(anchor = premise, positive = entailment, negative = contradiction) rows of SNLI."""
    table = read_nli_csv(data / "nli" / "nli_triples_snli_devtest.csv")
    rows = [
        {"sentence": r["premise"], "positive": r["entailment"], "negative": r["contradiction"]}
        for r in table.to_pylist()
    ]
    return _canonical(rows)


def _canonical(rows: list[dict]) -> pa.Table:
    columns = {
        "id": [str(i) for i in range(len(rows))],
        "sentence": [r["sentence"] for r in rows],
    }
    for level in LEVELS:
        if any(level in r for r in rows):
            columns[level] = [r.get(level) for r in rows]
    return pa.table(columns)


def swapped(table: pa.Table) -> pa.Table:
    """The rows with positive and negative exchanged (a server that swaps them)."""
    names = [
        "negative" if n == "positive" else "positive" if n == "negative" else n
        for n in table.column_names
    ]
    return table.rename_columns(names)


def shares(matrices: dict[OrderMetric, np.ndarray]) -> dict[str, tuple[float, int]]:
    """Share of eligible rows keeping the order per metric and for both; with n."""
    out: dict[str, tuple[float, int]] = {}
    kept = {}
    for metric, matrix in matrices.items():
        eligible, ordered = order_holds(matrix, metric)
        kept[metric] = ordered
        n = int(eligible.sum())
        out[metric] = (float(ordered[eligible].mean()), n)
    both = kept["cs"] & kept["mer"]
    out["both"] = (float(both[eligible].mean()), n)
    return out


def report(name: str, table: pa.Table, encoder) -> None:
    """Print one data set's shares, as it is and swapped."""
    started = time.perf_counter()
    for label, rows in ((name, table), (f"{name}, positive <-> negative", swapped(table))):
        matrices = {m: order_matrix(rows, m, encoder) for m in ("cs", "mer")}
        for metric, (share, n) in shares(matrices).items():
            error = math.sqrt(share * (1 - share) / n)
            print(f"{label:40s} {metric:4s} share {share:.3f} +- {error:.3f}  (n = {n:,})")
    print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--limit", type=int, default=None, help="rows per data set (default all)")
    args = parser.parse_args()
    encoder = load_encoder()
    print(f"encoder: {encoder.name}")
    for name, table in (
        ("SNLI triples (nli)", nli_triples(args.data)),
        ("STS graded triples (sts)", sts_triples(args.data)),
    ):
        if args.limit is not None:
            table = table.slice(0, args.limit)
        report(name, table, encoder)
    encoder.close()


if __name__ == "__main__":
    main()
