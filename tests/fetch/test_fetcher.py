"""Fetching catalogue entries: verify, place atomically, extract, record, skip, fail loudly."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from cseaug.errors import DownloadError
from cseaug.fetch.catalog import Entry, Member, select
from cseaug.fetch.download import RetryPolicy
from cseaug.fetch.fetcher import OfflineError, fetch, presence
from tests.fake_file_server import FakeFileServer, closed_port_url

FAST = RetryPolicy(attempts=2, backoff_s=0.0, timeout_s=5.0)
TEXT = b"first sentence.\nsecond sentence.\n" * 2000


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def entry(name: str, url: str, **fields) -> Entry:
    defaults = dict(
        description="test file",
        configs=(),
        urls=(url,),
        filename=url.rsplit("/", 1)[-1],
        sha256=None,
        licence="test",
        terms="test",
        size="1 kB",
    )
    return Entry(name=name, **{**defaults, **fields})


def tgz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def server():
    with FakeFileServer() as running:
        yield running


def run(entries, data_dir: Path, **options):
    return fetch(entries, data_dir, policy=FAST, **options)


def test_a_verified_download_is_placed_recorded_and_leaves_no_part(server, tmp_path):
    server.add("corpus.txt", TEXT, drop_after=10_000)
    known = entry("corpus", server.url("corpus.txt"), sha256=sha(TEXT), target="c/corpus.txt")
    report = run([known], tmp_path)
    assert (tmp_path / "c" / "corpus.txt").read_bytes() == TEXT
    assert not list(tmp_path.rglob("*.part"))
    (outcome,) = report.outcomes
    assert outcome.action == "downloaded" and "sha256 verified (catalogue)" in outcome.detail
    record = json.loads((tmp_path / ".fetched.json").read_text())["files"]["c/corpus.txt"]
    assert record["sha256"] == sha(TEXT) and record["checksum"] == "catalogue"
    assert record["url"] == server.url("corpus.txt")
    assert report.summary().startswith("1 downloaded (66.0 kB), 0 already present, 0 failed")


def test_a_second_fetch_skips_what_is_present_and_verified(server, tmp_path):
    server.add("corpus.txt", TEXT)
    known = entry("corpus", server.url("corpus.txt"), sha256=sha(TEXT), target="corpus.txt")
    run([known], tmp_path)
    report = run([known], tmp_path)
    assert len(server.requests) == 1
    assert [(o.action, o.detail) for o in report.outcomes] == [
        ("present", "already present, sha256 verified (catalogue)")
    ]
    forced = run([known], tmp_path, force=True)
    assert forced.outcomes[0].action == "downloaded" and len(server.requests) == 2


def test_a_checksum_mismatch_deletes_the_download_and_names_file_expected_and_got(server, tmp_path):
    server.add("corpus.txt", TEXT)
    wrong = "0" * 64
    bad = entry("corpus", server.url("corpus.txt"), sha256=wrong, target="corpus.txt")
    (outcome,) = run([bad], tmp_path).outcomes
    assert outcome.action == "failed"
    assert f"sha256 mismatch for {tmp_path / 'corpus.txt'}" in outcome.detail
    assert f"expected {wrong} (catalogue), got {sha(TEXT)}" in outcome.detail
    assert not (tmp_path / "corpus.txt").exists() and not list(tmp_path.rglob("*.part"))
    assert not (tmp_path / ".fetched.json").exists()


def test_a_present_file_that_differs_is_left_alone_unless_forced(server, tmp_path):
    server.add("corpus.txt", TEXT)
    known = entry("corpus", server.url("corpus.txt"), sha256=sha(TEXT), target="corpus.txt")
    (tmp_path / "corpus.txt").write_bytes(b"my own edit\n")
    (outcome,) = run([known], tmp_path).outcomes
    assert outcome.action == "failed" and "exists but its sha256 is" in outcome.detail
    assert "pass --force to replace it" in outcome.detail
    assert (tmp_path / "corpus.txt").read_bytes() == b"my own edit\n" and not server.requests
    run([known], tmp_path, force=True)
    assert (tmp_path / "corpus.txt").read_bytes() == TEXT


def test_without_a_published_checksum_the_first_download_is_recorded_and_enforced(server, tmp_path):
    server.add("wiki.txt", TEXT)
    tofu = entry("wiki", server.url("wiki.txt"), target="wiki.txt")
    (first,) = run([tofu], tmp_path).outcomes
    assert f"no published sha256: recorded {sha(TEXT)}" in first.detail
    record = json.loads((tmp_path / ".fetched.json").read_text())["files"]["wiki.txt"]
    assert (record["sha256"], record["checksum"]) == (sha(TEXT), "first use")

    (again,) = run([tofu], tmp_path).outcomes
    assert again.detail == "already present, sha256 verified (recorded on first use, " + (
        f"{record['fetched_at'][:10]}, from {server.url('wiki.txt')})"
    )

    server.add("wiki.txt", TEXT + b"changed upstream\n")
    (changed,) = run([tofu], tmp_path, force=True).outcomes
    assert changed.action == "failed" and f"expected {sha(TEXT)} (recorded on first use" in (
        changed.detail
    )
    assert "delete the 'wiki.txt' record" in changed.detail
    assert (tmp_path / "wiki.txt").read_bytes() == TEXT


def test_a_file_copied_in_by_hand_without_a_checksum_is_reported_unverified(server, tmp_path):
    tofu = entry("wiki", server.url("wiki.txt"), target="wiki.txt")
    (tmp_path / "wiki.txt").write_bytes(TEXT)
    (outcome,) = run([tofu], tmp_path).outcomes
    assert outcome.action == "present" and outcome.detail.startswith("present, not verified")
    assert not server.requests


def test_archive_members_are_extracted_verified_and_the_archive_removed(server, tmp_path):
    files = {"pack/a.txt": b"alpha\n", "pack/b.txt": b"beta\n", "pack/script.pl": b"print 1\n"}
    archive = tgz(files)
    server.add("pack.tgz", archive, ranges=False, drop_after=40)
    members = tuple(
        Member(f"pack/{n}", f"out/{n}", sha(files[f"pack/{n}"])) for n in ("a.txt", "b.txt")
    )
    packed = entry("pack", server.url("pack.tgz"), sha256=sha(archive), members=members)
    (outcome,) = run([packed], tmp_path).outcomes
    assert outcome.action == "downloaded", outcome.detail
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.txt", "b.txt"]
    assert (tmp_path / "out" / "b.txt").read_bytes() == b"beta\n"
    assert not (tmp_path / ".downloads" / "pack.tgz.part").exists()
    records = json.loads((tmp_path / ".fetched.json").read_text())["files"]
    assert records["out/a.txt"]["member"] == "pack/a.txt"
    assert records["out/a.txt"]["archive_sha256"] == sha(archive)
    assert run([packed], tmp_path).outcomes[0].action == "present"


def test_an_archive_member_with_the_wrong_checksum_is_not_written(server, tmp_path):
    archive = tgz({"pack/a.txt": b"alpha\n"})
    server.add("pack.tgz", archive)
    members = (Member("pack/a.txt", "out/a.txt", "f" * 64),)
    packed = entry("pack", server.url("pack.tgz"), sha256=sha(archive), members=members)
    (outcome,) = run([packed], tmp_path).outcomes
    assert outcome.action == "failed"
    assert f"sha256 mismatch for {tmp_path / 'out' / 'a.txt'} (pack/a.txt in " in outcome.detail
    assert not (tmp_path / "out" / "a.txt").exists()
    missing = replace(packed, members=(Member("pack/zzz.txt", "out/z.txt", "f" * 64),))
    (outcome,) = run([missing], tmp_path).outcomes
    assert "has no member pack/zzz.txt" in outcome.detail


def test_a_failing_entry_does_not_stop_the_others(server, tmp_path):
    server.add("ok.txt", TEXT)
    broken = entry("broken", server.url("gone.txt"), target="gone.txt")
    fine = entry("fine", server.url("ok.txt"), target="ok.txt")
    report = run([broken, fine], tmp_path)
    assert [o.action for o in report.outcomes] == ["failed", "downloaded"]
    assert "HTTP 404 Not Found" in report.outcomes[0].detail
    assert [o.entry.name for o in report.failures] == ["broken"]


def test_offline_on_the_first_file_stops_at_once_and_says_what_to_do(server, tmp_path):
    dead = closed_port_url()
    entries = [
        entry("wiki", f"{dead}/wiki.txt", target="wiki.txt"),
        entry("pack", f"{dead}/pack.tgz", members=(Member("p/a", "sts/a", "0" * 64),)),
    ]
    with pytest.raises(OfflineError) as caught:
        run(entries, tmp_path)
    message = str(caught.value)
    assert message.startswith(f"cannot connect to any source of wiki.txt ({dead}/wiki.txt: ")
    width = len(f"{tmp_path}/sts/ (1 files)")
    assert f"      {tmp_path / 'wiki.txt'!s:<{width}}  wiki\n" in message
    assert f"      {tmp_path}/sts/ (1 files)  pack\n" in message
    for advice in ("--set corpus.path=", "HF_ENDPOINT=", "--mirror URL", "CSEAUG_DATA_MIRROR"):
        assert advice in message
    assert message.count("looks offline") == 1


def test_offline_help_lists_only_what_is_still_missing(tmp_path):
    (tmp_path / "here.txt").write_bytes(TEXT)
    dead = closed_port_url()
    present = entry("here", f"{dead}/here.txt", sha256=sha(TEXT), target="here.txt")
    missing = entry("gone", f"{dead}/gone.txt", target="gone.txt")
    with pytest.raises(OfflineError) as caught:
        run([present, missing], tmp_path)
    assert "gone.txt" in str(caught.value) and "here.txt" not in str(caught.value)


def test_hf_hub_offline_is_offline_for_hub_files_without_a_request(tmp_path):
    (wiki,) = select(["wiki1m"])
    with pytest.raises(OfflineError) as caught:
        fetch([wiki], tmp_path, environ={"HF_HUB_OFFLINE": "1"})
    assert str(caught.value).startswith(
        "cannot connect to any source of wiki1m_for_simcse.txt (the Hugging Face hub: "
        "HF_HUB_OFFLINE is set; unset it, or use --mirror)."
    )


def test_an_unreachable_source_after_others_worked_is_one_failure(server, tmp_path):
    server.add("ok.txt", TEXT)
    fine = entry("fine", server.url("ok.txt"), target="ok.txt")
    dead = entry("dead", closed_port_url() + "/x.txt", target="x.txt")
    report = run([fine, dead], tmp_path)
    assert [o.action for o in report.outcomes] == ["downloaded", "failed"]


def test_a_second_fetch_into_the_same_directory_is_refused(server, tmp_path):
    from cseaug.fetch.fetcher import _exclusive

    with _exclusive(tmp_path), pytest.raises(DownloadError, match="another `cseaug data fetch`"):
        run([entry("x", server.url("x.txt"), target="x.txt")], tmp_path)


def test_presence_says_present_missing_partial_or_resumable(tmp_path):
    plain = entry("plain", "http://unused/f.txt", target="f.txt")
    assert presence(plain, tmp_path) == "missing"
    (tmp_path / "f.txt.part").write_bytes(b"x" * 2000)
    assert presence(plain, tmp_path) == "missing (2.0 kB downloaded, resumable)"
    (tmp_path / "f.txt").write_bytes(b"x" * 3000)
    assert presence(plain, tmp_path) == "present (3.0 kB)"
    members = (Member("a", "d/a", "0" * 64), Member("b", "d/b", "0" * 64))
    packed = entry("packed", "http://unused/p.tgz", members=members)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a").write_bytes(b"a")
    assert presence(packed, tmp_path) == "partial (1 of 2 files)"


def folder_entry(name: str, base: str, files: dict[str, bytes]) -> Entry:
    members = tuple(Member(f, f"{name}/{f}", sha(data)) for f, data in files.items())
    return entry(name, base, filename=name, files=members)


def test_a_folder_entry_fetches_each_file_verified_and_only_the_missing_ones(
    server, tmp_path: Path
) -> None:
    files = {"STS.input.a.txt": b"x\ty\n", "STS.gs.a.txt": b"4.0\n"}
    for name, data in files.items():
        server.add(f"STS/{name}", data)
    folder = folder_entry("sts", server.url("STS"), files)

    report = run([folder], tmp_path)
    assert report.outcomes[0].action == "downloaded"
    assert "downloaded 2 of 2 files" in report.outcomes[0].detail
    assert {f: (tmp_path / "sts" / f).read_bytes() for f in files} == files
    records = json.loads((tmp_path / ".fetched.json").read_text())["files"]
    assert records["sts/STS.gs.a.txt"]["checksum"] == "catalogue"

    (tmp_path / "sts" / "STS.gs.a.txt").unlink()
    again = run([folder], tmp_path)
    assert "downloaded 1 of 2 files" in again.outcomes[0].detail  # only the missing one
    assert len(server.sent_for("STS/STS.input.a.txt")) == 1
    assert run([folder], tmp_path).outcomes[0].action == "present"


def test_a_folder_file_with_another_sha256_is_deleted_and_fails(server, tmp_path: Path) -> None:
    server.add("STS/STS.gs.a.txt", b"5.0\n")
    folder = folder_entry("sts", server.url("STS"), {"STS.gs.a.txt": b"4.0\n"})
    outcome = run([folder], tmp_path).outcomes[0]
    assert outcome.action == "failed" and "sha256 mismatch for" in outcome.detail
    assert not list((tmp_path / "sts").glob("*"))


def test_a_mirror_serves_a_folder_entry_under_its_folder_name(server, tmp_path: Path) -> None:
    server.add("sts/STS.gs.a.txt", b"4.0\n")
    folder = folder_entry("sts", "http://127.0.0.1:9/unused", {"STS.gs.a.txt": b"4.0\n"})
    run([folder], tmp_path, mirror=server.base_url)
    assert (tmp_path / "sts" / "STS.gs.a.txt").read_bytes() == b"4.0\n"


def test_no_lock_file_is_left_behind_and_a_second_fetch_still_runs(server, tmp_path: Path) -> None:
    server.add("a.txt", TEXT)
    run([entry("a", server.url("a.txt"), target="a.txt")], tmp_path)
    assert not (tmp_path / ".fetch.lock").exists()
    assert run([entry("a", server.url("a.txt"), target="a.txt")], tmp_path).outcomes


@pytest.mark.shared_data
def test_the_evaluation_sets_fetched_are_the_layout_the_trainer_reads(
    server, shared_data: Path, tmp_path: Path
) -> None:
    from cseaug.fetch.catalog import EVALUATION_ENTRIES
    from cseaug.trainer.evaluation import read_eval_set

    for folder in EVALUATION_ENTRIES:  # serve the shared copies, byte for byte, as a mirror
        for member in folder.files:
            body = (shared_data / member.target).read_bytes()
            server.add(f"{folder.filename}/{member.name}", body)
    report = run(list(EVALUATION_ENTRIES), tmp_path, mirror=server.base_url)
    assert [o.action for o in report.outcomes] == ["downloaded"] * len(EVALUATION_ENTRIES)
    sizes = {
        "STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186,
        "STS-B": 1379, "SICK-R": 4927,
    }  # fmt: skip
    assert {name: read_eval_set(tmp_path, name).num_rows for name in sizes} == sizes
    assert read_eval_set(tmp_path, "STS-B", "dev").num_rows == 1500
    assert read_eval_set(tmp_path, "SICK-R", "dev").num_rows == 500
