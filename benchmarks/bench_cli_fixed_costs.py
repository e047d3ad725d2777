"""The fixed costs of a `cseaug build` (issue 14): this code against the path it replaced.

What a build pays around its work is what a warm rebuild pays: an NGCSE Wiki.STS build
(``configs/wiki-sts.yaml``) of ``--samples`` sentences against the loopback OpenAI-compatible
server is built once (not timed), then rebuilt unchanged (every shard reused, no request
sent, nothing published) ``--rounds`` times by each path, alternating, in a child process as a
user runs it:

* ``before``: Prefect starts its temporary server itself when the flow makes its first
  client (``bench_build_end_to_end.PREFECTS_OWN``).
* ``after``: the ``cseaug`` script. The command starts Prefect's temporary server while
  the preflight runs and never imports the server application
  (``cseaug_prefect.flows.temporary_server``).

Both end with Python's usual exit: the difference is the temporary server's early start
alone (what the hand-started server saves; docs/prefect.md says why it is kept).

Prints the median wall time and CPU time (the command and its children, the temporary
server included) of each path and ``RATIO`` lines (after / before; lower is better).
``--prefect-server`` runs both against a running ``prefect server start``
(``PREFECT_API_URL``, not timed): then nothing differs (a control of the noise).

    python benchmarks/bench_cli_fixed_costs.py [--rounds 5] [--samples 200] [--prefect-server]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO / "tests"), str(REPO)]

from bench_build_end_to_end import (  # noqa: E402
    ModelServer,
    build_command,
    overrides,
    start_prefect_server,
    stop_all,
)
from bench_prefect_share import write_corpus  # noqa: E402
from ratio import print_ratio  # noqa: E402


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run ``command``: wall seconds, CPU seconds of it and its children, its output."""
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{command[:3]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return wall, cpu, done.stderr + done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="warm rebuilds of each path")
    parser.add_argument("--samples", type=int, default=200, help="sampled sentences (x3 requests)")
    parser.add_argument(
        "--prefect-server",
        action="store_true",
        help="run against a running `prefect server start` (PREFECT_API_URL)",
    )
    args = parser.parse_args()
    # bench_build_end_to_end's build, without diagnostics (the fixed costs, not the encoder)
    build_options = argparse.Namespace(
        samples=args.samples, concurrency=64, set=["diagnostics.enabled=false"]
    )

    work = Path(tempfile.mkdtemp(prefix="bench-fixed-"))
    env = {**os.environ, "CSEAUG_PROGRESS": "0", "PREFECT_HOME": str(work / "prefect-home")}
    env.pop("PREFECT_API_URL", None)
    server = ModelServer(0.0)
    prefect_server = None
    walls: dict[str, list[float]] = {"before": [], "after": []}
    cpus: dict[str, list[float]] = {"before": [], "after": []}
    try:
        write_corpus(work / "corpus.txt", max(3 * args.samples, 2000))
        if args.prefect_server:
            prefect_server, env["PREFECT_API_URL"] = start_prefect_server(work / "server-home", env)
        settings = overrides(build_options, work / "corpus.txt", work / "storage", server.base_url)
        commands = {
            "before": build_command(settings, "prefect"),
            "after": build_command(settings, "hand"),
        }
        timed(commands["after"], env)  # the first build (and the Prefect database's creation)
        for _ in range(args.rounds):
            for path in ("before", "after"):
                wall, cpu, said = timed(commands[path], env)
                if "unchanged" not in said:
                    raise SystemExit(f"the {path} rebuild was not unchanged:\n{said[-2000:]}")
                walls[path].append(wall)
                cpus[path].append(cpu)
    finally:
        stop_all(server, prefect_server, work)

    prefect = "running server (PREFECT_API_URL)" if args.prefect_server else "temporary server"
    print(
        f"cseaug build wiki-sts, warm rebuild of {args.samples:,} samples (nothing to send), "
        f"Prefect: {prefect}, {args.rounds} rounds alternating, load {os.getloadavg()[0]:.1f}"
    )
    for path in ("before", "after"):
        print(
            f"  {path:<6}  wall median {statistics.median(walls[path]):6.2f} s "
            f"({min(walls[path]):.2f}-{max(walls[path]):.2f}),  "
            f"CPU median {statistics.median(cpus[path]):6.2f} s"
        )
    mode = "running_server" if args.prefect_server else "temporary_server"
    ratio = statistics.median(walls["after"]) / statistics.median(walls["before"])
    cpu_ratio = statistics.median(cpus["after"]) / statistics.median(cpus["before"])
    print_ratio(
        f"cli_fixed_costs_{mode}_wall", ratio, "warm rebuild after / before; lower is better"
    )
    print_ratio(f"cli_fixed_costs_{mode}_cpu", cpu_ratio, "CPU after / before; lower is better")


if __name__ == "__main__":
    main()
