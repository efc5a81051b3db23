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
import functools
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

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
_GROUPS = 8  # bins summed by their number modulo this: a spelling's cell (:class:`_SameLength`)
_CELL_DIFFER = 3  # cells are looked up for counts this far apart or closer; farther, a length is scanned
_CELL_ROWS = 256  # a length with fewer spellings is scanned


class _SameLength:
    """The spellings of one length in a :class:`SpellingIndex`, in the order they were added, with their
    character counts in :data:`_BINS` bins (rows past ``len(spellings)`` are room to grow).

    Spellings whose counts are near a name's are found in cells, not by comparing every count: counts
    that differ by ``d`` characters (the sum of the bins' differences) have group sums (:data:`_GROUPS`
    groups of bins) that differ by ``d`` or less, so the cells of every group sum within ``d`` of the
    name's hold them all.  At difflib's 0.92 a name of up to 22 characters may differ by 3 characters or
    fewer from any spelling it could match, so its lookups are a few hundred at most; comparing the counts
    of 40,000 spellings of one length took 5 ms a name."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.spellings: list[tuple[int, Entity, str, str]] = []  # (order added, owner, spelling, normalised)
        self.counts = np.zeros((0, _BINS), dtype=np.int16)
        self._cells: dict[bytes, list[int]] = {}  # group sums → the rows with them

    def extend(self, rows: Sequence[tuple[int, Entity, str, str]]) -> None:
        n, need = len(self.spellings), len(self.spellings) + len(rows)
        if need > len(self.counts):  # doubling: adding a spelling at a time stays linear
            grown = np.zeros((max(need, 2 * len(self.counts)), _BINS), dtype=np.int16)
            grown[:n] = self.counts[:n]
            self.counts = grown
        self.counts[n:need] = _bin_counts([r[3] for r in rows])
        for i, sums in enumerate(_group_sums(self.counts[n:need]), start=n):
            self._cells.setdefault(sums.tobytes(), []).append(i)
        self.spellings.extend(rows)

    def within(self, counts: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows whose counts differ from ``counts`` by ``most`` characters or fewer, and by how many."""
        if most > _CELL_DIFFER or len(self.spellings) < _CELL_ROWS:
            rows = np.arange(len(self.spellings))
        else:
            sums = _group_sums(counts[None])[0] + _moves(most)
            sums = sums[(sums >= 0).all(axis=1) & (sums.sum(axis=1) == self.length)]
            rows = np.array(sorted(i for key in sums for i in self._cells.get(key.tobytes(), ())), dtype=np.int64)
        differ = np.abs(self.counts[rows] - counts).sum(axis=1, dtype=np.int64)
        keep = differ <= most
        return rows[keep], differ[keep]


