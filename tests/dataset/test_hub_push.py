"""`cseaug push`: a version in one tagged commit on the Hub (a loopback fake of its API,
tests/fake_hub_server.py, through the real huggingface_hub client), `--local-dir` read by
`datasets`, and every failure one line that leaves the version as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cseaug.dataset.reader import read_rows
from cseaug.dataset.staging import publish_version
from cseaug.dataset.verify import verify_version
from cseaug.trainer.config import TrainConfig
from cseaug.trainer.data import load_training_data
from tests.fake_hub_server import FakeHub

TOKEN = "hf_pushTestToken0123456789"
REPO = "team/wiki-sts"


def cseaug(*args: str, hub: FakeHub | None = None, **env: str) -> subprocess.CompletedProcess:
    """The `cseaug` command in a new process, its Hub at ``hub`` (huggingface_hub reads
    HF_ENDPOINT when imported), speaking LFS (the fake has no Xet), the token in HF_TOKEN."""
    environ = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_XET": "1", "HF_TOKEN": TOKEN}
    environ |= {"HF_ENDPOINT": hub.url} if hub else {}
    environ |= env
    command = [str(Path(sys.executable).with_name("cseaug")), *args]
    return subprocess.run(command, capture_output=True, text=True, env=environ, timeout=120)


@pytest.fixture
def version(tmp_path: Path, manifest, rows_factory, rejects_factory) -> Path:
    """v0001 of ``demo``: held-out rows, rejects, and a diagnostics file beside its plots."""

    def diagnostics(staging: Path) -> None:
        (staging / "diagnostics").mkdir()
        (staging / "diagnostics" / "report.html").write_text("<html>report</html>\n")
        (staging / "diagnostics" / "summary.json").write_text('{"rows": 75}\n')

    return publish_version(
        [rows_factory(30, 45)], [rejects_factory(5)], root=tmp_path / "storage", name="demo",
        manifest=manifest, rows_per_file=20, before_publish=diagnostics,
    ).path  # fmt: skip


def version_files(version: Path) -> dict[str, bytes]:
    return {
        p.relative_to(version).as_posix(): p.read_bytes() for p in version.rglob("*") if p.is_file()
    }


def test_push_is_one_tagged_commit_and_a_second_push_sends_nothing(
    version: Path, tmp_path: Path, manifest, rows_factory
) -> None:
    root = str(tmp_path / "storage")
    with FakeHub(TOKEN) as hub:
        first = cseaug("push", "demo/v0001", "--repo", REPO, "--root", root, hub=hub)
        assert first.returncode == 0, first.stderr
        assert "pushed 10 files to team/wiki-sts tag v0001" in first.stdout
        expected = version_files(version)
        assert {"data/heldout-00000-of-00001.parquet", "diagnostics/report.html"} < set(expected)
        [commit] = hub.commits  # one commit, holding every file of the version
        assert sorted(commit.added) == sorted(expected) and commit.branch == "main"
        assert hub.repos[REPO].tags == {"v0001": commit.oid}
        assert hub.files(REPO, "v0001") == {
            **expected,
            ".gitattributes": hub.files(REPO, "v0001")[".gitattributes"],
        }
        assert not hub.repos[REPO].private

        # a download of the tag (files as the Hub serves them, plus what huggingface_hub's
        # snapshot_download(local_dir=...) adds) is a version the trainer reads
        download = tmp_path / "download"
        pulled = {**hub.files(REPO, "v0001"), ".cache/huggingface/download/README.md.lock": b""}
        for path, data in pulled.items():
            (download / path).parent.mkdir(parents=True, exist_ok=True)
            (download / path).write_bytes(data)
        training = load_training_data(download, TrainConfig(objective="ngcse"))
        rows = read_rows(version)
        assert training.skipped == {"heldout": sum(rows.column("heldout").to_pylist())}
        assert sum(training.rows.values()) == rows.num_rows - training.skipped["heldout"]
        report = verify_version(download)  # every listed file matches; the Hub's extras apart
        assert report.ok and (report.changed, report.missing, report.unlisted) == ([], [], [])
        assert report.hub_download_files == 2  # .gitattributes, .cache/huggingface/...lock

        calls = len(hub.requests)
        again = cseaug("push", "demo/v0001", "--repo", REPO, "--root", root, hub=hub)
        assert again.returncode == 0, again.stderr
        assert again.stdout.startswith("unchanged: team/wiki-sts tag v0001")
        assert len(hub.commits) == 1  # no commit, not even an empty one
        assert not [
            r for r in hub.requests[calls:] if r[0] != "GET" and "/repos/create" not in r[1]
        ]

        # the next version replaces the files: a data file it lacks is deleted, not left in train
        second = publish_version(
            [rows_factory(5, 5, start=200)], [], root=root, name="demo", manifest=manifest
        ).path
        third = cseaug("push", "demo", "--repo", REPO, "--root", root, hub=hub)
        assert third.returncode == 0, third.stderr
        assert "tag v0002" in third.stdout and len(hub.commits) == 2
        assert "data/train-00003-of-00004.parquet" in hub.commits[1].deleted
        assert set(hub.files(REPO, "main")) - {".gitattributes"} == set(version_files(second))
        assert hub.files(REPO, "v0001") == hub.files(REPO, hub.repos[REPO].tags["v0001"])

        branch = cseaug(
            "push", "demo/v0001", "--repo", "team/b", "--revision", "dev", "--root", root, hub=hub
        )
        assert branch.returncode == 0, branch.stderr
        assert (
            hub.commits[2].branch == "dev"
            and hub.repos["team/b"].tags["v0001"] == hub.commits[2].oid
        )
        assert list(hub.files("team/b", "main")) == [".gitattributes"]  # main untouched


def test_local_dir_is_the_pushed_folder_and_datasets_reads_its_splits(
    version: Path, tmp_path: Path, hf_cache
) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "hub-folder"
    result = cseaug("push", str(version), "--local-dir", str(out), HF_ENDPOINT="http://127.0.0.1:9")
    assert result.returncode == 0, result.stderr
    assert version_files(out) == version_files(version)  # what the push uploads, byte for byte
    assert verify_version(out).changed == []  # a downloaded copy verifies

    loaded = datasets.load_dataset(str(out))
    assert set(loaded) == {"train", "heldout"}
    rows = read_rows(version)
    held = rows.filter(rows.column("heldout")).column("id").to_pylist()
    assert sorted(loaded["heldout"]["id"]) == sorted(held) and held
    assert loaded["train"].num_rows + len(held) == rows.num_rows == 75
    assert not any(loaded["train"]["heldout"])

    again = cseaug("push", str(version), "--local-dir", str(out))
    assert again.returncode == 2 and "is not empty" in again.stderr


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("no token", "no Hugging Face token: set HF_TOKEN or run `hf auth login`"),
        ("wrong token", "refused (401): the Hub does not accept the token"),
        ("403", "refused (403): the token may not write to team/wiki-sts"),
        ("404", "refused (404): team/wiki-sts was not found: check --repo"),
        ("409", "refused (409): team/wiki-sts changed meanwhile"),
        ("offline", "cannot reach the Hub at http://127.0.0.1:"),
        ("HF_HUB_OFFLINE", "HF_HUB_OFFLINE is set: unset it to push"),
        ("private", "team/wiki-sts exists and is public, and --private was given"),
    ],
    ids=["no-token", "wrong-token", "403", "404", "409", "offline", "HF_HUB_OFFLINE", "private"],
)
def test_a_failed_push_is_one_line_and_changes_nothing(
    version: Path, tmp_path: Path, case: str, expected: str
) -> None:
    before = version_files(version)
    args = ["push", str(version), "--repo", REPO]
    with FakeHub(TOKEN) as hub:
        env: dict[str, str] = {}
        if case == "no token":
            env = {"HF_TOKEN": "", "HF_HOME": str(tmp_path / "empty-hf-home")}
        elif case == "wrong token":
            env = {"HF_TOKEN": "hf_notTheRightToken0123"}
        elif case in ("403", "404"):
            hub.refuse = {"/": int(case)}
        elif case == "409":  # another push committed meanwhile
            hub.refuse = {"/commit/": 409}
        elif case == "offline":
            env = {"HF_ENDPOINT": "http://127.0.0.1:9"}  # the discard port: nothing listens
        elif case == "HF_HUB_OFFLINE":
            env = {"HF_HUB_OFFLINE": "1"}
        else:
            assert cseaug("push", str(version), "--repo", REPO, hub=hub).returncode == 0
            args.append("--private")
        commits = len(hub.commits)
        result = cseaug(*args, hub=hub, **env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert expected in result.stderr
    assert TOKEN not in result.stderr + result.stdout
    assert len(hub.commits) == commits
    assert version_files(version) == before and verify_version(version).changed == []
