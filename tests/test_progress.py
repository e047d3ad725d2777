"""Progress off a terminal (issue 22, item 4): a line every few seconds, never silence."""

from __future__ import annotations

import re
import time

import pytest

from cseaug import progress
from cseaug.progress import progress_bar


@pytest.fixture
def off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stderr is captured by pytest (not a terminal), CSEAUG_PROGRESS unset, lines every 50 ms."""
    monkeypatch.delenv("CSEAUG_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.05)


@pytest.mark.usefixtures("off_a_terminal")
def test_a_long_step_off_a_terminal_writes_a_line_every_interval_and_one_at_its_end(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: nothing at all for as long as the step ran."""
    with progress_bar("Diagnostics", total=4, unit="rows") as bar:
        for _ in range(4):
            time.sleep(0.12)
            bar.advance()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 4, lines
    assert all(line.startswith("Diagnostics: ") and " rows (" in line for line in lines)
    done = [int(line.split(": ")[1].split("/")[0]) for line in lines]
    assert done == sorted(done) and 0 < done[len(done) // 2] < 4
    assert lines[-1].startswith("Diagnostics: 4/4 rows (100%), ")


@pytest.mark.usefixtures("off_a_terminal")
def test_a_short_step_or_progress_switched_off_writes_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with progress_bar("Cleaning", total=2, unit="lines") as bar:
        bar.advance(2)
    monkeypatch.setenv("CSEAUG_PROGRESS", "0")
    with progress_bar("Diagnostics", total=1, unit="rows") as bar:
        time.sleep(0.2)
        bar.advance()
    assert capsys.readouterr().err == ""


@pytest.mark.usefixtures("off_a_terminal")
def test_a_failed_step_writes_no_end_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RuntimeError), progress_bar("Exporting", total=3, unit="rows") as bar:
        time.sleep(0.12)
        bar.advance()
        raise RuntimeError("disk full")
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith("Exporting: ") for line in lines)
    assert not any("(100%)" in line for line in lines)


@pytest.mark.usefixtures("off_a_terminal")
def test_generation_off_a_terminal_shows_requests_and_tokens_per_second_and_the_time_left(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every line of a generation under way has its rates and the time left (before: only a
    count), then the requests in flight the backend allows now (adaptive, between 1 and
    ``llm.concurrency``); the tokens are those the server reported, not estimates."""
    from cseaug.augment.llm_views import send
    from cseaug.config import LLMConfig
    from cseaug.llm.base import ChatRequest
    from cseaug.llm.factory import make_backend
    from tests.fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(latency_s=0.04) as server:
        cfg = LLMConfig(
            backend="openai-compatible", base_url=server.base_url, model="fake", concurrency=4
        )
        requests = [
            ChatRequest(key=str(i), messages=({"role": "user", "content": f"Sentence {i}."},))
            for i in range(16)
        ]
        send(make_backend(cfg, None), requests, "Generating")
    lines = capsys.readouterr().err.splitlines()
    under_way = [
        line for line in lines if not line.startswith(("Generating: 0/", "Generating: 16/"))
    ]
    assert len(under_way) >= 3, lines
    for line in under_way:
        assert re.search(
            r"\d requests/s, [\d.]+ tokens/s, [\d.]+ s left, [1-4] in flight at most$", line
        ), line
    assert re.search(
        r"^Generating: 16/16 requests \(100%\), \d+ s, [\d.]+ requests/s, [\d.]+ tokens/s, "
        r"[1-4] in flight at most$",
        lines[-1],
    )


def test_a_bar_shows_the_rate_and_tokens_per_second(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CSEAUG_PROGRESS", "1")  # bars where stderr is not a terminal
    monkeypatch.setenv("COLUMNS", "160")
    with progress_bar("NGCSE sts views", total=3, unit="requests") as bar:
        for _ in range(3):
            time.sleep(0.1)
            bar.tokens += 40
            bar.note = "8 in flight"
            bar.advance()
    drawn = capsys.readouterr().err
    assert re.search(r"3/3 requests [\d.]+ requests/s, [\d.]+ tokens/s, 8 in flight", drawn)


@pytest.mark.usefixtures("off_a_terminal")
def test_a_note_follows_each_line_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_bar("Generating", total=2, unit="requests") as bar:
        bar.note = "8 in flight"
        for _ in range(2):
            time.sleep(0.12)
            bar.advance()
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.endswith(", 8 in flight") for line in lines), lines
