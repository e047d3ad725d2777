"""Corpus in, cleaned and sampled deterministically (:func:`prepare_corpus`; docs/corpus.md)."""

from __future__ import annotations

from cseaug.corpus.prepare import PreparedCorpus, prepare_corpus

__all__ = ["PreparedCorpus", "prepare_corpus"]
