"""How many requests an endpoint gets at once: AIMD between the bounds of ``llm.concurrency``.

A self-hosted server saturates by queueing, not by 429s: past its batch, more requests in
flight only wait longer. The limit starts at the lower bound and grows by one per answer
(slow start: it doubles each round) until the first sign of overload: a timeout, a 429, or
a latency of the last answers over :data:`TOLERANCE` times the lowest seen (TCP Vegas's
"no-load" latency, of moving averages: noise in a few answers is not overload); then it is
halved, at most once per round (and per :data:`SMOOTHING`'s 40 answers, for the average to
follow), and grows again by one per round of healthy answers (TCP's
additive increase, multiplicative decrease). docs/llm-backends.md, "Requests in flight".

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
"""Latency of the last answers over the lowest seen that counts as overload: a server that
batches (vLLM) is assumed (not measured here) to answer a full batch within 3 times one
request's latency; a queue takes longer."""

SMOOTHING = 0.05
"""Weight of the newest answer in the moving average of the last answers' latency (about 20
answers; the first ones are averaged plainly, judged from the fifth): a latency noisier than
real servers' (a log-normal of sigma 0.8) never lowers the limit
(tests/llm/test_servers_as_they_are.py)."""


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
        """Requests in flight allowed now."""
        return int(self._limit)

    def record(self, seconds: float | None) -> None:
        """Count one finished request: answered after ``seconds``, or None for an overload
        signal (a timeout, a 429)."""
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
