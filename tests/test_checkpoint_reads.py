"""Reading the summary valid at a time reads that one checkpoint, on every store, by the chain's rule.

``summary()``, ``context()`` and a session's end read the user's summary; they used to read the whole
chain of checkpoints (one per ended session, text included) to keep its last one: 70 ms for a user of
10,000 sessions.  ``Store.checkpoint_at`` reads one row in SQL; the rule it must follow is
:func:`chronomem.summarize.rsum.checkpoint_at` over the whole chain (nothing past a gap; at a time, the
last of the run of checkpoints whose sessions had all happened by then), checked here on random chains.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from chronomem import Memory
from chronomem.model import Checkpoint, Message
from chronomem.providers.base import CallUsage, ChatResult
from chronomem.summarize.rsum import RsumMemory, checkpoint_at

T0 = datetime(2020, 1, 1, tzinfo=timezone.utc)
U = "maya"


class ChainOnly:
    """A store seen through ``checkpoints()`` alone: ``checkpoint_at`` then applies the rule to the chain."""

    def __init__(self, store: Any) -> None:
        self.checkpoints = store.checkpoints


def cp(seq: int, hours: int | None, created_hours: int = 0, session: str | None = None,
       text: str = "✓") -> Checkpoint:
    return Checkpoint(user_id=U, seq=seq, session_id=session or f"s{seq}", memory=f"memory {seq} {text}",
                      created_at=T0 + timedelta(hours=created_hours),
                      session_time=None if hours is None else T0 + timedelta(hours=hours))


def key(c: Checkpoint | None) -> tuple[Any, ...] | None:
    return None if c is None else (c.user_id, c.seq, c.session_id, c.memory, c.created_at, c.session_time)


def random_chain(rng: random.Random) -> list[Checkpoint]:
    """Seqs from 1 (sometimes 0 or 2), sometimes with a gap; session times mostly rising, sometimes out of
    order (a session ended late) or unknown (the creation time counts)."""
    n = rng.randint(1, 12)
    seqs = list(range(rng.choice([1, 1, 1, 0, 2]), n + 1))
    if len(seqs) > 2 and rng.random() < 0.4:
        seqs.remove(rng.choice(seqs[1:-1]))
    out = []
    for seq in seqs:
        hours = seq * 10 + (rng.choice([-35, 25]) if rng.random() < 0.3 else 0)
        out.append(cp(seq, None if rng.random() < 0.2 else hours, created_hours=seq * 10 + 5))
    return out


def moments(chain: list[Checkpoint]) -> list[datetime | None]:
    """None, and every time around the chain's session and creation times."""
    times = {c.session_time or c.created_at for c in chain} | {c.created_at for c in chain}
    return [None] + sorted({t + timedelta(microseconds=d) for t in times for d in (-1, 0, 1)}
                           | {T0 - timedelta(days=1), T0 + timedelta(days=30)})


@pytest.fixture()
def memory(store_url: str) -> Iterator[Memory]:
    with Memory(store_url, llm=False, embedder=False) as m:
        yield m


def test_the_store_reads_the_checkpoint_the_chain_rule_picks(memory: Memory) -> None:
    rng = random.Random(46)
    for case in range(12):
        memory.store.delete_checkpoints(U, -10)
        chain = random_chain(rng)
        for c in chain:
            memory.store.put_checkpoint(c)
        for when in moments(chain):
            want = checkpoint_at(ChainOnly(memory.store), U, when)
            assert key(memory.store.checkpoint_at(U, when)) == key(want), (case, [c.seq for c in chain], when)


def test_a_summary_as_of_a_time_holds_no_session_ended_later_out_of_order(memory: Memory) -> None:
    # s1 (hour 30) was ended first, then s2 (hour 10) and s3 (hour 20): s2's summary holds s1's news
    for c in (cp(1, 30), cp(2, 10), cp(3, 20)):
        memory.store.put_checkpoint(c)
    at = lambda h: memory.summary(user_id=U, as_of=T0 + timedelta(hours=h))  # noqa: E731
    assert at(25) == ""  # every summary holds s1 (hour 30)
    assert at(30) == "memory 3 ✓"
    assert memory.summary(user_id=U) == "memory 3 ✓"
    assert memory.store.checkpoint_at("nobody") is None


def test_nothing_past_a_gap_or_before_seq_one_is_read(memory: Memory) -> None:
    for c in (cp(1, 1), cp(2, 2), cp(4, 4), cp(5, 5)):  # seq 3's session was forgotten: rewrite owed
        memory.store.put_checkpoint(c)
    assert memory.summary(user_id=U) == "memory 2 ✓"
    assert memory.summary(user_id=U, as_of=T0 + timedelta(hours=100)) == "memory 2 ✓"
    assert memory.summary(user_id=U, as_of=T0 + timedelta(hours=1)) == "memory 1 ✓"
    memory.store.delete_checkpoints(U, 0)
    memory.store.put_checkpoint(cp(2, 2))
    assert memory.store.checkpoint_at(U) is None
    assert memory.summary(user_id=U, as_of=T0 + timedelta(hours=100)) == ""


