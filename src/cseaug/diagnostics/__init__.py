"""Diagnostics of datasets and evaluation sets (docs/diagnostics.md).

* :mod:`~cseaug.diagnostics.version`: ``diagnostics/`` of a version: MER / CS histograms per
  view, statistics, pattern order, contamination (NGCSE appendix, Figure 7).
* :mod:`~cseaug.diagnostics.patterns`: the order positive > intermediate > negative, and a filter.
* :mod:`~cseaug.diagnostics.contamination`: verbatim overlap with STS12-16, STS-B and SICK.
* :mod:`~cseaug.diagnostics.compare`: the Figure 7 grid over versions and references.
* :mod:`~cseaug.diagnostics.probe_splits`: OssCSE's Cont. / Oppn. splits (section 3.3, Table 2).
"""
