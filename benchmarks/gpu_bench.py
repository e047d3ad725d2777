"""What the GPU benchmarks share: CUDA detection, the SKIPPED line, one process per measurement.

Every GPU benchmark runs each variant in a fresh spawned process (so that one variant's
memory, caches and compiled kernels never help or hinder the next) and prints the
project's path against the best plain-library baseline of the same run (target >= 0.90).
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WIKI = REPO.parent / "shared/data/wiki/wiki1m_for_simcse_first11914.txt"
TARGET = 0.90
"""The project's path must reach this share of the best baseline's throughput (issue 13)."""


def sentences(n: int, seed: int = 0, min_words: int = 3, max_words: int = 80) -> list[str]:
    """``n`` Wikipedia sentences of ``min_words`` to ``max_words`` words (SimCSE's corpus, from
    ../shared/data when it is there), else synthetic ones of numbered words."""
    if WIKI.is_file():
        lines = [line.strip() for line in WIKI.read_text(encoding="utf-8").splitlines()]
        lines = [line for line in lines if min_words <= len(line.split()) <= max_words]
    else:
        rng = random.Random(seed)
        words = [f"word{i}" for i in range(3000)]
        lines = [
            " ".join(rng.choices(words, k=rng.randint(min_words, max_words))) + "."
            for _ in range(max(5000, n))
        ]
    return random.Random(seed).sample(lines, n)


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def device_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name(device) if device.startswith("cuda") else "CPU"


def skipped(what: str, command: str) -> None:
    """Say that ``what`` needs a GPU and how to run it on one."""
    print(f"SKIPPED: {what} needs a CUDA GPU and none is visible here. On a GPU machine run:")
    print(f"    {command}")


def _child(function: Callable[..., dict[str, Any]], args: tuple[Any, ...], queue: Any) -> None:
    if importlib.util.find_spec("cseaug") is None:  # a checkout without cseaug installed
        sys.path.insert(0, str(REPO / "src"))
    sys.path.insert(0, str(REPO))
    try:
        queue.put(function(*args))
    except BaseException as error:  # report it in the parent, with the variant's name
        queue.put({"error": f"{type(error).__name__}: {error}"})
        raise


def in_process(function: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """``function(*args)`` in a fresh spawned process; its dict result (``error`` on failure)."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_child, args=(function, args, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def verdict(project: float, baseline: float) -> str:
    """``project / baseline`` and whether it reaches :data:`TARGET`."""
    ratio = project / baseline
    return f"{ratio:.2f}x the best baseline ({'meets' if ratio >= TARGET else 'MISSES'} the target >= {TARGET:.2f}x)"
