"""The step protocol and the one composition loop: rows flow on, rejects add up, all close."""

from __future__ import annotations

import pyarrow as pa
import pytest

from cseaug.dataset.schema import rejects_table, rows_table
from cseaug.step import Chain, Step, StepResult, close_all, merged_results, run_steps

ROWS = rows_table(
    [{"id": str(i), "sentence": f"sentence number {i}", "split": "aigen"} for i in range(6)]
)


class DropEvery(Step):
    """Keeps the rows whose position is not a multiple of ``n``; rejects the others."""

    def __init__(self, name: str, n: int, fail_on_close: bool = False) -> None:
        self.name, self.n, self.fail_on_close = name, n, fail_on_close
        self.seen: list[str] = []
        self.closed = False

    def __call__(self, rows: pa.Table) -> StepResult:
        ids = rows.column("id").to_pylist()
        self.seen = ids
        keep = pa.array([i % self.n != 0 for i in range(len(ids))])
        dropped = [
            {"id": x, "stage": self.name, "reason": "dropped"}
            for x, k in zip(ids, keep.to_pylist(), strict=True)
            if not k
        ]
        return StepResult(
            rows=rows.filter(keep), rejects=rejects_table(dropped), stats={"in": len(ids)}
        )

    def usage(self) -> dict[str, int]:
        return {"requests": self.n}

    def manifest(self) -> dict[str, object]:
        return {"model": {self.name: self.n}}

    def close(self) -> None:
        self.closed = True
        if self.fail_on_close:
            raise RuntimeError(f"{self.name} failed to close")


def test_each_step_gets_the_rows_the_step_before_it_kept() -> None:
    first, second = DropEvery("first", 2), DropEvery("second", 2)
    results = run_steps([first, second], ROWS)
    assert second.seen == ["1", "3", "5"]
    merged = merged_results([first, second], results, ROWS)
    assert merged.rows.column("id").to_pylist() == ["3"]
    assert merged.rejects.column("id").to_pylist() == ["0", "2", "4", "1", "5"]
    assert merged.stats == {"first": {"in": 6}, "second": {"in": 3}}
    assert merged_results([], [], ROWS).rows is ROWS


def test_a_chain_is_a_step_of_steps() -> None:
    chain = Chain("both", [DropEvery("first", 2), DropEvery("second", 3)])
    assert chain(ROWS).rows.column("id").to_pylist() == ["3", "5"]
    assert chain.usage() == {"requests": 5}
    assert chain.manifest() == {"model": {"first": 2, "second": 3}}


def test_every_step_is_closed_even_when_one_fails_to_close() -> None:
    steps = [DropEvery("a", 2), DropEvery("b", 2, fail_on_close=True), DropEvery("c", 2)]
    with pytest.raises(RuntimeError, match="b failed to close"):
        close_all(steps)
    assert all(step.closed for step in steps)


def test_the_defaults_say_nothing() -> None:
    class Plain(Step):
        name = "plain"

        def __call__(self, rows: pa.Table) -> StepResult:
            return StepResult(rows=rows)

    step = Plain()
    assert (step.manifest(), step.usage(), step.close()) == ({}, {}, None)
