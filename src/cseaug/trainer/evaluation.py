"""Spearman correlation of a sentence encoder on the STS sets in SentEval's layout, as the
four papers report it, with SentEval's aggregates of the STS years (docs/trainer.md,
"Evaluation": the files read and who reports which number)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cseaug.errors import InputError
from cseaug.markdown import markdown_table
from cseaug.progress import progress_bar
from cseaug.readers.benchmarks import read_sick, read_sts_dir, read_sts_table
from cseaug.trainer.config import EvaluationConfig

Split = Literal["test", "dev"]


@dataclass(frozen=True)
class EvalSet:
    """Scored sentence pairs of one STS set; ``subsets`` names each pair's SemEval subset
    (STS12-16) and is empty for a set without subsets."""

    name: str
    s1: list[str]
    s2: list[str]
    scores: list[float]
    subsets: list[str] = field(default_factory=list)


@dataclass
class Scores:
    """The scores of one evaluation: SentEval's ``all`` Spearman per set (with ``avg``), and
    the ``all`` / ``mean`` / ``wmean`` aggregates of each set that has subsets."""

    spearman: dict[str, float]
    aggregates: dict[str, dict[str, float]]


def _first(root: Path, name: str, *candidates: str) -> Path:
    """The first of ``candidates`` (paths under ``root``) that exists."""
    paths = [root / candidate for candidate in candidates]
    found = next((p for p in paths if p.exists()), None)
    if found is None:
        tried = ", ".join(str(p) for p in paths)
        raise InputError(
            f"evaluation set {name} not found under {root} (tried {tried}); `cseaug data fetch "
            "sts12-test sts13-test sts14-test sts15-test sts16-test stsb sick-splits` puts them "
            "under data/ (then evaluation.data_dir: data), or leave the set out of evaluation.sets"
        )
    return found


def read_eval_set(data_dir: str | Path, name: str, split: Split = "test") -> pa.Table:
    """The (s1, s2, score[, task]) pairs of one set's test split, or dev split (STS-B and
    SICK-R only)."""
    root = Path(data_dir)
    if name.startswith("STS1"):
        if split != "test":
            raise InputError(f"{name} has no dev split; the dev set is STS-B or SICK-R")
        return read_sts_dir(_first(root, name, f"senteval_sts/{name}-en-test", f"{name}-en-test"))
    if name == "STS-B":
        folders = ("senteval_sts/STSBenchmark", "STSBenchmark", "stsbenchmark")
        files = (f"{folder}/sts-{split}.csv" for folder in folders)
        return read_sts_table(_first(root, f"{name} ({split})", *files))
    if name == "SICK-R":
        file, label = (
            ("SICK_test_annotated.txt", "TEST") if split == "test" else ("SICK_trial.txt", "TRIAL")
        )
        found = _first(
            root,
            f"{name} ({split})",
            f"sick/semeval2014_splits_noheader/{file}",
            f"sick/{file}",
            file,
            "sick/SICK.txt",  # its TEST rows: 4,906 of the 4,927 pairs
        )
        sick = read_sick(found)
        rows = sick.filter(pc.equal(sick.column("split"), label))
        return rows.select(["s1", "s2", "relatedness"]).rename_columns(["s1", "s2", "score"])
    raise InputError(f"unknown evaluation set '{name}'")


def _read(cfg: EvaluationConfig, name: str, split: Split) -> EvalSet:
    """One set's split, cut to a seeded sample of ``max_pairs`` pairs if set; subsets are
    STS12-16's only (STS-B's ``task`` column, its genres, is not a SentEval subset)."""
    table = read_eval_set(cfg.data_dir, name, split)
    if cfg.max_pairs is not None and table.num_rows > cfg.max_pairs:
        picked = np.random.default_rng(0).choice(table.num_rows, cfg.max_pairs, replace=False)
        table = table.take(np.sort(picked))
    s1, s2, scores = (table.column(column).to_pylist() for column in ("s1", "s2", "score"))
    subsets = table.column("task").to_pylist() if name.startswith("STS1") else []
    return EvalSet(name, s1, s2, scores, subsets)


def dev_set(cfg: EvaluationConfig) -> EvalSet | None:
    """The dev set of checkpoint selection (``evaluation.dev``), or None."""
    return None if cfg.dev is None else _read(cfg, cfg.dev, "dev")


def eval_sets(cfg: EvaluationConfig) -> list[EvalSet]:
    """The configured test sets."""
    return [_read(cfg, name, "test") for name in cfg.sets]


@contextmanager
def max_seq_length(model: Any, length: int | None) -> Iterator[None]:
    """``model`` cuts its inputs at ``length`` tokens inside the block (None: its own length)."""
    own = model.max_seq_length
    model.max_seq_length = length or own
    try:
        yield
    finally:
        model.max_seq_length = own


def spearman(predicted: Sequence[float], gold: Sequence[float]) -> float:
    """Spearman's rank correlation (``scipy.stats.spearmanr``, as SentEval)."""
    from scipy.stats import spearmanr

    return float(spearmanr(predicted, gold).statistic)


