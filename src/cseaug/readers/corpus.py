"""Corpus readers: stream Arrow record batches from text, CSV/TSV, JSONL, Parquet and HF datasets.

:func:`open_corpus` checks everything it can before any work (the file exists, the format
is known, the columns are there, the corpus is not empty) and returns a
:class:`CorpusSource` whose :meth:`~CorpusSource.batches` yields record batches with a
``text`` column and one column per given view (named by the view: ``positive``, ...). No
reader builds a Python object per line: text files are split into lines by Arrow's
``split_pattern`` on multi-megabyte blocks, the other formats are parsed by Arrow itself.

The ``text`` column of text and CSV/TSV files is *binary*: bytes are decoded by the cleaning
step, so one line that is not UTF-8 becomes an ``invalid_utf8`` reject instead of stopping
the run. Files ending in ``.gz``, ``.bz2``, ``.zst`` or ``.lz4`` are decompressed on the fly.

Example:
    >>> from cseaug.config import CorpusConfig
    >>> source = open_corpus(CorpusConfig(path="examples/demo_corpus.txt"))  # doctest: +SKIP
    >>> next(source.batches()).column_names  # doctest: +SKIP
    ['text']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pyarrow.parquet as pq

from cseaug.config import CorpusConfig
from cseaug.errors import ConfigError, InputError, require
from cseaug.hashing import file_sha256

TEXT = "text"
"""Name of the sentence column in every batch a reader yields."""

BATCH_ROWS = 65_536
"""Rows per batch for the formats whose reader takes a row count (Parquet, HF datasets)."""

TEXT_BLOCK_BYTES = 8 << 20
"""Bytes read at a time from a text file (about 65k lines of 120 characters)."""

FORMAT_BY_SUFFIX: dict[str, str] = {
    ".txt": "text",
    ".text": "text",
    ".csv": "csv",
    ".tsv": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
COMPRESSION_SUFFIXES = frozenset({".gz", ".bz2", ".zst", ".lz4"})
UTF8_BOM = b"\xef\xbb\xbf"

RejectRecord = dict[str, Any]


@dataclass
class CorpusSource:
    """A validated corpus, ready to be streamed.

    Args:
        name: corpus name (part of every row id).
        format: text, csv, tsv, jsonl, parquet or hf.
        location: the path or dataset id, as configured.
        view_columns: view name -> source column.
        record_key: key of the record number in reject details: ``line`` for text files
            (the physical line number), ``record`` for the others (1-based data record:
            CSV rows after the header, JSON objects, Parquet / dataset rows).
        total_records: number of records when known up front (Parquet, HF), for progress.
        reader_rejects: records the parser itself dropped (malformed CSV rows), filled
            while :meth:`batches` runs.
    """

    name: str
    format: str
    location: str
    view_columns: dict[str, str]
    record_key: str
    total_records: int | None
    _read: Callable[[], Iterator[pa.RecordBatch]]
    _hash_inputs: Callable[[], dict[str, str]]
    reader_rejects: list[RejectRecord] = field(default_factory=list)

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Record batches with ``text`` (binary or string) and the view columns (string)."""
        try:
            yield from self._read()
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
            raise InputError(f"cannot read corpus {self.location} ({self.format}): {exc}") from exc

    def input_sha256(self) -> dict[str, str]:
        """sha256 of every input file (streamed), keyed by path or dataset file."""
        return self._hash_inputs()


def detect_format(path: Path) -> str:
    """The format of a corpus file from its suffix (a compression suffix is looked through).

    Example:
        >>> detect_format(Path("wiki1m.txt.gz"))
        'text'
    """
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes = suffixes[:-1]
    suffix = suffixes[-1] if suffixes else ""
    if suffix not in FORMAT_BY_SUFFIX:
        known = ", ".join(sorted(FORMAT_BY_SUFFIX))
        raise InputError(
            f"cannot tell the format of corpus {path} from its suffix '{suffix}' (known: {known}); "
            "set corpus.format to text, csv, tsv, jsonl or parquet"
        )
    return FORMAT_BY_SUFFIX[suffix]


