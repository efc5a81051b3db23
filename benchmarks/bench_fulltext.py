"""Recall of the stores' full-text search over LoCoMo turns, with and without English stopwords.

No model: each conversation's turns go verbatim into an in-RAM SQLite store
(as ``chronomem bench`` ingests them: id = ``dia_id``, image caption appended)
and every category 1-4 question is searched three ways:

* ``all words``  — the full-text query before ``FULL_TEXT_VERSION`` 2 (every word of two or more
  characters, stopwords included), run through the same FTS5 SQL as the store;
* ``store``      — ``search_messages_text`` as it is now (``chronomem.store.fulltext``);
* ``bench BM25`` — the ``bm25`` bench method's own index over the same turns, for reference;
* ``+ replies``  — the store's hits, and BM25's, each followed by the next turn of its session (its
  reply) in the same k turns: ``SearchConfig.turn_replies`` (``chronomem.retrieve.search.with_replies``).

Recall@k = share of a question's gold evidence turns among the k hits (questions without evidence
left out), averaged over questions.

    .venv/bin/python benchmarks/bench_fulltext.py --conversations conv-30,conv-26 --k 5,10,15,20
"""

from __future__ import annotations

import argparse
import re
from datetime import timezone

from chronomem.bench import metrics
from chronomem.bench.datasets import DEFAULT_LOCOMO_PATH, Conversation, load_locomo
from chronomem.bench.memory_methods import turn_message
from chronomem.bench.methods import turn_index_text
from chronomem.bench.retrievers import BM25Index
from chronomem.model import Message
from chronomem.retrieve.search import with_replies
from chronomem.store.base import Store
from chronomem.store.sqlite import SQLiteStore
from chronomem.timeutil import utcnow

USER = "bench"


def load_turns(store: Store, conv: Conversation, user: str = USER) -> None:
    """The conversation's turns, verbatim, as ``user``'s (one session per LoCoMo session)."""
    now = utcnow()
    for session in conv.sessions:
        sid = f"{conv.sample_id}:S{session.index}"
        store.ensure_session(user, sid, started_at=session.date_time)
        msgs = []
        for seq, t in enumerate(session.turns):
            m = turn_message(t, session)
            when = m.get("timestamp") or now
            when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
            msgs.append(Message(id=m["id"], user_id=user, session_id=sid, speaker=m["speaker"], text=m["text"],
                                timestamp=when, recorded_at=now, seq=seq))
        store.add_messages(user, msgs)


def all_words_search(store: SQLiteStore, query: str, k: int) -> list[str]:
    """The full-text query of FULL_TEXT_VERSION 1: every word, stopwords included."""
    words = [w for w in dict.fromkeys(re.findall(r"\w+", query.lower())) if len(w) > 1]
    if not words:
        return []
    rows = store._all("SELECT t.id FROM messages_fts JOIN messages t ON t.rowid = messages_fts.rowid "
                      "WHERE messages_fts MATCH ? AND t.user_id = ? ORDER BY bm25(messages_fts) LIMIT ?",
                      (" OR ".join(f'"{w}"' for w in words), USER, k))
    return [r[0] for r in rows]


def replies_of(store: SQLiteStore, ids: list[str], k: int) -> list[str]:
    """The hits ``ids`` (best first), each followed by its reply, cut at ``k`` turns."""
    by_id = {m.id: m for m in store.messages(USER, ids=ids)}
    hits = [by_id[i] for i in ids if i in by_id]
    return [m.id for m in with_replies(store, USER, hits, utcnow(), set(), k)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_LOCOMO_PATH))
    ap.add_argument("--conversations", default="conv-30,conv-26")
    ap.add_argument("--k", default="5,10,15,20")
    args = ap.parse_args()
    ks = [int(k) for k in args.k.split(",")]
    print("| conversation | questions | k | all words | store (no stopwords) | bench BM25 "
          "| store + replies | bench BM25 + replies |")
    print("|---|---|---|---|---|---|---|---|")
    for conv in load_locomo(args.data, sample_ids=args.conversations.split(",")):
        store = SQLiteStore(":memory:")
        load_turns(store, conv)
        bm25 = BM25Index.build([turn_index_text(t) for t in conv.turns])
        qs = [q for q in conv.qa if q.category in (1, 2, 3, 4) and q.evidence]
        for k in ks:
            sums = [0.0] * 5
            for q in qs:
                fts = [i for i, _ in store.search_messages_text(USER, q.question, limit=k)]
                ranked = [conv.turns[i].dia_id for i, _ in bm25.search(q.question, k)]
                hits = (all_words_search(store, q.question, k), fts, ranked,
                        replies_of(store, fts, k), replies_of(store, ranked, k))
                for j, h in enumerate(hits):
                    sums[j] += metrics.evidence_recall(q.evidence, h, None) or 0.0
            print(f"| {conv.sample_id} | {len(qs)} | {k} | " + " | ".join(f"{s / len(qs):.3f}" for s in sums) + " |")
        store.close()


if __name__ == "__main__":
    main()
