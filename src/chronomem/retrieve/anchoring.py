"""Root-entity anchoring: which nodes of the user's graph a question starts from.

In order, cheapest first:

1. **names and aliases** — every 1–4-word span of the question (possessive
   ``'s`` dropped) is normalised and looked up among the user's entity names
   and aliases in one store query; longer matches win over spans inside them;
2. **the speaker** — "I", "me", "my" … resolve to the ``speaker`` hint (an
   entity name, alias or id) when the caller gives one;
3. **embeddings** — when an embedder is available and a content span matched
   nothing, the span is embedded and compared with the user's entity-name
   vectors (entities missing a vector are embedded once and stored);
4. **lexical seeds** — when nothing anchored, full-text search over the
   user's facts proposes the endpoints of the best-matching facts.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..cjk import is_cjk, split_cjk
from ..entities import normalize_name
from ..providers.base import Embedder
from ..store.base import Store
from .scoring import STOPWORDS, words

log = logging.getLogger(__name__)

_TOKEN = re.compile(r"[\w][\w\-.&]*", re.UNICODE)
ENTITY_KIND = "entity"
#: the longest name looked for inside a run of Chinese, Japanese or Korean characters ("サンフランシスコ" is 8)
MAX_CJK_NAME = 12


@dataclass(slots=True)
class Anchor:
    """A root entity of the search."""

    entity_id: str
    name: str
    how: str  # "name" | "alias" | "speaker" | "embedding" | "lexical"
    score: float
    span: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"entity_id": self.entity_id, "name": self.name, "how": self.how,
                "score": round(self.score, 4), "span": self.span}


def candidate_spans(query: str, max_words: int = 4) -> list[tuple[int, int, str]]:
    """``(start, end, text)`` word spans of the question that could name an entity.

    Spans that consist only of stopwords are skipped; possessives are dropped
    ("Maya's brother" → "Maya", "brother", "Maya brother").  Chinese, Japanese and Korean write no space
    between words, so there each character is a word and every run of up to :data:`MAX_CJK_NAME` of them
    inside a run of such characters is a span ("マヤはどこに住んでいますか" holds "マヤ").
    """
    text = re.sub(r"['’]s\b", "", query)
    toks: list[str] = []
    runs: list[int] = []  # for each token, its run of CJK characters (-1: a word)
    for t in _TOKEN.findall(text):
        for part in split_cjk(t.strip(".-")):
            if is_cjk(part):
                toks += part
                runs += [len(runs)] * len(part)
            else:
                toks.append(part)
                runs.append(-1)
    # a capitalised word inside the sentence is a name even when it is a stopword ("May", "Will")
    stop = [t.lower() in STOPWORDS and not (k > 0 and t[:1].isupper()) for k, t in enumerate(toks)]
    out: list[tuple[int, int, str]] = []
    for i in range(len(toks)):
        if runs[i] >= 0:  # characters of one run, joined as written
            end = i
            while end < len(toks) and end - i < MAX_CJK_NAME and runs[end] == runs[i]:
                end += 1
                out.append((i, end, "".join(toks[i:end])))
            continue
        for j in range(i + 1, min(len(toks), i + max_words) + 1):
            if runs[j - 1] >= 0:
                break  # a span of words ends where a run of characters begins
            span = toks[i:j]
            if not span[0] or not span[-1]:
                continue
            if stop[i] or stop[j - 1]:
                continue  # "the Golden Gate" is found as "Golden Gate"; "lives in" is not a name
            out.append((i, j, " ".join(span)))
    return out


def anchor_by_name(store: Store, user_id: str, query: str) -> list[Anchor]:
    """Exact and alias matches of question spans, longest first, no span inside another."""
    spans = candidate_spans(query)
    if not spans:
        return []
    norms = {s: normalize_name(s[2]) for s in spans}
    found = store.entity_ids_by_norm(user_id, list(set(norms.values())))
    hits = [(s, found[n]) for s, n in norms.items() if n in found]
    hits.sort(key=lambda h: (-(h[0][1] - h[0][0]), h[0][0]))
    taken: list[tuple[int, int]] = []
    chosen: list[tuple[tuple[int, int, str], str]] = []
    for (i, j, text), eid in hits:
        if any(a <= i and j <= b for a, b in taken):
            continue
        taken.append((i, j))
        chosen.append(((i, j, text), eid))
    if not chosen:
        return []
    ents = {e.id: e for e in store.entities(user_id, ids=list({eid for _, eid in chosen}))}
    out: list[Anchor] = []
    seen: set[str] = set()
    for (i, _j, text), eid in sorted(chosen, key=lambda c: c[0][0]):
        if eid in seen or eid not in ents:
            continue
        seen.add(eid)
        ent = ents[eid]
        how = "name" if normalize_name(ent.name) == normalize_name(text) else "alias"
        out.append(Anchor(eid, ent.name, how, 1.0 if how == "name" else 0.95, text))
    return out


def anchor_speaker(store: Store, user_id: str, speaker: str) -> Anchor | None:
    """The entity of the speaker hint (name, alias or entity id)."""
    norm = normalize_name(speaker)
    eid = store.entity_ids_by_norm(user_id, [norm]).get(norm) if norm else None
    ents = store.entities(user_id, ids=[eid if eid else speaker])
    if not ents:
        return None
    return Anchor(ents[0].id, ents[0].name, "speaker", 1.0, speaker)


def ensure_entity_vectors(store: Store, user_id: str, embedder: Embedder) -> int:
    """Embed the user's entity names that have no vector for this embedder yet; returns how many."""
    missing = store.entities_without_vectors(user_id, ENTITY_KIND, embedder.name)
    if not missing:
        return 0
    texts = [e.name if not e.type else f"{e.name} ({e.type})" for e in missing]
    vecs = embedder.embed(texts)
    with store.transaction(user_id):  # an entity forgotten while it was embedded gets no vector
        alive = {e.id for e in store.entities(user_id, ids=[e.id for e in missing])}
        store.put_vectors(user_id, ENTITY_KIND, [(e.id, v) for e, v in zip(missing, vecs) if e.id in alive],
                          embedder.name)
    return len(missing)


