"""Two runs at once send each prompt once: in-flight claims shared through the cache (issue 8.6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cseaug.llm.cache import ResponseCache
from tests.fake_openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
BUILD = (
    "import json, sys\n"
    "from cseaug.pipeline.local import run_build\n"
    "from cseaug.config import RunConfig\n"
    "print(run_build(RunConfig.model_validate(json.load(open(sys.argv[1])))).aigen)\n"
)


def test_two_builds_started_together_send_each_prompt_once(tmp_path: Path) -> None:
    """Two `run_build` processes of one config, started at once against a slow server: every
    prompt reaches the server once, and both builds publish every row."""
    sentences = (REPO / "examples" / "demo_corpus.txt").read_text().splitlines()[:12]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences) + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    with FakeOpenAIServer(latency_s=0.15) as server:
        config = {
            "name": "together",
            "method": "sts",
            "corpus": {"path": str(corpus)},
            "sample": {"size": len(sentences)},
            "patterns": {"source": "paper"},
            "llm": {
                "backend": "openai-compatible",
                "base_url": server.base_url,
                "model": "fake",
                "concurrency": 3,
            },
            "output": {"root": str(tmp_path / "storage")},
            "diagnostics": {"enabled": False},
            "publish": {"min_pattern_share": 0},  # the fake answers are not graded
        }
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        command = [sys.executable, "-c", BUILD, str(path)]
        builds = [
            subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)
        ]
        outputs = [build.communicate(timeout=180)[0] for build in builds]
    assert [build.returncode for build in builds] == [0, 0]
    assert [int(out.strip().splitlines()[-1]) for out in outputs] == [len(sentences)] * 2
    assert sorted(server.counts) == sorted(sentences)
    assert set(server.counts.values()) == {3}  # three views of each sentence, each sent once


def test_a_claim_is_taken_over_when_its_lease_ran_out_or_its_owner_died(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    assert cache.claim(["a", "b"], "elsewhere:1:x", lease_s=60) == {"a", "b"}
    assert cache.claim(["a", "b", "c"], "me:2:y") == {"c"}  # a live owner on another host
    assert cache.claimed_by_others(["a", "b", "c"], "me:2:y") == {"a", "b"}
    assert cache.claim(["d"], "elsewhere:1:x", lease_s=-1) == {"d"}  # its lease has run out
    assert cache.claim(["d"], "me:2:y") == {"d"}
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True).stdout.strip()  # fmt: skip
    host_owner = f"{os.uname().nodename}:{dead}:z"
    assert cache.claim(["e"], host_owner) == {"e"}
    assert cache.claim(["e"], "me:2:y") == {"e"}  # its process is gone
    cache.close()


@pytest.mark.slow
def test_a_waiting_run_reads_the_answer_the_claim_holder_stores(tmp_path: Path) -> None:
    """The second run waits for a prompt the first one holds and takes its answer from the
    cache instead of sending it."""
    path = tmp_path / "llm.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    client = [sys.executable, str(REPO / "tests" / "llm" / "cache_build_client.py")]
    with FakeOpenAIServer(latency_s=0.05) as server:
        outs = [tmp_path / f"answers-{i}.json" for i in range(2)]
        started = time.monotonic()
        runs = [
            subprocess.Popen([*client, server.base_url, str(path), "120", str(out)], env=env)
            for out in outs
        ]
        assert [run.wait(120) for run in runs] == [0, 0]
        assert time.monotonic() - started < 60
        assert json.loads(outs[0].read_text()) == json.loads(outs[1].read_text())
        assert server.state.total == 120 and set(server.counts.values()) == {1}
