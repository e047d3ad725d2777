"""Row ids and the seeded sample, defined by integer arithmetic alone (any machine, any numpy).

A sentence's *key* is its row id (:func:`cseaug.dataset.schema.row_id`) read as a
big-endian unsigned 64-bit integer; its rank is ``mix64(key XOR splitmix64(seed mod
2**64))`` with ``mix64`` the SplitMix64 finaliser (Steele, Lea & Flood 2014), and the
sample is the ``size`` smallest ranks (ties to the earlier row), in corpus order. Why this
is the same on any machine and stable when the corpus grows: docs/corpus.md, "Sampling".

Example:
    >>> import pyarrow as pa
    >>> keys = row_keys("wiki", pa.array(["A cat sat."]))
    >>> key_ids(keys).to_pylist()
    ['ed691a84f513cbd7']
    >>> choose_sample(sample_rank(keys, seed=42), size=5).tolist()
    [0]
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

HASH_CHUNK_ROWS = 16_384
"""Sentences turned into Python bytes at a time while hashing: the only per-line Python
objects of corpus preparation, about 16k × (33 + line length) bytes, freed chunk by chunk."""

_GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def row_keys(corpus_name: str, sentences: pa.Array) -> np.ndarray:
    """The 64-bit keys of sentences (no nulls): their row ids read as big-endian integers."""
    prefix = hashlib.sha256(f"{corpus_name}\x00".encode())
    digests = bytearray()
    as_bytes = sentences.cast(pa.binary())
    for start in range(0, len(as_bytes), HASH_CHUNK_ROWS):
        for value in as_bytes.slice(start, HASH_CHUNK_ROWS).to_pylist():
            state = prefix.copy()
            state.update(value)
            digests += state.digest()[:8]
    return np.frombuffer(digests, dtype=">u8").astype(np.uint64)


def key_ids(keys: np.ndarray) -> pa.Array:
    """Row ids (16 lower-case hex digits) from keys, rendered only for the rows being output:
    ``key_ids(row_keys(n, s))`` is ``row_id(n, s)``."""
    head = np.ascontiguousarray(keys, dtype=">u8").view(np.uint8).reshape(-1, 8)
    digits = np.empty((len(head), 16), dtype=np.uint8)
    digits[:, 0::2] = _HEX_DIGITS[head >> 4]
    digits[:, 1::2] = _HEX_DIGITS[head & 0x0F]
    offsets = np.arange(0, 16 * len(head) + 1, 16, dtype=np.int32)
    return pa.Array.from_buffers(
        pa.string(), len(head), [None, pa.py_buffer(offsets), pa.py_buffer(digits)]
    )


def mix64(values: np.ndarray, *, in_place: bool = False) -> np.ndarray:
    """SplitMix64's finaliser on uint64 values (a bijection of 64-bit integers)."""
    z = values if in_place else np.array(values, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= _MIX_1
        z ^= z >> np.uint64(27)
        z *= _MIX_2
        z ^= z >> np.uint64(31)
    return z


def sample_rank(keys: np.ndarray, seed: int) -> np.ndarray:
    """The rank of each key under ``seed`` (smaller ranks are sampled first)."""
    state = np.array([seed % 2**64], dtype=np.uint64)
    with np.errstate(over="ignore"):
        seed_mix = mix64(state + _GOLDEN_GAMMA)[0]
    return mix64(np.asarray(keys, dtype=np.uint64) ^ seed_mix, in_place=True)


def choose_sample(ranks: np.ndarray, size: int, eligible: np.ndarray | None = None) -> np.ndarray:
    """Positions of the ``size`` smallest ranks among the ``eligible`` rows, ascending (corpus
    order); all when fewer. Equal ranks at the cut go to the earlier positions, so the result
    does not depend on the selection algorithm."""
    if eligible is None:
        eligible = np.ones(len(ranks), dtype=bool)
    if size >= int(eligible.sum()):
        return np.flatnonzero(eligible).astype(np.int64)
    candidates = np.where(eligible, ranks, np.iinfo(np.uint64).max)
    candidates.partition(size - 1)
    cut = candidates[size - 1]
    del candidates
    below = np.flatnonzero((ranks < cut) & eligible)
    at_cut = np.flatnonzero((ranks == cut) & eligible)[: size - len(below)]
    return np.union1d(below, at_cut).astype(np.int64)
