"""The circuit breaker: stop sending when the endpoint fails most requests.

It counts requests whose own retries are spent; once ``failure_rate`` of the last ``window``
failed, it stays open for the rest of the build and unsent requests come back as
``circuit_open`` rejects (docs/llm-backends.md, "When the endpoint fails").

Example:
    >>> breaker = CircuitBreaker(window=4, failure_rate=0.75)
    >>> for failed in (True, False, True, True):
    ...     breaker.record(failed, "connection refused")
    >>> breaker.is_open
    True
    >>> breaker.reason
    'circuit breaker open: 3 of the last 4 requests failed (last: connection refused)'
"""

from __future__ import annotations

import threading
from collections import deque


class CircuitBreaker:
    """Failure rate over a sliding ``window`` of finished requests; opens once at
    ``failure_rate`` (never before ``window`` requests) and stays open."""

    def __init__(self, window: int, failure_rate: float) -> None:
        self.window = window
        self.failure_rate = failure_rate
        self._outcomes: deque[bool] = deque(maxlen=window)
        self._lock = threading.Lock()
        self.reason: str | None = None  # why it opened

    def record(self, failed: bool, error: str | None = None) -> None:
        """Count one finished request (``failed``: it got no answer; ``error``: why)."""
        with self._lock:
            if self.reason is not None:
                return
            self._outcomes.append(failed)
            failures = sum(self._outcomes)
            full = len(self._outcomes) == self.window
            if full and failures >= self.failure_rate * self.window:
                self.reason = (
                    f"circuit breaker open: {failures} of the last {self.window} "
                    f"requests failed (last: {error})"
                )

    @property
    def is_open(self) -> bool:
        return self.reason is not None
