"""A whole `cseaug build`, run as a user runs it, in two parts: its fixed cost and its cost per request.

An NGCSE Wiki.STS build (``configs/wiki-sts.yaml``: 3 requests per sampled sentence) runs
through the ``cseaug`` command in a child process at each of ``--requests`` sizes, against a
loopback OpenAI-compatible server in its own process that answers like a model
(:func:`model_answer`: a different sentence for each level, in the order the quality gate
checks, so the gate publishes at its default ``publish.min_pattern_share`` and does its real
work), at ``--latency`` and ``llm.concurrency`` ``--concurrency``. Every build starts from a
fresh output root (no response cache, no embedding cache, no earlier version).

The server records when the first request of a run arrives and when its last answer leaves,
which splits a build's wall time into

* the **fixed cost**: the command's start to its first request, plus its last answer to the
  command's exit (goal: <= 2 s);
* the **marginal cost**: first request to last answer, per request, against the same window
  of a bare client loop (``bench_llm_throughput.minimal_loop``) sending exactly the prompts
  the build sends, measured before and after the builds of each size (goal: <= 1.02x).

Each size runs the build twice, once per way of getting Prefect's temporary server (no
``PREFECT_API_URL``): ``hand``, the command as it is (it starts the server itself while it
imports the flow, ``cseaug_prefect/flows/temporary_server.py``), and ``prefect``, the same
command leaving the server to Prefect (:data:`PREFECTS_OWN`); ``--prefect-server`` runs
both against a running ``prefect server start`` instead (then they do the same). A small
untimed build first creates the Prefect database. Also printed: the build's own ``timings``
(manifest), how many of the cosine-similarity texts the encoder embedded while the LLM
generated and how many after (``diagnostics/summary.json`` ``cs.embedding``), the quality
gate's share, and the load average beside each figure; ``RATIO`` lines for ``make bench``.

Inputs: ``../shared/data`` (the Wikipedia sentences and STS12 train patterns) when present,
else a generated corpus and the paper's pattern examples.

    python benchmarks/bench_build_end_to_end.py [--requests 500 6000] [--latency 0.5]
        [--ways hand prefect] [--prefect-server] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO / "tests"), str(REPO)]

from bench_llm_throughput import minimal_loop  # noqa: E402
from bench_prefect_share import write_corpus  # noqa: E402
from ratio import print_ratio  # noqa: E402

CLI = str(Path(sys.executable).with_name("cseaug"))
PREFECTS_OWN = (
    "import sys\n"
    "sys.argv = ['cseaug', *sys.argv[1:]]\n"
    "import cseaug.commands.build as command\n"
    "command.temporary_server = lambda: None  # Prefect starts its own when the flow needs it\n"
    "from cseaug.cli import run\n"
    "run()  # the `cseaug` script: its stop handlers too\n"
)
"""``cseaug build`` leaving Prefect's temporary server to Prefect (the ``prefect`` way)."""
PHASES = ("startup", "prefect_start", "plan", "generate", "publish", "diagnostics")
UNRELATED = (
    "The committee postponed the vote on the harbour budget until next spring.",
    "Heavy snow closed the mountain pass for most of the winter.",
    "She learned to play the cello at the age of forty.",
    "The bakery on the corner sells bread only in the morning.",
    "Two of the old bridges over the river were rebuilt in steel.",
    "The museum's collection of insects was moved to a larger hall.",
    "Farmers in the valley grow mostly barley and potatoes.",
    "The match was abandoned after the floodlights failed.",
)
"""What the model answers for a negative: a sentence about something else."""


