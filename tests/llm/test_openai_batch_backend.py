"""Backend ``openai-batch`` against the loopback server's files and batches endpoints.

The server (tests/fake_openai_server.py) runs each batch line through the same scripts as a
chat request, so what a batch answers is what the online backend would have been answered.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from cseaug.config import BatchAPIConfig, LLMConfig, RunConfig, config_fingerprint
from cseaug.errors import BackendError
from cseaug.llm.base import MALFORMED
from cseaug.llm.batch_ledger import BatchLedger, PendingUpload
from cseaug.llm.cache import CachedBackend, request_hash
from cseaug.llm.factory import make_backend
from cseaug.llm.openai_backend import OpenAIBackend
from cseaug.llm.openai_batch_backend import OpenAIBatchBackend
from tests.fake_openai_server import Action, FakeOpenAIServer
from tests.llm.helpers import ask

KEY = "sk-batch-test-0123456789abcdef"
FAST = {"poll_interval_s": 0.01, "max_poll_interval_s": 0.05}


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def batch_backend(server: FakeOpenAIServer, cache: Path, **batch) -> CachedBackend:
    """``openai-batch`` behind the response cache at ``cache``, as the factory builds it."""
    cfg = LLMConfig(
        backend="openai-batch",
        model="fake-model",
        base_url=server.base_url,
        max_tokens=32,
        batch={**FAST, **batch},
    )
    backend = make_backend(cfg, cache_path=cache)
    assert isinstance(backend, CachedBackend) and isinstance(backend.inner, OpenAIBatchBackend)
    return backend


def uploaded_lines(server: FakeOpenAIServer, upload: int) -> list[dict]:
    """The request lines of the ``upload``-th uploaded file (1 = the first)."""
    return [json.loads(line) for line in server.state.files[f"file-{upload}"].splitlines()]


def test_a_batch_answers_every_request_with_the_openai_bodies_and_cache_keys(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    requests = [ask(f"sentence {i}") for i in range(12)]
    backend = batch_backend(server, tmp_path / "llm.sqlite")
    finished: list[int] = []

    responses = backend.generate(requests, progress=finished.append)

    assert [r.text for r in responses] == [f"echo: sentence {i}" for i in range(12)]
    assert [r.key for r in responses] == [r.key for r in requests]
    assert all(r.ok and not r.cached and r.prompt_tokens == 5 for r in responses)
    assert server.state.batch_creations == 1 and server.state.file_uploads == 1
    batch = server.state.batches["batch_1"]
    assert (batch["endpoint"], batch["completion_window"]) == ("/v1/chat/completions", "24h")
    online = OpenAIBackend("fake-model", backend.sampling, name="openai", base_url=server.base_url)
    lines = uploaded_lines(server, 1)
    # custom_id is the response-cache key the openai backend would use; the body is its body
    assert [line["custom_id"] for line in lines] == [
        request_hash(online.identity(), r) for r in requests
    ]
    assert lines[0]["body"] == online._body(requests[0])
    assert lines[0]["method"] == "POST" and lines[0]["url"] == "/v1/chat/completions"
    assert sum(finished) == 12
    assert backend.usage.as_dict()["requests"] == 12
    backend.close()
    assert BatchLedger(tmp_path / "llm.sqlite").open_batches(server.base_url) == []


def test_openai_and_openai_batch_share_every_cached_answer(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "llm.sqlite"
    requests = [ask(f"shared {i}") for i in range(6)]
    online_cfg = LLMConfig(
        backend="openai", model="fake-model", base_url=server.base_url, max_tokens=32
    )
    online = make_backend(online_cfg, cache_path=cache)
    online.generate(requests[:3])
    online.close()

    batch = batch_backend(server, cache)
    responses = batch.generate(requests)

    assert [r.cached for r in responses] == [True] * 3 + [False] * 3
    assert [line["body"]["messages"][-1]["content"] for line in uploaded_lines(server, 1)] == [
        f"shared {i}" for i in range(3, 6)
    ]
    assert all(server.counts[f"shared {i}"] == 1 for i in range(6))
    batch.close()


def test_a_killed_build_reattaches_to_its_running_batch_and_reads_it_once(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "llm.sqlite"
    server.state.hold_batches = True
    child = subprocess.Popen(
        [sys.executable, "-c", _SUBMIT_AND_WAIT, server.base_url, str(cache)],
        env={**os.environ, "OPENAI_API_KEY": KEY},
    )
    try:
        deadline = time.monotonic() + 60
        # polled at least once: the batch was created and recorded, and is running
        while server.state.batches.get("batch_1", {}).get("status") != "in_progress":
            assert child.poll() is None, "the submitting process ended on its own"
            assert time.monotonic() < deadline, "the child never submitted its batch"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    assert server.state.batch_creations == 1

    server.state.hold_batches = False
    resumed = batch_backend(server, cache)
    responses = resumed.generate([ask(f"kill {i}") for i in range(8)])

    assert [r.text for r in responses] == [f"echo: kill {i}" for i in range(8)]
    assert server.state.batch_creations == 1  # re-attached: nothing paid twice
    assert all(server.counts[f"kill {i}"] == 1 for i in range(8))
    again = resumed.generate([ask(f"kill {i}") for i in range(8)])
    assert all(r.cached for r in again)
    assert server.state.file_downloads == {"file-output-batch_1": 1}  # read once
    resumed.close()


_SUBMIT_AND_WAIT = """
import sys
from cseaug.config import LLMConfig
from cseaug.llm.base import ChatRequest
from cseaug.llm.factory import make_backend

