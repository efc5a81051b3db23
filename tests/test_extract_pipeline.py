"""The write pipeline with a test-double LLM (no model): storage, idempotence, chunking,
graph updates through the core rules, failure marking, input validation."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

import pytest
from slot_replies import as_reply

from chronomem import Memory
from chronomem.errors import StructuredOutputError, ValidationError
from chronomem.extract import FuzzyEntityResolver, WritePipeline, normalize_messages
from chronomem.extract.pipeline import FAILED
from chronomem.providers.base import CallUsage, ChatResult
from chronomem.providers.modelset import ModelSet

UTC = timezone.utc
LINE = re.compile(r"^\[(\d+)\] ([^:]+): (.*)$")

# What the scripted "model" says for a turn text: (relation, object, time, ended, certainty)
SCRIPT: dict[str, list[tuple[str, str, str, bool, str]]] = {
    "I live in Berlin and work at Acme.": [("lives_in", "Berlin", "", False, "certain"),
                                           ("works_at", "Acme", "", False, "certain")],
    "My dog Pixel is the best.": [("has_pet", "Pixel", "", False, "certain")],
    "I moved to Munich last week.": [("lives_in", "Munich", "last week", False, "certain")],
    "I joined Globex in March.": [("works_at", "Globex", "in March", False, "certain")],
    "We had to rehome Pixel.": [("has_pet", "Pixel", "", True, "certain")],
    "I might move to Paris.": [("lives_in", "Paris", "", False, "uncertain")],
}


class ScriptedLLM:
    """A test double for the LLM protocol: reads the numbered transcript, answers from SCRIPT."""

    name = "scripted"
    context_window = 8192

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[dict[str, str]]] = []
        self.fail_on = fail_on

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: list[dict[str, str]], *, schema: Any = None, max_tokens: int = 512,
             temperature: float = 0.0, stop: Any = None, purpose: str = "", penalties: Any = None) -> ChatResult:
        self.calls.append(messages)
        assert schema is not None and purpose == "extract" and temperature == 0.0
        transcript = messages[-1]["content"]
        usage = CallUsage(prompt_tokens=100, completion_tokens=20, latency_s=0.01, purpose=purpose)
        if self.fail_on and self.fail_on in transcript.split("Turns:")[1]:
            err = StructuredOutputError("no valid structured output after 3 attempts", "{\"facts\": [")
            err.usage = usage  # type: ignore[attr-defined]
            raise err
        facts = []
        in_turns = False
        for line in transcript.splitlines():
            if line == "Turns:":
                in_turns = True
                continue
            m = LINE.match(line)
            if not (m and in_turns):
                continue
            for rel, obj, time, ended, cert in SCRIPT.get(m.group(3), []):
                facts.append({"turns": [int(m.group(1))], "subject": "I", "relation": rel, "object": obj,
                              "time": time, "ended": ended, "certainty": cert, "intent": "FACT"})
        return ChatResult(text="{}", usage=usage, data=as_reply(schema, transcript, facts))


@pytest.fixture()
def mem() -> Memory:
    m = Memory(":memory:", llm=ScriptedLLM())
    yield m
    m.close()


def conv(*texts: str, prefix: str = "t", ts: str = "2023-01-10T10:00:00Z") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "speaker": "Maya" if i % 2 == 0 else "Tom", "text": t, "timestamp": ts}
            for i, t in enumerate(texts)]


def test_add_stores_extracts_and_reports(mem: Memory) -> None:
    pipe = mem.write_pipeline()
    res = pipe.add(conv("I live in Berlin and work at Acme.", "Nice!", "My dog Pixel is the best."),
                   user_id="u1", session_id="s1")
    assert res.session_id == "s1" and res.messages_stored == 3 and res.messages_skipped == 0
    assert res.chunks == 1 and res.messages_extracted == 3 and res.ok
    assert sorted((f.subject, f.relation, f.object) for f in res.added) == [
        ("Maya", "has_pet", "Pixel"), ("Maya", "lives_in", "Berlin"), ("Maya", "works_at", "Acme")]
    assert all(f.origin.value == "stated" and f.source_ids for f in res.added)
    assert res.usage["calls"] == 1 and res.usage["prompt_tokens"] == 100
    assert res.warnings == []
    assert all(m.extracted for m in mem.store.messages("u1", session_id="s1"))


def test_re_adding_the_same_ids_costs_no_llm_call(mem: Memory) -> None:
    pipe = mem.write_pipeline()
    batch = conv("I live in Berlin and work at Acme.", "Nice!")
    pipe.add(batch, user_id="u1", session_id="s1")
    llm: ScriptedLLM = mem.llm  # type: ignore[assignment]
    before = len(llm.calls)
    again = pipe.add(batch, user_id="u1", session_id="s1")
    assert len(llm.calls) == before
    assert again.messages_stored == 0 and again.messages_skipped == 2 and again.chunks == 0
    assert len(mem.store.messages("u1")) == 2
    assert len(mem.history(user_id="u1")) == 2


def test_one_call_per_chunk_never_per_turn(mem: Memory) -> None:
    pipe = mem.write_pipeline(chunk_size=8, context=2)
    texts = [f"small talk {i}" for i in range(24)]
    res = pipe.add(conv(*texts), user_id="u1", session_id="s1")
    llm: ScriptedLLM = mem.llm  # type: ignore[assignment]
    assert res.chunks == len(llm.calls) == 3
    # chunks after the first show two context turns before the "Turns:" section
    second = llm.calls[1][-1]["content"]
    assert "Context:\n[0] Maya: small talk 6\n[1] Tom: small talk 7\nTurns:\n[2] Maya: small talk 8" in second
    # the system prompt (the cached prefix) is identical for every call
    assert len({c[0]["content"] for c in llm.calls}) == 1


def test_multi_session_evolution_through_the_core_rules(mem: Memory) -> None:
    pipe = mem.write_pipeline()
    pipe.add(conv("I live in Berlin and work at Acme.", "Cool.", "My dog Pixel is the best.", prefix="a",
                  ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
    res = pipe.add(conv("I moved to Munich last week.", "Wow.", "I joined Globex in March.", prefix="b",
                        ts="2023-06-14T10:00:00Z"), user_id="u1", session_id="s2")
    assert {f.object for f in res.closed} == {"Berlin", "Acme"}
    res3 = pipe.add(conv("We had to rehome Pixel.", "Sorry.", "I might move to Paris.", prefix="c",
                         ts="2023-09-01T10:00:00Z"), user_id="u1", session_id="s3")
    assert {f.object for f in res3.closed} == {"Pixel"}

    now = {(f.relation, f.object) for f in mem.facts(user_id="u1", subject="Maya")}
    assert now == {("lives_in", "Munich"), ("works_at", "Globex")}
    before = {(f.relation, f.object) for f in mem.facts(user_id="u1", subject="Maya", as_of="2023-02-01")}
    assert before == {("lives_in", "Berlin"), ("works_at", "Acme"), ("has_pet", "Pixel")}
    munich = next(f for f in mem.history(user_id="u1", relation="lives_in") if f.object == "Munich")
    assert munich.valid_from == datetime(2023, 6, 5, tzinfo=UTC)  # Monday of "last week"
    globex = next(f for f in mem.history(user_id="u1", relation="works_at") if f.object == "Globex")
    assert globex.valid_from == datetime(2023, 3, 1, tzinfo=UTC)
    paris = [f for f in mem.facts(user_id="u1", include_unstable=True) if f.object == "Paris"]
    assert len(paris) == 1 and paris[0].confidence < mem.config.theta_stable  # tentative, kept, unstable
    assert [f.object for f in mem.history(user_id="u1", relation="lives_in")] == ["Berlin", "Munich", "Paris"]


def test_malformed_output_keeps_messages_and_marks_the_chunk(mem: Memory) -> None:
    mem.use_models(llm=ScriptedLLM(fail_on="rehome"))
    pipe = mem.write_pipeline(chunk_size=2, context=0)
    res = pipe.add(conv("I live in Berlin and work at Acme.", "ok", "We had to rehome Pixel.", "sad"),
                   user_id="u1", session_id="s1")
    assert res.chunks == 2 and len(res.failed_chunks) == 1
    assert res.failed_chunks[0].message_ids == ["t2", "t3"]
    assert "StructuredOutputError" in res.failed_chunks[0].error
    assert res.usage["calls"] == 2  # the failed call's tokens are still counted
    assert any("re-extraction" in w for w in res.warnings)
    assert len(mem.store.messages("u1")) == 4  # nothing lost
    pending = mem.store.messages("u1", pending_only=True)
    assert [m.id for m in pending] == ["t2", "t3"]
    # a better model later: extract_pending retries exactly the failed chunk
    # (built from its parts, as a queue worker would: no Memory needed)
    better = ScriptedLLM()
    pipe2 = WritePipeline(store=mem.store, registry=mem.registry, graph=mem.graph,
                          models=ModelSet(llm=better), chunk_size=2, context=1)
    again = pipe2.extract_pending("u1")
    assert again.chunks == 1 and again.ok and again.messages_extracted == 2
    assert mem.store.messages("u1", pending_only=True) == []
    # the retried chunk got the preceding turn as context
    assert "Context:\n[0] Tom: ok" in better.calls[0][-1]["content"]


def test_buffered_add_then_extract_pending(mem: Memory) -> None:
    pipe = mem.write_pipeline()
    res = pipe.add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1", extract=False)
    assert res.chunks == 0 and res.messages_stored == 1
    assert mem.llm.calls == []  # type: ignore[attr-defined]
    done = pipe.extract_pending("u1", "s1")
    assert done.chunks == 1 and done.facts_added == 2 and done.session_ids == ["s1"]
    assert pipe.extract_pending("u1").chunks == 0


def test_missing_timestamp_uses_now_and_says_so(mem: Memory) -> None:
    res = mem.write_pipeline().add("I live in Berlin and work at Acme.", user_id="u1")
    assert res.session_id and any("no timestamp" in w for w in res.warnings)
    (m,) = mem.store.messages("u1")
    assert m.speaker == "user" and (datetime.now(UTC) - m.timestamp).total_seconds() < 60


def test_call_timestamp_and_per_message_override(mem: Memory) -> None:
    mem.write_pipeline().add(
        [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi", "timestamp": "2020-01-01"}],
        user_id="u1", session_id="s", timestamp="2023-05-08T13:56:00Z")
    a, b = sorted(mem.store.messages("u1"), key=lambda m: m.seq)
    assert a.timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert b.timestamp == datetime(2020, 1, 1, tzinfo=UTC) and b.speaker == "assistant"


def test_users_are_isolated(mem: Memory) -> None:
    pipe = mem.write_pipeline()
    pipe.add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s")
    assert mem.facts(user_id="u2") == [] and mem.store.messages("u2") == []


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([{"speaker": "A", "text": ""}], "messages[0].text"),
        ([{"speaker": "A", "text": "   "}], "messages[0].text"),
        ([{"speaker": "A", "text": 42}], "messages[0].text"),
        ([{"speaker": "A", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], "messages[0].content[0]"),
        ([{"speaker": "A", "text": "hi", "mood": "happy"}], "messages[0].mood"),
        ([{"text": "hi"}], "messages[0].speaker"),
        ([{"speaker": "", "text": "hi"}], "messages[0].speaker"),
        ([{"speaker": "A"}], "messages[0].text"),
        ([{"speaker": "A", "text": "hi", "timestamp": "yesterday-ish"}], "messages[0].timestamp"),
        ([{"speaker": "A", "text": "a", "id": "x"}, {"speaker": "B", "text": "b", "id": "x"}], "messages[1].id"),
        ([], "messages"),
        (42, "messages"),
        (["ok", 3], "messages[1]"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(mem: Memory, messages: Any, field: str) -> None:
    with pytest.raises(ValidationError) as ei:
        mem.write_pipeline().add(messages, user_id="u1", session_id="s1")
    assert ei.value.field == field
    assert mem.store.messages("u1") == [] and mem.store.sessions("u1") == []


def test_bad_user_and_session_ids(mem: Memory) -> None:
    with pytest.raises(ValidationError) as ei:
        mem.write_pipeline().add("hi", user_id="")
    assert ei.value.field == "user_id"
    with pytest.raises(ValidationError) as ei:
        mem.write_pipeline().add("hi", user_id="u", session_id="  ")
    assert ei.value.field == "session_id"
    with pytest.raises(ValidationError) as ei:
        mem.write_pipeline().add("hi", user_id="u", timestamp="not a time")
    assert ei.value.field == "timestamp"


def test_normalize_accepts_openai_text_parts_and_name() -> None:
    (m,) = normalize_messages([{"role": "user", "name": "Maya",
                                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])
    assert (m.speaker, m.text) == ("Maya", "a\nb")


def test_failed_state_is_pending_in_the_store(mem: Memory) -> None:
    mem.write_pipeline().add(conv("x"), user_id="u1", session_id="s", extract=False)
    mem.store.mark_extracted("u1", ["t0"], FAILED)
    assert [m.id for m in mem.store.messages("u1", pending_only=True)] == ["t0"]


# ------------------------------------------------------------------ the stronger entity resolver


def test_fuzzy_resolver_merges_variants_within_a_user_only(mem: Memory) -> None:
    r = FuzzyEntityResolver(mem.store)
    nyc = r.resolve("u1", "New York City")
    assert r.resolve("u1", "NYC").id == nyc.id  # acronym
    assert r.resolve("u1", "the new york city").id == nyc.id  # article/case variant
    assert r.lookup("u1", ["NYC"]) == {"NYC": nyc.id}  # recorded as an alias: now exact
    assert r.resolve("u2", "NYC").id != nyc.id  # never across users
    gg = r.resolve("u1", "Golden Gate Bridge")
    assert r.resolve("u1", "Golden Gate Brigde").id == gg.id  # typo, long name
    anna = r.resolve("u1", "Anna")
    assert r.resolve("u1", "Anne").id != anna.id  # short names never fuzzy-merge
    assert r.resolve("u1", "Paris", create=False) is None


def test_fuzzy_resolver_refuses_ambiguous_matches(mem: Memory) -> None:
    r = FuzzyEntityResolver(mem.store)
    a = r.resolve("u1", "Los Angeles")
    b = r.resolve("u1", "Lake Arrowhead")
    la = r.resolve("u1", "LA")
    assert la.id not in {a.id, b.id}


def test_fuzzy_resolver_plugs_into_the_graph(mem: Memory) -> None:
    mem.graph.resolver = FuzzyEntityResolver(mem.store)
    mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "New York City",
                    "valid_from": "2020-01-01"}], user_id="u1")
    rep = mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "NYC",
                          "valid_from": "2021-01-01"}], user_id="u1")
    assert rep.added == [] and len(rep.reinforced) == 1


def test_fuzzy_resolver_never_merges_names_with_different_numbers(mem: Memory) -> None:
    for p in range(3):
        for i in range(12):
            mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"City-{p}-{i}"}], user_id="u1")
    names = sorted(e.name for e in mem.entities(user_id="u1") if e.name.startswith("City"))
    assert len(names) == 36
    assert all(not e.aliases for e in mem.entities(user_id="u1"))
    mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "Route 66"},
                   {"subject": "Maya", "relation": "likes", "object": "Route 67"}], user_id="u1")
    assert {"Route 66", "Route 67"} <= {e.name for e in mem.entities(user_id="u1")}


NAMES_WITH_ANOTHER_ENDING = [("Daniel", "Daniela"), ("Michael", "Michaela"), ("Christian", "Christiana"),
                             ("Stefan", "Stefani"), ("Georgia", "Georgina"), ("Danielle", "Daniele"),
                             ("Julian", "Juliana"), ("Ludwig", "Ludwiga")]


@pytest.mark.parametrize(("first", "second"), NAMES_WITH_ANOTHER_ENDING)
def test_a_name_with_another_ending_is_another_person(mem: Memory, first: str, second: str) -> None:
    """difflib rates "Daniel"/"Daniela" 0.92, the fuzzy threshold; a name's ending tells people apart, so the
    second person's home, told in a later call, must not close the first's."""
    mem.add_facts([{"subject": first, "relation": "lives_in", "object": "Paris", "valid_from": "2020-01-01"}],
                  user_id="u1")
    rep = mem.add_facts([{"subject": second, "relation": "lives_in", "object": "Rome",
                          "valid_from": "2021-01-01"}], user_id="u1")
    assert rep.closed == []
    assert [(f.subject, f.object) for f in mem.facts(user_id="u1", relation="lives_in")] == [
        (first, "Paris"), (second, "Rome")]
    assert all(not e.aliases for e in mem.entities(user_id="u1"))


def test_a_typo_inside_a_word_still_joins_its_entity(mem: Memory) -> None:
    mem.add_facts([{"subject": "Jennifer Hawthorne", "relation": "lives_in", "object": "Paris"}], user_id="u1")
    mem.add_facts([{"subject": "Jenifer Hawthorne", "relation": "works_at", "object": "Acme"}], user_id="u1")
    assert {f.subject for f in mem.facts(user_id="u1")} == {"Jennifer Hawthorne"}
