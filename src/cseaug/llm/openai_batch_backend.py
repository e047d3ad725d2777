"""Backend ``openai-batch``: the ``openai`` backend's requests, through the Batch API.

Uploaded as JSONL, batched, polled and read back under the ``openai`` cache identity; every
upload and batch is recorded in the :class:`~cseaug.llm.batch_ledger.BatchLedger` first, so a
resumed build re-attaches instead of paying twice. docs/llm-backends.md, "The Batch API".
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx2
import openai

from cseaug.config import BatchAPIConfig
from cseaug.errors import BackendError
from cseaug.llm.base import ChatRequest, ChatResponse, ProgressCallback, ResponseSink
from cseaug.llm.batch_jsonl import BATCH_ENDPOINT, read_results, request_line, split_into_files
from cseaug.llm.batch_ledger import BatchLedger, PendingUpload
from cseaug.llm.cache import request_hash
from cseaug.llm.http_errors import describe_error
from cseaug.llm.openai_backend import OpenAIBackend, scrubbed
from cseaug.secrets import Scrubber

logger = logging.getLogger(__name__)

RUNNING = frozenset({"validating", "in_progress", "finalizing", "cancelling"})
RESUBMIT_AFTER = frozenset({"expired", "failed"})  # not cancelled: stopped on purpose
MAX_SUBMISSIONS = 2  # batches one request may be in during one call (attaching counts)
POLL_GROWTH = 1.5  # each wait between status checks is this times the last
MAYBE_CREATED = (openai.APIConnectionError, openai.InternalServerError, openai.RateLimitError)
"""``batches.create`` failures after which a batch may exist: it is looked for before a new try."""
LIST_PAGE = 100  # batches per batches.list page (the API's maximum)

Sleep = Callable[[float], None]


@dataclass
class _Job:
    """A batch this call waits on, the request keys it answers, the progress reported."""

    batch_id: str
    keys: tuple[str, ...]
    done: int = 0
    status: str = "validating"


@dataclass
class _Call:
    """One ``generate`` call: the request indices of each key, what is done."""

    requests: list[ChatRequest]
    indices: dict[str, list[int]]
    progress: ProgressCallback | None
    sink: ResponseSink
    scrub: Scrubber
    submissions: Counter[str] = field(default_factory=Counter)  # batches each key was in
    reported: int = 0

    def advance(self, finished: int) -> None:
        step = min(finished, len(self.requests) - self.reported)
        if step > 0 and self.progress is not None:
            self.progress(step)
        self.reported += max(step, 0)

    def deliver(self, key: str, response: ChatResponse) -> None:
        """Hand ``response`` to every request of ``key`` (the cache stores it now)."""
        for index in self.indices[key]:
            # a copy per request, its failure kind kept (a malformed body is malformed_response)
            answer = scrubbed(replace(response, key=self.requests[index].key), self.scrub)
            self.sink(index, answer)


class OpenAIBatchBackend(OpenAIBackend):
    """Chat completions through the OpenAI Batch API: ``openai``'s request bodies, key check and
    cache identity (both share every cached answer), another way of sending.

    ``ledger_path``: the response cache's file, where submitted batches are recorded (None: in
    memory); ``max_retries`` and ``request_timeout_s`` apply to each files/batches API call;
    ``sleep`` waits between status checks (tests pass a fast one); the other arguments are
    :class:`OpenAIBackend`'s.
    """

    def __init__(
        self,
        model: str,
        sampling: dict[str, Any],
        *,
        ledger_path: str | Path | None,
        batch: BatchAPIConfig | None = None,
        request_timeout_s: float = 600.0,
        sleep: Sleep = time.sleep,
        **http: Any,
    ) -> None:
        super().__init__(
            model, sampling, name="openai-batch", request_timeout_s=request_timeout_s, **http
        )
        self.settings = batch or BatchAPIConfig()
        self.ledger = BatchLedger(ledger_path)
        self._sleep = sleep
        # uploads this process is turning into batches right now: not an earlier run's leftovers
        self._uploading: set[str] = set()

    def identity(self) -> dict[str, Any]:
        return super().identity() | {"backend": "openai"}

    def in_flight_limit(self) -> int | None:
        return None  # the API runs a batch as it likes

    def close(self) -> None:
        self.ledger.close()

    def _stream(
        self, requests: list[ChatRequest], progress: ProgressCallback | None, deliver: ResponseSink
    ) -> None:
        api_key = self._api_key()
        if not requests:
            return
        identity = self.identity()
        indices: dict[str, list[int]] = {}
        for index, request in enumerate(requests):
            indices.setdefault(request_hash(identity, request), []).append(index)
        call = _Call(requests, indices, progress, deliver, Scrubber([api_key]))
        client = openai.OpenAI(
            api_key=api_key,
            base_url=self.base_url,
            max_retries=self.max_retries,
            timeout=self.request_timeout_s,
        )
        try:
            wanted = set(indices)
            jobs = self._reattach(client, wanted, call)
            jobs += self._submit(client, [k for k in indices if k in wanted], call)
            self._wait(client, jobs, call)
            call.advance(len(requests))  # the rest: repeats of one request, failures
        except (openai.OpenAIError, httpx2.HTTPError) as exc:
            raise BackendError(
                f"OpenAI Batch API at {self.base_url}: {call.scrub(describe_error(exc))}; "
                "submitted batches keep running, and a rerun re-attaches to them"
            ) from exc
        finally:
            client.close()

    def _reattach(self, client: openai.OpenAI, wanted: set[str], call: _Call) -> list[_Job]:
        """The batches of earlier runs that hold requests of ``wanted`` (taken out of it).

        Recorded batches first, then those made from a pending upload (a run killed between
        recording the upload and its batch); an upload that never became a batch is dropped and
        its requests are submitted by this call. A batch is polled for this call's requests
        only: its others were answered already or belong to another call.
        """
        jobs: list[_Job] = []

        def attach(batch_id: str, keys: Sequence[str], origin: str) -> None:
            if mine := tuple(key for key in keys if key in wanted):
                logger.warning(
                    "re-attaching to batch %s (%d of its %d requests still needed), %s",
                    batch_id,
                    len(mine),
                    len(keys),
                    origin,
                )
                call.submissions.update(mine)
                wanted.difference_update(mine)
                jobs.append(_Job(batch_id, mine))

        for batch_id, keys in self.ledger.open_batches(self.base_url):
            attach(batch_id, keys, "submitted by an earlier run")
        for upload in self.ledger.pending_uploads(self.base_url):
            if upload.input_file_id in self._uploading or wanted.isdisjoint(upload.request_keys):
                continue
            batch = self._find(client, upload)
            if batch is None:
                logger.info(
                    "uploaded file %s never became a batch (a run stopped before creating it): "
                    "its requests are submitted now",
                    upload.input_file_id,
                )
                self._discard(client, upload)
                continue
            self.ledger.record(batch.id, self.base_url, upload)
            attach(
                batch.id,
                upload.request_keys,
                "created by an earlier run that stopped before recording it",
            )
        return jobs

    def _submit(self, client: openai.OpenAI, keys: Sequence[str], call: _Call) -> list[_Job]:
        """Upload and create one batch per input file of ``keys``: the upload is recorded
        (pending) before ``batches.create`` and the batch replaces it once created, so a run
        killed at any point leaves a record a rerun resolves."""
        jobs = []
        lines = (
            (key, request_line(key, self._body(call.requests[call.indices[key][0]])))
            for key in keys
        )
        for file_keys, content in split_into_files(lines):
            uploaded = client.files.create(
                file=("cseaug-batch.jsonl", content, "application/jsonl"), purpose="batch"
            )
            upload = PendingUpload(uploaded.id, tuple(file_keys), float(uploaded.created_at))
            self._uploading.add(upload.input_file_id)
            try:
                self.ledger.pend(upload, self.base_url)
                batch_id = self._create(client, upload)
            finally:
                self._uploading.discard(upload.input_file_id)
            logger.info("submitted batch %s: %d requests", batch_id, len(file_keys))
            call.submissions.update(upload.request_keys)
            jobs.append(_Job(batch_id, upload.request_keys))
        return jobs

    def _create(self, client: openai.OpenAI, upload: PendingUpload) -> str:
        """Create the batch of a recorded upload, at most once, record it and return its id.

        No blind retry: after a failure that may hide a created batch (:data:`MAYBE_CREATED`)
        the batch is looked for before trying again; a refusal (another 4xx) creates nothing:
        the upload is dropped and the error raised.
        """
        once = client.with_options(max_retries=0)
        attempt = 0
        while True:
            try:
                batch = once.batches.create(
                    input_file_id=upload.input_file_id,
                    endpoint=BATCH_ENDPOINT,
                    completion_window=self.settings.completion_window,
                    metadata={"created_by": "cseaug", "requests": str(len(upload.request_keys))},
                )
                break
            except MAYBE_CREATED as exc:
                if attempt >= self.max_retries:
                    raise
                attempt += 1
                logger.warning(
                    "creating the batch of file %s: %s; looking for it before trying again",
                    upload.input_file_id,
                    describe_error(exc),
                )
                self._sleep(min(2.0**attempt, 60.0))
                if (batch := self._find(client, upload)) is not None:
                    break
            except openai.APIStatusError:
                self._discard(client, upload)
                raise
        self.ledger.record(batch.id, self.base_url, upload)
        return batch.id

    @staticmethod
    def _find(client: openai.OpenAI, upload: PendingUpload) -> Any | None:
        """The batch made from ``upload``'s file, or None (batches come newest first: the walk
        stops at the first one older than the file, about one page)."""
        for batch in client.batches.list(limit=LIST_PAGE):
            if batch.input_file_id == upload.input_file_id:
                return batch
            if batch.created_at < upload.uploaded_at:
                return None
        return None

    def _discard(self, client: openai.OpenAI, upload: PendingUpload) -> None:
        """Forget an upload that never became a batch and delete its file (a failed delete only
        logs: files with purpose ``batch`` expire after 30 days)."""
        self.ledger.drop_upload(upload.input_file_id)
        try:
            client.files.delete(upload.input_file_id)
        except (openai.OpenAIError, httpx2.HTTPError) as exc:
            logger.info("could not delete file %s: %s", upload.input_file_id, describe_error(exc))

    def _wait(self, client: openai.OpenAI, jobs: list[_Job], call: _Call) -> None:
        """Poll ``jobs`` until each has ended and its answers are handed on."""
        started = time.monotonic()
        interval = self.settings.poll_interval_s
        while jobs := [left for job in jobs for left in self._poll(client, job, call)]:
            waited = time.monotonic() - started
            if waited >= self.settings.max_wait_s:
                names = ", ".join(f"{job.batch_id} ({job.status})" for job in jobs)
                raise BackendError(
                    f"OpenAI batches still running after {waited:,.0f} s (llm.batch.max_wait_s): "
                    f"{names}; they keep running, and rerunning the build re-attaches to them "
                    "without paying again"
                )
            self._sleep(min(interval, self.settings.max_wait_s - waited))
            interval = min(interval * POLL_GROWTH, self.settings.max_poll_interval_s)

    def _poll(self, client: openai.OpenAI, job: _Job, call: _Call) -> list[_Job]:
        """Check one batch and report its progress: ``[job]`` while it runs; once it ended, the
        batches its unanswered requests were resubmitted in. A recorded batch the API does not
        know (deleted, another account) is submitted again."""
        try:
            batch = client.batches.retrieve(job.batch_id)
        except openai.NotFoundError:
            logger.warning(
                "batch %s is unknown to %s (HTTP 404): submitting its %d requests again",
                job.batch_id,
                self.base_url,
                len(job.keys),
            )
            self.ledger.remove(job.batch_id)
            return self._submit(client, job.keys, call)
        job.status = batch.status
        counts = batch.request_counts
        done = min(counts.completed, len(job.keys)) if counts is not None else 0
        if done > job.done:
            call.advance(done - job.done)
            job.done = done
        logger.info(
            "batch %s: %s, %d/%d requests done", job.batch_id, batch.status, done, len(job.keys)
        )
        return [job] if batch.status in RUNNING else self._finish(client, job, batch, call)

    def _finish(self, client: openai.OpenAI, job: _Job, batch: Any, call: _Call) -> list[_Job]:
        """Read an ended batch's results, hand them on, and resubmit what it never ran."""
        results: dict[str, ChatResponse] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                results.update(read_results(client.files.content(file_id).content))
        for key in job.keys:
            if key in results:
                call.deliver(key, results[key])
        unanswered = [key for key in job.keys if key not in results]
        if batch.status == "completed":
            reason = f"batch {batch.id} completed without an answer to this request"
        else:
            errors = getattr(batch.errors, "data", None) or []
            detail = "; ".join(f"{e.code}: {e.message}" for e in errors)
            reason = f"batch {batch.id} {batch.status}" + (f" ({detail})" if detail else "")
            if unanswered:
                logger.warning(
                    "%s: %d of %d requests unanswered", reason, len(unanswered), len(job.keys)
                )
        resubmit: list[str] = []
        for key in unanswered:
            if batch.status in RESUBMIT_AFTER and call.submissions[key] < MAX_SUBMISSIONS:
                resubmit.append(key)
            else:
                call.deliver(key, ChatResponse(key=key, error=reason))
        call.advance(len(job.keys) - len(resubmit) - job.done)
        # the answers are in the cache and the rest is handed on: nothing left to re-attach to
        self.ledger.remove(job.batch_id)
        return self._submit(client, resubmit, call) if resubmit else []
