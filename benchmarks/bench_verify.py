"""Cost of verifying a version's files against its manifest, against the read itself.

Publishes one version of N rows (default 1,000,000: 10% aigen rows with three views, the
rest plain sentences, 200,000 rows per file), then times, in the same run and on the same
warm page cache (each variant five times, alternating, the fastest kept):

* baseline: the rows read as before verification existed (``pyarrow.dataset`` over the
  data files, no hashing);
* unhashed: the same per-file reader as the verified one, without the hash (the cost of
  the hash alone is verified / unhashed);
* verified: :func:`cseaug.dataset.reader.iter_batches`, which reads each data file once,
  hashes those bytes and parses the rows from them (what export, the trainer and diagnose
  use);
* ``cseaug verify``: :func:`cseaug.dataset.verify.verify_version`, every file hashed.

Both reads are timed for every column and for one column (``sentence``): a projection
reads only part of each file, while verification must hash all of it.

Usage: python benchmarks/bench_verify.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ratio import print_ratio

BATCH = 10_000
REPEATS = 5


def _batches(rows: int) -> Iterator:
    import pyarrow as pa

    from cseaug.dataset.schema import CANONICAL_SCHEMA, row_id

    names = ("id", "sentence", "split", "method", "positive", "intermediate", "negative")
    schema = pa.schema([CANONICAL_SCHEMA.field(n) for n in names])
    for start in range(0, rows, BATCH):
        index = range(start, min(rows, start + BATCH))
        texts = [
            f"plain corpus sentence number {i} of the wiki dump, with more words" for i in index
        ]
        aigen = [i % 10 == 0 for i in index]

        def view(kind: str, texts=texts, aigen=aigen) -> pa.Array:
            return pa.array(
                [f"{kind} view of: {t}" if a else None for t, a in zip(texts, aigen, strict=True)]
            )

        yield pa.record_batch(
            [
                pa.array([row_id("wiki", t) for t in texts]),
                pa.array(texts),
                pa.array(["aigen" if a else "other" for a in aigen]),
                pa.array(["sts" if a else None for a in aigen]),
                view("positive"),
                view("intermediate"),
                view("negative"),
            ],
            schema=schema,
        )


def _baseline(version: Path, columns: list[str] | None) -> int:
    import pyarrow.dataset as pds

    files = sorted(str(p) for p in (version / "data").glob("*.parquet"))
    return sum(b.num_rows for b in pds.dataset(files).to_batches(columns=columns))


def _same_reader_unhashed(version: Path, columns: list[str] | None) -> int:
    import pyarrow.parquet as pq

    files = sorted((version / "data").glob("*.parquet"))
    return sum(
        b.num_rows for f in files for b in pq.ParquetFile(f).iter_batches(65_536, columns=columns)
    )


def _verified(version: Path, columns: list[str] | None) -> int:
    from cseaug.dataset.reader import iter_batches

    return sum(b.num_rows for b in iter_batches(version, columns))


def _verify_all(version: Path, columns: list[str] | None) -> int:
    from cseaug.dataset.verify import verify_version

    report = verify_version(version)
    assert report.ok, report.problems()
    return report.checked


def _seconds(function: Callable[[Path, list[str] | None], int], *args) -> float:
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    os.environ["CSEAUG_PROGRESS"] = "0"

    from cseaug.config import RunConfig
    from cseaug.dataset.manifest import build_manifest
    from cseaug.dataset.staging import publish_version

    cfg = RunConfig.model_validate({"name": "bench", "method": "osscse", "corpus": {"path": "c"}})
    with tempfile.TemporaryDirectory() as root:
        started = time.perf_counter()
        published = publish_version(
            _batches(args.rows), [], root=root, name="bench", manifest=build_manifest(cfg),
            rows_per_file=200_000,
        )  # fmt: skip
        size = sum(p.stat().st_size for p in (published.path / "data").glob("*.parquet"))
        print(
            f"published {args.rows:,} rows in {time.perf_counter() - started:.1f} s: "
            f"{len(published.manifest['files'])} files, data {size / 2**20:.1f} MiB"
        )
        for label, columns in (("every column", None), ("one column", ["sentence"])):
            variants = {
                "baseline": _baseline,
                "unhashed": _same_reader_unhashed,
                "verified": _verified,
            }
            times: dict[str, list[float]] = {name: [] for name in variants}
            for _ in range(REPEATS):
                for name, function in variants.items():
                    times[name].append(_seconds(function, published.path, columns))
            base, plain, verified = (min(times[name]) for name in variants)
            print(
                f"read, {label}: baseline {base:.3f} s, same reader unhashed {plain:.3f} s, "
                f"verified {verified:.3f} s; ratio verified/baseline {verified / base:.2f}x, "
                f"verified/unhashed {verified / plain:.2f}x"
            )
        whole = min(_seconds(_verify_all, published.path, None) for _ in range(REPEATS))
        base = min(_seconds(_baseline, published.path, None) for _ in range(REPEATS))
        print(f"cseaug verify (every file hashed): {whole:.3f} s")
        print_ratio(
            "verify_all_vs_baseline_read", whole / base, "seconds; the baseline reads every column"
        )


if __name__ == "__main__":
    main()
