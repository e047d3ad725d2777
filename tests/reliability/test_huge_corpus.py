"""A huge or degenerate text corpus: refused early in one line, and a signal ends its reading.

A 50 GB sparse file of NUL bytes (``truncate``: free) given as the corpus was read for
minutes (``Cleaning wiki1m: 0 lines``: it has no line end) before anything was said, and a
SIGTERM while it was read ended the dry run about a minute later (the stop line hashed the
whole file to name the run store).
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cseaug.config import CorpusConfig, SampleConfig
from cseaug.corpus.prepare import prepare_corpus
from cseaug.errors import InputError
from tests.reliability.attack_tools import (
    CSEAUG,
    REPO,
    RecordingProxy,
    build_environment,
    start_command,
)
from tests.reliability.test_stopping import STOP_WITHIN_S, wait_for

pytestmark = pytest.mark.reliability

SPARSE_BYTES = 50 << 30


def build_command(corpus: Path, root: Path, *flags: str) -> list[str]:
    config = str(REPO / "configs" / "demo.yaml")
    overrides = ["--set", f"corpus.path={corpus}", "--set", f"output.root={root}"]
    return [str(CSEAUG), "build", "--config", config, *flags, *overrides]


def sparse_nul_file(path: Path, line_every: int | None = None) -> Path:
    """A 50 GB file of NUL bytes that takes no disk; ``line_every``: a line end every that
    many bytes (each one written: a 4 KiB block per line end)."""
    with path.open("wb") as file:
        file.truncate(SPARSE_BYTES)
        for offset in range(line_every or SPARSE_BYTES, SPARSE_BYTES, line_every or 1):
            file.seek(offset)
            file.write(b"\n")
    return path


def test_a_corpus_with_a_line_far_longer_than_any_sentence_is_refused_early(
    tmp_path: Path,
) -> None:
    """Proves 32.8 for each kind of degenerate text file: NUL bytes (plain or compressed),
    one line of 2 MiB after 1,000 sentences, bytes without a line end: refused with one
    InputError naming the file and the line, after reading at most a block past it; a
    larger ``corpus.max_chars`` raises the bound (4 bytes a character)."""
    sentences = b"".join(b"Sentence number %d is here.\n" % i for i in range(1000))
    cases = {
        "nul.txt": (b"\0" * (3 << 20), 1),
        "nul.txt.gz": (gzip.compress(b"\0" * (64 << 20), compresslevel=1), 1),
        "long-line.txt": (sentences + b"x" * (2 << 20) + b"\n" + sentences, 1001),
        "no-line-end.txt": (sentences + os.urandom(3 << 20).replace(b"\n", b" "), 1001),
    }
    for name, (data, line) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InputError) as refused:
            prepare_corpus(CorpusConfig(path=str(path)), SampleConfig(size=10), "sts")
        message = str(refused.value)
        assert "\n" not in message and str(path) in message, message
        assert f"line {line:,} is longer than 1,048,576 bytes" in message, message
    wide = CorpusConfig(path=str(tmp_path / "long-line.txt"), max_chars=1_000_000)
    assert prepare_corpus(wide, SampleConfig(size=10), "sts").stats["sentences"] == 1000


@pytest.mark.parametrize("flags", [("--dry-run",), ()], ids=["dry-run", "build"])
def test_a_50_gb_sparse_file_of_nul_bytes_is_refused_in_seconds(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    """Proves 32.8 as a user meets it: ``cseaug build`` (and its dry run) on a 50 GB file of
    NUL bytes ends with exit status 2 within seconds, naming the corpus's first line: the
    dry run read for minutes before, and a build hashed the whole file (~2 min) before it
    read a line; the preflight now reads the first line's bytes first."""
    corpus = sparse_nul_file(tmp_path / "wiki1m.txt")
    with RecordingProxy() as proxy:
        started = time.monotonic()
        done = subprocess.run(
            build_command(corpus, tmp_path / "storage", *flags),
            env=build_environment(tmp_path / "prefect-home", proxy),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        took = time.monotonic() - started
    assert done.returncode == 2, done.stdout + done.stderr
    refusal = f"corpus {corpus}: line 1 is longer than"
    if flags:  # the dry run: one line
        (line,) = [line for line in done.stderr.splitlines() if not line.startswith("note:")]
        assert line.startswith("error: the dry run cannot start: " + refusal), done.stderr
    else:  # the build's preflight lists every problem (the demo's model is not here either)
        assert f"  - {refusal}" in done.stderr, done.stderr
    assert took < 60, f"took {took:.0f} s"


@pytest.mark.slow
def test_a_signal_while_a_50_gb_corpus_is_read_ends_the_dry_run_within_seconds(
    tmp_path: Path,
) -> None:
    """Proves 32.8: SIGTERM while a dry run reads a 50 GB corpus (lines of NUL bytes, a line
    end every MiB: each line a reject, nothing to refuse early) ends it within 10 s, in one
    line, exit status 143 (it ended a minute later: the stop line hashed the whole file to
    name a run store a dry run never has)."""
    corpus = sparse_nul_file(tmp_path / "wiki1m.txt", line_every=1 << 20)
    with RecordingProxy() as proxy:
        run = start_command(
            build_command(corpus, tmp_path / "storage", "--dry-run"),
            build_environment(tmp_path / "prefect-home", proxy),
            tmp_path,
        )
        try:

            def reading() -> bool:  # the dry run holds the corpus open
                fds = Path(f"/proc/{run.pid}/fd")
                return any(os.path.realpath(fd) == str(corpus) for fd in fds.iterdir())

            wait_for(reading, 120, "reading the corpus")
            time.sleep(2)
            stopped_at = time.monotonic()
            run.send_signal(signal.SIGTERM)
            _, err = run.communicate(timeout=120)
            took = time.monotonic() - stopped_at
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 143, err[-3000:]
    assert took < STOP_WITHIN_S, f"the dry run took {took:.1f} s to stop"
    assert err.splitlines()[-1] == "stopped (SIGTERM): nothing to resume", err[-3000:]
