"""The model's reading copy of a turn typed in lowercase: names written with their capitals.

People type to friends in lowercase ("moved to berlin in april, been at quellwerk since"); the 1.5B
extraction model writes fewer and wronger statements from such chats, and the state rules look for
capitalised names.  Extraction v13 tries casing as the remedy — measured in sample 13 checks won, 7 lost;
on two sets written blind after it, level (BENCHMARKS.md "Lowercase chat"), so it is opt-in.  Before a
chunk goes to the extractor, each turn that looks typed without capitals (:func:`uncased`) is given a
cased copy (:func:`truecase`): "I" and its contractions, sentence starts, month and weekday names, the
speakers' names, place names (GeoNames' cities of 15,000 people or more, countries and US states, less
those that are also English words: ``data/places.txt.gz``) and names the user's memory already holds
(:meth:`Names.learned`).  Only the letters' case changes, and only of words typed all in lowercase;
"im" / "ive" become "I'm" / "I've".  Stored turns stay verbatim: the copy is what the model and the
rules read, and facts still cite the stored turns' ids.  A turn typed with capitals is left alone:
there, a lowercase word was meant as a word.  Pure, apart from reading the two word lists once.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources

from ..model import Message
from .chunking import Chunk

#: a word: letters, with an inner apostrophe ("i'm", "o'brien")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_PRONOUN = {"i": "I", "i'm": "I'm", "i’m": "I’m", "im": "I'm", "i've": "I've", "i’ve": "I’ve", "ive": "I've",
            "i'll": "I'll", "i’ll": "I’ll", "i'd": "I'd", "i’d": "I’d"}
_ALWAYS = {w.lower(): w for w in (
    "January February April June July August September October November December "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday").split()}
#: "may" and "march" are words too: months only after a word that takes a time, or before a day or year
_MONTH_WORD = {"may": "May", "march": "March"}
_TIME_BEFORE = re.compile(r"\b(?:in|since|until|till|by|from|last|next|this|early|late|mid|of|through|every|"
                          r"before|after|around|end)\s+$", re.IGNORECASE)
_CAPITAL_NEXT = re.compile(r"\s+[A-Z]")
_DAY_OR_YEAR_AFTER = re.compile(r"\s+(?:\d{1,2}(?:st|nd|rd|th)?\b|(?:19|20)\d\d\b)")
#: where a sentence starts: the line's start, or after . ! ? and spaces
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)$")
#: words of a name that stay lowercase ("Rio de Janeiro", "University of Ibadan")
_CONNECTORS = frozenset({"of", "the", "de", "da", "do", "dos", "das", "del", "la", "le", "les", "van", "von",
                         "der", "den", "al", "el", "and", "upon", "on", "am", "im", "an", "y", "e", "di"})
MAX_NAME_WORDS = 4


def _load(name: str) -> list[str]:
    data = resources.files("chronomem.data").joinpath(name).read_bytes()
    return [ln for ln in gzip.decompress(data).decode("utf-8").splitlines() if ln and not ln.startswith("#")]


@cache
def common_words() -> frozenset[str]:
    """The lowercase English words (``data/common_words.txt.gz``: SCOWL's list, no proper nouns)."""
    return frozenset(_load("common_words.txt.gz"))


@dataclass(frozen=True)
class Names:
    """Names by their lowercase words: ``("kuala", "lumpur") → ("Kuala", "Lumpur")``."""

    spelled: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    longest: int = field(init=False, default=0)  # words in the longest name

    def __post_init__(self) -> None:
        object.__setattr__(self, "longest", max((len(k) for k in self.spelled), default=0))

    def with_names(self, names: Iterable[str]) -> Names:
        """These names added (each as written: "Halden Bank", "Gdańsk"); earlier spellings win."""
        spelled = dict(self.spelled)
        for name in names:
            words = tuple(_WORD.findall(name))
            if words and len(words) <= MAX_NAME_WORDS:
                spelled.setdefault(tuple(w.lower() for w in words), words)
        return Names(spelled)

    def learned(self, names: Iterable[str]) -> Names:
        """These names added where they look like names — capitalised words (connectors aside), at most
        :data:`MAX_NAME_WORDS`, not one English word — and so is each of their words that is no English
        word ("Halden Bank" gives "halden bank" and "halden"; "University of Ibadan" gives "ibadan" too;
        "Reading", "Kemi's friend" and "his life" give nothing)."""
        common = common_words()
        found: list[str] = []
        for name in names:
            words = _WORD.findall(name)
            if not words or len(words) > MAX_NAME_WORDS or "'" in name or "’" in name:
                continue
            if not all(w[0].isupper() or w in _CONNECTORS for w in words) or not words[0][0].isupper():
                continue
            found += [w for w in words if w[0].isupper() and w.lower() not in common]
            if len(words) > 1:
                found.append(name)
        return self.with_names(found)


@cache
def places() -> Names:
    """The place names of ``data/places.txt.gz`` (GeoNames, CC BY 4.0)."""
    return Names().with_names(_load("places.txt.gz"))


def uncased(text: str) -> bool:
    """Whether ``text`` looks typed without capitals: "i" in lowercase, or most of its sentences
    starting with a lowercase letter."""
    if any(w in _PRONOUN for w in _WORD.findall(text)):  # its keys are the lowercase spellings
        return True
    starts = [m.group(1) for m in re.finditer(r"(?:^|[.!?]\s+)[^\w]*([^\W\d_])", text)]
    return bool(starts) and 2 * sum(c.islower() for c in starts) > len(starts)


def truecase(text: str, names: Names) -> str:
    """``text`` with the words of ``names``, "I", month and weekday names and sentence starts capitalised
    (words typed with any capital letter are left as they are)."""
    words = list(_WORD.finditer(text))
    out: list[str] = []
    end = 0
    i = 0
    longest = names.longest
    while i < len(words):
        m = words[i]
        # the longest name starting here, its words separated by one space or hyphen
        hit: tuple[str, ...] = ()
        for n in range(min(longest, len(words) - i), 0, -1):
            span = words[i:i + n]
            if any(not w.group(0).islower() for w in span):
                continue
            if any(text[a.end():b.start()] not in (" ", "-") for a, b in zip(span, span[1:])):
                continue
            key = tuple(w.group(0) for w in span)
            if key in names.spelled:
                hit = key
                break
        if hit:
            for w, cased in zip(words[i:i + len(hit)], names.spelled[hit]):
                out.append(text[end:w.start()] + cased)
                end = w.end()
            i += len(hit)
            continue
        word = m.group(0)
        cased = word
        if word.islower():
            if word in _PRONOUN and not (word == "im" and _CAPITAL_NEXT.match(text, m.end())):
                cased = _PRONOUN[word]  # "im Sommer" is German
            elif word in _ALWAYS:
                cased = _ALWAYS[word]
            elif word in _MONTH_WORD and (_TIME_BEFORE.search(text, 0, m.start())
                                          or _DAY_OR_YEAR_AFTER.match(text, m.end())):
                cased = _MONTH_WORD[word]
            elif _SENTENCE_START.search(text, 0, m.start()) is not None:
                cased = word[0].upper() + word[1:]
        out.append(text[end:m.start()] + cased)
        end = m.end()
        i += 1
    return "".join(out) + text[end:]


def chunk_names(chunk: Chunk[Message], known: Names) -> Names:
    """``known``, the chunk's speakers' names (each word of a speaker's name on its own too) and the
    names its turns write with capitals inside a sentence ("… at Quellwerk Software since …")."""
    speakers = list(dict.fromkeys(m.speaker for m in chunk.all))
    written = [m.group(0) for t in chunk.all for m in _CAPITALISED_RUN.finditer(t.text)
               if not _SENTENCE_START.search(t.text, 0, m.start())]
    return known.with_names([*speakers, *(w for s in speakers for w in _WORD.findall(s))]).learned(written)


#: a run of capitalised words ("Quellwerk Software", "University of Ibadan")
_CAPITALISED_RUN = re.compile(r"\b[A-Z][^\W\d_]+(?:[ -](?:(?:of|de|da|del|la|van|von|the) )?[A-Z][^\W\d_]+)*")


def reading_copy(chunk: Chunk[Message], known: Names) -> Chunk[Message]:
    """``chunk`` with each uncased turn's text truecased (same ids, speakers and times)."""
    typed = [uncased(m.text) for m in chunk.all]
    if not any(typed):
        return chunk
    names = chunk_names(chunk, known)
    read = tuple(replace(m, text=truecase(m.text, names)) if low else m for m, low in zip(chunk.all, typed))
    return Chunk(context=read[:len(chunk.context)], turns=read[len(chunk.context):])


__all__ = ["MAX_NAME_WORDS", "Names", "chunk_names", "common_words", "places", "reading_copy", "truecase",
           "uncased"]
