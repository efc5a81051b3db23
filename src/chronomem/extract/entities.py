"""A stronger entity resolver for the write path: exact → alias → fuzzy → embedding.

Same interface as the core :class:`chronomem.entities.ExactResolver`
(``resolve_many``), plus ``resolve`` for one name.  Matching is conservative —
a wrong merge silently corrupts the graph, a missed one only costs recall — so:

* exact and recorded-alias matches first (the core resolver);
* then *variant* matches that are almost always the same thing: a leading
  article ("the Golden Gate Bridge"), an acronym of a multi-word name ("NYC" ↔
  "New York City"), the same word set in another order;
* then fuzzy string similarity at a high threshold (≥ 0.92, names of 5+
  characters, so "Anna"/"Anne" or "Paris"/"Parks" never merge), but not a
  word with another ending ("Daniel"/"Daniela", "Georgia"/"Georgina": in names
  an ending tells people apart; :func:`another_ending`);
* never across different numbers: "Flat 11" and "Flat 1", or "City-1-0" and
  "City-0-1", stay apart whatever the other checks say;
* then, only when an embedder is given, cosine similarity ≥ 0.92 with a clear
  margin over the runner-up.

A match that is ambiguous (two candidates tie) is not taken.  Every non-exact
match is recorded as an alias of the entity it joined, so the next lookup is
exact.  Everything is scoped by ``user_id``: candidates come from the store's
per-user listing only.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..entities import ExactResolver, normalize_name
from ..memo import text_memo
from ..model import Entity
from ..providers.base import Embedder
from ..store.base import Store

log = logging.getLogger(__name__)

_ARTICLE = re.compile(r"^(?:the|a|an)\s+")
_NON_WORD = re.compile(r"[^0-9a-z\u00c0-\uffff]+")
_WORD_RUN = re.compile(r"\w*")
_STOP = {"the", "of", "and", "a", "an", "de", "la", "le"}


@text_memo(maxsize=65536)
def variant_key(name: str) -> str:
    """Article-free, punctuation-free, order-free form: "The New-York City" → "city new york"."""
    norm = _ARTICLE.sub("", normalize_name(name))
    words = [w for w in _NON_WORD.split(norm) if w]
    return " ".join(sorted(words))


@text_memo(maxsize=65536)
def acronym(name: str) -> str | None:
    """"New York City" → "nyc"; ``None`` for names of fewer than two significant words."""
    words = [w for w in _NON_WORD.split(_ARTICLE.sub("", normalize_name(name))) if w and w not in _STOP]
    if len(words) < 2:
        return None
    return "".join(w[0] for w in words)


def is_acronym_of(short: str, long: str) -> bool:
    s = _NON_WORD.sub("", normalize_name(short))
    acr = acronym(long)
    return bool(acr) and 2 <= len(s) <= 6 and s == acr and normalize_name(short) != normalize_name(long)


@text_memo(maxsize=65536)
def numbers(name: str) -> tuple[str, ...]:
    """The digit runs of a name, in order: names with different numbers never merge."""
    return tuple(re.findall(r"\d+", normalize_name(name)))


def similarity(a: str, b: str) -> float:
    """Character-level similarity of two normalised names in [0, 1]."""
    return difflib.SequenceMatcher(None, normalize_name(a), normalize_name(b)).ratio()


def similarity_at_least(a: str, b: str, threshold: float) -> float:
    """:func:`similarity` when it reaches ``threshold``, else 0.0.

    Skips the full comparison when difflib's cheap upper bounds (lengths, then
    character counts) already fall short, so scanning many candidates stays fast.
    """
    m = difflib.SequenceMatcher(None, normalize_name(a), normalize_name(b))
    if m.real_quick_ratio() < threshold or m.quick_ratio() < threshold:
        return 0.0
    r = m.ratio()
    return r if r >= threshold else 0.0


def another_ending(a: str, b: str) -> bool:
    """Are the normalised spellings ``a`` and ``b`` of different lengths, differing only at the end of a word
    (within its last letter)?  Such near spellings are other names, not typos: "Daniel" and "Daniela",
    "Christian" and "Christiana", "Georgia" and "Georgina", "Daniele" and "Danielle" reach difflib's 0.92
    but are different people.  A letter swapped ("Brigde") or doubled inside a word ("Jenifer") is not
    another ending.  Pure.

    >>> another_ending("daniel", "daniela"), another_ending("georgina", "georgia")
    (True, True)
    >>> another_ending("golden gate brigde", "golden gate bridge"), another_ending("jenifer", "jennifer")
    (False, False)
    """
    if len(a) == len(b):
        return False
    if len(a) < len(b):
        a, b = b, a
    head = len(os.path.commonprefix([a, b]))
    tail = len(os.path.commonprefix([a[head:][::-1], b[head:][::-1]]))
    after = a[len(a) - tail:]  # what follows the edit in the longer spelling
    return len(_WORD_RUN.match(after).group()) <= 1  # type: ignore[union-attr]  # \w* always matches


def names_of(e: Entity) -> list[str]:
    """Every name of ``e``: its own, then its aliases."""
    return [e.name, *e.aliases]


_BINS = 64  # characters counted modulo this: a lower bound of the distance of two character counts


class SpellingIndex:
    """Every spelling of some entities, indexed for :meth:`FuzzyEntityResolver._match`, which otherwise
    compared a new name with each spelling of each entity in turn: 65 ms a name at 5,000 entities, and
    adding 5,000 new names was quadratic.  Variants and acronyms are dictionary lookups.  Near spellings
    keep difflib's ratio and threshold; only spellings that can reach it are compared: difflib's own bounds
    (``real_quick_ratio``: the two lengths; ``quick_ratio``: the characters both hold) computed for all
    spellings at once, the characters counted in :data:`_BINS` bins (a count that merges characters can
    only raise the bound, so no spelling that could match is skipped)."""

    def __init__(self, entities: Sequence[Entity], settings: ResolverSettings) -> None:
        self.entities = list(entities)
        self.threshold = settings.fuzzy_threshold
        self._variants: dict[str, dict[str, Entity]] = {}
        self._by_acronym: dict[str, list[tuple[Entity, str]]] = {}  # acronym of a spelling → its entities
        self._by_short: dict[str, list[tuple[Entity, str]]] = {}  # a spelling that could be an acronym
        owners: list[Entity] = []
        texts: list[str] = []  # the normalised spellings of min_length or more, compared by difflib
        spelled: list[str] = []
        for e in self.entities:
            for s in names_of(e):
                if key := variant_key(s):
                    self._variants.setdefault(key, {})[e.id] = e
                if acr := acronym(s):
                    self._by_acronym.setdefault(acr, []).append((e, s))
                if 2 <= len(short := _NON_WORD.sub("", normalize_name(s))) <= 6:
                    self._by_short.setdefault(short, []).append((e, s))
                if len(norm := normalize_name(s)) >= settings.fuzzy_min_length:
                    owners.append(e)
                    texts.append(norm)
                    spelled.append(s)
        self._owners, self._spelled, self._texts = owners, spelled, texts
        self._lengths = np.array([len(t) for t in texts], dtype=np.int64)
        self._counts = _bin_counts(texts)

    def variants(self, name: str) -> dict[str, Entity]:
        """The entities with a spelling of ``name``'s article-, punctuation- and order-free form."""
        key = variant_key(name)
        return dict(self._variants.get(key, {})) if key else {}

    def acronyms(self, name: str) -> dict[str, Entity]:
        """The entities ``name`` is an acronym of, or with a spelling that is an acronym of ``name``."""
        hits: dict[str, Entity] = {}
        for e, s in self._by_acronym.get(_NON_WORD.sub("", normalize_name(name)), ()):
            if is_acronym_of(name, s):
                hits[e.id] = e
        if acr := acronym(name):
            for e, s in self._by_short.get(acr, ()):
                if is_acronym_of(s, name):
                    hits[e.id] = e
        return hits

    def near(self, name: str) -> list[tuple[float, Entity]]:
        """Each entity with a spelling of difflib ratio ≥ the threshold to ``name`` that is not
        :func:`another_ending` of it, with its best ratio."""
        if not len(self._lengths):
            return []
        norm = normalize_name(name)
        la, lb = len(norm), self._lengths
        total = la + lb
        slack = 1e-9  # the bounds below may only keep more than difflib's
        possible = 2.0 * np.minimum(la, lb) / total >= self.threshold - slack
        if possible.any():
            differ = np.abs(self._counts - _bin_counts([norm])[0]).sum(axis=1, dtype=np.int64)
            possible &= (total - differ) / total >= self.threshold - slack
        best: dict[str, tuple[float, Entity]] = {}
        for i in np.flatnonzero(possible):
            e = self._owners[i]
            r = similarity_at_least(name, self._spelled[i], self.threshold)
            if r >= self.threshold and r > best.get(e.id, (0.0, e))[0] and not another_ending(norm, self._texts[i]):
                best[e.id] = (r, e)
        return list(best.values())


