"""Corpora with named columns: CSV and TSV with a header row, JSON Lines, Parquet, and
Hugging Face datasets, each read by Arrow a batch at a time.

CSV follows RFC 4180 (quoted values may hold newlines); TSV has no quoting (IANA
text/tab-separated-values), so a quote is a character of the text. A malformed row is
skipped and recorded in :attr:`~cseaug.readers.source.CorpusSource.reader_rejects`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pyarrow.parquet as pq

from cseaug.config import CorpusConfig
from cseaug.errors import InputError, require
from cseaug.hashing import file_sha256
from cseaug.readers.source import (
    BATCH_ROWS,
    UTF8_BOM,
    CorpusSource,
    RejectRecord,
    check_columns,
    file_source,
    reader_batch,
    require_nonempty_file,
)


def _csv_parse_options(fmt: str, on_invalid: Callable[[Any], str] | None) -> pcsv.ParseOptions:
    if fmt == "tsv":
        # TSV has no quoting (IANA text/tab-separated-values): a quote is a character of the text.
        return pcsv.ParseOptions(delimiter="\t", quote_char=False, invalid_row_handler=on_invalid)
    return pcsv.ParseOptions(delimiter=",", newlines_in_values=True, invalid_row_handler=on_invalid)


def open_delimited(cfg: CorpusConfig, path: Path, name: str, fmt: str) -> CorpusSource:
    """A ``csv`` or ``tsv`` corpus; its header must name the configured columns."""
    require_nonempty_file(path)
    try:
        header = pcsv.open_csv(
            str(path), parse_options=_csv_parse_options(fmt, lambda row: "skip")
        ).schema.names
    except pa.ArrowInvalid as exc:
        raise InputError(
            f"cannot read the header of corpus {path} ({fmt}; a header row is required): {exc}"
        ) from exc
    text_column, views, columns = check_columns(cfg, header, str(path), fmt)
    malformed: list[RejectRecord] = []

    def on_invalid(row: Any) -> str:
        # Arrow knows the line number only when values cannot hold newlines (TSV).
        columns = {"expected_columns": row.expected_columns, "actual_columns": row.actual_columns}
        malformed.append({"raw": row.text, "detail": {"line": row.number, **columns}})
        return "skip"

    def read() -> Iterator[pa.RecordBatch]:
        types = {text_column: pa.binary()} | {col: pa.string() for col in views.values()}
        reader = pcsv.open_csv(
            str(path),
            parse_options=_csv_parse_options(fmt, on_invalid),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=columns, strings_can_be_null=False
            ),
        )
        for batch in reader:
            yield reader_batch(batch, text_column, views, str(path))

    return file_source(name, fmt, path, read, view_columns=views, reader_rejects=malformed)


def _first_nonblank_line(path: Path) -> bytes:
    with pa.input_stream(str(path), compression="detect") as stream:
        carry = b""
        while block := stream.read(1 << 16):
            carry = (carry + block).removeprefix(UTF8_BOM)
            for line in carry.split(b"\n")[:-1]:
                if line.strip():
                    return line
            carry = carry[carry.rfind(b"\n") + 1 :]
    if carry.strip():
        return carry
    raise InputError(f"corpus file {path} holds no JSON object")


def open_jsonl(cfg: CorpusConfig, path: Path, name: str) -> CorpusSource:
    """A JSON Lines corpus; the keys of its first object must hold the configured columns."""
    require_nonempty_file(path)
    single_thread = pjson.ReadOptions(use_threads=False)
    try:  # the keys of the first object are the file's columns, as far as we check
        first = pjson.read_json(pa.BufferReader(_first_nonblank_line(path)), single_thread)
        keys = first.column_names
    except pa.ArrowInvalid as exc:
        raise InputError(f"the first record of corpus {path} is not a JSON object: {exc}") from exc
    where = f"{path} (keys of its first record)"
    text_column, views, columns = check_columns(cfg, keys, where, "jsonl")
    schema = pa.schema([(col, pa.string()) for col in columns])

    def read() -> Iterator[pa.RecordBatch]:
        parse = pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        with pa.input_stream(str(path), compression="detect") as stream:
            for batch in pjson.open_json(stream, parse_options=parse):
                yield reader_batch(batch, text_column, views, str(path))

    return file_source(name, "jsonl", path, read, view_columns=views)


def open_parquet(cfg: CorpusConfig, path: Path, name: str) -> CorpusSource:
    """A Parquet corpus (a file, or every ``*.parquet`` below a directory, in path order)."""
    files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    if not files:
        raise InputError(f"corpus directory {path} holds no *.parquet file")
    try:
        metas = [pq.ParquetFile(f) for f in files]
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"corpus {path} is not readable as Parquet: {exc}") from exc
    text_column, views, columns = check_columns(
        cfg, metas[0].schema_arrow.names, str(files[0]), "parquet"
    )
    total = sum(m.metadata.num_rows for m in metas)
    if total == 0:
        raise InputError(f"corpus {path} is empty (0 Parquet rows)")

    def read() -> Iterator[pa.RecordBatch]:
        for f in files:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=BATCH_ROWS, columns=columns):
                yield reader_batch(batch, text_column, views, str(f))

    return file_source(name, "parquet", path, read, files, view_columns=views, total_records=total)


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
    text_column, views, columns = check_columns(cfg, list(dataset.column_names), where, "hf")
    if len(dataset) == 0:
        raise InputError(f"{where} is empty")
    local = Path(ident)
    name = cfg.name or (local.name if local.exists() else ident)

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
