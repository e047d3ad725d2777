"""Fixtures of the dataset-layer tests: reject rows."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

from cseaug.dataset.schema import rejects_table


def make_rejects(n: int) -> pa.Table:
    reasons = ["refusal", "too_short", "empty"]
    return rejects_table(
        {
            "id": f"r{i}",
            "sentence": f"s{i}",
            "stage": "llm" if i % 2 else "corpus",
            "view": None,
            "reason": reasons[i % 3],
        }
        for i in range(n)
    )


@pytest.fixture
def rejects_factory() -> Callable[[int], pa.Table]:
    return make_rejects
