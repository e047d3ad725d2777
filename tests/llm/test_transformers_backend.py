"""The transformers backend end to end on a tiny random chat model built by the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.errors import BackendError
from cseaug.llm.transformers_backend import TransformersBackend, generate_kwargs
from tests.llm.helpers import ask

pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_models import build_tiny_chat_model

    return build_tiny_chat_model(tmp_path_factory.mktemp("tiny-chat"))


def backend(model: Path, batch_size: int = 3, **sampling) -> TransformersBackend:
    return TransformersBackend(
        str(model), {"max_tokens": 6, **sampling}, device="cpu", batch_size=batch_size
    )


def test_batched_generation_keeps_order_and_counts_tokens(chat_model: Path) -> None:
    from transformers import AutoTokenizer

    requests = [ask("word " * n, key=f"k{n}") for n in (9, 1, 5, 3, 7)]
    llm = backend(chat_model)
    finished: dict[int, str] = {}
    responses = llm.generate(requests, on_response=lambda i, r: finished.__setitem__(i, r.key))

    assert [r.key for r in responses] == [r.key for r in requests]
    assert finished == {i: r.key for i, r in enumerate(requests)}
    assert all(r.ok and isinstance(r.text, str) for r in responses)
    assert all(1 <= r.completion_tokens <= 6 for r in responses)
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    for request, response in zip(requests, responses, strict=True):
        prompt = tokenizer.apply_chat_template(
            list(request.messages), tokenize=False, add_generation_prompt=True
        )
        assert response.prompt_tokens == len(
            tokenizer(prompt, add_special_tokens=False)["input_ids"]
        )
    assert llm.usage.requests == 5


def test_greedy_is_deterministic_and_matches_unbatched_generation(chat_model: Path) -> None:
    requests = [ask("A man plays a guitar."), ask("Two dogs run.")]
    greedy = backend(chat_model, temperature=None)
    first = [r.text for r in greedy.generate(requests)]
    assert [r.text for r in greedy.generate(requests)] == first
    assert [
        r.text for r in backend(chat_model, temperature=0.0, batch_size=1).generate(requests)
    ] == first


def test_sampling_with_a_seed_is_reproducible(chat_model: Path) -> None:
    requests = [ask("The cat sleeps."), ask("A person rides a bicycle.")]
    texts = [
        r.text for r in backend(chat_model, temperature=1.0, top_p=0.95, seed=3).generate(requests)
    ]
    assert [
        r.text for r in backend(chat_model, temperature=1.0, top_p=0.95, seed=3).generate(requests)
    ] == texts


def test_decoding_options() -> None:
    assert generate_kwargs({"temperature": 0.0, "max_tokens": 9}) == {
        "max_new_tokens": 9,
        "do_sample": False,
        "temperature": None,
        "top_p": None,
        "top_k": None,
    }
    assert generate_kwargs({"temperature": 0.8, "top_p": 0.9, "max_tokens": 9}) == {
        "max_new_tokens": 9,
        "do_sample": True,
        "temperature": 0.8,
        "top_p": 0.9,
    }


def test_an_unloadable_model_fails_up_front_and_says_how_to_use_an_endpoint(tmp_path: Path) -> None:
    llm = TransformersBackend("no-such-org/no-such-model", {"max_tokens": 4})
    with pytest.raises(BackendError) as error:
        llm.check()
    message = str(error.value)
    assert "no-such-org/no-such-model" in message
    assert "--set llm.backend=openai-compatible" in message and "llm.base_url" in message


def test_a_model_without_chat_template_is_refused(tmp_path: Path) -> None:
    from tests.tiny_models import build_tiny_gpt2

    plain = build_tiny_gpt2(tmp_path / "plain")
    with pytest.raises(BackendError, match="no chat template"):
        TransformersBackend(str(plain), {}).check()


def test_auto_batch_size_keeps_eight_prompts_per_batch_on_the_cpu(chat_model: Path) -> None:
    llm = TransformersBackend(str(chat_model), {"max_tokens": 3}, device="cpu")
    llm.check()
    sizes: list[int] = []
    generate = llm._model.generate

    def recording(**kwargs):
        sizes.append(kwargs["input_ids"].shape[0])
        return generate(**kwargs)

    llm._model.generate = recording
    requests = [ask("word " * n, key=f"k{n}") for n in range(1, 20)]
    responses = llm.generate(requests)
    assert all(r.ok for r in responses)
    assert sizes == [8, 8, 3]


def test_out_of_memory_halves_the_batch_remembers_it_and_answers_every_prompt(
    chat_model: Path,
) -> None:
    import torch

    requests = [ask(f"sentence {i} " + "word " * (i % 4), key=f"k{i}") for i in range(12)]
    expected = [r.text for r in backend(chat_model, batch_size=1).generate(requests)]
    llm = backend(chat_model, batch_size=12)
    llm.check()
    generate = llm._model.generate
    sizes: list[int] = []

    def out_of_memory_above_four(**kwargs):
        sizes.append(kwargs["input_ids"].shape[0])
        if kwargs["input_ids"].shape[0] > 4:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")
        return generate(**kwargs)

    llm._model.generate = out_of_memory_above_four
    finished: list[int] = []
    responses = llm.generate(requests, on_response=lambda i, r: finished.append(i))

    assert [r.text for r in responses] == expected
    assert sorted(finished) == list(range(12))
    assert sizes == [12, 6, 3, 3, 3, 3]  # two failures, then batches of the remembered size
    sizes.clear()
    llm.generate(requests[:8])
    assert max(sizes) == 3  # the next call starts from the remembered budget


def test_a_prompt_that_runs_out_of_memory_alone_fails_alone(chat_model: Path) -> None:
    import torch

    llm = backend(chat_model, batch_size=4)
    llm.check()
    generate = llm._model.generate

    def out_of_memory_on_long_prompts(**kwargs):
        if kwargs["input_ids"].shape[1] > 100:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return generate(**kwargs)

    llm._model.generate = out_of_memory_on_long_prompts
    responses = llm.generate([ask("short"), ask("long " * 60, key="long"), ask("brief")])
    assert [r.ok for r in responses] == [True, False, True]
    assert "out of memory" in responses[1].error


def test_tokens_move_within_a_batch(chat_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend's token bar advances at every decoding step of a batch, by the batch's
    rows, and ends at the ceiling (a batch that ends early jumps ahead)."""
    from contextlib import contextmanager

    from cseaug.llm import transformers_backend
    from cseaug.progress import Bar

    bars: list[tuple[str, int | None, str, list[int]]] = []

    @contextmanager
    def recording_bar(description: str, total: int | None, unit: str):
        steps: list[int] = []
        bars.append((description, total, unit, steps))
        yield Bar(steps.append)

    monkeypatch.setattr(transformers_backend, "progress_bar", recording_bar)
    done: list[int] = []
    responses = backend(chat_model).generate([ask(f"s{i}") for i in range(7)], done.append)
    assert all(r.ok for r in responses) and done == [3, 3, 1]
    ((description, total, unit, steps),) = bars
    assert (description, total, unit) == (f"{chat_model.name}: tokens", 7 * 6, "tokens")
    assert sum(steps) == 42
    assert steps[:6] == [3] * 6  # the first batch's six decoding steps, one by one


def test_a_gguf_file_that_does_not_load_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    broken = tmp_path / "model.Q4_1.gguf"
    broken.write_bytes(b"not a gguf file")
    with pytest.raises(BackendError, match="cannot load the GGUF file"):
        TransformersBackend(str(broken), {}, device="cpu").check()
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gguf" else find_spec(name, *a),
    )
    with pytest.raises(BackendError, match="needs the gguf package: pip install gguf"):
        TransformersBackend(str(broken), {}, device="cpu").check()
