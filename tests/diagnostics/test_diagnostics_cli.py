"""``cseaug diagnose``, ``cseaug compare`` and ``cseaug probe-splits`` end to end."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.dataset.verify import data_fingerprint
from cseaug.errors import ConfigError, InputError
from cseaug.hashing import file_sha256

runner = CliRunner()

ROWS = [
    {
        "sentence": "A man plays a guitar.",
        "positive": "A man is playing guitar.",
        "negative": "A cat sleeps.",
    },
    {
        "sentence": "Dogs run in snow.",
        "positive": "Dogs are running in the snow.",
        "negative": "Prices rose.",
    },
    {"sentence": "A plain corpus sentence."},
]


@pytest.mark.slow
def test_diagnose_writes_beside_the_version_with_manifest_settings(make_version, tmp_path):
    version = make_version(ROWS)
    data = sorted((version / "data").glob("*.parquet"))
    files = [{"path": f"data/{p.name}", "sha256": file_sha256(p)} for p in data]
    (version / "manifest.json").write_text(
        json.dumps(
            {
                "config": {"diagnostics": {"cs_sample": 1, "mer_bins": 5}},
                # readers refuse a manifest that does not list its files' sha256 (issue 21.8)
                "files": files,
                "fingerprints": {"data": data_fingerprint(files)},
            }
        )
    )
    result = runner.invoke(
        app, ["diagnose", "demo", "--root", str(tmp_path), "--set", "cs_bins=10"]
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "diagnostics" / "demo" / "v0001"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["bins"] == {
        "mer": {"range": [0.0, 1.0], "bins": 5},
        "cs": {"range": [-1.0, 1.0], "bins": 10},
    }
    assert summary["cs"]["rows"] == 1 and (out / "mer.png").is_file()
    assert "positive" in result.output
    # the checks it computed are printed, not only stored in summary.json (issue 11, item 6)
    assert "Pattern order (positive more similar than intermediate" in result.output
    assert "MER 2 of 2 rows" in result.output
    assert "Contamination check skipped" in result.output
    assert list((tmp_path / "cache" / "embeddings").glob("*.sqlite"))

    other = tmp_path / "elsewhere"
    result = runner.invoke(
        app,
        [
            "diagnose",
            str(version),
            "--out",
            str(other),
            "--set",
            "cs_sample=2",
            "--set",
            "embedding_cache=false",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((other / "summary.json").read_text())["cs"]["rows"] == 2


def test_diagnose_refuses_unknown_settings_and_versions(make_version, tmp_path):
    version = make_version(ROWS)
    result = runner.invoke(app, ["diagnose", str(version), "--set", "cs_smaple=5"])
    assert isinstance(result.exception, ConfigError) and "cs_smaple" in str(result.exception)
    assert "did you mean 'cs_sample'?" in str(result.exception)
    result = runner.invoke(app, ["diagnose", "nothing", "--root", str(tmp_path)])
    assert isinstance(result.exception, InputError)


@pytest.mark.slow
def test_compare_draws_versions_and_references(make_version, tmp_path):
    version = make_version(ROWS)
    stsb = tmp_path / "sts-dev.csv"
    stsb.write_text(
        "g\tf\ty\t1\t4.8\tA man plays.\tA man is playing.\ng\tf\ty\t2\t0.2\tA man plays.\tIt snows.\n"
    )
    corpus = tmp_path / "wiki.txt"
    corpus.write_text("first sentence here .\nsecond one here .\nthird line .\n")
    result = runner.invoke(
        app,
        [
            "compare",
            "--out",
            str(tmp_path / "fig"),
            "--version",
            f"Gen={version}",
            "--stsb",
            str(stsb),
            "--corpus",
            f"Wiki={corpus}",
            "--root",
            str(tmp_path),
            "--no-cache",
        ],
    )
    assert result.exit_code == 0, result.output
    labels = [
        s["label"] for s in json.loads((tmp_path / "fig" / "compare.json").read_text())["settings"]
    ]
    assert labels == ["Gen", "STSB", "Wiki.dropout", "Wiki.token_shuffle", "Wiki.token_cutoff"]
    assert (tmp_path / "fig" / "figure7.png").is_file()


def test_compare_needs_a_setting(tmp_path):
    result = runner.invoke(app, ["compare", "--out", str(tmp_path)])
    assert isinstance(result.exception, InputError)


@pytest.mark.shared_data
def test_probe_splits_command(shared_data, tmp_path):
    result = runner.invoke(
        app,
        [
            "probe-splits",
            "--data-dir",
            str(shared_data / "senteval_sts"),
            "--out",
            str(tmp_path),
            "--max-median",
            "3.2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "| STS2012-MSRvid | 750 | 406 | 344 |" in result.output
    assert (tmp_path / "probe_splits.parquet").is_file() and (tmp_path / "table.md").is_file()


def test_help_texts_exist():
    for command in ("diagnose", "compare", "probe-splits"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "--" in result.output
