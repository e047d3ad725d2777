"""Mixed precision of VAEGPT-Sim training: autocast and loss scaling for the precision
:func:`cseaug.devices.resolve_precision` chooses (devices and weight dtypes are there too)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cseaug.devices import PrecisionName, resolve_precision
from cseaug.errors import require


def _torch() -> Any:
    return require("torch", "hf", "VAEGPT-Sim")


@dataclass(frozen=True)
class Precision:
    """How the forward pass runs: autocast dtype (None: float32) and whether a GradScaler is needed."""

    name: PrecisionName
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


def training_precision(spec: str, device: Any) -> Precision:
    """Mixed precision for training on ``device`` (a ``torch.device``): ``auto`` is
    bfloat16 on a GPU that has it, else float16 with a GradScaler, and float32 on the CPU;
    ``bfloat16`` also works on the CPU (autocast), ``float16`` needs a GPU.

    Example:
        >>> import torch
        >>> training_precision("auto", torch.device("cpu")).name
        'float32'
    """
    name = resolve_precision(spec, str(device), purpose="training")
    dtype = None if name == "float32" else getattr(_torch(), name)
    return Precision(name, dtype, scaler=name == "float16")
