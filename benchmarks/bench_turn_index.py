"""How should turns be indexed for full-text search?  Recall@10 of LoCoMo's gold evidence, no model.

Each variant ranks a conversation's turns for every category 1–4 question:

* ``bm25``                  the harness's BM25 over the turn ("Speaker: text [image caption]")
* ``bm25+prev2``/``+prevnext`` BM25 over the turn with its two predecessors / its neighbours
* ``bm25+prevscore``        the turn's BM25 score + 0.5 × its predecessor's (no index change)
* ``bm25+dense``            reciprocal rank fusion of BM25 and MiniLM (only with ``--dense``)
* ``store``                 the store's own full-text search (SQLite FTS5), as ``answer()`` calls it:
                            with the contextual index (each turn with the one before it)
* ``store-turn-only``       the same FTS5 ranking with the previous-turn column weighted 0

    python benchmarks/bench_turn_index.py --conversations conv-26,conv-30,conv-42 [--dense] [--explore]

Tuning conversations only (#21 holds conv-41/43/44/47 out).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory  # noqa: E402
from chronomem.bench.datasets import load_locomo  # noqa: E402
from chronomem.bench.memory_methods import turn_message  # noqa: E402
from chronomem.bench.methods import turn_index_text  # noqa: E402
from chronomem.bench.metrics import evidence_recall  # noqa: E402
from chronomem.bench.retrievers import BM25Index, DenseIndex  # noqa: E402
from chronomem.conversations import Conversation  # noqa: E402
from chronomem.model import Message  # noqa: E402
from chronomem.retrieve.fusion import reciprocal_rank_fusion  # noqa: E402
from chronomem.store.fulltext import query_words  # noqa: E402
from chronomem.store.sqlite import _fts_query  # noqa: E402
from chronomem.timeutil import utcnow  # noqa: E402

HELD_OUT = {"conv-41", "conv-43", "conv-44", "conv-47"}


def store_rankings(conv: Conversation, questions: list[str], weights: tuple[float, float, float]) -> list[list[str]]:
    """The store's FTS5 ranking (speaker, text, previous-turn columns weighted) of each question."""
    mem = Memory(":memory:", embedder=False)
    user = conv.sample_id
    msgs, seq = [], 0
    for s in conv.sessions:
        sid = f"s{s.index}"
        mem.store.ensure_session(user, sid)
        for t in s.turns:
            d = turn_message(t, s)
            msgs.append(Message(id=d["id"], user_id=user, session_id=sid, speaker=d["speaker"], text=d["text"],
                                timestamp=d.get("timestamp") or utcnow(), recorded_at=utcnow(), seq=seq))
            seq += 1
    mem.store.add_messages(user, msgs)
    db = mem.store._db  # type: ignore[attr-defined]  # a benchmark may weigh the columns directly
    out = []
    for q in questions:
        fts = _fts_query(q)
        rows = db.execute(
            "SELECT t.id FROM messages_fts JOIN messages t ON t.rowid = messages_fts.rowid "
            "WHERE messages_fts MATCH ? AND t.user_id = ? ORDER BY bm25(messages_fts, ?, ?, ?) LIMIT 10",
            (fts, user, *weights)).fetchall() if fts else []
        out.append([r[0] for r in rows])
    mem.close()
    return out


