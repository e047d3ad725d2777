"""Schema enforcement at the boundary of every Parquet file."""

from __future__ import annotations

import pyarrow as pa
import pytest

from cseaug.dataset.conform import conform
from cseaug.dataset.schema import CANONICAL_SCHEMA, REJECTS_SCHEMA
from cseaug.errors import InputError


def test_fills_missing_nullable_columns_and_orders_them() -> None:
    table = pa.table(
        {"split": ["aigen"], "sentence": ["A cat."], "id": ["x"], "positive": ["A cat!"]}
    )
    out = conform(table, CANONICAL_SCHEMA)
    assert out.schema.equals(CANONICAL_SCHEMA)
    assert out.column("negative").to_pylist() == [None]
    assert out.column("heldout").to_pylist() == [False]


def test_casts_compatible_types_and_accepts_batches() -> None:
    batch = pa.record_batch(
        {
            "id": ["x"],
            "sentence": ["s"],
            "split": ["other"],
            "mer_positive": pa.array([0.5], pa.float64()),
        }
    )
    out = conform(batch, CANONICAL_SCHEMA)
    assert out.schema.field("mer_positive").type == pa.float32()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            pa.table({"id": ["x"], "sentence": ["s"], "split": ["other"], "positve": ["typo"]}),
            "positve",
        ),
        (pa.table({"id": ["x"], "split": ["other"]}), "required column 'sentence'"),
        (
            pa.table(
                {"id": [None], "sentence": ["s"], "split": ["other"]},
                schema=pa.schema(
                    [("id", pa.string()), ("sentence", pa.string()), ("split", pa.string())]
                ),
            ),
            "'id' has 1 null",
        ),
        (pa.table({"id": ["x"], "sentence": ["s"], "split": ["train"]}), "'split' holds ['train']"),
        (
            pa.table(
                {"id": ["x"], "sentence": ["s"], "split": ["other"], "mer_positive": ["high"]}
            ),
            "cannot become float",
        ),
    ],
)
def test_rejects_what_breaks_the_contract(table: pa.Table, message: str) -> None:
    with pytest.raises(InputError) as err:
        conform(table, CANONICAL_SCHEMA, "shard 3")
    assert message in str(err.value) and "shard 3" in str(err.value)


def test_rejects_schema_needs_stage_and_reason() -> None:
    with pytest.raises(InputError, match="required column 'reason'"):
        conform(pa.table({"stage": ["llm"]}), REJECTS_SCHEMA)
    out = conform(pa.table({"stage": ["llm"], "reason": ["refusal"]}), REJECTS_SCHEMA)
    assert out.schema.equals(REJECTS_SCHEMA)
