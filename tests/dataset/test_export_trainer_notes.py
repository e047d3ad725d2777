"""What another paper's own trainer needs to read an export right, said where it is written
(the export's notes) and where a version is described (`cseaug show`)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.dataset.export import export_version
from cseaug.dataset.staging import publish_version

runner = CliRunner()


def _version(tmp_path: Path, manifest, table) -> Path:
    return publish_version(
        [table], [], root=tmp_path / "storage", name="demo", manifest=manifest
    ).path


def test_ngcse_five_key_export_says_which_margins_keep_eq_6(
    tmp_path: Path, manifest, rows_factory
) -> None:
    version = _version(tmp_path, manifest, rows_factory(5, 5))
    notes = export_version(version, "ngcse", tmp_path / "sts.jsonl").notes
    assert any("--margins '[[5e-3, 5e-3, 5e-2], []]'" in note for note in notes)


def test_ngcse_nli_export_has_no_margins_note(tmp_path: Path, manifest, rows_factory) -> None:
    nli = rows_factory(5, 5, views=("positive", "negative"), method="nli")
    version = _version(tmp_path, manifest, nli)
    notes = export_version(version, "ngcse", tmp_path / "nli.jsonl").notes
    assert not any("--margins" in note for note in notes)


def test_simcse_quadruplet_csv_says_simcse_cannot_read_it(
    tmp_path: Path, manifest, rows_factory
) -> None:
    ski = rows_factory(5, 0, views=("positive", "negative", "knowledge"), method="ski")
    version = _version(tmp_path, manifest, ski)
    quadruplets = export_version(version, "simcse", tmp_path / "ski.csv", layout="quadruplet")
    assert any(
        "NotImplementedError" in note
        and "configs/train/skicse-sup.yaml" in note
        and "jsonl" in note
        for note in quadruplets.notes
    )
    triplets = export_version(version, "simcse", tmp_path / "nli.csv", layout="triplet")
    assert not any("NotImplementedError" in note for note in triplets.notes)


def test_show_says_what_the_exports_need(tmp_path: Path, manifest, rows_factory) -> None:
    _version(tmp_path, manifest, rows_factory(5, 5))
    root = str(tmp_path / "storage")
    shown = runner.invoke(app, ["show", "demo", "--root", root], env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    assert "note: ngcse export:" in shown.output
    assert "--margins '[[5e-3, 5e-3, 5e-2], []]'" in shown.output
    assert "NotImplementedError" not in shown.output  # no knowledge, no quadruplets


def test_show_on_quadruplets_points_to_the_trainer(tmp_path: Path, manifest, rows_factory) -> None:
    ski = rows_factory(5, 0, views=("positive", "negative", "knowledge"), method="ski")
    _version(tmp_path, manifest, ski)
    root = str(tmp_path / "storage")
    shown = runner.invoke(app, ["show", "demo", "--root", root], env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    assert "note: simcse --layout quadruplet:" in shown.output
    assert "configs/train/skicse-sup.yaml" in shown.output and "--margins" not in shown.output
