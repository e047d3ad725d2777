"""A deterministic stand-in sentence encoder that records what reaches it."""

from __future__ import annotations

import numpy as np


class CountingEncoder:
    """A deterministic stand-in model that counts what reaches it."""

    name = "counting"
    dimension = 4

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.closed = False

    def encode(self, texts):
        self.seen.extend(texts)
        rows = np.array([[len(t), t.count("a") + 1, 1.0, ord(t[0]) % 7] for t in texts], np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def close(self) -> None:
        self.closed = True
