"""Augmentation stages: each is a step (:mod:`cseaug.step`) that turns anchor rows into rows with views."""
