"""Progress off a terminal (issue 22, item 4): a line every few seconds, never silence."""

from __future__ import annotations

import time

import pytest

from cseaug import progress
from cseaug.progress import progress_bar


@pytest.fixture
def off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stderr is captured by pytest (not a terminal), CSEAUG_PROGRESS unset, lines every 50 ms."""
    monkeypatch.delenv("CSEAUG_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.05)


@pytest.mark.usefixtures("off_a_terminal")
def test_a_long_step_off_a_terminal_writes_a_line_every_interval_and_one_at_its_end(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: nothing at all for as long as the step ran."""
    with progress_bar("Diagnostics", total=4, unit="rows") as bar:
        for _ in range(4):
            time.sleep(0.12)
            bar.advance()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 4, lines
    assert all(line.startswith("Diagnostics: ") and " rows (" in line for line in lines)
    done = [int(line.split(": ")[1].split("/")[0]) for line in lines]
    assert done == sorted(done) and 0 < done[len(done) // 2] < 4
    assert lines[-1].startswith("Diagnostics: 4/4 rows (100%), ")


@pytest.mark.usefixtures("off_a_terminal")
def test_a_short_step_or_progress_switched_off_writes_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with progress_bar("Cleaning", total=2, unit="lines") as bar:
        bar.advance(2)
    monkeypatch.setenv("CSEAUG_PROGRESS", "0")
    with progress_bar("Diagnostics", total=1, unit="rows") as bar:
        time.sleep(0.2)
        bar.advance()
    assert capsys.readouterr().err == ""


@pytest.mark.usefixtures("off_a_terminal")
def test_a_failed_step_writes_no_end_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RuntimeError), progress_bar("Exporting", total=3, unit="rows") as bar:
        time.sleep(0.12)
        bar.advance()
        raise RuntimeError("disk full")
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith("Exporting: ") for line in lines)
    assert not any("(100%)" in line for line in lines)
