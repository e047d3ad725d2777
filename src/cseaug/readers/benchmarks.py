"""Readers of public sentence-pair benchmarks: STS (SemEval and STS-B), SICK, MRPC, NLI.

Every reader returns a :class:`pyarrow.Table` with a fixed schema and records what it did in
the table's schema metadata (read it back with :func:`source_info`): the files read, the
lines skipped and why, and how many lines needed lossy decoding. Nothing is skipped
silently.

Conventions shared by all readers (docs/prompts-and-patterns.md, "Benchmark readers"):

* Files are decoded as UTF-8 (a leading BOM is dropped). Some historical STS releases are
  not clean UTF-8; such a file is decoded with ``errors="replace"`` (U+FFFD for each bad
  byte) and the number of affected lines is recorded as ``replaced_lines``, rather than
  failing a whole build on one byte.
* Lines are split on ``\\n`` only (a trailing ``\\r`` is dropped), never on the other
  Unicode line breaks that :meth:`str.splitlines` honours, because those occur inside
  sentences of these corpora.
* Tab-separated files are split on tabs without any quote handling (``csv.QUOTE_NONE``):
  STS-B and MRPC sentences contain unbalanced double quotes.
* Surrounding whitespace of each sentence is stripped (SentEval's SNLI files end every
  line with a space); nothing else in the text is changed.

Example:
    table = read_sts_dir("data/sts12_train")
    table.num_rows, source_info(table)["skipped"]  # (2234, {'empty_score': 0})
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Iterable, Sequence
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
    columns: dict[str, list[Any]],
    schema: pa.Schema,
    files: Sequence[Path],
    skipped: dict[str, int],
    replaced_lines: int,
) -> pa.Table:
    info = {
        "files": [str(f) for f in files],
        "skipped": skipped,
        "replaced_lines": replaced_lines,
    }
    if replaced_lines:
        logger.warning(
            "%d line(s) of %s were not valid UTF-8 and were decoded with replacement characters",
            replaced_lines,
            ", ".join(str(f) for f in files),
        )
    for reason, count in skipped.items():
        if count:
            logger.info("skipped %d line(s) of %s: %s", count, ", ".join(map(str, files)), reason)
    table = pa.table(columns, schema=schema)
    return table.replace_schema_metadata({_META_KEY: json.dumps(info)})


def _require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise InputError(f"{what} not found: {path} (expected an existing file)")
    return path


def _read_lines(path: Path) -> tuple[list[str], int]:
    """The file's lines (without line endings) and how many needed lossy decoding."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
        replaced = 0
    except UnicodeDecodeError:
        text = data.decode("utf-8-sig", errors="replace")
        replaced = -1  # counted below, per line
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if replaced:
        replaced = sum(_REPLACEMENT in line for line in lines)
    return lines, replaced


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


def read_sts_dir(path: str | Path, tasks: Iterable[str] | None = None) -> pa.Table:
    """Read a SemEval STS directory: ``STS.input.<task>.txt`` + ``STS.gs.<task>.txt`` per task.

    Works for the STS12 train split and SentEval's ``STS1x-en-test`` folders. As SentEval
    does, a pair whose gold score line is empty is left out (STS15 and STS16 distribute
    unscored pairs); the count is in ``source_info(table)["skipped"]["empty_score"]``.

    Args:
        path: the directory.
        tasks: read only these tasks (e.g. ``["MSRpar"]``); default: every
            ``STS.input.*.txt`` in the directory, in name order.

    Returns:
        A table of :data:`STS_SCHEMA`.

    Example:
        t = read_sts_dir("data/sts12_train", tasks=["MSRvid"])
        t.num_rows  # 750
    """
    root = Path(path)
    if not root.is_dir():
        raise InputError(
            f"STS directory not found: {root} (expected a folder of STS.input.<task>.txt files)"
        )
    found = {p.name[len("STS.input.") : -len(".txt")]: p for p in root.glob("STS.input.*.txt")}
    wanted = sorted(found) if tasks is None else list(tasks)
    if not wanted:
        raise InputError(f"{root} holds no STS.input.<task>.txt file")
    missing = [t for t in wanted if t not in found]
    if missing:
        raise InputError(
            f"{root}: no STS.input.<task>.txt for task(s) {missing}; available: {sorted(found)}"
        )
    columns: dict[str, list[Any]] = {name: [] for name in STS_SCHEMA.names}
    files: list[Path] = []
    empty = replaced = 0
    for task in wanted:
        input_path = found[task]
        gold_path = _require_file(root / f"STS.gs.{task}.txt", f"gold scores of task {task!r}")
        pairs, bad_pairs = _read_lines(input_path)
        scores, bad_scores = _read_lines(gold_path)
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
            columns["task"].append(task)
            columns["s1"].append(fields[0].strip())
            columns["s2"].append(fields[1].strip())
            columns["score"].append(_float(score.strip(), gold_path, number, "gold score"))
    return _with_info(columns, STS_SCHEMA, files, {"empty_score": empty}, replaced)


