"""JSON Lines corpora: one object per line, streamed by Arrow's JSON reader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pjson

from cseaug.config import CorpusConfig
from cseaug.errors import InputError
from cseaug.readers.source import (
    UTF8_BOM,
    CorpusSource,
    check_columns,
    hash_files,
    reader_batch,
    require_nonempty_file,
)


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
    text_column, views = check_columns(cfg, keys, f"{path} (keys of its first record)", "jsonl")
    columns = [text_column, *views.values()]
    schema = pa.schema([(col, pa.string()) for col in dict.fromkeys(columns)])

    def read() -> Iterator[pa.RecordBatch]:
        parse = pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        with pa.input_stream(str(path), compression="detect") as stream:
            for batch in pjson.open_json(stream, parse_options=parse):
                yield reader_batch(batch, text_column, views, str(path))

    return CorpusSource(
        name=name,
        format="jsonl",
        location=str(path),
        view_columns=views,
        _read=read,
        input_sha256=hash_files([path]),
    )
