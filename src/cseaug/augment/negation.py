"""OssCSE negation insertion at the dependency root (OssCSE section 4, "Data augmentation", Step 1).

The paper inserts a negative word at the root "based on the pos tag of the root word" ('likes'
→ 'does not like'); :data:`RULES` spell that out over the Penn Treebank tag and either label
set a spaCy parser may use (ClearNLP or Universal Dependencies), and a sentence they do not
fit is refused with one of :data:`REFUSALS`, never guessed at. Only words are inserted, cased
as their neighbour (docs/osscse.md, "Step 1: negation insertion").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cseaug.config import SPACY_COMPONENTS_NOT_NEEDED, NegationConfig
from cseaug.dataset.schema import reject_record, rejects_table, rows_table
from cseaug.errors import ConfigError, InputError, require
from cseaug.progress import progress_bar
from cseaug.secrets import Scrubber
from cseaug.step import Step, StepResult

STAGE = "negation"  # the rows' negative_method and the rejects' stage
RULES: tuple[str, ...] = ("auxiliary", "copula", "main_be", "do_support", "imperative")
"""Names of the insertion rules (``NegationResult.rule``), in the order they are tried."""

REFUSALS: dict[str, str] = {
    "empty": "no letter at all",
    "question": "the sentence is a question",
    "multiple_sentences": "the parse has more than one root",
    "already_negated": "the root is already negated",
    "coordinated_clauses": "the root is coordinated with a clause that has its own subject",
    "inverted_subject": "the auxiliary or verb precedes its subject",
    "non_finite_root": "the root (or its first auxiliary) is not a finite verb",
    "no_verbal_root": "the root is not a verb and has no copula",
    "no_lemma": "the pipeline gave no base form of the root verb",
}
"""Refusal reasons (``NegationResult.reason``, ``reason`` in rejects) and what they mean."""

AUX_LABELS = frozenset({"aux", "aux:pass", "auxpass"})
CLAUSE_LINK_LABELS = frozenset({"conj", "parataxis"})
FINITE_TAGS = frozenset({"VBZ", "VBD", "VBP", "MD"})
VERB_TAGS = frozenset({"VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "MD"})
DO_FORMS = {"VBZ": "does", "VBD": "did", "VBP": "do"}
BE_FORMS = frozenset({"am", "is", "are", "was", "were", "'m", "'re", "’m", "’re"})
NEGATION_WORDS = frozenset(
    {"not", "n't", "n’t", "never", "no", "nobody", "nothing", "none", "neither", "nor", "nowhere"}
)
CLOSING_CHARS = "\"'”’»)]} \t\n"

NEEDED_ANNOTATIONS: dict[str, str] = {  # what the pipeline must set, and the component that does
    "token.tag": "a tagger (Penn Treebank tags)",
    "token.dep": "a dependency parser",
    "token.lemma": "a lemmatizer",
}


@dataclass(frozen=True, slots=True)
class NegationResult:
    """The outcome of negating one sentence: the negated text and its rule (:data:`RULES`), or
    None and the refusal reason (:data:`REFUSALS`); the root token's text and Penn Treebank tag
    when the parse had one."""

    text: str
    negated: str | None
    rule: str | None = None
    reason: str | None = None
    root: str | None = None
    root_tag: str | None = None

    @property
    def ok(self) -> bool:
        return self.negated is not None


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _is_subject(token: Any) -> bool:
    dep = token.dep_
    return dep.startswith(("nsubj", "csubj")) or dep == "expl"


def _style(token: Any) -> str:
    """'upper', 'title' (inside a title-cased phrase) or 'lower' for words inserted near ``token``."""
    text = token.text
    if len(text) > 1 and text.isupper():
        return "upper"
    if text[:1].isupper() and not token.is_sent_start:
        return "title"
    return "lower"


def _cased(words: Sequence[str], style: str, capitalise_first: bool = False) -> str:
    if style == "upper":
        return " ".join(w.upper() for w in words)
    if style == "title":
        return " ".join(w[:1].upper() + w[1:] for w in words)
    out = list(words)
    if capitalise_first:
        out[0] = out[0][:1].upper() + out[0][1:]
    return " ".join(out)


def _insert_after(token: Any, words: Sequence[str]) -> str:
    text = token.doc.text
    end = token.idx + len(token.text)
    return f"{text[:end]} {_cased(words, _style(token))}{text[end:]}"


def _replace(token: Any, replacement: str) -> str:
    text = token.doc.text
    start = token.idx
    # A contracted verb ("I've a car") is glued to the word before it; the full form is not.
    glue = " " if start > 0 and text[start - 1].isalnum() else ""
    return f"{text[:start]}{glue}{replacement}{text[start + len(token.text) :]}"


def _already_negated(root: Any, children: Sequence[Any]) -> bool:
    return root.lower_ in NEGATION_WORDS or any(
        child.dep_ == "neg"
        or child.lower_ in NEGATION_WORDS
        or any(g.dep_ in ("det", "neg") and g.lower_ in NEGATION_WORDS for g in child.children)
        for child in children
    )


def _has_own_clause(children: Sequence[Any]) -> bool:
    return any(
        child.dep_ in CLAUSE_LINK_LABELS
        and (child.tag_ in VERB_TAGS or any(g.dep_ == "cop" for g in child.children))
        and any(_is_subject(g) for g in child.children)
        for child in children
    )


def _is_be(token: Any) -> bool:
    return token.lemma_.lower() == "be" or token.lower_ in BE_FORMS


def _base_form(root: Any) -> str:
    lemma = root.lemma_.lower()
    form = root.lower_
    # A lemmatizer that gives back "likes" / "walked" has failed; do-support would be wrong.
    unchanged = lemma == form and (
        (root.tag_ == "VBZ" and form.endswith("s")) or (root.tag_ == "VBD" and form.endswith("ed"))
    )
    if unchanged or not lemma.replace("-", "").isalpha():
        raise _Refused("no_lemma")
    return lemma


def _negate_root(doc: Any) -> tuple[str, str, Any]:
    """(negated text, rule, root) or raise :class:`_Refused`."""
    if not any(ch.isalpha() for ch in doc.text):
        raise _Refused("empty")
    if doc.text.rstrip(CLOSING_CHARS).endswith("?"):
        raise _Refused("question")
    roots = [t for t in doc if t.head.i == t.i and not (t.is_punct or t.is_space)]
    if len(roots) != 1:
        raise _Refused("multiple_sentences" if roots else "no_verbal_root")
    root = roots[0]
    children = list(root.children)
    if _already_negated(root, children):
        raise _Refused("already_negated")
    if _has_own_clause(children):
        raise _Refused("coordinated_clauses")
    subject = next((c for c in children if _is_subject(c)), None)

    auxiliaries = [c for c in children if c.dep_ in AUX_LABELS and c.tag_ != "TO" and c.i < root.i]
    if auxiliaries:
        first = auxiliaries[0]
        if first.tag_ not in FINITE_TAGS:
            raise _Refused("non_finite_root")
        if subject is not None and first.i < subject.i:
            raise _Refused("inverted_subject")
        return _insert_after(first, ["not"]), "auxiliary", root

    copula = next((c for c in children if c.dep_ == "cop"), None)
    if copula is not None:
        if copula.tag_ not in FINITE_TAGS:
            raise _Refused("non_finite_root")
        return _insert_after(copula, ["not"]), "copula", root

    tag = root.tag_
    if tag == "MD":
        return _insert_after(root, ["not"]), "auxiliary", root
    if tag in DO_FORMS:
        if _is_be(root):
            return _insert_after(root, ["not"]), "main_be", root
        if subject is not None and subject.i > root.i:
            raise _Refused("inverted_subject")
        words = [DO_FORMS[tag], "not", _base_form(root)]
        return (
            _replace(root, _cased(words, _style(root), root.text[:1].isupper())),
            "do_support",
            root,
        )
    if tag == "VB":
        first_word = next(t for t in doc if not (t.is_punct or t.is_space))
        if subject is None and root.i == first_word.i:
            verb = root.text if root.text.isupper() else root.text[:1].lower() + root.text[1:]
            words = _cased(["do", "not"], _style(root), root.text[:1].isupper())
            return _replace(root, f"{words} {verb}"), "imperative", root
        raise _Refused("non_finite_root")
    if tag in VERB_TAGS:
        raise _Refused("non_finite_root")
    raise _Refused("no_verbal_root")


def negate_doc(doc: Any) -> NegationResult:
    """Negate one parsed spaCy ``Doc`` (any with tags, dependencies and lemmas) by :data:`RULES`."""
    try:
        negated, rule, root = _negate_root(doc)
    except _Refused as refusal:
        root = next((t for t in doc if t.head.i == t.i and not t.is_punct), None)
        found = (root.text, root.tag_) if root is not None else (None, None)
        return NegationResult(doc.text, None, None, refusal.reason, *found)
    return NegationResult(doc.text, negated, rule=rule, root=root.text, root_tag=root.tag_)


def load_pipeline(name_or_path: str, exclude: Iterable[str] = SPACY_COMPONENTS_NOT_NEEDED) -> Any:
    """Load a spaCy pipeline by package name or path; ConfigError when there is none or it
    does not tag, parse and lemmatise."""
    spacy = require("spacy", "spacy", "Negation insertion")
    try:
        nlp = spacy.load(name_or_path, exclude=list(exclude))
    except OSError as exc:
        raise ConfigError(
            f"spaCy pipeline {name_or_path!r} is not installed and is not a pipeline directory. "
            f"Install it with `python -m spacy download {name_or_path}` (needs the internet) "
            "or give the path of a pipeline directory instead (negation.spacy_model in a run "
            "config, --model on the command line))."
        ) from exc
    assigned = {attr for name in nlp.pipe_names for attr in nlp.get_pipe_meta(name).assigns}
    missing = [what for attr, what in NEEDED_ANNOTATIONS.items() if attr not in assigned]
    if missing:
        raise ConfigError(
            f"spaCy pipeline {name_or_path!r} (components {nlp.pipe_names}) lacks "
            f"{', '.join(missing)}; negation needs tags, a dependency parse and lemmas. "
            "Use en_core_web_sm or another full English pipeline."
        )
    return nlp


class Negator:
    """Negates sentences at their dependency root with the spaCy pipeline ``model`` (a name
    or a path); the other arguments are the ``negation`` keys of docs/osscse.md."""

    def __init__(
        self,
        model: str = "en_core_web_sm",
        *,
        batch_size: int = 256,
        n_process: int = 1,
        exclude: Iterable[str] = SPACY_COMPONENTS_NOT_NEEDED,
    ) -> None:
        self.model = model
        self.batch_size = batch_size
        self.n_process = n_process
        self.nlp = load_pipeline(model, exclude)

    @classmethod
    def from_config(cls, cfg: NegationConfig) -> Negator:
        return cls(cfg.spacy_model, **cfg.model_dump(exclude={"spacy_model"}))

    def negate(self, texts: Sequence[str]) -> list[NegationResult]:
        """Negate every sentence; refused ones carry their reason (InputError for a non-string)."""
        bad = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
        if bad is not None:
            raise InputError(f"negation input #{bad} is {texts[bad]!r}, not a string")
        results = []
        docs = self.nlp.pipe(texts, batch_size=self.batch_size, n_process=self.n_process)
        with progress_bar("Negating", total=len(texts), unit="sentences") as bar:
            for doc in docs:
                results.append(negate_doc(doc))
                bar.advance()
        return results

    def identity(self) -> dict[str, Any]:
        """The pipeline's name, version and components, for manifests."""
        meta = self.nlp.meta
        return {
            "spacy_model": self.model,
            "name": f"{meta.get('lang', '')}_{meta.get('name', '')}",
            "version": meta.get("version"),
            "components": list(self.nlp.pipe_names),
        }


