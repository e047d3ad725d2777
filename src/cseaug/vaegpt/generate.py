"""Synonym generation with a trained VAEGPT-Sim: beam search with sampling (appendix A.1) in
length-sorted batches of ``source SEP`` prompts, each seeded from the configured seed and its
sentences (docs/vaegpt.md, "Generation")."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cseaug.config import SynonymGenerationConfig
from cseaug.devices import free_device_memory, resolve_device, resolve_dtype
from cseaug.errors import ConfigError, require
from cseaug.hashing import file_sha256
from cseaug.progress import progress_bar
from cseaug.vaegpt.layout import load_pretrained, pad_id, prompt_batch
from cseaug.vaegpt.model import LATENTS_FILE, SETTINGS_FILE, VAEGPTSim

torch = require("torch", "hf", "The VAEGPT-Sim generator")


def load_tokenizer(name_or_path: str | Path) -> Any:
    """The GPT-2 tokenizer of a checkpoint, with its end token as padding (GPT-2 has none)."""
    tokenizer = load_pretrained("AutoTokenizer", name_or_path, "the tokenizer of")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def _batch_seed(seed: int, sentences: Sequence[str]) -> int:
    digest = hashlib.sha256(str(seed).encode())
    for sentence in sentences:
        digest.update(b"\x00" + sentence.encode())
    return int.from_bytes(digest.digest()[:8], "big") & 0x7FFF_FFFF_FFFF_FFFF


def generator_problem(path: str | Path) -> str | None:
    """Why ``path`` is not a trained generator that :meth:`VAEGPTSimGenerator.load` can load, or None."""
    if (Path(path) / SETTINGS_FILE).is_file():
        return None
    return (
        f"{path} is not a trained VAEGPT-Sim generator (no {SETTINGS_FILE}); train one with "
        "`cseaug train-vaegpt` and point generate_cse.generator at its best/ or final/ directory"
    )


class VAEGPTSimGenerator:
    """Batched synonym generation with a :class:`~.model.VAEGPTSim` (moved to the device and
    dtype of ``config``, ``generate_cse.generation``), loaded from ``path``."""

    def __init__(
        self,
        model: VAEGPTSim,
        tokenizer: Any,
        config: SynonymGenerationConfig | None = None,
        path: Path | None = None,
    ) -> None:
        self.config = config or SynonymGenerationConfig()
        self.path = path
        device = resolve_device(self.config.device, "generate_cse.generation.device")
        dtype = resolve_dtype(self.config.dtype, device, "generate_cse.generation.dtype")
        self.device = torch.device(device)
        self.model = model.to(device=self.device, dtype=dtype).eval()
        self.tokenizer = tokenizer

    @classmethod
    def load(
        cls, path: str | Path, config: SynonymGenerationConfig | None = None
    ) -> VAEGPTSimGenerator:
        """Load a generator saved by training (``<output_dir>/best`` or ``final``)."""
        path = Path(path)
        problem = generator_problem(path)
        if problem:
            raise ConfigError(problem)
        return cls(VAEGPTSim.from_pretrained(path), load_tokenizer(path), config, path)

    def identity(self) -> dict[str, Any]:
        """What identifies the generator's output: its files (sha256), settings and decoding."""
        path, names = self.path, (LATENTS_FILE, SETTINGS_FILE, "model.safetensors", "config.json")
        return {
            "path": str(path) if path is not None else None,
            "files_sha256": {
                name: file_sha256(path / name)
                for name in names
                if path is not None and (path / name).is_file()
            },
            "settings": self.model.settings.model_dump(),
            "generation": self.config.model_dump(mode="json"),
        }

    def generate(self, sentences: Sequence[str], num_return_sequences: int = 1) -> list[list[str]]:
        """``num_return_sequences`` (at most ``num_beams``) synonyms of each sentence, in order."""
        cfg = self.config
        if num_return_sequences > cfg.num_beams:
            raise ConfigError(
                f"num_return_sequences={num_return_sequences} exceeds num_beams={cfg.num_beams}; "
                "raise generation.num_beams or ask for fewer candidates"
            )
        transformers = require("transformers", "hf", "The VAEGPT-Sim generator")
        # every key of the config but these is a decoding setting of transformers' own name
        placement = {"max_source_tokens", "batch_size", "seed", "device", "dtype"}
        generation_config = transformers.GenerationConfig(
            **cfg.model_dump(exclude=placement),
            num_return_sequences=num_return_sequences,
            pad_token_id=pad_id(self.tokenizer),
            eos_token_id=self.tokenizer.eos_token_id,
        )
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        out: list[list[str]] = [[] for _ in sentences]
        devices = [self.device] if self.device.type == "cuda" else []
        with progress_bar("Generating synonyms", total=len(sentences), unit="sentences") as bar:
            for start in range(0, len(order), cfg.batch_size):
                index = order[start : start + cfg.batch_size]
                batch = [sentences[i] for i in index]
                ids, mask = prompt_batch(
                    self.tokenizer, batch, self.model.settings.separator, cfg.max_source_tokens
                )
                with torch.random.fork_rng(devices=devices), torch.inference_mode():
                    torch.manual_seed(_batch_seed(cfg.seed, batch))
                    generated = self.model.lm.generate(  # the latents' hooks stay active
                        input_ids=ids.to(self.device),
                        attention_mask=mask.to(self.device),
                        generation_config=generation_config,
                    )
                texts = self.tokenizer.batch_decode(
                    generated[:, ids.shape[1] :], skip_special_tokens=True
                )
                for row, i in enumerate(index):
                    chunk = texts[row * num_return_sequences : (row + 1) * num_return_sequences]
                    out[i] = [" ".join(t.split()) for t in chunk]
                bar.advance(len(index))
        return out

    def close(self) -> None:
        """Free the model (and the GPU memory it holds)."""
        self.model = None  # type: ignore[assignment]
        free_device_memory(str(self.device))
