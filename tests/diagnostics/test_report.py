"""The report of a version (``diagnostics/report.html``): written when publishing and by
``cseaug report``, read in a real headless Chromium (docs/diagnostics.md, "The report")."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from PIL import Image

from cseaug.config import DiagnosticsConfig
from cseaug.dataset.reader import read_rows
from cseaug.dataset.schema import rejects_table, row_id, rows_table
from cseaug.dataset.staging import publish_version
from cseaug.dataset.verify import verify_version
from cseaug.diagnostics import report
from cseaug.diagnostics.patterns import order_holds, order_matrix
from cseaug.diagnostics.version import DiagnosticsSummary, write_diagnostics
from cseaug.encoders.loading import encoder_from_config
from cseaug.errors import InputError
from cseaug.pipeline.cs import CSStep
from tests.browser import Browser, chromium_or_skip

# anchor, positive, intermediate, negative: the last two rows break the graded order
ROWS = [
    ("A man is playing a guitar on stage.", "A man plays the guitar on a stage.",
     "A man is holding a guitar.", "A woman is slicing onions in a kitchen."),
    ("Two dogs run through the snow.", "Two dogs are running in the snow.",
     "Dogs are playing outside.", "The stock market fell sharply today."),
    ("The children are reading books in the library.", "Kids read books in a library.",
     "Children are in a library.", "A pilot lands a plane at night."),
    ("A chef is cooking pasta in a restaurant.", "A cook prepares pasta at a restaurant.",
     "Someone is cooking food.", "The river floods the valley every spring."),
    ("She planted tomatoes in her garden.", "The election results were announced.",
     "She is gardening.", "She planted tomatoes in her garden yesterday."),
    ("The train arrived late at the station.", "A bird sings in a tree.",
     "The train was delayed.", "The train arrived late at the main station."),
]  # fmt: skip
CORPUS = ["A short sentence of the corpus.", "Another sentence nobody augmented."]
BROKEN = {row_id("test", anchor) for anchor, *_ in ROWS[-2:]}


def demo_rows() -> pa.Table:
    records: list[dict[str, Any]] = [
        {"id": row_id("test", a), "sentence": a, "split": "aigen", "method": "sts",
         "positive": p, "intermediate": i, "negative": n}
        for a, p, i, n in ROWS
    ]  # fmt: skip
    records += [{"id": row_id("test", s), "sentence": s, "split": "other"} for s in CORPUS]
    return rows_table(records)


def demo_rejects() -> pa.Table:
    return rejects_table(
        [
            {"id": "a1", "sentence": "The sun rises in the east.", "stage": "llm",
             "view": "positive", "reason": "copied_anchor", "raw": "The sun rises in the east."},
            {"id": "a2", "sentence": "Cats sleep a lot.", "stage": "llm", "view": "negative",
             "reason": "copied_anchor", "raw": "Cats sleep a lot."},
            {"id": "a3", "sentence": "Birds fly south.", "stage": "quality", "view": None,
             "reason": "judge", "detail": json.dumps({"scores": {"positive": 1}})},
            {"id": None, "sentence": "duplicate line", "stage": "corpus", "reason": "duplicate"},
        ]
    )  # fmt: skip


def embedded(html: str) -> dict[str, Any]:
    """The JSON the page holds."""
    start = html.index("const DATA = ") + len("const DATA = ")
    return json.loads(html[start : html.index(";\nconst SHOWN")].replace("<\\/", "</"))


@pytest.fixture(scope="module")
def minilm():
    encoder = encoder_from_config(DiagnosticsConfig(device="cpu", embedding_cache=False))
    yield encoder
    encoder.close()


@pytest.fixture
def version(tmp_path: Path, manifest: dict[str, Any], minilm) -> Path:
    """``demo/v0001``: published with its diagnostics and report, as a build publishes."""
    cfg = DiagnosticsConfig(device="cpu", embedding_cache=False)

    def diagnostics(staging: Path) -> None:
        write_diagnostics(staging, staging / "diagnostics", cfg, encoder=minilm)
        report.write_report(
            staging, staging / "diagnostics" / "report.html", manifest, cfg, encoder=minilm
        )

    return publish_version(
        [demo_rows()], [demo_rejects()], root=tmp_path / "storage", name="demo",
        manifest=manifest, heldout_fraction=0.0, before_publish=diagnostics,
    ).path  # fmt: skip


GRID_IDS = "[...document.querySelectorAll('#grid tbody tr')].map(r => r.cells[0].textContent)"


@pytest.mark.slow
def test_the_report_of_a_published_version_works_offline_in_chromium(
    version: Path, tmp_path: Path, minilm
) -> None:
    """Proves 29.1 and 29.4: the version lists and hashes its report; Chromium opens it with
    no console error and no request beyond the file and its data: images; the grid holds
    every row with views; sorting, the order filter and the search change what is shown;
    the page is drawn (the screenshot is not blank)."""
    binary = chromium_or_skip()
    listed = {f["path"] for f in json.loads((version / "manifest.json").read_text())["files"]}
    assert "diagnostics/report.html" in listed
    verify_version(version).raise_if_wrong()
    rows = read_rows(version).filter(pc.is_valid(pc.field("positive")))
    rows = CSStep(lambda: minilm, seed=0)(rows).rows  # the CS the report computed
    ordered = [order_holds(order_matrix(rows, m), m)[1] for m in ("mer", "cs")]
    broken = {
        i for i, mer, cs in zip(rows["id"].to_pylist(), *ordered, strict=True) if not (mer and cs)
    }
    assert BROKEN <= broken < set(rows["id"].to_pylist())

    profile = tmp_path / "profile"
    profile.mkdir()
    with Browser(binary, profile) as page:
        page.open((version / "diagnostics" / "report.html").as_uri())
        assert sorted(page.evaluate(GRID_IDS)) == sorted(rows["id"].to_pylist())

        # sorting by a view's CS, ascending then descending
        cs_column = page.evaluate(
            "[...document.querySelectorAll('#grid thead th')].findIndex(th => th.textContent === 'positive CS')"
        )
        click = f"document.querySelectorAll('#grid thead th')[{cs_column}].click()"
        cells = f"[...document.querySelectorAll('#grid tbody tr')].map(r => Number(r.cells[{cs_column}].textContent))"
        page.evaluate(click)
        ascending = page.evaluate(cells)
        assert ascending == sorted(ascending) and len(set(ascending)) > 1
        page.evaluate(click)
        assert page.evaluate(cells) == sorted(ascending, reverse=True)

        # the order filter shows the rows that break the graded order, and only them
        page.evaluate(
            "const f = document.getElementById('filter'); f.value = 'broken';"
            "f.dispatchEvent(new Event('change'))"
        )
        assert set(page.evaluate(GRID_IDS)) == broken
        # the rows whose views are least / most like their anchor, first
        for mode, view, extreme in (
            ("low-positive", "positive", min),
            ("high-negative", "negative", max),
        ):
            page.evaluate(
                f"{{ const g = document.getElementById('filter'); g.value = '{mode}';"
                "g.dispatchEvent(new Event('change')) }"
            )
            column = page.evaluate(
                f"[...document.querySelectorAll('#grid thead th')].findIndex(th => th.textContent === '{view} CS')"
            )
            shown = page.evaluate(
                f"[...document.querySelectorAll('#grid tbody tr')].map(r => Number(r.cells[{column}].textContent))"
            )
            assert shown[0] == extreme(shown) and len(shown) == len(ROWS)
        page.evaluate(
            "const s = document.getElementById('search'); s.value = 'TOMATOES';"
            "s.dispatchEvent(new Event('input'))"
        )
        assert page.evaluate(GRID_IDS) == [row_id("test", ROWS[4][0])]

        # rejects by stage and reason, the corpus's apart
        rejects = page.evaluate("document.getElementById('rejects').innerText")
        assert "copied_anchor\t2" in rejects and "judge\t1" in rejects
        assert "duplicate\t1" in page.evaluate(
            "document.getElementById('corpus-rejects').innerText"
        )

        shot = Image.open(io.BytesIO(page.screenshot())).convert("L")
        assert np.asarray(shot).std() > 10  # text and plots, not an empty page
        assert page.errors() == []
        fetched = [u for u in page.requests() if not u.startswith("data:")]
        assert fetched == [(version / "diagnostics" / "report.html").as_uri()]


@pytest.mark.slow
def test_the_grid_holds_a_bounded_sample_plus_the_worst_rows(tmp_path: Path, manifest) -> None:
    """Proves 29.1's bound: at 100,000 rows the page holds the seeded sample and the worst
    rows only (the row that breaks the MER order most among them) and stays a few MB."""
    n = 100_000
    rng = np.random.default_rng(0)
    mer = np.sort(rng.uniform(0.1, 0.9, (n, 3)), axis=1)  # positive < intermediate < negative
    mer[7] = [0.95, 0.5, 0.05]  # the worst break of the order
    table = rows_table(
        [
            {"id": f"r{i}", "sentence": f"anchor {i}", "split": "aigen", "positive": f"p {i}",
             "intermediate": f"i {i}", "negative": f"n {i}"}
            for i in range(n)
        ]
    )  # fmt: skip
    for column, view in enumerate(("positive", "intermediate", "negative")):
        index = table.schema.get_field_index(f"mer_{view}")
        table = table.set_column(index, f"mer_{view}", pa.array(mer[:, column], pa.float32()))
    version = publish_version(
        [table], [], root=tmp_path / "storage", name="big", manifest=manifest, heldout_fraction=0.0
    ).path
    out = report.write_report(version, tmp_path / "report.html", manifest)
    data = embedded(out.read_text("utf-8"))
    ids = [row["id"] for row in data["rows"]]
    assert report.SAMPLE_ROWS < len(ids) <= report.SAMPLE_ROWS + 2 * report.WORST_ROWS
    assert "r7" in ids and data["counts"]["rows"] == n
    assert out.stat().st_size < 3_000_000


@pytest.mark.parametrize(
    ("method", "views"),
    [
        ("negation", ("negative",)),
        ("backtranslation", ("positive",)),
        ("generate-cse", ("positive",)),
    ],
)
def test_methods_without_an_llm_get_the_grid_of_their_views(
    tmp_path: Path, manifest, method: str, views: tuple[str, ...]
) -> None:
    """Proves 29.2 for negation, back-translation and Generate-CSE: the grid shows the
    views the method wrote, each with its MER to the anchor; no LLM, no judge needed."""
    records = [
        {"id": f"r{i}", "sentence": f"the cat {i} sat on the mat", "split": "aigen",
         "method": method, **{v: f"the cat {i} did not sit on the mat" for v in views}}
        for i in range(5)
    ]  # fmt: skip
    version = publish_version(
        [rows_table(records)], [], root=tmp_path / "storage", name="m", manifest=manifest,
        heldout_fraction=0.0,
    ).path  # fmt: skip
    data = embedded(report.write_report(version, tmp_path / "r.html", manifest).read_text())
    assert data["views"] == list(views)
    assert {tuple(row["views"]) for row in data["rows"]} == {views}
    # MER: 6 words kept, 1 substituted, 2 inserted
    assert all(row["views"][views[0]][2] == pytest.approx(3 / 9, abs=1e-4) for row in data["rows"])


def test_the_version_cs_columns_are_read_before_any_encoder(manifest, tmp_path: Path) -> None:
    table = pa.table({"sentence": ["a"], "positive": ["b"], "cs_positive": [0.25]})
    assert report.view_similarity(table, "positive", None).tolist() == [0.25]
    assert np.isnan(report.view_similarity(table.drop(["cs_positive"]), "positive", None)[0])


def test_the_prefect_artifact_links_to_the_report(tmp_path: Path, make_version, bow_encoder):
    rows = [{"sentence": "a b c", "positive": "a b d", "negative": "x y z"}]
    summary = write_diagnostics(make_version(rows), tmp_path / "diag", encoder=bow_encoder)
    assert "report.html" not in summary.artifact_markdown()
    (tmp_path / "diag" / "report.html").write_text("<html></html>")
    link = (tmp_path / "diag" / "report.html").as_uri()
    assert f"]({link})" in DiagnosticsSummary.load(tmp_path / "diag").artifact_markdown()


@pytest.mark.slow
def test_cseaug_report_writes_the_report_of_an_older_version_beside_it(
    tmp_path: Path, manifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proves 29.3: a version published without a report (older versions) gets one from
    `cseaug report`, by default under <root>/diagnostics/<name>/<version>/, with its rows
    and CS computed by the encoder of the version's settings; the version is not touched;
    --out into the version is refused in one line."""
    from typer.testing import CliRunner

    from cseaug.cli import app

    root = tmp_path / "storage"
    version = publish_version(
        [demo_rows()], [demo_rejects()], root=root, name="demo", manifest=manifest,
        heldout_fraction=0.0,
    ).path  # fmt: skip
    before = sorted(p.relative_to(version) for p in version.rglob("*"))
    opened: list[str] = []  # the user's web browser, which a test cannot look at
    monkeypatch.setattr("webbrowser.open", opened.append)
    done = CliRunner().invoke(app, ["report", "demo", "--root", str(root), "--open"])
    assert done.exit_code == 0, done.output
    out = root / "diagnostics" / "demo" / "v0001" / "report.html"
    assert opened == [out.as_uri()]
    assert f"wrote {out}" in done.output
    data = embedded(out.read_text("utf-8"))
    assert data["card"]["version"] == "v0001" and len(data["rows"]) == len(ROWS)
    assert all(cs is not None for row in data["rows"] for _, cs, _ in row["views"].values())
    assert [g["rows"] for g in data["rejects"]] == [2, 1, 1]
    assert sorted(p.relative_to(version) for p in version.rglob("*")) == before

    into = ["report", "demo", "--root", str(root), "--out", str(version / "r.html")]
    refused = CliRunner().invoke(app, into)
    assert isinstance(refused.exception, InputError) and "published version" in str(
        refused.exception
    )


def test_a_missing_chromium_skips_the_browser_test_but_fails_it_under_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        chromium_or_skip()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="chromium is not installed"):
        chromium_or_skip()