def anchor_by_embedding(store: Store, user_id: str, spans: Sequence[str], embedder: Embedder,
                        threshold: float, max_spans: int = 8) -> list[Anchor]:
    """Entities whose name vector is close to a question span's vector (cosine ≥ ``threshold``)."""
    spans = list(dict.fromkeys(spans))[:max_spans]
    if not spans:
        return []
    vecs = embedder.embed(spans)
    best: dict[str, tuple[float, str]] = {}
    for span, vec in zip(spans, vecs):
        for eid, cos in store.knn(user_id, ENTITY_KIND, vec, k=1, model=embedder.name):
            if cos >= threshold and cos > best.get(eid, (0.0, ""))[0]:
                best[eid] = (cos, span)
    if not best:
        return []
    ents = {e.id: e for e in store.entities(user_id, ids=list(best))}
    return [Anchor(eid, ents[eid].name, "embedding", cos, span)
            for eid, (cos, span) in sorted(best.items(), key=lambda x: -x[1][0]) if eid in ents]


def anchor_by_text(store: Store, user_id: str, query: str, limit: int) -> list[Anchor]:
    """Endpoints of the facts that full-text search ranks best for the question."""
    content = " ".join(w for w in words(query) if w not in STOPWORDS and len(w) > 1)
    if not content:
        return []
    hits = store.search_facts_text(user_id, content, limit)
    if not hits:
        return []
    top = hits[0][1] or 1.0
    facts = {f.id: f for f in store.facts(user_id, ids=[h for h, _ in hits])}
    score: dict[str, tuple[float, str]] = {}
    for fid, s in hits:
        f = facts.get(fid)
        if f is None:
            continue
        for eid, name in ((f.subject_id, f.subject), (f.object_id, f.object)):
            if eid and s / top > score.get(eid, (0.0, ""))[0]:
                score[eid] = (s / top * 0.8, name)
    return [Anchor(eid, name, "lexical", sc) for eid, (sc, name) in
            sorted(score.items(), key=lambda x: -x[1][0])]


def unmatched_spans(query: str, anchors: Sequence[Anchor]) -> list[str]:
    """Content spans of up to three words not already part of an anchor's span."""
    covered = {w.lower() for a in anchors for w in a.span.split()}
    out = []
    for _i, _j, text in candidate_spans(query, max_words=3):
        if is_cjk(text):
            continue  # a piece of a run of characters is no phrase an English sentence model reads
        ws = text.split()
        if any(w.lower() in covered for w in ws):
            continue
        out.append(text)
    return out
