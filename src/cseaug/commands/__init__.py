"""Command groups of the ``cseaug`` CLI; each module exposes ``register(app)``."""
