"""Text corpora: one sentence per line, split by Arrow on multi-megabyte blocks into a
*binary* ``text`` column (the cleaning step decodes it, so a line that is not UTF-8 becomes
a reject instead of stopping the run); compressed files are decompressed on the fly.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cseaug.config import CorpusConfig
from cseaug.errors import ConfigError, InputError
from cseaug.readers.source import (
    TEXT,
    UTF8_BOM,
    CorpusSource,
    file_source,
    require_nonempty_file,
)

TEXT_BLOCK_BYTES = 8 << 20

MAX_LINE_BYTES = 1 << 20
"""A line longer than this (or than 4 bytes per ``corpus.max_chars``) is no sentence: the
file is refused in the block that holds it (a binary file, a file without line ends)."""


def open_text(cfg: CorpusConfig, path: Path, name: str) -> CorpusSource:
    """A text corpus (no columns: ``corpus.text_column`` and ``view_columns`` are refused)."""
    if cfg.text_column is not None or cfg.view_columns:
        raise ConfigError(
            f"corpus {path} is a text file (one sentence per line): it has no columns; remove "
            "corpus.text_column / corpus.view_columns or set corpus.format to csv, tsv, jsonl or parquet"
        )
    require_nonempty_file(path)
    limit = max(MAX_LINE_BYTES, 4 * cfg.max_chars)
    with closing(read_lines(path, block_bytes=limit + 1, max_line_bytes=limit)) as head:
        next(head, None)  # a first line too long is refused now, before a build hashes the file
    return file_source(
        name, "text", path, lambda: read_lines(path, max_line_bytes=limit), record_key="line"
    )


def read_lines(
    path: Path, block_bytes: int = TEXT_BLOCK_BYTES, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[pa.RecordBatch]:
    """Lines of a text file as binary batches, ``block_bytes`` read at a time as Arrow buffers
    (a line cut by a block boundary is joined); ``\\n`` or ``\\r\\n`` ends a line, a BOM is
    dropped, and a line longer than ``max_line_bytes`` is an InputError.

    Example:
        >>> from pathlib import Path
        >>> path = Path("/tmp/cseaug-read-lines-doctest.txt")
        >>> _ = path.write_bytes(b"one\\r\\ntwo\\n")
        >>> [b.column("text").to_pylist() for b in read_lines(path, block_bytes=4)]
        [[b'one'], [b'two']]
    """
    with pa.input_stream(str(path), compression="detect") as stream:
        data = stream.read_buffer(max(block_bytes, len(UTF8_BOM)))
        if bytes(memoryview(data)[: len(UTF8_BOM)]) == UTF8_BOM:
            data = data.slice(len(UTF8_BOM))
        lines = 0  # read so far
        while True:
            ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A)
            lengths = np.diff(ends, prepend=-1, append=data.size) - 1  # the last: unfinished
            if lengths.max() > max_line_bytes:
                line = lines + int(np.argmax(lengths > max_line_bytes)) + 1
                raise InputError(
                    f"corpus {path}: line {line:,} is longer than {max_line_bytes:,} bytes: not "
                    "a text file of one sentence per line (a binary file, a file of NUL bytes, "
                    "no line ends?)"
                )
            cut = int(ends[-1]) if ends.size else -1
            if cut >= 0:
                yield _lines_batch(data.slice(0, cut))
                lines += ends.size
            carry = data.slice(cut + 1)
            block = stream.read_buffer(block_bytes)
            if block.size == 0:
                break
            data = _join(carry, block) if carry.size else block
        if carry.size:
            yield _lines_batch(carry)


def _join(head: pa.Buffer, tail: pa.Buffer) -> pa.Buffer:
    """One Arrow buffer holding ``head`` then ``tail`` (a line cut by the block boundary)."""
    joined = pa.allocate_buffer(head.size + tail.size)
    np.concatenate([head, tail], out=np.frombuffer(joined, dtype=np.int8))
    return joined


def _lines_batch(data: pa.Buffer) -> pa.RecordBatch:
    """Split a block of whole lines (without the final newline) into one binary value per line."""
    offsets = pa.py_buffer(np.array([0, data.size], dtype=np.int32))
    block = pa.Array.from_buffers(pa.binary(), 1, [None, offsets, data])
    lines = pc.list_flatten(pc.split_pattern(block, b"\n"))
    crlf = pc.ends_with(lines, b"\r")
    if pc.any(crlf).as_py():
        lines = pc.replace_with_mask(lines, crlf, pc.binary_slice(lines.filter(crlf), 0, -1))
    return pa.RecordBatch.from_arrays([lines], names=[TEXT])
