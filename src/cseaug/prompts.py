"""Prompt templates: ``prompts/<name>.jinja2`` files rendered into chat messages, one per
top-level ``system``, ``user`` or ``assistant`` block (docs/prompts-and-patterns.md, "Prompt
files").

Example:
    >>> prompt = load_prompt("ski")
    >>> prompt.render(sentence="A cat sat on the mat.")[0]["role"]
    'user'
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from cseaug.errors import ConfigError
from cseaug.hashing import file_sha256
from cseaug.llm.base import Message

ROLES: tuple[str, ...] = ("system", "user", "assistant")
SUFFIX = ".jinja2"

METHOD_PROMPTS: dict[str, dict[str, str]] = {
    "sts": {
        "positive": "sts_positive",
        "intermediate": "sts_intermediate",
        "negative": "sts_negative",
    },
    "nli": {"positive": "nli_positive", "negative": "nli_negative"},
    "ski": {"knowledge": "ski"},
}
"""Which template writes which view, per method."""

PROMPTS_PACKAGE = "cseaug.prompt_templates"
"""The package whose data are the shipped templates: the repository's ``prompts/`` folder,
mapped there by pyproject.toml (the folder itself in an editable install, a copy in a wheel)."""


def default_prompts_dir() -> Path:
    """The folder of the shipped templates (:data:`PROMPTS_PACKAGE`), wherever a wheel is installed.

    Example:
        >>> (default_prompts_dir() / "ski.jinja2").is_file()
        True
    """
    folder = Path(str(importlib.resources.files(PROMPTS_PACKAGE)))
    if not folder.is_dir():
        raise ConfigError(
            f"the installed cseaug has no prompt templates at {folder} (a zipped install?); "
            "set generation.prompts_dir to a folder of *.jinja2 prompt files"
        )
    return folder


@dataclass(frozen=True)
class PromptTemplate:
    """One loaded prompt file: its name (without ``.jinja2``), path, sha256, and the roles of
    the messages it renders, in order."""

    name: str
    path: Path
    sha256: str
    roles: tuple[str, ...]
    _template: jinja2.Template = field(repr=False, compare=False)

    def render(self, **variables: Any) -> tuple[Message, ...]:
        """The chat messages, each stripped; a ConfigError for a variable not passed."""
        try:
            if not self._template.blocks:
                return ({"role": "user", "content": self._template.render(**variables).strip()},)
            messages = []
            for role in self.roles:
                context = self._template.new_context(dict(variables))
                text = "".join(self._template.blocks[role](context))
                messages.append({"role": role, "content": text.strip()})
            return tuple(messages)
        except jinja2.UndefinedError as exc:
            raise ConfigError(
                f"prompt {self.path}: {exc.message}; variables given: {sorted(variables)}"
            ) from exc

    def manifest(self) -> dict[str, str]:
        """Name, file and sha256, for manifest.json."""
        return {"name": self.name, "path": str(self.path), "sha256": self.sha256}


def load_prompt(name: str, prompts_dir: str | Path | None = None) -> PromptTemplate:
    """Load ``<prompts_dir>/<name>.jinja2`` (default folder: :func:`default_prompts_dir`); a
    ConfigError when it is missing, not Jinja2, or has a block that is not a chat role.

    Example:
        >>> load_prompt("sts_negative").roles
        ('system', 'user')
    """
    directory = Path(prompts_dir) if prompts_dir is not None else default_prompts_dir()
    path = directory / f"{name}{SUFFIX}"
    if not path.is_file():
        available = sorted(p.name[: -len(SUFFIX)] for p in directory.glob(f"*{SUFFIX}"))
        raise ConfigError(
            f"prompt template {name!r} not found: no {path}; available in {directory}: {available}"
        )
    try:
        environment = jinja2.Environment(
            loader=jinja2.FileSystemLoader(directory),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            autoescape=False,  # plain text for an LLM, not HTML
        )
        template = environment.get_template(path.name)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"prompt {path}, line {exc.lineno}: {exc.message}") from exc
    roles = tuple(template.blocks)
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise ConfigError(
            f"prompt {path}: block(s) {unknown} are not chat roles; use {list(ROLES)}"
        )
    return PromptTemplate(
        name=name, path=path, sha256=file_sha256(path), roles=roles or ("user",), _template=template
    )


def load_method_prompts(
    method: str, prompts_dir: str | Path | None = None
) -> dict[str, PromptTemplate]:
    """The templates of a method, by the view they write (see :data:`METHOD_PROMPTS`).

    Example:
        >>> sorted(load_method_prompts("nli"))
        ['negative', 'positive']
    """
    if method not in METHOD_PROMPTS:
        raise ConfigError(
            f"method {method!r} has no prompts; LLM methods: {sorted(METHOD_PROMPTS)}"
        )
    return {view: load_prompt(name, prompts_dir) for view, name in METHOD_PROMPTS[method].items()}


def prompts_manifest(prompts: Mapping[str, PromptTemplate]) -> list[dict[str, str]]:
    """Manifest records (view, name, path, sha256) of a method's templates, for ``build_manifest(prompts=...)``.

    Example:
        >>> [p["name"] for p in prompts_manifest(load_method_prompts("nli"))]
        ['nli_positive', 'nli_negative']
    """
    return [{"view": view, **prompt.manifest()} for view, prompt in prompts.items()]
