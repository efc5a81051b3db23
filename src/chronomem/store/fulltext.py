"""How free text becomes a full-text query, the same for both stores.

A question is turned into an OR-query of its content words.  English
stopwords are dropped first — the list PostgreSQL's ``english`` text-search
configuration uses (Snowball's), so SQLite's FTS5 and PostgreSQL's
``chronomem_fts_query`` (migration 0010: each word folded as FTS5's unicode61
folds it, as the indexed text is) see the same words.  Kept, stopwords make short
turns that share only function words ("Wow! What did you get?") outrank the
turn that answers "When did Gina get accepted for the design internship?".
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

from ..cjk import cjk_bigrams

#: Bumped when the words a query keeps change, so benchmark rows of different versions are kept apart.
#: 1: every word of two or more characters; 2: English stopwords dropped (runs of Chinese, Japanese or Korean
#: characters became pairs of characters later, under 2: no query of other words changed).
FULL_TEXT_VERSION = 2

#: PostgreSQL's ``english`` stopwords (``tsearch_data/english.stop``, from the Snowball project).
STOPWORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
herself it its itself they them their theirs themselves what which who whom this that these those am is are
was were be been being have has had having do does did doing a an the and but if or because as until while
of at by for with about against between into through during before after above below to from up down in out
on off over under again further then once here there when where why how all any both each few more most
other some such no nor not only own same so than too very s t can will just don should now
""".split())

_WORD = re.compile(r"\w+")

def query_words(text: str) -> list[str]:
    """The words of ``text`` a full-text query searches for: lower-cased, in order, without repeats,
    stopwords and one-character words (only ``\\w`` characters survive, so the result is safe to quote).

    Lower-casing is the indexes' own: composed first (a decomposed "café" would split at its accent), and
    the dotted capital I read as "i", as both indexes read it (Python lowers it to "i" and a combining dot,
    which split "İstanbul" into "stanbul").

    >>> query_words("Where is İstanbul? ISTANBUL!"), query_words("cafe\u0301 au lait")
    (['istanbul'], ['café', 'au', 'lait'])
    """
    lowered = cjk_bigrams(unicodedata.normalize("NFC", text).lower().replace("i\u0307", "i"))
    return [w for w in dict.fromkeys(_WORD.findall(lowered)) if len(w) > 1 and w not in STOPWORDS]


# FTS5's bm25 constants (fts5_aux.c)
BM25_K1 = 1.2
BM25_B = 0.75


def bm25_ranking(rows: int, tokens: int, hits: Sequence[Sequence[tuple[int, int, int]]],
                 limit: int) -> list[tuple[int, float]]:
    """Rank matched rows by FTS5's ``bm25`` computed over one user's rows only.

    ``rows`` and ``tokens`` count the user's indexed rows and their tokens; ``hits[i]`` holds, for each of
    the user's rows that holds the query's ``i``-th word, ``(rowid, instances of the word, row's tokens)``.
    The arithmetic is FTS5's, step for step, so a user alone in a table gets FTS5's scores to the last bit
    (negated: higher is better here) and FTS5's order, ties to the lower rowid.  Returns ``(rowid, score)``,
    best first, at most ``limit``.
    """
    if rows <= 0:
        return []
    avgdl = float(tokens) / float(rows)
    k1_plus_1 = BM25_K1 + 1.0
    # a word a row lacks adds 0.0 to its score in FTS5, which changes no sum: each row adds only its words,
    # in the query's order
    scores: dict[int, float] = {}
    for word_hits in hits:
        idf = math.log((rows - len(word_hits) + 0.5) / (len(word_hits) + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        for rowid, n, length in word_hits:
            freq = float(n)
            term = idf * ((freq * k1_plus_1) / (freq + BM25_K1 * (1 - BM25_B + BM25_B * float(length) / avgdl)))
            scores[rowid] = scores.get(rowid, 0.0) + term
    best = sorted((-score, rowid) for rowid, score in scores.items())[:limit]
    return [(rowid, -neg) for neg, rowid in best]


def varints(blob: bytes) -> list[int]:
    """The SQLite varints in ``blob``, as FTS5 writes its sizes: its docsize entry for a row holds one a
    column (the row's tokens there); its averages record, the table's rows, then its tokens a column."""
    out, value = [], 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            out.append(value)
            value = 0
    return out


def varint_sum(blob: bytes) -> int:
    """The sum of the SQLite varints in ``blob``: for a docsize entry, the row's tokens."""
    if max(blob, default=0) < 0x80:  # one byte a value: the common case, summed in C
        return sum(blob)
    return sum(varints(blob))