_S1_NAMES = ("sentence1", "s1", "sentence_a", "sent1", "text1", "sentence_1")
_S2_NAMES = ("sentence2", "s2", "sentence_b", "sent2", "text2", "sentence_2")
_SCORE_NAMES = ("score", "similarity_score", "relatedness_score", "gold_score", "label")


def _looks_like_stsb(first_line: str) -> bool:
    fields = first_line.split("\t")
    if len(fields) < 7:
        return False
    try:
        float(fields[4])
    except ValueError:
        return False
    return True


def _pick(header: list[str], names: Sequence[str]) -> str | None:
    lowered = {h.strip().lower(): h for h in header}
    return next((lowered[n] for n in names if n in lowered), None)


def read_sts_table(path: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """Read any table of scored sentence pairs as (task, s1, s2, score).

    Two layouts are recognised:

    * STS Benchmark (SentEval's lowercased copy or the raw release): tab-separated, no
      header, fields genre, file, year, id, score, sentence1, sentence2, then optional source
      columns that are ignored. ``task`` is the ``file`` field (MSRvid, headlines, ...).
    * A csv/tsv with a header (tab-separated when the header has a tab, else comma with
      standard csv quoting); ``columns`` names the (s1, s2, score) columns, or they are
      found among common names (sentence1/sentence2/score, sentence_A/sentence_B/
      relatedness_score, ...). ``task`` is the file stem.

    Args:
        path: the file.
        columns: the (s1, s2, score) column names of a headed table.

    Returns:
        A table of :data:`STS_SCHEMA`.

    Example:
        t = read_sts_table("data/stsbenchmark/sts-dev.csv")
        t.num_rows  # 1500
    """
    file = _require_file(Path(path), "STS table")
    lines, replaced = _read_lines(file)
    if not lines:
        raise InputError(f"{file} is empty (expected scored sentence pairs)")
    out: dict[str, list[Any]] = {name: [] for name in STS_SCHEMA.names}
    if columns is None and _looks_like_stsb(lines[0]):
        for number, line in enumerate(lines, start=1):
            fields = _fields(line, file, number, 7)
            out["task"].append(fields[1])
            out["score"].append(_float(fields[4], file, number, "score"))
            out["s1"].append(fields[5].strip())
            out["s2"].append(fields[6].strip())
        return _with_info(out, STS_SCHEMA, [file], {}, replaced)

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
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"{file}: column(s) {missing} not in the header {header}")
    index = [header.index(c) for c in columns]
    for number, row in enumerate(reader, start=2):
        if len(row) < len(header):
            raise InputError(
                f"{file}, line {number}: {len(row)} fields, the header has {len(header)}"
            )
        out["task"].append(file.stem)
        out["s1"].append(row[index[0]].strip())
        out["s2"].append(row[index[1]].strip())
        out["score"].append(_float(row[index[2]], file, number, columns[2]))
    return _with_info(out, STS_SCHEMA, [file], {}, replaced)


# --------------------------------------------------------------------------- SICK, MRPC

_SICK_SPLIT_FILES = {
    "sick_train": "TRAIN",
    "sick_trial": "TRIAL",
    "sick_test_annotated": "TEST",
    "sick_test": "TEST",
}
_SICK_NOHEADER = ("pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment")


