"""Negation insertion (OssCSE Step 1): every rule and every refusal.

The table runs through the real UD-trained pipeline in ``../shared/models/en_ud_ewt_sm``.
The ClearNLP label set of ``en_core_web_sm`` (not installable offline) is covered by
``Doc`` objects built by hand with the heads, labels, tags and lemmas that pipeline gives.
"""

from __future__ import annotations

import json

import pytest

from cseaug.augment.negation import (
    REFUSALS,
    RULES,
    NegationStage,
    Negator,
    load_pipeline,
    negate_doc,
)
from cseaug.dataset.schema import CANONICAL_SCHEMA, REJECTS_SCHEMA, rows_table
from cseaug.errors import ConfigError, InputError

spacy = pytest.importorskip("spacy")

# (input, expected negation or refusal reason, rule or None)
UD_TABLE = [
    # auxiliary: "not" after the first auxiliary / modal
    (
        "Bryan Cranston will return as Walter White for breaking bad spin off, report claims.",
        "Bryan Cranston will not return as Walter White for breaking bad spin off, report claims.",
        "auxiliary",
    ),
    (
        "The book was written by a famous author.",
        "The book was not written by a famous author.",
        "auxiliary",
    ),
    ("The results have been published.", "The results have not been published.", "auxiliary"),
    ("She will be happy.", "She will not be happy.", "auxiliary"),
    ("He has eaten the cake.", "He has not eaten the cake.", "auxiliary"),
    ("He can swim.", "He can not swim.", "auxiliary"),
    # copula (UD: cop under a non-verbal root)
    ("She is happy.", "She is not happy.", "copula"),
    ("He was in Paris last year.", "He was not in Paris last year.", "copula"),
    ("It's a nice day.", "It's not a nice day.", "copula"),
    # main verb "be"
    ("There is a cat on the mat.", "There is not a cat on the mat.", "main_be"),
    # do-support with the lemma; main-verb "have"
    ("He went home early.", "He did not go home early.", "do_support"),
    ("They play football every Sunday.", "They do not play football every Sunday.", "do_support"),
    ("She has a red car.", "She does not have a red car.", "do_support"),
    ("He died in 1956.", "He did not die in 1956.", "do_support"),
    (
        "The city's population grew rapidly in the 1990s.",
        "The city's population did not grow rapidly in the 1990s.",
        "do_support",
    ),
    # imperative
    ("Go home now.", "Do not go home now.", "imperative"),
    # refusals
    ("1990.", "empty", None),
    ("...", "empty", None),
    ("", "empty", None),
    ("Is she happy?", "question", None),
    ("I came. I saw.", "multiple_sentences", None),
    ("He does not like fish.", "already_negated", None),
    ("Nobody came to the party.", "already_negated", None),
    ("I have no money.", "already_negated", None),
    ("He never eats meat.", "already_negated", None),
    ("He came home and she left the house.", "coordinated_clauses", None),
    ("Only then did he realize the truth.", "inverted_subject", None),
    ("Founded in 1990 by two brothers.", "non_finite_root", None),
    ("YMCA in South Australia", "no_verbal_root", None),
]


@pytest.fixture(scope="module")
def negator(shared_models):
    return Negator(str(shared_models / "en_ud_ewt_sm"), batch_size=8)


@pytest.fixture(scope="module")
def ud_results(negator):
    return negator.negate([text for text, _, _ in UD_TABLE])


@pytest.mark.parametrize(
    ("index", "case"), list(enumerate(UD_TABLE)), ids=[c[0][:30] or "<empty>" for c in UD_TABLE]
)
def test_ud_parser_table(ud_results, index, case):
    text, expected, rule = case
    result = ud_results[index]
    assert result.text == text
    if rule is None:
        assert (result.negated, result.reason) == (None, expected)
    else:
        assert (result.negated, result.rule, result.reason) == (expected, rule, None)


def test_table_covers_every_rule_and_refusal_but_no_lemma(ud_results):
    assert {r.rule for r in ud_results if r.ok} == set(RULES)
    # no_lemma needs a lemmatizer that fails; it is covered by a hand-built Doc below.
    assert {r.reason for r in ud_results if not r.ok} == set(REFUSALS) - {"no_lemma"}


