"""Device and mixed-precision choices shared by VAEGPT-Sim training, generation and benchmarks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cseaug.errors import ConfigError, require


def _torch() -> Any:
    return require("torch", "hf", "VAEGPT-Sim")


def resolve_device(spec: str) -> Any:
    """A ``torch.device`` from ``auto`` (cuda when available), ``cpu``, ``cuda``, ``cuda:1``...

    Example:
        >>> resolve_device("cpu")
        device(type='cpu')
    """
    torch = _torch()
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except RuntimeError as exc:
        raise ConfigError(
            f"device '{spec}' is not a torch device; use auto, cpu, cuda or cuda:N"
        ) from exc
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"device '{spec}' asks for CUDA, which is not available here; use cpu or auto"
        )
    return device


@dataclass(frozen=True)
class Precision:
    """How the forward pass runs: autocast dtype (None: float32) and whether a GradScaler is needed."""

    name: str
    autocast_dtype: Any | None
    scaler: bool

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
        >>> resolve_precision("auto", resolve_device("cpu")).name
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


def weights_dtype(spec: str, device: Any) -> Any:
    """Weights dtype for inference: ``auto`` is float16 on GPU and float32 on CPU."""
    torch = _torch()
    if spec == "auto":
        return torch.float16 if device.type == "cuda" else torch.float32
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[spec]
