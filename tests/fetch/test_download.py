"""Resumable downloads against a real HTTP server on 127.0.0.1 (tests/fake_file_server.py)."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from cseaug.errors import DownloadError
from cseaug.fetch.download import RetryPolicy, UnreachableError, download
from tests.fake_file_server import FakeFileServer, closed_port_url

BODY = os.urandom(300_000)  # several read chunks' worth, so a drop lands mid-file
SHA = hashlib.sha256(BODY).hexdigest()
FAST = RetryPolicy(attempts=3, backoff_s=0.0, timeout_s=5.0)


@pytest.fixture
def server():
    with FakeFileServer() as running:
        yield running


def test_fresh_download_writes_the_part_file_and_reports_its_sha256(server, tmp_path):
    server.add("f.bin", BODY)
    part = tmp_path / "sub" / "f.bin.part"
    got = download([server.url("f.bin")], part, label="f.bin", policy=FAST)
    assert part.read_bytes() == BODY
    assert (got.sha256, got.size, got.resumed_from) == (SHA, len(BODY), 0)
    assert [r.range for r in server.sent_for("f.bin")] == [None]


def test_resumes_a_part_file_with_a_range_request(server, tmp_path):
    server.add("f.bin", BODY)
    part = tmp_path / "f.bin.part"
    part.write_bytes(BODY[:100_000])
    got = download([server.url("f.bin")], part, label="f.bin", policy=FAST)
    assert part.read_bytes() == BODY and got.sha256 == SHA and got.resumed_from == 100_000
    (request,) = server.sent_for("f.bin")
    assert (request.range, request.status, request.sent) == ("bytes=100000-", 206, 200_000)


def test_restarts_from_zero_when_the_server_ignores_range(server, tmp_path):
    server.add("f.bin", BODY, ranges=False)
    part = tmp_path / "f.bin.part"
    part.write_bytes(b"stale bytes that must not stay in front")
    got = download([server.url("f.bin")], part, label="f.bin", policy=FAST)
    assert part.read_bytes() == BODY and got.sha256 == SHA and got.resumed_from == 0
    (request,) = server.sent_for("f.bin")
    assert (request.range, request.status) == ("bytes=39-", 200)


def test_a_dropped_connection_resumes_where_it_stopped(server, tmp_path):
    server.add("f.bin", BODY, drop_after=120_000)
    part = tmp_path / "f.bin.part"
    got = download([server.url("f.bin")], part, label="f.bin", policy=FAST)
    assert part.read_bytes() == BODY and got.sha256 == SHA
    first, second = server.sent_for("f.bin")
    assert (first.range, first.sent) == (None, 120_000)
    assert (second.range, second.status, second.sent) == ("bytes=120000-", 206, 180_000)


def test_a_read_timeout_mid_file_resumes_where_it_stopped(server, tmp_path):
    server.add("f.bin", BODY, stall_after=70_000, stall_s=1.0)
    policy = RetryPolicy(attempts=2, backoff_s=0.0, timeout_s=0.3)
    got = download([server.url("f.bin")], tmp_path / "p", label="f.bin", policy=policy)
    assert got.sha256 == SHA
    assert [r.range for r in server.sent_for("f.bin")] == [None, "bytes=70000-"]


def test_a_dropped_connection_without_range_support_starts_over(server, tmp_path):
    server.add("f.bin", BODY, ranges=False, drop_after=50_000)
    part = tmp_path / "f.bin.part"
    got = download([server.url("f.bin")], part, label="f.bin", policy=FAST)
    assert part.read_bytes() == BODY and got.sha256 == SHA
    assert [r.sent for r in server.sent_for("f.bin")] == [50_000, len(BODY)]


def test_transient_server_errors_are_retried(server, tmp_path):
    server.add("f.bin", BODY, fail_first=2)
    got = download([server.url("f.bin")], tmp_path / "p", label="f.bin", policy=FAST)
    assert got.sha256 == SHA
    assert [r.status for r in server.sent_for("f.bin")] == [503, 503, 200]


def test_retries_stop_after_the_attempts_without_progress(server, tmp_path):
    server.add("f.bin", BODY, fail_first=10)
    with pytest.raises(DownloadError, match=r"HTTP 503 .*gave up after 3 attempts"):
        download([server.url("f.bin")], tmp_path / "p", label="f.bin", policy=FAST)
    assert len(server.sent_for("f.bin")) == 3


def test_backoff_pauses_grow_between_attempts(server, tmp_path):
    server.add("f.bin", BODY, fail_first=2)
    policy = RetryPolicy(attempts=3, backoff_s=0.2, max_backoff_s=1.0, timeout_s=5.0)
    started = time.perf_counter()
    download([server.url("f.bin")], tmp_path / "p", label="f.bin", policy=policy)
    # pauses of 0.1-0.2 s then 0.2-0.4 s (jitter between half and all of each step)
    assert 0.3 <= time.perf_counter() - started < 2.0


def test_falls_through_mirrors_on_404_and_refused_connections(server, tmp_path):
    server.add("good/f.bin", BODY)
    urls = [closed_port_url() + "/f.bin", server.url("missing/f.bin"), server.url("good/f.bin")]
    got = download(urls, tmp_path / "p", label="f.bin", policy=FAST)
    assert got.url == server.url("good/f.bin") and got.sha256 == SHA


def test_every_mirror_failing_names_each_url_and_reason(server, tmp_path):
    urls = [server.url("a/f.bin"), server.url("b/f.bin")]
    with pytest.raises(DownloadError) as caught:
        download(urls, tmp_path / "p", label="f.bin", policy=FAST)
    assert not isinstance(caught.value, UnreachableError)
    assert str(caught.value) == (
        f"could not download f.bin: {urls[0]}: HTTP 404 Not Found; {urls[1]}: HTTP 404 Not Found"
    )


def test_no_url_connecting_raises_unreachable_quickly(tmp_path):
    url = closed_port_url() + "/f.bin"
    started = time.perf_counter()
    with pytest.raises(UnreachableError, match=r"cannot connect to any source of f\.bin"):
        download([url], tmp_path / "p", label="f.bin", policy=RetryPolicy(backoff_s=5.0))
    assert time.perf_counter() - started < 2.0  # no retries, no backoff for a refused connection


def test_redirects_are_followed_with_the_range_header(server, tmp_path):
    server.add("cdn/f.bin", BODY)
    server.add("resolve/f.bin", b"", redirect_to=server.url("cdn/f.bin"))
    part = tmp_path / "p"
    part.write_bytes(BODY[:1000])
    got = download([server.url("resolve/f.bin")], part, label="f.bin", policy=FAST)
    assert got.sha256 == SHA
    assert [(r.path, r.range) for r in server.requests] == [
        ("resolve/f.bin", "bytes=1000-"),
        ("cdn/f.bin", "bytes=1000-"),
    ]


def test_a_part_file_that_is_already_complete_is_not_downloaded_again(server, tmp_path):
    server.add("f.bin", BODY)
    part = tmp_path / "p"
    part.write_bytes(BODY)
    got = download([server.url("f.bin")], part, label="f.bin", policy=FAST)
    assert (got.sha256, got.size) == (SHA, len(BODY))
    assert [r.status for r in server.sent_for("f.bin")] == [416]


def test_a_part_file_longer_than_the_file_starts_over(server, tmp_path):
    server.add("f.bin", BODY)
    part = tmp_path / "p"
    part.write_bytes(BODY + b"tail")
    got = download([server.url("f.bin")], part, label="f.bin", policy=FAST)
    assert got.sha256 == SHA and part.read_bytes() == BODY


def test_file_urls_work_and_a_missing_file_is_not_retried(tmp_path):
    source = tmp_path / "mirror" / "f.bin"
    source.parent.mkdir()
    source.write_bytes(BODY)
    got = download([source.as_uri()], tmp_path / "p", label="f.bin", policy=RetryPolicy())
    assert got.sha256 == SHA
    started = time.perf_counter()
    with pytest.raises(DownloadError, match="No such file"):
        download([(tmp_path / "nope").as_uri()], tmp_path / "q", label="x", policy=RetryPolicy())
    assert time.perf_counter() - started < 1.0