def open_corpus(cfg: CorpusConfig) -> CorpusSource:
    """Validate a corpus config against its input and return a streaming source.

    Raises:
        ConfigError: options that contradict the format (columns for a text file, ...).
        InputError: missing file, unknown format, missing column, empty corpus,
            dataset that cannot be loaded.

    Example:
        >>> from cseaug.config import CorpusConfig
        >>> cfg = CorpusConfig(path="nli.csv", text_column="sent0",
        ...                    view_columns={"positive": "sent1"})
        >>> source = open_corpus(cfg)  # doctest: +SKIP
    """
    if cfg.hf_dataset is not None:
        if cfg.format not in ("auto", "hf"):
            raise ConfigError(
                f"corpus.format is '{cfg.format}' but corpus.hf_dataset is set; use format 'hf' or 'auto'"
            )
        return _open_hf(cfg)
    if cfg.format == "hf":
        raise ConfigError(
            "corpus.format 'hf' needs corpus.hf_dataset (a dataset id or local dataset directory)"
        )
    assert cfg.path is not None  # CorpusConfig guarantees one source
    path = Path(cfg.path)
    if not path.exists():
        raise InputError(
            f"corpus file not found: {path} (corpus.path; relative paths start at {Path.cwd()})"
        )
    fmt = detect_format(path) if cfg.format == "auto" else cfg.format
    if path.is_dir() and fmt != "parquet":
        raise InputError(
            f"corpus.path {path} is a directory; only Parquet corpora may be directories"
        )
    name = cfg.name or _stem(path)
    if fmt == "text":
        return _open_text(cfg, path, name)
    if fmt in ("csv", "tsv"):
        return _open_csv(cfg, path, name, fmt)
    if fmt == "jsonl":
        return _open_jsonl(cfg, path, name)
    return _open_parquet(cfg, path, name)


# ---------------------------------------------------------------------------- helpers


def _stem(path: Path) -> str:
    """``wiki1m.txt.gz`` -> ``wiki1m``: the default corpus name."""
    if path.suffix.lower() in COMPRESSION_SUFFIXES:
        path = path.with_suffix("")
    return path.stem


def _require_nonempty_file(path: Path) -> None:
    if path.stat().st_size == 0:
        raise InputError(f"corpus file {path} is empty")


def _check_columns(
    cfg: CorpusConfig, present: list[str], where: str, fmt: str
) -> tuple[str, dict[str, str]]:
    """The text column and views, after checking that each is among ``present``."""
    listed = ", ".join(present) or "(none)"
    if cfg.text_column is None:
        raise InputError(
            f"corpus.text_column is required for {fmt} corpora; columns in {where}: {listed}"
        )
    wanted = {"corpus.text_column": cfg.text_column} | {
        f"corpus.view_columns.{view}": column for view, column in cfg.view_columns.items()
    }
    for key, column in wanted.items():
        if column not in present:
            raise InputError(
                f"{key} '{column}' is not a column of {where}; columns present: {listed}"
            )
    return cfg.text_column, dict(cfg.view_columns)


