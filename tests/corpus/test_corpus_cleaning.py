"""Cleaning: normalisation and every drop reason, vectorised over Arrow batches."""

from __future__ import annotations

import json
import random
import re
import unicodedata

import pyarrow as pa
import pytest

from cseaug.corpus.cleaning import clean_batch, decode_utf8, normalise_text, normalise_view
from cseaug.dataset.schema import REJECTS_SCHEMA


def batch(*lines: bytes | str | None, **views: list) -> pa.RecordBatch:
    values = [v.encode() if isinstance(v, str) else v for v in lines]
    arrays = [pa.array(values, pa.binary())] + [pa.array(v, pa.string()) for v in views.values()]
    return pa.RecordBatch.from_arrays(arrays, names=["text", *views])


def test_nfc_composes_decomposed_accents() -> None:
    decomposed = "Cafe\u0301 cre\u0300me"
    assert unicodedata.is_normalized("NFC", decomposed) is False
    assert normalise_text(pa.array([decomposed])).to_pylist() == ["Café crème"]


@pytest.mark.parametrize(
    "raw",
    [
        "a  b",
        " a b ",
        "a\tb",
        "a\u00a0b",  # no-break space
        "a\u3000b",  # ideographic space
        "a\u2028b",  # line separator
        "a\x85b",  # next line (C1, but whitespace)
        "a\x0bb",  # vertical tab
        "\t a \r\n b \f",
    ],
)
def test_whitespace_runs_collapse(raw: str) -> None:
    assert normalise_text(pa.array([raw])).to_pylist() == ["a b"]


def test_normalise_keeps_nulls_and_normal_text() -> None:
    assert normalise_text(pa.array(["fine.", None, ""])).to_pylist() == ["fine.", None, ""]


def test_view_normalised_and_empty_is_null() -> None:
    assert normalise_view(pa.array([" x  y ", "  ", None])).to_pylist() == ["x y", None, None]


def test_decode_utf8_escapes_only_bad_values() -> None:
    text, escaped = decode_utf8(pa.array([b"ok", b"bad\xff", None], pa.binary()))
    assert text.to_pylist() == ["ok", None, None]
    assert escaped is not None and escaped.to_pylist() == [None, "bad\\xff", None]
    text, escaped = decode_utf8(pa.array([b"ok"], pa.binary()))
    assert escaped is None and text.to_pylist() == ["ok"]


def test_every_reason_with_raw_and_line_number() -> None:
    lines = [
        "Keep me.",  # 1
        "",  # 2 empty
        "   \t ",  # 3 empty after normalising
        b"bad \xc3\x28 bytes",  # 4 invalid UTF-8
        "nul\x00inside",  # 5 control (C0)
        "c1\x9fcontrol",  # 6 control (C1)
        "unit\x1fsep",  # 7 control (information separator is not whitespace here)
        "ab",  # 8 too short (min 3)
        "x" * 21,  # 9 too long (max 20)
        "  Spaced   out. ",  # 10 kept, normalised
        None,  # 11 null value
    ]
    out = clean_batch(batch(*lines), 1, min_chars=3, max_chars=20, record_key="line")
    assert out.kept.column("sentence").to_pylist() == ["Keep me.", "Spaced out."]
    assert out.kept.column("record").to_pylist() == [1, 10]
    assert out.kept.column("raw").to_pylist() == [None, "  Spaced   out. "]
    assert out.rejects.schema.equals(REJECTS_SCHEMA)
    got = {
        json.loads(d)["line"]: r
        for d, r in zip(
            out.rejects.column("detail").to_pylist(), out.rejects.to_pylist(), strict=True
        )
    }
    assert {line: r["reason"] for line, r in got.items()} == {
        2: "empty",
        3: "empty",
        4: "invalid_utf8",
        5: "control_characters",
        6: "control_characters",
        7: "control_characters",
        8: "too_short",
        9: "too_long",
        11: "empty",
    }
    assert got[3]["raw"] == "   \t " and got[3]["sentence"] is None
    assert got[4]["raw"] == "bad \\xc3( bytes"
    assert got[5]["raw"] == "nul\x00inside" and got[5]["sentence"] == "nul\x00inside"
    assert json.loads(got[9]["detail"]) == {"line": 9, "chars": 21}
    assert json.loads(got[2]["detail"]) == {"line": 2}
    assert got[11]["raw"] is None
    assert set(out.rejects.column("stage").to_pylist()) == {"corpus"}


def test_record_numbers_continue_across_batches_and_views_are_carried() -> None:
    b = batch("One.", "", "Three.", positive=["p1", "p2", "  "], negative=["n1", "n2", "n3"])
    out = clean_batch(b, 101, min_chars=1, max_chars=100, record_key="record")
    assert out.kept.column("record").to_pylist() == [101, 103]
    assert out.kept.column("positive").to_pylist() == ["p1", None]
    assert out.kept.column("negative").to_pylist() == ["n1", "n3"]
    assert json.loads(out.rejects.column("detail")[0].as_py()) == {"record": 102}


WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)


def reference_normalise(line: str) -> str:
    nfc = unicodedata.normalize("NFC", line)
    return re.sub(f"[{re.escape(WHITE_SPACE)}]+", " ", nfc).strip(" ")


def test_matches_a_python_reference_on_random_lines() -> None:
    """The byte-level shortcuts (ASCII skip, attention regex) change nothing."""
    alphabet = [
        *"ab .,",
        "é",
        "e\u0301",
        *WHITE_SPACE,
        "\x00",
        "\x1f",
        "\x7f",
        "\x9f",
        "\u200b",  # zero-width space: not White_Space, kept
        "\u2026",  # ellipsis (E2 80 A6): looks like the whitespace bytes, is not
        "\u2013",
        "\u3001",
        "\U0001f642",
    ]
    rng = random.Random(0)
    lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(4000)]
    got = normalise_text(pa.array(lines)).to_pylist()
    assert got == [reference_normalise(line) for line in lines]

    out = clean_batch(batch(*lines), 1, min_chars=1, max_chars=1000)
    reasons = dict.fromkeys(range(1, len(lines) + 1), None)
    for detail, reason in zip(
        out.rejects.column("detail").to_pylist(),
        out.rejects.column("reason").to_pylist(),
        strict=True,
    ):
        reasons[json.loads(detail)["line"]] = reason
    for number, line in enumerate(lines, start=1):
        normal = reference_normalise(line)
        expected = (
            "empty"
            if not normal
            else "control_characters"
            if any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in normal)
            else None
        )
        assert reasons[number] == expected, (line, normal)
