"""What a step is (rows in, :class:`StepResult` out, no dataset I/O, no Prefect), the one
composition loop :func:`run_steps`, and :class:`Chain`, one step of several
(docs/architecture.md, "The rules of the build").

Example:
    >>> import pyarrow as pa
    >>> from cseaug.dataset.schema import rows_table
    >>> class KeepShort(Step):
    ...     name = "keep_short"
    ...     def __call__(self, rows: pa.Table) -> StepResult:
    ...         short = pa.array([len(s) < 12 for s in rows.column("sentence").to_pylist()])
    ...         return StepResult(rows=rows.filter(short), stats={"kept": int(sum(short.to_pylist()))})
    >>> rows = rows_table([{"id": "a", "sentence": "A cat sat.", "split": "aigen"},
    ...                    {"id": "b", "sentence": "A much longer sentence.", "split": "aigen"}])
    >>> result = Chain("short", [KeepShort()])(rows)
    >>> result.rows.column("id").to_pylist(), result.stats
    (['a'], {'keep_short': {'kept': 1}})
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from cseaug.dataset.schema import REJECTS_SCHEMA


@dataclass
class StepResult:
    """What a step made of one shard of rows: the rows it kept, with the views it filled;
    every anchor or view it dropped, with its reason (an anchor missing from ``rows`` must
    be here); JSON-able ``stats``; and ``details``, facts about each row that the dataset
    contract has no column for (e.g. which negation rule fired), which commands write beside
    the rows and builds leave out."""

    rows: pa.Table
    rejects: pa.Table = field(default_factory=REJECTS_SCHEMA.empty_table)
    stats: dict[str, Any] = field(default_factory=dict)
    details: pa.Table | None = None


class Step(Protocol):
    """A step of a build; a subclass implements ``name`` and ``__call__`` and overrides the
    other methods, whose answer is "nothing", where it has something to say or free."""

    name: str
    """Names the step in statistics, logs and run-store folders."""

    def __call__(self, rows: pa.Table) -> StepResult: ...

    def manifest(self) -> dict[str, Any]:
        """What the step records in a version's manifest (``prompts``, ``example_set``, ``model``)."""
        return {}

    def usage(self) -> dict[str, int]:
        """LLM token usage so far (``requests``, ``cached``, ``prompt_tokens``, ...)."""
        return {}

    def stream_views(self, sink: Callable[[str], None]) -> None:
        """Hand ``sink`` each view text as soon as it exists (an LLM stage: while its later
        requests are in flight)."""

    def close(self) -> None:
        """Free what the step holds (backends, models, files)."""


def run_steps(steps: Sequence[Step], rows: pa.Table) -> list[StepResult]:
    """Run ``rows`` through ``steps`` in order, each on the rows the one before it kept; the
    result of each step, in order (the last one's rows are what came through)."""
    results = []
    for step in steps:
        result = step(rows)
        results.append(result)
        rows = result.rows
    return results


def merged_results(
    steps: Sequence[Step], results: Sequence[StepResult], rows: pa.Table
) -> StepResult:
    """One result of a run of :func:`run_steps`: the last rows and details, every step's
    rejects (in step order) and statistics (by step name); ``rows`` (what the first step got)
    when there were no steps."""
    if not results:
        return StepResult(rows=rows)
    return StepResult(
        rows=results[-1].rows,
        rejects=pa.concat_tables([REJECTS_SCHEMA.empty_table(), *(r.rejects for r in results)]),
        stats={step.name: result.stats for step, result in zip(steps, results, strict=True)},
        details=results[-1].details,
    )


def merged_manifest(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The manifests of several steps as one: mappings under the same key are merged
    (e.g. two steps' ``model`` entries), lists are joined (e.g. the stage's and the judge's
    ``prompts``), other values are taken from the last step that has them.

    Example:
        >>> merged_manifest([{"model": {"negation": 1}}, {"model": {"backtranslation": 2}}])
        {'model': {'negation': 1, 'backtranslation': 2}}
        >>> merged_manifest([{"prompts": [{"name": "ski"}]}, {"prompts": [{"name": "judge_ski"}]}])
        {'prompts': [{'name': 'ski'}, {'name': 'judge_ski'}]}
    """
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
                out[key] = {**out[key], **value}
            elif isinstance(value, list) and isinstance(out.get(key), list):
                out[key] = [*out[key], *value]
            else:
                out[key] = value
    return out


def summed_usage(parts: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """Token usage of several steps (or shards), added up key by key.

    Example:
        >>> summed_usage([{"requests": 2, "cached": 1}, {"requests": 3}])
        {'requests': 5, 'cached': 1}
    """
    total: Counter[str] = Counter()
    for part in parts:
        total.update(part)
    return dict(total)


def close_all(steps: Sequence[Step]) -> None:
    """Close every step, last made first; a step that fails to close does not keep the
    others open (its error is raised once all were tried)."""
    with contextlib.ExitStack() as stack:
        for step in steps:
            stack.callback(step.close)


class Chain(Step):
    """Several steps run as one, each on the rows the one before it kept; it owns its
    ``steps``: its manifest merges theirs, its usage adds theirs up, closing it closes them."""

    def __init__(self, name: str, steps: Sequence[Step]) -> None:
        self.name = name
        self.steps = list(steps)

    def __call__(self, rows: pa.Table) -> StepResult:
        return merged_results(self.steps, run_steps(self.steps, rows), rows)

    def manifest(self) -> dict[str, Any]:
        return merged_manifest([step.manifest() for step in self.steps])

    def usage(self) -> dict[str, int]:
        return summed_usage([step.usage() for step in self.steps])

    def close(self) -> None:
        close_all(self.steps)
