"""The suite's real instruct model (SmolLM2-135M-Instruct, tests/real_model.py) through the
transformers backend and in whole builds: the shipped prompts through its real chat template,
stop sequences, a ``.gguf`` file as ``llm.model``, a demo build in process and through
``transformers serve`` on 127.0.0.1. Prompts are short and ``max_tokens`` small: two loaded
cores decode a few tokens per second per row."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cseaug.config import load_config
from cseaug.dataset.versions import latest_version, list_versions
from cseaug.errors import PublishGateError
from cseaug.llm.base import ChatRequest, ChatResponse, LLMBackend, ProgressCallback, ResponseSink
from cseaug.llm.transformers_backend import TransformersBackend, chat_prompt_ids
from cseaug.pipeline.dry_run import estimate_build
from cseaug.pipeline.local import run_build
from cseaug.pipeline.stages import make_llm_stage
from tests.real_model import smollm2_folder, smollm2_gguf

pytest.importorskip("transformers")
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "configs" / "demo.yaml"
LINES = ({"role": "user", "content": "List three colours, one per line."},)
"""A prompt the model answers with several lines (``1. Red\\n2. Blue\\n3. Green``)."""
MAX_TOKENS = 12


@pytest.fixture(scope="module")
def folder() -> Path:
    return smollm2_folder()


@pytest.fixture(scope="module")
def model(folder: Path) -> Iterator[TransformersBackend]:
    backend = TransformersBackend(str(folder), {"max_tokens": MAX_TOKENS}, device="cpu")
    backend.check()
    yield backend
    backend.close()


class Recording(LLMBackend):
    """Hands every request to ``inner`` and keeps each (request, answer) pair."""

    name = "transformers"

    def __init__(self, inner: LLMBackend) -> None:
        super().__init__(inner.model, inner.sampling)
        self.inner = inner
        self.seen: list[tuple[ChatRequest, ChatResponse]] = []

    def _stream(
        self, requests: list[ChatRequest], progress: ProgressCallback | None, deliver: ResponseSink
    ) -> None:
        def keep(index: int, response: ChatResponse) -> None:
            self.seen.append((requests[index], response))
            deliver(index, response)

        self.inner._stream(requests, progress, keep)


@pytest.mark.parametrize(("method", "views"), [("sts", 3), ("nli", 2), ("ski", 1)])
def test_the_shipped_prompts_are_answered_through_the_real_chat_template(
    model: TransformersBackend, method: str, views: int
) -> None:
    """NGCSE's STS and NLI prompts and SKICSE's, rendered as a build renders them, each answered
    by the real model: every request answered, in ChatML (the model's own template, with its
    default system prompt where the prompt has none), NGCSE's views ending at their first line
    break, SKICSE's knowledge (up to four sentences) sent without a stop."""
    cfg = load_config(DEMO, [f"method={method}"])
    recording = Recording(model)
    stage = make_llm_stage(cfg, recording)
    result = stage(pa.table({"id": ["r1"], "sentence": ["A man is playing a guitar on stage."]}))

    assert result.stats["requests"] == views == len(recording.seen)
    for request, response in recording.seen:
        assert response.ok and 0 < response.completion_tokens <= MAX_TOKENS, response
        assert request.stop == (() if method == "ski" else ("\n",))
        if request.stop:
            assert "\n" not in response.text
        (ids,) = chat_prompt_ids(model._tokenizer, [request])
        rendered = model._tokenizer.decode(ids)
        assert rendered.startswith("<|im_start|>system\n")
        assert rendered.endswith(
            f"{request.messages[-1]['content']}<|im_end|>\n<|im_start|>assistant\n"
        )
    # every answer is counted: a view kept, or a reject with its reason and raw answer
    outcomes = [
        (reason, n) for view in result.stats["views"].values() for reason, n in view.items()
    ]
    assert sum(n for _, n in outcomes) == views
    assert result.rejects.num_rows == sum(n for reason, n in outcomes if reason != "ok")


def test_an_answer_ends_at_its_stop_sequence(
    model: TransformersBackend,
) -> None:
    """Without a stop the model writes several lines up to ``max_tokens``; with ``\\n`` as the
    stop the same greedy answer ends before its first line break, in fewer tokens."""
    (free,) = model.generate([ChatRequest("free", LINES)])
    (stopped,) = model.generate([ChatRequest("stopped", LINES, stop=("\n",))])
    assert "\n" in free.text.strip()
    assert stopped.text == free.text.split("\n")[0]
    assert stopped.completion_tokens < free.completion_tokens


