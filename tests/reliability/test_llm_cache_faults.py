"""The response cache under damage: a broken file, an edited answer, a full disk (issue 21).

The cache holds answers that were paid for: damage is reported in one line and never
"repaired" by deleting the file; an answer edited in it is not published; a full disk
keeps every answer committed before it.
"""

from __future__ import annotations

import errno
import json
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cseaug.errors import CseaugError, expected_os_error, os_error_message
from cseaug.hashing import json_sha256
from cseaug.llm.cache import SCHEMA_VERSION, CachedBackend, ResponseCache, answer_digest
from cseaug.llm.openai_backend import OpenAIBackend
from cseaug.sqlite_files import DamagedFileError
from tests.fake_openai_server import FakeOpenAIServer
from tests.llm.helpers import ask
from tests.reliability.test_llm_faults import SENTENCES, VIEWS, build, config

pytestmark = pytest.mark.reliability

PROMPTS = [f"sentence number {i} " + "word " * 40 for i in range(300)]
"""Enough answers for a cache file of many pages."""


def cached_backend(server: FakeOpenAIServer, path: Path) -> CachedBackend:
    inner = OpenAIBackend(
        "fake", {"max_tokens": 64}, name="openai-compatible", base_url=server.base_url
    )
    return CachedBackend(inner, path)


def filled_cache(server: FakeOpenAIServer, path: Path) -> None:
    """A cache file holding an answer to each of :data:`PROMPTS`, closed (WAL checkpointed)."""
    backend = cached_backend(server, path)
    assert all(r.ok for r in backend.generate([ask(p) for p in PROMPTS]))
    backend.close()


def truncate_to_half(path: Path) -> None:
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)


def overwrite_header(path: Path) -> None:
    with path.open("r+b") as file:
        file.write(b"this is no database file at all" * 4)


def overwrite_pages(path: Path) -> None:
    """Garbage over every page but the first (the schema's)."""
    size = path.stat().st_size
    with path.open("r+b") as file:
        file.seek(4096)
        file.write(b"\x7f" * (size - 4096))