def _as_text(
    values: pa.Array | pa.ChunkedArray, column: str, where: str, *, keep_binary: bool
) -> pa.Array:
    """A column as string (or binary, left for the cleaning step to decode)."""
    kind = values.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return values.cast(pa.string())
    if keep_binary and (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
        return values.cast(pa.binary())
    if pa.types.is_null(kind):
        return pa.nulls(len(values), pa.string())
    raise InputError(f"column '{column}' of {where} has type {kind}, not text; name a text column")


def _select(
    table: pa.Table | pa.RecordBatch, text_column: str, views: dict[str, str], where: str
) -> pa.RecordBatch:
    """The reader's output batch: ``text`` then the views, renamed by view."""
    arrays = [_as_text(_combined(table.column(text_column)), text_column, where, keep_binary=True)]
    arrays += [
        _as_text(_combined(table.column(col)), col, where, keep_binary=False)
        for col in views.values()
    ]
    return pa.RecordBatch.from_arrays(arrays, names=[TEXT, *views])


def _combined(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values


def _hash_files(files: list[Path]) -> Callable[[], dict[str, str]]:
    return lambda: {str(f): file_sha256(f) for f in files}


# ---------------------------------------------------------------------------- text


def _open_text(cfg: CorpusConfig, path: Path, name: str) -> CorpusSource:
    if cfg.text_column is not None or cfg.view_columns:
        raise ConfigError(
            f"corpus {path} is a text file (one sentence per line): it has no columns; remove "
            "corpus.text_column / corpus.view_columns or set corpus.format to csv, tsv, jsonl or parquet"
        )
    _require_nonempty_file(path)
    return CorpusSource(
        name=name,
        format="text",
        location=str(path),
        view_columns={},
        record_key="line",
        total_records=None,
        _read=lambda: _text_batches(path),
        _hash_inputs=_hash_files([path]),
    )


def _text_batches(path: Path, block_bytes: int = TEXT_BLOCK_BYTES) -> Iterator[pa.RecordBatch]:
    """Lines of a text file as binary batches; ``\\n`` or ``\\r\\n`` ends a line, a BOM is dropped.

    Blocks stay Arrow buffers end to end (no Python bytes of the block's size).
    """
    with pa.input_stream(str(path), compression="detect") as stream:
        carry: pa.Buffer | None = None
        first = True
        while True:
            block = stream.read_buffer(max(block_bytes, len(UTF8_BOM)) if first else block_bytes)
            if block.size == 0:
                break
            if first:
                first = False
                if (
                    block.size >= len(UTF8_BOM)
                    and block.slice(0, len(UTF8_BOM)).to_pybytes() == UTF8_BOM
                ):
                    block = block.slice(len(UTF8_BOM))
            data = _join(carry, block) if carry is not None and carry.size else block
            cut = _last_newline(data)
            if cut < 0:
                carry = data
                continue
            carry = data.slice(cut + 1)
            yield _lines_batch(data.slice(0, cut))
        if carry is not None and carry.size:
            yield _lines_batch(carry)


def _join(head: pa.Buffer, tail: pa.Buffer) -> pa.Buffer:
    """One Arrow buffer holding ``head`` then ``tail`` (a line cut by the block boundary)."""
    joined = pa.allocate_buffer(head.size + tail.size)
    out = np.frombuffer(joined, dtype=np.uint8)
    out[: head.size] = np.frombuffer(head, dtype=np.uint8)
    out[head.size :] = np.frombuffer(tail, dtype=np.uint8)
    return joined


def _last_newline(data: pa.Buffer, window: int = 1 << 16) -> int:
    """Offset of the last ``\\n`` in ``data`` (-1 if none), scanning back a window at a time."""
    values = np.frombuffer(data, dtype=np.uint8)
    for end in range(len(values), 0, -window):
        found = np.flatnonzero(values[max(0, end - window) : end] == 0x0A)
        if found.size:
            return max(0, end - window) + int(found[-1])
    return -1


def _lines_batch(data: pa.Buffer) -> pa.RecordBatch:
    """Split a block of whole lines (without the final newline) into one binary value per line."""
    offsets = pa.py_buffer(np.array([0, data.size], dtype=np.int32))
    block = pa.Array.from_buffers(pa.binary(), 1, [None, offsets, data])
    lines = pc.list_flatten(pc.split_pattern(block, b"\n"))
    crlf = pc.ends_with(lines, b"\r")
    if pc.any(crlf).as_py():
        lines = pc.replace_with_mask(lines, crlf, pc.binary_slice(lines.filter(crlf), 0, -1))
    return pa.RecordBatch.from_arrays([lines], names=[TEXT])


# ---------------------------------------------------------------------------- csv / tsv


def _csv_parse_options(fmt: str, on_invalid: Callable[[Any], str] | None) -> pcsv.ParseOptions:
    if fmt == "tsv":
        # TSV has no quoting (IANA text/tab-separated-values): a quote is a character of the text.
        return pcsv.ParseOptions(delimiter="\t", quote_char=False, invalid_row_handler=on_invalid)
    return pcsv.ParseOptions(delimiter=",", newlines_in_values=True, invalid_row_handler=on_invalid)


def _open_csv(cfg: CorpusConfig, path: Path, name: str, fmt: str) -> CorpusSource:
    _require_nonempty_file(path)
    try:
        header = pcsv.open_csv(
            str(path), parse_options=_csv_parse_options(fmt, lambda row: "skip")
        ).schema.names
    except pa.ArrowInvalid as exc:
        raise InputError(
            f"cannot read the header of corpus {path} ({fmt}; a header row is required): {exc}"
        ) from exc
    text_column, views = _check_columns(cfg, header, str(path), fmt)
    malformed: list[RejectRecord] = []

    def on_invalid(row: Any) -> str:
        # Arrow knows the line number only when values cannot hold newlines (TSV).
        malformed.append(
            {
                "raw": row.text,
                "detail": {
                    "line": row.number,
                    "expected_columns": row.expected_columns,
                    "actual_columns": row.actual_columns,
                },
            }
        )
        return "skip"

    def read() -> Iterator[pa.RecordBatch]:
        columns = [text_column, *views.values()]
        types = {text_column: pa.binary()} | {col: pa.string() for col in views.values()}
        reader = pcsv.open_csv(
            str(path),
            parse_options=_csv_parse_options(fmt, on_invalid),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=columns, strings_can_be_null=False
            ),
        )
        for batch in reader:
            yield _select(batch, text_column, views, str(path))

    return CorpusSource(
        name=name,
        format=fmt,
        location=str(path),
        view_columns=views,
        record_key="record",
        total_records=None,
        _read=read,
        _hash_inputs=_hash_files([path]),
        reader_rejects=malformed,
    )


# ---------------------------------------------------------------------------- jsonl


def _first_json_keys(path: Path) -> list[str]:
    """Keys of the first JSON object of a JSON Lines file (the file's columns, as far as we check)."""
    table = pjson.read_json(
        pa.BufferReader(_first_nonblank_line(path)),
        read_options=pjson.ReadOptions(use_threads=False),
    )
    return table.schema.names


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


def _open_jsonl(cfg: CorpusConfig, path: Path, name: str) -> CorpusSource:
    _require_nonempty_file(path)
    try:
        keys = _first_json_keys(path)
    except pa.ArrowInvalid as exc:
        raise InputError(f"the first record of corpus {path} is not a JSON object: {exc}") from exc
    text_column, views = _check_columns(cfg, keys, f"{path} (keys of its first record)", "jsonl")
    columns = [text_column, *views.values()]
    schema = pa.schema([(col, pa.string()) for col in dict.fromkeys(columns)])

    def read() -> Iterator[pa.RecordBatch]:
        parse = pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        with pa.input_stream(str(path), compression="detect") as stream:
            for batch in pjson.open_json(stream, parse_options=parse):
                yield _select(batch, text_column, views, str(path))

    return CorpusSource(
        name=name,
        format="jsonl",
        location=str(path),
        view_columns=views,
        record_key="record",
        total_records=None,
        _read=read,
        _hash_inputs=_hash_files([path]),
    )


# ---------------------------------------------------------------------------- parquet


def _open_parquet(cfg: CorpusConfig, path: Path, name: str) -> CorpusSource:
    files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    if not files:
        raise InputError(f"corpus directory {path} holds no *.parquet file")
    try:
        metas = [pq.ParquetFile(f) for f in files]
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"corpus {path} is not readable as Parquet: {exc}") from exc
    text_column, views = _check_columns(cfg, metas[0].schema_arrow.names, str(files[0]), "parquet")
    total = sum(m.metadata.num_rows for m in metas)
    if total == 0:
        raise InputError(f"corpus {path} is empty (0 Parquet rows)")
    columns = list(dict.fromkeys([text_column, *views.values()]))

    def read() -> Iterator[pa.RecordBatch]:
        for f in files:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=BATCH_ROWS, columns=columns):
                yield _select(batch, text_column, views, str(f))

    return CorpusSource(
        name=name,
        format="parquet",
        location=str(path),
        view_columns=views,
        record_key="record",
        total_records=total,
        _read=read,
        _hash_inputs=_hash_files(files),
    )


