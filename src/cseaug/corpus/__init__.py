"""Corpus in, cleaned and sampled deterministically (:func:`prepare_corpus`; docs/corpus.md).

The corpus is read by :mod:`cseaug.readers`; cleaning normalises and drops lines with a
reason; the sample is chosen by a keyed hash of each sentence's row id, the same on any
machine.
"""

from __future__ import annotations

from cseaug.corpus.prepare import PreparedCorpus, prepare_corpus

__all__ = ["PreparedCorpus", "prepare_corpus"]
