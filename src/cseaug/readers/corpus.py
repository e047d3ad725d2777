"""Open a corpus: pick the reader of its format, which checks the input before any work.

Example:
    >>> from cseaug.config import CorpusConfig
    >>> source = open_corpus(CorpusConfig(path="examples/demo_corpus.txt"))
    >>> next(source.batches()).column_names
    ['text']
"""

from __future__ import annotations

from pathlib import Path

from cseaug.config import CorpusConfig
from cseaug.errors import ConfigError, InputError
from cseaug.readers.columns import open_delimited, open_hf, open_jsonl, open_parquet
from cseaug.readers.source import CorpusSource
from cseaug.readers.text import open_text

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


def detect_format(path: Path) -> str:
    """The format of a corpus file from its suffix (a compression suffix is looked through).

    Example:
        >>> detect_format(Path("wiki1m.txt.gz"))
        'text'
    """
    suffix = _uncompressed(path).suffix.lower()
    if suffix not in FORMAT_BY_SUFFIX:
        known = ", ".join(sorted(FORMAT_BY_SUFFIX))
        raise InputError(
            f"cannot tell the format of corpus {path} from its suffix '{suffix}' (known: {known}); "
            "set corpus.format to text, csv, tsv, jsonl or parquet"
        )
    return FORMAT_BY_SUFFIX[suffix]


def open_corpus(cfg: CorpusConfig) -> CorpusSource:
    """A streaming source of the corpus, checked against its config: ConfigError for options
    that contradict the format, InputError for a missing, empty or unreadable input."""
    if cfg.hf_dataset is not None:
        if cfg.format not in ("auto", "hf"):
            raise ConfigError(
                f"corpus.format is '{cfg.format}' but corpus.hf_dataset is set; use format 'hf' or 'auto'"
            )
        return open_hf(cfg)
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
    name = cfg.name or _uncompressed(path).stem
    if fmt == "text":
        return open_text(cfg, path, name)
    if fmt in ("csv", "tsv"):
        return open_delimited(cfg, path, name, fmt)
    if fmt == "jsonl":
        return open_jsonl(cfg, path, name)
    return open_parquet(cfg, path, name)


def _uncompressed(path: Path) -> Path:
    """``wiki1m.txt.gz`` -> ``wiki1m.txt``: the name without a compression suffix."""
    return path.with_suffix("") if path.suffix.lower() in COMPRESSION_SUFFIXES else path
