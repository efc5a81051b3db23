"""Property-based tests of the update rules: any arrival order keeps the invariants."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem import Fact, Intent, Memory, Origin
from chronomem.registry import RelationRegistry
from chronomem.model import LaterDate
from chronomem.temporal import _replay_slot, in_slot, in_their_slots, overlaps, rebuild_slot

BASE = datetime(2010, 1, 1, tzinfo=timezone.utc)
CITIES = ["Porto", "Lisbon", "Braga", "Oslo", "Paris"]

update = st.fixed_dictionaries(
    {"object": st.sampled_from(CITIES), "start": st.integers(0, 40),
     "length": st.one_of(st.none(), st.integers(1, 20)),
     "confidence": st.sampled_from([1.0, 0.9, 0.7, 0.3])})


def to_fact(u: dict) -> dict:
    f = {"subject": "Maya", "relation": "lives_in", "object": u["object"],
         "valid_from": (BASE + timedelta(days=30 * u["start"])).isoformat(), "confidence": u["confidence"]}
    if u["length"] is not None:
        f["valid_to"] = (BASE + timedelta(days=30 * (u["start"] + u["length"]))).isoformat()
    return f


def instants(mem: Memory) -> list[datetime]:
    pts = {BASE - timedelta(days=1)}
    for f in mem.history(user_id="u"):
        for t in (f.valid_from, f.valid_to):
            if t is not None:
                pts |= {t, t - timedelta(seconds=1), t + timedelta(seconds=1)}
    return sorted(pts)


@settings(deadline=None)
@given(st.lists(update, min_size=1, max_size=8), st.booleans())
def test_at_most_one_stable_value_at_any_instant(tmp_path_factory, updates, one_batch) -> None:
    path: Path = tmp_path_factory.mktemp("h") / "m.db"
    with Memory(path) as mem:
        if one_batch:
            reports = [mem.add_facts([to_fact(u) for u in updates], user_id="u")]
        else:
            reports = [mem.add_facts([to_fact(u)], user_id="u") for u in updates]
        added = {f.id for r in reports for f in r.added}
        assert {f.id for f in mem.history(user_id="u")} == added  # every inserted fact is kept
        assert sum(len(r.added) + len(r.reinforced) + bool(r.closed and not r.added)
                   for r in reports) >= len(reports)  # every update had an effect
        for t in instants(mem):
            valid = mem.facts(user_id="u", subject="Maya", relation="lives_in", as_of=t)
            assert len(valid) <= 1, (t, valid)
        # every stated (object, start) is still represented in history: nothing is lost
        hist = mem.history(user_id="u")
        for i, u in enumerate(updates):
            if any(v["object"] == u["object"] and v["length"] is not None for v in updates[i + 1:]):
                continue  # a later explicit ending of the same value may rightly cut this one short
            f = to_fact(u)
            start = datetime.fromisoformat(f["valid_from"])
            assert any(h.object == u["object"] and
                       (h.valid_from is None or h.valid_from <= start) and
                       (h.stated_to is None or start < h.stated_to or h.valid_from == start)
                       for h in hist), (u, hist)
        # intervals are well-formed and never empty (the tie rule supersedes instead)
        for h in hist:
            assert h.valid_from is None or h.valid_to is None or h.valid_from < h.valid_to


@settings(deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["jazz", "tea", "surf", "chess"]), st.integers(0, 30)),
                min_size=1, max_size=8))
def test_multi_valued_facts_coexist(tmp_path_factory, likes) -> None:
    path = tmp_path_factory.mktemp("h") / "m.db"
    with Memory(path) as mem:
        for obj, start in likes:
            mem.add_facts([{"subject": "Maya", "relation": "likes", "object": obj,
                            "valid_from": (BASE + timedelta(days=start)).isoformat()}], user_id="u")
        now = mem.facts(user_id="u", relation="likes")
        assert sorted(f.object for f in now) == sorted({o for o, _ in likes})
        # the same object is never valid twice at once
        for t in instants(mem):
            objs = [f.object for f in mem.facts(user_id="u", relation="likes", as_of=t)]
            assert len(objs) == len(set(objs))


@settings(deadline=None)
@given(st.permutations([("Porto", 0), ("Braga", 10), ("Lisbon", 20), ("Oslo", 30)]))
def test_final_timeline_does_not_depend_on_arrival_order(tmp_path_factory, order) -> None:
    path = tmp_path_factory.mktemp("h") / "m.db"
    with Memory(path) as mem:
        for city, start in order:
            mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": city,
                            "valid_from": (BASE + timedelta(days=30 * start)).isoformat()}], user_id="u")
        timeline = [(f.object, f.valid_from, f.valid_to) for f in mem.history(user_id="u")]
        expected = ["Porto", "Braga", "Lisbon", "Oslo"]
        assert [t[0] for t in timeline] == expected
        for (_, _, end), (_, start, _) in zip(timeline, timeline[1:]):
            assert end == start
        assert timeline[-1][2] is None


# -- slots replayed one by one ---------------------------------------------------------------------------
# rebuild_slot replays each slot apart (temporal.slot_of) and GraphWriter.rebuild picks a slot's facts by
# set lookups (temporal.in_their_slots): both must give what comparing every pair of facts gives.

REGISTRY = RelationRegistry()
REGISTRY.define("reports_to", single_valued=True, inverse="manages")
PEOPLE = ["Maya", "Tom", "Ana", "Raj"]
# the slot's deciding relation and the relations stated in it
FAMILIES = {"lives_in": ["lives_in"], "married_to": ["married_to"], "likes": ["likes"],
            "sibling_of": ["sibling_of"], "reports_to": ["reports_to", "manages"]}

said = st.tuples(st.sampled_from(PEOPLE), st.integers(0, 3), st.sampled_from(PEOPLE + CITIES[:2]),
                 st.one_of(st.none(), st.integers(0, 30)), st.one_of(st.none(), st.integers(1, 20)),
                 st.sampled_from([1.0, 0.9, 0.3]), st.booleans())


def registry_key(f: Fact) -> tuple[str, str, str]:
    return REGISTRY.key(f.subject, f.relation, f.object)


def slot_facts(spec_name: str, rows: list) -> list[Fact]:
    out = []
    for i, (subject, rel, obj, start, length, confidence, guessed) in enumerate(rows):
        relations = FAMILIES[spec_name]
        valid_from = None if start is None else BASE + timedelta(days=30 * start)
        valid_to = None if length is None else BASE + timedelta(days=30 * ((start or 0) + length))
        out.append(Fact(id=f"f{i:02d}", user_id="u", subject=subject, relation=relations[rel % len(relations)],
                        object=obj, valid_from=valid_from, valid_to=valid_to, stated_to=valid_to,
                        confidence=confidence, intent=Intent.FACT, origin=Origin.IMPORTED,
                        recorded_at=BASE + timedelta(minutes=i), start_guessed=guessed and start is not None,
                        subject_id=subject, object_id=obj))
    return out


@settings(deadline=None, max_examples=300)
@given(st.sampled_from(sorted(FAMILIES)), st.lists(said, min_size=1, max_size=12), st.data())
def test_slots_replayed_apart_as_when_every_pair_is_compared(spec_name, rows, data) -> None:
    spec = REGISTRY.spec(spec_name)
    facts = slot_facts(spec_name, rows)
    apart = rebuild_slot(facts, spec, registry_key, 0.5)
    together = _replay_slot(facts, spec, registry_key, 0.5)
    assert sorted(apart, key=lambda f: f.id) == sorted(together, key=lambda f: f.id)
    assert [f.recorded_at for f in apart] == sorted(f.recorded_at for f in apart)
    members = data.draw(st.lists(st.sampled_from(facts), max_size=4))
    ours = in_their_slots(members, spec, registry_key)
    for f in facts:
        assert ours(f) == any(f.id == m.id or in_slot(m, f, spec, registry_key) for m in members), (f, members)



@settings(deadline=None, max_examples=300)
@given(st.lists(said, min_size=1, max_size=8), st.lists(st.tuples(st.integers(0, 7), st.integers(1, 30)), max_size=4))
def test_a_replayed_fact_keeps_its_later_starts_inside_it(rows, later) -> None:
    """A fact replayed after a rival recorded before it (a correction, a restored backup) and cut by it
    before a later start of its gives that stint up, as a cut rival does: no later start is left outside its
    fact's interval (an export refuses that), and the slot still holds one stable value at a time."""
    spec = REGISTRY.spec("lives_in")
    # known starts (endings with unknown starts have their own limits: chronomem.temporal), none guessed
    facts = slot_facts("lives_in", [("Maya", 0, o, start or 0, n, c, False) for _, _, o, start, n, c, _ in rows])
    taken = {g.valid_from for g in facts}
    for i, (which, months) in enumerate(later):  # said again later, inside its stated interval, on a day of its own
        f = facts[which % len(facts)]
        assert f.valid_from is not None
        at = f.valid_from + timedelta(days=30 * months)
        if (f.stated_to is None or at < f.stated_to) and at not in taken:
            taken.add(at)
            f.later_starts = sorted([*f.later_starts, LaterDate(at, BASE + timedelta(days=900 + i), [f"t{i}"])])
    changed = {f.id: f for f in rebuild_slot(facts, spec, registry_key, 0.5)}
    after = [changed.get(f.id, f) for f in facts] + [f for f in changed.values() if f.id not in {g.id for g in facts}]
    for f in after:
        for d in f.later_starts:
            assert f.valid_from is None or f.valid_from < d.at, f  # the export's check
            assert (f.valid_to or f.stated_to) is None or d.at < (f.valid_to or f.stated_to), f
    live = [f for f in after if f.confidence >= 0.5 and not f.superseded and f.valid_from is not None]
    for a, b in itertools.combinations(live, 2):
        assert not overlaps(a.valid_from, a.valid_to, b.valid_from, b.valid_to), (a, b)


