"""Throughput of the openai-compatible backend against a minimal client loop, same run.

A fake OpenAI server (``tests/fake_openai_server.py``) runs in its own process on
127.0.0.1 and answers every request after a fixed latency with a pre-encoded body. With
concurrency C and latency L the ideal is C / L requests per second (64 / 0.05 s = 1280).
Measured, one after the other, in this process:

- ``create/httpx``, ``create/aiohttp``: a minimal asyncio worker pool calling
  ``client.chat.completions.create`` with the official client on its default (httpx)
  transport and on ``DefaultAioHttpClient`` (what the transport choice rests on);
- ``post/aiohttp`` (**the baseline**): the same minimal pool making exactly the call the
  backend makes (``client.post(..., cast_to=httpx2.Response)`` + ``json.loads``), same
  client library, same transport, same concurrency;
- ``backend``: ``make_backend(cfg, None).generate(requests)``;
- ``backend+cache``: ``make_backend(cfg, <fresh sqlite>).generate(requests)`` (every
  answer is written to the cache as it arrives).

Each mode runs ``--repeats`` times, interleaved; the median is reported. Prints req/s and
the CPU time of this process per request, the ratio backend / baseline (target >= 0.90)
and each mode against the ideal. On a shared machine the wall-clock rates move with
other load; CPU per request does much less, so both ratios are printed.

Usage:
    python benchmarks/bench_llm_throughput.py                      # 30,000 requests, concurrency 64
    python benchmarks/bench_llm_throughput.py --requests 3000      # quick run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx2
import openai

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fake_openai_server import start_server_process  # noqa: E402
from ratio import print_ratio  # noqa: E402

from cseaug.config import LLMConfig  # noqa: E402
from cseaug.llm.base import ChatRequest  # noqa: E402
from cseaug.llm.factory import make_backend  # noqa: E402

MAX_TOKENS = 64


def make_requests(n: int) -> list[ChatRequest]:
    return [
        ChatRequest(f"r{i}", ({"role": "user", "content": f"Paraphrase sentence number {i}."},))
        for i in range(n)
    ]


async def minimal_loop(
    base_url: str, requests: list[ChatRequest], concurrency: int, call: str, transport: str
) -> None:
    """The baseline: `concurrency` workers sharing one iterator, nothing else."""
    http_client = openai.DefaultAioHttpClient() if transport == "aiohttp" else None
    client = openai.AsyncOpenAI(
        base_url=base_url, api_key="EMPTY", max_retries=0, http_client=http_client
    )
    todo = iter(requests)
    answers: list[str] = []

    async def worker() -> None:
        for request in todo:
            messages = list(request.messages)
            if call == "create":
                completion = await client.chat.completions.create(
                    model="fake", messages=messages, max_tokens=MAX_TOKENS
                )
                answers.append(completion.choices[0].message.content)
            else:
                raw = await client.post(
                    "/chat/completions",
                    body={"model": "fake", "messages": messages, "max_tokens": MAX_TOKENS},
                    cast_to=httpx2.Response,
                )
                answers.append(json.loads(raw.content)["choices"][0]["message"]["content"])

    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        await client.close()
    assert len(answers) == len(requests)


def through_backend(
    base_url: str | list[str], requests: list[ChatRequest], concurrency: int, cache: bool
) -> None:
    cfg = LLMConfig(
        backend="openai-compatible",
        model="fake",
        base_url=base_url,
        concurrency=concurrency,
        max_tokens=MAX_TOKENS,
    )
    with tempfile.TemporaryDirectory() as tmp:
        backend = make_backend(cfg, Path(tmp) / "llm.sqlite" if cache else None)
        responses = backend.generate(requests)
        backend.close()
    failed = [r for r in responses if not r.ok]
    assert not failed, f"{len(failed)} requests failed, e.g. {failed[0].error}"


def timed(run: Callable[[], None], n: int) -> tuple[float, float]:
    """Requests per second (wall clock) and CPU microseconds of this process per request."""
    start, cpu = time.perf_counter(), time.process_time()
    run()
    return n / (time.perf_counter() - start), (time.process_time() - cpu) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=30_000, help="requests per measured run")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight")
    parser.add_argument("--latency", type=float, default=0.05, help="server latency in seconds")
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs of each mode (median reported)"
    )
    parser.add_argument(
        "--modes",
        default="create/httpx,create/aiohttp,post/aiohttp,backend,backend+cache",
        help="comma-separated subset of the modes",
    )
    args = parser.parse_args()
    n, c = args.requests, args.concurrency
    ideal = c / args.latency
    requests = make_requests(n)
    server = start_server_process(args.latency, fixed_answer=True)
    url = server.base_url
    modes: dict[str, Callable[[], None]] = {
        "create/httpx": lambda: asyncio.run(minimal_loop(url, requests, c, "create", "httpx")),
        "create/aiohttp": lambda: asyncio.run(minimal_loop(url, requests, c, "create", "aiohttp")),
        "post/aiohttp": lambda: asyncio.run(minimal_loop(url, requests, c, "post", "aiohttp")),
        "backend": lambda: through_backend(url, requests, c, cache=False),
        "backend+cache": lambda: through_backend(url, requests, c, cache=True),
    }
    chosen = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(chosen) - set(modes)
    if unknown:
        parser.error(f"unknown modes {sorted(unknown)}; choose from {sorted(modes)}")
    print(
        f"{n} requests, concurrency {c}, server latency {args.latency * 1000:.0f} ms, ideal {ideal:.0f} req/s"
    )
    try:
        warm = make_requests(min(n, 1000))
        asyncio.run(minimal_loop(url, warm, c, "post", "aiohttp"))
        rates: dict[str, list[float]] = {m: [] for m in chosen}
        cpus: dict[str, list[float]] = {m: [] for m in chosen}
        for round_ in range(args.repeats):
            for mode in chosen:
                rate, cpu = timed(modes[mode], n)
                rates[mode].append(rate)
                cpus[mode].append(cpu)
                print(
                    f"  round {round_ + 1}: {mode:<15} {rate:8.0f} req/s {cpu:8.0f} us CPU/request",
                    flush=True,
                )
        print(f"served: {server.stats()['total']} requests")
    finally:
        server.stop()
    rate = {m: statistics.median(r) for m, r in rates.items()}
    cpu = {m: statistics.median(r) for m, r in cpus.items()}
    print(f"\n{'mode':<15} {'req/s':>8} {'vs ideal':>9} {'us CPU/req':>11}")
    for mode in chosen:
        print(f"{mode:<15} {rate[mode]:8.0f} {rate[mode] / ideal:9.2f} {cpu[mode]:11.0f}")
    print(
        "ratios of req/s (and of CPU per request, inverted: higher is better, robust to other load):"
    )
    pairs = [
        ("backend", "post/aiohttp", "target >= 0.90"),
        ("backend+cache", "post/aiohttp", "target >= 0.90"),
        ("post/aiohttp", "create/aiohttp", "raw post vs chat.completions.create"),
        ("create/aiohttp", "create/httpx", "aiohttp vs httpx transport"),
    ]
    if "backend+cache" in rate and "post/aiohttp" in rate:
        print_ratio(
            "llm_backend_vs_bare_loop",
            rate["backend+cache"] / rate["post/aiohttp"],
            "req/s of the backend with its cache / a minimal client loop; target >= 0.90",
        )
    for mode, base, note in pairs:
        if mode in rate and base in rate:
            print(
                f"  {mode} / {base}: {rate[mode] / rate[base]:.2f} req/s, "
                f"{cpu[base] / cpu[mode]:.2f} CPU ({note})"
            )


if __name__ == "__main__":
    main()
