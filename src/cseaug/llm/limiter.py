"""How many requests an endpoint gets at once: AIMD between the bounds of ``llm.concurrency``.

A self-hosted server saturates by queueing, not by 429s. The limit grows by one per answer
(slow start) until a timeout, a 429 or a latency over :data:`TOLERANCE` times the lowest seen
(TCP Vegas), then is halved at most once per round and grows by one per round (TCP's AIMD).
docs/llm-backends.md, "Requests in flight".

Example:
    >>> limit = ConcurrencyLimit(1, 8)
    >>> for _ in range(7):
    ...     limit.record(1.0)
    >>> limit.limit
    8
    >>> limit.record(None)  # a timeout or a 429
    >>> limit.limit
    4
"""

from __future__ import annotations

import threading

TOLERANCE = 3.0
"""Latency over the lowest seen that is overload: a batching server (vLLM) is assumed to answer
a full batch within 3 times one request's latency; a queue takes longer."""

SMOOTHING = 0.05
"""Weight of the newest answer in the moving average of latency (about 20 answers): a log-normal
noise of sigma 0.8 never lowers the limit (tests/llm/test_servers_as_they_are.py)."""


class ConcurrencyLimit:
    """The number of requests in flight allowed now, between ``low`` and ``high`` (thread-safe)."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self._limit = float(low)
        self._slow_start = True
        self._recent, self._answers = 0.0, 0
        self._lowest: float | None = None
        self._hold = 0  # answers to come before the next decrease (one round)
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        return int(self._limit)

    def record(self, seconds: float | None) -> None:
        """Count a request answered after ``seconds`` (None: a timeout or a 429)."""
        with self._lock:
            self._hold -= 1
            overloaded = seconds is None
            if seconds is not None:
                self._answers += 1
                self._recent += max(1 / self._answers, SMOOTHING) * (seconds - self._recent)
                if self._answers >= 5:  # an average, not one answer
                    self._lowest = min(self._lowest or self._recent, self._recent)
                    overloaded = self._recent > TOLERANCE * self._lowest
            if overloaded:
                if self._hold <= 0:
                    self._limit = max(float(self.low), self._limit / 2)
                    self._hold = max(self.limit, int(2 / SMOOTHING))
                    self._slow_start = False
                return
            self._limit += 1.0 if self._slow_start else 1.0 / self._limit
            self._limit = min(self._limit, float(self.high))
