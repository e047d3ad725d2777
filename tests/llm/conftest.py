"""Fixtures of the LLM-layer tests: a fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_openai_server import FakeOpenAIServer


@pytest.fixture()
def server() -> Iterator[FakeOpenAIServer]:
    """A fresh fake server (no latency) for one test."""
    with FakeOpenAIServer() as running:
        yield running
