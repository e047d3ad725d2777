"""LLM generation on one GPU: the project's backends against the plain libraries, same run.

Random weights of a real shape (nothing is downloaded): Qwen2-0.5B (``--shape 0.5b``,
default) or Qwen2-7B (``--shape 7b``), bfloat16, with a byte-level BPE tokenizer trained
here on the prompts (about a token per word, as a real tokenizer gives) and a chat template.
The workload is issue 13's: NGCSE ``sts_positive`` prompts (the paper's k-shot examples
and a sentence) and 32-token greedy answers (random weights rarely stop early, so answers
run to 32 tokens; the script counts them).

Variants, each in its own process:

- ``transformers/plain@B``: what a user writes: ``tokenizer(batch, padding=True)``,
  ``model.generate``, ``batch_decode``, batches of B in input order; B over
  ``--baseline-batches``. The best of them is the transformers baseline.
- ``transformers/project``: ``TransformersBackend(batch_size="auto").generate(requests)``.
- ``vllm/plain``: ``vllm.LLM(model)`` with vLLM's defaults, ``LLM.chat`` of every conversation.
- ``vllm/project``: ``VLLMBackend`` with the project's engine settings, ``generate(requests)``.

The vLLM variants start the engine with ``load_format="dummy"`` (random weights, no file
read) and need the ``vllm`` package. Prints requests/s and answer tokens/s, project / best
baseline per engine (target >= 0.90), and every rate against issue 13's limits for the
shape: the compute bound of one H100 with every prompt prefilled in full (600 TFLOP/s /
(2 × parameters × prompt tokens)) and issue 13's transformers measurement at batch 128.

Usage:
    python benchmarks/bench_llm_gpu.py                          # 0.5B shape, every variant
    python benchmarks/bench_llm_gpu.py --shape 7b --requests 1024 --baseline-batches 64,128,256
    python benchmarks/bench_llm_gpu.py --engines vllm           # vLLM only
    python benchmarks/bench_llm_gpu.py --device cpu --shape tiny --requests 48 --baseline-batches 8,16
        # smoke test of this script on the CPU (transformers variants; the figures mean nothing)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_bench import cuda_available, device_name, in_process, sentences, skipped, verdict
from ratio import print_ratio

ANSWER_TOKENS = 32
USABLE_FLOPS = 600e12  # issue 13: ~200 requests/s of ~3 TFLOP each on one H100

SHAPES: dict[str, dict[str, Any]] = {
    "tiny": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 16384,
        "tie_word_embeddings": True,
    },
    "0.5b": {  # Qwen2-0.5B
        "hidden_size": 896,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "intermediate_size": 4864,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
    },
    "7b": {  # Qwen2-7B
        "hidden_size": 3584,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "intermediate_size": 18944,
        "vocab_size": 152064,
        "tie_word_embeddings": False,
    },
}
ISSUE_13_AT_128 = {"0.5b": 83.5, "7b": 51.1}
"""Issue 13's transformers measurement at batch 128 (H100, req/s)."""

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def conversations(n: int) -> list[list[dict[str, str]]]:
    """NGCSE sts_positive prompts with the paper's examples, for ``n`` sentences."""
    from cseaug.config import PatternConfig
    from cseaug.patterns import load_examples
    from cseaug.prompts import load_method_prompts

    template = load_method_prompts("sts")["positive"]
    examples = load_examples(PatternConfig(source="paper"), "sts").levels["positive"]
    return [
        list(template.render(examples=examples, sentence=s))
        for s in sentences(n, min_words=5, max_words=40)
    ]


