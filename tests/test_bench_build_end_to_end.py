"""The end-to-end benchmark's server answers like a model: a different view for each NGCSE
level, each passing the build's per-row checks, so the quality gate does its real work."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from bench_build_end_to_end import model_answer  # noqa: E402


def test_each_level_gets_its_own_view_that_the_row_checks_accept(shared_data: Path) -> None:
    from cseaug.prompts import load_method_prompts
    from cseaug.quality.checks import identical, unchanged

    systems = {
        level: template.render(examples=[("a", "b")], sentence="x")[0]["content"]
        for level, template in load_method_prompts("sts").items()
    }
    wiki = shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt"
    anchors = [line for line in wiki.read_text(encoding="utf-8").splitlines()[:300] if line]
    for anchor in anchors:
        views = {level: model_answer(system, anchor) for level, system in systems.items()}
        assert identical(views) is None, views
        assert unchanged(anchor, views["intermediate"], 0.95) is None, views
        assert views["negative"] != anchor
    assert sum(
        unchanged(a, model_answer(systems["positive"], a), 0.95) is None for a in anchors
    ) >= 0.9 * len(anchors)
