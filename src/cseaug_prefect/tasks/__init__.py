"""Prefect tasks: thin wrappers over the cseaug library (retries, caching, logging, artifacts)."""
