"""Augmentation stages: each turns anchor rows into rows with views (see :mod:`.base`)."""