# ---------------------------------------------------------------------------- Hugging Face


def _load_hf(cfg: CorpusConfig) -> Any:
    datasets = require("datasets", "hf", "Reading a Hugging Face dataset (corpus.hf_dataset)")
    ident = cfg.hf_dataset
    assert ident is not None
    local = Path(ident)
    try:
        if (local / "state.json").is_file() or (local / "dataset_dict.json").is_file():
            # A directory written by Dataset.save_to_disk: load_dataset refuses those.
            loaded = datasets.load_from_disk(str(local))
            return loaded[cfg.hf_split] if isinstance(loaded, datasets.DatasetDict) else loaded
        return datasets.load_dataset(ident, cfg.hf_config, split=cfg.hf_split)
    except (
        Exception
    ) as exc:  # datasets raises many unrelated types (ConnectionError, ValueError, ...)
        raise InputError(
            f"cannot load Hugging Face dataset '{ident}' (config {cfg.hf_config!r}, split "
            f"'{cfg.hf_split}'): {exc}. Offline, give a local dataset directory or data files."
        ) from exc


def _open_hf(cfg: CorpusConfig) -> CorpusSource:
    ident = cfg.hf_dataset
    assert ident is not None
    dataset = _load_hf(cfg)
    where = f"Hugging Face dataset '{ident}' (split '{cfg.hf_split}')"
    text_column, views = _check_columns(cfg, list(dataset.column_names), where, "hf")
    if len(dataset) == 0:
        raise InputError(f"{where} is empty")
    local = Path(ident)
    name = cfg.name or (local.name if local.exists() else ident)
    columns = list(dict.fromkeys([text_column, *views.values()]))

    def read() -> Iterator[pa.RecordBatch]:
        selected = dataset.select_columns(columns).with_format("arrow")
        for table in selected.iter(batch_size=BATCH_ROWS):
            yield _select(table, text_column, views, where)

    def hash_inputs() -> dict[str, str]:
        prefix = f"hf://{ident}/{cfg.hf_config or 'default'}/{cfg.hf_split}"
        files = sorted(Path(f["filename"]) for f in dataset.cache_files)
        return {f"{prefix}/{f.name}": file_sha256(f) for f in files}

    return CorpusSource(
        name=name,
        format="hf",
        location=ident,
        view_columns=views,
        record_key="record",
        total_records=len(dataset),
        _read=read,
        _hash_inputs=hash_inputs,
    )
