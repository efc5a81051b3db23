"""The resolver's spelling index matches a new name as comparing it with every spelling did.

``SpellingIndex`` looks variants and acronyms up and compares a name only with the spellings difflib's
bounds let reach the fuzzy threshold; :func:`pairwise` is the resolver's match before the index, kept here
as the reference.  Names are drawn from a few words, articles, numbers and accents, with typos, so that
variants, acronyms, near spellings and ties all occur."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chronomem.entities import normalize_name
from chronomem.extract.entities import (FuzzyEntityResolver, ResolverSettings, SpellingIndex, another_ending,
                                        is_acronym_of, similarity_at_least, variant_key)
from chronomem.model import Entity
from chronomem.store import open_store

WORDS = ["new", "york", "city", "golden", "gate", "bridge", "the", "of", "anna", "annette", "maria", "mariah",
         "flat", "1", "11", "daniel", "daniela", "café", "cafe", "zürich", "zurich", "san", "francisco", "nyc", "ggb", "st", "saint"]


@st.composite
def spellings(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
    text = " ".join(w.title() if draw(st.booleans()) else w for w in words)
    if text and draw(st.integers(0, 3)) == 0:  # a typo: one character dropped, doubled or changed
        i = draw(st.integers(0, len(text) - 1))
        text = draw(st.sampled_from([text[:i] + text[i + 1:], text[:i] + text[i] + text[i:],
                                     text[:i] + "e" + text[i + 1:]]))
    return text


@st.composite
def entity_sets(draw: st.DrawFn) -> list[Entity]:
    n = draw(st.integers(0, 12))
    return [Entity(id=f"e{i}", user_id="u", name=draw(spellings()),
                   aliases=draw(st.lists(spellings(), max_size=2))) for i in range(n)]


def pairwise(name: str, candidates: Sequence[Entity], cfg: ResolverSettings) -> Entity | None:
    """The match as the resolver makes it without the index: every spelling of every candidate in turn."""
    if not normalize_name(name):
        return None
    key = variant_key(name)
    hits = {e.id: e for e in candidates for s in (e.name, *e.aliases) if key and variant_key(s) == key}
    if len(hits) != 1 and hits:
        return None
    if hits:
        return next(iter(hits.values()))
    hits = {e.id: e for e in candidates for s in (e.name, *e.aliases)
            if is_acronym_of(name, s) or is_acronym_of(s, name)}
    if len(hits) != 1 and hits:
        return None
    if hits:
        return next(iter(hits.values()))
    if len(normalize_name(name)) >= cfg.fuzzy_min_length:
        scored = []
        for e in candidates:
            best = max((similarity_at_least(name, s, cfg.fuzzy_threshold) for s in (e.name, *e.aliases)
                        if len(normalize_name(s)) >= cfg.fuzzy_min_length
                        and not another_ending(normalize_name(name), normalize_name(s))), default=0.0)
            if best >= cfg.fuzzy_threshold:
                scored.append((best, e))
        scored.sort(key=lambda x: -x[0])
        if len(scored) == 1 or (len(scored) > 1 and scored[0][0] - scored[1][0] > 0.02):
            return scored[0][1]
    return None


@given(entities=entity_sets(), name=spellings(), threshold=st.sampled_from([0.92, 0.8, 0.6]))
def test_the_index_matches_as_comparing_every_spelling_did(entities: list[Entity], name: str,
                                                           threshold: float) -> None:
    cfg = ResolverSettings(fuzzy_threshold=threshold)
    resolver = FuzzyEntityResolver(store=None, settings=cfg)  # type: ignore[arg-type]  # _match reads no store
    got = resolver._match(name, SpellingIndex(entities, cfg))
    want = pairwise(name, entities, cfg)
    assert (got.id if got else None) == (want.id if want else None)


def test_bounds_keep_every_spelling_difflib_could_match() -> None:
    cfg = ResolverSettings()
    index = SpellingIndex([Entity(id="gg", user_id="u", name="Golden Gate Bridge"),
                           Entity(id="zu", user_id="u", name="Zürich Hauptbahnhof")], cfg)
    assert [e.id for _, e in index.near("Golden Gate Brigde")] == ["gg"]  # a swap: every character is held
    assert [e.id for _, e in index.near("Zurich Hauptbahnhof")] == ["zu"]  # ü and u fall in other bins
    assert index.near("Silver Gate Bridge") == []


def _letters(i: int) -> str:
    out = ""
    for _ in range(4):
        i, r = divmod(i, 26)
        out += chr(97 + r)
    return out.title()


def test_many_new_names_into_a_large_user_compare_few_spellings(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 new names resolved against 3,000 entities (no digits: one bucket): each name was compared with
    every spelling, 6,000,000 comparisons; the index lets difflib compare a name only with spellings that
    can reach the threshold."""
    import chronomem.extract.entities as entities

    compared: list[int] = []
    real = entities.similarity_at_least
    monkeypatch.setattr(entities, "similarity_at_least", lambda a, b, t: compared.append(1) or real(a, b, t))
    store = open_store(str(tmp_path / "m.db"))
    resolver = FuzzyEntityResolver(store)
    resolver.resolve_many("u", [(f"{_letters(i)} Smith", None) for i in range(3000)])
    out = resolver.resolve_many("u", [(f"{_letters(i)} Jones", None) for i in range(2000)])
    assert len({e.id for e in out.values()}) == 2000  # none joined a Smith
    assert len(compared) < 2000 * 3000 // 100
    store.close()
