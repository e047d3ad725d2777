"""Corpus in, cleaned and sampled deterministically (see docs/corpus.md).

The corpus is read by :mod:`cseaug.readers` (text, CSV/TSV, JSONL, Parquet, Hugging Face
datasets); cleaning normalises (NFC, whitespace) and drops lines with a reason; the sample is chosen
by a keyed hash of each sentence's row id, the same on any machine.

Example:
    >>> from cseaug.config import CorpusConfig, SampleConfig
    >>> from cseaug.corpus import prepare_corpus
    >>> prepared = prepare_corpus(CorpusConfig(path="examples/demo_corpus.txt"),
    ...                           SampleConfig(size=8), method="sts")
    >>> prepared.sample.num_rows
    8
"""

from __future__ import annotations

from cseaug.corpus.cleaning import REASONS, normalise_text
from cseaug.corpus.prepare import PreparedCorpus, canonical_batch, prepare_corpus
from cseaug.corpus.sampling import choose_sample, key_ids, row_keys, sample_rank

__all__ = [
    "REASONS",
    "PreparedCorpus",
    "canonical_batch",
    "choose_sample",
    "key_ids",
    "normalise_text",
    "prepare_corpus",
    "row_keys",
    "sample_rank",
]