def read_sick(path: str | Path) -> pa.Table:
    """Read SICK: the full ``SICK.txt`` (header, 12 columns) or a SemEval-2014 split file.

    The split files (``SICK_train.txt``, ``SICK_trial.txt``, ``SICK_test_annotated.txt``)
    may come with or without their header line ``pair_ID sentence_A sentence_B
    relatedness_score entailment_judgment``; ``split`` is taken from the ``SemEval_set``
    column of ``SICK.txt`` or else from the file name (null if neither says).

    Returns:
        A table of :data:`SICK_SCHEMA`.

    Example:
        t = read_sick("data/sick/SICK.txt")
        t.num_rows  # 9840
    """
    file = _require_file(Path(path), "SICK file")
    lines, replaced = _read_lines(file)
    if not lines:
        raise InputError(f"{file} is empty (expected SICK pairs)")
    first = lines[0].split("\t")
    if first[0].strip() == "pair_ID":
        header, body, offset = [h.strip() for h in first], lines[1:], 2
    else:
        header, body, offset = list(_SICK_NOHEADER), lines, 1
    label_column = next(
        (c for c in ("entailment_label", "entailment_judgment") if c in header), None
    )
    needed = ["pair_ID", "sentence_A", "sentence_B", "relatedness_score"]
    missing = [c for c in needed if c not in header] + (
        [] if label_column else ["entailment_label"]
    )
    if missing:
        raise InputError(f"{file}: SICK column(s) {missing} not in the header {header}")
    where = {name: header.index(name) for name in header}
    split_from_name = _SICK_SPLIT_FILES.get(file.stem.lower())
    out: dict[str, list[Any]] = {name: [] for name in SICK_SCHEMA.names}
    for number, line in enumerate(body, start=offset):
        fields = _fields(line, file, number, len(header))
        try:
            out["pair_id"].append(int(fields[where["pair_ID"]]))
        except ValueError:
            raise InputError(
                f"{file}, line {number}: pair_ID {fields[0]!r} is not an integer"
            ) from None
        out["s1"].append(fields[where["sentence_A"]].strip())
        out["s2"].append(fields[where["sentence_B"]].strip())
        out["relatedness"].append(
            _float(fields[where["relatedness_score"]], file, number, "relatedness_score")
        )
        out["entailment_label"].append(fields[where[label_column]].strip())
        split = fields[where["SemEval_set"]].strip() if "SemEval_set" in where else split_from_name
        out["split"].append(split)
    return _with_info(out, SICK_SCHEMA, [file], {}, replaced)


_MRPC_HEADER = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")


def read_mrpc(path: str | Path) -> pa.Table:
    """Read an MRPC file (``msr_paraphrase_{train,test}.txt``: BOM, header, CRLF, tabs).

    Returns:
        A table of :data:`MRPC_SCHEMA` (label 1 = paraphrase).

    Example:
        t = read_mrpc("data/mrpc/msr_paraphrase_test.txt")
        t.num_rows  # 1725
    """
    file = _require_file(Path(path), "MRPC file")
    lines, replaced = _read_lines(file)
    if not lines or tuple(h.strip() for h in lines[0].split("\t")) != _MRPC_HEADER:
        found = lines[0].split("\t") if lines else []
        raise InputError(f"{file}: expected the MRPC header {list(_MRPC_HEADER)}, found {found}")
    out: dict[str, list[Any]] = {name: [] for name in MRPC_SCHEMA.names}
    for number, line in enumerate(lines[1:], start=2):
        fields = _fields(line, file, number, 5)
        if fields[0] not in ("0", "1"):
            raise InputError(f"{file}, line {number}: Quality {fields[0]!r} is not 0 or 1")
        out["label"].append(int(fields[0]))
        out["s1"].append(fields[3].strip())
        out["s2"].append(fields[4].strip())
    return _with_info(out, MRPC_SCHEMA, [file], {}, replaced)


# --------------------------------------------------------------------------- NLI