def model_answer(system: str, sentence: str) -> str:
    """A model's view of ``sentence`` for the NGCSE STS prompt whose system message is
    ``system``: the positive keeps every word (reordered, introduced), the intermediate half
    of them, the negative none (:data:`UNRELATED`), so cosine similarity to the anchor falls
    from positive to negative as the quality gate expects.

    Example:
        >>> model_answer("... omitting certain details ...", "The old mill by the river burned down in 1921.")
        'It is about the old mill by the river.'
    """
    words = sentence.rstrip(".!?").split()
    if "omitting certain details" in system:
        kept = " ".join(words[: max(1, len(words) // 2)])
        return f"It is about {kept[:1].lower()}{kept[1:]}."
    if "distinct or even contradictory" in system:
        return UNRELATED[zlib.crc32(sentence.encode()) % len(UNRELATED)]
    half = len(words) // 2
    return "In other words, " + " ".join(words[half:] + words[:half]) + "."


def serve(latency: float) -> None:
    """The model-like server (``--serve``): prints ``PORT n``, then answers chat requests
    after ``latency`` s; ``GET /window`` returns the run's request count, first arrival and
    last answer (``time.time()``) and starts a new run."""
    from aiohttp import web
    from fake_openai_server import DEFAULT_MODELS, completion_body

    window: dict[str, float] = {}

    async def chat(request: web.Request) -> web.Response:
        window.setdefault("first", time.time())
        body = await request.json()
        messages = body["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        text = model_answer(system, messages[-1]["content"])
        await asyncio.sleep(latency)
        window["requests"] = window.get("requests", 0) + 1
        window["last"] = time.time()
        answer = completion_body(messages[-1]["content"], body.get("model", "m"), text)
        return web.Response(body=answer, content_type="application/json")

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": list(DEFAULT_MODELS)})

    async def read_window(_request: web.Request) -> web.Response:
        reply = dict(window)
        window.clear()
        return web.json_response(reply)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/window", read_window)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    print(f"PORT {port}", flush=True)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


class ModelServer:
    """:func:`serve` in a child process, so that it does not share this one's CPU."""

    def __init__(self, latency: float) -> None:
        command = [sys.executable, __file__, "--serve", str(latency)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline().split()[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        for _ in range(300):  # it prints its port before it listens
            try:
                self.window()
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit("the model-like server did not start within 30 s")

    def window(self) -> dict[str, float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/window", timeout=10) as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


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
    }
    if (SHARED / "sts12_train").is_dir():
        values["patterns.path"] = str(SHARED / "sts12_train")
    else:
        values.update({"patterns.source": "paper", "patterns.path": "null"})
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


def build_command(settings: list[str], way: str) -> list[str]:
    """`cseaug build` of wiki-sts with ``settings``, the command as it is or :data:`PREFECTS_OWN`."""
    command = [CLI] if way == "hand" else [sys.executable, "-c", PREFECTS_OWN]
    command += ["build", "--config", str(REPO / "configs" / "wiki-sts.yaml")]
    for item in settings:
        command += ["--set", item]
    return command


def add_set_option(parser: argparse.ArgumentParser) -> None:
    """``--set KEY=VALUE`` (repeatable): more `cseaug build --set` values, read by :func:`overrides`."""
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one more `cseaug build --set`, e.g. execution.shard_size=500 (repeatable)",
    )


def latest_version(root: Path) -> Path:
    return sorted((root / "datasets" / "wiki-sts").glob("v[0-9]*"))[-1]


def latest_manifest(root: Path) -> dict:
    return json.loads((latest_version(root) / "manifest.json").read_text())


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def measure_build(
    server: ModelServer, settings: list[str], root: Path, way: str, env: dict
) -> dict:
    """One build from a fresh root: its wall time split by the server's window, its
    manifest's timings, gate and embedding overlap."""
    server.window()
    said_load = load()
    started = time.time()
    done = subprocess.run(build_command(settings, way), env=env, cwd=REPO, capture_output=True)
    ended = time.time()
    if done.returncode != 0:
        raise SystemExit(f"cseaug build failed ({done.returncode}):\n{done.stderr[-3000:]!r}")
    window = server.window()
    manifest = latest_manifest(root)
    summary = latest_version(root) / "diagnostics" / "summary.json"
    cs = json.loads(summary.read_text()).get("cs", {}) if summary.is_file() else {}
    return {
        "wall": ended - started,
        "fixed": (window["first"] - started) + (ended - window["last"]),
        "start_to_first": window["first"] - started,
        "last_to_exit": ended - window["last"],
        "window": window["last"] - window["first"],
        "requests": window["requests"],
        "timings": manifest["timings"],
        "gate": manifest.get("quality_gate") or {},
        "embedding": cs.get("embedding", {}),
        "load": f"{said_load} -> {load()}",
    }


def measure_bare(server: ModelServer, requests: list, concurrency: int) -> dict:
    server.window()
    said_load = load()
    started = time.time()
    asyncio.run(minimal_loop(server.base_url, requests, concurrency, "post", "aiohttp"))
    window = server.window()
    return {
        "wall": time.time() - started,
        "window": window["last"] - window["first"],
        "load": f"{said_load} -> {load()}",
    }


def start_prefect_server(home: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`prefect server start` on a free port with its own PREFECT_HOME; waits until healthy."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    prefect = str(Path(sys.executable).with_name("prefect"))
    process = subprocess.Popen(
        [prefect, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env={**env, "PREFECT_HOME": str(home)},
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


def stop_all(server, prefect_server: subprocess.Popen | None, work: Path) -> None:
    """Stop the loopback server and the Prefect server (when one was started); remove ``work``."""
    server.stop()
    if prefect_server is not None:
        prefect_server.terminate()
        prefect_server.wait(timeout=30)
    shutil.rmtree(work, ignore_errors=True)


def report(size: int, bare: dict, builds: dict[str, dict]) -> None:
    """The figures of one size."""
    print(
        f"\n{size:,} requests: bare client loop {bare['wall']:.2f} s "
        f"(first request to last answer {bare['window']:.2f} s; {bare['load']})"
    )
    for way, b in builds.items():
        timings = ", ".join(f"{p} {b['timings'][p]:.2f}" for p in PHASES if p in b["timings"])
        embedding = b["embedding"]
        print(
            f"  build, server by {way:<7}: {b['wall']:7.2f} s = fixed {b['fixed']:.2f} s "
            f"(start to first request {b['start_to_first']:.2f}, last answer to exit "
            f"{b['last_to_exit']:.2f}) + requests {b['window']:.2f} s "
            f"({b['window'] / bare['window']:.3f}x the bare loop's; {b['requests']:,} requests)"
            f"; {b['load']}\n    timings: {timings}\n    quality gate: "
            f"passed {b['gate'].get('passed')}, share {b['gate'].get('share')} of "
            f"{b['gate'].get('rows')} rows\n    CS texts embedded: "
            f"{embedding.get('before_publish', '?')} while generating, "
            f"{embedding.get('after_publish', '?')} after (of {embedding.get('texts', '?')})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--requests",
        type=int,
        nargs="+",
        default=[500, 6000],
        help="build sizes in requests (3 per sampled sentence)",
    )
    parser.add_argument("--latency", type=float, default=0.5, help="server latency in seconds")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--ways",
        nargs="+",
        choices=("hand", "prefect"),
        default=["hand", "prefect"],
        help="who starts Prefect's temporary server",
    )
    add_set_option(parser)
    parser.add_argument(
        "--prefect-server",
        action="store_true",
        help="run the builds against a running `prefect server start`",
    )
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)  # the server's process
    args = parser.parse_args()
    if args.serve is not None:
        return serve(args.serve)

    work = Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    env = {**os.environ, "CSEAUG_PROGRESS": "0", "PREFECT_HOME": str(work / "prefect-home")}
    env.pop("PREFECT_API_URL", None)
    prefect_server = None
    server = ModelServer(args.latency)
    results: dict[int, tuple[dict, dict[str, dict]]] = {}
    try:
        wiki = SHARED / "wiki" / "wiki1m_for_simcse_first11914.txt"
        corpus = work / "corpus.txt"
        if wiki.is_file():
            shutil.copy(wiki, corpus)
        else:
            write_corpus(corpus, max(args.requests) + 6000)
        if args.prefect_server:
            prefect_server, env["PREFECT_API_URL"] = start_prefect_server(work / "server-home", env)
        first = argparse.Namespace(**{**vars(args), "samples": 20})
        warm_up = overrides(first, corpus, work / "warm-up", server.base_url)
        measure_build(server, warm_up, work / "warm-up", "hand", env)
        for size in args.requests:
            sized = argparse.Namespace(**{**vars(args), "samples": math.ceil(size / 3)})
            requests = build_requests(overrides(sized, corpus, work / "dry", server.base_url))
            before = measure_bare(server, requests, args.concurrency)
            builds = {}
            for way in args.ways:
                root = work / f"storage-{size}-{way}"
                settings = overrides(sized, corpus, root, server.base_url)
                builds[way] = measure_build(server, settings, root, way, env)
            after = measure_bare(server, requests, args.concurrency)
            bare = {key: (before[key] + after[key]) / 2 for key in ("wall", "window")}
            results[len(requests)] = (
                {**bare, "load": f"{before['load']}; {after['load']}"},
                builds,
            )
    finally:
        stop_all(server, prefect_server, work)

    prefect = (
        "a running server (PREFECT_API_URL)" if args.prefect_server else "its temporary server"
    )
    print(
        f"cseaug build wiki-sts, {args.latency * 1000:.0f} ms server answering like a model, "
        f"concurrency {args.concurrency}, Prefect: {prefect}, fresh output root per build"
    )
    for size, (bare, builds) in results.items():
        report(size, bare, builds)
    largest = max(results)
    for size, (bare, builds) in results.items():
        for way, b in builds.items():
            print_ratio(
                f"build_marginal_vs_bare_loop_{size}_{way}",
                b["window"] / bare["window"],
                "first request to last answer, build / bare loop; goal <= 1.02",
            )
            print_ratio(
                f"build_fixed_cost_vs_goal_{size}_{way}",
                b["fixed"] / 2.0,
                f"fixed cost {b['fixed']:.2f} s / 2 s; goal <= 1",
            )
    bare, builds = results[largest]
    if {"hand", "prefect"} <= set(builds):
        print_ratio(
            "prefect_own_server_vs_hand_started_fixed",
            builds["prefect"]["fixed"] / builds["hand"]["fixed"],
            "fixed cost, Prefect's own temporary server / the hand-started one; "
            "above 1: the hand-started one saves",
        )
    way = "hand" if "hand" in builds else next(iter(builds))
    print_ratio(
        "build_end_to_end_vs_bare_loop",
        builds[way]["wall"] / bare["wall"],
        f"wall time at {largest:,} requests",
    )


if __name__ == "__main__":
    main()
