"""Publishing: layout, counts, heldout, MER columns, atomicity, immutability."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from cseaug.dataset import staging, versions
from cseaug.dataset.manifest import REQUIRED_KEYS
from cseaug.dataset.reader import read_rows
from cseaug.dataset.schema import CANONICAL_SCHEMA, REJECTS_SCHEMA, row_id
from cseaug.dataset.staging import StagedVersion, heldout_flags, publish_version
from cseaug.errors import InputError
from cseaug.hashing import file_sha256


def _publish(root: Path, manifest, rows, rejects=(), **kwargs):
    return publish_version(rows, rejects, root=root, name="demo", manifest=manifest, **kwargs)


def test_layout_counts_and_manifest(
    tmp_path: Path, manifest, rows_factory, rejects_factory
) -> None:
    published = _publish(
        tmp_path,
        manifest,
        [rows_factory(30, 0), rows_factory(0, 95, start=30)],
        [rejects_factory(7)],
        rows_per_file=50,
    )
    path = published.path
    assert path == tmp_path / "datasets" / "demo" / "v0001" and published.version == "v0001"
    held = published.manifest["counts"]["heldout"]
    assert 0 < held < 25  # held-out rows in their own file, the card's heldout split
    assert sorted(p.name for p in (path / "data").iterdir()) == [
        "heldout-00000-of-00001.parquet",
        "train-00000-of-00003.parquet",
        "train-00001-of-00003.parquet",
        "train-00002-of-00003.parquet",
    ]
    assert {p.name for p in path.iterdir()} == {
        "data",
        "rejects.parquet",
        "manifest.json",
        "README.md",
    }
    files = sorted((path / "data").iterdir())
    assert [pq.ParquetFile(p).metadata.num_rows for p in files] == [held, 50, 50, 25 - held]
    assert [set(pq.read_table(p).column("heldout").to_pylist()) for p in files] == [
        {True},
        {False},
        {False},
        {False},
    ]
    for p in (path / "data").iterdir():
        assert pq.ParquetFile(p).schema_arrow.equals(CANONICAL_SCHEMA)
    assert pq.read_table(path / "rejects.parquet").schema.equals(REJECTS_SCHEMA)

    on_disk = json.loads((path / "manifest.json").read_text())
    assert set(REQUIRED_KEYS) <= set(on_disk)
    counts = on_disk["counts"]
    assert counts["rows"] == 125 and counts["by_split"] == {"aigen": 30, "other": 95}
    assert counts["views"] == {"intermediate": 30, "negative": 30, "positive": 30}
    assert counts["by_method"] == {"sts": 30}
    assert counts["rejects"] == 7 and counts["rejects_by_stage"] == {
        "corpus": {"empty": 1, "refusal": 2, "too_short": 1},
        "llm": {"empty": 1, "refusal": 1, "too_short": 1},
    }
    assert counts["heldout"] == sum(counts["heldout_by_split"].values())
    assert on_disk["dataset"] == "demo" and on_disk["version"] == "v0001"
    for entry in on_disk["files"]:
        assert file_sha256(path / entry["path"]) == entry["sha256"]
    assert set(on_disk["fingerprints"]) == {"config", "build", "data"}
    assert (path.parent / "latest").read_text().strip() == "v0001"


def test_rows_survive_unchanged_but_for_heldout(tmp_path: Path, manifest, rows_factory) -> None:
    given = rows_factory(20, 10)
    # Metrics are the build's MER step's: the writer publishes them as given, even odd ones.
    given = given.set_column(
        given.schema.get_field_index("mer_positive"),
        "mer_positive",
        pa.array([0.25] * given.num_rows, pa.float32()),
    )
    published = _publish(tmp_path, manifest, [given])
    table = read_rows(published.path)  # the held-out rows' file first, each file in given order
    flags = heldout_flags(given.column("id"), 0.1)
    assert table.column("heldout").to_pylist() == sorted(flags.to_pylist(), reverse=True)
    order = pa.concat_arrays([pc.indices_nonzero(flags), pc.indices_nonzero(pc.invert(flags))])
    assert table.drop_columns(["heldout"]).equals(given.drop_columns(["heldout"]).take(order))


def test_heldout_is_deterministic_and_about_ten_percent() -> None:
    ids = pa.array([row_id("wiki", f"sentence {i}") for i in range(20_000)])
    flags = np.asarray(heldout_flags(ids, 0.1))
    assert 0.09 < flags.mean() < 0.11
    shuffled = np.random.default_rng(0).permutation(len(ids))
    assert np.array_equal(
        np.asarray(heldout_flags(ids.take(pa.array(shuffled)), 0.1)), flags[shuffled]
    )
    # a larger share holds out a superset: raising the fraction never un-holds a row
    assert not (flags & ~np.asarray(heldout_flags(ids, 0.2))).any()
    assert not np.asarray(heldout_flags(ids, 0.0)).any()
    with pytest.raises(InputError):
        heldout_flags(ids, 1.0)


def test_same_id_same_flag_in_every_version(tmp_path: Path, manifest, rows_factory) -> None:
    first = read_rows(_publish(tmp_path, manifest, [rows_factory(50, 50)]).path)
    second = read_rows(_publish(tmp_path, manifest, [rows_factory(50, 50).slice(30)]).path)
    flags = dict(
        zip(first.column("id").to_pylist(), first.column("heldout").to_pylist(), strict=True)
    )
    assert all(
        flags[i] == h
        for i, h in zip(
            second.column("id").to_pylist(), second.column("heldout").to_pylist(), strict=True
        )
    )


def test_versions_are_numbered_and_latest_moves(tmp_path: Path, manifest, rows_factory) -> None:
    names = [_publish(tmp_path, manifest, [rows_factory(3, 3)]).version for _ in range(3)]
    assert names == ["v0001", "v0002", "v0003"]
    assert versions.list_versions(tmp_path, "demo") == names
    assert versions.latest_version(tmp_path, "demo") == "v0003"
    assert versions.resolve(tmp_path, "demo") == tmp_path / "datasets" / "demo" / "v0003"
    assert versions.resolve(tmp_path, "demo/v0002").name == "v0002"


def test_published_versions_are_read_only_and_never_rewritten(
    tmp_path: Path, manifest, rows_factory
) -> None:
    published = _publish(tmp_path, manifest, [rows_factory(5, 5)])
    for entry in [published.path, *published.path.rglob("*")]:
        mode = stat.S_IMODE(entry.stat().st_mode)
        assert not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), entry
    before = {p: p.read_bytes() for p in published.path.rglob("*") if p.is_file()}
    assert _publish(tmp_path, manifest, [rows_factory(1, 1)]).version == "v0002"
    assert {p: p.read_bytes() for p in published.path.rglob("*") if p.is_file()} == before
    assert not [p for p in published.path.parent.iterdir() if p.name.startswith(".staging-")]


def test_a_failure_before_the_rename_publishes_nothing(
    tmp_path: Path, manifest, rows_factory, monkeypatch
) -> None:
    def broken_rename(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(staging.os, "rename", broken_rename)
    with pytest.raises(OSError, match="disk full"):
        _publish(tmp_path, manifest, [rows_factory(5, 5)])
    dataset = tmp_path / "datasets" / "demo"
    assert versions.list_versions(tmp_path, "demo") == []
    assert not (dataset / "latest").exists()
    assert not [p for p in dataset.iterdir() if p.name.startswith(".staging-")]


def test_invalid_rows_abort_the_version(tmp_path: Path, manifest, rows_factory) -> None:
    duplicated = rows_factory(5, 0)
    with pytest.raises(InputError, match="duplicate id"):
        _publish(tmp_path, manifest, [duplicated, duplicated])
    with pytest.raises(InputError, match="columns not in the dataset contract"):
        _publish(
            tmp_path,
            manifest,
            [pa.table({"id": ["x"], "sentence": ["s"], "split": ["other"], "extra": [1]})],
        )
    incomplete = {k: v for k, v in manifest.items() if k != "token_usage"}
    with pytest.raises(InputError, match="missing 'token_usage'"):
        _publish(tmp_path, incomplete, [rows_factory(1, 1)])
    assert versions.list_versions(tmp_path, "demo") == []
    assert [p.name for p in (tmp_path / "datasets" / "demo").iterdir()] == [".lock"]


def test_hook_writes_diagnostics_before_publishing(tmp_path: Path, manifest, rows_factory) -> None:
    seen = {}

    def diagnostics(staging: Path) -> None:
        seen["rows"] = read_rows(staging).num_rows  # the sealed data are readable in staging
        (staging / "diagnostics").mkdir()
        (staging / "diagnostics" / "mer_hist.png").write_bytes(b"\x89PNG fake")
        (staging / "diagnostics" / "stats.json").write_text("{}")

    published = _publish(tmp_path, manifest, [rows_factory(4, 4)], before_publish=diagnostics)
    assert seen["rows"] == 8
    assert (published.path / "diagnostics" / "stats.json").is_file()
    assert (
        "![diagnostics/mer_hist.png](diagnostics/mer_hist.png)"
        in (published.path / "README.md").read_text()
    )


def test_staged_api_step_by_step(tmp_path: Path, manifest, rows_factory) -> None:
    with StagedVersion(tmp_path, "demo", heldout_fraction=0.0, rows_per_file=4) as staged:
        assert staged.write_rows([rows_factory(3, 0)]) == 3
        assert staged.write_rows(iter(rows_factory(0, 6, start=3).to_batches(max_chunksize=2))) == 6
        staged.write_rejects([])
        assert [p.name for p in staged.seal()] == [
            f"train-0000{i}-of-00003.parquet" for i in range(3)
        ]
        with pytest.raises(InputError, match="sealed"):
            staged.write_rows([rows_factory(1, 0, start=50)])
        published = staged.commit(manifest)
    assert published.manifest["counts"]["heldout"] == 0


def test_empty_version_still_has_a_schema(tmp_path: Path, manifest) -> None:
    published = _publish(tmp_path, manifest, [])
    assert read_rows(published.path).num_rows == 0
    assert published.manifest["counts"]["rows"] == 0


@pytest.mark.parametrize("fraction", [0.0, 0.1])
def test_manifest_records_the_heldout_share(
    tmp_path: Path, manifest, rows_factory, fraction: float
) -> None:
    """The card and the trainer read the share from the manifest: it is the one applied."""
    published = _publish(tmp_path, manifest, [rows_factory(200, 200)], heldout_fraction=fraction)
    saved = json.loads((published.path / "manifest.json").read_text())
    assert saved["heldout_fraction"] == fraction
    held = saved["counts"]["heldout"]
    assert (held == 0) if fraction == 0 else (0.05 * 400 < held < 0.15 * 400)


CRASHING_BUILD = textwrap.dedent(
    """
    import os, sys
    from cseaug.dataset.schema import rows_table
    from cseaug.dataset.staging import StagedVersion
    staged = StagedVersion(sys.argv[1], "demo")
    staged.write_rows([rows_table([{"id": "a", "sentence": "s", "split": "other"}])])
    staged.seal()
    os._exit(1)  # the process dies before commit: no cleanup code runs
    """
)


def test_a_crashed_build_leaves_only_hidden_staging_that_the_next_build_removes(
    tmp_path: Path, manifest, rows_factory
) -> None:
    env = {**os.environ, "CSEAUG_PROGRESS": "0"}
    subprocess.run(
        [sys.executable, "-c", CRASHING_BUILD, str(tmp_path)], env=env, check=False, timeout=120
    )
    dataset = tmp_path / "datasets" / "demo"
    leftovers = [p for p in dataset.iterdir() if p.name.startswith(".staging-")]
    assert leftovers and versions.list_versions(tmp_path, "demo") == []
    assert versions.list_datasets(tmp_path) == []

    published = _publish(tmp_path, manifest, [rows_factory(2, 2)])
    assert published.version == "v0001"
    assert not [p for p in dataset.iterdir() if p.name.startswith(".staging-")]


def test_a_live_staging_directory_is_not_removed(tmp_path: Path, manifest, rows_factory) -> None:
    with StagedVersion(tmp_path, "demo") as slow:
        _publish(tmp_path, manifest, [rows_factory(2, 2)])
        assert slow.path.is_dir()
        slow.write_rows([rows_factory(1, 1, start=10)])
        assert slow.commit(manifest).version == "v0002"


def test_writer_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="rows_per_file"):
        StagedVersion(tmp_path, "demo", rows_per_file=0)
    with pytest.raises(InputError, match="dataset name"):
        StagedVersion(tmp_path, "../x")
