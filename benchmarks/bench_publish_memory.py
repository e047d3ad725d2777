"""Peak memory and time of publishing a large `other` share: streamed batches vs Python rows.

Each variant runs in its own process (so ``ru_maxrss`` is its own peak) and publishes the
same N `other` rows (default 1,000,000, a wiki1m-sized corpus):

* streamed (the writer's way): the rows arrive as Arrow record batches of 10,000;
* baseline: the rows are first held as Python dicts and turned into one table with
  ``rows_table`` (what a pipeline that collects rows in Python would do).

Usage: python benchmarks/bench_publish_memory.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import tempfile
import time
from pathlib import Path

from ratio import print_ratio

BATCH = 10_000


def _sentence(i: int) -> str:
    return f"plain corpus sentence number {i} of the wiki dump, with a few more words"


def _run(variant: str, rows: int, queue: mp.Queue) -> None:
    os.environ["CSEAUG_PROGRESS"] = "0"
    import pyarrow as pa

    from cseaug.config import RunConfig
    from cseaug.dataset.manifest import build_manifest
    from cseaug.dataset.schema import CANONICAL_SCHEMA, row_id, rows_table
    from cseaug.dataset.staging import publish_version

    cfg = RunConfig.model_validate(
        {"name": "bench", "method": "osscse", "corpus": {"path": "c.txt"}}
    )
    manifest = build_manifest(cfg)
    schema = pa.schema([CANONICAL_SCHEMA.field(n) for n in ("id", "sentence", "split")])

    def streamed():
        for start in range(0, rows, BATCH):
            texts = [_sentence(i) for i in range(start, min(rows, start + BATCH))]
            yield pa.record_batch(
                [
                    pa.array([row_id("wiki", t) for t in texts]),
                    pa.array(texts),
                    pa.repeat(pa.scalar("other"), len(texts)),
                ],
                schema=schema,
            )

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as root:
        if variant == "streamed":
            source = streamed()
        else:
            records = [
                {"id": row_id("wiki", _sentence(i)), "sentence": _sentence(i), "split": "other"}
                for i in range(rows)
            ]
            source = [rows_table(records)]
        published = publish_version(source, [], root=root, name="bench", manifest=manifest)
        assert published.manifest["counts"]["rows"] == rows
        size = sum(p.stat().st_size for p in Path(published.path, "data").iterdir())
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    queue.put((variant, elapsed, before / 1024, peak / 1024, size / 2**20))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    results = {}
    for variant in ("baseline", "streamed"):
        queue = ctx.Queue()
        proc = ctx.Process(target=_run, args=(variant, args.rows, queue))
        proc.start()
        results[variant] = queue.get()
        proc.join()
    print(f"{args.rows:,} other rows")
    for variant, elapsed, start_mib, peak_mib, size_mib in results.values():
        print(
            f"  {variant:<9} {elapsed:6.1f} s  peak RSS {peak_mib:7.0f} MiB "
            f"(after imports {start_mib:4.0f} MiB)  data {size_mib:.0f} MiB"
        )
    base, stream = results["baseline"], results["streamed"]
    print_ratio(
        "publish_streamed_vs_baseline_rss",
        (stream[3] - stream[2]) / (base[3] - base[2]),
        "peak RSS above imports; lower is better",
    )
    print(
        f"streamed / baseline: peak RSS above imports {(stream[3] - stream[2]) / (base[3] - base[2]):.2f}x, "
        f"time {stream[1] / base[1]:.2f}x"
    )


if __name__ == "__main__":
    main()
