"""Sentence encoders: loading (sentence-transformers or [CLS] pooling) and the embedding cache."""
