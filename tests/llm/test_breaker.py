"""The circuit breaker's window and threshold (issue 8.1)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cseaug.config import LLMConfig
from cseaug.llm.breaker import CircuitBreaker


def test_it_opens_only_over_a_full_window_at_the_threshold_and_stays_open() -> None:
    breaker = CircuitBreaker(window=4, failure_rate=0.5)
    for failed in (True, True, True):
        breaker.record(failed, "HTTP 503")
    assert not breaker.is_open  # three outcomes: the window is not full yet
    breaker.record(False)
    assert breaker.is_open and breaker.reason is not None and "3 of the last 4" in breaker.reason
    breaker.record(False)
    assert breaker.is_open


def test_old_failures_leave_the_window() -> None:
    breaker = CircuitBreaker(window=3, failure_rate=1.0)
    for failed in (True, True, False, True, True, False, True):
        breaker.record(failed, "x")
    assert not breaker.is_open
    breaker.record(True, "x")
    breaker.record(True, "connection refused")
    assert breaker.reason == (
        "circuit breaker open: 3 of the last 3 requests failed (last: connection refused)"
    )


@pytest.mark.parametrize(("window", "rate"), [(0, 0.5), (3, 0.0), (3, 1.5)])
def test_nonsense_settings_are_refused(window: int, rate: float) -> None:
    breaker = {"window": window, "failure_rate": rate}
    with pytest.raises(ValidationError, match="circuit_breaker"):
        LLMConfig(backend="openai", model="m", circuit_breaker=breaker)
