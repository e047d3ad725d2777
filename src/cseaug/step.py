"""What a step is, and the one loop that runs steps one after the other.

A step takes canonical rows and returns a :class:`StepResult`: the rows it kept or filled,
the rejects of what it dropped and why, and statistics; it does no dataset I/O and knows
nothing of Prefect. :class:`Step` gives the "nothing" answer of :meth:`~Step.manifest`,
:meth:`~Step.usage`, :meth:`~Step.stream_views` and :meth:`~Step.close`, so a step says
only what it has. :func:`run_steps` is the one composition loop (a build runs
``[stage, quality, *filters, mer]`` through it); :class:`Chain` makes one step of several
(docs/architecture.md).

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
    """What a step made of one shard of rows.

    Args:
        rows: the rows the step kept, with the views it filled.
        rejects: every anchor or view the step dropped, with its reason; an anchor
            missing from ``rows`` must appear here.
        stats: JSON-able counts (what the step did, for logs and task results).
        details: facts about each row of ``rows`` that the dataset contract has no
            column for (e.g. which negation rule fired), row for row; commands write
            them beside the rows, builds leave them out.
    """

    rows: pa.Table
    rejects: pa.Table = field(default_factory=REJECTS_SCHEMA.empty_table)
    stats: dict[str, Any] = field(default_factory=dict)
    details: pa.Table | None = None


class Step(Protocol):
    """A step of a build: rows in, :class:`StepResult` out; its resources are its own.

    Subclass it and implement ``name`` and ``__call__``; override :meth:`manifest`,
    :meth:`usage` and :meth:`close` when the step has something to say or free.
    """

    name: str
    """Names the step in statistics, logs and run-store folders."""

    def __call__(self, rows: pa.Table) -> StepResult:
        """Process one shard of canonical rows."""
        ...

    def manifest(self) -> dict[str, Any]:
        """What the step records in a version's manifest (``prompts``, ``example_set``,
        ``model``); nothing by default."""
        return {}

    def usage(self) -> dict[str, int]:
        """LLM token usage so far (``requests``, ``cached``, ``prompt_tokens``, ...); none by default."""
        return {}

    def stream_views(self, sink: Callable[[str], None]) -> None:
        """Hand ``sink`` each view text as soon as it exists, before the shard ends (an LLM
        stage: while its later requests are in flight); nothing by default."""
        return None

    def close(self) -> None:
        """Free what the step holds (backends, models, files); nothing by default."""
        return None


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
    """Several steps run as one: each on the rows the one before it kept.

    The chain's manifest merges its steps' manifests, its usage adds theirs up, and
    closing it closes them all: the chain owns its ``steps``.
    """

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
