"""The VAEGPT-Sim network: GPT-2 with a gradually fading latent in every block (section 3.1),
``h_i = h_i + l_i * W / e^(i+1)``, on forward hooks of an unchanged ``GPT2LMHeadModel`` so that
``generate`` and the KV cache keep working (docs/vaegpt.md, "The model": its saved files).

Example:
    >>> from transformers import GPT2Config
    >>> model = VAEGPTSim.from_config(GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=50))
    >>> [round(s, 4) for s in model.noise_scales.tolist()]
    [0.0368, 0.0135]
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from cseaug.config import validated
from cseaug.errors import ConfigError, InputError, require
from cseaug.vaegpt.config import ModelConfig
from cseaug.vaegpt.layout import load_pretrained

torch = require("torch", "hf", "The VAEGPT-Sim generator")
nn = torch.nn

LATENTS_FILE = "vaegpt_latents.safetensors"
SETTINGS_FILE = "vaegpt_sim.json"


class VAEGPTSimSettings(ModelConfig):
    """What a VAEGPT-Sim adds to GPT-2 (``vaegpt_sim.json``): the training config's ``model``
    section and the GPT-2 checkpoint it started from."""

    base_model: str = Field("gpt2", description="The GPT-2 checkpoint the generator started from.")


@dataclass
class VAEGPTSimOutput:
    """Logits of the kept positions and the KL term (summed over blocks, averaged over the batch)."""

    logits: Any
    kl: Any


class LatentLayer(nn.Module):
    """Mean and log-variance solvers, batch normalisation against KL vanishing (Zhu et al.
    2020; the mean at the fixed ``mean_bn_scale``), a reparameterised sample and ``dropout``
    of one block; the latent is as wide as the block's hidden states."""

    def __init__(
        self, hidden_size: int, dropout: float, mean_bn_scale: float, init_std: float = 0.02
    ) -> None:
        super().__init__()
        self.mean = nn.Linear(hidden_size, hidden_size)
        self.logvar = nn.Linear(hidden_size, hidden_size)
        for linear in (self.mean, self.logvar):
            nn.init.normal_(linear.weight, std=init_std)
            nn.init.zeros_(linear.bias)
        self.mean_norm = nn.BatchNorm1d(hidden_size, affine=False)
        self.mean_shift = nn.Parameter(torch.zeros(hidden_size))
        self.logvar_norm = nn.BatchNorm1d(hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.mean_bn_scale = mean_bn_scale
        self.real_tokens: Any | None = None
        self.kl: Any | None = None

    def _normalise(self, values: Any, norm: Any) -> Any:
        index = self.real_tokens
        if index is None or not self.training or index.numel() == values.shape[0]:
            return norm(values).float()
        # batch statistics over real tokens only: padding would otherwise shift them
        out = torch.zeros(values.shape, dtype=torch.float32, device=values.device)
        return out.index_copy(0, index, norm(values.index_select(0, index)).float())

    def forward(self, hidden: Any) -> Any:
        """The latent l_i for ``hidden`` (batch, positions, hidden); stores the per-token KL in
        ``self.kl``. ``real_tokens`` (set by :meth:`VAEGPTSim.forward`) holds the flat indices
        of the non-padding positions."""
        batch, positions, width = hidden.shape
        flat = hidden.reshape(-1, width)
        mean = (
            self._normalise(self.mean(flat), self.mean_norm) * self.mean_bn_scale + self.mean_shift
        )
        logvar = self._normalise(self.logvar(flat), self.logvar_norm)
        std = torch.exp(0.5 * logvar)
        sample = mean + std * torch.randn_like(std)
        self.kl = (
            (0.5 * (mean.square() + std.square() - 1.0 - logvar)).sum(-1).view(batch, positions)
        )
        return self.dropout(sample).view(batch, positions, width)


class VAEGPTSim(nn.Module):
    """GPT-2 (``GPT2LMHeadModel`` ``lm``) with a freshly initialised latent in every block; see
    the module docstring."""

    def __init__(self, lm: Any, settings: VAEGPTSimSettings) -> None:
        super().__init__()
        config = lm.config
        self.lm = lm
        self.settings = settings
        self.latents = nn.ModuleList(
            LatentLayer(
                config.n_embd,
                settings.latent_dropout,
                settings.mean_bn_scale,
                config.initializer_range,
            )
            for _ in range(config.n_layer)
        )
        scales = [settings.latent_weight / math.e ** (i + 1) for i in range(config.n_layer)]
        self.register_buffer(
            "noise_scales", torch.tensor(scales, dtype=torch.float32), persistent=False
        )
        for i, block in enumerate(lm.transformer.h):
            block.register_forward_hook(self._noise_hook(i))

    def _noise_hook(self, index: int) -> Any:
        def hook(_module: Any, _args: Any, hidden: Any) -> Any:
            # a transformers 5 GPT-2 block returns its hidden states (4.x: a tuple)
            noise = self.latents[index](hidden) * self.noise_scales[index]
            return hidden + noise.to(hidden.dtype)

        return hook

    def forward(
        self,
        input_ids: Any,
        attention_mask: Any,
        position_ids: Any | None = None,
        logits_to_keep: int | Any = 0,
    ) -> VAEGPTSimOutput:
        """Logits at ``logits_to_keep`` (0: every position) and the paper's L_KL: per sequence
        the per-token KL averaged over its real tokens, summed over blocks, averaged over the batch."""
        real_tokens = attention_mask.reshape(-1).nonzero().squeeze(1)
        if self.training and real_tokens.numel() < 2:
            raise InputError(
                "VAEGPT-Sim training needs at least two real tokens per batch (batch normalisation)"
            )
        for layer in self.latents:
            layer.real_tokens = real_tokens
        try:
            out = self.lm(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                logits_to_keep=logits_to_keep,
                use_cache=False,
            )
            per_token = torch.stack([layer.kl for layer in self.latents]).sum(0)
        finally:
            for layer in self.latents:
                layer.real_tokens = None
                layer.kl = None
        mask = attention_mask.to(per_token.dtype)
        per_sequence = (per_token * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return VAEGPTSimOutput(logits=out.logits, kl=per_sequence.mean())

    def save_pretrained(self, directory: str | Path, tokenizer: Any | None = None) -> Path:
        """Write the generator: GPT-2 via ``save_pretrained``, the latents and the settings."""
        safetensors = require("safetensors.torch", "hf", "Saving a VAEGPT-Sim generator")
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        self.lm.save_pretrained(out)
        state = {k: v.detach().contiguous().cpu() for k, v in self.latents.state_dict().items()}
        safetensors.save_file(state, str(out / LATENTS_FILE))
        (out / SETTINGS_FILE).write_text(
            json.dumps(self.settings.model_dump(), indent=2) + "\n", encoding="utf-8"
        )
        if tokenizer is not None:
            tokenizer.save_pretrained(out)
        return out

    @classmethod
    def from_config(cls, gpt2_config: Any, settings: VAEGPTSimSettings | None = None) -> VAEGPTSim:
        """A randomly initialised VAEGPT-Sim of a GPT-2 configuration (tests, benchmarks)."""
        transformers = require("transformers", "hf", "The VAEGPT-Sim generator")
        return cls(transformers.GPT2LMHeadModel(gpt2_config), settings or VAEGPTSimSettings())

    @classmethod
    def from_pretrained(
        cls, name_or_path: str | Path, settings: VAEGPTSimSettings | None = None
    ) -> VAEGPTSim:
        """Load a saved generator (a directory with ``vaegpt_sim.json``; ``settings`` None), or
        start one with ``settings`` (default: the paper's) from a GPT-2 checkpoint."""
        path = Path(name_or_path)
        if (path / SETTINGS_FILE).is_file():
            if settings is not None:
                raise ConfigError(
                    f"{path} is a saved VAEGPT-Sim generator: its settings cannot be replaced"
                )
            safetensors = require("safetensors.torch", "hf", "Loading a VAEGPT-Sim generator")
            text = (path / SETTINGS_FILE).read_text(encoding="utf-8")
            saved = validated(VAEGPTSimSettings, json.loads(text), str(path / SETTINGS_FILE))
            model = cls(load_pretrained("GPT2LMHeadModel", path, "the generator's GPT-2"), saved)
            latents_file = path / LATENTS_FILE
            if not latents_file.is_file():
                raise InputError(
                    f"{latents_file} is missing: {path} is not a complete VAEGPT-Sim generator"
                )
            model.latents.load_state_dict(safetensors.load_file(str(latents_file)))
            return model
        lm = load_pretrained("GPT2LMHeadModel", name_or_path, "the GPT-2 checkpoint")
        base = settings or VAEGPTSimSettings()
        return cls(lm, base.model_copy(update={"base_model": str(name_or_path)}))
