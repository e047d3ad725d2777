"""Corpus cleaning, vectorised with Arrow compute: normalise, then drop with the first reason of
:data:`REASONS` that applies (docs/corpus.md, "Cleaning").

Example:
    >>> import pyarrow as pa
    >>> normalise_text(pa.array(["  Cafe\\u0301\\tau  lait "])).to_pylist()
    ['Café au lait']
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cseaug.dataset.schema import REJECTS_SCHEMA
from cseaug.readers.source import TEXT, RejectRecord
from cseaug.text_hazards import (
    CONTROL,
    EDGE_JOINERS,
    SPECIAL_TOKEN_PATTERN,
    WHITESPACE,
    char_class,
    invisible_pattern,
)

STAGE = "corpus"

INVALID_UTF8 = "invalid_utf8"
MALFORMED_ROW = "malformed_row"
EMPTY = "empty"
CONTROL_CHARACTERS = "control_characters"
SPECIAL_TOKEN = "special_token"
INVISIBLE_CHARACTERS = "invisible_characters"
TOO_SHORT = "too_short"
TOO_LONG = "too_long"
DUPLICATE = "duplicate"
REASONS: tuple[str, ...] = (
    INVALID_UTF8,
    MALFORMED_ROW,
    EMPTY,
    CONTROL_CHARACTERS,
    SPECIAL_TOKEN,
    INVISIBLE_CHARACTERS,
    TOO_SHORT,
    TOO_LONG,
    DUPLICATE,
)
"""Every reason code a corpus reject can carry."""

# One regex pass over every line finds the few lines that need a closer look: a control or
# whitespace character other than the space (cseaug.text_hazards), or two spaces in a row;
# then, as the rules ask, an invisible character or joiner, and the start of a special token.
# The slower work runs on those only.
_SPECIAL_TOKEN_START = r"<\||\[/?INST\]|<</?SYS>>|_of_turn>|</?s>|<｜"


@dataclass(frozen=True)
class TextRules:
    """What cleaning does with invisible characters and chat special tokens (``corpus.invisible_characters``, ``corpus.special_tokens``)."""

    invisible: Literal["remove", "reject", "keep"] = "remove"
    special_tokens: Literal["reject", "keep"] = "reject"

    @property
    def attention(self) -> str:
        pattern = f"{char_class(CONTROL)}|{char_class(WHITESPACE)}|  "
        if self.invisible != "keep":
            pattern += f"|{invisible_pattern()}|[{EDGE_JOINERS}]"
        if self.special_tokens != "keep":
            pattern += "|" + _SPECIAL_TOKEN_START
        return pattern

    def fix(self, text: pa.Array) -> pa.Array:
        """Invisible characters removed (``remove``), whitespace runs collapsed, edges trimmed."""
        if self.invisible == "remove":
            text = pc.replace_substring_regex(text, invisible_pattern(), "")
        text = pc.replace_substring_regex(text, f"(?: |{char_class(WHITESPACE)})+", " ")
        return pc.utf8_trim(text, " " if self.invisible == "keep" else " " + EDGE_JOINERS)


DEFAULT_RULES = TextRules()


@dataclass
class Normalised:
    """Normalised text; the lines the regex pre-pass sent to the slow path (the only ones that
    may hold a control character or a special token); those that held an invisible character."""

    text: pa.Array
    attention: pa.Array
    invisible: pa.Array


def kept_schema(views: list[str]) -> pa.Schema:
    """Schema of the rows a cleaned batch keeps: record number, sentence, ``raw`` (the line
    before normalising; null where it was normal already, most lines), then the views."""
    fields = [("record", pa.int64()), ("sentence", pa.string()), ("raw", pa.string())]
    return pa.schema(fields + [(view, pa.string()) for view in views])


def decode_utf8(values: pa.Array) -> tuple[pa.Array, pa.Array | None]:
    """Binary values decoded (undecodable ones null) and, when some value is not UTF-8, those
    values with their bad bytes backslash-escaped (null elsewhere)."""
    if pa.types.is_string(values.type):
        return values, None
    try:
        return values.cast(pa.string()), None
    except pa.ArrowInvalid:
        pass
    # Rare path (a batch with bad bytes): find them value by value, this batch only.
    text: list[str | None] = []
    escaped: list[str | None] = []
    for value in values.to_pylist():
        try:
            text.append(None if value is None else value.decode("utf-8"))
            escaped.append(None)
        except UnicodeDecodeError:
            text.append(None)
            escaped.append(value.decode("utf-8", "backslashreplace"))
    return pa.array(text, pa.string()), pa.array(escaped, pa.string())


def normalise_text(text: pa.Array, rules: TextRules = DEFAULT_RULES) -> pa.Array:
    """Unicode NFC, invisible characters removed (as ``rules`` say), whitespace runs to one
    space, stripped (nulls stay null)."""
    return _normalise(text, rules).text


def _normalise(text: pa.Array, rules: TextRules) -> Normalised:
    # ASCII is always NFC: normalise the other lines only (about one in eight on Wikipedia).
    not_ascii = pc.fill_null(pc.invert(pc.string_is_ascii(text)), False)
    text = _replace_where(not_ascii, text, lambda part: pc.utf8_normalize(part, "NFC"))
    attention = pc.fill_null(pc.match_substring_regex(text, rules.attention), False)
    invisible = (
        _test_where(attention, text, invisible_pattern())
        if rules.invisible != "keep"
        else _all_false(len(text))
    )
    edge_space = pc.fill_null(pc.or_(pc.starts_with(text, " "), pc.ends_with(text, " ")), False)
    fixed = _replace_where(pc.or_(attention, edge_space), text, rules.fix)
    return Normalised(fixed, attention, invisible)


def _replace_where(
    mask: pa.Array,
    values: pa.Array,
    change: Callable[[pa.Array], pa.Array],
    base: pa.Array | None = None,
) -> pa.Array:
    """``base`` (default ``values``) with ``change`` of ``values`` where ``mask`` is true,
    computed on those entries only."""
    base = values if base is None else base
    if not pc.any(mask).as_py():
        return base
    return pc.replace_with_mask(base, mask, change(values.filter(mask)))


def _all_false(rows: int) -> pa.Array:
    return pa.array(np.zeros(rows, dtype=bool))


def _test_where(mask: pa.Array, values: pa.Array, pattern: str) -> pa.Array:
    """Whether ``pattern`` matches each value, tested only where ``mask`` is true (false elsewhere)."""
    test = lambda part: pc.fill_null(pc.match_substring_regex(part, pattern), False)  # noqa: E731
    return _replace_where(mask, values, test, _all_false(len(values)))


def _null_if_empty(text: pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)


@dataclass
class CleanedBatch:
    """One batch after cleaning: the rows kept (:func:`kept_schema`) and the rejects."""

    kept: pa.RecordBatch
    rejects: pa.Table
    invisible_removed: int = 0
    """Kept lines that lost invisible characters (``corpus.invisible_characters: remove``)."""


def clean_batch(
    batch: pa.RecordBatch,
    first_record: int,
    *,
    min_chars: int,
    max_chars: int,
    record_key: str = "line",
    rules: TextRules = DEFAULT_RULES,
) -> CleanedBatch:
    """Normalise one reader batch (``text`` then view columns; ``first_record``: the 1-based
    record number of its first row, under ``record_key`` in a reject's ``detail``) and split
    it into kept rows and rejects.

    Example:
        >>> import pyarrow as pa
        >>> b = pa.RecordBatch.from_arrays([pa.array([b"A  cat.", b"", b"x\\x00"])], ["text"])
        >>> out = clean_batch(b, 1, min_chars=1, max_chars=100)
        >>> out.kept.column("sentence").to_pylist(), out.rejects.column("reason").to_pylist()
        (['A cat.'], ['empty', 'control_characters'])
    """
    rows = batch.num_rows
    records = pa.array(np.arange(first_record, first_record + rows, dtype=np.int64))
    text, escaped = decode_utf8(batch.column(TEXT))
    normal = _normalise(text, rules)
    sentence = normal.text
    length = pc.utf8_length(sentence)
    views = [name for name in batch.schema.names if name != TEXT]
    normal_views = [_normalise(batch.column(name), rules) for name in views]
    special = _all_false(rows)
    if rules.special_tokens == "reject":
        for part in [normal, *normal_views]:
            special = pc.or_(special, _test_where(part.attention, part.text, SPECIAL_TOKEN_PATTERN))
    reasons = {
        INVALID_UTF8: pc.is_valid(escaped) if escaped is not None else _all_false(rows),
        EMPTY: pc.fill_null(pc.equal(length, 0), True),
        CONTROL_CHARACTERS: _test_where(normal.attention, sentence, char_class(CONTROL)),
        SPECIAL_TOKEN: special,
        INVISIBLE_CHARACTERS: normal.invisible if rules.invisible == "reject" else _all_false(rows),
        TOO_SHORT: pc.fill_null(pc.less(length, min_chars), False),
        TOO_LONG: pc.fill_null(pc.greater(length, max_chars), False),
    }
    conditions = pc.make_struct(*reasons.values(), field_names=list(reasons))
    reason = pc.case_when(conditions, *reasons)
    dropped = pc.is_valid(reason)

    chars = pc.if_else(
        pc.fill_null(pc.is_in(reason, pa.array([TOO_SHORT, TOO_LONG])), False),
        pc.binary_join_element_wise(', "chars": ', pc.cast(length, pa.string()), ""),
        "",
    )
    detail = pc.binary_join_element_wise(
        f'{{"{record_key}": ', pc.cast(records, pa.string()), pc.fill_null(chars, ""), "}", ""
    )
    raw = pc.coalesce(escaped, text) if escaped is not None else text
    rejects = rejects_from_arrays(
        sentence=_null_if_empty(sentence).filter(dropped),
        reason=reason.filter(dropped),
        raw=raw.filter(dropped),
        detail=detail.filter(dropped),
    )

    keep = pc.invert(dropped)
    kept_text = text.filter(keep)
    kept_sentence = sentence.filter(keep)
    # raw where normalising changed it, else null (if_else would keep all of raw's buffer)
    changed = pc.fill_null(pc.not_equal(kept_text, kept_sentence), False)
    raw_kept = _replace_where(
        changed, kept_text, lambda part: part, pa.nulls(len(changed), pa.string())
    )
    arrays = [records.filter(keep), kept_sentence, raw_kept]
    arrays += [_null_if_empty(part.text.filter(keep)) for part in normal_views]
    removed = pc.sum(normal.invisible.filter(keep)).as_py() if rules.invisible == "remove" else 0
    return CleanedBatch(
        pa.RecordBatch.from_arrays(arrays, schema=kept_schema(views)), rejects, removed or 0
    )


def rejects_from_arrays(
    *, sentence: pa.Array, reason: pa.Array, raw: pa.Array, detail: pa.Array
) -> pa.Table:
    """A corpus rejects table (REJECTS_SCHEMA) from equal-length arrays, without Python rows."""
    rows = len(reason)
    columns = {
        "id": pa.nulls(rows, pa.string()),
        "sentence": sentence,
        "stage": pa.repeat(pa.scalar(STAGE), rows),
        "view": pa.nulls(rows, pa.string()),
        "reason": reason,
        "raw": raw,
        "detail": detail,
    }
    return pa.Table.from_pydict(columns, schema=REJECTS_SCHEMA)


def malformed_rejects(records: Sequence[RejectRecord]) -> pa.Table:
    """Rejects for rows the reader's parser skipped (``malformed_row``)."""
    details: list[dict[str, Any]] = [r["detail"] for r in records]
    return rejects_from_arrays(
        sentence=pa.nulls(len(records), pa.string()),
        reason=pa.repeat(pa.scalar(MALFORMED_ROW), len(records)),
        raw=pa.array([r["raw"] for r in records], pa.string()),
        detail=pa.array([json.dumps(d) for d in details], pa.string()),
    )
