"""cseaug from Python: build a version, open one, read its rows, export it.

The same work as ``cseaug build``, ``show``, ``verify`` and ``export``, for a notebook or an
orchestrator of your own. :func:`build_dataset` runs the build in this process, without
Prefect (the CLI runs the same plan, shards and publish steps as the flow
``build-hybrid-dataset``), after the same preflight as ``cseaug build``. :func:`open_version`
gives a :class:`Version` whose rows are checked against its manifest as they are read.

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
    """Check, build and publish one version of ``config`` in this process (no Prefect).

    Args:
        config: a validated config, or the path of a YAML config.
        overrides: ``key.path=value`` strings, as ``--set`` takes them (with a path only).
        say: where the preflight's notes go (one line each).

    Returns:
        What was published (or which version already holds the same data).

    Raises:
        ConfigError, InputError, BackendError, PreflightError, PublishGateError: as
            ``cseaug build`` reports them (:class:`cseaug.errors.CseaugError`).
    """
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
    """The version ``name``, ``name/latest`` or ``name/vNNNN`` under ``root`` (a directory or
    an ``s3://``-style URI, as ``output.root`` takes).

    Raises:
        InputError: no such dataset or version (the message lists what exists), or its
            manifest does not hold together (no file hashes, a data fingerprint that is not
            the one of its data files: :func:`cseaug.dataset.verify.checked_records`).
    """
    from cseaug.dataset.verify import checked_records
    from cseaug.dataset.versions import read_manifest, resolve

    path = resolve(root, ref)
    manifest = read_manifest(path)
    checked_records(manifest, path)  # before anyone reads its fingerprints or rows
    return Version(f"{manifest['dataset']}/{manifest['version']}", path, manifest, root)
