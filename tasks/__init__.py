"""Prefect tasks: thin wrappers over the cseaug library (retries, caching, logging, artifacts).

Installed as ``cseaug_prefect.tasks`` (pyproject.toml maps this folder there), so that no
top-level package named ``tasks`` lands in site-packages.
"""