def build_model(directory: Path, shape: str, texts: list[str], weights: bool, device: str) -> None:
    """Config, tokenizer (trained on ``texts``) and, with ``weights``, random bf16 weights."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, Qwen2Config

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    vocab = min(16000, SHAPES[shape]["vocab_size"])
    bpe.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=vocab,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(directory)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    config = Qwen2Config(
        **SHAPES[shape],
        max_position_embeddings=4096,
        eos_token_id=eos,
        bos_token_id=eos,
        pad_token_id=tokenizer.pad_token_id,
        dtype="bfloat16",
    )
    config.save_pretrained(directory)
    if weights:
        torch.manual_seed(0)
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
        model.generation_config.eos_token_id = eos
        model.save_pretrained(directory)
        del model


def _timed(run: Any, device: str) -> float:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
    started = time.perf_counter()
    run()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - started


def transformers_plain(directory: str, n: int, batch: int, device: str) -> dict[str, Any]:
    """The plain loop: render, tokenize with padding, generate, decode; batches in input order."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)
    tokenizer.padding_side = "left"
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32  # as the project
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=dtype).to(device).eval()
    chats = conversations(n)
    answers: list[int] = []

    def run(chunk: list[list[dict[str, str]]]) -> None:
        for start in range(0, len(chunk), batch):
            prompts = [
                tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
                for c in chunk[start : start + batch]
            ]
            encoded = tokenizer(
                prompts, return_tensors="pt", padding=True, add_special_tokens=False
            ).to(device)
            with torch.inference_mode():
                out = model.generate(
                    **encoded,
                    max_new_tokens=ANSWER_TOKENS,
                    do_sample=False,
                    pad_token_id=tokenizer.pad_token_id,
                )
            new = out[:, encoded["input_ids"].shape[1] :]
            tokenizer.batch_decode(new, skip_special_tokens=True)
            answers.extend((new != tokenizer.pad_token_id).sum(1).tolist())

    run(chats[: min(batch, 8)])  # warm-up
    answers.clear()
    seconds = _timed(lambda: run(chats), device)
    return {"seconds": seconds, "requests": n, "answer_tokens": sum(answers)}


def timed_backend(backend: Any, n: int, device: str) -> dict[str, Any]:
    """Seconds of ``backend.generate`` over ``n`` requests (after ``check`` and a warm-up)."""
    from cseaug.llm.base import ChatRequest

    backend.check()
    requests = [ChatRequest(f"r{i}", tuple(c)) for i, c in enumerate(conversations(n))]
    backend.generate(requests[:8])  # warm-up
    responses: list[Any] = []
    seconds = _timed(lambda: responses.extend(backend.generate(requests)), device)
    failed = [r for r in responses if not r.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} requests failed, e.g. {failed[0].error}")
    return {
        "seconds": seconds,
        "requests": n,
        "answer_tokens": sum(r.completion_tokens for r in responses),
        "prompt_tokens": sum(r.prompt_tokens for r in responses) / n,
    }


def transformers_project(directory: str, n: int, device: str) -> dict[str, Any]:
    """``TransformersBackend(batch_size="auto").generate``."""
    from cseaug.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend(
        directory,
        {"max_tokens": ANSWER_TOKENS, "temperature": 0.0},
        device=device,
        dtype="bfloat16" if device.startswith("cuda") else "float32",
        batch_size="auto",
    )
    return timed_backend(backend, n, device)


def vllm_plain(directory: str, n: int, device: str) -> dict[str, Any]:
    """``vllm.LLM`` with its defaults and one ``LLM.chat`` call."""
    from vllm import LLM, SamplingParams

    llm = LLM(model=directory, dtype="bfloat16", load_format="dummy")
    params = SamplingParams(max_tokens=ANSWER_TOKENS, temperature=0.0)
    chats = conversations(n)
    llm.chat(chats[:8], params, use_tqdm=False)  # warm-up
    outputs: list[Any] = []
    seconds = _timed(lambda: outputs.extend(llm.chat(chats, params, use_tqdm=False)), device)
    return {
        "seconds": seconds,
        "requests": n,
        "answer_tokens": sum(len(o.outputs[0].token_ids) for o in outputs),
    }


def vllm_project(directory: str, n: int, device: str) -> dict[str, Any]:
    """``VLLMBackend`` with the project's engine settings."""
    from cseaug.llm.vllm_backend import VLLMBackend

    backend = VLLMBackend(
        directory,
        {"max_tokens": ANSWER_TOKENS, "temperature": 0.0},
        dtype="bfloat16",
        engine_kwargs={"load_format": "dummy"},
    )
    return timed_backend(backend, n, device)


