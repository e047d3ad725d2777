"""Prefect flows: compose tasks, pass paths and counts, publish. No logic.

Installed as ``cseaug_prefect.flows`` (pyproject.toml maps this folder there), so that no
top-level package named ``flows`` lands in site-packages; ``prefect.yaml`` names the files
by path (``flows/build_hybrid_dataset.py:build_hybrid_dataset``).
"""
