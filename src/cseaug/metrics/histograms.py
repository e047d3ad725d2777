"""Density histograms of MER and cosine similarity on fixed bins (NGCSE appendix, Figure 7).

Every histogram of a metric uses the same bins (MER over [0, 1], CS over [-1, 1]) so that
panels compare at a glance (docs/diagnostics.md, "How to read the plots"). :class:`Histogram`
accumulates batch by batch, :class:`MetricValues` adds the summary statistics and
:func:`plot_panels` draws them with matplotlib's Agg canvas.

Example:
    >>> h = Histogram.empty("mer", bins=4)
    >>> h.add([0.0, 0.3, 0.3, 1.0, float("nan")])
    >>> h.counts.tolist(), h.missing
    ([1, 2, 0, 1], 1)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cseaug.dataset.atomic import atomic_path

Metric = Literal["mer", "cs"]

METRIC_RANGES: dict[str, tuple[float, float]] = {"mer": (0.0, 1.0), "cs": (-1.0, 1.0)}
"""The fixed range of each metric's bins."""

METRIC_LABELS: dict[str, str] = {"mer": "MER (lower: more word overlap)", "cs": "cosine similarity"}


def bin_edges(metric: Metric, bins: int) -> np.ndarray:
    """``bins + 1`` equally spaced edges over the metric's fixed range.

    Example:
        >>> bin_edges("mer", 4).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    low, high = METRIC_RANGES[metric]
    return np.linspace(low, high, bins + 1)


@dataclass
class Histogram:
    """Counts of one metric on fixed bins, filled batch by batch.

    A value on an inner edge (within 1e-9 of a bin width) goes to the bin on its right; the
    top edge belongs to the last bin; values outside the range (float noise such as 1.0000001) are clipped into it; NaN
    (a pair with a missing side) is counted in ``missing``, not in the bins.
    """

    metric: str
    edges: np.ndarray
    counts: np.ndarray
    missing: int = 0

    @classmethod
    def empty(cls, metric: Metric, bins: int) -> Histogram:
        return cls(metric, bin_edges(metric, bins), np.zeros(bins, dtype=np.int64))

    def add(self, values: Iterable[float] | np.ndarray) -> None:
        array = np.asarray(values, dtype=np.float64).ravel()
        finite = np.isfinite(array)
        self.missing += int((~finite).sum())
        low, high, bins = self.edges[0], self.edges[-1], len(self.counts)
        position = (np.clip(array[finite], low, high) - low) / ((high - low) / bins)
        # MER values are ratios of small integers (3/20 = 0.15): a value that float division puts
        # a hair below an edge belongs on the edge, so positions are nudged by 1e-9 of a bin.
        index = np.minimum(np.floor(position + 1e-9).astype(np.int64), bins - 1)
        self.counts += np.bincount(index, minlength=bins)

    @property
    def n(self) -> int:
        """Number of values in the bins."""
        return int(self.counts.sum())

    @property
    def density(self) -> np.ndarray:
        """Counts / (n × bin width): integrates to 1 like ``numpy.histogram(density=True)``."""
        if self.n == 0:
            return np.zeros(len(self.counts), dtype=np.float64)
        return self.counts / (self.n * np.diff(self.edges))

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "range": [float(self.edges[0]), float(self.edges[-1])],
            "bins": len(self.counts),
            "counts": self.counts.tolist(),
            "missing": self.missing,
        }


@dataclass
class MetricValues:
    """All values of one metric of one view: histogram plus exact summary statistics.

    Values are kept as float64 (8 MB per million pairs) so quartiles and band shares are exact.
    """

    metric: Metric
    bins: int
    histogram: Histogram = field(init=False)
    _chunks: list[np.ndarray] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self.histogram = Histogram.empty(self.metric, self.bins)

    def add(self, values: Iterable[float] | np.ndarray) -> None:
        array = np.asarray(values, dtype=np.float64).ravel()
        self.histogram.add(array)
        finite = array[np.isfinite(array)]
        if finite.size:
            self._chunks.append(finite)

    def values(self) -> np.ndarray:
        return np.concatenate(self._chunks) if self._chunks else np.empty(0, dtype=np.float64)

    def summary(self, bands: Sequence[tuple[float, float]] = ()) -> dict[str, Any]:
        """n, missing, mean, std, min, quartiles, max, the share inside each closed band, the histogram."""
        values = self.values()
        stats: dict[str, Any] = {"n": int(values.size), "missing": self.histogram.missing}
        names = ("mean", "std", "min", "q1", "median", "q3", "max")
        if values.size:
            q1, median, q3 = np.quantile(values, [0.25, 0.5, 0.75])
            numbers = (values.mean(), values.std(), values.min(), q1, median, q3, values.max())
            stats.update({name: float(number) for name, number in zip(names, numbers, strict=True)})
        else:
            stats.update(dict.fromkeys(names))
        stats["bands"] = [
            {
                "low": low,
                "high": high,
                "share": float(((values >= low) & (values <= high)).mean())
                if values.size
                else None,
            }
            for low, high in bands
        ]
        stats["histogram"] = self.histogram.to_dict()
        return stats


@dataclass
class Series:
    """One histogram drawn in a panel, with its legend label and colour."""

    label: str
    histogram: Histogram
    color: str | None = None


@dataclass
class Panel:
    """One axes of a grid: a title, the series of one metric overlaid, and the configured
    bands of that metric (``diagnostics.bands``, e.g. OssCSE's MER range [0.15, 0.6]) shaded."""

    title: str
    metric: Metric
    series: list[Series]
    bands: Sequence[tuple[float, float]] = ()


PANEL_SIZE = (3.4, 2.4)
"""Inches of one panel (width, height)."""
DPI = 110

BAND_GID = "band"
"""``gid`` of the shaded band areas (how a reader of the figure finds them)."""


def _cs_lower_limit(panels: Sequence[Panel]) -> float:
    """Left end of the shared CS axis: the lowest occupied bin of any panel, floored to 0.1."""
    histograms = [s.histogram for panel in panels for s in panel.series if s.histogram.n]
    lowest = min([0.0, *(float(h.edges[np.argmax(h.counts > 0)]) for h in histograms)])
    return max(-1.0, math.floor(lowest * 10) / 10)


def is_spike(histogram: Histogram) -> bool:
    """Half or more of the values in one bin (e.g. MER 0 of identical sentences)."""
    return histogram.n > 0 and int(histogram.counts.max()) * 2 >= histogram.n


def shared_ylimit(panels: Sequence[Panel]) -> float:
    """The y limit shared by panels of one metric: 5% above the highest density of any series,
    spikes (:func:`is_spike`) left out unless every series is one (docs/diagnostics.md, "How
    to read the plots")."""
    peaks = [
        (float(s.histogram.density.max(initial=0.0)), is_spike(s.histogram))
        for p in panels
        for s in p.series
    ]
    regular = [peak for peak, spike in peaks if not spike]
    top = max(regular or [peak for peak, _ in peaks] or [0.0])
    return top * 1.05 if top > 0 else 1.0


def draw_panels(grid: Sequence[Sequence[Panel | None]], title: str | None = None) -> Any:
    """A matplotlib Figure (Agg canvas, no pyplot) of a grid of density-histogram panels
    (None: an empty cell), :data:`PANEL_SIZE` inches each, with the axes of NGCSE's Figure 7
    shared per metric (docs/diagnostics.md, "How to read the plots"); a panel's bands are
    shaded, with dashed lines at their ends."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = len(grid)
    cols = max((len(r) for r in grid), default=0)
    if rows == 0 or cols == 0:
        raise ValueError("plot_panels needs at least one panel")
    panels = [p for row in grid for p in row if p is not None]
    xlim = {
        "mer": (0.0, 1.0),
        "cs": (_cs_lower_limit([p for p in panels if p.metric == "cs"]), 1.0),
    }
    ymax = {metric: shared_ylimit([p for p in panels if p.metric == metric]) for metric in xlim}

    width, height = PANEL_SIZE
    figure = Figure(figsize=(width * cols, height * rows + (0.4 if title else 0)), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, cols, squeeze=False)
    for (r, c), ax in np.ndenumerate(axes):
        panel = grid[r][c] if c < len(grid[r]) else None
        if panel is None:
            ax.set_visible(False)
            continue
        for s in panel.series:
            h, label = s.histogram, f"{s.label} (n={s.histogram.n})"
            ax.stairs(h.density, h.edges, fill=True, alpha=0.45, color=s.color, label=label)
            ax.stairs(h.density, h.edges, color=s.color, linewidth=0.8)
            peak = float(h.density.max(initial=0.0))
            if peak > ymax[panel.metric]:
                at = int(h.density.argmax())
                ax.annotate(
                    f"{peak:.0f}↑",
                    xy=((h.edges[at] + h.edges[at + 1]) / 2, ymax[panel.metric]),
                    xytext=(0, -9),
                    textcoords="offset points",
                    ha="center",
                    fontsize=6,
                    color=s.color,
                )
        for low, high in panel.bands:
            ax.axvspan(low, high, color="0.5", alpha=0.12, linewidth=0, gid=BAND_GID)
            for edge in (low, high):
                ax.axvline(edge, color="0.35", linestyle="--", linewidth=0.6)
        ax.set_xlim(*xlim[panel.metric])
        ax.set_ylim(0, ymax[panel.metric])
        ax.set_title(panel.title, fontsize=9)
        ax.set_xlabel(METRIC_LABELS[panel.metric], fontsize=8)
        ax.tick_params(labelsize=7)
        if c == 0:
            ax.set_ylabel("density", fontsize=8)
        if panel.series:
            ax.legend(fontsize=6, loc="upper left", frameon=False)
    if title:
        figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure


def plot_panels(
    grid: Sequence[Sequence[Panel | None]], out_path: str | Path, title: str | None = None
) -> Path:
    """:func:`draw_panels` saved as a PNG at ``out_path`` (parents created); returns the path.

    Example:
        >>> h = Histogram.empty("mer", 10); h.add([0.1, 0.5])
        >>> plot_panels([[Panel("demo", "mer", [Series("pos", h)])]], "/tmp/demo.png").name
        'demo.png'
    """
    out = Path(out_path)
    figure = draw_panels(grid, title)
    with atomic_path(out) as tmp:  # a new file renamed into place: never written through a link
        # "tight": the saved area grows to hold every label and title, none is cut at the frame
        figure.savefig(tmp, format="png", bbox_inches="tight", pad_inches=0.08)
    return out
