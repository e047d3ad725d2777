"""Readers of public sentence-pair benchmarks (STS, STS-B, SICK, MRPC, NLI) into tables of
fixed schemas whose metadata records the files read, the lines skipped and why, and the
lines decoded lossily (:func:`source_info`); the rules: docs/prompts-and-patterns.md,
"Benchmark readers".
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from cseaug.errors import InputError

logger = logging.getLogger(__name__)

STS_SCHEMA = pa.schema(
    [("task", pa.string()), ("s1", pa.string()), ("s2", pa.string()), ("score", pa.float64())]
)
"""(task, s1, s2, score): one scored sentence pair; ``task`` is the subset (e.g. MSRpar)."""

SICK_SCHEMA = pa.schema(
    [
        ("pair_id", pa.int64()),
        ("s1", pa.string()),
        ("s2", pa.string()),
        ("relatedness", pa.float64()),
        ("entailment_label", pa.string()),
        ("split", pa.string()),
    ]
)
"""SICK pairs; ``split`` is TRAIN, TRIAL or TEST (null when the file does not say)."""

MRPC_SCHEMA = pa.schema([("label", pa.int8()), ("s1", pa.string()), ("s2", pa.string())])
"""MRPC pairs; ``label`` 1 = paraphrase."""

NLI_PAIR_SCHEMA = pa.schema(
    [("premise", pa.string()), ("hypothesis", pa.string()), ("label", pa.string())]
)
"""Labelled NLI pairs (entailment, neutral, contradiction)."""

NLI_TRIPLE_SCHEMA = pa.schema(
    [("premise", pa.string()), ("entailment", pa.string()), ("contradiction", pa.string())]
)
"""NLI triples as in SimCSE's ``nli_for_simcse.csv`` (sent0, sent1, hard_neg)."""

_META_KEY = b"cseaug.source"
_REPLACEMENT = "\ufffd"


def source_info(table: pa.Table) -> dict[str, Any]:
    """What a reader recorded about a table: ``files``, ``skipped`` (reason -> count), ``replaced_lines``.

    Example:
        >>> source_info(pa.table({"a": [1]}))
        {}
    """
    metadata = table.schema.metadata or {}
    raw = metadata.get(_META_KEY)
    return json.loads(raw) if raw else {}


def _with_info(
    rows: list[tuple[Any, ...]],
    schema: pa.Schema,
    files: Sequence[Path],
    skipped: dict[str, int],
    replaced_lines: int,
) -> pa.Table:
    names = [str(f) for f in files]
    info = {"files": names, "skipped": skipped, "replaced_lines": replaced_lines}
    read = ", ".join(names)
    if replaced_lines:
        logger.warning(
            "%d line(s) of %s were not valid UTF-8 and were decoded with replacement characters",
            replaced_lines,
            read,
        )
    for reason, count in skipped.items():
        if count:
            logger.info("skipped %d line(s) of %s: %s", count, read, reason)
    return _table(rows, schema).replace_schema_metadata({_META_KEY: json.dumps(info)})