def explore(conv: Conversation, qas: list, store: list[list[str]], embedder: object | None,
            texts: list[str], pairs: list[str]) -> dict[str, list[list[str]]]:
    """Session 12's attempts to lift the store's ranking (BENCHMARKS.md, "What did not raise it further");
    ``texts``/``pairs``: each turn's index text, alone and with the turn before it."""
    questions = [qa.question for qa in qas]
    out: dict[str, list[list[str]]] = {}
    for w in ((1.0, 1.0, 0.5), (1.0, 1.0, 0.75), (1.0, 1.0, 1.5), (0.5, 1.0, 1.0), (2.0, 1.0, 1.0)):
        out[f"store weights {w}"] = store_rankings(conv, questions, w)
    if embedder is not None:
        ids = [t.dia_id for t in conv.turns]
        for name, index in (("turn", DenseIndex.build(texts, embedder)), ("turn+prev", DenseIndex.build(pairs, embedder))):
            dense = [[ids[i] for i, _ in index.search(q, 50)] for q in questions]
            for k in (10, 60):
                out[f"store + dense {name}, rrf k={k}"] = [reciprocal_rank_fusion([b, d], k=k)[:10]
                                                          for b, d in zip(store, dense)]
    text = {t.dia_id: t.text for t in conv.turns}
    speakers = {w.lower() for t in conv.turns for w in t.speaker.split()}
    df = Counter(w for t in conv.turns for w in set(query_words(t.text)))
    for top, n in ((2, 3), (3, 3), (3, 5), (5, 5)):
        expanded = []
        for q, ranked in zip(questions, store):
            have = set(query_words(q))
            c: Counter[str] = Counter(w for i in ranked[:top] for w in query_words(text.get(i, ""))
                                      if w not in have and w not in speakers and df[w] < 0.05 * len(conv.turns))
            expanded.append(q + " " + " ".join(w for w, _ in c.most_common(n)))
        prf = store_rankings(conv, expanded, (1.0, 1.0, 1.0))
        out[f"store + feedback (top {top}, {n} words)"] = prf
        out[f"store fused with + feedback (top {top}, {n} words)"] = [reciprocal_rank_fusion([b, e], k=10)[:10]
                                                                     for b, e in zip(store, prf)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo_dev.json"))
    ap.add_argument("--conversations", default="conv-26,conv-30,conv-42")
    ap.add_argument("--dense", action="store_true", help="also BM25 + MiniLM fusion (loads the local embedder)")
    ap.add_argument("--explore", action="store_true",
                    help="also the variants tried on the store's ranking in session 12: column weights, "
                         "MiniLM fusion (with --dense), pseudo-relevance feedback")
    args = ap.parse_args()
    wanted = [c.strip() for c in args.conversations.split(",") if c.strip()]
    if HELD_OUT & set(wanted):
        ap.error(f"{sorted(HELD_OUT & set(wanted))} are #21's held-out conversations: not for tuning")
    embedder = None
    if args.dense:
        from chronomem.providers import make_embedder

        embedder = make_embedder("local")
    table: dict[str, dict[str, list[float]]] = {}
    for conv in [c for c in load_locomo(args.data) if c.sample_id in wanted]:
        turns = conv.turns
        texts = [turn_index_text(t) for t in turns]

        def same(i: int, j: int) -> bool:
            return 0 <= j < len(turns) and turns[i].session == turns[j].session

        def with_neighbours(offsets: tuple[int, ...]) -> list[str]:
            return [" ".join(texts[i + o] for o in offsets if same(i, i + o)) for i in range(len(texts))]

        indexes = {"bm25": BM25Index.build(texts), "bm25+prev": BM25Index.build(with_neighbours((-1, 0))),
                   "bm25+prev2": BM25Index.build(with_neighbours((-2, -1, 0))),
                   "bm25+prevnext": BM25Index.build(with_neighbours((-1, 0, 1)))}
        dense = DenseIndex.build(texts, embedder) if embedder is not None else None
        qas = [qa for qa in conv.qa if qa.category in (1, 2, 3, 4) and qa.evidence]
        ids = [t.dia_id for t in turns]
        rankings: dict[str, list[list[str]]] = {name: [] for name in indexes}
        rankings["bm25+prevscore"] = []
        if dense is not None:
            rankings["bm25+dense"] = []
        for qa in qas:
            for name, index in indexes.items():
                rankings[name].append([ids[i] for i, _ in index.search(qa.question, 10)])
            s = indexes["bm25"].scores(qa.question)
            comb = [s[i] + (0.5 * s[i - 1] if same(i, i - 1) else 0.0) for i in range(len(s))]
            rankings["bm25+prevscore"].append([ids[i] for i in sorted(range(len(s)), key=lambda i: -comb[i])[:10]])
            if dense is not None:
                b = [i for i, _ in indexes["bm25"].search(qa.question, 50)]
                d = [i for i, _ in dense.search(qa.question, 50)]
                rankings["bm25+dense"].append([ids[i] for i in reciprocal_rank_fusion([b, d])[:10]])
        rankings["store"] = store_rankings(conv, [qa.question for qa in qas], (1.0, 1.0, 1.0))
        rankings["store-turn-only"] = store_rankings(conv, [qa.question for qa in qas], (1.0, 1.0, 0.0))
        if args.explore:
            rankings.update(explore(conv, qas, rankings["store"], embedder, texts, with_neighbours((-1, 0))))
        for name, ranked in rankings.items():
            recalls = [evidence_recall(qa.evidence, r, 10) or 0.0 for qa, r in zip(qas, ranked)]
            table.setdefault(name, {})[conv.sample_id] = recalls
    convs = sorted({c for d in table.values() for c in d})
    print("| variant | " + " | ".join(convs) + " | pooled |")
    print("|---|" + "---|" * (len(convs) + 1))
    for name, d in table.items():
        pooled = [x for c in convs for x in d[c]]
        print(f"| {name} | " + " | ".join(f"{statistics.mean(d[c]):.3f}" for c in convs)
              + f" | {statistics.mean(pooled):.3f} |")


if __name__ == "__main__":
    main()
