"""Secrets put where they do not belong are refused before anything is stored."""

from __future__ import annotations

from pathlib import Path

import pytest

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
