"""Batches of epoch ``k`` from block ``k`` of a dataset: Generate-CSE's view of epoch ``k``.

The training set of the ``generate-cse`` objective holds one block of (anchor, view) rows
per epoch, in epoch order (:mod:`cseaug.trainer.data`). The trainer calls ``set_epoch`` on
its batch sampler at the start of every epoch; this sampler then shuffles only that
epoch's block (seeded by ``seed + epoch``), so every epoch sees each anchor once, paired
with a different view.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

from cseaug.errors import require

torch = require("torch", "hf", "Training a sentence encoder")
sampler = require("sentence_transformers.base.sampler", "hf", "Training a sentence encoder")


class EpochBlockBatchSampler(sampler.DefaultBatchSampler):
    """A batch sampler over block ``epoch mod blocks`` of a dataset of ``blocks`` equal blocks.

    Args:
        dataset: the training set; its length is a multiple of ``blocks``.
        batch_size, drop_last, valid_label_columns, generator, seed: as sentence-transformers'
            ``DefaultBatchSampler``.
        blocks: the number of per-epoch blocks.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        drop_last: bool,
        valid_label_columns: list[str] | None = None,
        generator: Any = None,
        seed: int = 0,
        *,
        blocks: int,
    ) -> None:
        super().__init__(dataset, batch_size, drop_last, valid_label_columns, generator, seed)
        if blocks < 1 or len(dataset) % blocks:
            raise ValueError(f"{len(dataset)} rows do not split into {blocks} equal blocks")
        self.blocks = blocks
        self.block_size = len(dataset) // blocks

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        start = (self.epoch % self.blocks) * self.block_size
        order = (torch.randperm(self.block_size, generator=generator) + start).tolist()
        for first in range(0, self.block_size, self.batch_size):
            batch = order[first : first + self.batch_size]
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return self.block_size // self.batch_size
        return -(-self.block_size // self.batch_size)


def epoch_block_sampler(blocks: int) -> Any:
    """The ``batch_sampler`` argument of the training arguments for ``blocks`` epoch blocks."""
    return partial(EpochBlockBatchSampler, blocks=blocks)
