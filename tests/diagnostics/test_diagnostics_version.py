"""diagnostics/ of a version: histograms per view, statistics, sample, checks, markdown."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cseaug.config import DiagnosticsConfig
from cseaug.diagnostics.report import write_report
from cseaug.diagnostics.version import DiagnosticsSummary, count_rows, write_diagnostics
from cseaug.errors import InputError
from cseaug.metrics.mer import mer

ROWS = [
    {
        "sentence": "a b c d",
        "positive": "a b c d e",
        "intermediate": "a b x y",
        "negative": "w x y z",
    },
    {
        "sentence": "a b c d",
        "positive": "a b c d",
        "intermediate": "a b c x",
        "negative": "a x y z",
    },
    {"sentence": "one two three", "positive": "one two four", "negative": "one two three"},
    {"sentence": "the cat sat", "knowledge": "cats sit on mats"},
    {"sentence": "plain one"},
    {"sentence": "plain two"},
]

CFG = DiagnosticsConfig(
    mer_bins=10, cs_bins=20, cs_sample=None, bands={"mer": [(0.0, 0.3)], "cs": [(0.9, 1.0)]}
)


def test_mer_histograms_per_view_count_exactly_the_rows_that_have_the_view(
    make_version, tmp_path, bow_encoder
):
    version = make_version(ROWS, files=2)
    summary = write_diagnostics(
        version, tmp_path / "diag", CFG, encoder=bow_encoder, title="demo/v0001"
    )
    views = summary.summary["views"]
    assert list(views) == ["positive", "intermediate", "negative", "knowledge"]
    # positive MER: 0.2, 0.0, 1/3 -> bins 2, 0, 3 of ten
    assert views["positive"]["mer"]["histogram"]["counts"] == [1, 0, 1, 1, 0, 0, 0, 0, 0, 0]
    assert views["negative"]["mer"]["histogram"]["counts"] == [1, 0, 0, 0, 0, 0, 0, 1, 0, 1]
    assert views["knowledge"]["mer"]["n"] == 1
    assert views["positive"]["mer"]["mean"] == pytest.approx((0.2 + 0.0 + 1 / 3) / 3)
    assert views["positive"]["mer"]["bands"][0]["share"] == pytest.approx(2 / 3)
    assert views["negative"]["mer"]["median"] == pytest.approx(mer("a b c d", "a x y z"))
    assert summary.summary["rows"] == 6 and summary.summary["rows_with_views"] == 4
    assert views["positive"]["cs"]["n"] == 3 and views["positive"]["cs"]["histogram"]["bins"] == 20
    pairs = [("a b c d", "a b c d e"), ("a b c d", "a b c d"), ("one two three", "one two four")]
    cs = [float(np.dot(*bow_encoder.encode(pair))) for pair in pairs]
    assert views["positive"]["cs"]["mean"] == pytest.approx(np.mean(cs), abs=1e-6)
    assert views["positive"]["cs"]["bands"][0]["share"] == pytest.approx(
        np.mean(np.array(cs) >= 0.9)
    )


def test_files_summary_and_pattern_order(make_version, tmp_path, bow_encoder):
    summary = write_diagnostics(make_version(ROWS), tmp_path / "diag", CFG, encoder=bow_encoder)
    assert summary.plots == {"mer": "mer.png", "cs": "cs.png"}
    for name in ("mer.png", "cs.png"):
        assert (tmp_path / "diag" / name).read_bytes()[:4] == b"\x89PNG"
    written = json.loads((tmp_path / "diag" / "summary.json").read_text())
    assert written == json.loads(json.dumps(summary.summary))
    order = summary.summary["pattern_order"]["mer"]
    # row 1 ordered (0.2 < 0.5 < 1); row 2: 0 < 0.25 < 0.75 ordered; row 3: p 1/3 > n 0 broken
    assert (order["eligible_rows"], order["ordered_rows"]) == (3, 2)
    assert summary.summary["pattern_order"]["cs"]["eligible_rows"] == 3
    assert summary.summary["contamination"] == {"skipped": "diagnostics.eval_data_dir is not set"}
    assert DiagnosticsSummary.load(tmp_path / "diag").summary == written


@pytest.mark.shared_data
def test_a_configured_reference_draws_figure_7_beside_the_version(
    make_version, tmp_path, bow_encoder, shared_data
):
    cfg = CFG.model_copy(
        update={
            "reference": {
                "stsb": str(shared_data / "stsbenchmark" / "sts-dev.csv"),
                "nli": str(shared_data / "nli" / "nli_triples_snli_devtest.csv"),
            }
        }
    )
    version = make_version(ROWS)
    diag = version / "diagnostics"
    summary = write_diagnostics(version, diag, cfg, encoder=bow_encoder, title="demo/v0001")
    assert summary.plots["figure7"] == "figure7.png"
    assert (diag / "figure7.png").read_bytes()[:4] == b"\x89PNG"
    page = write_report(version, tmp_path / "report.html", {}, cfg).read_text()
    assert page.count("data:image/png;base64,") == 3  # MER, CS and Figure 7
    settings = json.loads((diag / "compare.json").read_text())["settings"]
    assert [s["label"] for s in settings] == ["demo/v0001", "STSB", "NLI"]
    assert all(
        s[p]["mer"]["n"] and s[p]["cs"]["n"] for s in settings for p in ("positive", "negative")
    )


def test_cs_sample_is_seeded_and_limited_to_rows_with_views(make_version, tmp_path, bow_encoder):
    rows = [{"sentence": f"s {i} x", "positive": f"s {i} y"} for i in range(40)]
    rows += [{"sentence": f"plain {i}"} for i in range(40)]
    version = make_version(rows, files=3)
    cfg = CFG.model_copy(update={"cs_sample": 7, "seed": 3})
    first = write_diagnostics(version, tmp_path / "a", cfg, encoder=bow_encoder).summary
    again = write_diagnostics(version, tmp_path / "b", cfg, encoder=bow_encoder).summary
    assert first["cs"] == again["cs"] | {} and first["cs"]["rows"] == 7 and first["cs"]["sampled"]
    assert first["views"]["positive"]["cs"]["n"] == 7
    assert first["views"]["positive"]["mer"]["n"] == 40
    assert (
        first["views"]["positive"]["cs"]["histogram"]
        == again["views"]["positive"]["cs"]["histogram"]
    )
    other = write_diagnostics(
        version, tmp_path / "c", cfg.model_copy(update={"seed": 4}), encoder=bow_encoder
    )
    assert other.summary["cs"]["rows"] == 7


def test_a_version_without_views_writes_statistics_but_no_plots(make_version, tmp_path):
    summary = write_diagnostics(
        make_version([{"sentence": "plain one"}, {"sentence": "plain two"}]), tmp_path / "d", CFG
    )
    assert summary.plots == {} and summary.summary["views"] == {}
    assert summary.summary["rows_with_views"] == 0


def test_markdown_for_prefect_inlines_the_plots(make_version, tmp_path, bow_encoder):
    summary = write_diagnostics(make_version(ROWS), tmp_path / "diag", CFG, encoder=bow_encoder)
    artifact = summary.artifact_markdown()
    assert "![MER by view](data:image/png;base64,iVBORw0KGgo" in artifact
    assert "![CS by view](data:image/png;base64,iVBORw0KGgo" in artifact
    assert "| positive | 3 |" in artifact and "MER in [0, 0.3]" in artifact
    assert "MER 2 of 3 rows (66.7%)" in artifact
    assert summary.plot_paths() == ["diagnostics/mer.png", "diagnostics/cs.png"]


def test_contamination_is_reported_when_an_eval_dir_is_given(make_version, tmp_path, bow_encoder):
    sts = tmp_path / "eval" / "STS12-en-test"
    sts.mkdir(parents=True)
    (sts / "STS.input.MSRvid.txt").write_text("the cat sat .\tsomething else .\n")
    (sts / "STS.gs.MSRvid.txt").write_text("1.0\n")
    cfg = CFG.model_copy(update={"eval_data_dir": str(tmp_path / "eval")})
    summary = write_diagnostics(make_version(ROWS), tmp_path / "diag", cfg, encoder=bow_encoder)
    report = summary.summary["contamination"]
    assert report["contaminated_rows"] == 1 and report["by_field"]["sentence"] == 1
    assert (
        "1 rows (16.7%) share a sentence with an evaluation set (STS12: 1)"
        in summary.artifact_markdown()
    )


def test_count_rows_reads_footers_and_errors_name_the_directory(make_version, tmp_path):
    assert count_rows(make_version(ROWS, files=3)) == 6
    with pytest.raises(InputError, match="no data/"):
        count_rows(tmp_path)
    with pytest.raises(InputError, match="cseaug diagnose"):
        DiagnosticsSummary.load(tmp_path)


@pytest.mark.slow
def test_real_minilm_ranks_positive_views_above_negative_ones(make_version, tmp_path):
    rows = [
        {
            "sentence": "A man is playing a guitar.",
            "positive": "A man plays the guitar.",
            "negative": "A woman is slicing onions.",
        },
        {
            "sentence": "Two dogs run in the snow.",
            "positive": "Dogs are running through snow.",
            "negative": "The stock market fell.",
        },
    ]
    summary = write_diagnostics(
        make_version(rows),
        tmp_path / "diag",
        DiagnosticsConfig(device="cpu", embedding_cache=False),
    )
    views = summary.summary["views"]
    assert views["positive"]["cs"]["min"] > 0.7 > 0.3 > views["negative"]["cs"]["max"]
    assert summary.summary["cs"]["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert summary.summary["pattern_order"]["cs"]["share"] == 1.0
    assert np.isfinite(views["negative"]["cs"]["mean"])


def many_rows(n: int) -> list[dict[str, str]]:
    """``n`` rows with a positive and a negative view each, every text distinct."""
    return [
        {"sentence": f"row {i} a b c", "positive": f"row {i} a b d", "negative": f"x y z {i}"}
        for i in range(n)
    ]


def test_the_diagnostics_bar_moves_as_the_sample_is_embedded(
    make_version, tmp_path, bow_encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proves 22.4: the bar advanced once per batch of 8,192 rows, after the whole batch was
    embedded, so a build's diagnostics sat at 0% and jumped to 100%. It now advances after
    every SAMPLED_PER_SLICE sampled rows, between the calls to the encoder (a worker answers
    each call as its chunk is embedded)."""
    from contextlib import contextmanager

    from cseaug.diagnostics import version as module

    events: list[tuple[str, int]] = []

    class RowsBar:
        def advance(self, n: int = 1) -> None:
            events.append(("advance", n))

    class OtherBar:
        def advance(self, n: int = 1) -> None:
            """The encoder's load: not the rows' progress."""

    @contextmanager
    def recording_bar(description: str, total: int | None, unit: str = "items"):
        yield RowsBar() if description == "Diagnostics" else OtherBar()

    embed = bow_encoder.encode

    def recorded(texts):
        events.append(("encode", len(texts)))
        return embed(texts)

    monkeypatch.setattr(module, "progress_bar", recording_bar)
    monkeypatch.setattr(bow_encoder, "encode", recorded)
    write_diagnostics(make_version(many_rows(200)), tmp_path / "diag", CFG, encoder=bow_encoder)
    advances = [n for kind, n in events if kind == "advance"]
    assert advances == [64, 64, 64, 8]
    first_advance = events.index(("advance", 64))
    assert any(kind == "encode" for kind, _ in events[first_advance:])  # embedding went on


