"""Hugging Face dataset corpora (``corpus.hf_dataset``): a hub id, data files or a saved dataset."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from cseaug.config import CorpusConfig
from cseaug.errors import InputError, require
from cseaug.hashing import file_sha256
from cseaug.readers.source import BATCH_ROWS, CorpusSource, check_columns, reader_batch


def _load_hf(cfg: CorpusConfig, ident: str) -> Any:
    datasets = require("datasets", "hf", "Reading a Hugging Face dataset (corpus.hf_dataset)")
    local = Path(ident)
    try:
        if (local / "state.json").is_file() or (local / "dataset_dict.json").is_file():
            # A directory written by Dataset.save_to_disk: load_dataset refuses those.
            loaded = datasets.load_from_disk(str(local))
            return loaded[cfg.hf_split] if isinstance(loaded, datasets.DatasetDict) else loaded
        return datasets.load_dataset(ident, cfg.hf_config, split=cfg.hf_split)
    # datasets raises many unrelated types (ConnectionError, ValueError, ...)
    except Exception as exc:
        raise InputError(
            f"cannot load Hugging Face dataset '{ident}' (config {cfg.hf_config!r}, split "
            f"'{cfg.hf_split}'): {exc}. Offline, give a local dataset directory or data files."
        ) from exc


def open_hf(cfg: CorpusConfig) -> CorpusSource:
    """A Hugging Face dataset corpus (needs the ``hf`` extra)."""
    ident = cfg.hf_dataset
    assert ident is not None
    dataset = _load_hf(cfg, ident)
    where = f"Hugging Face dataset '{ident}' (split '{cfg.hf_split}')"
    text_column, views = check_columns(cfg, list(dataset.column_names), where, "hf")
    if len(dataset) == 0:
        raise InputError(f"{where} is empty")
    local = Path(ident)
    name = cfg.name or (local.name if local.exists() else ident)
    columns = list(dict.fromkeys([text_column, *views.values()]))

    def read() -> Iterator[pa.RecordBatch]:
        selected = dataset.select_columns(columns).with_format("arrow")
        for table in selected.iter(batch_size=BATCH_ROWS):
            yield reader_batch(table, text_column, views, where)

    def hash_inputs() -> dict[str, str]:
        prefix = f"hf://{ident}/{cfg.hf_config or 'default'}/{cfg.hf_split}"
        files = sorted(Path(f["filename"]) for f in dataset.cache_files)
        return {f"{prefix}/{f.name}": file_sha256(f) for f in files}

    return CorpusSource(
        name=name,
        format="hf",
        location=ident,
        view_columns=views,
        total_records=len(dataset),
        _read=read,
        input_sha256=hash_inputs,
    )
