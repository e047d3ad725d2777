"""Prefect flows: compose tasks, pass paths and counts, publish. No logic."""
