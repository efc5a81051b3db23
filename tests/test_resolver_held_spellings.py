"""The resolver keeps a user's spellings between writes and matches new names as reading them all did.

``FuzzyEntityResolver`` used to read every entity and alias of the user for each write that named someone
new; it now holds them (``UserSpellings``) and reads only what the store's change log (``entity_changes``,
kept by triggers) says was added since, or everything again when the log cannot tell: a spelling removed
or rewritten, a change rolled back, a log pruned.  These tests compare its matches with the reference:
the index built from a fresh read of every entity (the resolver before), and the pairwise scan
(``test_entity_index.pairwise``), across writes of this process, of another one on the same store,
merges, renames, deleted names and rolled-back transactions."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chronomem.extract.entities as resolver_module
from chronomem.entities import normalize_name
from chronomem.extract.entities import (FuzzyEntityResolver, ResolverSettings, SpellingIndex, another_ending,
                                        names_of, numbers, similarity)
from chronomem.model import Entity
from chronomem.store import open_store
from chronomem.store.base import Store
from test_entity_index import entity_sets, pairwise, spellings


def fresh_match(store: Store, user_id: str, name: str, cfg: ResolverSettings) -> str | None:
    """The match as the resolver made it before it held spellings: every entity read, grouped by numbers."""
    group = [e for e in store.entities(user_id) if numbers(name) in {numbers(s) for s in names_of(e)}]
    match = FuzzyEntityResolver(store, settings=cfg)._match(name, SpellingIndex(group, cfg))
    return match.id if match else None


def held_match(resolver: FuzzyEntityResolver, user_id: str, name: str) -> str | None:
    """The match as the resolver makes it now, from the spellings it holds (brought up to date first)."""
    held = resolver._take(user_id)
    try:
        match = resolver._match(name, held.index(numbers(name)))
    finally:
        resolver._keep(user_id, held)
    return match.id if match else None


def reference_near(name: str, entities: Sequence[Entity], cfg: ResolverSettings) -> dict[str, float]:
    """Entity id → its best difflib ratio to ``name`` at or above the threshold, every spelling compared."""
    norm, out = normalize_name(name), {}
    for e in entities:
        ratios = [similarity(name, s) for s in names_of(e) if len(normalize_name(s)) >= cfg.fuzzy_min_length
                  and not another_ending(norm, normalize_name(s))]
        if ratios and max(ratios) >= cfg.fuzzy_threshold:
            out[e.id] = max(ratios)
    return out


@given(entities=entity_sets(), first=st.integers(0, 12), name=spellings(),
       threshold=st.sampled_from([0.92, 0.8, 0.6]), cells=st.booleans())
def test_an_index_grown_entity_by_entity_matches_as_one_read_whole(entities: list[Entity], first: int, name: str,
                                                                    threshold: float, cells: bool) -> None:
    """Entities added later, and known ones again with more names, as the log brings them: the same near
    spellings (the same ratios) and the same match as the pairwise scan.  ``cells``: the near spellings are
    looked up by character-count cells at any list length (else only in lists of 256 or more)."""
    cfg = ResolverSettings(fuzzy_threshold=threshold)
    with patch.object(resolver_module, "_CELL_ROWS", 0 if cells else resolver_module._CELL_ROWS):
        index = SpellingIndex([Entity(id=e.id, user_id="u", name=e.name) for e in entities[:first]], cfg)
        for e in entities:  # the first ones read again with their aliases, the others new
            index.add([e])
        got = {e.id: r for r, e in index.near(name)} if len(normalize_name(name)) >= cfg.fuzzy_min_length else {}
        want = reference_near(name, entities, cfg) if len(normalize_name(name)) >= cfg.fuzzy_min_length else {}
        assert got == want
        match = FuzzyEntityResolver(store=None, settings=cfg)._match(name, index)  # type: ignore[arg-type]
    expected = pairwise(name, entities, cfg)
    assert (match.id if match else None) == (expected.id if expected else None)


# -- through a store: this process, another one, and everything that changes a spelling ---------------------

_FILE: dict[str, Path] = {}


def _shared_file() -> Path:
    """One SQLite file for every example (each takes a user of its own): opening a store migrates it."""
    if "path" not in _FILE:
        _FILE["path"] = Path(tempfile.mkdtemp()) / "held.db"
    return _FILE["path"]


WHO = st.sampled_from(["held", "other"])
OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), WHO, st.lists(spellings(), min_size=1, max_size=3)),
    st.tuples(st.just("alias"), WHO, st.integers(0, 30), spellings()),
    st.tuples(st.just("merge"), st.integers(0, 30), st.integers(0, 30)),
    st.tuples(st.just("unname"), st.integers(0, 30)),
    st.tuples(st.just("rename"), st.integers(0, 30), spellings()),
    st.tuples(st.just("rolled_back"), st.lists(spellings(), min_size=1, max_size=3)),
), min_size=1, max_size=10)


class _Abort(Exception):
    pass


def _apply(op: tuple[Any, ...], user: str, held: FuzzyEntityResolver, mine: Store, other: Store) -> list[str]:
    """Apply one write; the names it used (probed afterwards)."""
    kind = op[0]
    ents = sorted(other.entities(user), key=lambda e: e.id)
    if kind == "add":
        resolver = held if op[1] == "held" else FuzzyEntityResolver(other)
        resolver.resolve_many(user, [(n, None) for n in op[2] if normalize_name(n)])
        return list(op[2])
    if kind == "rolled_back":  # resolved, joined and created, then rolled back: none of it may be held
        try:
            with mine.transaction(user):
                held.resolve_many(user, [(n, None) for n in op[1] if normalize_name(n)])
                held_match(held, user, op[1][0])  # held while the transaction still stood
                raise _Abort
        except _Abort:
            pass
        return list(op[1])
    if not ents:
        return []
    if kind == "alias" and normalize_name(op[3]):
        store = mine if op[1] == "held" else other
        store.add_alias(user, ents[op[2] % len(ents)].id, op[3].strip(), normalize_name(op[3]))
        return [op[3]]
    if kind == "merge" and op[1] % len(ents) != op[2] % len(ents):
        other.merge_entities(user, ents[op[1] % len(ents)].id, ents[op[2] % len(ents)].id)
    if kind == "unname":  # an alias forgotten (not the entity's own name)
        e = ents[op[1] % len(ents)]
        for alias in e.aliases[:1]:
            other._exec(user, "DELETE FROM entity_names WHERE user_id = ? AND alias = ?",  # type: ignore[attr-defined]
                        (user, alias))
    if kind == "rename" and normalize_name(op[2]):  # as forgetting renames an entity whose name went
        other._exec(user, "UPDATE entities SET name = ? WHERE user_id = ? AND id = ?",  # type: ignore[attr-defined]
                    (op[2].strip(), user, ents[op[1] % len(ents)].id))
        return [op[2]]
    return []


@given(ops=OPS, probes=st.lists(spellings(), min_size=1, max_size=4), threshold=st.sampled_from([0.92, 0.8]))
def test_held_spellings_match_as_reading_every_entity_did(ops: list[tuple[Any, ...]], probes: list[str],
                                                          threshold: float) -> None:
    """After every write, of this process or another on the same file (another store object: another
    connection), the held spellings match each name as a fresh read of every entity does."""
    cfg = ResolverSettings(fuzzy_threshold=threshold)
    user = uuid.uuid4().hex
    mine, other = open_store(_shared_file()), open_store(_shared_file())
    try:
        held = FuzzyEntityResolver(mine, settings=cfg)
        for op in ops:
            used = _apply(op, user, held, mine, other)
            for name in [*used, *probes]:
                if normalize_name(name):
                    assert held_match(held, user, name) == fresh_match(other, user, name, cfg), (op, name)
    finally:
        mine.close()
        other.close()


@pytest.fixture
def two(store_url: str) -> Iterator[tuple[Store, Store]]:
    """Two stores on one database: this process's and another's."""
    mine, other = open_store(store_url), open_store(store_url)
    yield mine, other
    mine.close()
    other.close()


def test_a_name_another_process_added_is_matched_and_a_rolled_back_one_never(two: tuple[Store, Store]) -> None:
    mine, other = two
    held = FuzzyEntityResolver(mine)
    held.resolve_many("u", [("Golden Gate Bridge", None), ("Anna Karenina", None)])
    FuzzyEntityResolver(other).resolve_many("u", [("Zürich Hauptbahnhof", None)])
    assert held.resolve("u", "Zurich Hauptbahnhof").name == "Zürich Hauptbahnhof"  # type: ignore[union-attr]
    with pytest.raises(_Abort), mine.transaction("u"):  # created, held, then rolled back
        phantom = held.resolve("u", "Piccadilly Circus")
        assert held_match(held, "u", "Picadilly Circus") == phantom.id  # type: ignore[union-attr]
        raise _Abort
    FuzzyEntityResolver(other).resolve_many("u", [("Trafalgar Square", None)])  # the same number of changes
    assert held_match(held, "u", "Picadilly Circus") is None
    assert held.resolve("u", "Picadilly Circus").name == "Picadilly Circus"  # type: ignore[union-attr]
    other.merge_entities("u", held.lookup("u", ["Anna Karenina"])["Anna Karenina"],
                         held.lookup("u", ["Golden Gate Bridge"])["Golden Gate Bridge"])
    assert held.resolve("u", "Anna Karennina").name == "Golden Gate Bridge"  # type: ignore[union-attr]
    for name in ("Golden Gate Brigde", "Trafalgar Squares", "Zurich Hauptbahnhof", "Piccadilly Circuss"):
        assert held_match(held, "u", name) == fresh_match(other, "u", name, held.settings)


def test_the_log_names_the_entities_that_gained_a_spelling_and_nothing_else(two: tuple[Store, Store]) -> None:
    mine, other = two
    assert mine.entity_version("u") == (0, 0)
    FuzzyEntityResolver(mine).resolve_many("u", [("Maya", None), ("Porto", None)])
    start = mine.entity_version("u")
    assert start is not None and start[0] > 0 and mine.entities_changed_since("u", (0, 0)) is None
    maya = mine.entity_ids_by_norm("u", ["maya"])["maya"]
    other.add_alias("u", maya, "Mayinha", "mayinha")
    FuzzyEntityResolver(other).resolve_many("u", [("Lisbon", None)])
    lisbon = other.entity_ids_by_norm("u", ["lisbon"])["lisbon"]
    assert sorted(mine.entities_changed_since("u", start) or []) == sorted({maya, lisbon})
    assert mine.entities_changed_since("u", (start[0], start[1] + 1)) is None  # another history
    assert mine.entities_changed_since("u", mine.entity_version("u")) == []  # type: ignore[arg-type]
    other.add_alias_sources("u", {"maya": ["turn-1"]})  # which turns said it: no spelling changed
    assert sorted(mine.entities_changed_since("u", start) or []) == sorted({maya, lisbon})
    porto = mine.entity_ids_by_norm("u", ["porto"])["porto"]
    other.merge_entities("u", porto, lisbon)  # a spelling moved: whoever read before reads all again
    assert mine.entities_changed_since("u", start) is None
    mine.delete_user("u")
    assert mine.entity_version("u") == (0, 0)


def test_a_write_naming_someone_new_reads_only_what_changed(tmp_path: Path) -> None:
    """Held spellings: the second and later writes read the entities the log names, not every entity."""
    store = open_store(tmp_path / "m.db")
    whole: list[int] = []
    real = store.entities

    def entities(user_id: str, ids: Sequence[str] | None = None, **kw: Any) -> list[Entity]:
        if ids is None:
            whole.append(1)
        return real(user_id, ids, **kw)

    store.entities = entities  # type: ignore[method-assign]
    resolver = FuzzyEntityResolver(store)
    resolver.resolve_many("u", [(f"Person {i}", None) for i in range(200)])
    # read whole twice: first, then once more on the first change logged (what was read before the log's
    # first change is not in the log)
    resolver.resolve_many("u", [("Warm Up", None)])
    assert len(whole) == 2
    other = open_store(tmp_path / "m.db")
    FuzzyEntityResolver(other).resolve_many("u", [("Jennifer Smith", None)])
    for name in ("Brand New", "Jenifer Smith", "Person 7", "Persson 7"):
        resolver.resolve_many("u", [(name, None)])
    assert len(whole) == 2
    assert resolver.resolve("u", "Jenifer Smith").name == "Jennifer Smith"  # type: ignore[union-attr]
    store.close()
    other.close()


def test_a_forgotten_user_leaves_no_spelling_held(tmp_path: Path) -> None:
    """The held spellings are names: forgetting the user drops them from the process too."""
    from chronomem import Memory

    with Memory(tmp_path / "m.db", llm=False, embedder=False) as mem:
        view = mem.for_tenant("acme")
        for m in (mem, view):
            m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Zorblatville"}], user_id="u1")
            m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Quixborough"}], user_id="u1")
        assert len(mem.resolver.held) == 2 and view.resolver.held is mem.resolver.held  # one budget, two scopes
        view.forget(user_id="u1", everything=True)
        assert len(mem.resolver.held) == 1  # the default tenant's u1 stays
        held = mem.resolver.held.take(mem.tenant, "u1")
        assert held is not None and "Zorblatville" in {e.name for e in held._entities.values()}
        mem.forget(user_id="u1", everything=True)
        assert len(mem.resolver.held) == 0


def test_many_users_who_wrote_once_are_not_all_held(tmp_path: Path) -> None:
    """Each user counts one spelling at least, and the users held are bounded: a server's thousands of users
    who wrote once do not stay in memory for good."""
    held = resolver_module.HeldSpellings()
    with patch.object(resolver_module.HeldSpellings, "MAX_USERS", 50):
        for i in range(200):
            held.keep("", f"u{i}", resolver_module.UserSpellings((1, 1), ResolverSettings()))
        assert len(held) == 50 and held.take("", "u199") is not None and held.take("", "u0") is None
    with patch.object(resolver_module.HeldSpellings, "MAX_SPELLINGS", 30):
        for i in range(200):
            held.keep("", f"v{i}", resolver_module.UserSpellings((1, 1), ResolverSettings()))
        assert len(held) == 30
    first, again = (resolver_module.UserSpellings((1, 1), ResolverSettings()) for _ in range(2))
    held.keep("", "w", first)
    held.keep("", "x", resolver_module.UserSpellings((1, 1), ResolverSettings()))
    held.keep("", "w", again)  # kept again: the most recently used, the other copy replaced
    assert list(held._held)[-1] == ("", "w") and held.take("", "w") is again
