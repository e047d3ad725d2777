"""Real sentence pairs of ``../shared/data`` for the per-row checks' tests and measurements."""

from __future__ import annotations

from pathlib import Path

STS12_TASKS = ("MSRpar", "MSRvid", "SMTeuroparl")


def sts_pairs(shared_data: Path) -> list[tuple[float, str, str]]:
    """(gold score 0-5, sentence 1, sentence 2) of the STS-B train split and STS12 train."""
    pairs = []
    stsb = shared_data / "stsbenchmark" / "sts-train.csv"
    for line in stsb.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) >= 7:
            pairs.append((float(fields[4]), fields[5], fields[6]))
    for task in STS12_TASKS:
        folder = shared_data / "sts12_train"
        scores = (folder / f"STS.gs.{task}.txt").read_text(encoding="utf-8").split()
        lines = (folder / f"STS.input.{task}.txt").read_text(encoding="utf-8").splitlines()
        for score, line in zip(scores, lines, strict=True):
            first, second = line.split("\t")[:2]
            pairs.append((float(score), first, second))
    return pairs


def wiki_sentences(shared_data: Path, n: int) -> list[str]:
    """The first ``n`` non-empty lines of the wiki1m sample."""
    path = shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt"
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line][:n]
