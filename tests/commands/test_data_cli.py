"""`cseaug data fetch` through the CLI, against a real HTTP server on 127.0.0.1 (--mirror)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.errors import ConfigError, DownloadError
from cseaug.fetch.catalog import CATALOG
from tests.fake_file_server import FakeFileServer, closed_port_url

runner = CliRunner()
WIDE = {"COLUMNS": "200", "CSEAUG_DATA_MIRROR": ""}

SHARED_COPIES = {  # file name served -> (its copy in ../shared/data, target under --dir)
    "SICK.txt": ("sick/SICK.txt", "sick/SICK.txt"),
    "msr_paraphrase_train.txt": ("mrpc/msr_paraphrase_train.txt",) * 2,
    "msr_paraphrase_test.txt": ("mrpc/msr_paraphrase_test.txt",) * 2,
    # no published checksum for these two: stand-ins, recorded on first use
    "wiki1m_for_simcse.txt": ("wiki/wiki1m_for_simcse_first11914.txt", "wiki1m_for_simcse.txt"),
    "nli_for_simcse.csv": ("nli/nli_triples_snli_devtest.csv", "nli_for_simcse.csv"),
}
PLAIN_ENTRIES = ["wiki1m", "nli", "sick", "mrpc-train", "mrpc-test"]


def invoke(*args, env=None):
    return runner.invoke(app, ["data", "fetch", *map(str, args)], env={**WIDE, **(env or {})})


@pytest.fixture
def mirror(shared_data):
    with FakeFileServer() as server:
        for name, (copy, _) in SHARED_COPIES.items():
            server.add(name, (shared_data / copy).read_bytes())
        yield server


def test_list_shows_licences_checksums_and_presence(tmp_path):
    result = invoke("--list", "--dir", tmp_path)
    assert result.exit_code == 0, result.output
    lines = [line.rstrip() for line in result.output.splitlines()]
    assert f"sts12-train  missing, 126 kB  {tmp_path}/sts12_train/" in lines
    assert (
        "  licence CC BY-NC-SA 3.0; the licence its creators (Marelli et al., 2014) released"
        in (result.output)
    )
    assert "  sha256  none published: the first download's is recorded in .fetched.json and" in (
        result.output
    )
    assert "  sha256  1539c2d059809b5bd40694e26d8121cc85b6b496f91c7b40f2fc83bbd7dcd957" in lines
    assert "  used by vaegpt/train.yaml" in lines
    assert len(re.findall(r"^\S+  missing, ", result.output, flags=re.MULTILINE)) == len(CATALOG)
    (tmp_path / "sick").mkdir()
    (tmp_path / "sick" / "SICK.txt").write_bytes(b"x" * 1500)
    listed = invoke("--list", "sick", "--dir", tmp_path)
    assert f"sick  present (1.5 kB)  {tmp_path}/sick/SICK.txt" in listed.output
    assert "wiki1m" not in listed.output


@pytest.mark.shared_data
def test_fetch_from_a_mirror_places_verifies_and_then_skips(mirror, shared_data, tmp_path):
    data = tmp_path / "data"
    result = invoke(*PLAIN_ENTRIES, "--dir", data, "--mirror", mirror.base_url)
    assert result.exit_code == 0, result.output
    for copy, target in SHARED_COPIES.values():
        assert (data / target).read_bytes() == (shared_data / copy).read_bytes()
    assert result.output.count("sha256 verified (catalogue)") == 3
    assert result.output.count("(first use)") == 2
    assert "data fetch: 5 downloaded (" in result.output and "0 failed" in result.output

    again = invoke(*PLAIN_ENTRIES, "--dir", data, "--mirror", mirror.base_url)
    assert again.exit_code == 0, again.output
    assert "data fetch: 0 downloaded (0 bytes), 5 already present, 0 failed" in again.output
    assert len(mirror.requests) == 5


@pytest.mark.shared_data
def test_the_mirror_can_be_a_folder_named_by_the_environment(shared_data, tmp_path):
    folder = tmp_path / "usb"
    folder.mkdir()
    shutil.copy(shared_data / "sick" / "SICK.txt", folder / "SICK.txt")
    result = invoke("sick", "--dir", tmp_path / "data", env={"CSEAUG_DATA_MIRROR": folder.as_uri()})
    assert result.exit_code == 0, result.output
    assert (tmp_path / "data" / "sick" / "SICK.txt").stat().st_size == 2432648


def test_a_failed_entry_is_reported_and_the_exit_is_an_error(tmp_path):
    with FakeFileServer() as empty:
        result = invoke("sick", "--dir", tmp_path, "--mirror", empty.base_url)
    assert isinstance(result.exception, DownloadError)
    assert str(result.exception) == "1 of 1 failed (sick); see above"
    assert f"✗ sick: could not download SICK.txt: {empty.url('SICK.txt')}: HTTP 404" in (
        result.output
    )


def test_an_unknown_name_is_a_config_error_with_a_suggestion(tmp_path):
    result = invoke("sikc", "--dir", tmp_path)
    assert isinstance(result.exception, ConfigError)
    assert "did you mean 'sick'?" in str(result.exception)


def test_offline_fails_in_seconds_with_one_message_and_no_traceback(tmp_path):
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "from cseaug.cli import main; main()", "data", "fetch"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "CSEAUG_DATA_MIRROR": closed_port_url(), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: cannot connect to any source of wiki1m_for_simcse.txt")
    assert done.stderr.count("looks offline") == 1 and "Traceback" not in done.stderr
    assert re.search(r"\n      data/sts12_train/ \(7 files\) +sts12-train\n", done.stderr)
    assert not (tmp_path / "data" / ".fetch.lock").exists()
    assert time.perf_counter() - started < 20
    assert not list((tmp_path / "data").glob("*.part"))
