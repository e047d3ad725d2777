"""The trainer stage: train a sentence encoder on a published dataset version.

It reads only a version's ``manifest.json`` and ``data/*.parquet``, never the build's
internals or caches: the dataset contract is all a trainer needs. :func:`.train.train_encoder`
is the whole run; docs/trainer.md describes the objectives, heads, evaluation and records.
"""
