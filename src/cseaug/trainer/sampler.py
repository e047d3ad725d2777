"""The batches of the papers whose batches are not sentence-transformers' default:
Generate-CSE's epoch blocks (every epoch pairs each anchor with another view) and NGCSE's
mixed batches as the authors' collator makes them (docs/trainer.md, "NGCSE batches")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cseaug.errors import require

torch = require("torch", "hf", "Training a sentence encoder")
sampler = require("sentence_transformers.base.sampler", "hf", "Training a sentence encoder")
collator = require(
    "sentence_transformers.sentence_transformer.data_collator", "hf", "Training a sentence encoder"
)


class EpochBlockBatchSampler(sampler.DefaultBatchSampler):
    """A batch sampler over block ``epoch mod blocks`` of a dataset of ``blocks`` equal blocks."""

    def __init__(self, dataset: Any, *args: Any, blocks: int, **kwargs: Any) -> None:
        super().__init__(dataset, *args, **kwargs)
        self.blocks = blocks
        self.block_size = len(dataset) // blocks

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        start = (self.epoch % self.blocks) * self.block_size
        order = (torch.randperm(self.block_size, generator=generator) + start).tolist()
        yield from torch.utils.data.BatchSampler(order, self.batch_size, self.drop_last)

    def __len__(self) -> int:
        block = range(self.block_size)
        return len(torch.utils.data.BatchSampler(block, self.batch_size, self.drop_last))


class MixedBatchSampler(sampler.DefaultBatchSampler):
    """NGCSE's schedule over a dataset whose first ``generated`` rows are LLM-generated, with
    ``per_batch`` the authors' ``aigen_batch_size`` (docs/trainer.md, "NGCSE batches": the
    schedule and its two edge cases); ``drop_last`` is unused."""

    def __init__(
        self, dataset: Any, *args: Any, generated: int, per_batch: int, **kwargs: Any
    ) -> None:
        super().__init__(dataset, *args, **kwargs)
        self.rows = len(dataset)
        self.generated = generated
        self.per_batch = per_batch
        self._schedule: tuple[int, list[list[int]]] | None = None

    def batches(self) -> list[list[int]]:
        """The batches of the current epoch, in order (planned once per epoch)."""
        if self._schedule is not None and self._schedule[0] == self.epoch:
            return self._schedule[1]
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(self.rows, generator=generator)
        batches: list[list[int]] = []
        cache: list[int] = []
        for chunk in order.split(self.batch_size):
            is_generated = chunk < self.generated
            cache += chunk[is_generated].tolist()
            others = chunk[~is_generated].tolist()
            if len(cache) >= self.per_batch:
                batches.append(cache + others)
                cache = []
            elif others:
                batches.append(others)
        if cache:
            batches.append(cache)
        self._schedule = (self.epoch, batches)
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        yield from self.batches()

    def __len__(self) -> int:
        return len(self.batches())


class MixedBatchCollator(collator.SentenceTransformerDataCollator):
    """sentence-transformers' collator, with each of ``sparse_columns`` (column → the labels of
    the rows that have it) tokenized for those rows only (NGCSE's s^m and s^n: a dense column
    would encode a padding sentence for every other row), left out where no row has it."""

    def __init__(self, sparse_columns: dict[str, tuple[int, ...]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sparse_columns = sparse_columns

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        dense = [{k: v for k, v in row.items() if k not in self.sparse_columns} for row in features]
        batch = super().__call__(dense)
        prompts = self._resolve_prompts(batch)
        for column, labels in self.sparse_columns.items():
            texts = [row[column] for row in features if row["label"] in labels]
            if texts:
                prompt = self._get_prompt_for_column(prompts, column)
                for key, value in self.preprocess_fn(texts, prompt=prompt, task=None).items():
                    batch[f"{column}_{key}"] = value
        return batch
