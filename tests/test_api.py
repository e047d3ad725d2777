"""The Python surface (``import cseaug``): light to import, and the same checks as the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import cseaug
from cseaug.config import load_config
from cseaug.errors import InputError

REPO = Path(__file__).resolve().parents[1]


def test_import_cseaug_loads_no_library_until_a_name_is_used() -> None:
    """``import cseaug`` (and so every ``cseaug.x`` import, the CLI's included) stays cheap."""
    code = (
        "import sys, cseaug; heavy = [m for m in ('pyarrow', 'pydantic', 'prefect', 'torch') "
        "if m in sys.modules]; print(heavy); cseaug.open_version; print('pydantic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "True"]


def test_every_public_name_resolves_and_an_unknown_one_is_an_attribute_error() -> None:
    assert sorted(cseaug.__all__) == sorted(
        ["Version", "__version__", "build_dataset", "load_config", "open_version"]
    )
    for name in cseaug.__all__:
        assert getattr(cseaug, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cseaug.nope  # noqa: B018


def test_open_version_of_an_unknown_dataset_names_what_exists(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no dataset 'wiki-sts'"):
        cseaug.open_version("wiki-sts/latest", root=tmp_path)


def test_build_dataset_refuses_overrides_with_a_validated_config() -> None:
    cfg = load_config(REPO / "configs" / "demo.yaml")
    with pytest.raises(ValueError, match="model_copy"):
        cseaug.build_dataset(cfg, ["sample.size=4"])


def test_an_export_into_the_version_itself_is_refused(tmp_path: Path) -> None:
    cseaug.build_dataset(
        REPO / "configs" / "generate-cse.yaml",
        [
            f"corpus.path={REPO / 'examples' / 'demo_corpus.txt'}",
            "sample.size=4",
            "generate_cse.generator=null",
            "diagnostics.enabled=false",
            "output.exports=[]",
            f"output.root={tmp_path}",
        ],
        say=lambda note: None,
    )
    version = cseaug.open_version("generate-cse", root=tmp_path)
    with pytest.raises(InputError, match="published versions are never changed"):
        version.export("simcse", version.path / "data" / "x.csv")
    written = version.export("simcse", tmp_path / "x.csv")
    assert written.rows == 4
