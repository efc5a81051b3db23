"""The REAL read path on structured facts: deterministic, no model (no embedder, evaluator off)."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import pytest

from chronomem import Memory
from chronomem.errors import ValidationError
from chronomem.model import Origin
from chronomem.retrieve import NOT_MENTIONED, SearchConfig
from chronomem.answering import answer as answer_fn

CFG = SearchConfig(embeddings=False, evaluator=False)
U = "u1"


@pytest.fixture()
def mem() -> Memory:
    m = Memory(":memory:", embedder=False)
    sample = json.loads(resources.files("chronomem.data").joinpath("sample_facts.json").read_text("utf-8"))
    for step in sample["steps"]:
        m.add_facts(step["facts"], user_id=U)
    m.add_facts([
        {"subject": "Maya", "relation": "married_to", "object": "Tiago", "valid_from": "2021-06-01"},
        {"subject": "Tiago", "relation": "works_at", "object": "Unbabel", "valid_from": "2019-01-01"},
        {"subject": "Maya", "relation": "has_pet", "object": "Sunny", "valid_from": "2023-01-01"},
        {"subject": "Sunny", "relation": "is_a", "object": "golden retriever", "valid_from": "2023-01-01"},
        {"subject": "golden retriever", "relation": "is_a", "object": "dog", "valid_from": "2000-01-01"},
        {"subject": "Lisbon", "relation": "located_in", "object": "Portugal", "valid_from": "2000-01-01"},
        {"subject": "Ana", "relation": "parent_of", "object": "Maya", "valid_from": "1990-01-01"},
    ], user_id=U)
    yield m
    m.close()


def search(mem: Memory, q: str, **kw):
    return mem.search(q, user_id=U, config=CFG, **kw)


def test_where_does_mayas_brother_live(mem: Memory) -> None:
    # stored as "Rui sibling_of Maya": the path reads it from Maya's side by symmetry
    res = search(mem, "Where does Maya's brother live?")
    best = res.paths[0]
    assert [f.relation for f in best.facts] == ["sibling_of", "lives_in"]
    assert best.answer == "Braga"
    first = best.facts[0]
    assert first.origin == Origin.DERIVED and first.rule == "symmetry"
    assert (first.subject, first.object) == ("Maya", "Rui")
    assert first.support_ids and not first.support_ids[0].startswith("derived:")
    assert first.confidence < 1.0
    assert res.facts[0] is first and res.facts[1].object == "Braga"
    assert "Braga" in res.context and "derived:symmetry" in res.context


def test_who_is_ruis_sibling_stored_the_other_way_round() -> None:
    with Memory(":memory:", embedder=False) as m:
        m.add_facts([{"subject": "Maya", "relation": "sister_of", "object": "Rui"},
                     {"subject": "Rui", "relation": "lives_in", "object": "Braga"}], user_id=U)
        res = m.search("Who is Rui's sibling?", user_id=U, config=CFG)
    best = res.paths[0]
    assert best.answer == "Maya"
    assert best.facts[0].origin == Origin.DERIVED and best.facts[0].relation == "sibling_of"
    assert best.sufficient


def test_does_maya_have_a_dog_through_is_a_chain(mem: Memory) -> None:
    res = search(mem, "Does Maya have a dog?")
    best = res.paths[0]
    assert best.answer == "dog"
    f = best.facts[-1]
    assert f.origin == Origin.DERIVED and "hyponymy" in f.rule
    assert (f.subject, f.relation, f.object) == ("Maya", "has_pet", "dog")
    assert len(f.support_ids) == 3  # has_pet Sunny, Sunny is_a golden retriever, golden retriever is_a dog
    # the derived fact is in the results, never in the store
    assert all(not x.id.startswith("derived:") for x in mem.history(user_id=U))


def test_a_cat_that_was_rehomed_is_not_a_current_pet(mem: Memory) -> None:
    res = search(mem, "Does Maya have a tabby cat?")
    assert not any(p.answer == "tabby cat" and p.sufficient for p in res.paths)
    past = search(mem, "Does Maya have a tabby cat?", as_of="2021-01-01")
    assert past.paths[0].answer == "tabby cat"


def test_where_did_maya_live_as_of(mem: Memory) -> None:
    assert search(mem, "Where did Maya live?", as_of="2020-06-01").paths[0].answer == "Porto"
    assert search(mem, "Where did Maya live?", as_of="2015-06-01").paths[0].answer == "Oslo"
    assert search(mem, "Where does Maya live?").paths[0].answer == "Lisbon"


def test_where_did_maya_live_in_2020_uses_the_question_window(mem: Memory) -> None:
    res = search(mem, "Where did Maya live in 2020?")
    places = {p.answer for p in res.paths if p.sufficient}
    assert {"Porto", "Lisbon"} <= places and "Oslo" not in places
    assert "TEMPORAL" in res.trace.intents and res.trace.analysis["window_text"] == "in 2020"


def test_how_has_mayas_job_changed_keeps_both_versions(mem: Memory) -> None:
    res = search(mem, "How has Maya's job changed?")
    assert res.trace.intents[0] == "EVOLUTION"
    titles = {f.object: f for f in res.facts if f.relation == "job_title"}
    assert set(titles) == {"junior designer", "product designer"}
    assert titles["junior designer"].valid_to is not None  # the closed version is there
    assert titles["product designer"].valid_to is None
    # a plain FACT question about the present only sees the open version
    now = {f.object for f in search(mem, "What is Maya's job title?").facts if f.relation == "job_title"}
    assert now == {"product designer"}


def test_where_does_tiagos_wife_work(mem: Memory) -> None:
    # married_to stored from Maya's side; Tiago's own employer must not be the answer
    res = search(mem, "Where does Tiago's wife work?")
    best = res.paths[0]
    assert [f.relation for f in best.facts] == ["married_to", "works_at"]
    assert best.answer == "Feedzai"
    assert best.facts[0].origin == Origin.DERIVED


def test_hedged_move_to_paris_never_answers_where_she_lives(mem: Memory) -> None:
    for q in ("Where does Maya live?", "Where will Maya live?", "Where does Maya live now?"):
        res = search(mem, q)
        assert all(f.object != "Paris" for f in res.facts), q
        assert "Paris" not in res.context
    assert search(mem, "Where does Maya live?", as_of="2025-06-01").paths[0].answer == "Lisbon"
    # visible on request (no confidence stratification)
    loose = mem.search("Where might Maya live?", user_id=U, as_of="2025-06-01",
                       config=SearchConfig(embeddings=False, include_unstable=True))
    assert any(f.object == "Paris" for f in loose.facts)


def test_containment_and_inverse(mem: Memory) -> None:
    res = search(mem, "Which country does Maya live in?")
    answers = {p.answer for p in res.paths[:2]}
    assert "Portugal" in answers
    derived = [f for f in res.facts if f.origin == Origin.DERIVED and f.rule == "containment"]
    assert derived and derived[0].object == "Portugal"
    kid = search(mem, "Who is Maya's parent?")
    assert kid.paths[0].answer == "Ana" and kid.paths[0].facts[0].rule == "inverse"
    assert kid.paths[0].facts[0].relation == "child_of"


def test_speaker_hint_resolves_my(mem: Memory) -> None:
    res = search(mem, "Where does my brother live?", speaker="Maya")
    assert res.paths[0].answer == "Braga"
    assert res.trace.roots[0]["how"] == "speaker"
    no_hint = search(mem, "Where does my brother live?")
    assert any("no speaker" in n for n in no_hint.trace.notes)


def test_alias_anchoring(mem: Memory) -> None:
    mem.alias("Maya", "May", user_id=U)
    res = search(mem, "Where does May live?")
    assert res.trace.roots[0]["how"] == "alias" and res.paths[0].answer == "Lisbon"


def test_trace_records_roots_intents_iterations_and_budget(mem: Memory) -> None:
    res = search(mem, "Where does Maya's brother live?")
    t = res.trace
    assert t.roots[0]["name"] == "Maya"
    assert t.intents == ["FACT"]
    decisions = [b["decision"] for it in t.iterations for b in it["beams"]]
    assert "counterfactual" in decisions and any(d.startswith("stop") for d in decisions)
    assert all("pruned" in it and "kept" in it for it in t.iterations)
    assert t.budget["llm_calls"] == 0
    assert any("lexical" in n for n in t.notes)
    json.dumps(t.as_dict(), default=str)


def test_global_pruning_respects_beam_width(mem: Memory) -> None:
    res = mem.search("Where does Maya's brother live?", user_id=U,
                     config=SearchConfig(embeddings=False, beam_width=1))
    assert all(len(it["kept"]) <= 1 for it in res.trace.iterations)
    assert res.trace.iterations[0]["pruned"] >= 1
    # greedy width 1 keeps "Maya lives_in Lisbon" at depth 1 and loses the sibling hop
    assert not any(p.answer == "Braga" for p in res.paths)
    assert search(mem, "Where does Maya's brother live?").paths[0].answer == "Braga"


def test_counterfactual_off_is_an_ablation(mem: Memory) -> None:
    res = mem.search("Where does Maya's brother live?", user_id=U,
                     config=SearchConfig(embeddings=False, counterfactual=False))
    assert all(f.origin != Origin.DERIVED for f in res.facts)
    assert not any(p.answer == "Braga" for p in res.paths)


def test_nothing_relevant_gives_empty_result_and_not_mentioned(mem: Memory) -> None:
    res = search(mem, "What is the capital of France?")
    assert res.facts == [] and res.context == ""

    class NoCall:
        def chat(self, *a, **k):  # pragma: no cover - must not be called
            raise AssertionError("the model must not be called without evidence")

    mem.use_models(llm=NoCall())  # type: ignore[arg-type]
    ans = answer_fn(mem.store, mem.registry, mem.models, "What is the capital of France?", user_id=U,
                    theta_stable=mem.config.theta_stable, rsum=mem.rsum, config=CFG)
    assert ans.text == NOT_MENTIONED and ans.evidence == [] and ans.context_tokens == 0
    assert ans.usage["llm_calls"] == 0


def test_users_are_isolated(mem: Memory) -> None:
    mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Madrid"}], user_id="u2")
    assert search(mem, "Where does Maya live?").paths[0].answer == "Lisbon"
    other = mem.search("Where does Maya live?", user_id="u2", config=CFG)
    assert {f.object for f in other.facts} == {"Madrid"}


def test_context_respects_token_budget(mem: Memory) -> None:
    res = mem.search("How has Maya's job changed?", user_id=U,
                     config=SearchConfig(embeddings=False, context_tokens=60))
    assert 0 < res.context_tokens <= 60
    assert any("context budget" in n for n in res.trace.notes)


@pytest.mark.parametrize("kwargs,field", [
    ({"user_id": None}, "user_id"),
    ({"user_id": U, "as_of": "not a date"}, "as_of"),
    ({"user_id": U, "top_k": 0}, "top_k"),
    ({"user_id": U, "config": {"max_depth": 2}}, "config"),
    ({"user_id": U, "speaker": ""}, "speaker"),
])
def test_bad_input_names_the_field(mem: Memory, kwargs: dict, field: str) -> None:
    with pytest.raises(ValidationError) as e:
        mem.search("Where does Maya live?", **kwargs)
    assert e.value.field == field


def test_bad_query_and_method(mem: Memory) -> None:
    with pytest.raises(ValidationError) as e:
        mem.search("   ", user_id=U)
    assert e.value.field == "query"
    with pytest.raises(ValidationError) as e:
        mem.answer("Where?", user_id=U, method="magic")
    assert e.value.field == "method"
    with pytest.raises(ValidationError) as e:
        SearchConfig(max_depth=0)
    assert e.value.field == "config.max_depth"
    with pytest.raises(ValidationError) as e:
        SearchConfig(rules=frozenset({"telepathy"}))
    assert e.value.field == "config.rules"


class FakeEmbedder:
    """A deterministic bag-of-letters embedder: exercises the lazy-embedding plumbing, not quality."""

    name = "fake-letters"
    dim = 26

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        out = []
        for t in texts:
            v = [0.0] * 26
            for ch in t.lower():
                if "a" <= ch <= "z":
                    v[ord(ch) - 97] += 1.0
            n = sum(x * x for x in v) ** 0.5 or 1.0
            out.append([x / n for x in v])
        return out


def test_embeddings_are_written_lazily_once(mem: Memory) -> None:
    emb = FakeEmbedder()
    mem.use_models(embedder=emb)
    assert mem.store.vector_ids(U, "fact", emb.name) == set()
    cfg = SearchConfig(embeddings=None)
    first = mem.search("Where does Maya's brother live?", user_id=U, config=cfg)
    stored = mem.store.vector_ids(U, "fact", emb.name)
    assert stored and all(not i.startswith("derived:") for i in stored)
    assert first.trace.stats["embedded_facts"] == len(stored)
    assert first.paths[0].answer == "Braga"
    again = mem.search("Where does Maya's brother live?", user_id=U, config=cfg)
    assert again.trace.stats.get("embedded_facts", 0) == 0
    assert not any("lexical" in n for n in again.trace.notes)


def test_quote_sources_appends_the_cited_turns_in_fact_order_within_budget() -> None:
    from datetime import datetime, timezone

    from chronomem.model import Message

    m = Memory(":memory:", embedder=False)
    t = datetime(2023, 5, 1, 9, 30, tzinfo=timezone.utc)
    m.store.ensure_session(U, "s1", started_at=t)
    m.store.add_messages(U, [
        Message(id="m1", user_id=U, session_id="s1", speaker="Maya", text="I moved to   Porto last month!",
                timestamp=t, recorded_at=t, seq=0),
        Message(id="m2", user_id=U, session_id="s1", speaker="Maya", text="x " * 1000,
                timestamp=t, recorded_at=t, seq=1),
    ])
    m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2023-04-01",
                  "source_ids": ["m1"]},
                 {"subject": "Maya", "relation": "likes", "object": "pastries", "source_ids": ["m2", "m1"]}],
                user_id=U)
    plain = m.search("Where does Maya live?", user_id=U, config=CFG)
    assert "Source turns" not in plain.context and plain.quoted_ids == []
    res = m.search("Where does Maya live?", user_id=U,
                   config=SearchConfig(embeddings=False, evaluator=False, quote_sources=5))
    evidence, quotes = res.context.split("\nSource turns:\n")
    assert evidence == plain.context  # the graph evidence is unchanged, the quotes follow it
    assert quotes.splitlines()[0] == "[1 May 2023 09:30] m1 Maya: I moved to Porto last month!"
    assert res.quoted_ids[0] == "m1" and res.quoted_ids.count("m1") == 1
    # a quote that would break the budget is left out and the trace says so
    tight = m.search("What does Maya like?", user_id=U,
                     config=SearchConfig(embeddings=False, evaluator=False, quote_sources=5, context_tokens=150))
    assert "m2" not in tight.quoted_ids and tight.context_tokens <= 150
    assert any("not quoted" in n for n in tight.trace.notes)
    with pytest.raises(ValidationError, match="quote_sources"):
        SearchConfig(quote_sources=-1)
    m.close()


def test_quote_line_cuts_long_turns() -> None:
    from datetime import datetime, timezone

    from chronomem.model import Message
    from chronomem.retrieve.serialize import MAX_QUOTE_CHARS, quote_line

    t = datetime(2023, 5, 1, tzinfo=timezone.utc)
    msg = Message(id="D1:2", user_id=U, session_id="s", speaker="Jon", text="word " * 200, timestamp=t,
                  recorded_at=t)
    line = quote_line(msg)
    assert line.startswith("[1 May 2023] D1:2 Jon: word word") and line.endswith("…")
    assert len(line) < MAX_QUOTE_CHARS + 40


def test_search_turns_adds_full_text_hits_said_by_as_of_even_without_graph_evidence() -> None:
    from datetime import datetime, timezone

    from chronomem.model import Message

    m = Memory(":memory:", embedder=False)
    t1 = datetime(2023, 5, 1, tzinfo=timezone.utc)
    t2 = datetime(2023, 9, 1, tzinfo=timezone.utc)
    m.store.ensure_session(U, "s1", started_at=t1)
    m.store.add_messages(U, [
        Message(id="m1", user_id=U, session_id="s1", speaker="Maya", text="I moved to Porto last month!",
                timestamp=t1, recorded_at=t1, seq=0),
        Message(id="m2", user_id=U, session_id="s1", speaker="Maya", text="My tattoo says freedom.",
                timestamp=t1, recorded_at=t1, seq=1),
        Message(id="m3", user_id=U, session_id="s1", speaker="Maya", text="I got a second tattoo today.",
                timestamp=t2, recorded_at=t2, seq=2),
    ])
    m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2023-04-01",
                  "source_ids": ["m1"]}], user_id=U)
    cfg = SearchConfig(embeddings=False, evaluator=False, quote_sources=3, search_turns=3)
    # the graph knows where Maya lives; the tattoo is only in the turns
    res = m.search("What does Maya's tattoo say?", user_id=U, config=cfg, as_of="2023-06-01")
    assert res.quoted_ids[-1] == "m2" and "m3" not in res.quoted_ids  # m3 was said after as_of
    assert "Other turns that match the question:\n[1 May 2023] m2 Maya: My tattoo says freedom." in res.context
    assert any("full-text search" in n for n in res.trace.notes)
    # no entity of the question in the graph: the context is the turns alone
    alone = m.search("Which tattoo did someone get?", user_id=U, config=cfg)
    assert alone.facts == [] and alone.context.startswith("Other turns that match the question:")
    assert set(alone.quoted_ids) == {"m2", "m3"}
    # off by default
    assert "Other turns" not in m.search("What does Maya's tattoo say?", user_id=U, config=CFG).context
    m.close()


def test_fallback_turns_replace_paths_below_the_relevance_floor() -> None:
    from datetime import datetime, timezone

    from chronomem.model import Message

    m = Memory(":memory:", embedder=False)
    t = datetime(2023, 5, 1, tzinfo=timezone.utc)
    m.store.ensure_session(U, "s1", started_at=t)
    m.store.add_messages(U, [
        Message(id=f"m{i}", user_id=U, session_id="s1", speaker="Maya", text=f"Tattoo number {i} of Maya.",
                timestamp=t, recorded_at=t, seq=i) for i in range(6)
    ])
    m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2023-04-01",
                  "source_ids": ["m0"]}], user_id=U)
    base = SearchConfig(embeddings=False, evaluator=False, quote_sources=3, search_turns=2)
    # without a floor, the weak path (it only names Maya) leads the context, then 2 hits
    weak = m.search("Which tattoo does Maya have?", user_id=U, config=base)
    assert weak.facts and weak.context.startswith("Evidence") and len(weak.quoted_ids) == 3
    floor = weak.paths[0].s_qr
    # with a floor above it, the graph has nothing about the question: 4 hits and nothing else
    cfg = replace(base, min_relevance=round(floor + 0.01, 2), fallback_turns=4)
    alone = m.search("Which tattoo does Maya have?", user_id=U, config=cfg)
    assert alone.facts == [] and alone.paths == []
    assert alone.context.startswith("Other turns that match the question:") and len(alone.quoted_ids) == 4
    assert any("relevant enough" in n for n in alone.trace.notes)
    # without fallback_turns the turns-only context keeps search_turns' count
    assert len(m.search("Which tattoo does Maya have?", user_id=U,
                        config=replace(cfg, fallback_turns=0)).quoted_ids) == 2
    # a question the path does answer keeps the graph evidence under the same floor
    kept = m.search("Where does Maya live?", user_id=U, config=cfg)
    assert kept.paths and kept.paths[0].answer == "Porto" and kept.context.startswith("Evidence")
    with pytest.raises(ValidationError, match="fallback_turns"):
        SearchConfig(fallback_turns=-1)
    m.close()


def test_turn_replies_follow_each_full_text_hit_with_the_next_turn_of_its_session() -> None:
    from datetime import datetime, timedelta, timezone

    from chronomem.model import Message

    m = Memory(":memory:", embedder=False)
    t = datetime(2023, 5, 27, 19, 18, tzinfo=timezone.utc)
    turns = [("s1", "Jon", "Congrats on the fashion internship! Where is the internship?"),
             ("s1", "Gina", "In the design department of an international company."),
             ("s1", "Jon", "Amazing."),
             ("s2", "Gina", "My internship starts Monday, fashion all day."),
             ("s2", "Jon", "Good luck!"),
             ("s3", "Gina", "The internship went well, I love fashion."),  # said after as_of
             ("s3", "Jon", "Told you.")]
    for i, (sid, who, text) in enumerate(turns):
        m.store.ensure_session(U, sid, started_at=t)
        m.store.add_messages(U, [Message(id=f"m{i}", user_id=U, session_id=sid, speaker=who, text=text,
                                         timestamp=t + timedelta(days=30 * int(sid[1:]), minutes=i),
                                         recorded_at=t, seq=i)])
    q = "Where is the fashion internship?"
    as_of = t + timedelta(days=61)  # sessions 1 and 2 only
    base = SearchConfig(embeddings=False, search_turns=4)
    plain = m.search(q, user_id=U, as_of=as_of, config=base)
    # the answer (m1) shares no word with the question; the index pairs each turn with the one
    # before it, so replies can be found through what was asked (m4 after m3), but here the turns
    # that say it and a later session's turn (m5, past as_of) fill the hits first
    assert plain.quoted_ids == ["m0", "m3", "m4"]
    with_replies = m.search(q, user_id=U, as_of=as_of, config=replace(base, turn_replies=True))
    ids = with_replies.quoted_ids  # each hit, in rank order, then its reply (m4 is m3's, already a hit)
    assert ids == ["m0", "m1", "m3", "m4"]
    assert "international company" in with_replies.context
    # replies count in search_turns; nothing said after as_of comes in
    three = m.search(q, user_id=U, as_of=as_of, config=replace(base, turn_replies=True, search_turns=3))
    assert three.quoted_ids == ids[:3]
    with pytest.raises(ValidationError, match="turn_replies"):
        SearchConfig(turn_replies="yes")  # type: ignore[arg-type]
    m.close()


def test_generated_message_ids_are_shortened_in_the_context() -> None:
    from chronomem.retrieve.serialize import short_id

    assert short_id("625f04bb9d2d4a238739c97fbf1a7607") == "625f04bb"
    assert short_id("D1:4") == "D1:4" and short_id("m1") == "m1"
    assert short_id("625F04BB9D2D4A238739C97FBF1A7607") == "625F04BB9D2D4A238739C97FBF1A7607"  # not ours


def test_source_turn_ids_of_a_derived_fact_are_its_supports_sources() -> None:
    from dataclasses import replace

    from chronomem.retrieve.search import source_turn_ids

    m = Memory(":memory:", embedder=False)
    m.add_facts([{"subject": "Rui", "relation": "sibling_of", "object": "Maya", "source_ids": ["m7", "m2"]},
                 {"subject": "Maya", "relation": "lives_in", "object": "Porto", "source_ids": ["m2"]}], user_id=U)
    res = m.search("Who is Maya's sibling?", user_id=U, config=CFG)
    derived = [f for f in res.facts if f.origin == Origin.DERIVED]
    assert derived and derived[0].support_ids
    assert source_turn_ids(m.store, U, derived) == ["m7", "m2"]
    # a derived fact that carries no sources of its own cites its supports' turns
    derived = [replace(derived[0], source_ids=[])]
    assert source_turn_ids(m.store, U, derived) == ["m7", "m2"]
    stored = m.facts(user_id=U, subject="Maya")
    assert source_turn_ids(m.store, U, [*derived, *stored]) == ["m7", "m2"]  # no repeats, first seen first
    m.close()


def test_a_superseded_version_is_in_no_history_and_derives_nothing(mem: Memory) -> None:
    # the same start said twice with two values: the later statement is a correction, Jonas is superseded
    mem.add_facts([{"subject": "Lena", "relation": "married_to", "object": "Jonas", "valid_from": "2015-06-01"}],
                  user_id="u")
    mem.add_facts([{"subject": "Lena", "relation": "married_to", "object": "Paul", "valid_from": "2015-06-01"}],
                  user_id="u")
    for q in ("Who has Jonas been married to over the years?", "Who is Jonas married to?"):
        res = mem.search(q, user_id="u")
        assert res.facts == [] and "Jonas" not in res.context, q  # before: "Jonas married to Lena [2015 -> now)"
    res = mem.search("Who has Lena been married to over the years?", user_id="u")
    assert [(f.subject, f.object) for f in res.facts] == [("Lena", "Paul")]


def test_a_hub_keeps_the_facts_the_question_asks_for_before_the_most_recent() -> None:
    """The user's own entity is a hub after months of talk: more facts than ``max_neighbours`` are read
    for it.  Cut by recency alone, her home (said in 2018) went behind 400 likes told since."""
    with Memory(":memory:", embedder=False) as m:
        m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01"},
                     {"subject": "Maya", "relation": "works_at", "object": "Acme", "valid_from": "2019-01-01"}],
                    user_id=U)
        m.add_facts([{"subject": "Maya", "relation": "likes", "object": f"song {i}", "valid_from": "2024-01-01"}
                     for i in range(400)], user_id=U)
        assert CFG.max_neighbours < 402
        home = search(m, "Where does Maya live?")
        assert [(f.relation, f.object) for f in home.facts][:1] == [("lives_in", "Porto")]
        assert home.trace.stats["facts_read"] >= 402  # every fact of the hub was read, then cut
        job = search(m, "Where does Maya work?")
        assert [(f.relation, f.object) for f in job.facts][:1] == [("works_at", "Acme")]
        songs = search(m, "What songs does Maya like?").facts
        assert songs and {f.relation for f in songs} == {"likes"}  # the hub's other facts still answer


@pytest.mark.parametrize("per_batch", [150, 250])  # 452 facts: read whole, then cut; 752: ranked on heads
def test_a_hub_is_cut_on_its_heads_as_on_its_whole_facts(monkeypatch: pytest.MonkeyPatch, per_batch: int) -> None:
    """A hub far over ``max_neighbours`` is ranked on its facts' heads (``Store.fact_heads``) and only the
    kept ones read whole: the same facts in the same order as ranking every fact read whole, ties (one
    start, one batch) too."""
    from chronomem.retrieve.beam import BeamSearch

    compared: list[int] = []
    real = BeamSearch.neighbours

    def spy(self: BeamSearch, entity_ids: list[str]) -> None:
        real(self, entity_ids)
        for e in dict.fromkeys(entity_ids):
            whole = self.store.facts(self.user_id, touching=[e], min_confidence=self._min_conf())
            if len(whole) > self.cfg.max_neighbours:
                assert [f.id for f in self._neighbours[e]] == [f.id for f in self._keep_for_question(e, whole)]
                compared.append(len(whole))

    monkeypatch.setattr(BeamSearch, "neighbours", spy)
    with Memory(":memory:", embedder=False) as m:
        m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01"},
                     {"subject": "Rui", "relation": "sibling_of", "object": "Maya", "valid_from": "1990-01-01"}],
                    user_id=U)
        for batch in range(3):
            m.add_facts([{"subject": "Maya", "relation": "likes", "object": f"song {batch}-{i}",
                          "valid_from": "2024-01-01", "confidence": 0.4 if i % 7 == 0 else 0.9}
                         for i in range(per_batch)], user_id=U)
        heads = m.store.fact_heads
        read_heads: list[int] = []
        monkeypatch.setattr(m.store, "fact_heads", lambda *a, **kw: read_heads.append(1) or heads(*a, **kw))
        for q in ("Where does Maya live?", "Which song does Maya like?", "Who is Maya's brother?"):
            search(m, q)
    assert compared and min(compared) > CFG.max_neighbours
    assert bool(read_heads) == (3 * per_batch + 2 > 2 * CFG.max_neighbours)


def test_a_question_about_the_past_finds_what_ended_when_nothing_holds_now() -> None:
    """"Where did Tom work?" once every job of his ended: the versions that ended are searched (as "before"
    would ask), not nothing; a question in the present tense, or one about the past while something holds,
    reads what holds, as before."""
    with Memory(":memory:", embedder=False) as m:
        m.add_facts([{"subject": "Tom", "relation": "works_at", "object": "Acme", "valid_from": "2015-01-01",
                      "valid_to": "2019-01-01"},
                     {"subject": "Tom", "relation": "works_at", "object": "Globex", "valid_from": "2019-01-01",
                      "valid_to": "2022-01-01"}], user_id=U)
        res = m.search("Where did Tom work?", user_id=U, config=CFG)
        assert {f.object for f in res.facts} == {"Acme", "Globex"} and "Globex" in res.context
        assert any("the versions that ended searched" in n for n in res.trace.notes)
        assert m.search("Where does Tom work?", user_id=U, config=CFG).facts == []  # nothing holds now
        off = m.search("Where did Tom work?", user_id=U, config=replace(CFG, past_versions=False))
        assert off.facts == [] and off.context == ""
        m.add_facts([{"subject": "Tom", "relation": "works_at", "object": "Initech", "valid_from": "2023-01-01"}],
                     user_id=U)
        now = m.search("Where did Tom work?", user_id=U, config=CFG)
        assert [f.object for f in now.facts] == ["Initech"]  # what holds answers; "before" asks for the rest
    with pytest.raises(ValidationError):
        SearchConfig(past_versions="no")  # type: ignore[arg-type]
