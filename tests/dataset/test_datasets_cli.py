"""`cseaug versions`, `cseaug show`, `cseaug export` through typer's CliRunner."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.dataset.staging import StagedVersion, publish_version
from cseaug.errors import InputError

runner = CliRunner()


@pytest.fixture
def root(tmp_path: Path, manifest, rows_factory, rejects_factory) -> Iterator[Path]:
    root = tmp_path / "storage"
    for n in (10, 20):
        publish_version(
            [rows_factory(n, n)],
            [rejects_factory(4)],
            root=root,
            name="wiki-sts",
            manifest=manifest,
        )
    publish_version(
        [rows_factory(3, 0)], [], root=root, name="nli-ski", manifest={**manifest, "method": "ski"}
    )
    unfinished = StagedVersion(root, "wiki-sts")  # a build in progress: its staging must not show
    yield root
    unfinished.abort()


def test_versions_lists_every_version(root: Path) -> None:
    result = runner.invoke(app, ["versions", "--root", str(root)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "wiki-sts" in line or "nli-ski" in line]
    assert len(lines) == 3
    assert "v0002 (latest)" in result.output and "staging" not in result.output
    assert any("40" in line and "sts" in line for line in lines)
    only = runner.invoke(app, ["versions", "nli-ski", "--root", str(root)], env={"COLUMNS": "200"})
    assert "wiki-sts" not in only.output and "ski" in only.output


def test_show_describes_a_version(root: Path) -> None:
    result = runner.invoke(app, ["show", "wiki-sts", "--root", str(root)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "wiki-sts/v0002" in result.output
    assert "rejects by reason" in result.output and "refusal" in result.output
    assert (
        "data/train-00000-of-00001.parquet" in result.output and "rejects.parquet" in result.output
    )
    first = runner.invoke(app, ["show", "wiki-sts/v0001", "--root", str(root), "--json"])
    assert json.loads(first.output)["counts"]["rows"] == 20


def test_unknown_names_list_what_exists(root: Path) -> None:
    missing = runner.invoke(app, ["show", "wiki-nli", "--root", str(root)])
    assert isinstance(missing.exception, InputError)
    assert "datasets there: nli-ski, wiki-sts" in str(missing.exception)
    wrong_version = runner.invoke(
        app, ["export", "wiki-sts/v0009", "--format", "ngcse", "--root", str(root)]
    )
    assert "versions: v0001, v0002" in str(wrong_version.exception)
    empty = runner.invoke(app, ["versions", "--root", str(root / "nothing")])
    assert empty.exit_code == 0 and "no datasets" in empty.output


def test_export_writes_the_file_and_explains_what_it_left_out(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "train.csv"
    result = runner.invoke(
        app,
        ["export", "wiki-sts", "--format", "simcse", "--out", str(out), "--root", str(root)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8").startswith('"sent0","sent1","hard_neg"')
    assert "other rows have no views" in result.output
    default = runner.invoke(
        app,
        [
            "export",
            "wiki-sts/v0001",
            "--format",
            "sentence-transformers",
            "--split",
            "all",
            "--layout",
            "pair",
            "--root",
            str(root),
        ],
    )
    assert default.exit_code == 0, default.output
    exports = root / "exports" / "wiki-sts" / "v0001"
    assert (exports / "sentence-transformers-pair-all.parquet").is_file()
    bad = runner.invoke(app, ["export", "wiki-sts", "--format", "infersent", "--root", str(root)])
    assert bad.exit_code != 0


@pytest.mark.parametrize("spelling", ["sentence_transformers", "Sentence-Transformers"])
def test_export_takes_the_config_spelling_of_sentence_transformers(
    root: Path, spelling: str
) -> None:
    """Proves 11.6: the format a config calls ``sentence_transformers`` is accepted on the
    command line too (one normalising function), and writes the same file."""
    result = runner.invoke(
        app,
        ["export", "wiki-sts/v0001", "--format", spelling, "--layout", "pair", "--root", str(root)],
    )
    assert result.exit_code == 0, result.output
    assert (
        root / "exports" / "wiki-sts" / "v0001" / "sentence-transformers-pair-train.parquet"
    ).is_file()


def test_help_texts() -> None:
    for command in ("versions", "show", "export"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "--root" in result.output
