"""forget() leaves no bytes of what it forgot in the SQLite file, its WAL or its shared memory.

Each case stores a unique marker (as a fact, a conversation turn, a whole user), forgets it
and greps the raw bytes of ``m.db``, ``m.db-wal`` and ``m.db-shm`` for it: once while the
memory is still open (the WAL must have been checkpointed and truncated) and once after close.
Full-text search lower-cases and stems tokens and FTS5 prefix-compresses terms within a page,
so the lower-case marker and its tail are searched as well.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from chronomem import Memory, Message
from schema_downgrade import downgrade

U = "u1"
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def leftovers(folder: Path, marker: str) -> dict[str, list[bytes]]:
    """Which files of ``m.db*`` still hold the marker (in any of its stored spellings)."""
    needles = {marker.encode(), marker.lower().encode(), marker.lower()[3:].encode()}
    found = {}
    for p in sorted(folder.glob("m.db*")):
        raw = p.read_bytes().lower()
        hits = [n for n in needles if n.lower() in raw]
        if hits:
            found[p.name] = hits
    return found


def fill(mem: Memory, user: str = U) -> None:
    """Other users' and facts' rows around the marker, so it shares pages and index segments."""
    for i in range(40):
        mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"thing {i}",
                        "text": f"Maya said she likes thing number {i}"}], user_id=user)
    turns = [Message(id=f"keep{i}", user_id=user, session_id="keep", speaker="Maya",
                     text=f"an ordinary turn number {i}", timestamp=T0 + timedelta(minutes=i),
                     recorded_at=T0, seq=i) for i in range(20)]
    mem.store.add_messages(user, turns)


def forget_fact(mem: Memory, marker: str) -> None:
    rep = mem.add_facts([{"subject": "Maya", "relation": "likes", "object": marker,
                          "text": f"Maya likes {marker}"}], user_id=U)
    fid = rep.added[0].id
    mem.store.put_vectors(U, "fact", [(fid, [0.25] * 8)], "test")
    assert mem.store.search_facts_text(U, marker)
    mem.forget(user_id=U, fact_id=fid)
    assert mem.store.search_facts_text(U, marker) == []


def forget_session(mem: Memory, marker: str) -> None:
    mem.store.ensure_session(U, "s-secret", started_at=T0)
    mem.store.add_messages(U, [Message(id="secret1", user_id=U, session_id="s-secret", speaker="Maya",
                                       text=f"my password hint is {marker}", timestamp=T0,
                                       recorded_at=T0, seq=0)])
    mem.add_facts([{"subject": "Maya", "relation": "has_pet", "object": marker,
                    "session_id": "s-secret", "source_ids": ["secret1"]}], user_id=U)
    assert mem.store.search_messages_text(U, marker)
    mem.forget(user_id=U, session_id="s-secret")
    assert mem.store.search_messages_text(U, marker) == []


def forget_corrected_fact(mem: Memory, marker: str) -> None:
    """The marker was a misspelling that a correction replaced; forgetting the correction forgets it."""
    rep = mem.add_facts([{"subject": "Maya", "relation": "likes", "object": marker,
                          "text": f"Maya likes {marker}"}], user_id=U)
    fixed = mem.correct(rep.added[0].id, user_id=U, object="tea", text="Maya likes tea")
    again = mem.correct(fixed.id, user_id=U, confidence=0.9)
    assert [f.object for f in mem.history(user_id=U, subject="Maya") if f.id in
            (rep.added[0].id, fixed.id, again.id)] == [marker, "tea", "tea"]
    res = mem.forget(user_id=U, fact_id=again.id)
    assert res.facts_deleted == 3 and res.reopened == 0


def forget_user(mem: Memory, marker: str) -> None:
    fill(mem, user="victim")
    mem.add_facts([{"subject": marker, "relation": "lives_in", "object": "Porto"}], user_id="victim")
    mem.store.add_messages("victim", [Message(id="v1", user_id="victim", session_id="vs", speaker=marker,
                                              text=f"I am {marker}", timestamp=T0, recorded_at=T0, seq=0)])
    mem.forget(user_id="victim", everything=True)


@pytest.mark.parametrize("forget, marker", [(forget_fact, "Qorvexfact7731"),
                                            (forget_corrected_fact, "Plorbcorrect2269"),
                                            (forget_session, "Wyrmsession4412"),
                                            (forget_user, "Jaxuser9050")])
def test_forget_leaves_no_bytes_in_db_wal_or_shm(tmp_path: Path, forget, marker: str) -> None:
    with Memory(tmp_path / "m.db") as mem:
        fill(mem)
        forget(mem, marker)
        assert leftovers(tmp_path, marker) == {}, "still in the open files"
    assert leftovers(tmp_path, marker) == {}, "still in the closed files"
    with Memory(tmp_path / "m.db") as mem:  # and the rest is intact
        assert len(mem.facts(user_id=U, relation="likes")) == 40


def test_opening_an_old_file_scrubs_what_earlier_forgets_left_in_the_index(tmp_path: Path) -> None:
    """A file written before secure-delete (schema 3) keeps deleted tokens; migrating removes them."""
    marker = "Zumbrolegacy5521"
    with Memory(tmp_path / "m.db") as mem:
        db = mem.store._db  # type: ignore[attr-defined]
        db.execute("INSERT INTO facts_fts (facts_fts, rank) VALUES ('secure-delete', 0)")
        fill(mem)
        rep = mem.add_facts([{"subject": "Maya", "relation": "likes", "object": marker}], user_id=U)
        mem.forget(user_id=U, fact_id=rep.added[0].id)
        downgrade(db, 3)  # the file now reads as schema 3: opening it runs 0004 (and the later ones) again
    assert leftovers(tmp_path, marker), "the old behaviour left the tokens (the scenario is real)"
    with Memory(tmp_path / "m.db") as mem:
        assert mem.store.search_facts_text(U, "thing 7")
    assert leftovers(tmp_path, marker) == {}


def test_a_reader_on_another_connection_delays_the_scrub_but_does_not_defeat_it(tmp_path: Path) -> None:
    import sqlean

    marker = "Vexreader3318"
    with Memory(tmp_path / "m.db") as mem:
        fill(mem)
        rep = mem.add_facts([{"subject": "Maya", "relation": "likes", "object": marker}], user_id=U)
        reader = sqlean.connect(str(tmp_path / "m.db"), isolation_level=None)
        reader.execute("BEGIN")
        assert reader.execute("SELECT COUNT(*) FROM facts").fetchone()[0] == 41  # holds its snapshot
        mem.forget(user_id=U, fact_id=rep.added[0].id)  # returns although the WAL cannot be truncated yet
        assert mem.store.search_facts_text(U, marker) == []
        reader.execute("COMMIT")
        reader.close()
    assert leftovers(tmp_path, marker) == {}  # the last connection's close checkpointed the WAL
