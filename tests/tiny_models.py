"""Tiny randomly initialised language models that tests build offline in a few seconds.

Nothing is downloaded: the tokenizer is a byte-level BPE trained here on a few
sentences (every byte is in its alphabet, so any text round-trips), and the model is a
GPT-2 with two small layers and random weights. Its answers are gibberish, but it loads,
batches, pads, samples and saves like a real Hugging Face model.

``build_tiny_gpt2(directory)`` gives a plain causal LM (for generators such as
VAEGPT-Sim); ``build_tiny_chat_model(directory)`` adds a chat template, so it works as
the ``transformers`` LLM backend's chat model.

A test writes ``path = build_tiny_chat_model(tmp_path / "chat")``; the tokenizer at
``path`` renders ``[{"role": "user", "content": "Hi"}]`` with the generation prompt as
``<|user|>Hi\\n<|assistant|>``.
"""

from __future__ import annotations

from pathlib import Path

END_OF_TEXT = "<|endoftext|>"

TRAINING_SENTENCES = (
    "A man is playing a guitar on the stage.",
    "Two dogs are running through the snowy field.",
    "The woman is slicing an onion in the kitchen.",
    "Children play football in the park after school.",
    "The cat sleeps on the warm windowsill.",
    "A person rides a bicycle down the busy street.",
    "Rewrite the sentence so that it keeps its meaning.",
    "Write a sentence that contradicts the input sentence.",
)

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(TRAINING_SENTENCES, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token=END_OF_TEXT, eos_token=END_OF_TEXT, pad_token=END_OF_TEXT
    )


def build_tiny_gpt2(directory: str | Path, vocab_size: int = 320, seed: int = 0) -> Path:
    """Save a tiny random GPT-2 causal LM and its tokenizer into ``directory``; return it.

    Args:
        directory: where to save (created if needed).
        vocab_size: BPE vocabulary size (at least 257: the byte alphabet plus end-of-text).
        seed: seed of the random weights.
    """
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(vocab_size)
    eos = tokenizer.convert_tokens_to_ids(END_OF_TEXT)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=256,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=eos,
    )
    torch.manual_seed(seed)
    GPT2LMHeadModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def build_tiny_chat_model(directory: str | Path, vocab_size: int = 320, seed: int = 0) -> Path:
    """Like :func:`build_tiny_gpt2`, with a simple chat template on the tokenizer."""
    from transformers import AutoTokenizer

    directory = build_tiny_gpt2(directory, vocab_size=vocab_size, seed=seed)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(directory)
    return directory


TINY_BERT_WORDS = (
    "a", "cat", "sat", "sits", "on", "the", "mat", "of", "no", "ever", "positive", "negative",
    "intermediate", "plain", "corpus", "sentence", "number", "knowledge", "view", "dog", "is",
)  # fmt: skip
"""The words of the tiny BERT's vocabulary (those of tests/canonical_rows.py); others are [UNK]."""


def build_tiny_bert(directory: str | Path, hidden_size: int = 16, seed: int = 0) -> Path:
    """A tiny randomly initialised BERT (one layer) with a word-piece vocabulary written here."""
    import torch
    import transformers

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *TINY_BERT_WORDS, *"0123456789", ".", ",",
        ":", "#",
    ]  # fmt: skip
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    # vocab=: transformers 5 ignores vocab_file= and leaves only the special tokens (every word [UNK])
    transformers.BertTokenizerFast(vocab=str(folder / "vocab.txt")).save_pretrained(folder)
    config = transformers.BertConfig(
        vocab_size=len(vocab), hidden_size=hidden_size, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=2 * hidden_size, max_position_embeddings=64,
    )  # fmt: skip
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        transformers.BertModel(config).save_pretrained(folder)
    return folder
