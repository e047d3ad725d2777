"""How a (source, target) pair is laid out for GPT-2 (a choice the paper leaves open).

One row is ``[pad … pad] source SEP | target EOS [pad … pad]``: every target starts at the
same column S, so its logits are one slice, and the prompt part is what batched generation
feeds the model; position ids count real tokens only (docs/vaegpt.md, "Choices").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from cseaug.errors import InputError, require

torch = require("torch", "hf", "The VAEGPT-Sim generator")
pad_sequence = torch.nn.utils.rnn.pad_sequence


def load_pretrained(model_class: str, name_or_path: str | Any, what: str) -> Any:
    """``transformers.<model_class>.from_pretrained(name_or_path)``; InputError naming ``what``
    when it cannot be loaded (offline, a hub name must be in the Hugging Face cache)."""
    transformers = require("transformers", "hf", "The VAEGPT-Sim generator")
    try:
        return getattr(transformers, model_class).from_pretrained(str(name_or_path))
    except OSError as exc:
        raise InputError(
            f"cannot load {what} '{name_or_path}': {exc}. Give a local GPT-2 directory "
            "(config.json + weights) or a hub name available offline in the Hugging Face cache"
        ) from exc


def pad_id(tokenizer: Any) -> int:
    """The padding id: the tokenizer's pad token, else its end token (GPT-2 has no pad token)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def pad(sequences: Sequence[Sequence[int]], value: int, left: bool) -> tuple[Any, Any]:
    """Pad to a common width; returns (ids, mask) as long tensors."""
    side = "left" if left else "right"
    rows = [torch.tensor(seq, dtype=torch.long) for seq in sequences]
    ids = pad_sequence(rows, batch_first=True, padding_value=value, padding_side=side)
    ones = [torch.ones_like(row) for row in rows]
    return ids, pad_sequence(ones, batch_first=True, padding_side=side)


def positions(mask: Any) -> Any:
    """Position ids that count real tokens only (0 on padding)."""
    return (mask.cumsum(-1) - 1).clamp(min=0) * mask


def prompt_batch(
    tokenizer: Any, sentences: Sequence[str], separator: str, max_source_tokens: int
) -> tuple[Any, Any]:
    """Left-padded ``source SEP`` prompts, the source cut to ``max_source_tokens``:
    (input_ids, attention_mask)."""
    separator_ids = tokenizer(separator, add_special_tokens=False)["input_ids"]
    if not separator_ids:
        raise ValueError(f"the separator {separator!r} encodes to no token")
    encoded = tokenizer(list(sentences), add_special_tokens=False)["input_ids"]
    prompts = [[*ids[:max_source_tokens], *separator_ids] for ids in encoded]
    return pad(prompts, pad_id(tokenizer), left=True)


@dataclass
class PairBatch:
    """A batch of (source, target) pairs in this layout."""

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
    encoded = tokenizer([t for _, t in pairs], add_special_tokens=False)["input_ids"]
    targets = [[*ids[:max_target_tokens], tokenizer.eos_token_id] for ids in encoded]
    target, target_mask = pad(targets, pad_id(tokenizer), left=False)
    mask = torch.cat([source_mask, target_mask], dim=1)
    return PairBatch(
        input_ids=torch.cat([source, target], dim=1),
        attention_mask=mask,
        position_ids=positions(mask),
        target_ids=target,
        target_mask=target_mask,
        source_width=source.shape[1],
    )
