"""How free text becomes a full-text query, the same for both stores.

A question is turned into an OR-query of its content words.  English
stopwords are dropped first — the list PostgreSQL's ``english`` text-search
configuration uses (Snowball's), so SQLite's FTS5 and PostgreSQL's
``to_tsquery('english', …)`` see the same words.  Kept, stopwords make short
turns that share only function words ("Wow! What did you get?") outrank the
turn that answers "When did Gina get accepted for the design internship?".
"""

from __future__ import annotations

import re

#: Bumped when the words a query keeps change, so benchmark rows of different versions are kept apart.
#: 1: every word of two or more characters; 2: English stopwords dropped.
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
    stopwords and one-character words (only ``\\w`` characters survive, so the result is safe to quote)."""
    return [w for w in dict.fromkeys(_WORD.findall(text.lower())) if len(w) > 1 and w not in STOPWORDS]