def senteval_aggregates(
    predicted: Sequence[float], gold: Sequence[float], subsets: Sequence[str]
) -> dict[str, float]:
    """SentEval's aggregates of one STS year (``STSEval.run``): ``all``, Spearman over every
    pair pooled; ``mean``, the mean of the per-subset Spearman; ``wmean``, that mean weighted
    by the subsets' numbers of pairs.

    Example:
        >>> got = senteval_aggregates([1, 2, 3, 4, 5], [1, 2, 3, 5, 4], ["a", "a", "a", "b", "b"])
        >>> {k: round(v, 3) for k, v in got.items()}
        {'all': 0.9, 'mean': 0.0, 'wmean': 0.2}
    """
    predicted, gold, subsets = np.asarray(predicted), np.asarray(gold), np.asarray(subsets)
    picks = [subsets == name for name in dict.fromkeys(subsets.tolist())]
    per_subset = [spearman(predicted[picked], gold[picked]) for picked in picks]
    return {
        "all": spearman(predicted, gold),
        "mean": float(np.average(per_subset)),
        "wmean": float(np.average(per_subset, weights=[picked.sum() for picked in picks])),
    }


def cosine_similarities(model: Any, eval_set: EvalSet, batch_size: int, bar: Any) -> np.ndarray:
    """The cosine similarity of each pair; each distinct sentence encoded once, ``bar``
    advanced by the sentences encoded."""
    sentences = list(dict.fromkeys(eval_set.s1 + eval_set.s2))
    chunk = batch_size * 4
    parts = []
    for start in range(0, len(sentences), chunk):
        part = sentences[start : start + chunk]
        parts.append(
            model.encode(
                part,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        )
        bar.advance(len(part))
    vectors = np.concatenate(parts).astype(np.float64)
    where = {sentence: i for i, sentence in enumerate(sentences)}
    left = vectors[[where[s] for s in eval_set.s1]]
    right = vectors[[where[s] for s in eval_set.s2]]
    return np.einsum("ij,ij->i", left, right)


def evaluate(
    model: Any, sets: Sequence[EvalSet], batch_size: int = 64, description: str = "Scoring STS"
) -> Scores:
    """Score ``model`` on ``sets``, with a progress bar over the sentences to encode."""
    total = sum(len(set(s.s1 + s.s2)) for s in sets)
    spearmans: dict[str, float] = {}
    aggregates: dict[str, dict[str, float]] = {}
    with progress_bar(description, total=total, unit="sentences") as bar:
        for eval_set in sets:
            predicted = cosine_similarities(model, eval_set, batch_size, bar)
            spearmans[eval_set.name] = spearman(predicted, eval_set.scores)
            if eval_set.subsets:
                aggregates[eval_set.name] = senteval_aggregates(
                    predicted, eval_set.scores, eval_set.subsets
                )
    if len(spearmans) > 1:  # the papers' "Avg."
        spearmans["avg"] = float(np.mean(list(spearmans.values())))
    return Scores(spearmans, aggregates)


def scores_table(before: Mapping[str, float] | None, after: Mapping[str, float]) -> str:
    """A markdown table of Spearman x100 per set, before and after training.

    Example:
        >>> print(scores_table({"STS-B": 0.8}, {"STS-B": 0.8512}))
        | set | before | after | change |
        |---|---:|---:|---:|
        | STS-B | 80.00 | 85.12 | +5.12 |
    """
    rows = []
    for name, value in after.items():
        old = None if before is None else before.get(name)
        shown = "-" if old is None else f"{100 * old:.2f}"
        change = "-" if old is None else f"{100 * (value - old):+.2f}"
        rows.append([name, shown, f"{100 * value:.2f}", change])
    return markdown_table(["set", "before", "after", "change"], rows, numeric=True)


def aggregates_table(aggregates: Mapping[str, Mapping[str, float]]) -> str:
    """A markdown table of SentEval's ``all`` / ``mean`` / ``wmean`` Spearman x100 per STS year.

    Example:
        >>> print(aggregates_table({"STS12": {"all": 0.7, "mean": 0.65, "wmean": 0.66}}))
        | set | all | mean | wmean |
        |---|---:|---:|---:|
        | STS12 | 70.00 | 65.00 | 66.00 |
    """
    keys = ("all", "mean", "wmean")
    rows = [
        [name, *(f"{100 * values[key]:.2f}" for key in keys)] for name, values in aggregates.items()
    ]
    return markdown_table(["set", *keys], rows, numeric=True)
