"""Back-translation (OssCSE Step 2) end to end with tiny random FSMT models built here.

The real FSMTTokenizer (vocabulary files written by the test), beam search, decoding and
the MER filter run; only the weights are random, so every translation is gibberish with
MER 1.0 against its source. The filter's choices among MER values are tested on
hand-made candidates.
"""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

pytest.importorskip("transformers")
pytest.importorskip("sacremoses")

from cseaug.augment.backtranslate import (
    OUT_OF_RANGE,
    BackTranslationStage,
    BackTranslator,
    Candidate,
    select_candidate,
)
from cseaug.augment.negation import NegationStage, Negator
from cseaug.augment.osscse import OssCSEStage
from cseaug.augment.translation import Translator, new_tokens_cap
from cseaug.config import BacktranslationConfig, RunConfig
from cseaug.dataset.schema import CANONICAL_SCHEMA, REJECTS_SCHEMA, rows_table
from cseaug.errors import ConfigError, InputError
from cseaug.metrics.mer import mer
from cseaug.pipeline.mer import MERStep
from cseaug.pipeline.stages import make_osscse_stage

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = [
    "She is happy.",
    "The results have been published in the journal of the society last year.",
    "Go!",
    "He went home early.",
    "A longer sentence, with a comma and a few more words than the others have.",
]
SMALL = {"num_beams": 2, "batch_size": 2, "max_new_tokens": 10}


@pytest.fixture(scope="module")
def backtranslator(fsmt_pivots):
    return BackTranslator(fsmt_pivots, mer_range=(0.0, 1.0), **SMALL)


# --- the MER filter ------------------------------------------------------------------------

DE, RU = Candidate("de", "", "de text", 0.3), Candidate("ru", "", "ru text", 0.5)


@pytest.mark.parametrize(
    ("candidates", "mer_range", "prefer", "expected"),
    [
        ([DE, RU], (0.15, 0.6), "higher_mer", "ru"),
        ([DE, RU], (0.15, 0.6), "lower_mer", "de"),
        ([RU, DE], (0.15, 0.6), "first_pivot", "ru"),
        ([DE, RU], (0.15, 0.4), "higher_mer", "de"),  # only one qualifies
        ([DE, RU], (0.3, 0.3), "higher_mer", "de"),  # bounds are inclusive
        ([DE, RU], (0.5, 0.6), "lower_mer", "ru"),
        ([DE, RU], (0.15, 0.25), "higher_mer", None),
        ([Candidate("de", "", "x", math.nan)], (0.0, 1.0), "higher_mer", None),
        (
            [Candidate("de", "", "x", 0.4), Candidate("ru", "", "y", 0.4)],
            (0.0, 1.0),
            "higher_mer",
            "de",
        ),
    ],
)
def test_select_candidate(candidates, mer_range, prefer, expected):
    chosen = select_candidate(candidates, mer_range, prefer)
    assert (chosen.pivot if chosen else None) == expected


def test_the_config_refuses_an_unknown_preference():
    # select_candidate relies on it: it does not check ``prefer`` again
    with pytest.raises(ValidationError, match="prefer"):
        BacktranslationConfig(prefer="longest")


# --- translation -----------------------------------------------------------------------------


def test_length_sorted_batches_keep_the_input_order(fsmt_pivots):
    forward = fsmt_pivots["de"][0]
    batched = Translator(forward, **{**SMALL, "batch_size": 3})
    single = Translator(forward, **{**SMALL, "batch_size": 1})
    out = batched(TEXTS)
    assert len(set(out)) > 1, "the tiny model must answer differently to different inputs"
    assert out == single(TEXTS)
    assert batched([]) == []


def test_translation_length_is_capped_by_the_longest_source(fsmt_pivots):
    capped = Translator(fsmt_pivots["de"][0], num_beams=1, max_new_tokens=40, max_length_ratio=0.5)
    uncapped = Translator(
        fsmt_pivots["de"][0], num_beams=1, max_new_tokens=40, max_length_ratio=None
    )
    assert (new_tokens_cap(10, 40, 0.5), new_tokens_cap(100, 40, 0.5)) == (13, 40)
    assert new_tokens_cap(10, 40, None) == 40
    # random weights rarely emit </s>, so the cap shows in the output length
    assert sum(map(len, capped(TEXTS[:2]))) < sum(map(len, uncapped(TEXTS[:2])))


def test_round_trip_candidates_and_mer(backtranslator):
    results = backtranslator.backtranslate(TEXTS)
    assert [r.text for r in results] == TEXTS
    for result in results:
        assert [c.pivot for c in result.candidates] == ["de", "ru"]
        for candidate in result.candidates:
            assert candidate.intermediate and candidate.text
            assert candidate.mer == mer(result.text, candidate.text)
        # range [0, 1] keeps the candidate of higher MER (the earlier pivot on a tie)
        assert result.ok and result.chosen == select_candidate(result.candidates, (0.0, 1.0))
    middle, back = backtranslator.round_trip(TEXTS[:2], "ru")
    assert back == [r.candidates[1].text for r in results[:2]]
    assert middle == [r.candidates[1].intermediate for r in results[:2]]