def read_nli_csv(path: str | Path) -> pa.Table:
    """Read NLI triples in SimCSE's csv layout: header ``sent0,sent1,hard_neg``.

    ``sent0`` is the premise, ``sent1`` its entailment, ``hard_neg`` its contradiction. A
    file without ``hard_neg`` (two-column SimCSE data) gives null contradictions.

    Returns:
        A table of :data:`NLI_TRIPLE_SCHEMA`.

    Example:
        t = read_nli_csv("data/nli_for_simcse.csv")  # SimCSE's file (cseaug data fetch nli)
        t.column_names  # ['premise', 'entailment', 'contradiction']
    """
    file = _require_file(Path(path), "NLI csv")
    lines, replaced = _read_lines(file)
    reader = csv.reader(io.StringIO("\n".join(lines)))
    header = [h.strip() for h in next(reader, [])]
    missing = [c for c in ("sent0", "sent1") if c not in header]
    if missing:
        raise InputError(
            f"{file}: column(s) {missing} not in the header {header} (expected sent0,sent1,hard_neg)"
        )
    index = [header.index("sent0"), header.index("sent1")]
    negative = header.index("hard_neg") if "hard_neg" in header else None
    out: dict[str, list[Any]] = {name: [] for name in NLI_TRIPLE_SCHEMA.names}
    for number, row in enumerate(reader, start=2):
        if len(row) != len(header):
            raise InputError(
                f"{file}, line {number}: {len(row)} fields, the header has {len(header)}"
            )
        out["premise"].append(row[index[0]].strip())
        out["entailment"].append(row[index[1]].strip())
        out["contradiction"].append(row[negative].strip() if negative is not None else None)
    return _with_info(out, NLI_TRIPLE_SCHEMA, [file], {}, replaced)


_SPLIT_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def read_snli_senteval(path: str | Path, split: str) -> pa.Table:
    """Read SentEval's SNLI files ``s1.<split>``, ``s2.<split>``, ``labels.<split>`` of a directory.

    ``s1`` holds premises, ``s2`` hypotheses, ``labels`` entailment / neutral /
    contradiction, one per line, aligned.

    Args:
        path: the directory.
        split: ``train``, ``dev`` or ``test``.

    Returns:
        A table of :data:`NLI_PAIR_SCHEMA`.

    Example:
        t = read_snli_senteval("data/nli/snli_senteval", "dev")
        t.num_rows  # 9842
    """
    root = Path(path)
    if not root.is_dir():
        raise InputError(
            f"SNLI directory not found: {root} (expected a folder with s1.<split>, s2.<split>, labels.<split>)"
        )
    if not _SPLIT_NAME.match(split):
        raise InputError(f"split {split!r} is not a plain name like 'dev' or 'test'")
    files = [
        _require_file(root / f"{stem}.{split}", f"SNLI {stem} file")
        for stem in ("s1", "s2", "labels")
    ]
    read = [_read_lines(f) for f in files]
    counts = {f.name: len(lines) for f, (lines, _) in zip(files, read, strict=True)}
    if len(set(counts.values())) != 1:
        raise InputError(f"{root}: the SNLI files of split {split!r} differ in length: {counts}")
    (premises, _), (hypotheses, _), (labels, _) = read
    out = {
        "premise": [s.strip() for s in premises],
        "hypothesis": [s.strip() for s in hypotheses],
        "label": [s.strip() for s in labels],
    }
    return _with_info(out, NLI_PAIR_SCHEMA, files, {}, sum(r for _, r in read))


def nli_triples(pairs: pa.Table) -> pa.Table:
    """Turn labelled NLI pairs into triples: per premise, zip its entailments with its contradictions.

    The rule that built ``nli_triples_snli_devtest.csv`` (shared/data/SOURCES.md): group
    pairs by premise in file order, pair the i-th entailment with the i-th contradiction,
    drop neutral pairs and unmatched hypotheses.

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
    out: dict[str, list[Any]] = {name: [] for name in NLI_TRIPLE_SCHEMA.names}
    for premise, by_label in grouped.items():
        for entailment, contradiction in zip(
            by_label["entailment"], by_label["contradiction"], strict=False
        ):
            out["premise"].append(premise)
            out["entailment"].append(entailment)
            out["contradiction"].append(contradiction)
    table = pa.table(out, schema=NLI_TRIPLE_SCHEMA)
    return table.replace_schema_metadata(pairs.schema.metadata)
