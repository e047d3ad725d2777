"""cseaug from Python: build a version, open one, read its rows, export it (docs/python-api.md).

Example (a Generate-CSE build needs no model; diagnostics off, so no encoder either):
    >>> import tempfile, cseaug
    >>> root = tempfile.mkdtemp()
    >>> summary = cseaug.build_dataset("configs/generate-cse.yaml", [
    ...     "corpus.path=examples/demo_corpus.txt", "sample.size=8", "generate_cse.generator=null",
    ...     "diagnostics.enabled=false", "output.exports=[]", f"output.root={root}"])
    >>> summary.message.startswith("published")
    True
    >>> version = cseaug.open_version("generate-cse/latest", root=root)
    >>> version.ref, version.rows().num_rows
    ('generate-cse/v0001', 8)
    >>> version.verify().ok
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cseaug.config import RunConfig, edge_config
from cseaug.config import load_config as load_config  # public as cseaug.load_config

if TYPE_CHECKING:
    import pyarrow as pa

    from cseaug.dataset.export import ExportResult
    from cseaug.dataset.verify import VerifyReport
    from cseaug.pipeline.publish import BuildSummary


def build_dataset(
    config: RunConfig | str | Path,
    overrides: Sequence[str] = (),
    say: Callable[[str], None] = print,
) -> BuildSummary:
    """Check (the preflight of ``cseaug build``, its notes to ``say``), build and publish one
    version of ``config`` (a validated config, or a YAML path with ``--set``-style
    ``overrides``) in this process, without Prefect; a CseaugError as ``cseaug build`` has."""
    from cseaug.pipeline.local import run_build
    from cseaug.pipeline.preflight import check_before_build

    cfg = edge_config(RunConfig, config, overrides)
    return run_build(cfg, check_before_build(cfg, say=say).served)


@dataclass(frozen=True)
class Version:
    """One published dataset version (its directory: the local copy on an object store)."""

    ref: str
    """``name/vNNNN``."""
    path: Path
    manifest: dict[str, Any]
    root: str | Path
    """The output root it was opened from (exports never go under its ``datasets/``)."""

    def rows(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The canonical rows (docs/dataset-contract.md), each file checked against the manifest."""
        from cseaug.dataset.reader import read_rows

        return read_rows(self.path, columns)

    def verify(self) -> VerifyReport:
        """Every file against the sha256 its manifest records (``cseaug verify``)."""
        from cseaug.dataset.verify import verify_version

        return verify_version(self.path)

    def export(
        self, fmt: str, out: str | Path, *, split: str = "train", layout: str = "auto"
    ) -> ExportResult:
        """Write the file a trainer reads (``cseaug export``; formats: simcse, ngcse,
        sentence-transformers, jsonl)."""
        from cseaug.dataset.export import export_version
        from cseaug.dataset.protect import refuse_dataset_path

        refuse_dataset_path(Path(out), self.root, "out")
        return export_version(self.path, fmt, out, split=split, layout=layout)


def open_version(ref: str, root: str | Path = "storage") -> Version:
    """The version ``name``, ``name/latest`` or ``name/vNNNN`` under ``root`` (as
    ``output.root`` takes); an InputError for no such version or a manifest that does not
    hold together."""
    from cseaug.dataset.verify import checked_records
    from cseaug.dataset.versions import read_manifest, resolve

    path = resolve(root, ref)
    manifest = read_manifest(path)
    checked_records(manifest, path)  # before anyone reads its fingerprints or rows
    return Version(f"{manifest['dataset']}/{manifest['version']}", path, manifest, root)
