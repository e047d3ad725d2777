"""Fixed-bin density histograms: bin counts on small inputs, statistics, shared plot axes."""

from __future__ import annotations

import numpy as np
import pytest

from cseaug.metrics.histograms import (
    BAND_GID,
    Histogram,
    MetricValues,
    Panel,
    Series,
    bin_edges,
    draw_panels,
    plot_panels,
)


def test_edges_cover_the_fixed_range_of_each_metric():
    assert bin_edges("mer", 5).tolist() == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert bin_edges("cs", 4).tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]


def test_mer_counts_put_inner_edges_right_and_the_top_edge_in_the_last_bin():
    h = Histogram.empty("mer", bins=4)
    h.add([0.0, 0.25, 0.2499, 0.5, 0.74, 0.75, 1.0, 1.0])
    assert h.counts.tolist() == [2, 1, 2, 3]
    assert h.n == 8 and h.missing == 0


def test_values_on_edges_computed_by_division_land_in_the_right_bin():
    # 0.15 / 0.025 is 5.999... in floating point; the bin must still be [0.15, 0.175).
    h = Histogram.empty("mer", bins=40)
    h.add([0.15, 3 / 20, 0.6])
    assert np.nonzero(h.counts)[0].tolist() == [6, 24]
    assert h.counts[6] == 2


def test_cs_clips_float_noise_and_counts_nan_as_missing():
    h = Histogram.empty("cs", bins=4)
    h.add([-1.0000001, -0.6, 0.0, 0.2, 1.0000002, float("nan"), float("nan")])
    assert h.counts.tolist() == [2, 0, 2, 1]
    assert h.missing == 2


def test_batches_accumulate_like_one_call():
    values = np.random.default_rng(0).random(1000)
    whole = Histogram.empty("mer", 20)
    whole.add(values)
    parts = Histogram.empty("mer", 20)
    for chunk in np.array_split(values, 7):
        parts.add(chunk)
    assert parts.counts.tolist() == whole.counts.tolist()
    assert parts.counts.tolist() == np.histogram(values, bins=20, range=(0, 1))[0].tolist()


def test_density_integrates_to_one_and_is_zero_when_empty():
    h = Histogram.empty("cs", 8)
    assert h.density.tolist() == [0.0] * 8
    h.add([0.1, 0.2, 0.9, -0.3])
    assert float((h.density * np.diff(h.edges)).sum()) == pytest.approx(1.0)
    assert h.density.tolist() == pytest.approx([0, 0, 1, 0, 2, 0, 0, 1])


def test_summary_has_exact_quartiles_and_closed_band_shares():
    values = MetricValues("mer", bins=10)
    values.add([0.0, 0.15, 0.3])
    values.add([0.6, 1.0, float("nan")])
    stats = values.summary(bands=[(0.15, 0.6), (0.9, 1.0)])
    assert stats["n"] == 5 and stats["missing"] == 1
    assert stats["mean"] == pytest.approx(0.41)
    assert (stats["q1"], stats["median"], stats["q3"]) == pytest.approx((0.15, 0.3, 0.6))
    assert [b["share"] for b in stats["bands"]] == pytest.approx([0.6, 0.2])
    assert stats["histogram"]["counts"] == [1, 1, 0, 1, 0, 0, 1, 0, 0, 1]


def test_summary_of_no_values_reports_nones():
    stats = MetricValues("cs", bins=4).summary(bands=[(0.5, 1.0)])
    assert stats["n"] == 0 and stats["median"] is None and stats["bands"][0]["share"] is None


def test_panels_share_axes_per_metric(tmp_path):
    low, high = Histogram.empty("cs", 40), Histogram.empty("cs", 40)
    low.add([-0.35, 0.1, 0.2])
    high.add([0.8, 0.85, 0.9, 0.95] * 10)
    mer = Histogram.empty("mer", 20)
    mer.add([0.1, 0.2])
    grid = [
        [Panel("A", "mer", [Series("pos", mer)]), Panel("A", "cs", [Series("neg", low)])],
        [None, Panel("B", "cs", [Series("pos", high)])],
    ]
    figure = draw_panels(grid, title="demo")
    axes = figure.axes
    cs_axes = [axes[1], axes[3]]
    assert not axes[2].get_visible()
    assert cs_axes[0].get_xlim() == cs_axes[1].get_xlim() == pytest.approx((-0.4, 1.0))
    assert cs_axes[0].get_ylim() == cs_axes[1].get_ylim()
    peak = max(low.density.max(), high.density.max())
    assert cs_axes[0].get_ylim()[1] == pytest.approx(peak * 1.05)
    assert axes[0].get_xlim() == (0.0, 1.0)
    path = plot_panels(grid, tmp_path / "sub" / "grid.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_empty_grid_is_an_error():
    with pytest.raises(ValueError, match="at least one panel"):
        draw_panels([])


def test_panels_shade_their_bands_and_the_png_holds_every_label(tmp_path):
    """Proves 11.6: the configured MER / CS bands are drawn (shaded, dashed ends), and the
    saved PNG is wide and tall enough for the title and labels (nothing cut at the frame:
    a one-panel figure's long title used to run off both sides)."""
    from matplotlib.image import imread

    h = Histogram.empty("mer", 20)
    h.add([0.1, 0.2, 0.3, 0.5, 0.55, 0.9])
    panel = Panel("positive", "mer", [Series("positive", h)], bands=[(0.15, 0.6)])
    title = "wiki-osscse/v0001: MER of each view to its anchor, a title longer than one panel"
    figure = draw_panels([[panel]], title=title)
    (ax,) = figure.axes
    (band,) = [p for p in ax.patches if p.get_gid() == BAND_GID]
    xs = band.get_path().transformed(band.get_patch_transform()).vertices[:, 0]
    assert (xs.min(), xs.max()) == pytest.approx((0.15, 0.6))
    assert sorted(line.get_xdata()[0] for line in ax.lines) == pytest.approx([0.15, 0.6])

    renderer = figure.canvas.get_renderer()
    needed = figure._suptitle.get_window_extent(renderer)
    png = imread(plot_panels([[panel]], tmp_path / "mer.png", title=title))
    height, width = png.shape[:2]
    assert width >= needed.width and height >= figure.get_tightbbox(renderer).height * figure.dpi
