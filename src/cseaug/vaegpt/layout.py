"""How a (source, target) pair is laid out for GPT-2 (a choice the paper leaves open).

One row is ``[pad … pad] source SEP | target EOS [pad … pad]``: every target starts at the
same column S, so its logits are one slice, and the prompt part is what batched generation
feeds the model; position ids count real tokens only (docs/vaegpt.md, "Choices").

Example:
    batch = pair_batch(tokenizer, [("a cat", "a kitten")], "<|endoftext|>", 32, 32)
    batch.target_positions  # tensor([2, 3, 4])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from cseaug.errors import require

torch = require("torch", "hf", "The VAEGPT-Sim generator")


def separator_ids(tokenizer: Any, separator: str) -> list[int]:
    """Token ids of the separator (``<|endoftext|>`` is GPT-2's one special token: one id)."""
    ids = tokenizer(separator, add_special_tokens=False)["input_ids"]
    if not ids:
        raise ValueError(f"the separator {separator!r} encodes to no token")
    return list(ids)


def pad_id(tokenizer: Any) -> int:
    """The padding id: the tokenizer's pad token, else its end token (GPT-2 has no pad token)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def prompt_ids(
    tokenizer: Any, sentences: Sequence[str], separator: str, max_source_tokens: int
) -> list[list[int]]:
    """``source SEP`` ids per sentence, the source cut to ``max_source_tokens``."""
    sep = separator_ids(tokenizer, separator)
    encoded = tokenizer(list(sentences), add_special_tokens=False)["input_ids"]
    return [list(ids[:max_source_tokens]) + sep for ids in encoded]


def target_ids(tokenizer: Any, sentences: Sequence[str], max_target_tokens: int) -> list[list[int]]:
    """``target EOS`` ids per sentence, the target cut to ``max_target_tokens``."""
    encoded = tokenizer(list(sentences), add_special_tokens=False)["input_ids"]
    return [[*ids[:max_target_tokens], tokenizer.eos_token_id] for ids in encoded]


def pad(sequences: Sequence[Sequence[int]], value: int, left: bool) -> tuple[Any, Any]:
    """Pad to a common width; returns (ids, mask) as long tensors."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), value, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        span = slice(width - len(seq), width) if left else slice(0, len(seq))
        ids[row, span] = torch.tensor(seq, dtype=torch.long)
        mask[row, span] = 1
    return ids, mask


def positions(mask: Any) -> Any:
    """Position ids that count real tokens only (0 on padding)."""
    return (mask.cumsum(-1) - 1).clamp(min=0) * mask


def prompt_batch(
    tokenizer: Any, sentences: Sequence[str], separator: str, max_source_tokens: int
) -> tuple[Any, Any]:
    """Left-padded ``source SEP`` prompts: (input_ids, attention_mask)."""
    return pad(
        prompt_ids(tokenizer, sentences, separator, max_source_tokens), pad_id(tokenizer), left=True
    )


@dataclass
class PairBatch:
    """A batch of (source, target) pairs in the layout of the module docstring."""

    input_ids: Any
    attention_mask: Any
    position_ids: Any
    target_ids: Any
    target_mask: Any
    source_width: int

    @property
    def target_positions(self) -> Any:
        """Columns whose logits predict the target tokens (and the end token)."""
        width = self.target_ids.shape[1]
        return torch.arange(
            self.source_width - 1, self.source_width - 1 + width, device=self.input_ids.device
        )

    def to(self, device: Any) -> PairBatch:
        tensors = [f.name for f in fields(self) if f.name != "source_width"]
        return replace(self, **{name: getattr(self, name).to(device) for name in tensors})


def pair_batch(
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    separator: str,
    max_source_tokens: int,
    max_target_tokens: int,
) -> PairBatch:
    """Encode (source, target) pairs into a :class:`PairBatch`."""
    source, source_mask = prompt_batch(
        tokenizer, [s for s, _ in pairs], separator, max_source_tokens
    )
    target, target_mask = pad(
        target_ids(tokenizer, [t for _, t in pairs], max_target_tokens),
        pad_id(tokenizer),
        left=False,
    )
    mask = torch.cat([source_mask, target_mask], dim=1)
    return PairBatch(
        input_ids=torch.cat([source, target], dim=1),
        attention_mask=mask,
        position_ids=positions(mask),
        target_ids=target,
        target_mask=target_mask,
        source_width=source.shape[1],
    )