cfg = LLMConfig(backend="openai-batch", model="fake-model", base_url=sys.argv[1], max_tokens=32,
                batch={"poll_interval_s": 0.01, "max_poll_interval_s": 0.05})
backend = make_backend(cfg, cache_path=sys.argv[2])
messages = lambda c: ({"role": "system", "content": "Be brief."}, {"role": "user", "content": c})
backend.generate([ChatRequest(f"kill {i}", messages(f"kill {i}")) for i in range(8)])
"""


def test_waiting_past_max_wait_stops_with_one_clear_line_and_a_rerun_reattaches(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "llm.sqlite"
    requests = [ask(f"slow {i}") for i in range(4)]
    server.state.hold_batches = True
    first = batch_backend(server, cache, max_wait_s=0.2)
    with pytest.raises(BackendError, match=r"batch_1 \(in_progress\).*re-attaches") as raised:
        first.generate(requests)
    assert "\n" not in str(raised.value)
    first.close()

    server.state.hold_batches = False
    second = batch_backend(server, cache)
    assert [r.text for r in second.generate(requests)] == [f"echo: slow {i}" for i in range(4)]
    assert server.state.batch_creations == 1
    second.close()


def test_an_expired_batch_is_reported_and_only_its_unanswered_requests_are_resubmitted(
    server: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    requests = [ask(f"late {i}") for i in range(6)]
    server.script("late 2", Action.hang())
    server.script("late 4", Action.hang())
    backend = batch_backend(server, tmp_path / "llm.sqlite")
    finished: list[int] = []

    with caplog.at_level(logging.WARNING, logger="cseaug.llm.openai_batch_backend"):
        responses = backend.generate(requests, progress=finished.append)

    assert sum(finished) == 6
    assert all(r.ok for r in responses)
    assert [r.text for r in responses] == [f"echo: late {i}" for i in range(6)]
    assert server.state.batch_creations == 2
    assert [line["body"]["messages"][-1]["content"] for line in uploaded_lines(server, 2)] == [
        "late 2",
        "late 4",
    ]
    assert "batch batch_1 expired: 2 of 6 requests unanswered" in caplog.text
    backend.close()


def test_a_batch_that_expired_while_no_build_ran_is_resubmitted_on_resume(
    server: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "llm.sqlite"
    requests = [ask(f"away {i}") for i in range(3)]
    server.state.hold_batches = True
    with pytest.raises(BackendError):
        batch_backend(server, cache, max_wait_s=0.1).generate(requests)
    server.script("away 1", Action.hang())
    server.state.hold_batches = False

    with caplog.at_level(logging.WARNING, logger="cseaug.llm.openai_batch_backend"):
        responses = batch_backend(server, cache).generate(requests)

    assert [r.text for r in responses] == [f"echo: away {i}" for i in range(3)]
    assert server.state.batch_creations == 2
    assert [line["body"]["messages"][-1]["content"] for line in uploaded_lines(server, 2)] == [
        "away 1"
    ]
    assert "re-attaching to batch batch_1" in caplog.text and "expired" in caplog.text


def test_failed_requests_come_back_with_their_reason_and_are_not_cached(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.script("refused", Action.status_code(400))
    server.script("never", Action.hang(), Action.hang())
    server.script("no answer", Action.no_choices())
    backend = batch_backend(server, tmp_path / "llm.sqlite")

    ok, refused, never, empty = backend.generate(
        [ask("fine"), ask("refused"), ask("never"), ask("no answer")]
    )

    assert ok.ok
    assert refused.error == "HTTP 400: scripted status 400"
    # a body that is no chat completion is a malformed_response reject, as online
    assert empty.failure == MALFORMED and "malformed response body" in (empty.error or "")
    # expired twice: submitted once more in this call, then handed on as a failure
    assert never.error is not None and "batch batch_2 expired" in never.error
    assert server.state.batch_creations == 2
    assert len(backend.cache) == 1, "only the answer is stored, not the failures"
    backend.close()


def test_the_api_key_is_checked_before_anything_is_uploaded(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    backend = batch_backend(server, tmp_path / "llm.sqlite")
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        backend.check()
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        backend.generate([ask("x")])
    assert server.state.file_uploads == 0


def test_batch_polling_settings_do_not_change_the_fingerprint() -> None:
    def config(**llm) -> RunConfig:
        return RunConfig.model_validate(
            {
                "name": "n",
                "method": "ski",
                "corpus": {"path": "c.txt"},
                "llm": {"backend": "openai-batch", "model": "m", **llm},
            }
        )

    plain = config_fingerprint(config())
    assert config_fingerprint(config(batch={"poll_interval_s": 5, "max_wait_s": 60})) == plain
    assert config_fingerprint(config(price={"input_per_1m": 9.0})) == plain
    assert config_fingerprint(config(model="other")) != plain


def test_poll_intervals_grow_up_to_the_configured_maximum(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    waits: list[float] = []
    server.state.hold_batches = True

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 5:
            server.state.hold_batches = False

    backend = OpenAIBatchBackend(
        "fake-model",
        {"max_tokens": 8},
        ledger_path=None,
        base_url=server.base_url,
        batch=BatchAPIConfig(poll_interval_s=10, max_poll_interval_s=30),
        sleep=sleep,
    )
    assert backend.generate([ask("patience")])[0].ok
    assert waits == [10, 15, 22.5, 30, 30]


def test_a_failed_batch_is_reported_resubmitted_once_then_its_requests_fail_with_the_reason(
    server: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server.state.fail_batches = "model fake-model does not exist"
    backend = batch_backend(server, tmp_path / "llm.sqlite")
    requests = [ask("a"), ask("b")]

    with caplog.at_level(logging.WARNING, logger="cseaug.llm.openai_batch_backend"):
        responses = backend.generate(requests)

    assert server.state.batch_creations == 2
    assert [r.error for r in responses] == [
        "batch batch_2 failed (invalid_request: model fake-model does not exist)"
    ] * 2
    assert "batch batch_1 failed (invalid_request: model fake-model does not exist)" in caplog.text
    server.state.fail_batches = None
    assert all(r.ok for r in backend.generate(requests))  # failures were not cached
    backend.close()


def test_concurrent_shards_each_wait_on_their_own_batch(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    backend = batch_backend(server, tmp_path / "llm.sqlite")
    shards = [[ask(f"shard {s} row {i}") for i in range(5)] for s in range(3)]

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(backend.generate, shards))

    assert server.state.batch_creations == 3
    for s, responses in enumerate(answers):
        assert [r.text for r in responses] == [f"echo: shard {s} row {i}" for i in range(5)]
    backend.close()


def test_a_recorded_batch_the_api_does_not_know_is_submitted_again(
    server: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "llm.sqlite"
    requests = [ask("lost 1"), ask("lost 2")]
    backend = batch_backend(server, cache)
    ledger = BatchLedger(cache)
    lost = PendingUpload("file-lost", tuple(backend.hashes(requests)), 0.0)
    ledger.record("batch_deleted", server.base_url, lost)

    with caplog.at_level(logging.WARNING, logger="cseaug.llm.openai_batch_backend"):
        responses = backend.generate(requests)

    assert [r.text for r in responses] == ["echo: lost 1", "echo: lost 2"]
    assert server.state.batch_creations == 1
    assert "batch batch_deleted is unknown" in caplog.text
    assert ledger.open_batches(server.base_url) == []
    ledger.close()
    backend.close()


def test_a_batch_whose_answers_were_partly_stored_is_read_for_the_rest(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "llm.sqlite"
    requests = [ask(f"part {i}") for i in range(4)]
    server.state.hold_batches = True
    with pytest.raises(BackendError):
        batch_backend(server, cache, max_wait_s=0.1).generate(requests)
    # a run killed while storing the batch's answers: two of them reached the cache
    online_cfg = LLMConfig(
        backend="openai", model="fake-model", base_url=server.base_url, max_tokens=32
    )
    make_backend(online_cfg, cache_path=cache).generate(requests[:2])
    server.state.hold_batches = False

    responses = batch_backend(server, cache).generate(requests)

    assert [r.cached for r in responses] == [True, True, False, False]
    assert [r.text for r in responses] == [f"echo: part {i}" for i in range(4)]
    assert server.state.batch_creations == 1


_KILL_AROUND_CREATE = """
import os, signal, sys
from openai.resources.batches import Batches
from cseaug.config import LLMConfig
from cseaug.llm.base import ChatRequest
from cseaug.llm.factory import make_backend