def negation_stats(results: Sequence[NegationResult]) -> dict[str, Any]:
    """Counts by rule and by refusal reason, and the share negated."""
    negated = sum(r.ok for r in results)
    return {
        "sentences": len(results),
        "negated": negated,
        "share_negated": round(negated / len(results), 4) if results else 0.0,
        "rules": dict(Counter(r.rule for r in results if r.ok).most_common()),
        "refusals": dict(Counter(r.reason for r in results if not r.ok).most_common()),
    }


class NegationStage(Step):
    """OssCSE Step 1 as a step: fills ``negative`` (``negative_method = "negation"``); refused
    anchors go to rejects, ``details`` give the rule, root and root tag of each negated row."""

    name = STAGE

    def __init__(self, negator: Negator) -> None:
        self.negator = negator

    def __call__(self, rows: pa.Table) -> StepResult:
        records = rows.to_pylist()
        results = self.negator.negate([r["sentence"] for r in records])
        out, rejects, negated = [], [], []
        scrub = Scrubber()
        for record, result in zip(records, results, strict=True):
            if result.ok:
                out.append({**record, "negative": result.negated, "negative_method": STAGE})
                negated.append(result)
            else:
                detail = {"root": result.root, "root_tag": result.root_tag}
                anchor = record.get("id"), record["sentence"]
                rejects.append(
                    reject_record(*anchor, STAGE, "negative", result.reason, None, detail, scrub)
                )
        stats = {
            "stage": self.name,
            "rows_in": len(records),
            "rows_out": len(out),
            **negation_stats(results),
        }
        details = pa.table(
            {
                column: pa.array([getattr(r, column) for r in negated], pa.string())
                for column in ("rule", "root", "root_tag")
            }
        )
        return StepResult(
            rows=rows_table(out), rejects=rejects_table(rejects), stats=stats, details=details
        )

    def manifest(self) -> dict[str, Any]:
        """The spaCy pipeline used, for the build manifest."""
        return {"model": {"negation": self.negator.identity()}}
