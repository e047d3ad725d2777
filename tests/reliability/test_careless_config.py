"""Secrets put where they do not belong are refused before anything is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import pytest
from pydantic import BaseModel

from cseaug.config.base import _kinds
from tests.reliability.attack_tools import REPO, RecordingProxy, build_environment, run_cseaug

pytestmark = pytest.mark.reliability

DEMO = str(REPO / "configs" / "demo.yaml")
CORPUS = str(REPO / "examples" / "demo_corpus.txt")
PASSWORD = "s3cret-pass-987"


@pytest.mark.parametrize(
    "override",
    [
        f"llm.base_url=http://user:{PASSWORD}@127.0.0.1:9/v1",
        f"llm.base_url=http://127.0.0.1:9/v1?api_key={PASSWORD}",
        f"llm.api_key_env={PASSWORD}",
    ],
)
def test_credentials_in_the_config_fail_in_one_line_and_store_nothing(
    tmp_path: Path, override: str
) -> None:
    """Proves 9.5: a URL with credentials (or a key in place of its variable's name) ends the
    build in about a second with exit status 2 and one line that says the key belongs in an
    environment variable; the secret is not printed, and no output root, run store or
    Prefect database (where it would have been stored) is created."""
    with RecordingProxy() as proxy:
        env = build_environment(tmp_path / "prefect-home", proxy)
        args = ["build", "--config", DEMO, "--set", f"corpus.path={CORPUS}"]
        args += ["--set", "llm.backend=openai-compatible"]
        args += ["--set", "llm.base_url=http://127.0.0.1:9/v1", "--set", "llm.model=m"]
        args += ["--set", f"output.root={tmp_path / 'storage'}", "--set", override]
        done = run_cseaug(args, env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "environment variable" in lines[0], done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    assert not (tmp_path / "storage").exists() and not (tmp_path / "prefect-home").exists()


def alias_bomb(levels: int = 9) -> str:
    """A YAML flow mapping of ``levels`` anchors, each a list of nine aliases of the one
    before: a few hundred characters that expand to 9**levels strings."""
    anchors = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        aliases = ", ".join([f"*a{level - 1}"] * 9)
        anchors.append(f"a{level}: &a{level} [{aliases}]")
    return "{" + ", ".join(anchors) + "}"


def dry_run(config: Path | str, *overrides: str) -> object:
    """``cseaug build --dry-run`` in this process: the exception it ended with (None: none)."""
    from typer.testing import CliRunner

    from cseaug.cli import app

    args = ["build", "--config", str(config), "--dry-run", "--set", f"corpus.path={CORPUS}"]
    for override in overrides:
        args += ["--set", override]
    return CliRunner().invoke(app, args).exception


@pytest.mark.timeout(60)
def test_a_yaml_alias_bomb_in_set_is_refused_before_it_expands() -> None:
    """Proves 21.4: a few hundred characters of nested aliases in `--set` (387 million
    strings once expanded) end the dry run at once with one config error, instead of
    passing it and consuming gigabytes in the build."""
    from cseaug.errors import ConfigError

    bomb = alias_bomb()
    assert len(bomb) < 500
    error = dry_run(DEMO, f"llm.engine_kwargs={bomb}")
    assert isinstance(error, ConfigError), error
    assert "more than 100,000 values once its YAML aliases are expanded" in str(error)


@pytest.mark.timeout(60)
def test_a_yaml_alias_bomb_in_a_config_file_is_refused(tmp_path: Path) -> None:
    """The same bomb in a config file of under a kilobyte."""
    from cseaug.errors import ConfigError

    config = tmp_path / "bomb.yaml"
    config.write_text(
        Path(DEMO).read_text(encoding="utf-8") + f"bomb: {alias_bomb()}\n", encoding="utf-8"
    )
    assert config.stat().st_size < 1500
    error = dry_run(config)
    assert isinstance(error, ConfigError), error
    assert "once its YAML aliases are expanded" in str(error)


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ("llm.engine_kwargs=&a [*a]", "refers to its own anchor"),
        ("llm.engine_kwargs=" + "[" * 5000 + "]" * 5000, "nested too deeply"),
    ],
)
def test_a_self_referring_or_too_deep_value_is_one_config_error(override: str, said: str) -> None:
    from cseaug.errors import ConfigError

    error = dry_run(DEMO, override)
    assert isinstance(error, ConfigError) and said in str(error), error


@pytest.mark.parametrize(
    "override",
    [
        "llm.request_timeout_s=inf",
        "llm.request_timeout_s=.inf",
        "llm.temperature=nan",
        "patterns.positive_min_score=-.inf",
    ],
)
def test_an_infinite_or_nan_number_fails_the_dry_run(override: str) -> None:
    """Proves 21.4: `llm.request_timeout_s=inf` passed the dry run and crashed in the HTTP
    client; every number of a config must be finite."""
    from cseaug.errors import ConfigError

    error = dry_run(DEMO, override)
    assert isinstance(error, ConfigError), error
    key = override.split("=")[0]
    assert f"{key}: Input should be a finite number" in str(error)


def test_a_dataset_name_too_long_for_a_file_name_fails_the_dry_run(publish, rows_factory) -> None:
    """Proves 21.4: a 300-character dataset name passed the dry run and failed at publish
    with ENAMETOOLONG; names are at most 100 characters, and a name of 100 publishes."""
    from cseaug.config import load_config
    from cseaug.errors import ConfigError

    longest = "d" * 100
    assert load_config(DEMO, [f"output.dataset_name={longest}"]).dataset_name == longest
    assert publish([rows_factory(4, 4)], name=longest).parent.name == longest
    for override in ("output.dataset_name=" + "d" * 300, "name=" + "n" * 101):
        error = dry_run(DEMO, override)
        assert isinstance(error, ConfigError), error
        assert "too long: at most 100" in str(error)


def test_a_config_file_of_more_than_a_megabyte_is_refused(tmp_path: Path) -> None:
    from cseaug.errors import ConfigError

    config = tmp_path / "big.yaml"
    config.write_text(
        Path(DEMO).read_text(encoding="utf-8") + "#" * 1_000_001 + "\n", encoding="utf-8"
    )
    error = dry_run(config)
    assert isinstance(error, ConfigError) and "at most 1,000,000" in str(error), error


def _with_a_boolean(annotation: Any) -> Any:
    """A value of ``annotation``'s shape with ``True`` wherever a number goes."""
    args = get_args(annotation)
    origin = get_origin(annotation)
    if origin is Annotated:
        return _with_a_boolean(args[0])
    if origin in (list, set):
        return [_with_a_boolean(args[0])]
    if origin is tuple:
        return [_with_a_boolean(arg) for arg in args if arg is not Ellipsis]
    if origin is dict:
        key = get_args(args[0])[0] if get_origin(args[0]) is Literal else "sts"
        return {key: _with_a_boolean(args[1])}
    if args:  # a union: its first numeric member
        return _with_a_boolean(next(a for a in args if _kinds(a) & {int, float}))
    return True


def _config_models() -> list[type]:
    import cseaug.config.run
    import cseaug.trainer.config
    import cseaug.vaegpt.config  # noqa: F401
    from cseaug.config.base import StrictModel

    seen: set[type] = set()
    stack = list(StrictModel.__subclasses__())
    while stack:
        model = stack.pop()
        if model not in seen:
            seen.add(model)
            stack.extend(model.__subclasses__())
    return sorted(seen, key=lambda model: model.__qualname__)


def test_a_boolean_is_refused_in_every_numeric_setting() -> None:
    """Proves 32.6: ``sample.size=true`` was read as 1 (pydantic takes a boolean for a
    number); every numeric field of every config model (the build's RunConfig tree, the
    trainers'), scalar or inside a tuple, list or mapping, refuses true in one line."""
    from pydantic import ValidationError

    from cseaug.errors import ConfigError

    checked = []
    for model in _config_models():
        for name, field in model.model_fields.items():
            kinds = _kinds(field.annotation)
            if not kinds & {int, float} or kinds & {bool, Any}:
                continue
            if any(isinstance(kind, type) and issubclass(kind, BaseModel) for kind in kinds):
                continue
            with pytest.raises(ValidationError) as raised:
                model.model_validate({name: _with_a_boolean(field.annotation)})
            refused = [e for e in raised.value.errors() if e["loc"][:1] == (name,)]
            assert [e["type"] for e in refused] == ["bool_not_number"], (model, name, refused)
            checked.append(f"{model.__name__}.{name}")
    assert len(checked) > 100 and "SampleConfig.size" in checked, checked
    error = dry_run(DEMO, "sample.size=true")
    assert isinstance(error, ConfigError), error
    assert "sample.size: Input should be a number, not a boolean" in str(error)


KEYS = {
    "openai": "sk-proj-Zq8v0ExampleKey4f9aa",
    "anthropic": "sk-ant-api03-Zq8v0ExampleKey4f9",
    "stripe": "rk-live-Zq8v0ExampleKey4f9aa",
    "hugging face": "hf_Zq8v0ExampleKey4f9aaBB",
    "groq": "gsk_Zq8v0ExampleKey4f9aaBB",
    "replicate": "r8_Zq8v0ExampleKey4f9aaBB",
    "xai": "xai-Zq8v0ExampleKey4f9aaBB",
    "gitlab": "glpat-Zq8v0ExampleKey4f9aa",
    "github": "ghp_Zq8v0ExampleKey4f9aaBB",
    "github oauth": "gho_Zq8v0ExampleKey4f9aaBB",
    "github fine-grained": "github_pat_Zq8v0ExampleKey4f9",
    "google": "AIzaSyZq8v0ExampleKey4f9aaBBccDDeeFF",
    "aws access key": "AKIAZQ8V0EXAMPLEKEY4",
    "aws temporary key": "ASIAZQ8V0EXAMPLEKEY4",
    "environment secret": "Zq8v0-env-secret-value",
    "bearer token": "Bearer Zq8v0ExampleKey4f9aaBB",
    "named": "api_key=Zq8v0ExampleKey4f9",
}
PLACES = {
    "host": "http://{}.gw.example/v1",
    "path": "http://127.0.0.1:9/v1/{}",
    "query": "http://127.0.0.1:9/v1?model=m&{}",
    "fragment": "http://127.0.0.1:9/v1#{}",
}


def _percent_encoded(text: str, times: int) -> str:
    for _ in range(times):
        text = "".join(f"%{byte:02X}" for byte in text.encode())
    return text


@pytest.mark.parametrize("times", [0, 1, 2], ids=["as is", "percent-encoded", "twice"])
@pytest.mark.parametrize("place", list(PLACES))
def test_every_key_shape_is_refused_in_every_part_of_the_url_however_encoded(
    monkeypatch: pytest.MonkeyPatch, place: str, times: int
) -> None:
    """Proves 32.5: ``%73k-proj-...`` in ``llm.base_url`` and AWS access key ids passed the
    key-in-URL check; every key shape the scrubber knows (and a secret of the environment,
    and a secret-named ``name=value``) is refused in the host, path, query or fragment,
    written as is, percent-encoded or encoded twice, in one line that does not repeat it."""
    from cseaug.config.llm import LLMConfig
    from cseaug.secrets import url_credentials_problem

    monkeypatch.setenv("CSEAUG_TEST_API_KEY", KEYS["environment secret"])
    for shape, key in KEYS.items():
        if shape == "named" and place == "host":
            continue  # not a host name
        url = PLACES[place].format(_percent_encoded(key, times))
        problem = url_credentials_problem(url, "llm.base_url")
        assert problem and "must not carry credentials" in problem, (shape, url)
        assert key not in problem and key.split("=")[-1] not in problem
    key = _percent_encoded(KEYS["openai"], times)
    with pytest.raises(ValueError, match="must not carry credentials"):
        LLMConfig(backend="openai-compatible", model="m", base_url=PLACES[place].format(key))
