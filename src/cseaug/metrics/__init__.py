"""Metrics: Match Error Rate, cosine similarity, histograms, generation quality."""
