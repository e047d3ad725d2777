"""The at-scale build benchmark's own parts (issue 12, "Benchmarks"): the peak memory it
reports, the 20k-sentence corpus it builds from ../shared, and the loopback server's model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from bench_build_at_scale import numbered_corpus  # noqa: E402
from bench_build_end_to_end import REPO, overrides  # noqa: E402
from process_memory import run_sampled  # noqa: E402

from tests.fake_openai_server import DEFAULT_MODELS  # noqa: E402

# a child that starts a grandchild holding 200 MiB, then holds 50 MiB itself until it ends
HOLDERS = """
import subprocess, sys, time
hold = "b = bytearray({mib} * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep({s})"
child = subprocess.Popen([sys.executable, "-c", "import time; " + hold.format(mib=200, s=1.5)])
exec(hold.format(mib=50, s=0.1))
child.wait()
print("done")
"""


def test_peak_memory_counts_the_whole_process_tree() -> None:
    done, memory = run_sampled([sys.executable, "-c", HOLDERS], interval=0.1)
    assert done.returncode == 0 and done.stdout.strip() == "done"
    assert memory.tree_peak_mib >= 250  # the grandchild's 200 MiB + the child's 50 MiB at once
    assert 200 <= memory.largest_mib < memory.tree_peak_mib  # one process: the grandchild


def test_the_numbered_corpus_gives_the_shipped_config_its_20k_samples(
    shared_data: Path, tmp_path: Path
) -> None:
    """24,000 lines from 11,914 sentences: enough survive cleaning and exact dedup for 20,000."""
    from cseaug.config import load_config
    from cseaug.corpus.prepare import prepare_corpus

    corpus = tmp_path / "corpus.txt"
    assert "Wikipedia" in numbered_corpus(corpus, 24_000)
    lines = corpus.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 24_000  # distinct but for the Wikipedia file's own repeats
    assert lines[11_914].endswith(" (copy 2)") and lines[23_999].endswith(" (copy 3)")
    cfg = load_config(REPO / "configs" / "wiki-sts.yaml", [f"corpus.path={corpus}"])
    assert cfg.sample.size == 20_000
    assert len(prepare_corpus(cfg.corpus, cfg.sample, cfg.method).sample) == 20_000


def test_the_build_benchmarks_ask_for_a_model_the_loopback_server_serves(tmp_path: Path) -> None:
    """The build probes ``llm.model`` against ``GET /v1/models`` and refuses an unknown one."""
    args = argparse.Namespace(samples=10, concurrency=4, cs_sample=None, encoder=None, set=[])
    settings = dict(s.split("=", 1) for s in overrides(args, tmp_path, tmp_path, "http://x/v1"))
    assert settings["llm.model"] in {model["id"] for model in DEFAULT_MODELS}
