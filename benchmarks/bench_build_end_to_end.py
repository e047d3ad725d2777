"""A whole `cseaug build`, run as a user runs it, against a bare client loop sending the same prompts.

An NGCSE Wiki.STS build (``configs/wiki-sts.yaml``: 3 requests per sampled sentence) of
``--samples`` sentences runs through the ``cseaug`` command in a child process, against a
local OpenAI-compatible server with a fixed latency (``tests/fake_openai_server.py``, in its
own process), at ``llm.concurrency`` 64. The baseline, measured in the same run just before
and just after the build (their mean, so drift hits both sides): a minimal asyncio loop over
the official client (``bench_llm_throughput.minimal_loop``) sending exactly the prompts the
build sends, collected with the dry run's recording backend.

Then the same command again on the same output root: a warm rebuild with nothing to send.

Prints wall times, the ratio build / bare loop (target <= 2), the build's breakdown from its
manifest's ``timings`` (start-up, Prefect's start, sampling, generation, publishing,
diagnostics, orchestration; the process start before the CLI runs and Prefect's stop after
the version is committed are what the outside clock adds), how many of the cosine-similarity
pass's texts the encoder worker embedded before publishing began (``summary.json`` →
``cs.embedding``), the build's peak memory
(``process_memory.py``), the warm rebuild's seconds (target <= 10) with what it said (an
unchanged rebuild publishes nothing, so it has no manifest of its own) and ``RATIO`` lines
for ``make bench``.

Prefect: by default the command starts its temporary server as it does out of the box;
``--prefect-server`` first starts ``prefect server start`` (not timed) and points the builds
at it with ``PREFECT_API_URL``, the normal set-up for repeated builds (docs/prefect.md).

Inputs: ``../shared/data`` (the Wikipedia sentences and STS12 train patterns) when present,
else a generated corpus and the paper's pattern examples.

    python benchmarks/bench_build_end_to_end.py [--samples 2000] [--latency 0.05] [--prefect-server]
        [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO / "tests"), str(REPO)]

from bench_llm_throughput import minimal_loop  # noqa: E402
from bench_prefect_share import write_corpus  # noqa: E402
from fake_openai_server import start_server_process  # noqa: E402
from process_memory import PeakMemory, run_sampled  # noqa: E402
from ratio import print_ratio  # noqa: E402

CLI = str(Path(sys.executable).with_name("cseaug"))
PHASES = (
    "startup",
    "prefect_start",
    "plan",
    "generate",
    "publish",
    "diagnostics",
    "orchestration",
)
LABELS = {
    "startup": "start-up (CLI, config)",
    "prefect_start": "Prefect start (server, flow run)",
    "plan": "sampling (plan: corpus, shards)",
    "generate": "generation (shards)",
    "publish": "publishing (data files)",
    "diagnostics": "diagnostics (MER/CS, plots)",
    "orchestration": "Prefect between tasks",
}


def overrides(args: argparse.Namespace, corpus: Path, root: Path, base_url: str) -> list[str]:
    """The `--set` values a user would pass to run wiki-sts against the local server."""
    values = {
        "corpus.path": str(corpus),
        "sample.size": args.samples,
        "llm.backend": "openai-compatible",
        "llm.base_url": base_url,
        "llm.model": "fake",  # a name the loopback server lists (the build probes it)
        "llm.concurrency": args.concurrency,
        "output.root": str(root),
        # the loopback server echoes one text for every level, which the quality gate stops;
        # with 0 the gate still measures (its time is in the build's) and publishes anyway
        "publish.min_pattern_share": 0,
    }
    if (SHARED / "sts12_train").is_dir():
        values["patterns.path"] = str(SHARED / "sts12_train")
    else:
        values.update({"patterns.source": "paper", "patterns.path": "null"})
    if args.cs_sample is not None:
        values["diagnostics.cs_sample"] = args.cs_sample
    if args.encoder is not None:
        values["diagnostics.encoder"] = args.encoder
    return [f"{key}={value}" for key, value in values.items()] + args.set


def build_requests(settings: list[str]) -> list:
    """Every request the build sends, as the dry run records them."""
    from cseaug.config import load_config
    from cseaug.corpus.prepare import prepare_corpus
    from cseaug.pipeline.dry_run import RecordingBackend
    from cseaug.pipeline.stages import make_llm_stage

    cfg = load_config(REPO / "configs" / "wiki-sts.yaml", settings)
    recorder = RecordingBackend()
    make_llm_stage(cfg, recorder)(prepare_corpus(cfg.corpus, cfg.sample, cfg.method).sample)
    return recorder.requests


def bare_loop(base_url: str, requests: list, concurrency: int) -> float:
    started = time.perf_counter()
    asyncio.run(minimal_loop(base_url, requests, concurrency, "post", "aiohttp"))
    return time.perf_counter() - started


def run_cli(settings: list[str], env: dict[str, str]) -> tuple[float, str, PeakMemory]:
    """`cseaug build` of wiki-sts with ``settings``: wall seconds, its output, its peak memory."""
    command = [CLI, "build", "--config", str(REPO / "configs" / "wiki-sts.yaml")]
    for item in settings:
        command += ["--set", item]
    started = time.perf_counter()
    done, memory = run_sampled(command, env=env, cwd=REPO)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"cseaug build failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, done.stderr + done.stdout, memory


def latest_manifest(root: Path) -> dict:
    versions = sorted((root / "datasets" / "wiki-sts").glob("v[0-9]*"))
    return json.loads((versions[-1] / "manifest.json").read_text())


def latest_cs(root: Path) -> dict:
    """The ``cs`` part of the latest version's diagnostics summary (empty without diagnostics)."""
    versions = sorted((root / "datasets" / "wiki-sts").glob("v[0-9]*"))
    summary = versions[-1] / "diagnostics" / "summary.json"
    return json.loads(summary.read_text())["cs"] if summary.is_file() else {}