def _table(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    """The table of ``schema`` whose rows are the tuples ``rows``."""
    return pa.Table.from_pylist([dict(zip(schema.names, row, strict=True)) for row in rows], schema)


def _read_lines(path: Path, what: str) -> tuple[list[str], int]:
    """The lines (without line endings) of the file ``what``, and how many needed lossy decoding."""
    if not path.is_file():
        raise InputError(f"{what} not found: {path} (expected an existing file)")
    data = path.read_bytes()
    try:
        text, lossy = data.decode("utf-8-sig"), False
    except UnicodeDecodeError:
        text, lossy = data.decode("utf-8-sig", errors="replace"), True
    lines = (
        [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")] if text else []
    )
    return lines, sum(_REPLACEMENT in line for line in lines) if lossy else 0


def _fields(line: str, path: Path, number: int, minimum: int) -> list[str]:
    fields = line.split("\t")
    if len(fields) < minimum:
        raise InputError(
            f"{path}, line {number}: expected at least {minimum} tab-separated fields, "
            f"found {len(fields)}: {line[:120]!r}"
        )
    return fields


def _float(value: str, path: Path, number: int, column: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise InputError(f"{path}, line {number}: {column} {value!r} is not a number") from None


# --------------------------------------------------------------------------- STS


def read_sts_dir(path: str | Path) -> pa.Table:
    """Read a SemEval STS directory (``STS.input.<task>.txt`` and ``STS.gs.<task>.txt`` per
    task, in name order); as in SentEval, a pair without a gold score is skipped, counted."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(
            f"STS directory not found: {root} (expected a folder of STS.input.<task>.txt files)"
        )
    found = {p.name[len("STS.input.") : -len(".txt")]: p for p in root.glob("STS.input.*.txt")}
    if not found:
        raise InputError(f"{root} holds no STS.input.<task>.txt file")
    rows: list[tuple[Any, ...]] = []
    files: list[Path] = []
    empty = replaced = 0
    for task in sorted(found):
        input_path, gold_path = found[task], root / f"STS.gs.{task}.txt"
        pairs, bad_pairs = _read_lines(input_path, f"input of task {task!r}")
        scores, bad_scores = _read_lines(gold_path, f"gold scores of task {task!r}")
        files += [input_path, gold_path]
        replaced += bad_pairs + bad_scores
        if len(pairs) != len(scores):
            raise InputError(
                f"{input_path} has {len(pairs)} lines but {gold_path} has {len(scores)}: "
                "each sentence pair needs one gold score line"
            )
        for number, (pair, score) in enumerate(zip(pairs, scores, strict=True), start=1):
            if not score.strip():
                empty += 1
                continue
            fields = _fields(pair, input_path, number, 2)
            gold = _float(score.strip(), gold_path, number, "gold score")
            rows.append((task, fields[0].strip(), fields[1].strip(), gold))
    return _with_info(rows, STS_SCHEMA, files, {"empty_score": empty}, replaced)


_S1_NAMES = ("sentence1", "s1", "sentence_a", "sent1", "text1", "sentence_1")
_S2_NAMES = ("sentence2", "s2", "sentence_b", "sent2", "text2", "sentence_2")
_SCORE_NAMES = ("score", "similarity_score", "relatedness_score", "gold_score", "label")


def _looks_like_stsb(first_line: str) -> bool:
    fields = first_line.split("\t")
    try:
        float(fields[4])
    except (IndexError, ValueError):
        return False
    return len(fields) >= 7


def _pick(header: list[str], names: Sequence[str]) -> str | None:
    lowered = {h.strip().lower(): h for h in header}
    return next((lowered[n] for n in names if n in lowered), None)


def read_sts_table(path: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """Read scored sentence pairs as (task, s1, s2, score): the STS Benchmark (``task`` is its
    ``file`` field), or a csv/tsv with a header (``task`` is the file stem) whose (s1, s2,
    score) columns are ``columns`` or found among common names."""
    file = Path(path)
    lines, replaced = _read_lines(file, "STS table")
    if not lines:
        raise InputError(f"{file} is empty (expected scored sentence pairs)")
    rows: list[tuple[Any, ...]] = []
    if columns is None and _looks_like_stsb(lines[0]):
        for number, line in enumerate(lines, start=1):
            fields = _fields(line, file, number, 7)
            score = _float(fields[4], file, number, "score")
            rows.append((fields[1], fields[5].strip(), fields[6].strip(), score))
        return _with_info(rows, STS_SCHEMA, [file], {}, replaced)

    if columns is not None and len(columns) != 3:
        raise InputError(f"columns must name (s1, s2, score) columns, got {list(columns)}")
    delimiter = "\t" if "\t" in lines[0] else ","
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    reader = csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter, quoting=quoting)
    header = next(reader)
    if columns is None:
        picked = (_pick(header, _S1_NAMES), _pick(header, _S2_NAMES), _pick(header, _SCORE_NAMES))
        if None in picked:
            raise InputError(
                f"{file}: cannot tell the (s1, s2, score) columns from the header {header}; "
                "pass them explicitly (patterns.columns: [s1, s2, score])"
            )
        columns = picked  # type: ignore[assignment]
    if missing := [c for c in columns if c not in header]:
        raise InputError(f"{file}: column(s) {missing} not in the header {header}")
    index = [header.index(c) for c in columns]
    for number, row in enumerate(reader, start=2):
        if len(row) < len(header):
            raise InputError(
                f"{file}, line {number}: {len(row)} fields, the header has {len(header)}"
            )
        score = _float(row[index[2]], file, number, columns[2])
        rows.append((file.stem, row[index[0]].strip(), row[index[1]].strip(), score))
    return _with_info(rows, STS_SCHEMA, [file], {}, replaced)


# --------------------------------------------------------------------------- SICK, MRPC

_SICK_SPLIT_FILES = {
    "sick_train": "TRAIN",
    "sick_trial": "TRIAL",
    "sick_test_annotated": "TEST",
    "sick_test": "TEST",
}
_SICK_NOHEADER = ("pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment")


def read_sick(path: str | Path) -> pa.Table:
    """Read SICK: the full ``SICK.txt`` or a SemEval-2014 split file, with or without header
    (``split`` from its ``SemEval_set`` column, else from the file name, else null)."""
    file = Path(path)
    lines, replaced = _read_lines(file, "SICK file")
    if not lines:
        raise InputError(f"{file} is empty (expected SICK pairs)")
    first = lines[0].split("\t")
    if first[0].strip() == "pair_ID":
        header, body, offset = [h.strip() for h in first], lines[1:], 2
    else:
        header, body, offset = list(_SICK_NOHEADER), lines, 1
    labels = ("entailment_label", "entailment_judgment")
    label_column = next((c for c in labels if c in header), "entailment_label")
    needed = ["pair_ID", "sentence_A", "sentence_B", "relatedness_score", label_column]
    if missing := [c for c in needed if c not in header]:
        raise InputError(f"{file}: SICK column(s) {missing} not in the header {header}")
    where = {name: header.index(name) for name in header}
    split_from_name = _SICK_SPLIT_FILES.get(file.stem.lower())
    rows: list[tuple[Any, ...]] = []
    for number, line in enumerate(body, start=offset):
        fields = _fields(line, file, number, len(header))
        try:
            pair_id = int(fields[where["pair_ID"]])
        except ValueError:
            raise InputError(
                f"{file}, line {number}: pair_ID {fields[0]!r} is not an integer"
            ) from None
        s1, s2 = fields[where["sentence_A"]].strip(), fields[where["sentence_B"]].strip()
        score = _float(fields[where["relatedness_score"]], file, number, "relatedness_score")
        label = fields[where[label_column]].strip()
        split = fields[where["SemEval_set"]].strip() if "SemEval_set" in where else split_from_name
        rows.append((pair_id, s1, s2, score, label, split))
    return _with_info(rows, SICK_SCHEMA, [file], {}, replaced)


_MRPC_HEADER = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")


def read_mrpc(path: str | Path) -> pa.Table:
    """Read an MRPC file (``msr_paraphrase_{train,test}.txt``: BOM, header, CRLF, tabs)."""
    file = Path(path)
    lines, replaced = _read_lines(file, "MRPC file")
    if not lines or tuple(h.strip() for h in lines[0].split("\t")) != _MRPC_HEADER:
        found = lines[0].split("\t") if lines else []
        raise InputError(f"{file}: expected the MRPC header {list(_MRPC_HEADER)}, found {found}")
    rows: list[tuple[Any, ...]] = []
    for number, line in enumerate(lines[1:], start=2):
        fields = _fields(line, file, number, 5)
        if fields[0] not in ("0", "1"):
            raise InputError(f"{file}, line {number}: Quality {fields[0]!r} is not 0 or 1")
        rows.append((int(fields[0]), fields[3].strip(), fields[4].strip()))
    return _with_info(rows, MRPC_SCHEMA, [file], {}, replaced)


# --------------------------------------------------------------------------- NLI


def read_nli_csv(path: str | Path) -> pa.Table:
    """Read NLI triples in SimCSE's csv layout, ``sent0,sent1,hard_neg`` (the contradiction
    null in a two-column file)."""
    file = Path(path)
    lines, replaced = _read_lines(file, "NLI csv")
    reader = csv.reader(io.StringIO("\n".join(lines)))
    header = [h.strip() for h in next(reader, [])]
    if missing := [c for c in ("sent0", "sent1") if c not in header]:
        raise InputError(
            f"{file}: column(s) {missing} not in the header {header} (expected sent0,sent1,hard_neg)"
        )
    index = [header.index("sent0"), header.index("sent1")]
    negative = header.index("hard_neg") if "hard_neg" in header else None
    rows: list[tuple[Any, ...]] = []
    for number, row in enumerate(reader, start=2):
        if len(row) != len(header):
            raise InputError(
                f"{file}, line {number}: {len(row)} fields, the header has {len(header)}"
            )
        contradiction = row[negative].strip() if negative is not None else None
        rows.append((row[index[0]].strip(), row[index[1]].strip(), contradiction))
    return _with_info(rows, NLI_TRIPLE_SCHEMA, [file], {}, replaced)


_SPLIT_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def read_snli_senteval(path: str | Path, split: str) -> pa.Table:
    """Read SentEval's aligned SNLI files ``s1.<split>``, ``s2.<split>``, ``labels.<split>``."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(
            f"SNLI directory not found: {root} (expected a folder with s1.<split>, s2.<split>, labels.<split>)"
        )
    if not _SPLIT_NAME.match(split):
        raise InputError(f"split {split!r} is not a plain name like 'dev' or 'test'")
    files = [root / f"{stem}.{split}" for stem in ("s1", "s2", "labels")]
    read = [_read_lines(f, f"SNLI {f.stem} file") for f in files]
    counts = {f.name: len(lines) for f, (lines, _) in zip(files, read, strict=True)}
    if len(set(counts.values())) != 1:
        raise InputError(f"{root}: the SNLI files of split {split!r} differ in length: {counts}")
    lines = zip(*(lines for lines, _ in read), strict=True)
    rows = [tuple(field.strip() for field in fields) for fields in lines]
    return _with_info(rows, NLI_PAIR_SCHEMA, files, {}, sum(r for _, r in read))


def nli_triples(pairs: pa.Table) -> pa.Table:
    """Per premise, pair the i-th entailment with the i-th contradiction; neutral pairs and
    unmatched hypotheses are dropped (the rule of shared/data/SOURCES.md).

    Example:
        >>> t = pa.table({"premise": ["p", "p", "p"], "hypothesis": ["e", "n", "c"],
        ...               "label": ["entailment", "neutral", "contradiction"]})
        >>> nli_triples(t).to_pylist()
        [{'premise': 'p', 'entailment': 'e', 'contradiction': 'c'}]
    """
    grouped: dict[str, dict[str, list[str]]] = {}
    for row in pairs.select(["premise", "hypothesis", "label"]).to_pylist():
        by_label = grouped.setdefault(row["premise"], {"entailment": [], "contradiction": []})
        if row["label"] in by_label:
            by_label[row["label"]].append(row["hypothesis"])
    rows = [
        (premise, entailment, contradiction)
        for premise, by_label in grouped.items()
        for entailment, contradiction in zip(
            by_label["entailment"], by_label["contradiction"], strict=False
        )
    ]
    return _table(rows, NLI_TRIPLE_SCHEMA).replace_schema_metadata(pairs.schema.metadata)
