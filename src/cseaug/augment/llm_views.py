"""One round of LLM-written views for a shard: build requests, ask once, clean every answer.

Shared by :mod:`cseaug.augment.ngcse` and :mod:`cseaug.augment.skicse`. A round sends the
shard's requests in one :meth:`LLMBackend.generate` call, so a failed answer never sinks the
others: it becomes a reject with a reason of :mod:`cseaug.llm.clean` (``llm_error``,
``circuit_open``, ``malformed_response``), its ``raw`` and ``detail`` scrubbed of secrets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from cseaug.config import CleaningConfig
from cseaug.dataset.schema import SPLIT_AIGEN, reject_record, rejects_table, rows_table
from cseaug.errors import InputError
from cseaug.llm.base import (
    CIRCUIT_OPEN,
    MALFORMED,
    ChatRequest,
    ChatResponse,
    LLMBackend,
    Message,
    ResponseSink,
)
from cseaug.llm.clean import LLM_ERROR, clean_answer
from cseaug.patterns import ExampleSet
from cseaug.progress import progress_bar
from cseaug.prompts import PromptTemplate, prompts_manifest
from cseaug.secrets import Scrubber
from cseaug.step import Step, StepResult

REJECT_STAGE = "llm"
OK = "ok"


@dataclass(frozen=True)
class ViewJob:
    """One view of one anchor (``row_id``, ``sentence``) to ask for with ``messages``;
    ``source`` is the prompt's input sentence the answer is checked against (the anchor, or
    its positive when views are derived from it)."""

    row_id: str
    sentence: str
    view: str
    source: str
    messages: tuple[Message, ...]


@dataclass
class RoundResult:
    """Cleaned views by (row id, view), rejects as dicts of the rejects schema, outcome counts."""

    texts: dict[tuple[str, str], str] = field(default_factory=dict)
    rejects: list[dict[str, Any]] = field(default_factory=list)
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)


Outcome = tuple[str, str | None, str | None, dict[str, Any]]  # reason, raw, view or None, detail
ViewSink = Callable[[str], None]  # gets each cleaned view as its answer arrives


class LLMStep(Step):
    """A step whose requests go to its own LLM backend: its usage is the backend's, and
    closing it closes the backend (connections, engines, GPU memory)."""

    backend: LLMBackend

    def usage(self) -> dict[str, int]:
        return self.backend.usage.as_dict()

    def close(self) -> None:
        self.backend.close()


class ViewStage(LLMStep):
    """An :class:`LLMStep` that writes views, cleaned by its ``cleaning`` section, and hands
    each to a sink as it arrives (:meth:`ask`)."""

    cleaning: CleaningConfig
    views: tuple[str, ...]
    prompts: dict[str, PromptTemplate]
    examples: ExampleSet | None = None  # NGCSE's; SKICSE has none
    stop: tuple[str, ...] = ()
    """Stop sequences of every request (docs/prompts-and-patterns.md, "Stop sequences")."""
    _on_view: ViewSink | None = None

    def stream_views(self, sink: ViewSink) -> None:
        """Hand ``sink`` each cleaned view as its answer arrives."""
        self._on_view = sink

    def ask(self, jobs: Sequence[ViewJob], description: str) -> RoundResult:
        """Send every job in one ``backend.generate`` call (:func:`send`) and clean each answer
        as it arrives; a view cleaning kept goes to the sink while later requests are still
        in flight (a build's diagnostics encoder embeds it meanwhile)."""
        result = RoundResult()
        if not jobs:
            return result
        requests = [
            ChatRequest(f"{job.row_id}:{job.view}", job.messages, stop=self.stop) for job in jobs
        ]
        outcomes: dict[int, Outcome] = {}  # job index -> what its answer came to

        def settle(index: int, response: ChatResponse) -> None:
            outcomes[index] = outcome(jobs[index], response, self.cleaning)
            text = outcomes[index][2]
            if self._on_view is not None and text is not None:
                self._on_view(text)

        send(self.backend, requests, description, settle)
        scrub = Scrubber()
        for index, job in enumerate(jobs):
            reason, raw, text, detail = outcomes[index]
            if text is not None:
                result.texts[(job.row_id, job.view)] = text
                result.counts[(job.view, OK)] += 1
                continue
            if job.source != job.sentence:
                detail["input"] = job.source
            result.counts[(job.view, reason)] += 1
            result.rejects.append(
                reject_record(
                    job.row_id, job.sentence, REJECT_STAGE, job.view, reason, raw, detail, scrub
                )
            )
        return result

    def kept_rows(
        self,
        records: Sequence[Mapping[str, Any]],
        rounds: Sequence[RoundResult],
        columns: Callable[[Mapping[str, Any]], Mapping[str, Any]],
        **stats: Any,
    ) -> StepResult:
        """The records every view of which a round kept (:func:`rows_with_views`), the rejects
        of every round, and ``stats`` with the rows in and out, the requests and their outcomes
        by view."""
        texts = {key: text for result in rounds for key, text in result.texts.items()}
        counts: Counter[tuple[str, str]] = sum((result.counts for result in rounds), Counter())
        out = rows_with_views(records, texts, self.views, columns)
        stats = {"stage": self.name, **stats, "rows_in": len(records), "rows_out": len(out)}
        stats.update(requests=sum(counts.values()), views=counts_by_view(counts))
        rejects = [reject for result in rounds for reject in result.rejects]
        return StepResult(rows=rows_table(out), rejects=rejects_table(rejects), stats=stats)

    def manifest(self) -> dict[str, Any]:
        """Prompt records, the example set and the backend that answered (``llm.backend: auto``
        names the engine it chose here), for ``build_manifest``."""
        return {
            "prompts": prompts_manifest(self.prompts),
            "example_set": None if self.examples is None else self.examples.as_manifest(),
            "model": {"llm": self.backend.identity()},
        }


def outcome(job: ViewJob, response: ChatResponse, cleaning: CleaningConfig) -> Outcome:
    """What one answer came to."""
    if not response.ok:
        reason, detail = failure(response)
        return reason, response.text, None, detail
    cleaned = clean_answer(
        response.text,
        view=job.view,
        source_sentence=job.source,
        cfg=cleaning,
        prompt=job.messages,
    )
    return str(cleaned.reason), response.text, cleaned.text, {}


def send(
    backend: LLMBackend,
    requests: Sequence[ChatRequest],
    description: str,
    on_response: ResponseSink | None = None,
) -> list[ChatResponse]:
    """Send ``requests`` in one ``backend.generate`` call behind a progress bar (requests and
    tokens per second, the time left, the requests in flight the backend allows now); the
    answers come back in request order, and each to ``on_response`` as it arrives. InputError
    when two requests share a key (rows repeat ids)."""
    repeated = sorted(k for k, n in Counter(r.key for r in requests).items() if n > 1)[:5]
    if repeated:
        raise InputError(
            f"rows repeat ids, so requests would share keys: {repeated}; deduplicate the anchors"
        )
    with progress_bar(description, total=len(requests), unit="requests") as bar:

        def answered(index: int, response: ChatResponse) -> None:
            bar.tokens += 0 if response.cached else response.completion_tokens
            if (limit := backend.in_flight_limit()) is not None:
                bar.note = f"{limit} in flight at most"
            if on_response is not None:
                on_response(index, response)

        responses = backend.generate(requests, bar.advance, answered)
    for request, response in zip(requests, responses, strict=True):
        if response.key != request.key:
            raise RuntimeError(
                f"{backend.name} backend answered {response.key!r} in the place of {request.key!r}"
            )
    return responses


def failure(response: ChatResponse) -> tuple[str, dict[str, Any]]:
    """The reject reason of a failed request (``llm_error``, ``circuit_open`` or
    ``malformed_response``) and its detail, marked ``retryable`` when it was transient."""
    own = response.failure in (CIRCUIT_OPEN, MALFORMED)  # reasons of their own
    reason = str(response.failure) if own else LLM_ERROR
    detail: dict[str, Any] = {"error": response.error}
    if response.retryable:
        detail["retryable"] = True  # a rerun sends it again (pipeline/shard.py)
    return reason, detail


def counts_by_view(counts: Counter[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """``{view: {"ok": n, "<reason>": n}}`` from round counts (JSON-able stage stats)."""
    out: dict[str, dict[str, int]] = {}
    for (view, outcome), n in sorted(counts.items()):
        out.setdefault(view, {})[outcome] = n
    return out


def rows_with_views(
    records: Sequence[Mapping[str, Any]],
    texts: Mapping[tuple[str, str], str],
    views: Sequence[str],
    columns: Callable[[Mapping[str, Any]], Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The records every view of which has a text in ``texts``, with those views, split
    ``aigen`` and ``columns(record)`` (the method columns)."""
    out = []
    for record in records:
        found = {view: texts.get((record["id"], view)) for view in views}
        if None not in found.values():
            out.append({**record, **found, "split": SPLIT_AIGEN, **columns(record)})
    return out


def require_columns(rows: pa.Table, columns: Sequence[str], stage: str) -> None:
    """Raise InputError when a stage's input lacks a column it reads."""
    missing = [c for c in columns if c not in rows.column_names]
    if missing:
        raise InputError(f"{stage} stage needs column(s) {missing}; got {rows.column_names}")