def test_a_tenant_reads_its_own_checkpoint(store_url: str) -> None:
    with Memory(store_url, llm=False, embedder=False, tenant="acme") as acme, \
            Memory(store_url, llm=False, embedder=False) as default:
        acme.store.put_checkpoint(cp(1, 1))
        default.store.put_checkpoint(Checkpoint(user_id=U, seq=1, session_id="d", memory="default's",
                                                created_at=T0))
        found = acme.store.checkpoint_at(U)
        assert found is not None and (found.user_id, found.memory) == (U, "memory 1 ✓")
        assert default.summary(user_id=U) == "default's"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_reading_the_summary_reads_one_row_whatever_the_chain(kind: str, url_factory: Callable[[str], str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(url_factory(kind), llm=False, embedder=False) as mem:
        for seq in range(1, 301):
            mem.store.put_checkpoint(cp(seq, seq))
        sql = getattr(mem.store, "inner", mem.store)  # the SQL store under a tenant view
        rows_read: list[int] = []
        real = sql._all

        def counting(*args: Any, **kwargs: Any) -> list[Any]:
            rows = real(*args, **kwargs)
            rows_read.append(len(rows))
            return rows

        monkeypatch.setattr(sql, "_all", counting)
        assert mem.summary(user_id=U) == "memory 300 ✓"
        assert mem.summary(user_id=U, as_of=T0 + timedelta(hours=150, minutes=30)) == "memory 150 ✓"
        chat = [{"role": "user", "content": "Where do I live?"}]
        assert "memory 300 ✓" in mem.context(chat, user_id=U)[0]["content"]
        assert rows_read == [1, 1, 1]  # one statement, one row each: not the 300 checkpoints


class OneSentence:
    """A chat model whose every memory update says one thing (enough for Rsum's bookkeeping)."""

    name = "one-sentence"
    context_window = 8192

    def chat(self, messages: Any, **kwargs: Any) -> ChatResult:
        return ChatResult(text="Maya moved to Porto.", usage=CallUsage(prompt_tokens=1, completion_tokens=4))

    def count_tokens(self, text: str) -> int:
        return len(text.split())


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_session_end_reads_the_last_memory_only(kind: str, url_factory: Callable[[str], str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(url_factory(kind), llm=False, embedder=False) as mem:
        for seq in range(1, 301):
            mem.store.put_checkpoint(cp(seq, seq, text="x" * 200))
        mem.store.ensure_session(U, "new")
        mem.store.add_messages(U, [Message(id="new-1", user_id=U, session_id="new", speaker="Maya",
                                           text="I moved to Porto.", timestamp=T0 + timedelta(days=30),
                                           recorded_at=T0 + timedelta(days=30))])
        sql = getattr(mem.store, "inner", mem.store)
        memories_read: list[str] = []
        real = sql._all

        def counting(*args: Any, **kwargs: Any) -> list[Any]:
            rows = real(*args, **kwargs)
            memories_read.extend(v for r in rows for v in r if isinstance(v, str) and v.startswith("memory "))
            return rows

        monkeypatch.setattr(sql, "_all", counting)
        made = RsumMemory(mem.store, OneSentence()).update(U, "new")  # type: ignore[arg-type]
        assert made is not None and (made.seq, made.session_id) == (301, "new")
        assert "Maya moved to Porto." in made.memory
        # the memory it built on, read to compute and again to check the chain before the write: the old
        # way read all 300 memories twice
        assert memories_read == ["memory 300 " + "x" * 200] * 2
        monkeypatch.undo()
        assert [c.seq for c in mem.store.checkpoints(U)] == list(range(1, 302))
        assert mem.summary(user_id=U) == made.memory


def test_a_page_of_checkpoints_is_read_alone_and_stops_at_the_gap(memory: Memory) -> None:
    """The explorer's list read the whole chain, texts included, for every page of 50."""
    for seq in [*range(1, 121), *range(122, 130)]:  # seq 121's session was forgotten: its rewrite is owed
        memory.store.put_checkpoint(cp(seq, seq, session="odd" if seq % 7 == 0 else None))
    pages, after = [], 0
    while page := memory.store.checkpoint_page(U, after_seq=after, limit=50):
        pages.append([c.seq for c in page])
        after = page[-1].seq
    assert pages == [list(range(1, 51)), list(range(51, 101)), list(range(101, 121))]
    odd = memory.store.checkpoint_page(U, limit=500, session_id="odd")
    assert [c.seq for c in odd] == list(range(7, 121, 7)) and {c.memory for c in odd} == {
        f"memory {s} ✓" for s in range(7, 121, 7)}
    assert memory.store.checkpoint_page("nobody") == []
    memory.store.delete_checkpoints(U, 0)
    memory.store.put_checkpoint(cp(2, 2))  # no run from seq 1: nothing is valid
    assert memory.store.checkpoint_page(U) == []