def start_prefect_server(home: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`prefect server start` on a free port with its own PREFECT_HOME; waits until healthy."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server_env = {**env, "PREFECT_HOME": str(home)}
    prefect = str(Path(sys.executable).with_name("prefect"))
    process = subprocess.Popen(
        [prefect, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=server_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                if answer.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("prefect server start did not answer within 180 s")


def add_set_option(parser: argparse.ArgumentParser) -> None:
    """``--set KEY=VALUE`` (repeatable): more `cseaug build --set` values, read by :func:`overrides`."""
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one more `cseaug build --set`, e.g. execution.shard_size=500 (repeatable)",
    )


def stop_all(server, prefect_server: subprocess.Popen | None, work: Path) -> None:
    """Stop the loopback server and the Prefect server (when one was started); remove ``work``."""
    server.stop()
    if prefect_server is not None:
        prefect_server.terminate()
        prefect_server.wait(timeout=30)
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2000, help="sampled sentences (x3 requests)")
    parser.add_argument("--latency", type=float, default=0.05, help="server latency in seconds")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--cs-sample", type=int, default=None, help="diagnostics.cs_sample")
    parser.add_argument(
        "--encoder",
        default=None,
        help="diagnostics.encoder, e.g. a local copy of all-MiniLM-L6-v2 with its onnx/model.onnx",
    )
    add_set_option(parser)
    parser.add_argument(
        "--prefect-server",
        action="store_true",
        help="run the builds against a running `prefect server start` (PREFECT_API_URL)",
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    env = {
        **os.environ,
        "CSEAUG_PROGRESS": "0",
        "PREFECT_HOME": str(work / "prefect-home"),
    }
    env.pop("PREFECT_API_URL", None)
    prefect_server = None
    server = start_server_process(args.latency)
    try:
        wiki = SHARED / "wiki" / "wiki1m_for_simcse_first11914.txt"
        corpus = work / "corpus.txt"
        if wiki.is_file():
            shutil.copy(wiki, corpus)
        else:
            write_corpus(corpus, max(3 * args.samples, 6000))
        if args.prefect_server:
            prefect_server, env["PREFECT_API_URL"] = start_prefect_server(work / "server-home", env)
        root = work / "storage"
        settings = overrides(args, corpus, root, server.base_url)
        requests = build_requests(settings)
        bare_loop(server.base_url, requests[: args.concurrency * 4], args.concurrency)  # warm-up
        before = bare_loop(server.base_url, requests, args.concurrency)
        served = server.stats()["total"]
        build, _, memory = run_cli(settings, env)
        sent = server.stats()["total"] - served  # the build's requests, not the bare loops'
        after = bare_loop(server.base_url, requests, args.concurrency)
        timings = latest_manifest(root)["timings"]
        embedding = latest_cs(root).get("embedding", {})
        served = server.stats()["total"]
        rebuild, rebuild_output, _ = run_cli(settings, env)
        rebuild_sent = server.stats()["total"] - served
    finally:
        stop_all(server, prefect_server, work)

    bare = (before + after) / 2
    prefect = "running server (PREFECT_API_URL)" if args.prefect_server else "temporary server"
    print(
        f"cseaug build wiki-sts, {args.samples:,} samples = {len(requests):,} requests, "
        f"{args.latency * 1000:.0f} ms server, concurrency {args.concurrency}, Prefect: {prefect}"
    )
    print(f"  bare client loop:  {bare:8.2f} s  (before {before:.2f} s, after {after:.2f} s)")
    print(f"  cseaug build:      {build:8.2f} s  ({sent:,} requests reached the server)")
    print("  breakdown (the build's manifest timings):")
    for phase in PHASES:
        if phase in timings:
            print(f"    {LABELS[phase]:<34} {timings[phase]:8.2f} s")
    accounted = sum(timings.get(p, 0.0) for p in PHASES)
    print(f"    {'outside them (process start, stop)':<34} {build - accounted:8.2f} s")
    if embedding:
        print(
            f"  CS texts embedded: {embedding['texts']:,}, {embedding['before_publish']:,} of them "
            f"before publishing began (while the LLM generated), {embedding['after_publish']:,} after"
        )
    print(f"  peak memory:       {memory}")
    said = next((line.strip() for line in rebuild_output.splitlines() if "unchanged" in line), "")
    print(f"  warm rebuild:      {rebuild:8.2f} s  ({rebuild_sent} requests; it said: {said!r})")
    print_ratio("build_end_to_end_vs_bare_loop", build / bare, "wall time; target <= 2")
    print_ratio("warm_rebuild_vs_bare_loop", rebuild / bare, "wall time; target: rebuild <= 10 s")


if __name__ == "__main__":
    main()