@pytest.mark.parametrize(
    "damage",
    [truncate_to_half, overwrite_header, overwrite_pages],
    ids=["truncated", "header overwritten", "pages overwritten"],
)
def test_a_damaged_cache_file_is_one_line_naming_it_and_how_to_set_it_aside(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    """Proves 21.9: a cache file cut in half or overwritten ends the work with one line (a
    CseaugError: exit status 2, no traceback) naming the file and the command that sets it
    aside, instead of a ``sqlite3.DatabaseError`` traceback; the file is left as it was (it
    holds paid answers), and once set aside as told, a rerun works."""
    path = tmp_path / "llm.sqlite"
    with FakeOpenAIServer() as server:
        filled_cache(server, path)
        damage(path)
        size = path.stat().st_size
        with pytest.raises(DamagedFileError) as damaged:
            cached_backend(server, path).generate([ask(p) for p in PROMPTS])
        message = str(damaged.value)
        assert isinstance(damaged.value, CseaugError) and "\n" not in message
        assert f"`mv {path} {path}.damaged`" in message and "is damaged" in message
        assert path.stat().st_size == size

        path.rename(path.with_name("llm.sqlite.damaged"))
        assert all(r.ok for r in cached_backend(server, path).generate([ask("again")]))


def test_an_answer_edited_in_the_cache_is_asked_again_and_counted(tmp_path: Path) -> None:
    """Proves 21.9: an answer edited inside the cache file fails its digest check: it is not
    returned (it was published as is before), the request is sent again, the fresh answer
    replaces it, and the backend's usage counts the mismatch (``cache_mismatched``, which
    goes to the manifest's token usage)."""
    path = tmp_path / "llm.sqlite"
    with FakeOpenAIServer(echo_only=True) as server:  # answers compared with their echo
        backend = cached_backend(server, path)
        backend.generate([ask("one"), ask("two")])
        with sqlite3.connect(path) as db:
            db.execute("UPDATE responses SET text = 'BUY CHEAP PILLS' WHERE text = 'echo: one'")
        one, two = backend.generate([ask("one"), ask("two")])
        assert (one.text, one.cached, two.cached) == ("echo: one", False, True)
        assert server.counts["one"] == 2 and server.counts["two"] == 1
        assert backend.usage.as_dict()["cache_mismatched"] == 1
        again = backend.generate([ask("one")])  # repaired: read from the cache now
        assert again[0].cached and server.counts["one"] == 2


def test_a_cache_of_an_earlier_version_gets_digests_and_keeps_its_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proves 21.9's migration: a cache file written before answers had digests is opened,
    gets the column (a page of 2 answers at a time here), and its answers (trusted once) are
    served without a request; an edit made after that is caught like any other."""
    monkeypatch.setattr("cseaug.llm.cache._MIGRATION_PAGE", 2)
    path = tmp_path / "llm.sqlite"
    prompts = [ask(f"old {i}") for i in range(5)]
    with FakeOpenAIServer(echo_only=True) as server:  # answers compared with their echo
        backend = cached_backend(server, path)
        backend.generate(prompts)
        backend.close()
        with sqlite3.connect(path) as db:  # the schema of the earlier version
            db.execute("ALTER TABLE responses DROP COLUMN digest")
            db.execute("PRAGMA user_version = 0")
        answers = cached_backend(server, path).generate(prompts)
        assert all(a.cached for a in answers) and answers[0].text == "echo: old 0"
        assert server.state.total == len(prompts)
        with sqlite3.connect(path) as db:
            missing = db.execute("SELECT COUNT(*) FROM responses WHERE digest IS NULL")
            assert missing.fetchone() == (0,)
            db.execute("UPDATE responses SET completion_tokens = 999")
        again = cached_backend(server, path).generate(prompts)
        assert not any(a.cached for a in again)


def _edit_answers(path: Path, version: int, digest: Callable[[list[Any]], str] | None) -> None:
    """Every stored answer in ``path`` made ``BUY CHEAP PILLS``, its digest recomputed with
    ``digest`` (None: the column dropped), the schema version set to ``version``."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT hash, prompt_tokens, completion_tokens FROM responses")
        for request, prompt, completion in rows.fetchall():
            answer = [request, "BUY CHEAP PILLS", prompt, completion]
            db.execute(
                "UPDATE responses SET text = ?, digest = ? WHERE hash = ?",
                (answer[1], digest and digest(answer), request),
            )
        if digest is None:
            db.execute("ALTER TABLE responses DROP COLUMN digest")
        db.execute(f"PRAGMA user_version = {version}")


@pytest.mark.parametrize(
    "recompute",
    [
        lambda answer: json_sha256(answer),
        lambda answer: answer_digest(b"another user's key", *answer),
    ],
    ids=["plain sha256", "the project's function under another key"],
)
def test_an_answer_edited_with_its_digest_recomputed_is_asked_again(
    tmp_path: Path, recompute: Callable[[list[Any]], str]
) -> None:
    """Proves 32.4: an answer edited in the cache with its digest recomputed by the project's
    own function was published without a warning; digests are keyed (HMAC-SHA256) with a key
    kept outside the cache (the user's config dir or CSEAUG_CACHE_KEY), so whoever can write
    the cache but not read that key cannot make an edit match: the answer is asked again."""
    path = tmp_path / "llm.sqlite"
    with FakeOpenAIServer(echo_only=True) as server:
        cached_backend(server, path).generate([ask("one")])
        _edit_answers(path, SCHEMA_VERSION, recompute)
        backend = cached_backend(server, path)
        (one,) = backend.generate([ask("one")])
    assert (one.text, one.cached, server.counts["one"]) == ("echo: one", False, 2)
    assert backend.usage.as_dict()["cache_mismatched"] == 1


