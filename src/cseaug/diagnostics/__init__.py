"""Diagnostics of dataset versions and evaluation sets (docs/diagnostics.md)."""
