"""Row ids, dedup keys and the seeded sample: integer arithmetic only, the same everywhere."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from cseaug.corpus.dedup import find_duplicates
from cseaug.corpus.sampling import (
    HASH_CHUNK_ROWS,
    choose_sample,
    key_ids,
    mix64,
    row_keys,
    sample_rank,
)
from cseaug.dataset.schema import row_id


def test_row_ids_equal_the_contract_row_id() -> None:
    sentences = ["A cat sat.", "Café au lait", "日本語の文。", "emoji 🙂 here", "x" * 500]
    keys = row_keys("wiki", pa.array(sentences))
    assert key_ids(keys).to_pylist() == [row_id("wiki", s) for s in sentences]
    assert keys.dtype == np.uint64
    assert keys.tolist() == [int(row_id("wiki", s), 16) for s in sentences]


def test_row_ids_across_hash_chunks() -> None:
    sentences = [f"sentence {i}" for i in range(HASH_CHUNK_ROWS + 5)]
    ids = key_ids(row_keys("c", pa.array(sentences)))
    assert ids[HASH_CHUNK_ROWS + 3].as_py() == row_id("c", sentences[HASH_CHUNK_ROWS + 3])


def test_mix64_matches_splitmix64_reference() -> None:
    # SplitMix64 seeded with 0: first output 0xE220A8397B1DCDAF (Vigna's reference code).
    state = np.array([0x9E3779B97F4A7C15], dtype=np.uint64)
    assert int(mix64(state)[0]) == 0xE220A8397B1DCDAF
    assert int(mix64(state * np.uint64(2))[0]) == 0x6E789E6AA1B965F4


def test_sample_rank_depends_on_seed_and_is_not_the_key_order() -> None:
    keys = np.arange(1000, dtype=np.uint64)
    a, b = sample_rank(keys, 1), sample_rank(keys, 2)
    assert not np.array_equal(np.argsort(a), np.argsort(b))
    assert not np.array_equal(np.argsort(a), np.arange(1000))
    assert np.array_equal(sample_rank(keys, -1), sample_rank(keys, 2**64 - 1))


def test_choose_sample_corpus_order_ties_and_all() -> None:
    ranks = np.array([5, 1, 3, 3, 9, 3], dtype=np.uint64)
    assert choose_sample(ranks, 2).tolist() == [1, 2]  # tie at 3: earlier position wins
    assert choose_sample(ranks, 3).tolist() == [1, 2, 3]
    assert choose_sample(ranks, 10).tolist() == list(range(6))
    eligible = np.array([True, False, True, True, True, True])
    assert choose_sample(ranks, 2, eligible).tolist() == [2, 3]
    assert choose_sample(ranks, 9, eligible).tolist() == [0, 2, 3, 4, 5]


def test_sample_is_nested_and_position_free() -> None:
    sentences = [f"sentence number {i}" for i in range(2000)]
    keys = row_keys("c", pa.array(sentences))
    ranks = sample_rank(keys, 7)
    small, large = choose_sample(ranks, 50), choose_sample(ranks, 200)
    assert set(small) <= set(large)
    # Reverse the corpus: the same sentences are chosen.
    reversed_keys = keys[::-1].copy()
    picked = choose_sample(sample_rank(reversed_keys, 7), 50)
    assert {sentences[::-1][i] for i in picked} == {sentences[i] for i in small}


def test_find_duplicates_keeps_the_first() -> None:
    chunks = [pa.array(["a", "b", "a"]), pa.array(["c", "b", "a"])]
    keys = row_keys("c", pa.concat_arrays(chunks))
    dup, first = find_duplicates(chunks, keys)
    assert dup.tolist() == [2, 4, 5] and first.tolist() == [0, 1, 0]


def test_find_duplicates_survives_key_collisions() -> None:
    # Every key equal: only exact string equality may drop a row.
    chunks = [pa.array(["x", "y", "x"]), pa.array(["z", "y", "w"])]
    keys = np.zeros(6, dtype=np.uint64)
    dup, first = find_duplicates(chunks, keys)
    assert dup.tolist() == [2, 4] and first.tolist() == [0, 1]


def test_find_duplicates_partial_collision() -> None:
    chunks = [pa.array(["x", "y", "x", "q", "q"])]
    keys = np.array([1, 1, 1, 2, 2], dtype=np.uint64)  # x and y collide; q repeats
    dup, first = find_duplicates(chunks, keys)
    assert dup.tolist() == [2, 4] and first.tolist() == [0, 3]


def test_find_duplicates_none() -> None:
    dup, first = find_duplicates([pa.array(["a", "b"])], np.array([1, 2], dtype=np.uint64))
    assert dup.size == 0 and first.size == 0