def _bin_counts(texts: Sequence[str]) -> np.ndarray:
    """Per text, how many of its characters fall in each of :data:`_BINS` bins (code point modulo)."""
    out = np.zeros((len(texts), _BINS), dtype=np.int16)  # names are far shorter than 32,767 characters
    if texts:
        codes = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32) % _BINS
        rows = np.repeat(np.arange(len(texts)), [len(t) for t in texts])
        np.add.at(out, (rows, codes), 1)
    return out


@dataclass
class ResolverSettings:
    fuzzy_threshold: float = 0.92
    fuzzy_min_length: int = 5
    embed_threshold: float = 0.92
    embed_margin: float = 0.03


class FuzzyEntityResolver:
    """Exact, alias, variant, fuzzy and (optional) embedding entity resolution within one user."""

    def __init__(
        self,
        store: Store,
        *,
        embedder: Embedder | None = None,
        settings: ResolverSettings | None = None,
    ) -> None:
        self.store = store
        self.exact = ExactResolver(store)
        self.embedder = embedder
        self.settings = settings or ResolverSettings()

    # -- public --------------------------------------------------------------
    def lookup(self, user_id: str, names: Sequence[str]) -> dict[str, str]:
        """spelling → entity id for spellings already known exactly or as aliases (no creation)."""
        return self.exact.lookup(user_id, names)

    def resolve(self, user_id: str, name: str, *, type: str | None = None, create: bool = True) -> Entity | None:
        """The entity ``name`` denotes for ``user_id`` (created when unknown and ``create``)."""
        return self.resolve_many(user_id, [(name, type)], create=create).get(name)

    def resolve_many(
        self, user_id: str, names: Sequence[tuple[str, str | None]], *, create: bool = True,
        sources: Mapping[str, Sequence[str]] | None = None,
    ) -> dict[str, Entity]:
        spellings = list(dict.fromkeys(n for n, _ in names))
        out = self.exact.resolve_many(user_id, [(n, t) for n, t in names], create=False, sources=sources)
        missing = [n for n in spellings if n not in out]
        candidates = self.store.entities(user_id) if missing else []
        if candidates:  # a user with no entities yet has nothing to match against
            # numbers are identity ("Flat 11"/"Flat 1"): each name is matched only against the entities
            # with a spelling of its numbers, found once per call (not a scan of every entity per name)
            by_numbers: dict[tuple[str, ...], dict[str, Entity]] = {}
            for e in candidates:
                for s in names_of(e):
                    by_numbers.setdefault(numbers(s), {})[e.id] = e
            indexes: dict[tuple[str, ...], SpellingIndex] = {}
            for n in missing:
                key = numbers(n)
                if key not in indexes:
                    indexes[key] = SpellingIndex(list(by_numbers.get(key, {}).values()), self.settings)
                match = self._match(n, indexes[key])
                if match is not None:
                    log.debug("entity %r joined %r (user %s) as an alias", n, match.name, user_id)
                    self.store.add_alias(user_id, match.id, n.strip(), normalize_name(n),
                                         learned_from=(sources or {}).get(n))
                    out[n] = match
        still = [(n, t) for n, t in names if n not in out]
        if still and create:  # looked up above and matched nothing: create without a second lookup
            out.update(self.exact.create(user_id, still, sources=sources))
        return out

    # -- matching --------------------------------------------------------------
    def _match(self, name: str, index: SpellingIndex) -> Entity | None:
        """The one entity of the index (the entities with a spelling of ``name``'s numbers) that ``name`` is
        a variant, an acronym or a near spelling of."""
        if not normalize_name(name):
            return None
        hits = index.variants(name)
        if len(hits) == 1:
            return next(iter(hits.values()))
        if len(hits) > 1:
            return None
        hits = index.acronyms(name)
        if len(hits) == 1:
            return next(iter(hits.values()))
        if len(hits) > 1:
            return None
        st = self.settings
        if len(normalize_name(name)) >= st.fuzzy_min_length:
            scored = sorted(index.near(name), key=lambda x: -x[0])
            if len(scored) == 1 or (len(scored) > 1 and scored[0][0] - scored[1][0] > 0.02):
                return scored[0][1]
            if len(scored) > 1:
                return None
        if self.embedder is not None and index.entities:
            return self._embed_match(name, index.entities)
        return None

    def _embed_match(self, name: str, candidates: Sequence[Entity]) -> Entity | None:
        st = self.settings
        try:
            vecs = self.embedder.embed([name, *(e.name for e in candidates)])  # type: ignore[union-attr]
        except Exception as e:  # an unavailable embedder must not break writes
            log.warning("embedding entity match skipped: %s", e)
            return None
        q = vecs[0]
        sims = sorted(
            ((sum(a * b for a, b in zip(q, v)), e) for v, e in zip(vecs[1:], candidates)),
            key=lambda x: -x[0],
        )
        if not sims or sims[0][0] < st.embed_threshold:
            return None
        if len(sims) > 1 and sims[0][0] - sims[1][0] < st.embed_margin:
            return None
        return sims[0][1]
