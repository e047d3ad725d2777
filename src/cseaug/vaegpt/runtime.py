"""Mixed precision of VAEGPT-Sim training (devices and weight dtypes: :mod:`cseaug.devices`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cseaug.errors import ConfigError, require


def _torch() -> Any:
    return require("torch", "hf", "VAEGPT-Sim")


@dataclass(frozen=True)
class Precision:
    """How the forward pass runs: autocast dtype (None: float32) and whether a GradScaler is needed."""

    name: str
    autocast_dtype: Any | None
    scaler: bool

    @property
    def frozen_dtype(self) -> Any:
        """The dtype of weights that are never trained (the judge): the autocast dtype, else
        float32. Kept in it, they are not cast again on every step."""
        return self.autocast_dtype or _torch().float32

    def autocast(self, device: Any) -> Any:
        """The autocast context for ``device`` (a no-op context for float32)."""
        torch = _torch()
        return torch.autocast(
            device_type=device.type,
            dtype=self.autocast_dtype or torch.float32,
            enabled=self.autocast_dtype is not None,
        )


def resolve_precision(spec: str, device: Any) -> Precision:
    """Mixed precision for training on ``device``.

    ``auto``: bfloat16 on a GPU that supports it, else float16 with a GradScaler; float32 on
    CPU. ``bf16`` also works on CPU (autocast); ``fp16`` needs CUDA.

    Example:
        >>> import torch
        >>> resolve_precision("auto", torch.device("cpu")).name
        'fp32'
    """
    torch = _torch()
    if spec == "auto":
        if device.type != "cuda":
            spec = "fp32"
        else:
            spec = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if spec == "fp32":
        return Precision("fp32", None, False)
    if spec == "bf16":
        return Precision("bf16", torch.bfloat16, False)
    if spec == "fp16":
        if device.type != "cuda":
            raise ConfigError("precision 'fp16' needs a CUDA device; use bf16 or fp32 on CPU")
        return Precision("fp16", torch.float16, True)
    raise ConfigError(f"precision '{spec}' is not one of auto, fp32, bf16, fp16")
