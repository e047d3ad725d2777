"""Checks of what a build generated, before a trainer can learn from it (docs/quality.md)."""
