"""Canonical rows for tests: anchors with views and plain corpus sentences, tricky texts included."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from cseaug.dataset.schema import row_id, rows_table

TRICKY = [
    'He said "no", then left.',
    "Commas, commas, everywhere",
    "A line\nbreak inside",
    "Ünïcödé — dashes … and emoji 🙂",
    "  leading and trailing spaces  ",
]
"""Sentences that break naive CSV/JSON writers."""


def make_rows(
    n_aigen: int,
    n_other: int,
    *,
    views: tuple[str, ...] = ("positive", "intermediate", "negative"),
    method: str = "sts",
    corpus: str = "test",
    start: int = 0,
) -> pa.Table:
    """Canonical rows: ``n_aigen`` anchors with ``views``, then ``n_other`` plain sentences."""
    records: list[dict[str, Any]] = []
    for i in range(start, start + n_aigen):
        sentence = (
            TRICKY[i % len(TRICKY)] + f" #{i}"
            if i % 7 == 0
            else f"the cat number {i} sat on the mat"
        )
        record = {
            "id": row_id(corpus, sentence),
            "sentence": sentence,
            "split": "aigen",
            "method": method,
        }
        for view in views:
            record[view] = f"{view} of {i}: " + (
                "a cat sat on a mat" if view != "negative" else "no cat ever sat"
            )
        records.append(record)
    for i in range(start + n_aigen, start + n_aigen + n_other):
        sentence = f"plain corpus sentence {i}"
        records.append({"id": row_id(corpus, sentence), "sentence": sentence, "split": "other"})
    return rows_table(records)


def make_generate_cse_rows(n_aigen: int, n_views: int, n_other: int = 0) -> pa.Table:
    """Generate-CSE rows with ``n_views`` views each (text "view k of i"), then plain sentences."""
    records: list[dict[str, Any]] = []
    for i in range(n_aigen):
        sentence = f"the cat number {i} sat on the mat"
        views = [
            {"view": k, "text": f"view {k} of {i}", "method": "shuffle"} for k in range(n_views)
        ]
        records.append(
            {"id": row_id("t", sentence), "sentence": sentence, "split": "aigen",
             "method": "generate_cse", "positive": views[0]["text"],
             "positive_method": "shuffle", "augmentations": views}
        )  # fmt: skip
    for i in range(n_other):
        sentence = f"plain corpus sentence {i}"
        records.append({"id": row_id("t", sentence), "sentence": sentence, "split": "other"})
    return rows_table(records)
