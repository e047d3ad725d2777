"""The one device, dtype and precision resolution of every model the library loads; a device
or dtype this machine cannot run is a ConfigError naming the setting, before any model loads.

Example:
    >>> resolve_device("cpu")
    'cpu'
    >>> resolve_dtype("auto", "cpu")
    torch.float32
    >>> resolve_precision("auto", "cpu")
    'float32'
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

from cseaug.errors import ConfigError, require

DTYPES = ("float32", "float16", "bfloat16")
"""Dtype and precision names a config may give besides ``auto`` (torch's names)."""

PrecisionName = Literal["float32", "bfloat16", "float16"]
"""A resolved precision: the torch dtype name autocast computes in (float32: no autocast)."""


GPU_DRIVER_PATHS = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg", "/dev/kfd")
"""What a GPU driver torch could use leaves on Linux (NVIDIA; WSL; ROCm, which torch also
calls ``cuda``)."""


def gpu_driver_present() -> bool:
    """False only on Linux with no GPU driver at all (no CUDA device then), told without
    importing torch (1-2 s of a command's start-up)."""
    return sys.platform != "linux" or any(Path(p).exists() for p in GPU_DRIVER_PATHS)


def resolve_device(spec: str, setting: str = "device") -> str:
    """The torch device to load a model on: ``spec`` is ``auto`` (CUDA when torch sees a GPU)
    or anything ``torch.device`` accepts; ``setting`` (``backtranslation.device``) names it
    in a ConfigError."""
    torch = require("torch", "hf", "Loading a model")
    if spec == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(spec)
    except RuntimeError as exc:
        raise ConfigError(
            f"{setting} is {spec!r}, which is not a torch device; use auto, cpu, cuda or cuda:N"
        ) from exc
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"{setting} is {spec!r} but CUDA is not available here; use 'auto' or 'cpu'"
        )
    return spec


def resolve_dtype(
    spec: str,
    device: str,
    setting: str = "dtype",
    *,
    auto_on_gpu: Literal["float16", "checkpoint"] = "float16",
) -> Any:
    """The torch dtype to load weights in on ``device`` (from :func:`resolve_device`);
    ``auto_on_gpu`` says what ``auto`` means on a GPU: ``float16``, or ``checkpoint`` (the
    string ``"auto"``, which ``from_pretrained`` reads as the checkpoint's dtype).

    Example:
        >>> resolve_dtype("bfloat16", "cpu")
        torch.bfloat16
    """
    torch = require("torch", "hf", "Loading a model")
    if spec == "auto":
        if device.startswith("cpu"):
            return torch.float32
        return "auto" if auto_on_gpu == "checkpoint" else torch.float16
    return getattr(torch, _checked_name(spec, device, setting))


def resolve_precision(
    spec: str,
    device: str,
    setting: str = "precision",
) -> PrecisionName:
    """The precision a model trains in on ``device`` (from :func:`resolve_device`): ``auto``
    is bfloat16 on a GPU that has it, else float16 (the caller scales the loss), and float32
    on the CPU (without importing torch); a ConfigError for an unknown name or float16 on the CPU.

    Example:
        >>> resolve_precision("bfloat16", "cpu")
        'bfloat16'
    """
    if spec != "auto":
        return _checked_name(spec, device, setting)
    if device.startswith("cpu"):
        return "float32"
    torch = require("torch", "hf", "Training a model")
    return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"


def _checked_name(spec: str, device: str, setting: str) -> PrecisionName:
    """``spec``, a dtype name that can run on ``device`` (not float16 on the CPU)."""
    if spec not in DTYPES:
        raise ConfigError(f"{setting} is {spec!r}; use auto, {', '.join(DTYPES)}")
    if spec == "float16" and device.startswith("cpu"):
        raise ConfigError(
            f"{setting} float16 needs a GPU; use 'auto', 'float32' or 'bfloat16' on CPU"
        )
    return spec  # type: ignore[return-value]


def free_device_memory(device: str) -> None:
    """Return the memory of dropped models on ``device`` to the GPU (a no-op on the CPU), for
    the next model of this process or another to use."""
    if str(device).startswith("cuda"):
        require("torch", "hf", "Releasing GPU memory").cuda.empty_cache()
