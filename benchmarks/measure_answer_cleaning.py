"""What answer cleaning and the per-row checks do with real answers and with human sentences
(docs/quality.md, "Real chat answers"). Not a speed benchmark (no RATIO line).

* real answers: SmolLM2-135M-Instruct's recorded answers to the shipped prompts
  (``tests/fixtures/smollm2_answers.json``): how many each reason rejects, and every view kept;
* human sentences: the STS-B and STS12 train sentences and the SNLI dev/test hypotheses of
  ``../shared/data``, each fed as the answer to its pair partner: how many are rejected for
  the shape of a chat answer (a human sentence never should be) or altered by cleaning; the
  length-ratio and identical-to-input rejects are about the pair and counted apart;
* short anchors: the share of wiki1m lines of one to four words, and how many STS pairs by
  gold score have the same content words (what the short-anchor rule would reject).

Usage:
    python benchmarks/measure_answer_cleaning.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cseaug.quality.checks import content_words  # noqa: E402
from tests.llm.real_answers import human_sentences, real_answers, verdict  # noqa: E402
from tests.quality.sts_pairs import sts_pairs, wiki_sentences  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
PAIR_REASONS = ("llm/too_short", "llm/too_long", "llm/identical_to_input")
"""Rejects about the pair, not the answer's shape: a human sentence may get them."""


def main() -> None:
    answers = real_answers(SHARED)
    reasons: Counter[str] = Counter()
    kept = []
    for a in answers:
        text, reason = verdict(a.raw, a.anchor, a.method, a.view, a.prompt)
        reasons[reason or "kept"] += 1
        if text is not None:
            kept.append((a, text))
    print(f"real answers: {len(answers)} from {len({a.line for a in answers})} anchors")
    for reason, count in reasons.most_common():
        print(f"  {reason}: {count}")
    for a, text in kept:
        print(f"  kept {a.method}/{a.view} of {a.anchor!r}: {text!r}")

    pairs = human_sentences(SHARED)
    shape: Counter[str] = Counter()
    by_pair, altered = Counter(), []
    for source, sentence in pairs:
        text, reason = verdict(sentence, source, "nli", "positive")
        if reason in PAIR_REASONS:
            by_pair[reason] += 1
        elif reason:
            shape[reason] += 1
            print(f"  rejected {reason}: {sentence!r}")
        elif text != " ".join(sentence.split()):
            altered.append((sentence, text))
    print(
        f"human sentences: {len(pairs)}; rejected for their shape: {sum(shape.values())} {dict(shape)}"
    )
    print(f"  altered by cleaning: {len(altered)}")
    for sentence, text in altered[:20]:
        print(f"    {sentence!r} -> {text!r}")
    print(f"  rejected for the pair (length ratio, identical): {dict(by_pair)}")

    wiki = wiki_sentences(SHARED, 100_000)
    short = sum(len(s.split()) <= 4 for s in wiki)
    print(f"wiki1m sample: {short} of {len(wiki)} lines have 1-4 words ({short / len(wiki):.1%})")
    same: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for score, first, second in sts_pairs(SHARED):
        bucket = f"{min(int(score), 4)}-{min(int(score), 4) + 1}"
        total[bucket] += 1
        same[bucket] += content_words(first) == content_words(second)
    for bucket in sorted(total):
        print(f"  STS pairs scored {bucket}: {same[bucket]} of {total[bucket]} same content words")


if __name__ == "__main__":
    main()
