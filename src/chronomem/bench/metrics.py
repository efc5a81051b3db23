"""Answer and retrieval metrics, as pure functions.

* :func:`locomo_f1` — the official LoCoMo QA score (snap-research/locomo
  ``task_eval/evaluation.py``): normalise (drop commas, lowercase, strip
  punctuation, drop a/an/the/and, squeeze spaces), Porter-stem, multiset token
  F1.  Category 1 splits gold and prediction on commas and averages, over gold
  parts, the best F1 against any predicted part; category 3 scores against the
  gold before the first ``;``; category 5 scores 1 when the prediction says
  "not mentioned" or "no information available", else 0.
* :func:`mem0_f1` and :func:`bleu1` — the Mem0 paper's lexical metrics (set
  token F1 over a simple tokenisation; sentence BLEU-1 with brevity penalty).
* :func:`evidence_recall` — share of gold ``dia_id``s among the first k
  retrieved ids.
* :func:`persona_recall` — MSC: how much of each gold persona fact a memory
  text holds.
* :func:`sign_test` — two-sided exact sign test of paired wins and losses
  (ties dropped), for saying whether one method's lead over another on the
  same questions is more than chance.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

_PUNCT = set(string.punctuation)
_ARTICLES_RE = re.compile(r"\b(a|an|the|and)\b")
ABSTENTION_PHRASES: tuple[str, ...] = ("no information available", "not mentioned")


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    from nltk.stem import PorterStemmer  # nltk takes ~2 s to import: only when scoring

    return PorterStemmer()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return _stemmer().stem(word)


def normalize_answer(text: object) -> str:
    """LoCoMo normalisation: commas out, lowercase, punctuation out, a/an/the/and out."""
    s = str(text).replace(",", "")
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES_RE.sub(" ", s)
    return " ".join(s.split())


def answer_tokens(text: object) -> list[str]:
    """Normalised, Porter-stemmed tokens of an answer."""
    return [stem(w) for w in normalize_answer(text).split()]


def token_f1(prediction: object, gold: object) -> float:
    """Multiset token F1 of stemmed, normalised tokens (LoCoMo ``f1_score``)."""
    pred = answer_tokens(prediction)
    ref = answer_tokens(gold)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: object, gold: object) -> float:
    """LoCoMo category 1: comma-separated parts, mean over gold parts of the best part F1."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def is_abstention(prediction: object) -> bool:
    low = str(prediction).lower()
    return any(p in low for p in ABSTENTION_PHRASES)


def locomo_f1(prediction: object, gold: object, category: int) -> float:
    """The official LoCoMo QA score of one answer, in [0, 1]."""
    if category == 5:
        return 1.0 if is_abstention(prediction) else 0.0
    gold_text = str(gold)
    if category == 3:
        gold_text = gold_text.split(";")[0].strip()
    if category == 1:
        return multi_answer_f1(prediction, gold_text)
    if category in (2, 3, 4):
        return token_f1(prediction, gold_text)
    raise ValueError(f"unknown LoCoMo category {category!r}")


# --------------------------------------------------------------------------- Mem0-style


def simple_tokenize(text: object) -> list[str]:
    """Mem0/A-Mem tokenisation: lowercase, ``. , ! ?`` become spaces, split on whitespace."""
    s = str(text).lower()
    for ch in ".,!?":
        s = s.replace(ch, " ")
    return s.split()


def mem0_f1(prediction: object, gold: object) -> float:
    """Mem0 paper's F1: set overlap of :func:`simple_tokenize` tokens."""
    pred = set(simple_tokenize(prediction))
    ref = set(simple_tokenize(gold))
    if not pred or not ref:
        return 0.0
    common = len(pred & ref)
    if common == 0:
        return 0.0
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall)


_WORD_RE = re.compile(r"\w+|[^\w\s]")


def bleu_tokenize(text: object) -> list[str]:
    """Lowercased words and punctuation marks as separate tokens.

    Stands in for ``nltk.word_tokenize`` (which needs the punkt data download);
    differs from it only on contractions ("don't" → do / ' / t).
    """
    return _WORD_RE.findall(str(text).lower())


def bleu1(prediction: object, gold: object) -> float:
    """Sentence BLEU-1 (clipped unigram precision × brevity penalty), as nltk computes it."""
    pred = bleu_tokenize(prediction)
    ref = bleu_tokenize(gold)
    if not pred or not ref:
        return 0.0
    clipped = sum((Counter(pred) & Counter(ref)).values())
    if clipped == 0:
        return 0.0
    precision = clipped / len(pred)
    bp = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return bp * precision


# --------------------------------------------------------------------------- retrieval


def evidence_recall(gold_ids: Sequence[str], retrieved_ids: Sequence[str], k: int | None = None) -> float | None:
    """Share of gold evidence ids found among the first ``k`` retrieved ids.

    None when there is no gold evidence (such questions are left out of the mean).
    """
    gold = list(dict.fromkeys(gold_ids))
    if not gold:
        return None
    top = set(retrieved_ids if k is None else list(retrieved_ids)[:k])
    return sum(1 for g in gold if g in top) / len(gold)


# --------------------------------------------------------------------------- MSC

_PERSONA_STOP = frozenset(
    "i me my mine myself we our you your he she his her they them their it its is am are was were be been "
    "being do does did have has had a an the and or but of to in on at for with from by as that this these "
    "those so very really just also not no speaker 1 2".split()
)


def content_stems(text: object) -> set[str]:
    return {stem(w) for w in normalize_answer(text).split() if w not in _PERSONA_STOP}


_SENT_SPLIT_RE = re.compile(r"(?<=[.!?;])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT_RE.split(text) if s.strip()]


def fact_coverage(fact: str, memory_sentences: Sequence[str]) -> float:
    """Best share of the fact's content words (stemmed, no pronouns) held by one memory sentence."""
    want = content_stems(fact)
    if not want:
        return 1.0
    best = 0.0
    for sent in memory_sentences:
        best = max(best, len(want & content_stems(sent)) / len(want))
        if best == 1.0:
            break
    return best


def persona_recall(memory: str, facts: Sequence[str], threshold: float = 0.5) -> tuple[float, float] | None:
    """(mean coverage, share of facts covered ≥ threshold) of gold persona facts; None without facts."""
    if not facts:
        return None
    sentences = split_sentences(memory)
    cov = [fact_coverage(f, sentences) for f in facts]
    return sum(cov) / len(cov), sum(1 for c in cov if c >= threshold) / len(cov)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in [0, 100]); None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def sign_test(wins: int, losses: int) -> float | None:
    """Two-sided exact sign test: P(a split at least this uneven | wins and losses equally likely).

    Ties are left out before calling.  None when there is nothing to test (no wins, no losses).
    """
    if wins < 0 or losses < 0:
        raise ValueError(f"wins and losses must be counts >= 0, got {wins} and {losses}")
    n = wins + losses
    if n == 0:
        return None
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)
