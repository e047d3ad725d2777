"""OssCSE's Cont. / Oppn. probe splits of the STS sets (section 3.3 "Dataset Splits", Table 2).

Per STS set, a pair is **Cont.** when its gold score is above the set's median and its MER
(eq. 1) below the median MER, or the other way round, and **Oppn.** otherwise (ties
included: the paper's comparisons are strict). Only sets whose median score lies in [2, 3.5]
are kept (footnote 3). ``words`` chooses how MER splits words (docs/diagnostics.md, "Cont. /
Oppn. probe splits and Table 2").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cseaug.dataset.atomic import write_text_atomic
from cseaug.dataset.tables import write_table
from cseaug.diagnostics.contamination import STS_YEARS
from cseaug.errors import InputError
from cseaug.markdown import markdown_table
from cseaug.metrics.mer import mer_words, normalize_words
from cseaug.readers.benchmarks import read_sts_dir, read_sts_table

Words = Literal["whitespace", "project"]

PAPER_TABLE2: dict[str, tuple[int, int, float, float]] = {
    "STS2012-MSRvid": (406, 344, 2.4, 0.444),
    "STS2013-headlines": (495, 255, 2.6, 0.625),
    "STS2013-OnWN": (286, 275, 2.4, 0.556),
    "STS2014-deft-forum": (251, 199, 2.6, 0.4375),
    "STS2014-headlines": (483, 267, 3.0, 0.6),
    "STS2014-images": (461, 289, 3.2, 0.5),
    "STS2015-answers-students": (494, 256, 3.0, 0.75),
    "STS2015-headlines": (517, 233, 2.6, 0.625),
    "STS2015-images": (548, 202, 2.5, 0.538),
    "STS2016-answer-answer": (134, 120, 2.0, 0.5),
    "STS2016-headlines": (160, 89, 2.0, 0.625),
    "STS2016-plagiarism": (153, 77, 3.0, 0.737),
    "STS2016-postediting": (180, 64, 3.0, 0.416),
    "STS2016-question-question": (75, 134, 2.0, 0.4),
    "STSB-train": (3532, 2217, 3.0, 0.536),
    "STSB-test": (855, 524, 2.8, 0.516),
}
"""OssCSE Table 2 as printed: set -> (Cont., Oppn., median score, median MER); for comparison only."""
TABLE2_COLUMNS = ("cont", "oppn", "median_score", "median_mer")

PAIRS_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("pair", pa.int32()),
        ("s1", pa.string()),
        ("s2", pa.string()),
        ("score", pa.float64()),
        ("mer", pa.float64()),
        ("split", pa.string()),
    ]
)
"""Rows of ``probe_splits.parquet``: one scored pair of a kept set with its MER and split."""

CONT, OPPN = "cont", "oppn"


def _words(text: str, words: Words) -> list[str]:
    return text.lower().split() if words == "whitespace" else normalize_words(text)


def split_labels(scores: np.ndarray, mers: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Cont. mask of one set, and its median score and median MER.

    A pair is Cont. when (score > median score and MER < median MER) or (score < median
    score and MER > median MER); a tie with either median makes it Oppn.

    Example:
        >>> cont, ms, mm = split_labels(np.array([1.0, 2.0, 3.0]), np.array([0.9, 0.5, 0.1]))
        >>> cont.tolist(), ms, mm
        ([True, False, True], 2.0, 0.5)
    """
    scores = np.asarray(scores, dtype=np.float64)
    mers = np.asarray(mers, dtype=np.float64)
    if scores.shape != mers.shape or scores.ndim != 1 or scores.size == 0:
        raise ValueError(
            f"scores and mers must be equally long, non-empty vectors; got {scores.shape} and {mers.shape}"
        )
    median_score = float(np.median(scores))
    median_mer = float(np.median(mers))
    cont = ((scores > median_score) & (mers < median_mer)) | (
        (scores < median_score) & (mers > median_mer)
    )
    return cont, median_score, median_mer


def _sts_root(data_dir: Path) -> Path:
    for root in (data_dir, data_dir / "senteval_sts"):
        if any((root / f"STS{y}-en-test").is_dir() for y in STS_YEARS):
            return root
    raise InputError(
        f"no STS1x-en-test folder in {data_dir} or {data_dir / 'senteval_sts'}: give SentEval's STS "
        "directory (e.g. data/senteval_sts, which `cseaug data fetch` fills)"
    )


def load_probe_sets(data_dir: str | Path) -> dict[str, pa.Table]:
    """Every STS set of SentEval's layout, as (task, s1, s2, score) tables named like Table 2.

    ``STS20yy-<task>`` for each task of ``STSyy-en-test`` (unscored pairs left out, as
    SentEval), and ``STSB-train`` / ``STSB-dev`` / ``STSB-test`` from ``STSBenchmark/``.
    """
    root = _sts_root(Path(data_dir))
    sets: dict[str, pa.Table] = {}
    for year in STS_YEARS:
        folder = root / f"STS{year}-en-test"
        if not folder.is_dir():
            continue
        table = read_sts_dir(folder)
        tasks = table.column("task")
        for task in sorted(set(tasks.to_pylist())):
            sets[f"STS20{year}-{task}"] = table.filter(pc.equal(tasks, task))
    for split in ("train", "dev", "test"):
        file = root / "STSBenchmark" / f"sts-{split}.csv"
        if file.is_file():
            sets[f"STSB-{split}"] = read_sts_table(file)
    return sets