@pytest.mark.parametrize(
    "version, digest",
    [(SCHEMA_VERSION, None), (0, None), (0, lambda answer: json_sha256(answer))],
    ids=["digest column dropped", "and version reset", "old plain digest and version reset"],
)
def test_a_cache_made_to_look_older_is_refused_or_announced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, version: int, digest: Any
) -> None:
    """Proves 32.4: a cache whose digest column was dropped was taken for one of an earlier
    version and its edited answers given digests silently. The schema version is recorded:
    a file of this version is never upgraded (one line: set it aside); a file made to look
    like one of an earlier version (version reset too) is upgraded with a warning naming the
    file and how many answers are trusted as they are."""
    path = tmp_path / "llm.sqlite"
    with FakeOpenAIServer(echo_only=True) as server:
        cached_backend(server, path).generate([ask("one"), ask("two")])
        _edit_answers(path, version, digest)
        if version == SCHEMA_VERSION:
            with pytest.raises(DamagedFileError) as refused:
                cached_backend(server, path)
            message = str(refused.value)
            assert "\n" not in message and f"`mv {path} {path}.damaged`" in message
            return
        with caplog.at_level(logging.WARNING, logger="cseaug.llm.cache"):
            cached_backend(server, path).close()
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert str(path) in warning and "2 stored answers are trusted as they are" in warning


def test_a_full_disk_while_answers_are_stored_is_one_line_and_keeps_what_was_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proves 21.10: the disk fills up while a build stores its answers (SQLite's own
    ``database or disk is full``: after 5 answers, the cache file may not grow). The build ends with an
    ``OSError`` ``ENOSPC`` naming the cache file, which the CLI prints as one line with exit
    status 2 (as every full disk), not an ``OperationalError`` traceback; every answer
    committed before stays, and the rerun on a disk with room asks only for the others."""
    store = ResponseCache.put
    room_for = 5  # answers stored before the disk is full

    def on_a_filling_disk(self: ResponseCache, *args: Any, **kwargs: Any) -> None:
        nonlocal room_for
        store(self, *args, **kwargs)
        room_for -= 1
        if room_for == 0:  # from now on the file cannot grow by a page
            pages = self._conn.execute("PRAGMA page_count").fetchone()[0]
            self._conn.execute(f"PRAGMA max_page_count = {pages}")

    with FakeOpenAIServer() as server:
        cfg = config(tmp_path, server.base_url, concurrency=2)
        monkeypatch.setattr(ResponseCache, "put", on_a_filling_disk)
        with pytest.raises(OSError) as full:
            build(cfg)
        assert full.value.errno == errno.ENOSPC and expected_os_error(full.value)
        line = os_error_message(full.value)
        assert line.startswith(f"{cfg.cache_path}: no space left on device") and "\n" not in line
        monkeypatch.undo()

        kept = len(ResponseCache(cfg.cache_path))
        assert 5 <= kept < len(SENTENCES) * VIEWS
        sent = server.state.total
        _, summary = build(cfg)
        assert summary.aigen == len(SENTENCES)
        assert server.state.total - sent == len(SENTENCES) * VIEWS - kept
        usage = json.loads((summary.version_dir / "manifest.json").read_text())["token_usage"]
        assert usage["this_run"]["cached"] == kept


@pytest.mark.prefect
@pytest.mark.slow
def test_cseaug_build_on_a_damaged_cache_prints_one_line_and_keeps_the_file(
    tmp_path: Path,
) -> None:
    """Proves 21.9 as a user meets it: `cseaug build` whose cache file is damaged ends with exit
    status 2 and one `error:` line naming the file and the `mv` that sets it aside, without a
    traceback (it printed a ``sqlite3.DatabaseError`` traceback and exited 1 before); the file
    is untouched."""
    from tests.reliability.attack_tools import REPO, RecordingProxy, build_environment, run_cseaug

    cache = tmp_path / "llm.sqlite"
    cache.write_bytes(b"this is no database file at all" * 200)
    with FakeOpenAIServer() as server, RecordingProxy() as proxy:
        args = ["build", "--config", str(REPO / "configs" / "demo.yaml")]
        for override in (
            f"corpus.path={REPO / 'examples' / 'demo_corpus.txt'}",
            "llm.backend=openai-compatible",
            f"llm.base_url={server.base_url}",
            "llm.model=fake",
            f"output.root={tmp_path / 'storage'}",
            f"execution.cache_path={cache}",
        ):
            args += ["--set", override]
        done = run_cseaug(args, build_environment(tmp_path / "prefect-home", proxy), tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert f"{cache} is damaged" in line and f"mv {cache} {cache}.damaged" in line
    assert cache.read_bytes() == b"this is no database file at all" * 200
