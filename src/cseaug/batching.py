"""Generation batches that fit the device: a token budget from free memory, halved on out of memory.

A batch of ``n`` items whose longest has ``L`` tokens costs ``n × slots(L)`` token slots
(padding included); docs/gpu.md, "LLM stages", says how the budget is set and lowered.

Example:
    >>> budget = TokenBudget(slots=100, max_items=8)
    >>> cost = lambda longest: longest + 10
    >>> [batch for batch, _ in run_batches(range(5), [30, 20, 20, 10, 10], cost, budget, len, "cpu")]
    [[0, 1], [2, 3, 4]]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from cseaug.devices import free_device_memory
from cseaug.errors import ConfigError

KV_MEMORY_SHARE = 0.5
"""Share of the free GPU memory a batch's KV cache may fill; the other half is headroom for
the prefill's activations, the logits and the allocator's fragmentation."""

BYTES_PER_DTYPE = {"float32": 4, "float16": 2, "bfloat16": 2}

Result = TypeVar("Result")

SlotCost = Callable[[int], int]
"""Token slots of one item of a batch whose longest item has the given length."""


def dtype_bytes(dtype: Any) -> int:
    """Bytes of one element of a torch dtype or dtype name.

    Example:
        >>> dtype_bytes("bfloat16")
        2
    """
    name = str(dtype).removeprefix("torch.")
    if name not in BYTES_PER_DTYPE:
        raise ValueError(f"no size known for dtype {dtype!r}; known: {sorted(BYTES_PER_DTYPE)}")
    return BYTES_PER_DTYPE[name]


def kv_bytes_per_token(config: Any, element_bytes: int) -> int:
    """Bytes of the KV cache of one token of a decoder-only model (Hugging Face config names):
    2 × layers × KV heads × head size × element bytes.

    Example:
        >>> from types import SimpleNamespace
        >>> qwen2_7b = SimpleNamespace(num_hidden_layers=28, num_attention_heads=28,
        ...                            num_key_value_heads=4, hidden_size=3584)
        >>> kv_bytes_per_token(qwen2_7b, 2)
        57344
    """
    layers = _first_attribute(config, "num_hidden_layers", "n_layer", "num_layers")
    heads = _first_attribute(config, "num_attention_heads", "n_head")
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or (
        _first_attribute(config, "hidden_size", "n_embd") // heads
    )
    return 2 * layers * kv_heads * head_dim * element_bytes


def _first_attribute(config: Any, *names: str) -> int:
    for name in names:
        value = getattr(config, name, None)
        if value:
            return int(value)
    raise ValueError(f"the model config has none of {names}; cannot size its KV cache")


def free_memory_bytes(device: str) -> int | None:
    """Bytes a new allocation on ``device`` can get: the GPU's free memory plus what torch's
    allocator holds unused; None on the CPU (no budget there).

    Example:
        >>> free_memory_bytes("cpu") is None
        True
    """
    if not str(device).startswith("cuda"):
        return None
    import torch

    free, _total = torch.cuda.mem_get_info(device)
    return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))


@dataclass
class TokenBudget:
    """How much one batch may hold: ``slots`` token slots (None: no limit, on the CPU or for a
    fixed batch size) and ``max_items`` items."""

    slots: int | None
    max_items: int

    @classmethod
    def for_device(
        cls,
        device: str,
        batch_size: int | str,
        slot_bytes: Callable[[], int],
        *,
        cpu_items: int,
        gpu_items: int,
        setting: str = "batch_size",
    ) -> TokenBudget:
        """The budget of ``batch_size`` on ``device``: a number is a fixed batch size; ``auto``
        is ``cpu_items`` on the CPU and, on a GPU, as many slots of ``slot_bytes()`` as
        :data:`KV_MEMORY_SHARE` of the free memory holds, at most ``gpu_items`` (a
        ConfigError naming ``setting`` when the model's KV cache cannot be sized).

        Example:
            >>> TokenBudget.for_device("cpu", "auto", lambda: 1000, cpu_items=8, gpu_items=256)
            TokenBudget(slots=None, max_items=8)
        """
        if batch_size != "auto":
            return cls(slots=None, max_items=int(batch_size))
        free = free_memory_bytes(device)
        if free is None:
            return cls(slots=None, max_items=cpu_items)
        try:
            per_slot = slot_bytes()
        except ValueError as exc:
            raise ConfigError(f"{setting} is 'auto' but {exc}; set {setting} to a number") from exc
        return cls(slots=max(1, int(KV_MEMORY_SHARE * free) // per_slot), max_items=gpu_items)

    def take(
        self, order: Sequence[int], lengths: Sequence[int], start: int, slots: SlotCost
    ) -> int:
        """How many items of ``order`` from ``start`` the next batch holds (at least one)."""
        longest = lengths[order[start]]
        count = 1
        while start + count < len(order) and count < self.max_items:
            longer = max(longest, lengths[order[start + count]])
            if self.slots is not None and (count + 1) * slots(longer) > self.slots:
                break
            longest, count = longer, count + 1
        return count


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is torch's out-of-memory error (CUDA or another accelerator)."""
    import torch

    return isinstance(error, torch.OutOfMemoryError)


def run_batches(
    order: Sequence[int],
    lengths: Sequence[int],
    slots: SlotCost,
    budget: TokenBudget,
    work: Callable[[list[int]], Result],
    device: str,
) -> Iterator[tuple[list[int], Result]]:
    """Run ``work`` on batches of the item indices ``order`` (token ``lengths`` by item) within
    ``budget``, yielding (batch, result) pairs in order. A batch that runs out of memory on
    ``device`` halves ``budget`` in place, for its own items, cut again, and every later
    batch; a single item that runs out of memory raises the error."""
    start = 0
    while start < len(order):
        count = budget.take(order, lengths, start, slots)
        batch = list(order[start : start + count])
        try:
            result = work(batch)
        except Exception as error:
            if count == 1 or not is_out_of_memory(error):
                raise
        else:
            yield batch, result
            start += count
            continue
        # Out of memory, outside the except block, so the failed batch's tensors are no longer
        # referenced; half of its slots is the new budget, for its own items again and the rest.
        free_device_memory(device)
        budget.slots = max(1, count * slots(max(lengths[i] for i in batch)) // 2)
