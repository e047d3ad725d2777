"""The one device and dtype resolution: auto, explicit devices, refusals that name the setting."""

from __future__ import annotations

import pytest

from cseaug.devices import resolve_device, resolve_dtype
from cseaug.errors import ConfigError

torch = pytest.importorskip("torch")


def test_auto_takes_cuda_only_when_there_is_one() -> None:
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("spec", ["cuda", "cuda:1"])
def test_an_explicit_cuda_device_without_cuda_names_the_setting(spec: str) -> None:
    with pytest.raises(
        ConfigError, match=r"backtranslation\.device is 'cuda.*not available.*'auto'"
    ):
        resolve_device(spec, "backtranslation.device")


def test_a_name_that_is_not_a_device_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"diagnostics\.device is 'gpu0'.*not a torch device"):
        resolve_device("gpu0", "diagnostics.device")


def test_dtypes() -> None:
    assert resolve_dtype("auto", "cpu") == torch.float32
    assert resolve_dtype("auto", "cuda") == torch.float16
    assert resolve_dtype("auto", "cuda:0", auto_on_gpu="checkpoint") == "auto"
    assert resolve_dtype("auto", "cpu", auto_on_gpu="checkpoint") == torch.float32
    assert resolve_dtype("bfloat16", "cpu") == torch.bfloat16
    with pytest.raises(ConfigError, match=r"llm\.dtype float16 needs a GPU"):
        resolve_dtype("float16", "cpu", "llm.dtype")
    with pytest.raises(ConfigError, match=r"llm\.dtype is 'int8'"):
        resolve_dtype("int8", "cuda", "llm.dtype")