def test_embedding_the_sample_in_slices_gives_the_same_diagnostics(
    make_version, tmp_path, bow_encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cseaug.diagnostics import version as module

    version = make_version([*many_rows(150), *ROWS])
    cfg = CFG.model_copy(update={"cs_sample": 100})
    sliced = write_diagnostics(version, tmp_path / "a", cfg, encoder=bow_encoder).summary
    monkeypatch.setattr(module, "SAMPLED_PER_SLICE", 10**9)
    whole = write_diagnostics(version, tmp_path / "b", cfg, encoder=bow_encoder).summary
    assert sliced == whole


@pytest.mark.slow
def test_off_a_terminal_the_diagnostics_of_a_worker_encoder_write_progress_lines(
    make_version, tmp_path, tiny_bert, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Proves 22.4 where a build's diagnostics run: the encoder in its worker process, stderr
    not a terminal (here captured). Before, nothing was written while it loaded and embedded."""
    from cseaug import progress
    from cseaug.encoders.worker import EncoderWorker

    monkeypatch.delenv("CSEAUG_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.01)
    cfg = DiagnosticsConfig(encoder=str(tiny_bert), pooling="cls", device="cpu", cs_sample=None)
    with EncoderWorker(cfg, None) as worker:
        write_diagnostics(make_version(many_rows(300)), tmp_path / "diag", cfg, encoder=worker)
    lines = capsys.readouterr().err.splitlines()
    loading = [line for line in lines if line.startswith("Loading the sentence encoder: ")]
    rows = [line for line in lines if line.startswith("Diagnostics: ")]
    assert lines == loading + rows  # the load's wait, then the rows' progress
    assert loading[-1].startswith("Loading the sentence encoder: 1/1 models (100%), ")
    assert rows[-1].startswith("Diagnostics: 300/300 rows (100%), ")
