"""Random sequences of add_facts / forget / merge / export / import on SQLite and PostgreSQL (issue #20).

After every step the memory must keep its invariants:

* within a single-valued slot, the intervals of the stable, not superseded facts never
  overlap, and no interval is empty (``valid_to == valid_from``);
* export → import (into another user, and again into the same one) reads back equal,
  and importing an export twice adds nothing;
* on SQLite, a forgotten fact's or session's words are in no byte of the file, its WAL or
  its shared memory (each fact carries a unique marker in its text).

One store per test, one fresh user per example, so the examples stay cheap.  Example counts
are modest (the suite's time budget); ``HYPOTHESIS_PROFILE=thorough`` runs many more.
Figures: BENCHMARKS.md, "Reliability".
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import Memory, NotFoundError
from chronomem.temporal import overlaps

BASE = datetime(2015, 1, 1, tzinfo=timezone.utc)
CITIES = ["Porto", "Lisbon", "Braga"]
SESSIONS = ["s1", "s2", None]

fact = st.fixed_dictionaries({
    "relation": st.sampled_from(["lives_in", "lives_in", "likes"]),
    "object": st.sampled_from(CITIES),
    "start": st.one_of(st.none(), st.integers(0, 12)),
    "length": st.one_of(st.none(), st.integers(1, 6)),
    "confidence": st.sampled_from([1.0, 0.8, 0.3]),
    "session": st.sampled_from(SESSIONS),
    "subject": st.sampled_from(["Maya", "Maya", "Mom"]),  # "Mom" may be merged into Maya
})
op = st.one_of(
    st.tuples(st.just("add"), st.lists(fact, min_size=1, max_size=3)),
    st.tuples(st.just("forget_fact"), st.integers(0, 50)),
    st.tuples(st.just("forget_session"), st.sampled_from(["s1", "s2"])),
    st.tuples(st.just("roundtrip"), st.none()),
    st.tuples(st.just("merge"), st.none()),
)
_users = itertools.count()
EXAMPLES = 1000 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 30


def to_dict(f: dict[str, Any], marker: str) -> dict[str, Any]:
    d: dict[str, Any] = {"subject": f["subject"], "relation": f["relation"], "object": f["object"],
                         "confidence": f["confidence"], "text": f"noted {marker}"}
    if f["start"] is not None:
        d["valid_from"] = (BASE + timedelta(days=90 * f["start"])).isoformat()
    if f["length"] is not None:
        start = 0 if f["start"] is None else f["start"]
        d["valid_to"] = (BASE + timedelta(days=90 * (start + f["length"]))).isoformat()
    if f["session"] is not None:
        d["session_id"] = f["session"]
    return d


def check_intervals(mem: Memory, user: str) -> None:
    for who in ("Maya", "Mom"):  # one slot each, or one slot once Mom is merged into Maya
        hist = mem.history(user_id=user, subject=who, relation="lives_in")
        live = [f for f in hist if f.confidence >= mem.config.theta_stable and not f.superseded]
        for f in hist:
            assert f.valid_from is None or f.valid_to is None or f.valid_from < f.valid_to, f"empty interval {f}"
        for a, b in itertools.combinations(live, 2):
            if a.valid_from is None and b.valid_from is None:
                continue  # two endings with unknown starts: a documented limit (chronomem.temporal)
            assert not overlaps(a.valid_from, a.valid_to, b.valid_from, b.valid_to), (a, b)


def check_roundtrip(mem: Memory, user: str) -> None:
    data = mem.export(user_id=user)
    copy = f"{user}-copy"
    mem.import_(data, user_id=copy)
    assert mem.export(user_id=copy)["tables"] == {
        t: [{**r, "user_id": copy} for r in rows] for t, rows in data["tables"].items()}
    again = mem.import_(data)
    assert again["already_present"] == sum(len(r) for r in data["tables"].values())
    assert mem.export(user_id=user)["tables"] == data["tables"]
    mem.forget(user_id=copy, everything=True)


def leftovers(folder: Path | None, markers: set[str]) -> set[str]:
    if folder is None or not markers:
        return set()
    raw = b"".join(p.read_bytes() for p in folder.glob("m.db*")).lower()
    return {m for m in markers if m.encode() in raw or m[-7:].encode() in raw}


def run_sequence(mem: Memory, folder: Path | None, ops: list[tuple[str, Any]]) -> None:
    user = f"fuzz{next(_users)}"
    forgotten: set[str] = set()
    for name, arg in ops:
        if name == "add":
            markers = [f"zq{uuid.uuid4().hex[:10]}" for _ in arg]
            mem.add_facts([to_dict(f, m) for f, m in zip(arg, markers)], user_id=user)
        elif name == "forget_fact":
            hist = mem.history(user_id=user)
            if hist:
                doomed = hist[arg % len(hist)]
                mem.forget(user_id=user, fact_id=doomed.id)
                forgotten.add(doomed.text.split()[-1])
        elif name == "merge":
            names = {e.name for e in mem.entities(user_id=user)}
            if {"Mom", "Maya"} <= names:
                before = len(mem.history(user_id=user))
                res = mem.merge_entities("Mom", "Maya", user_id=user)
                assert len(mem.history(user_id=user)) == before - res.facts_folded
                assert "Mom" in res.entity.aliases
        elif name == "forget_session":
            doomed_texts = {f.text.split()[-1] for f in mem.history(user_id=user) if f.session_id == arg}
            try:
                mem.forget(user_id=user, session_id=arg)
            except NotFoundError:
                assert not doomed_texts
            forgotten |= doomed_texts
        else:
            check_roundtrip(mem, user)
        check_intervals(mem, user)
        assert leftovers(folder, forgotten) == set(), "forgotten words still in the file"
    check_roundtrip(mem, user)


@pytest.fixture(params=["sqlite", "postgres"])
def fuzz_store(request: pytest.FixtureRequest, url_factory: Callable[[str], str],
               tmp_path: Path) -> Iterator[tuple[Memory, Path | None]]:
    if request.param == "sqlite":
        with Memory(tmp_path / "m.db") as m:
            yield m, tmp_path
    else:
        with Memory(url_factory("postgres")) as m:
            yield m, None


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op, min_size=1, max_size=8))
def test_random_operations_keep_the_invariants(fuzz_store: tuple[Memory, Path | None],
                                                ops: list[tuple[str, Any]]) -> None:
    mem, folder = fuzz_store
    run_sequence(mem, folder, ops)