def test_spacing_is_kept(negator):
    [result] = negator.negate(["He  went home ,  early ."])
    assert result.negated == "He  did not go home ,  early ."


# --- ClearNLP labels (en_core_web_sm) on hand-built parses -------------------------------


def clear_doc(spec: str, spaces: list[bool] | None = None):
    """A parsed Doc from 'word/TAG/dep/head/lemma' items (head: index, or the word's own for ROOT)."""
    from spacy.tokens import Doc

    items = [item.rsplit("/", 4) for item in spec.split()]
    words = [w for w, *_ in items]
    nlp = spacy.blank("en")
    return Doc(
        nlp.vocab,
        words=words,
        spaces=spaces if spaces is not None else [w[0].isalnum() for w in [*words[1:], "."]],
        tags=[t for _, t, _, _, _ in items],
        deps=[d for _, _, d, _, _ in items],
        heads=[int(h) for _, _, _, h, _ in items],
        lemmas=[lemma for *_, lemma in items],
    )


CLEAR_TABLE = [
    # The paper's own example (section 4, Step 1).
    (
        "My/PRP$/poss/1/my dog/NN/nsubj/2/dog likes/VBZ/ROOT/2/like eating/VBG/xcomp/2/eat "
        "sausage/NN/dobj/3/sausage ./././2/.",
        "My dog does not like eating sausage.",
        "do_support",
    ),
    # ClearNLP copula: "is" is the root with an acomp.
    (
        "She/PRP/nsubj/1/she is/VBZ/ROOT/1/be happy/JJ/acomp/1/happy ./././1/.",
        "She is not happy.",
        "main_be",
    ),
    (
        "There/EX/expl/1/there is/VBZ/ROOT/1/be a/DT/det/3/a cat/NN/attr/1/cat ./././1/.",
        "There is not a cat.",
        "main_be",
    ),
    # auxpass
    (
        "The/DT/det/1/the book/NN/nsubjpass/3/book was/VBD/auxpass/3/be written/VBN/ROOT/3/write "
        "./././3/.",
        "The book was not written.",
        "auxiliary",
    ),
    # ClearNLP "She will be happy": root "be" with aux "will".
    (
        "She/PRP/nsubj/2/she will/MD/aux/2/will be/VB/ROOT/2/be happy/JJ/acomp/2/happy ./././2/.",
        "She will not be happy.",
        "auxiliary",
    ),
    # infinitival "to" is labelled aux by ClearNLP; it is never the auxiliary that takes "not".
    (
        "He/PRP/nsubj/1/he wants/VBZ/ROOT/1/want to/TO/aux/3/to go/VB/xcomp/1/go ./././1/.",
        "He does not want to go.",
        "do_support",
    ),
    # neg
    (
        "He/PRP/nsubj/3/he does/VBZ/aux/3/do n't/RB/neg/3/not like/VB/ROOT/3/like fish/NN/dobj/3/fish "
        "./././3/.",
        "already_negated",
        None,
    ),
    # conj with its own subject
    (
        "He/PRP/nsubj/1/he came/VBD/ROOT/1/come and/CC/cc/1/and she/PRP/nsubj/4/she "
        "left/VBD/conj/1/leave ./././1/.",
        "coordinated_clauses",
        None,
    ),
    # quotative inversion
    (
        "Go/VB/ccomp/2/go ,/,/punct/2/, said/VBD/ROOT/2/say he/PRP/nsubj/2/he ./././2/.",
        "inverted_subject",
        None,
    ),
    # a lemmatizer that gave the inflected form back
    ("He/PRP/nsubj/1/he walked/VBD/ROOT/1/walked ./././1/.", "no_lemma", None),
]


@pytest.mark.parametrize(
    ("spec", "expected", "rule"), CLEAR_TABLE, ids=[c[1][:30] for c in CLEAR_TABLE]
)
def test_clearnlp_labels(spec, expected, rule):
    result = negate_doc(clear_doc(spec))
    if rule is None:
        assert (result.negated, result.reason) == (None, expected)
    else:
        assert (result.negated, result.rule) == (expected, rule)


