"""Throughput over two endpoints against one endpoint, same requests, same run.

Two fake OpenAI servers (``tests/fake_openai_server.py``) run each in its own process on
127.0.0.1 and answer every request after a fixed latency with a pre-encoded body. The
``openai-compatible`` backend (``make_backend(cfg, None).generate(requests)``) sends the
same N requests with ``llm.concurrency`` C to ``llm.base_url: <one>`` (**the baseline**)
and to ``llm.base_url: [<one>, <two>]`` (C in flight on each), interleaved ``--repeats``
times; the median is reported. The ideal is C / latency requests per second per endpoint
(64 / 0.05 s = 1,280 req/s; 2,560 with two). Prints req/s, the CPU time of this process per
request, and the ratio two / one; on a small machine the client's CPU (and the servers',
sharing the same cores) caps the ratio well below 2: the CPU per request shows it.

Usage:
    python benchmarks/bench_endpoints.py                    # 6,000 requests, concurrency 64
    python benchmarks/bench_endpoints.py --requests 20000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_llm_throughput import make_requests, through_backend, timed
from fake_openai_server import start_server_process
from ratio import print_ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=6_000, help="requests per measured run")
    parser.add_argument(
        "--concurrency", type=int, default=64, help="requests in flight per endpoint"
    )
    parser.add_argument("--latency", type=float, default=0.05, help="server latency in seconds")
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of each mode (median reported)"
    )
    args = parser.parse_args()
    n, c = args.requests, args.concurrency
    requests = make_requests(n)
    servers = [start_server_process(args.latency, fixed_answer=True) for _ in range(2)]
    urls = [server.base_url for server in servers]
    modes = {"one endpoint": urls[:1], "two endpoints": urls}
    ideal = {"one endpoint": c / args.latency, "two endpoints": 2 * c / args.latency}
    print(
        f"{n} requests, concurrency {c} per endpoint, server latency {args.latency * 1000:.0f} ms, "
        f"{os.cpu_count()} CPUs on this machine (client and both servers share them)"
    )
    rates: dict[str, list[float]] = {m: [] for m in modes}
    cpus: dict[str, list[float]] = {m: [] for m in modes}
    try:
        through_backend(urls, make_requests(min(n, 1000)), c, cache=False)  # warm up
        for round_ in range(args.repeats):
            for mode, base_url in modes.items():
                rate, cpu = timed(
                    lambda url=base_url: through_backend(url, requests, c, cache=False), n
                )
                rates[mode].append(rate)
                cpus[mode].append(cpu)
                print(
                    f"  round {round_ + 1}: {mode:<14} {rate:8.0f} req/s {cpu:6.0f} us CPU/request"
                )
        served = [server.stats()["total"] for server in servers]
    finally:
        for server in servers:
            server.stop()
    print(f"served: {served[0]} + {served[1]} requests")
    rate = {m: statistics.median(r) for m, r in rates.items()}
    cpu = {m: statistics.median(r) for m, r in cpus.items()}
    print(f"\n{'mode':<14} {'req/s':>8} {'ideal':>7} {'vs ideal':>9} {'us CPU/req':>11}")
    for mode in modes:
        print(
            f"{mode:<14} {rate[mode]:8.0f} {ideal[mode]:7.0f} {rate[mode] / ideal[mode]:9.2f} "
            f"{cpu[mode]:11.0f}"
        )
    print_ratio(
        "endpoints_two_vs_one", rate["two endpoints"] / rate["one endpoint"], "req/s; ideal 2.00"
    )


if __name__ == "__main__":
    main()