_PEOPLE = ["Maya", "Rui", "Ana", "Tiago"]
_THINGS = ["jazz", "tea", "Porto", "Braga", "Acme"]
@st.composite
def batch_fact(draw: st.DrawFn) -> dict[str, object]:
    start = draw(st.integers(2010, 2019))
    fact: dict[str, object] = {
        "subject": draw(st.sampled_from(_PEOPLE)),
        "relation": draw(st.sampled_from(["lives_in", "works_at", "likes", "friend_of", "parent_of", "child_of",
                                          "manages", "reports_to"])),
        "object": draw(st.sampled_from(_PEOPLE + _THINGS)), "valid_from": f"{start}-01-01",
        "confidence": draw(st.sampled_from([0.3, 0.8, 1.0]))}
    if draw(st.booleans()):
        fact["valid_to"] = f"{start + draw(st.integers(1, 5))}-06-01"
    return fact


@given(st.lists(st.lists(batch_fact(), min_size=1, max_size=6), min_size=1, max_size=5))
def test_a_batch_reads_the_facts_of_its_keys_as_the_rules_would_meet_them_all(tmp_path_factory, batches) -> None:
    """``GraphWriter._load_batch`` reads, for many-valued facts, only the facts between the two entities;
    the histories equal those of reading every fact of the batch's relations touching its entities."""
    from chronomem.graph import GraphWriter, _Batch

    def read_wide(self, user_id, facts):  # type: ignore[no-untyped-def]
        relations = {relation for relation, _, _ in facts}
        relations |= {inv for r in relations if (inv := self.registry.spec(r).inverse)}
        ids = list({end for _, subject_id, object_id in facts for end in (subject_id, object_id)})
        return _Batch(self.registry, self.theta, self._cached_key(),
                      self.store.facts(user_id, touching=ids, relations=sorted(relations)))

    def history(mem: Memory) -> list[tuple[object, ...]]:
        return sorted((f.subject, f.relation, f.object, str(f.valid_from), str(f.valid_to), round(f.confidence, 6),
                       f.closed_by is not None, len(f.source_ids)) for f in mem.history(user_id="u"))

    keyed = Memory(":memory:", llm=False, embedder=False)
    wide = Memory(":memory:", llm=False, embedder=False)
    real = GraphWriter._load_batch
    try:
        for batch in batches:
            keyed.add_facts([dict(f) for f in batch], user_id="u")
            GraphWriter._load_batch = read_wide  # type: ignore[method-assign]
            try:
                wide.add_facts([dict(f) for f in batch], user_id="u")
            finally:
                GraphWriter._load_batch = real  # type: ignore[method-assign]
        assert history(keyed) == history(wide)
    finally:
        keyed.close()
        wide.close()
