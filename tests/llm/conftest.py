"""Fixtures of the LLM-layer tests: a fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_openai_server import FakeOpenAIServer


@pytest.fixture()
def server() -> Iterator[FakeOpenAIServer]:
    """A fresh fake server (no latency) for one test; it echoes every request, so that tests
    can compare answers with their input."""
    with FakeOpenAIServer(echo_only=True) as running:
        yield running
