"""The same CPU-heavy build on the local runner and on a local Dask cluster: the ratio.

The build is OssCSE (section 4: negation at the dependency root with spaCy, back-translation
through two pivots, MER) of Wikipedia sentences from ``../shared``, with the UD spaCy
pipeline of ``../shared/models`` and tiny FSMT pivot models built here (no download): the
shards' work is parsing, beam search and MER, all CPU. Both runs go through the flow
``build-hybrid-dataset`` under one temporary Prefect server (started before, not timed),
with fresh output roots, after a small local warm-up build (imports, first model loads);
the local runner runs before and after the Dask one and its mean is the baseline. Dask
starts its workers with ``OMP_NUM_THREADS=1``; set ``OMP_NUM_THREADS=1`` for this script
too to give the local runner the same torch threads. The Dask figure includes starting the cluster and each worker loading the
steps of every shard it runs: what a user of ``execution.runner: dask`` pays.

    python benchmarks/bench_runner.py [--sentences 600] [--shard-size 150] [--workers 2]

Prints the seconds of each run, the ratio local / dask (above 1: the cluster is faster) and
whether both published the same data (the manifest's data fingerprint).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from ratio import print_ratio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from cseaug.cli import apply_prefect_defaults  # noqa: E402

apply_prefect_defaults()  # what the CLI gives Prefect, for the flows run in this process
os.environ.setdefault("CSEAUG_PROGRESS", "0")

SHARED = REPO.parent / "shared"
WIKI = SHARED / "data/wiki/wiki1m_for_simcse_first11914.txt"
UD_MODEL = SHARED / "models/en_ud_ewt_sm"


def osscse_config(root: Path, pivots: dict, sentences: int, shard: int, runner: dict) -> dict:
    return {
        "name": "bench-runner",
        "method": "osscse",
        "corpus": {"name": "wiki", "path": str(WIKI)},
        "sample": {"size": sentences, "seed": 3, "include_other": False},
        "negation": {"spacy_model": str(UD_MODEL)},
        "backtranslation": {
            "pivots": pivots,
            "mer_range": [0.0, 1.0],
            "num_beams": 2,
            "batch_size": 32,
            "max_new_tokens": 16,
            "device": "cpu",
            "dtype": "float32",
        },
        "output": {"root": str(root), "exports": []},
        "execution": {"shard_size": shard, "runner": runner},
        "diagnostics": {"enabled": False},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=600)
    parser.add_argument("--shard-size", type=int, default=150)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if not (WIKI.is_file() and UD_MODEL.is_dir()):
        print(f"SKIPPED: {WIKI} or {UD_MODEL} not found (the benchmark reads ../shared)")
        return 0

    from prefect.testing.utilities import prefect_test_harness

    from cseaug_prefect.flows.build_hybrid_dataset import build_hybrid_dataset
    from tests.tiny_fsmt import build_tiny_pivots

    work = Path(tempfile.mkdtemp(prefix="bench-runner-"))
    pivots = {k: list(v) for k, v in build_tiny_pivots(work / "fsmt").items()}
    cluster = {"kind": "dask", "workers": args.workers}

    def build(name: str, runner: dict, sentences: int = args.sentences) -> tuple[float, str]:
        config = work / f"{name}.yaml"
        cfg = osscse_config(work / name, pivots, sentences, args.shard_size, runner)
        config.write_text(json.dumps(cfg), encoding="utf-8")
        started = time.perf_counter()
        summary = build_hybrid_dataset(config=str(config))
        seconds = time.perf_counter() - started
        manifest = json.loads((summary.version_dir / "manifest.json").read_text())
        return seconds, manifest["fingerprints"]["data"]

    with prefect_test_harness(server_startup_timeout=90):
        build(
            "warm-up", {"kind": "local"}, sentences=100
        )  # imports, first model loads: not counted
        local_before, local_data = build("local-before", {"kind": "local"})
        dask, dask_data = build("dask", cluster)
        local_after, _ = build("local-after", {"kind": "local"})
    local = (local_before + local_after) / 2

    shards = -(-args.sentences // args.shard_size)
    print(
        f"OssCSE build of {args.sentences} sentences ({shards} shards of {args.shard_size}), "
        f"{os.cpu_count()} CPUs"
    )
    print(
        f"  local runner:          {local:8.2f} s   ({local_before:.2f} s before, {local_after:.2f} s after)"
    )
    print(
        f"  dask, {args.workers} workers:       {dask:8.2f} s   (cluster start and per-shard model loading included)"
    )
    print_ratio("runner_local_vs_dask", local / dask, "wall time; above 1: the cluster is faster")
    print(f"  same data fingerprint: {local_data == dask_data}")
    return 0 if local_data == dask_data else 1


if __name__ == "__main__":
    sys.exit(main())
