"""The number format an encoder computes in (issue 14).

On CPUs with native bfloat16 (AMX-BF16, AVX512-BF16), torch's bfloat16 autocast embeds about
twice as fast as float32 and moves the diagnostics' cosine similarities by at most ~0.002, a
tenth of a histogram bin (docs/performance.md, "The encoder's precision"); what ``auto``
means is decided in :func:`cseaug.devices.resolve_precision`.

Example:
    >>> import torch
    >>> with autocast(torch, "cpu", "bfloat16"):
    ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
    torch.bfloat16
"""

from __future__ import annotations

import contextlib
from typing import Any, Literal

from cseaug.devices import PrecisionName

EncoderPrecision = Literal["auto", "float32", "bfloat16", "float16"]


def autocast(
    torch: Any, device: str, precision: PrecisionName
) -> contextlib.AbstractContextManager:
    """torch's autocast to ``precision`` on ``device`` (a no-op for float32)."""
    if precision == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=getattr(torch, precision))
