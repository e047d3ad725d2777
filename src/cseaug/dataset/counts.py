"""What a version holds, counted while its rows and rejects stream by (``manifest.json``'s ``counts``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cseaug.dataset.schema import VIEW_COLUMNS


def _value_counts(column: pa.ChunkedArray) -> dict[str, int]:
    return {
        str(row["values"]): row["counts"] for row in pc.value_counts(column.drop_null()).to_pylist()
    }


@dataclass
class RowCounts:
    """What the writer counted while streaming (goes to ``manifest.json``'s ``counts``)."""

    rows: int = 0  # the fields in the manifest's order
    by_split: Counter = field(default_factory=Counter)
    heldout: int = 0
    heldout_by_split: Counter = field(default_factory=Counter)
    by_method: Counter = field(default_factory=Counter)
    views: Counter = field(default_factory=Counter)
    rejects: int = 0
    rejects_by_stage: dict[str, Counter] = field(default_factory=dict)

    def add_rows(self, table: pa.Table) -> None:
        """Count a conformed canonical table (``heldout`` already set)."""
        self.rows += table.num_rows
        heldout = table.column("heldout")
        self.heldout += int(pc.sum(heldout).as_py() or 0)
        self.by_split.update(_value_counts(table.column("split")))
        self.heldout_by_split.update(_value_counts(table.filter(heldout).column("split")))
        self.by_method.update(_value_counts(table.column("method")))
        for view in VIEW_COLUMNS:
            if present := table.num_rows - table.column(view).null_count:
                self.views[view] += present

    def add_rejects(self, table: pa.Table) -> None:
        """Count a conformed rejects table, by stage and reason."""
        self.rejects += table.num_rows
        grouped = table.group_by(["stage", "reason"]).aggregate([("stage", "count")])
        for group in grouped.to_pylist():
            by_reason = self.rejects_by_stage.setdefault(group["stage"], Counter())
            by_reason[group["reason"]] += group["stage_count"]

    def as_dict(self) -> dict[str, Any]:
        """The counts as the manifest holds them (the keys of every count sorted)."""
        return {f.name: _sorted(getattr(self, f.name)) for f in fields(self)}


def _sorted(value: Any) -> Any:
    """``value`` with the keys of every dict in it sorted."""
    if isinstance(value, dict):
        return {key: _sorted(inner) for key, inner in sorted(value.items())}
    return value