def test_a_gguf_file_as_llm_model_answers_like_its_converted_folder(
    model: TransformersBackend,
) -> None:
    """The one test that loads the GGUF file itself (~45 s): ``llm.model: path/to/x.gguf``
    loads it (dequantised) and answers as the folder converted from it does."""
    gguf = TransformersBackend(str(smollm2_gguf()), {"max_tokens": MAX_TOKENS}, device="cpu")
    request = ChatRequest("k", ({"role": "user", "content": "Name a colour."},), stop=("\n",))
    try:
        (answer,) = gguf.generate([request])
    finally:
        gguf.close()
    reference = TransformersBackend(model.model, {"max_tokens": MAX_TOKENS}, device="cpu")
    reference._tokenizer, reference._model = model._tokenizer, model._model
    reference._device, reference._budget = model._device, model._budget
    assert answer.ok and answer.text == reference.generate([request])[0].text
    assert gguf.identity()["checkpoint"] != reference.identity()["checkpoint"]


def demo_overrides(root: Path, **llm: str) -> list[str]:
    settings = {"max_tokens": str(MAX_TOKENS), **llm}
    return [
        f"corpus.path={REPO / 'examples' / 'demo_corpus.txt'}",
        "sample.size=2",
        "diagnostics.enabled=false",
        f"output.root={root}",
        *(f"llm.{key}={value}" for key, value in settings.items()),
    ]


def assert_published_or_refused(build: Callable[[], object], root: Path) -> None:
    """A build with a weak model either publishes rows whose views are single lines, or its
    publish gate refuses them in one line and nothing is published; both are legitimate
    outcomes (any other error fails the test)."""
    try:
        build()
    except PublishGateError as refused:
        message = str(refused)
        assert "nothing published" in message and "\n" not in message
        assert list_versions(root, "demo") == []
        return
    version = latest_version(root, "demo")
    assert version is not None
    rows = pq.read_table(next((root / "demo" / version).rglob("train*.parquet"))).to_pylist()
    assert rows
    for row in rows:
        for view in ("positive", "negative"):
            assert row[view] and "\n" not in row[view]


def test_a_demo_build_with_the_real_model_in_process(folder: Path, tmp_path: Path) -> None:
    """configs/demo.yaml with ``llm.model`` the real model, two sentences, in this process."""
    root = tmp_path / "storage"
    cfg = load_config(DEMO, demo_overrides(root, model=str(folder)))
    assert_published_or_refused(lambda: run_build(cfg), root)


def test_the_dry_run_times_one_batch_of_the_real_model(folder: Path, tmp_path: Path) -> None:
    """The dry run of an in-process build loads the model, times its first batch for a few
    tokens and gives a ceiling on the wall time from it, not only token counts."""
    cfg = load_config(DEMO, demo_overrides(tmp_path / "storage", model=str(folder)))
    found = estimate_build(cfg)
    assert found["requests"] == 6
    line = found["wall_time"]
    assert re.fullmatch(
        r"≤ [\d.]+ (s|min): load \d+ s, then per batch of 6 a prefill of [\d.]+ s and [\d.]+ s "
        rf"per token up to max_tokens \({MAX_TOKENS}\), measured on the first batch",
        line,
    ), line
    assert list_versions(tmp_path / "storage", "demo") == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def transformers_serve(tmp_path: Path) -> Iterator[str]:
    """``transformers serve`` on 127.0.0.1 (its own empty Hugging Face cache, offline); killed
    by PID after a grace period, since it ignores SIGTERM while a request is in flight."""
    port = free_port()
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    cli = Path(sys.executable).with_name("transformers")
    server = subprocess.Popen(
        [str(cli), "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        else:
            pytest.fail("transformers serve did not answer /health within 120 s")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_the_same_demo_build_through_transformers_serve(
    folder: Path, tmp_path: Path, transformers_serve: str
) -> None:
    """The demo build against a standard server nobody here wrote: its ``/v1/models`` lists
    nothing for a local folder, so the build probes with one short chat request instead."""
    root = tmp_path / "storage"
    cfg = load_config(
        DEMO,
        demo_overrides(
            root,
            backend="openai-compatible",
            base_url=transformers_serve,
            model=str(folder),
            concurrency="1",
            request_timeout_s="600",
        ),
    )
    assert_published_or_refused(lambda: run_build(cfg), root)