@dataclass
class ProbeSplits:
    """The Cont. / Oppn. splits of the kept sets and the Table 2-like summary of every set."""

    pairs: pa.Table
    table: list[dict[str, Any]]
    min_median: float
    max_median: float
    words: Words

    def kept(self) -> list[dict[str, Any]]:
        return [row for row in self.table if row["kept"]]


def probe_splits(
    data_dir: str | Path,
    *,
    min_median: float = 2.0,
    max_median: float = 3.5,
    words: Words = "whitespace",
) -> ProbeSplits:
    """Split every STS set into Cont. / Oppn. and summarise it like OssCSE's Table 2.

    Args:
        data_dir: SentEval's STS directory (``STS1x-en-test/``, ``STSBenchmark/``) or its parent.
        min_median, max_median: keep the sets whose median gold score lies in this closed
            range (OssCSE: 2 and 3.5).
        words: MER words, ``whitespace`` (the paper's) or ``project``.

    Returns:
        :class:`ProbeSplits`; ``table`` has one row per set (kept or not) with its counts,
        medians and, for the sets of Table 2, the paper's numbers.
    """
    if min_median > max_median:
        raise InputError(f"min_median {min_median} exceeds max_median {max_median}")
    columns: dict[str, list[Any]] = {name: [] for name in PAIRS_SCHEMA.names}
    table: list[dict[str, Any]] = []
    for name, pairs in load_probe_sets(data_dir).items():
        s1, s2 = pairs.column("s1").to_pylist(), pairs.column("s2").to_pylist()
        scores = np.asarray(pairs.column("score").to_pylist(), dtype=np.float64)
        mers = np.array(
            [mer_words(_words(a, words), _words(b, words)) for a, b in zip(s1, s2, strict=True)]
        )
        cont, median_score, median_mer = split_labels(scores, mers)
        kept = min_median <= median_score <= max_median
        paper = PAPER_TABLE2.get(name)
        table.append(
            {
                "dataset": name,
                "pairs": len(s1),
                "cont": int(cont.sum()),
                "oppn": int((~cont).sum()),
                "median_score": median_score,
                "median_mer": median_mer,
                "kept": kept,
                "paper": None if paper is None else dict(zip(TABLE2_COLUMNS, paper, strict=True)),
            }
        )
        if kept:
            columns["dataset"] += [name] * len(s1)
            columns["pair"] += list(range(len(s1)))
            columns["s1"] += s1
            columns["s2"] += s2
            columns["score"] += scores.tolist()
            columns["mer"] += mers.tolist()
            columns["split"] += [CONT if c else OPPN for c in cont]
    return ProbeSplits(pa.table(columns, schema=PAIRS_SCHEMA), table, min_median, max_median, words)


def table_markdown(result: ProbeSplits) -> str:
    """The kept sets as a markdown table beside the paper's Table 2 (Δ = ours − paper)."""
    header = ["set", "pairs", "Cont.", "Oppn.", "median score", "median MER"]
    header += ["paper Cont. / Oppn.", "paper medians", "Δ Cont."]
    rows = []
    for row in result.kept():
        paper = row["paper"]
        if paper:
            theirs = f"{paper['cont']} / {paper['oppn']}"
            medians = f"{paper['median_score']:g} / {paper['median_mer']:g}"
            delta = f"{row['cont'] - paper['cont']:+d}"
        else:
            theirs, medians, delta = "not in Table 2", "", ""
        ours = [row["dataset"], row["pairs"], row["cont"], row["oppn"], f"{row['median_score']:g}"]
        rows.append([*ours, f"{row['median_mer']:.4g}", theirs, medians, delta])
    lines = [markdown_table(header, rows)]
    kept = {row["dataset"] for row in result.kept()}
    missing = [name for name in PAPER_TABLE2 if name not in kept]
    if missing:
        lines += ["", f"Sets of Table 2 not kept here: {', '.join(missing)}."]
    return "\n".join(lines) + "\n"


def write_probe_splits(result: ProbeSplits, out_dir: str | Path) -> dict[str, Path]:
    """Write ``probe_splits.parquet`` (pairs of the kept sets), ``table.json`` and ``table.md``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "pairs": out / "probe_splits.parquet",
        "json": out / "table.json",
        "markdown": out / "table.md",
    }
    write_table(result.pairs, paths["pairs"])
    settings = {key: getattr(result, key) for key in ("min_median", "max_median", "words")}
    write_text_atomic(
        paths["json"], json.dumps({"settings": settings, "sets": result.table}, indent=2) + "\n"
    )
    write_text_atomic(
        paths["markdown"],
        "# Cont. / Oppn. probe splits (OssCSE section 3.3, Table 2)\n\n"
        f"Sets kept: median gold score in [{result.min_median:g}, {result.max_median:g}]; "
        f"MER words: {result.words}.\n\n" + table_markdown(result),
    )
    return paths
