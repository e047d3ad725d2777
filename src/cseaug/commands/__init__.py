"""Command groups of the ``cseaug`` CLI; each module has a typer ``app`` of its commands."""
