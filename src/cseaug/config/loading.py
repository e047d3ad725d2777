"""Reading a YAML config: ``--set`` overrides, size limits, validation, one-line errors."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from cseaug.config.run import RunConfig
from cseaug.errors import ConfigError
from cseaug.secrets import holds_secret

MAX_CONFIG_BYTES = 1_000_000
"""Largest config file read (a run config is a few KB)."""
MAX_CONFIG_VALUES = 100_000
"""Most values a config may hold with its aliases expanded: a few hundred characters of nested
YAML aliases (an "alias bomb") expand to billions, which validation would build in memory."""


def count_values(data: Any, source: str) -> int:
    """Values in ``data`` with every YAML alias (the same Python object again) counted as what
    it expands to, without expanding anything; a ConfigError past :data:`MAX_CONFIG_VALUES`,
    for an alias inside its own anchor, or nesting too deep to walk.

    Example:
        >>> inner = ["a", "b"]
        >>> count_values({"x": inner, "y": inner}, "c.yaml")
        7
    """
    sizes: dict[int, int] = {}
    walking: set[int] = set()

    def size(node: Any) -> int:
        if not isinstance(node, (dict, list)):
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in walking:
            raise ConfigError(f"config {source}: a YAML alias refers to its own anchor")
        walking.add(key)
        total = 1
        for child in node.values() if isinstance(node, dict) else node:
            total += size(child)
            if total > MAX_CONFIG_VALUES:
                raise ConfigError(
                    f"config {source} holds more than {MAX_CONFIG_VALUES:,} values once its "
                    "YAML aliases are expanded; a run config needs a few hundred"
                )
        walking.discard(key)
        sizes[key] = total
        return total

    try:
        return size(data)
    except RecursionError:
        raise ConfigError(f"config {source} is nested too deeply") from None


def safe_load_yaml(text: str) -> Any:
    """``yaml.safe_load``, with nesting too deep for the parser as a :class:`yaml.YAMLError`."""
    try:
        return yaml.safe_load(text)
    except RecursionError:
        raise yaml.YAMLError("nested too deeply") from None


def parse_override(item: str) -> tuple[list[str], Any]:
    """Split ``a.b.c=value`` into its key path and a YAML-parsed value; a ConfigError for an
    empty key or a value that is not YAML or holds a secret (naming the key only).

    Example:
        >>> parse_override("sample.size=500")
        (['sample', 'size'], 500)
    """
    if "=" not in item:
        raise ConfigError(
            f"override '{item}' is not of the form key.path=value (e.g. sample.size=500)"
        )
    key, raw = item.split("=", 1)
    path = [part for part in key.strip().split(".") if part]
    if not path:
        raise ConfigError(f"override '{item}' has an empty key")
    if holds_secret(item):
        raise ConfigError(
            f"--set {'.'.join(path)}=...: the value holds a secret (an API key, a token or "
            "credentials), and a config is stored with its run; keep secrets in environment "
            "variables (the API key's variable is named by llm.api_key_env)"
        )
    try:
        value = safe_load_yaml(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"override '{item}': value is not valid YAML ({exc})") from exc
    return path, value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``--set key.path=value`` overrides to a raw config mapping, creating sections as needed."""
    for item in overrides:
        path, value = parse_override(item)
        node = data
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"override '{item}': '{part}' is a value, not a section")
            node = child
        node[path[-1]] = value
    return data


def _section_models(annotation: Any) -> list[type[BaseModel]]:
    """The config models an annotation holds (through ``X | None``, lists and dict values)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _section_models(arg)]


def known_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys the section at ``loc`` (a path of keys and list indices) of ``model`` accepts.

    Example:
        >>> known_keys(RunConfig, ("sample",))
        ['size', 'seed', 'include_other']
    """
    models = [model]
    for part in loc:
        if isinstance(part, int):
            continue
        fields = [m.model_fields[part] for m in models if part in m.model_fields]
        models = [sub for f in fields for sub in _section_models(f.annotation)]
    return [name for m in models for name in m.model_fields]


def _did_you_mean(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """``; did you mean 'x'?`` for an unknown key close to a known one, else the empty string."""
    if not loc or not isinstance(loc[-1], str):
        return ""
    close = difflib.get_close_matches(loc[-1], known_keys(model, loc[:-1]), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def format_validation_error(exc: ValidationError, source: str, model: type[BaseModel]) -> str:
    """One line per problem, naming the dotted key but never the value (it may be a secret);
    an unknown key gets the closest known key of its section of ``model``."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown key" + _did_you_mean(model, tuple(err["loc"]))
        problems.append(f"{where}: {message}")
    if len(problems) == 1:
        return f"invalid config {source}: {problems[0]}"
    return "\n".join([f"invalid config {source}:", *(f"  - {p}" for p in problems)])


ModelT = TypeVar("ModelT", bound=BaseModel)


def load_yaml_model(
    model: type[ModelT],
    path: str | Path | None,
    overrides: list[str] | None = None,
    what: str = "config",
) -> ModelT:
    """Read a YAML file as ``model`` (None: its defaults), with ``key.path=value`` overrides
    applied; ``what`` names the file in messages (``config``, ``training config``)."""
    data: dict[str, Any] = {}
    source = "(defaults)"
    if path is not None:
        path = Path(path)
        source = str(path)
        if not path.is_file():
            raise ConfigError(f"{what} file not found: {path}")
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{what} {path} is {path.stat().st_size:,} bytes: at most {MAX_CONFIG_BYTES:,} "
                "(a config is a few KB)"
            )
        try:
            data = safe_load_yaml(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{what} {path} is not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{what} {path} must be a mapping at the top level")
    data = apply_overrides(data, overrides or [])
    count_values(data, source)  # before validation copies every alias
    return validated(model, data, source)


def validated(model: type[ModelT], data: Any, source: str) -> ModelT:
    """``data`` validated as ``model``; a ConfigError naming ``source`` and every bad key."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, source, model)) from exc


def load_config(path: str | Path, overrides: list[str] | None = None) -> RunConfig:
    """Read a YAML run config with ``key.path=value`` overrides (:func:`load_yaml_model`).

    Example:
        >>> load_config("configs/wiki-sts.yaml", ["sample.size=500"]).sample.size
        500
    """
    return load_yaml_model(RunConfig, path, overrides)


def edge_config(
    model: type[ModelT], config: ModelT | str | Path | None, overrides: Sequence[str] = ()
) -> ModelT:
    """``config`` as a validated ``model``: an instance as it is, else a YAML file's path
    (None: the defaults) read with ``overrides``; the edge of every run (flow or
    :func:`cseaug.build_dataset`) calls it once (docs/architecture.md)."""
    if not isinstance(config, model):
        return load_yaml_model(model, config, list(overrides))
    if overrides:
        raise ValueError(
            f"overrides apply to a config path; change a {model.__name__} with model_copy"
        )
    return config
