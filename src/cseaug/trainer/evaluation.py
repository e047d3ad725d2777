"""Spearman correlation of a sentence encoder on the STS sets, as the four papers report it.

The sets are read in SentEval's layout (``../shared/data`` holds it) with the benchmark
readers of :mod:`cseaug.readers.benchmarks`:

* STS12-STS16: every scored pair of ``senteval_sts/STS1x-en-test`` (all subsets pooled:
  SentEval's "all" Spearman, the number SimCSE, NGCSE, OssCSE and SKICSE report);
* STS-B: ``senteval_sts/STSBenchmark/sts-test.csv`` (or ``stsbenchmark/sts-test.csv``);
* SICK-R: SemEval-2014's ``SICK_test_annotated.txt`` (4,927 pairs, as SentEval), else the
  TEST rows of the full ``sick/SICK.txt`` release (4,906 of them).

Each set is scored by sentence-transformers' ``EmbeddingSimilarityEvaluator`` (cosine
similarity, Spearman). Scores are fractions; tables show them x100 like the papers.

Example:
    >>> scores = evaluate(model, eval_sets(EvaluationConfig(data_dir="../shared/data")))  # doctest: +SKIP
    >>> round(scores["STS-B"], 3)  # doctest: +SKIP
    0.82
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cseaug.errors import InputError
from cseaug.readers.benchmarks import read_sick, read_sts_dir, read_sts_table
from cseaug.trainer.config import EvaluationConfig


@dataclass(frozen=True)
class EvalSet:
    """Scored sentence pairs of one STS set."""

    name: str
    s1: list[str]
    s2: list[str]
    scores: list[float]


def _first(paths: Sequence[Path], name: str, setting: Path) -> Path:
    found = next((p for p in paths if p.exists()), None)
    if found is None:
        tried = ", ".join(str(p) for p in paths)
        raise InputError(
            f"evaluation set {name} not found under {setting} (tried {tried}); set "
            "evaluation.data_dir to a directory in SentEval's layout (e.g. ../shared/data) or "
            "leave the set out of evaluation.sets"
        )
    return found


def read_eval_set(data_dir: str | Path, name: str) -> pa.Table:
    """The (s1, s2, score) pairs of one set (see the module docstring for the files)."""
    root = Path(data_dir)
    if name.startswith("STS1"):
        folder = _first(
            [root / "senteval_sts" / f"{name}-en-test", root / f"{name}-en-test"], name, root
        )
        return read_sts_dir(folder)
    if name == "STS-B":
        return read_sts_table(
            _first(
                [
                    root / "senteval_sts" / "STSBenchmark" / "sts-test.csv",
                    root / "STSBenchmark" / "sts-test.csv",
                    root / "stsbenchmark" / "sts-test.csv",
                ],
                name,
                root,
            )
        )
    if name == "SICK-R":
        sick = read_sick(
            _first(
                [
                    root / "sick" / "semeval2014_splits_noheader" / "SICK_test_annotated.txt",
                    root / "sick" / "SICK_test_annotated.txt",
                    root / "SICK_test_annotated.txt",
                    root / "sick" / "SICK.txt",  # its TEST rows: 4,906 of the 4,927 pairs
                ],
                name,
                root,
            )
        )
        test = sick.filter(pc.equal(sick.column("split"), "TEST"))
        return pa.table(
            {"s1": test.column("s1"), "s2": test.column("s2"), "score": test.column("relatedness")}
        )
    raise InputError(f"unknown evaluation set '{name}'")


def eval_sets(cfg: EvaluationConfig) -> list[EvalSet]:
    """The configured sets, each cut to a seeded sample of ``max_pairs`` pairs if set."""
    sets = []
    for name in cfg.sets:
        table = read_eval_set(cfg.data_dir, name)
        if cfg.max_pairs is not None and table.num_rows > cfg.max_pairs:
            picked = np.sort(
                np.random.default_rng(0).choice(table.num_rows, cfg.max_pairs, replace=False)
            )
            table = table.take(picked)
        sets.append(
            EvalSet(
                name,
                table.column("s1").to_pylist(),
                table.column("s2").to_pylist(),
                table.column("score").to_pylist(),
            )
        )
    return sets


def evaluate(model: Any, sets: Sequence[EvalSet], batch_size: int = 64) -> dict[str, float]:
    """Spearman correlation of cosine similarity with the gold scores, per set."""
    from sentence_transformers.sentence_transformer.evaluation import (
        EmbeddingSimilarityEvaluator,
    )

    scores = {}
    for eval_set in sets:
        evaluator = EmbeddingSimilarityEvaluator(
            eval_set.s1,
            eval_set.s2,
            eval_set.scores,
            batch_size=batch_size,
            main_similarity="cosine",
            name=eval_set.name,
            write_csv=False,
        )
        scores[eval_set.name] = float(evaluator(model)[f"{eval_set.name}_spearman_cosine"])
    return scores


def with_average(scores: Mapping[str, float]) -> dict[str, float]:
    """The scores and, for more than one set, their mean under ``avg``."""
    out = dict(scores)
    if len(scores) > 1:
        out["avg"] = float(np.mean(list(scores.values())))
    return out


def scores_table(before: Mapping[str, float] | None, after: Mapping[str, float]) -> str:
    """A markdown table of Spearman x100 per set, before and after training.

    Example:
        >>> print(scores_table({"STS-B": 0.8}, {"STS-B": 0.8512}))
        | set | before | after | change |
        |---|---:|---:|---:|
        | STS-B | 80.00 | 85.12 | +5.12 |
    """
    lines = ["| set | before | after | change |", "|---|---:|---:|---:|"]
    for name, value in after.items():
        old = None if before is None else before.get(name)
        shown = "-" if old is None else f"{100 * old:.2f}"
        change = "-" if old is None else f"{100 * (value - old):+.2f}"
        lines.append(f"| {name} | {shown} | {100 * value:.2f} | {change} |")
    return "\n".join(lines)
