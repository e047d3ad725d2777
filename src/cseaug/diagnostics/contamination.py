"""Contamination check: rows whose anchor or views appear verbatim in the STS / SICK evaluation sets.

Every text is normalised the same way on both sides (:func:`normalize_text`: entities
decoded, case folded, punctuation gone, so SentEval's tokenised copies match raw text) and
looked up in an index of STS12–16, STS-B dev and test, and SICK test (:func:`load_eval_index`).
:class:`ContaminationCounter` counts while a version streams by; :func:`contamination_filter`
drops contaminated rows to rejects (docs/diagnostics.md, "Contamination").

Example:
    >>> normalize_text("A plane is taking off.") == normalize_text("a plane is taking off .")
    True
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cseaug.dataset.schema import reject_record, rejects_table
from cseaug.diagnostics.views import present_views
from cseaug.errors import InputError
from cseaug.readers.benchmarks import read_sick, read_sts_dir, read_sts_table
from cseaug.secrets import Scrubber
from cseaug.step import StepResult

REJECT_STAGE = "diagnostics"
REJECT_REASON = "contamination"
STS_YEARS = (12, 13, 14, 15, 16)
EXAMPLES_KEPT = 10

_NON_ALNUM = re.compile(r"[\W_]+")


def normalize_text(text: str) -> str:
    """The key under which a sentence is compared: entities decoded, case folded, punctuation gone.

    Example:
        >>> normalize_text("He&apos;s  here -- \\"now\\"!")
        'he s here now'
    """
    if "&" in text:
        text = html.unescape(text)
    return _NON_ALNUM.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


def _pairs(table: pa.Table) -> list[str]:
    return table.column("s1").to_pylist() + table.column("s2").to_pylist()


def _sick_test(path: Path) -> pa.Table:
    """The test pairs of a SICK file (the full ``SICK.txt`` or the test split's own file)."""
    return read_sick(path).filter(pc.equal(pc.field("split"), "TEST"))


def eval_set_readers(root: str | Path) -> tuple[dict[str, Callable[[], list[str]]], list[str]]:
    """Readers of the evaluation sets found under ``root``, and the names of those not found.

    ``root`` may be shared/data (holding ``senteval_sts/``, ``stsbenchmark/``, ``sick/``) or
    SentEval's STS folder itself (holding ``STS1x-en-test/`` and ``STSBenchmark/``).
    """
    base = Path(root)
    if not base.is_dir():
        raise InputError(f"evaluation data directory not found: {base} (diagnostics.eval_data_dir)")
    senteval = base / "senteval_sts"
    stsb_dirs = (senteval / "STSBenchmark", base / "STSBenchmark", base / "stsbenchmark")
    sick_test = "SICK_test_annotated.txt"
    candidates: dict[str, tuple[list[Path], Callable[[Path], pa.Table]]] = {
        **{
            f"STS{year}": ([d / f"STS{year}-en-test" for d in (senteval, base)], read_sts_dir)
            for year in STS_YEARS
        },
        **{
            f"STSB-{split}": ([d / f"sts-{split}.csv" for d in stsb_dirs], read_sts_table)
            for split in ("dev", "test")
        },
        "SICK-test": (
            [
                base / "sick" / "SICK.txt",
                base / "SICK.txt",
                base / "sick" / "semeval2014_splits_noheader" / sick_test,
                base / "sick" / sick_test,
                base / sick_test,
            ],
            _sick_test,
        ),
    }
    readers: dict[str, Callable[[], list[str]]] = {}
    missing: list[str] = []
    for name, (paths, read) in candidates.items():
        found = next((p for p in paths if p.exists()), None)
        if found is None:
            missing.append(name)
        else:
            readers[name] = lambda read=read, found=found: _pairs(read(found))
    if not readers:
        raise InputError(
            f"no evaluation set under {base}: expected senteval_sts/STS1x-en-test, "
            "senteval_sts/STSBenchmark or stsbenchmark/sts-{dev,test}.csv, sick/SICK.txt"
        )
    return readers, missing


@dataclass
class EvalIndex:
    """Normalised evaluation sentences -> bit mask of the sets that contain them."""

    sets: list[str]
    keys: dict[str, int]
    sizes: dict[str, int]
    missing: list[str] = field(default_factory=list)
    root: str = ""

    def match(self, texts: Sequence[str | None]) -> np.ndarray:
        """Bit mask per text (0: clean; bit i: found in ``sets[i]``); None gives 0."""
        get = self.keys.get
        return np.fromiter(
            (0 if t is None else get(normalize_text(t), 0) for t in texts),
            dtype=np.int64,
            count=len(texts),
        )

    def names(self, mask: int) -> list[str]:
        """The set names of a bit mask."""
        return [name for i, name in enumerate(self.sets) if mask >> i & 1]


def load_eval_index(root: str | Path) -> EvalIndex:
    """Read the evaluation sets under ``root`` (:func:`eval_set_readers`) into an
    :class:`EvalIndex`."""
    readers, missing = eval_set_readers(root)
    keys: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for bit, (name, read) in enumerate(readers.items()):
        normalised = {normalize_text(t) for t in read()}
        normalised.discard("")
        sizes[name] = len(normalised)
        for key in normalised:
            keys[key] = keys.get(key, 0) | (1 << bit)
    return EvalIndex(sets=list(readers), keys=keys, sizes=sizes, missing=missing, root=str(root))


@dataclass
class ContaminationCounter:
    """Contamination counts of a stream of canonical tables."""

    index: EvalIndex
    fields: Literal["anchor", "any"] = "any"
    rows: int = 0
    contaminated_rows: int = 0
    by_field: Counter[str] = field(default_factory=Counter)
    by_set: Counter[str] = field(default_factory=Counter)
    examples: list[dict[str, Any]] = field(default_factory=list)

    def add(self, table: pa.Table) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Count one table; returns the per-row bit mask over all checked fields, and per field."""
        names = ["sentence", *(present_views(table) if self.fields == "any" else [])]
        masks = {name: self.index.match(table.column(name).to_pylist()) for name in names}
        combined = np.zeros(table.num_rows, dtype=np.int64)
        for name, mask in masks.items():
            self.by_field[name] += int((mask != 0).sum())
            combined |= mask
        self.rows += table.num_rows
        self.contaminated_rows += int((combined != 0).sum())
        for bit, name in enumerate(self.index.sets):
            self.by_set[name] += int((combined >> bit & 1).sum())
        for i in np.flatnonzero(combined)[: max(0, EXAMPLES_KEPT - len(self.examples))]:
            found = {name: self.index.names(int(m[i])) for name, m in masks.items() if m[i]}
            self.examples.append({"id": table.column("id")[int(i)].as_py(), "fields": found})
        return combined, masks

    def to_dict(self) -> dict[str, Any]:
        return {
            "eval_data_dir": self.index.root,
            "eval_sets": self.index.sizes,
            "eval_sets_missing": self.index.missing,
            "fields_checked": self.fields,
            "rows": self.rows,
            "contaminated_rows": self.contaminated_rows,
            "share": self.contaminated_rows / self.rows if self.rows else None,
            "by_field": self.by_field,
            "by_eval_set": self.by_set,
            "examples": self.examples,
        }


def contamination_filter(
    rows: pa.Table, index: EvalIndex, fields: Literal["anchor", "any"] = "any"
) -> StepResult:
    """Drop rows whose anchor (or, with ``any``, any view) is an evaluation sentence.

    Returns:
        Kept rows, rejects (stage ``diagnostics``, reason ``contamination``; ``view`` is the
        first matching field, ``detail`` maps each matching field to its evaluation sets),
        and the :class:`ContaminationCounter` numbers in ``stats``.
    """
    counter = ContaminationCounter(index, fields)
    combined, masks = counter.add(rows)
    dropped = np.flatnonzero(combined)
    anchors = rows.select(["id", "sentence"]).take(dropped).to_pylist()
    scrub = Scrubber()
    rejects = []
    for i, anchor in zip(dropped, anchors, strict=True):
        found = {name: index.names(int(m[i])) for name, m in masks.items() if m[i]}
        first = next(iter(found))
        view = None if first == "sentence" else first
        row = anchor["id"], anchor["sentence"]
        rejects.append(reject_record(*row, REJECT_STAGE, view, REJECT_REASON, None, found, scrub))
    return StepResult(
        rows=rows.filter(pa.array(combined == 0)),
        rejects=rejects_table(rejects),
        stats=counter.to_dict(),
    )
