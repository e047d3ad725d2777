"""The number format the diagnostics encoder computes in (issue 14).

The cosine-similarity pass of a version's diagnostics (NGCSE appendix, "Match Error Rate and
Cosine Similarity") is most of a small build's CPU time. On CPUs with bfloat16 matrix units
(Intel AMX-BF16 / AVX512-BF16), torch's bfloat16 autocast embeds about twice as fast as
float32, and the cosine similarities move by at most ~0.002 (a tenth of a 0.025 histogram bin;
quartiles by under 0.001): ``benchmarks/bench_encoder_precision.py`` measures both on real
sentence triples. So ``precision: auto`` is bfloat16 on such a CPU and float32 everywhere else
(including GPUs, where the encoder is fast anyway and nothing was measured here).

Autocast keeps layer norms and softmax in float32 and the embeddings are normalised in
float32 after pooling; the precision is part of the embedding cache's identity and of the
diagnostics' summary, so vectors of two precisions are never mixed. What ``auto`` means is
decided with every other precision in :func:`cseaug.devices.resolve_precision` (purpose
``inference``).

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
