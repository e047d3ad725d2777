"""Prefect's share of an end-to-end build: the same build through the flow and through the library.

Both builds use the same config (an NGCSE STS build of Wikipedia-like sentences against a
local OpenAI-compatible server with a fixed latency, in its own process) with fresh output
roots and caches, so both send every request. The flow runs under a temporary Prefect
server that is started (and timed) before the measured run, so the figure is the per-run
cost of tasks, states and logging, not the server's start.

    python benchmarks/bench_prefect_share.py [--sentences 3000] [--shard-size 500] [--latency 0.02]

Prints the seconds of each, Prefect's share ((flow - library) / flow) and the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from cseaug.cli import apply_prefect_defaults  # noqa: E402

apply_prefect_defaults()  # what the CLI gives Prefect, for the flows run in this process
os.environ.setdefault("CSEAUG_PROGRESS", "0")

import yaml  # noqa: E402
from ratio import print_ratio  # noqa: E402

from tests.fake_openai_server import start_server_process  # noqa: E402


def write_corpus(path: Path, n: int) -> None:
    words = [
        "the",
        "river",
        "city",
        "council",
        "school",
        "bridge",
        "museum",
        "harbour",
        "train",
        "festival",
        "market",
        "storm",
    ]
    with path.open("w") as handle:
        for i in range(n):
            handle.write(
                " ".join(words[(i * 7 + j) % len(words)] for j in range(8 + i % 9))
                + f" number {i}.\n"
            )


def write_config(
    path: Path, corpus: Path, root: Path, base_url: str, sentences: int, shard: int
) -> Path:
    config = {
        "name": "bench-prefect",
        "method": "sts",
        "corpus": {"path": str(corpus)},
        "sample": {"size": sentences, "seed": 1},
        "patterns": {"source": "paper"},
        "llm": {
            "backend": "openai-compatible",
            "base_url": base_url,
            "model": "fake",
            "concurrency": 64,
        },
        "output": {"root": str(root)},
        "execution": {"shard_size": shard},
        "diagnostics": {"enabled": False},
    }
    path.write_text(yaml.safe_dump(config))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--shard-size", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.02)
    args = parser.parse_args()

    from cseaug.config import load_config
    from cseaug.pipeline.local import run_build

    server = start_server_process(latency_s=args.latency)
    work = Path(tempfile.mkdtemp(prefix="bench-prefect-"))
    try:
        corpus = work / "corpus.txt"
        write_corpus(corpus, args.sentences * 2)

        def library_run(name: str) -> float:
            path = write_config(
                work / f"{name}.yaml",
                corpus,
                work / name,
                server.base_url,
                args.sentences,
                args.shard_size,
            )
            started = time.perf_counter()
            run_build(load_config(path))
            return time.perf_counter() - started

        library_run("warmup")  # imports, first client and writer set-up: not counted
        before = library_run("lib-before")

        from prefect.testing.utilities import prefect_test_harness

        from cseaug_prefect.flows.build_hybrid_dataset import build_hybrid_dataset

        flow_cfg = write_config(
            work / "flow.yaml",
            corpus,
            work / "flow",
            server.base_url,
            args.sentences,
            args.shard_size,
        )
        started = time.perf_counter()
        with prefect_test_harness(server_startup_timeout=90):
            startup = time.perf_counter() - started
            started = time.perf_counter()
            build_hybrid_dataset(config=str(flow_cfg))
            flow = time.perf_counter() - started
        # The library measured before and after the flow, so drift hits both sides alike.
        library = (before + library_run("lib-after")) / 2
    finally:
        server.stop()

    shards = -(-args.sentences // args.shard_size)
    print(
        f"build of {args.sentences} sentences ({args.sentences * 3} requests, {shards} shards, "
        f"{args.latency * 1000:.0f} ms server latency)"
    )
    print(
        f"  library calls:           {library:8.2f} s   (mean of a run before and after the flow)"
    )
    print(
        f"  Prefect flow:            {flow:8.2f} s   (temporary server start, not counted: {startup:.1f} s)"
    )
    print(f"  Prefect share of the run: {(flow - library) / flow:8.1%}")
    print_ratio(
        "prefect_flow_vs_library",
        flow / library,
        "wall time of the flow / the same calls without Prefect",
    )


if __name__ == "__main__":
    main()