def _group_sums(counts: np.ndarray) -> np.ndarray:
    """Per row of bin counts, the sums of its :data:`_GROUPS` groups of bins (bin number modulo groups)."""
    return counts.reshape(len(counts), _BINS // _GROUPS, _GROUPS).sum(axis=1, dtype=np.int16)


@functools.cache
def _moves(most: int) -> np.ndarray:
    """Every change of :data:`_GROUPS` group sums by ``most`` or fewer (the sum of the changes' sizes)."""
    moves: list[tuple[int, ...]] = [()]
    for _ in range(_GROUPS):
        moves = [m + (d,) for m in moves for d in range(-most, most + 1) if sum(map(abs, m)) + abs(d) <= most]
    return np.array(moves, dtype=np.int16)


def _most_differ(total: int, threshold: float, slack: float) -> int:
    """The most characters two spellings of ``total`` characters together may differ by (the sum of the
    bins' differences) and keep difflib's ``quick_ratio`` bound at ``threshold - slack``; -1 when none."""
    most = int((1.0 - threshold + slack) * total) + 1
    while most >= 0 and (total - most) / total < threshold - slack:
        most -= 1
    return most


class SpellingIndex:
    """Every spelling of some entities, indexed for :meth:`FuzzyEntityResolver._match`, which otherwise
    compared a new name with each spelling of each entity in turn: 65 ms a name at 5,000 entities, and
    adding 5,000 new names was quadratic.  Variants and acronyms are dictionary lookups.  Near spellings
    keep difflib's ratio and threshold; only spellings that can reach it are compared: difflib's own bounds
    (``real_quick_ratio``: the two lengths; ``quick_ratio``: the characters both hold) computed for all
    spellings of a length at once, the characters counted in :data:`_BINS` bins (a count that merges
    characters can only raise the bound, so no spelling that could match is skipped).

    Entities can be added later (:meth:`add`): the resolver keeps a user's indexes between writes and adds
    what the store says was added since (:class:`UserSpellings`)."""

    def __init__(self, entities: Sequence[Entity], settings: ResolverSettings) -> None:
        self.entities: list[Entity] = []
        self.threshold = settings.fuzzy_threshold
        self.min_length = settings.fuzzy_min_length
        self._variants: dict[str, dict[str, Entity]] = {}
        self._by_acronym: dict[str, list[tuple[Entity, str]]] = {}  # acronym of a spelling → its entities
        self._by_short: dict[str, list[tuple[Entity, str]]] = {}  # a spelling that could be an acronym
        self._spelled: dict[str, set[str]] = {}  # entity id → its spellings indexed
        self._lengths: dict[int, _SameLength] = {}  # the normalised spellings difflib compares, by length
        self._added = 0  # spellings compared by difflib so far: their order, kept by :meth:`near`
        self.add(entities)

    def add(self, entities: Sequence[Entity]) -> None:
        """Index the spellings of ``entities`` not indexed yet (an entity seen before may have new ones)."""
        rows: dict[int, list[tuple[int, Entity, str, str]]] = {}
        for e in entities:
            done = self._spelled.get(e.id)
            if done is None:
                done = self._spelled[e.id] = set()
                self.entities.append(e)
            for s in names_of(e):
                if s in done:
                    continue
                done.add(s)
                if key := variant_key(s):
                    self._variants.setdefault(key, {})[e.id] = e
                if acr := acronym(s):
                    self._by_acronym.setdefault(acr, []).append((e, s))
                if 2 <= len(short := _NON_WORD.sub("", normalize_name(s))) <= 6:
                    self._by_short.setdefault(short, []).append((e, s))
                if len(norm := normalize_name(s)) >= self.min_length:
                    rows.setdefault(len(norm), []).append((self._added, e, s, norm))
                    self._added += 1
        for length, same in rows.items():
            self._lengths.setdefault(length, _SameLength(length)).extend(same)

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
        if not self._lengths:
            return []
        norm = normalize_name(name)
        la = len(norm)
        counts = _bin_counts([norm])[0]
        slack = 1e-9  # the bounds below may only keep more than difflib's
        possible: list[tuple[int, Entity, str, str]] = []
        for lb, same in self._lengths.items():
            total = la + lb
            if 2.0 * min(la, lb) / total < self.threshold - slack:
                continue
            most = _most_differ(total, self.threshold, slack)
            if most < 0:
                continue
            rows, differ = same.within(counts, most)
            possible += [same.spellings[i] for i in rows[(total - differ) / total >= self.threshold - slack]]
        best: dict[str, tuple[float, Entity]] = {}
        for _, e, s, text in sorted(possible, key=lambda p: p[0]):  # in the order added, as one scan was
            r = similarity_at_least(name, s, self.threshold)
            if r >= self.threshold and r > best.get(e.id, (0.0, e))[0] and not another_ending(norm, text):
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


#: a numbers group whose index is kept between writes has this many entities or more (a smaller one is
#: indexed again when asked: cheap, and a user with a number in every name has as many groups as names)
_KEEP_GROUP = 32


class UserSpellings:
    """One user's entities as the resolver last read them, and the indexes of their numbers groups (an
    entity belongs to the group of each of its spellings' :func:`numbers`), kept between writes.

    ``version`` is the store's :meth:`~chronomem.store.base.Store.entity_version` they were read at (``None``:
    the store logs no changes, so they are not kept).  Before each use the resolver adds what the store's
    log says was added since, or reads the user again when the log cannot tell (a spelling removed or
    rewritten, a change rolled back, too many changes): every process sees the others' writes, and the
    matches are those of reading every entity each time."""

    def __init__(self, version: tuple[int, int] | None, settings: ResolverSettings) -> None:
        self.version = version
        self.settings = settings
        self.spellings = 0  # names held, all entities together (what the resolver's cache counts)
        self._entities: dict[str, Entity] = {}
        self._groups: dict[tuple[str, ...], dict[str, None]] = {}  # numbers → the ids of its entities
        self._indexes: dict[tuple[str, ...], SpellingIndex] = {}

    def add(self, entities: Sequence[Entity]) -> bool:
        """Add entities read from the store: new ones, or known ones read again with more names.  False
        (and nothing added) when a known one lost a name: the log said it only gained some, so it is
        not the log of what was held, and the user must be read again."""
        for e in entities:
            old = self._entities.get(e.id)
            if old is not None and not set(names_of(old)) <= set(names_of(e)):
                return False
        for e in entities:
            old = self._entities.get(e.id)
            self.spellings += len(names_of(e)) - (len(names_of(old)) if old else 0)
            self._entities[e.id] = e
            for key in dict.fromkeys(numbers(s) for s in names_of(e)):
                self._groups.setdefault(key, {})[e.id] = None
                if key in self._indexes:
                    self._indexes[key].add([e])
        return True

    def index(self, key: tuple[str, ...]) -> SpellingIndex:
        """The index of the entities with a spelling of the numbers ``key``."""
        if key in self._indexes:
            return self._indexes[key]
        group = [self._entities[i] for i in self._groups.get(key, ())]
        index = SpellingIndex(group, self.settings)
        if len(group) >= _KEEP_GROUP:
            self._indexes[key] = index
        return index


@dataclass
class ResolverSettings:
    fuzzy_threshold: float = 0.92
    fuzzy_min_length: int = 5
    embed_threshold: float = 0.92
    embed_margin: float = 0.03


class HeldSpellings:
    """The users' spellings that resolvers keep between writes (:class:`UserSpellings`), least recently used
    first, shared by a memory and its tenant views (``scope``: the tenant, so that their user ids never meet).

    Bounded twice: :attr:`MAX_SPELLINGS` spellings (about 1 KB each: 22 MB for a user of 20,000 entities; the
    user in use is kept whatever its size) and :attr:`MAX_USERS` users (a user counts one spelling at least,
    so a server whose thousands of users each wrote once holds no more than this).  A forgotten user is
    dropped (:meth:`drop`): their names must not stay in the process."""

    MAX_SPELLINGS = 100_000
    MAX_USERS = 1_024

    def __init__(self) -> None:
        self._held: OrderedDict[tuple[str, str], UserSpellings] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def take(self, scope: str, user_id: str) -> UserSpellings | None:
        """The user's held spellings, taken out: the caller's alone until :meth:`keep`."""
        with self._lock:
            return self._held.pop((scope, user_id), None)

    def keep(self, scope: str, user_id: str, held: UserSpellings) -> None:
        """Hold ``held`` as the most recently used, the least recently used going past the bounds."""
        with self._lock:
            self._held.pop((scope, user_id), None)  # another thread's copy: this one is newer
            self._held[(scope, user_id)] = held
            total = sum(max(h.spellings, 1) for h in self._held.values())
            while (total > self.MAX_SPELLINGS or len(self._held) > self.MAX_USERS) and len(self._held) > 1:
                total -= max(self._held.popitem(last=False)[1].spellings, 1)

    def drop(self, scope: str, user_id: str) -> None:
        """Forget what is held of the user (their entities were forgotten or deleted)."""
        with self._lock:
            self._held.pop((scope, user_id), None)


class FuzzyEntityResolver:
    """Exact, alias, variant, fuzzy and (optional) embedding entity resolution within one user.

    A new name is matched against the user's entities as read from the store; the resolver keeps them
    (:class:`UserSpellings` in ``held``, a :class:`HeldSpellings` a memory shares with its tenant views,
    under ``scope``) and asks the store what changed since rather than reading every entity for each write
    that names someone new: 1 s a write at 40,000 entities before (BENCHMARKS.md).  A store without a change
    log is read whole each time."""

    def __init__(
        self,
        store: Store,
        *,
        embedder: Embedder | None = None,
        settings: ResolverSettings | None = None,
        held: HeldSpellings | None = None,
        scope: str = "",
    ) -> None:
        self.store = store
        self.exact = ExactResolver(store)
        self.embedder = embedder
        self.settings = settings or ResolverSettings()
        self.held = held if held is not None else HeldSpellings()
        self.scope = scope

    def forget_user(self, user_id: str) -> None:
        """Drop what is held of ``user_id`` (:meth:`HeldSpellings.drop`): called when the user forgets."""
        self.held.drop(self.scope, user_id)

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
        if missing:
            # numbers are identity ("Flat 11"/"Flat 1"): each name is matched only against the entities
            # with a spelling of its numbers (their index is built once per group, not per name)
            held = self._take(user_id)
            indexes: dict[tuple[str, ...], SpellingIndex] = {}
            matched: dict[str, str] = {}  # spelling → the id of the entity it joins
            for n in missing:
                key = numbers(n)
                if key not in indexes:
                    indexes[key] = held.index(key)
                match = self._match(n, indexes[key])
                if match is not None:
                    matched[n] = match.id
            self._keep(user_id, held)
            # the entities as the store holds them now, as a fresh read gave them (the held copies may be older)
            joined = {e.id: e for e in self.store.entities(user_id, ids=list(set(matched.values())))} \
                if matched else {}
            for n, entity_id in matched.items():
                if (match := joined.get(entity_id)) is not None:
                    log.debug("entity %r joined %r (user %s) as an alias", n, match.name, user_id)
                    self.store.add_alias(user_id, match.id, n.strip(), normalize_name(n),
                                         learned_from=(sources or {}).get(n))
                    out[n] = match
        still = [(n, t) for n, t in names if n not in out]
        if still and create:  # looked up above and matched nothing: create without a second lookup
            out.update(self.exact.create(user_id, still, sources=sources))
        return out

    def _take(self, user_id: str) -> UserSpellings:
        """The user's entities as the store holds them now: those held, with what the store's log says was
        added since, or all of them read again; the caller's alone until :meth:`_keep` (another thread that
        resolves for the same user meanwhile reads its own).  The version is read before the entities, so
        what is read is never older than the version it is held under."""
        version = self.store.entity_version(user_id)
        held = self.held.take(self.scope, user_id)
        if held is None or held.version is None or version is None or held.settings != self.settings:
            held = None
        elif held.version != version:
            changed = self.store.entities_changed_since(user_id, held.version)
            if changed is not None and held.add(self.store.entities(user_id, ids=changed) if changed else []):
                held.version = version
            else:
                held = None
        if held is None:
            held = UserSpellings(version, replace(self.settings))
            held.add(self.store.entities(user_id))  # nothing held yet: nothing to lose
        return held

    def _keep(self, user_id: str, held: UserSpellings) -> None:
        """Hold ``held`` for the next write of the user (:meth:`HeldSpellings.keep`); a store without a change
        log is read whole each time instead."""
        if held.version is not None:
            self.held.keep(self.scope, user_id, held)

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
