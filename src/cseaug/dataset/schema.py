"""The dataset contract (docs/dataset-contract.md): the canonical row and the reject row.

One canonical row per anchor sentence: ``split`` is ``aigen`` for rows with generated views,
``other`` for the rest of the corpus; views a method does not produce are null.

Example:
    >>> t = rows_table([{"id": "a", "sentence": "A cat sat.", "split": "other"}])
    >>> t.schema.equals(CANONICAL_SCHEMA)
    True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from cseaug.secrets import Scrubber

VIEW_COLUMNS: tuple[str, ...] = ("positive", "intermediate", "negative", "knowledge")
"""Generated (or given) views of an anchor, in the contract's order."""

AUGMENTATION_TYPE = pa.struct(
    [("view", pa.int32()), ("text", pa.string()), ("method", pa.string())]
)
"""One extra view of an anchor (Generate-CSE writes one per training epoch)."""

CANONICAL_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("sentence", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("method", pa.string()),
        *(pa.field(view, pa.string()) for view in VIEW_COLUMNS),
        pa.field("positive_method", pa.string()),
        pa.field("negative_method", pa.string()),
        pa.field("augmentations", pa.list_(AUGMENTATION_TYPE)),
        pa.field("heldout", pa.bool_(), nullable=False),
        *(pa.field(f"mer_{view}", pa.float32()) for view in VIEW_COLUMNS),
        *(pa.field(f"cs_{view}", pa.float32()) for view in VIEW_COLUMNS),
    ],
    metadata={"cseaug.contract": "1"},
)
"""Canonical row schema of ``data/*.parquet``."""

REJECTS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string()),
        pa.field("sentence", pa.string()),
        pa.field("stage", pa.string(), nullable=False),
        pa.field("view", pa.string()),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("raw", pa.string()),
        pa.field("detail", pa.string()),
    ],
    metadata={"cseaug.contract": "1"},
)
"""Schema of ``rejects.parquet``: every dropped input or output with its reason.

``stage``: corpus, llm, negation, backtranslation, ...; ``view``: which view failed (null for
a dropped input); ``raw``: the raw answer or input line; ``detail``: JSON with extra facts
(e.g. the MER of each back-translation candidate).
"""

SPLIT_AIGEN = "aigen"
SPLIT_OTHER = "other"


def row_id(corpus_name: str, text: str) -> str:
    """Stable id of an anchor: first 16 hex digits of sha256(corpus name + NUL + text).

    Example:
        >>> row_id("wiki", "A cat sat.")
        'ed691a84f513cbd7'
    """
    return hashlib.sha256(f"{corpus_name}\x00{text}".encode()).hexdigest()[:16]


def _table(records: Iterable[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` from dicts: missing columns null, a missing ``heldout`` False."""
    rows = [dict(r) for r in records]
    if unknown := {key for row in rows for key in row} - set(schema.names):
        raise KeyError(f"columns not in the contract: {sorted(unknown)}")
    if "heldout" in schema.names:
        rows = [{**row, "heldout": row.get("heldout") or False} for row in rows]
    return pa.Table.from_pylist(rows, schema=schema)


def rows_table(records: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Canonical rows from dicts; missing columns become null (``heldout`` False)."""
    return _table(records, CANONICAL_SCHEMA)


def rejects_table(records: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Reject rows from dicts; missing columns become null."""
    return _table(records, REJECTS_SCHEMA)


def reject_record(
    row_id: str,
    sentence: str,
    stage: str,
    view: str | None,
    reason: str,
    raw: str | None,
    detail: Mapping[str, Any],
    scrub: Scrubber,
) -> dict[str, Any]:
    """One row of the rejects schema, its ``raw`` answer and the texts of its ``detail`` scrubbed
    of secrets (``detail`` is stored as JSON, or null when empty)."""
    return {
        "id": row_id,
        "sentence": sentence,
        "stage": stage,
        "view": view,
        "reason": reason,
        "raw": scrub(raw) if raw is not None else None,
        "detail": json.dumps(
            {k: scrub(v) if isinstance(v, str) else v for k, v in detail.items()},
            ensure_ascii=False,
        )
        if detail
        else None,
    }