def report(results: dict[str, dict[str, Any]], shape: str, prompt_tokens: float) -> None:
    parameters = parameters_of_shape(shape)
    bound = USABLE_FLOPS / (2 * parameters * prompt_tokens)
    print(
        f"\n{'variant':<26} {'req/s':>9} {'answer tok/s':>13} {'answer tok/req':>15} {'/bound':>7}"
    )
    for name, r in results.items():
        if "error" in r:
            print(f"{name:<26} FAILED: {r['error']}")
            continue
        rate = r["requests"] / r["seconds"]
        print(
            f"{name:<26} {rate:>9.1f} {r['answer_tokens'] / r['seconds']:>13.0f} "
            f"{r['answer_tokens'] / r['requests']:>15.1f} {rate / bound:>7.3f}"
        )
    print(
        f"bound: {bound:,.0f} req/s = issue 13's compute bound of one H100 with every prompt "
        f"prefilled in full (600 TFLOP/s / (2 x {parameters / 1e9:.2f}e9 parameters x "
        f"{prompt_tokens:.0f} prompt tokens)); prefix caching can exceed it"
    )
    for engine in ("transformers", "vllm"):
        plain = {
            k: v["requests"] / v["seconds"]
            for k, v in results.items()
            if k.startswith(f"{engine}/plain") and "error" not in v
        }
        project = results.get(f"{engine}/project", {})
        if plain and "error" not in project and project:
            best = max(plain, key=plain.get)
            rate = project["requests"] / project["seconds"]
            print(f"{engine}/project vs {best}: {verdict(rate, plain[best])}")
            print_ratio(f"llm_gpu_{engine}_project_vs_plain", rate / plain[best], "target >= 0.90")
            if shape in ISSUE_13_AT_128:
                measured = ISSUE_13_AT_128[shape]
                print(
                    f"{engine}/project vs issue 13's transformers at batch 128 ({measured} req/s, "
                    f"H100): {rate / measured:.2f}x"
                )


def parameters_of_shape(shape: str) -> float:
    s = SHAPES[shape]
    h, layers, inner = s["hidden_size"], s["num_hidden_layers"], s["intermediate_size"]
    kv = s["num_key_value_heads"] * h // s["num_attention_heads"]
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * inner
    embeddings = s["vocab_size"] * h * (1 if s["tie_word_embeddings"] else 2)
    return float(layers * per_layer + embeddings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="0.5b")
    parser.add_argument("--requests", type=int, default=1024)
    parser.add_argument("--baseline-batches", default="32,64,128,256")
    parser.add_argument("--engines", default="transformers,vllm")
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    args = parser.parse_args()
    engines = {e.strip() for e in args.engines.split(",")}
    command = f"python benchmarks/bench_llm_gpu.py --shape {args.shape} --requests {args.requests}"
    if args.device.startswith("cuda") and not cuda_available():
        skipped("bench_llm_gpu", command)
        return 0
    import importlib.util

    if "vllm" in engines and (
        not args.device.startswith("cuda") or importlib.util.find_spec("vllm") is None
    ):
        print(
            "vllm variants SKIPPED: they need the vllm package and CUDA (pip install 'cseaug[vllm]')"
        )
        engines.discard("vllm")
    print(
        f"shape {args.shape} ({parameters_of_shape(args.shape) / 1e9:.2f}e9 parameters, random "
        f"weights, bf16), {args.requests} requests, {ANSWER_TOKENS}-token answers, {device_name(args.device)}"
    )
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "model"
        texts = [m["content"] for c in conversations(2000) for m in c]
        build_model(directory, args.shape, texts, "transformers" in engines, args.device)
        model = str(directory)
        if "transformers" in engines:
            for batch in (int(b) for b in args.baseline_batches.split(",")):
                name = f"transformers/plain@{batch}"
                results[name] = in_process(
                    transformers_plain, model, args.requests, batch, args.device
                )
                print(f"  {name}: {results[name]}", flush=True)
            results["transformers/project"] = in_process(
                transformers_project, model, args.requests, args.device
            )
            print(f"  transformers/project: {results['transformers/project']}", flush=True)
        if "vllm" in engines:
            for name, function in (("vllm/plain", vllm_plain), ("vllm/project", vllm_project)):
                results[name] = in_process(function, model, args.requests, args.device)
                print(f"  {name}: {results[name]}", flush=True)
    prompt_tokens = next(
        (r["prompt_tokens"] for r in results.values() if "prompt_tokens" in r), 221.0
    )
    print(f"mean prompt tokens: {prompt_tokens:.0f} (issue 13: ~221)")
    report(results, args.shape, prompt_tokens)
    return 0


if __name__ == "__main__":
    sys.exit(main())
