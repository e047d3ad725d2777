"""Token-budget batches and out-of-memory halving (cseaug.batching), with fake work on the CPU."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import pytest

from cseaug import batching
from cseaug.batching import SlotCost, TokenBudget, kv_bytes_per_token, run_batches
from cseaug.errors import ConfigError

torch = pytest.importorskip("torch")


def test_kv_bytes_per_token_of_gpt2_and_of_grouped_query_attention() -> None:
    gpt2 = SimpleNamespace(n_layer=12, n_head=12, n_embd=768)
    assert kv_bytes_per_token(gpt2, 2) == 2 * 12 * 12 * 64 * 2
    # Qwen2-0.5B: 24 layers, 14 query heads sharing 2 KV heads of 64
    qwen = SimpleNamespace(
        num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2, hidden_size=896
    )
    assert kv_bytes_per_token(qwen, 2) == 2 * 24 * 2 * 64 * 2
    explicit = SimpleNamespace(
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, head_dim=256
    )
    assert kv_bytes_per_token(explicit, 4) == 2 * 2 * 4 * 256 * 4
    with pytest.raises(ValueError, match="cannot size its KV cache"):
        kv_bytes_per_token(SimpleNamespace(), 2)


def test_a_number_is_a_fixed_batch_and_auto_on_the_cpu_keeps_the_cpu_size() -> None:
    def unknown() -> int:
        raise ValueError("the model config has no layers")

    # the slot size is not asked where it is not needed
    assert TokenBudget.for_device("cuda", 12, unknown, cpu_items=8, gpu_items=256) == TokenBudget(
        None, 12
    )
    assert TokenBudget.for_device("cpu", "auto", unknown, cpu_items=8, gpu_items=256) == (
        TokenBudget(None, 8)
    )


def unknown_slot() -> int:
    raise ValueError("the model config has none of ('num_hidden_layers',)")


def test_auto_on_a_gpu_budgets_half_the_free_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batching, "free_memory_bytes", lambda device: 64 * 2**30)
    slot = 57_344  # one token of Qwen2-7B's KV cache in bfloat16
    budget = TokenBudget.for_device("cuda:0", "auto", lambda: slot, cpu_items=8, gpu_items=256)
    assert budget == TokenBudget(slots=(32 * 2**30) // slot, max_items=256)
    with pytest.raises(
        ConfigError, match=r"llm\.batch_size is 'auto' but .*; set llm\.batch_size to a number"
    ):
        TokenBudget.for_device(
            "cuda", "auto", unknown_slot, cpu_items=8, gpu_items=256, setting="llm.batch_size"
        )
    # 221-token prompts + 32 new tokens: 2,314 would fit; the item cap holds it at 256
    order = list(range(3000))
    assert len(batches_of(budget, order, [221] * 3000, lambda longest: longest + 32)[0]) == 256
    # 1,000-token prompts + 256 new tokens: the memory holds 477
    tight = TokenBudget(slots=(32 * 2**30) // slot, max_items=1000)
    assert len(batches_of(tight, order, [1000] * 3000, lambda longest: longest + 256)[0]) == 477


def batches_of(
    budget: TokenBudget, order: Sequence[int], lengths: list[int], slots: SlotCost
) -> list[list[int]]:
    """The batches :func:`run_batches` cuts ``order`` into within ``budget`` (work that never
    runs out of memory)."""
    return [batch for batch, _ in run_batches(order, lengths, slots, budget, len, "cpu")]


def test_batches_are_cut_by_the_longest_item_and_never_empty() -> None:
    budget = TokenBudget(slots=100, max_items=3)
    lengths = [90, 40, 30, 20, 10, 10, 10, 10]
    batches = batches_of(budget, range(8), lengths, lambda longest: longest)
    assert batches == [[0], [1, 2], [3, 4, 5], [6, 7]]
    # unsorted input: a longer item later in the batch sets the cost of every item
    assert batches_of(budget, range(4), [10, 40, 10, 10], lambda longest: longest) == [
        [0, 1],
        [2, 3],
    ]
    assert batches_of(TokenBudget(None, 3), range(5), [1] * 5, lambda n: n) == [
        [0, 1, 2],
        [3, 4],
    ]


class OutOfMemoryAbove:
    """Work that raises torch's out-of-memory error for a batch above ``capacity`` slots."""

    def __init__(self, capacity: int, lengths: list[int]) -> None:
        self.capacity, self.lengths = capacity, lengths
        self.calls: list[list[int]] = []
        self.failures = 0

    def __call__(self, batch: list[int]) -> list[int]:
        self.calls.append(batch)
        if len(batch) * self.lengths[batch[0]] > self.capacity:
            self.failures += 1
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return [i * 10 for i in batch]


def test_out_of_memory_halves_the_batch_and_the_budget_remembers_it() -> None:
    lengths = [10] * 40
    work = OutOfMemoryAbove(capacity=100, lengths=lengths)
    budget = TokenBudget(slots=None, max_items=32)
    done = list(run_batches(range(40), lengths, lambda longest: longest, budget, work, "cpu"))
    # 32 items fail, then 16; the remembered budget (80 slots) cuts every later batch to 8
    assert [len(c) for c in work.calls] == [32, 16, 8, 8, 8, 8, 8]
    assert work.failures == 2
    assert budget.slots == 80
    assert [i for batch, _ in done for i in batch] == list(range(40))
    assert [r for _, result in done for r in result] == [i * 10 for i in range(40)]


def test_one_item_that_does_not_fit_and_other_errors_are_raised() -> None:
    lengths = [500, 10, 10]
    with pytest.raises(torch.OutOfMemoryError):
        list(
            run_batches(
                range(3),
                lengths,
                lambda n: n,
                TokenBudget(None, 1),
                OutOfMemoryAbove(100, lengths),
                "cpu",
            )
        )

    def broken(batch: list[int]) -> list[int]:
        raise RuntimeError("device-side assert triggered")

    with pytest.raises(RuntimeError, match="device-side assert"):
        list(run_batches(range(3), lengths, lambda n: n, TokenBudget(None, 3), broken, "cpu"))
