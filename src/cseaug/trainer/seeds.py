"""Train one config with several seeds and report the mean ± std of each score.

NGCSE (appendix "Training Details") reports the mean of three seeds. :func:`train_seeds`
trains seeds ``cfg.seed``, ``cfg.seed + 1``, ... into ``<out_dir>/seed-<n>/`` and writes
``seeds.json`` and ``seeds.md`` (docs/trainer.md, "Seeds").

Example:
    >>> summary = seed_summary([
    ...     {"seed": 1, "selection": {"step": 125}, "scores": {"after": {"STS-B": 0.80}}},
    ...     {"seed": 2, "selection": {"step": 250}, "scores": {"after": {"STS-B": 0.82}}},
    ... ])
    >>> summary["mean"]["STS-B"], round(summary["std"]["STS-B"], 4), summary["steps"]
    (0.81, 0.0141, [125, 250])
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cseaug.markdown import markdown_table
from cseaug.trainer.config import TrainConfig
from cseaug.trainer.train import train_encoder

SEEDS_JSON = "seeds.json"
SEEDS_MARKDOWN = "seeds.md"


def seed_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean and sample std (ddof 1; 0 for one seed) of each set's ``after`` score."""
    sets = list(records[0]["scores"]["after"])
    values = {name: [float(r["scores"]["after"][name]) for r in records] for name in sets}
    ddof = 1 if len(records) > 1 else 0
    return {
        "seeds": [r["seed"] for r in records],
        "steps": [r["selection"]["step"] for r in records],
        "mean": {name: float(np.mean(v)) for name, v in values.items()},
        "std": {name: float(np.std(v, ddof=ddof)) for name, v in values.items()},
        "per_seed": values,
    }


def summary_table(summary: Mapping[str, Any]) -> str:
    """A markdown table of the mean ± std (x100) per set, and each seed's score.

    Example:
        >>> print(summary_table({"seeds": [1, 2], "mean": {"STS-B": 0.81},
        ...     "std": {"STS-B": 0.01}, "per_seed": {"STS-B": [0.8, 0.82]}}))
        | set | mean ± std | seed 1 | seed 2 |
        |---|---:|---:|---:|
        | STS-B | 81.00 ± 1.00 | 80.00 | 82.00 |
    """
    header = ["set", "mean ± std", *(f"seed {s}" for s in summary["seeds"])]
    rows = []
    for name, mean in summary["mean"].items():
        spread = f"{100 * mean:.2f} ± {100 * summary['std'][name]:.2f}"
        rows.append([name, spread, *(f"{100 * v:.2f}" for v in summary["per_seed"][name])])
    return markdown_table(header, rows, numeric=True)


def train_seeds(
    version_dir: str | Path,
    cfg: TrainConfig,
    out_dir: str | Path,
    seeds: int,
    say: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Train seeds ``cfg.seed`` + 0, 1, ... into ``<out_dir>/seed-<n>``, write their summary
    to ``seeds.json`` / ``seeds.md`` and return ``{"runs": [...], "summary": ...}``."""
    out_dir = Path(out_dir)
    runs = []
    for offset in range(seeds):
        seed = cfg.seed + offset
        run_cfg = cfg.model_copy(update={"seed": seed})
        runs.append(train_encoder(version_dir, run_cfg, out_dir / f"seed-{seed}", say).as_dict())
    summary = seed_summary(runs)
    title = f"STS Spearman x100 of {cfg.objective} on {runs[0]['dataset']}, {seeds} seeds"
    steps = ", ".join(
        f"seed {s}: step {n}" for s, n in zip(summary["seeds"], summary["steps"], strict=True)
    )
    (out_dir / SEEDS_JSON).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (out_dir / SEEDS_MARKDOWN).write_text(
        f"### {title}\n\nMean ± sample std over the seeds of the selected checkpoints ({steps}); "
        f"each model in seed-<n>/.\n\n{summary_table(summary)}\n",
        encoding="utf-8",
    )
    return {"runs": runs, "summary": summary}
