"""Prefect flows: compose tasks, pass paths and counts, publish. No logic.

``prefect.yaml`` names the files by path
(``src/cseaug_prefect/flows/build_hybrid_dataset.py:build_hybrid_dataset``).
"""
