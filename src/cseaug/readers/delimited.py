"""CSV and TSV corpora with a header row, parsed by Arrow.

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

from cseaug.config import CorpusConfig
from cseaug.errors import InputError
from cseaug.readers.source import (
    CorpusSource,
    RejectRecord,
    check_columns,
    hash_files,
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
    text_column, views = check_columns(cfg, header, str(path), fmt)
    malformed: list[RejectRecord] = []

    def on_invalid(row: Any) -> str:
        # Arrow knows the line number only when values cannot hold newlines (TSV).
        columns = {"expected_columns": row.expected_columns, "actual_columns": row.actual_columns}
        malformed.append({"raw": row.text, "detail": {"line": row.number, **columns}})
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
            yield reader_batch(batch, text_column, views, str(path))

    return CorpusSource(
        name=name,
        format=fmt,
        location=str(path),
        view_columns=views,
        _read=read,
        input_sha256=hash_files([path]),
        reader_rejects=malformed,
    )
