"""The prompt templates, one Jinja2 file per prompt (the papers' text verbatim).

Not code: this file only makes the folder installable as the package data of
``cseaug.prompt_templates`` (pyproject.toml maps it there), so that a wheel carries the
templates and :mod:`cseaug.prompts` reads them through ``importlib.resources``.
"""
