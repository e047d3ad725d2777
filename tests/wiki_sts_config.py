"""The small wiki-STS build the end-to-end tests run against the loopback server: the shared
Wikipedia sentences, STS12 patterns, no diagnostics and no quality gate (the fake servers'
answers are not graded); each test names what it changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def wiki_sts_config(
    shared_data: Path,
    root: Path,
    name: str,
    llm: dict[str, Any],
    sample_size: int,
    seed: int = 5,
    **extra: Any,
) -> dict[str, Any]:
    """A build config as a dict; ``llm`` is the whole ``llm`` section, ``extra`` replaces
    top-level sections."""
    return {
        "name": name,
        "method": "sts",
        "corpus": {
            "name": "wiki",
            "path": str(shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt"),
        },
        "sample": {"size": sample_size, "seed": seed},
        "patterns": {"source": "sts12", "path": str(shared_data / "sts12_train")},
        "llm": llm,
        "output": {"root": str(root)},
        "diagnostics": {"enabled": False},
        "publish": {"min_pattern_share": 0},
        **extra,
    }