create = Batches.create
def killed_around_create(self, *args, **kwargs):
    if sys.argv[3] == "after":
        create(self, *args, **kwargs)  # the batch exists at OpenAI, and is paid for
    os.kill(os.getpid(), signal.SIGKILL)
Batches.create = killed_around_create

cfg = LLMConfig(backend="openai-batch", model="fake-model", base_url=sys.argv[1], max_tokens=32,
                batch={"poll_interval_s": 0.01, "max_poll_interval_s": 0.05})
backend = make_backend(cfg, cache_path=sys.argv[2])
messages = lambda c: ({"role": "system", "content": "Be brief."}, {"role": "user", "content": c})
backend.generate([ChatRequest(f"window {i}", messages(f"window {i}")) for i in range(6)])
"""


def _killed_around_create(server: FakeOpenAIServer, cache: Path, when: str) -> None:
    """Run a build in a process that SIGKILLs itself ``when`` (before/after) batches.create."""
    child = subprocess.run(
        [sys.executable, "-c", _KILL_AROUND_CREATE, server.base_url, str(cache), when],
        env={**os.environ, "OPENAI_API_KEY": KEY},
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL


def test_a_build_killed_right_after_batches_create_reattaches_and_pays_once(
    server: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "llm.sqlite"
    _killed_around_create(server, cache, "after")
    assert server.state.batch_creations == 1  # created, never recorded as a batch

    with caplog.at_level(logging.WARNING, logger="cseaug.llm.openai_batch_backend"):
        resumed = batch_backend(server, cache)
        responses = resumed.generate([ask(f"window {i}") for i in range(6)])

    assert [r.text for r in responses] == [f"echo: window {i}" for i in range(6)]
    assert server.state.batch_creations == 1  # found by its input file: nothing paid twice
    assert server.state.file_uploads == 1
    assert all(server.counts[f"window {i}"] == 1 for i in range(6))
    assert "re-attaching to batch batch_1" in caplog.text
    assert "stopped before recording it" in caplog.text
    resumed.close()
    ledger = BatchLedger(cache)
    assert ledger.open_batches(server.base_url) == ledger.pending_uploads(server.base_url) == []
    ledger.close()


def test_an_upload_killed_before_batches_create_is_submitted_once_and_its_file_deleted(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "llm.sqlite"
    _killed_around_create(server, cache, "before")
    assert (server.state.batch_creations, server.state.file_uploads) == (0, 1)

    resumed = batch_backend(server, cache)
    responses = resumed.generate([ask(f"window {i}") for i in range(6)])

    assert [r.text for r in responses] == [f"echo: window {i}" for i in range(6)]
    assert server.state.batch_creations == 1
    assert "file-1" not in server.state.files and server.state.file_deletions == 1
    resumed.close()
    assert BatchLedger(cache).pending_uploads(server.base_url) == []


def test_a_lost_answer_to_batches_create_is_looked_up_not_created_again(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.state.lose_batch_answers = 1  # created at the server, the answer never arrives
    waits: list[float] = []
    backend = OpenAIBatchBackend(
        "fake-model",
        {"max_tokens": 8},
        ledger_path=None,
        base_url=server.base_url,
        batch=BatchAPIConfig(**FAST),
        sleep=waits.append,
    )

    with caplog.at_level(logging.WARNING, logger="cseaug.llm.openai_batch_backend"):
        responses = backend.generate([ask("lost answer 1"), ask("lost answer 2")])

    assert [r.text for r in responses] == ["echo: lost answer 1", "echo: lost answer 2"]
    assert server.state.batch_creations == 1  # the client's own retry would have made two
    assert "looking for it before trying again" in caplog.text
    assert waits[0] == 2.0
    backend.close()


def test_the_lookup_pages_through_newer_batches_and_stops_at_older_ones(
    server: FakeOpenAIServer,
) -> None:
    now = int(time.time())

    def batch(number: int, created_at: int, input_file_id: str) -> None:
        server.state.batches[f"batch_{number}"] = {
            "id": f"batch_{number}",
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": input_file_id,
            "completion_window": "24h",
            "created_at": created_at,
            "status": "completed",
        }

    for number in range(300):  # an account's history, oldest first
        batch(number, now - 1000 + number, f"file-old-{number}")
    batch(300, now, "file-mine")
    for number in range(301, 451):  # other work submitted since
        batch(number, now + number, f"file-new-{number}")
    client = openai.OpenAI(api_key=KEY, base_url=server.base_url)

    found = OpenAIBatchBackend._find(client, PendingUpload("file-mine", ("k",), float(now)))
    assert found is not None and found.id == "batch_300"
    assert server.state.batch_list_pages == 2  # 150 newer ones: two pages of 100
    server.state.batch_list_pages = 0
    assert OpenAIBatchBackend._find(client, PendingUpload("file-gone", ("k",), float(now))) is None
    assert server.state.batch_list_pages == 2  # not the 300 older ones
    client.close()


def test_a_refused_batch_creation_leaves_no_pending_upload_and_no_file(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "llm.sqlite"
    server.state.refuse_batches = "enqueued token limit reached"
    backend = batch_backend(server, cache)

    with pytest.raises(BackendError, match=r"HTTP 400.*enqueued token limit reached") as raised:
        backend.generate([ask("refused 1")])

    assert "\n" not in str(raised.value)
    assert server.state.batch_creations == 0
    assert server.state.files == {} and server.state.file_deletions == 1
    assert BatchLedger(cache).pending_uploads(server.base_url) == []
    backend.close()
