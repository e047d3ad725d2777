"""Training pairs of VAEGPT-Sim (section 4.1.1, appendix A.8): SICK pairs with relatedness
above 3 and MRPC paraphrases, exact duplicates kept once, split 12:1 (docs/vaegpt.md, "Training")."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow.compute as pc

from cseaug.errors import ConfigError
from cseaug.readers.benchmarks import read_mrpc, read_sick
from cseaug.vaegpt.config import PairDataConfig

Pair = tuple[str, str]


@dataclass
class PairSplits:
    """Train and validation pairs, and counts of what was read and kept."""

    train: list[Pair]
    validation: list[Pair]
    stats: dict[str, Any] = field(default_factory=dict)


def self_pairs(pairs: Sequence[Pair]) -> list[Pair]:
    """Every distinct sentence of ``pairs`` paired with itself, in first-seen order."""
    sentences = dict.fromkeys(sentence for pair in pairs for sentence in pair)
    return [(s, s) for s in sentences]


def split_pairs(
    pairs: Sequence[Pair], validation_ratio: float, seed: int
) -> tuple[list[Pair], list[Pair]]:
    """Seeded shuffle, then the first ``round(n * ratio)`` pairs (at least one when n > 1) validate.

    Example:
        >>> train, val = split_pairs([(str(i), str(i)) for i in range(13)], 1 / 13, seed=0)
        >>> len(train), len(val)
        (12, 1)
    """
    order = list(pairs)
    random.Random(seed).shuffle(order)
    n_val = round(len(order) * validation_ratio)
    if validation_ratio > 0 and len(order) > 1:
        n_val = min(max(n_val, 1), len(order) - 1)
    return order[n_val:], order[:n_val]


def load_pairs(config: PairDataConfig, seed: int) -> PairSplits:
    """Read, filter, deduplicate, pair and split the training data of ``config``."""
    if not config.sick and not config.mrpc:
        raise ConfigError("data: give at least one SICK file (data.sick) or MRPC file (data.mrpc)")
    # SICK: relatedness strictly above the minimum, in the splits asked for (a split file with
    # an unrecognised name has no split: kept); MRPC: the paraphrases, label 1
    sick_kept = (pc.field("relatedness") > config.sick_min_relatedness) & (
        pc.field("split").is_null() | pc.field("split").isin(config.sick_splits)
    )
    tables = [(path, read_sick(path), sick_kept) for path in config.sick]
    tables += [(path, read_mrpc(path), pc.field("label") == 1) for path in config.mrpc]
    pairs: list[Pair] = []
    stats: dict[str, Any] = {"files": {}}
    for path, table, keep in tables:
        kept = table.filter(keep)
        pairs += zip(kept.column("s1").to_pylist(), kept.column("s2").to_pylist(), strict=True)
        stats["files"][path] = {"read": table.num_rows, "kept": kept.num_rows}
    unique = list(dict.fromkeys(pairs))
    stats["duplicates_dropped"] = len(pairs) - len(unique)
    if config.both_directions:
        unique = list(dict.fromkeys(unique + [(t, s) for s, t in unique]))
    if config.pairing == "self":
        unique = self_pairs(unique)
    if not unique:
        raise ConfigError(
            "data: no training pair left after filtering; check data.sick_min_relatedness and data.sick_splits"
        )
    train, validation = split_pairs(unique, config.validation_ratio, seed)
    stats.update(
        pairing=config.pairing, pairs=len(unique), train=len(train), validation=len(validation)
    )
    return PairSplits(train, validation, stats)