def test_narrow_range_rejects_with_every_mer(fsmt_pivots):
    strict = BackTranslator(fsmt_pivots, mer_range=(0.15, 0.6), **SMALL)
    stage = BackTranslationStage(strict)
    rows = rows_table(
        [{"id": f"r{i}", "sentence": t, "split": "aigen"} for i, t in enumerate(TEXTS)]
    )
    result = stage(rows)
    # random weights: gibberish, MER 1.0 for every candidate, so nothing qualifies
    assert result.rows.num_rows == 0
    assert result.rejects.schema.equals(REJECTS_SCHEMA)
    rejects = result.rejects.to_pylist()
    assert [r["id"] for r in rejects] == [f"r{i}" for i in range(len(TEXTS))]
    assert {(r["stage"], r["view"], r["reason"]) for r in rejects} == {
        ("backtranslation", "positive", OUT_OF_RANGE)
    }
    detail = json.loads(rejects[0]["detail"])
    assert detail["mer_range"] == [0.15, 0.6]
    assert [c["pivot"] for c in detail["candidates"]] == ["de", "ru"]
    assert all(c["mer"] == 1.0 for c in detail["candidates"])
    assert result.stats["share_kept"] == 0.0


def test_stage_fills_positive(backtranslator):
    rows = rows_table([{"id": "a", "sentence": TEXTS[0], "split": "aigen", "method": "osscse"}])
    result = BackTranslationStage(backtranslator)(rows)
    assert result.rows.schema.equals(CANONICAL_SCHEMA)
    [row] = result.rows.to_pylist()
    assert row["positive_method"] in ("backtranslation:de", "backtranslation:ru")
    assert row["mer_positive"] is None, "MER is the build's last step, not the stage's"
    assert row["method"] == "osscse" and row["negative"] is None
    [details] = result.details.to_pylist()
    pivot = row["positive_method"].split(":")[1]
    assert details[f"candidate_{pivot}"] == row["positive"]
    assert details[f"mer_{pivot}"] == pytest.approx(mer(row["sentence"], row["positive"]))
    assert result.stats["share_kept"] == 1.0
    manifest = BackTranslationStage(backtranslator).manifest()["model"]["backtranslation"]
    assert manifest["device"] == "cpu" and manifest["dtype"] == "float32"


def test_bfloat16_on_cpu(fsmt_pivots):
    translator = Translator(fsmt_pivots["de"][0], dtype="bfloat16", **SMALL)
    assert all(isinstance(t, str) for t in translator(TEXTS[:2]))


def test_unloadable_model_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot load translation model"):
        Translator(str(tmp_path / "no-such-model"))


def test_inputs_must_be_strings(backtranslator):
    with pytest.raises(InputError, match="#1"):
        backtranslator.backtranslate(["ok", None])


# --- the OssCSE stage (both views) -------------------------------------------------------------


@pytest.fixture(scope="module")
def negator(shared_models):
    return Negator(str(shared_models / "en_ud_ewt_sm"))


def test_osscse_rows_need_both_views(negator, fsmt_pivots, backtranslator):
    rows = rows_table(
        [
            {"id": "a", "sentence": "She is happy.", "split": "aigen", "method": "osscse"},
            {"id": "b", "sentence": "Is she happy?", "split": "aigen", "method": "osscse"},
            {"id": "c", "sentence": "He went home early.", "split": "aigen", "method": "osscse"},
        ]
    )
    result = OssCSEStage(NegationStage(negator), BackTranslationStage(backtranslator))(rows)
    out = result.rows.to_pylist()
    assert [r["id"] for r in out] == ["a", "c"]
    first = out[0]
    assert (first["split"], first["method"], first["negative"], first["negative_method"]) == (
        "aigen",
        "osscse",
        "She is not happy.",
        "negation",
    )
    assert first["positive_method"].startswith("backtranslation:") and first["positive"]
    assert first["mer_negative"] is None and first["mer_positive"] is None
    [with_mer, _] = MERStep()(result.rows).rows.to_pylist()
    assert with_mer["mer_negative"] == pytest.approx(mer("She is happy.", "She is not happy."))
    assert [(r["id"], r["stage"], r["reason"]) for r in result.rejects.to_pylist()] == [
        ("b", "negation", "question")
    ]
    assert result.stats["negation"]["share_negated"] == pytest.approx(2 / 3, abs=1e-4)
    assert result.stats["backtranslation"]["sentences"] == 2  # the refused anchor is not translated

    strict = OssCSEStage(
        NegationStage(negator),
        BackTranslationStage(BackTranslator(fsmt_pivots, mer_range=(0.15, 0.6), **SMALL)),
    )
    failed = strict(rows)
    assert failed.rows.num_rows == 0
    assert sorted((r["id"], r["stage"]) for r in failed.rejects.to_pylist()) == [
        ("a", "backtranslation"),
        ("b", "negation"),
        ("c", "backtranslation"),
    ]


def test_make_osscse_stage_from_a_run_config(shared_models, fsmt_pivots):
    cfg = RunConfig.model_validate(
        {
            "name": "t",
            "method": "osscse",
            "corpus": {"path": "corpus.txt"},
            "negation": {"spacy_model": str(shared_models / "en_ud_ewt_sm")},
            "backtranslation": {
                "pivots": fsmt_pivots,
                "num_beams": 1,
                "max_new_tokens": 4,
                "mer_range": [0.0, 1.0],
            },
        }
    )
    stage = make_osscse_stage(cfg)
    try:
        manifest = stage.manifest()["model"]
        assert manifest["backtranslation"]["pivots"] == {k: list(v) for k, v in fsmt_pivots.items()}
        assert "parser" in manifest["negation"]["components"]
        result = stage(rows_table([{"id": "x", "sentence": "He can swim.", "split": "aigen"}]))
        assert result.rows.column("negative").to_pylist() == ["He can not swim."]
    finally:
        stage.close()