@pytest.mark.parametrize(
    ("spec", "spaces", "expected"),
    [
        # all capitals stay all capitals
        (
            "SHE/PRP/nsubj/1/she LIKES/VBZ/ROOT/1/like FISH/NN/dobj/1/fish",
            None,
            "SHE DOES NOT LIKE FISH",
        ),
        # a title-cased headline stays title-cased
        (
            "Cranston/NNP/nsubj/1/Cranston Returns/VBZ/ROOT/1/return As/IN/prep/1/as White/NNP/pobj/2/White",
            None,
            "Cranston Does Not Return As White",
        ),
        (
            "Cranston/NNP/nsubj/2/Cranston Will/MD/aux/2/will Return/VB/ROOT/2/return",
            None,
            "Cranston Will Not Return",
        ),
        # a sentence-initial verb: only the first inserted word is capitalised
        ("Went/VBD/ROOT/0/go home/RB/advmod/0/home ./././0/.", None, "Did not go home."),
        # a contracted main verb glued to its subject gets a space before the full form
        (
            "I/PRP/nsubj/1/I 've/VBP/ROOT/1/have a/DT/det/3/a car/NN/dobj/1/car ./././1/.",
            [False, True, True, False, False],
            "I do not have a car.",
        ),
    ],
)
def test_casing_and_spacing(spec, spaces, expected):
    assert negate_doc(clear_doc(spec, spaces)).negated == expected


# --- the library and the stage -------------------------------------------------------------


def test_negate_rejects_non_strings(negator):
    with pytest.raises(InputError, match="#1"):
        negator.negate(["She is happy.", None])


def test_stage_fills_negative_and_rejects_the_rest(negator):
    rows = rows_table(
        [
            {"id": "a", "sentence": "She is happy.", "split": "aigen", "method": "osscse"},
            {"id": "b", "sentence": "Is she happy?", "split": "aigen", "method": "osscse"},
            {"id": "c", "sentence": "He went home early.", "split": "aigen", "method": "osscse"},
        ]
    )
    result = NegationStage(negator)(rows)
    assert result.rows.schema.equals(CANONICAL_SCHEMA) and result.rejects.schema.equals(
        REJECTS_SCHEMA
    )
    out = result.rows.to_pylist()
    assert [r["id"] for r in out] == ["a", "c"]
    assert out[0]["negative"] == "She is not happy." and out[0]["negative_method"] == "negation"
    assert out[1]["mer_negative"] is None, "MER is the build's last step, not the stage's"
    assert result.details.to_pylist() == [
        {"rule": "copula", "root": "happy", "root_tag": "JJ"},
        {"rule": "do_support", "root": "went", "root_tag": "VBD"},
    ]
    [reject] = result.rejects.to_pylist()
    assert (reject["id"], reject["stage"], reject["view"], reject["reason"]) == (
        "b",
        "negation",
        "negative",
        "question",
    )
    assert json.loads(reject["detail"]) == {"root": "happy", "root_tag": "JJ"}
    assert result.stats["share_negated"] == pytest.approx(2 / 3, abs=1e-4)
    assert result.stats["refusals"] == {"question": 1}
    assert NegationStage(negator).manifest()["model"]["negation"]["components"]


def test_missing_pipeline_says_how_to_install():
    with pytest.raises(ConfigError, match="python -m spacy download en_core_web_sm"):
        load_pipeline("en_core_web_sm")


def test_pipeline_without_parser_is_refused(tmp_path):
    spacy.blank("en").to_disk(tmp_path / "blank")
    with pytest.raises(ConfigError, match="dependency parser"):
        load_pipeline(str(tmp_path / "blank"))


@pytest.mark.slow
def test_two_processes_give_the_same_results(shared_models, negator):
    texts = [text for text, _, _ in UD_TABLE[:8]]
    parallel = Negator(str(shared_models / "en_ud_ewt_sm"), batch_size=2, n_process=2)
    assert parallel.negate(texts) == negator.negate(texts)
