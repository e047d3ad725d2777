"""How many requests an endpoint gets at once: AIMD between the bounds of ``llm.concurrency``.

A self-hosted server saturates by queueing, not by 429s: past its batch, more requests in
flight only wait longer. The limit starts at the lower bound and grows by one per answer
(slow start: it doubles each round) until the first sign of overload: a timeout, a 429, or
answers that take over :data:`TOLERANCE` times as long as the fastest seen (smoothed);
then it is halved, at most once per round, and grows again by one per round of healthy
answers (TCP's additive increase, multiplicative decrease). docs/llm-backends.md,
"Requests in flight".

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

TOLERANCE = 2.0
"""Smoothed latency over the fastest smoothed latency seen that counts as overload."""

SMOOTHING = 0.2
"""Weight of the newest answer's latency in the smoothed latency."""


class ConcurrencyLimit:
    """The number of requests in flight allowed now, between ``low`` and ``high`` (thread-safe)."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self._limit = float(low)
        self._slow_start = True
        self._latency: float | None = None
        self._fastest: float | None = None
        self._hold = 0  # answers to come before the next decrease (one round)
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        """Requests in flight allowed now."""
        return int(self._limit)

    def record(self, seconds: float | None) -> None:
        """Count one finished request: answered after ``seconds``, or None for an overload
        signal (a timeout, a 429)."""
        with self._lock:
            self._hold -= 1
            overloaded = seconds is None
            if seconds is not None:
                last = self._latency
                self._latency = seconds if last is None else last + SMOOTHING * (seconds - last)
                self._fastest = min(self._fastest or self._latency, self._latency)
                overloaded = self._latency > TOLERANCE * self._fastest
            if overloaded:
                if self._hold <= 0:
                    self._limit = max(float(self.low), self._limit / 2)
                    self._hold = max(self.limit, 4)
                    self._slow_start = False
                return
            self._limit += 1.0 if self._slow_start else 1.0 / self._limit
            self._limit = min(self._limit, float(self.high))
