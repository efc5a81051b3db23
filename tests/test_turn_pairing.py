"""The full-text index pairs each turn with the turn before it in its session (``messages.context``),
however the turns arrive: in batches out of order (``add_messages``) or in key order from an import
(``load_user``), and without rewriting every later turn of the session each time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chronomem import Message
from chronomem.store.sql import MSG_COLS, pair_turns
from chronomem.store.sqlite import SQLiteStore

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def test_a_new_turn_follows_the_last_turn_of_a_smaller_seq() -> None:
    before, after = pair_turns(new=[(2, "n2"), (4, "n4"), (5, "n5")], stored=[(3, "s3"), (6, "s6")])
    assert before == {"n2": None, "n4": "s3", "n5": "n4"}  # None: the stored turn before them all, if any
    assert after == {"s3": "n2", "s6": "n5"}  # stored turns that now follow a new one


def test_turns_of_one_seq_follow_the_same_turn() -> None:
    before, after = pair_turns(new=[(1, "a"), (2, "b"), (2, "c")], stored=[(2, "s"), (3, "t")])
    assert before["a"] is None and before["b"] == before["c"] == "a"
    assert after["s"] == "a" and after["t"] in {"b", "c", "s"}


def test_nothing_stored_after_the_new_turns_changes_no_stored_turn() -> None:
    assert pair_turns(new=[(7, "x"), (8, "y")], stored=[]) == ({"x": None, "y": "x"}, {})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStore]:
    s = SQLiteStore(Path(tmp_path_factory.mktemp("pairing")) / "m.db")
    yield s
    s.close()


def turn(user: str, seq: int) -> Message:
    t = T0 + timedelta(minutes=seq)
    return Message(id=f"{user}-{seq}", user_id=user, session_id="s", speaker=f"P{seq % 2}", text=f"turn {seq}",
                   timestamp=t, recorded_at=t, seq=seq)


def contexts(store: SQLiteStore, user: str) -> dict[str, str]:
    return dict(store._all("SELECT id, context FROM messages WHERE user_id = ?", (user,)))


_users = iter(range(10**9))


@given(st.lists(st.integers(0, 39), min_size=1, max_size=40, unique=True).flatmap(
    lambda seqs: st.tuples(st.permutations(seqs), st.integers(1, 8), st.booleans())))
def test_every_turn_follows_its_previous_turn_whatever_the_arrival(store: SQLiteStore,
                                                                    case: tuple[list[int], int, bool]) -> None:
    order, batch, as_import = case
    user = f"u{next(_users)}"
    store.ensure_session(user, "s")
    for k in range(0, len(order), batch):
        turns = [turn(user, seq) for seq in order[k:k + batch]]
        if as_import:  # rows as an export holds them, each batch in key order
            rows = [{c: getattr(m, c, None) for c in MSG_COLS if c != "user_id"} for m in turns]
            for r, m in zip(rows, turns):
                r.update(ts=0, recorded_at=0, extracted=0)
            store.load_user(user, {"messages": sorted(rows, key=lambda r: r["id"])})
        else:
            store.add_messages(user, turns)
    seqs = sorted(order)
    want = {f"{user}-{s}": "" if i == 0 else f"P{seqs[i - 1] % 2}: turn {seqs[i - 1]}" for i, s in enumerate(seqs)}
    assert contexts(store, user) == want
