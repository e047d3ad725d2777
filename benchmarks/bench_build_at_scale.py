"""A 20,000-sentence `cseaug build` (60,000 requests) on the local runner, on Dask, and over two endpoints.

The shipped NGCSE Wiki.STS config (``configs/wiki-sts.yaml``: ``sample.size`` 20,000, 3
requests per sampled sentence) runs through the ``cseaug`` command in a child process, as
a user runs it, against loopback OpenAI-compatible servers with a fixed latency
(``tests/fake_openai_server.py``, each in its own process), ``llm.concurrency`` 64, once per
variant, each on a fresh output root and LLM cache (every request is sent):

- ``local``: the default runner, one endpoint;
- ``dask``: ``execution.runner: dask`` (a local cluster of 2 workers, docs/scaling.md);
- ``endpoints``: ``llm.base_url`` a list of two loopback servers (docs/llm-backends.md).

For each it prints the wall time against the ideal (requests x latency / requests in
flight: ``concurrency`` x endpoints x shards at once), Prefect's share (the manifest's
``prefect_start`` + ``orchestration`` over the wall time), the manifest's breakdown and the
peak memory (``process_memory.py``: the build's process tree sampled from /proc, and the
largest single process, its ``VmHWM``), then ``RATIO`` lines (wall / ideal per variant).

Corpus: the 11,914 Wikipedia sentences of ``../shared/data`` repeated until there are 20%
more lines than samples, every copy after the first numbered (``" (copy 2)"``...) so the
exact-duplicate filter keeps them; without ``../shared``, the generated corpus of
``bench_prefect_share.py``. Patterns: STS12 train from ``../shared`` or the paper's examples.

    python benchmarks/bench_build_at_scale.py [--samples 20000] [--variants local dask endpoints]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_build_end_to_end import (
    CLI,
    PHASES,
    REPO,
    SHARED,
    ModelServer,
    add_set_option,
    latest_manifest,
    overrides,
)
from bench_prefect_share import write_corpus
from process_memory import PeakMemory, run_sampled
from ratio import print_ratio

WIKI = SHARED / "wiki" / "wiki1m_for_simcse_first11914.txt"
VARIANTS = ("local", "dask", "endpoints")
DASK_WORKERS = 2  # the default local cluster (execution.runner.workers)


def numbered_corpus(path: Path, lines: int) -> str:
    """Write ``lines`` sentences to ``path``; say what they are."""
    if not WIKI.is_file():
        write_corpus(path, lines)
        return f"{lines:,} generated sentences (bench_prefect_share.write_corpus)"
    wiki = [line for line in WIKI.read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open("w", encoding="utf-8") as out:
        for i in range(lines):
            copy = i // len(wiki)
            out.write(wiki[i % len(wiki)] + (f" (copy {copy + 1})" if copy else "") + "\n")
    return f"{lines:,} lines: the {len(wiki):,} Wikipedia sentences of ../shared, copies numbered"


def run_cli(settings: list[str], env: dict[str, str]) -> tuple[float, PeakMemory]:
    """`cseaug build` of wiki-sts with ``settings``: wall seconds and peak memory."""
    command = [CLI, "build", "--config", str(REPO / "configs" / "wiki-sts.yaml")]
    for item in settings:
        command += ["--set", item]
    started = time.perf_counter()
    done, memory = run_sampled(command, env=env, cwd=REPO)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"cseaug build failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, memory


def run_variant(variant: str, args: argparse.Namespace, corpus: Path, work: Path) -> dict:
    """One build of ``variant`` on fresh storage and fresh servers; its figures."""
    servers = [ModelServer(args.latency) for _ in range(2 if variant == "endpoints" else 1)]
    urls = [server.base_url for server in servers]
    root = work / variant
    base_url = f"[{', '.join(urls)}]" if len(urls) > 1 else urls[0]
    settings = overrides(args, corpus, root, base_url)
    settings.append(f"execution.cache_path={root / 'llm-cache.sqlite'}")
    if variant == "dask":
        settings.append("execution.runner=dask")
    env = {**os.environ, "CSEAUG_PROGRESS": "0", "PREFECT_HOME": str(work / "prefect-home")}
    env.pop("PREFECT_API_URL", None)
    try:
        seconds, memory = run_cli(settings, env)
        sent = [server.window()["requests"] for server in servers]
    finally:
        for server in servers:
            server.stop()
    timings = latest_manifest(root)["timings"]
    shard_size = 5000  # execution.shard_size's default
    at_once = min(DASK_WORKERS, -(-args.samples // shard_size)) if variant == "dask" else 1
    in_flight = args.concurrency * len(urls) * at_once
    ideal = sum(sent) * args.latency / in_flight
    prefect = timings.get("prefect_start", 0.0) + timings.get("orchestration", 0.0)
    print(f"\n{variant}: {' + '.join(f'{n:,}' for n in sent)} requests, {in_flight} in flight")
    print(f"  wall time       {seconds:8.1f} s   ideal {ideal:6.1f} s   ({seconds / ideal:.1f}x)")
    print(f"  Prefect's share {prefect:8.1f} s   {100 * prefect / seconds:5.1f}% of the wall time")
    print("  breakdown: " + ", ".join(f"{p} {timings[p]:.1f} s" for p in PHASES if p in timings))
    print(f"  peak memory     {memory}")
    return {"seconds": seconds, "ideal": ideal}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=20_000, help="sampled sentences (x3)")
    parser.add_argument("--latency", type=float, default=0.05, help="server latency in seconds")
    parser.add_argument("--concurrency", type=int, default=64, help="llm.concurrency")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--cs-sample", type=int, default=None, help="diagnostics.cs_sample")
    parser.add_argument("--encoder", default=None, help="diagnostics.encoder")
    add_set_option(parser)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    corpus = work / "corpus.txt"
    what = numbered_corpus(corpus, args.samples + args.samples // 5)
    print(
        f"cseaug build wiki-sts, {args.samples:,} samples = {3 * args.samples:,} requests, "
        f"{args.latency * 1000:.0f} ms server, concurrency {args.concurrency}, "
        f"{os.cpu_count()} CPUs, Prefect: temporary server\n  corpus: {what}"
    )
    results = {variant: run_variant(variant, args, corpus, work) for variant in args.variants}
    for variant, result in results.items():
        print_ratio(
            f"build_{variant}_vs_ideal",
            result["seconds"] / result["ideal"],
            f"wall time / (requests x latency / in flight), {args.samples:,} samples; ideal 1",
        )


if __name__ == "__main__":
    main()
