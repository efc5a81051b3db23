"""Extraction v3: one grammar-fixed slot per line (:mod:`chronomem.extract.line_observations`)."""

from __future__ import annotations

import functools
import json
from datetime import datetime, timezone
from typing import Any

import pydantic
import pytest

from chronomem import Memory
from chronomem.extract.line_observations import (
    layout_for,
    LineObservationExtractor,
    parse_line_observations,
    schema_for_lines,
)
from chronomem.extract.observations import RELATIONS, system_prompt
from chronomem.extract.observations import postprocess_observations as _postprocess
from chronomem.model import Message
from chronomem.providers.base import CallUsage, ChatResult

from test_extract_observations import NUMBERED as V2_NUMBERED
from test_extract_observations import REF, UTC, msg

#: These tests document the rules of the default method (v4: rules 7); rules 8 (v5) are in
#: test_extract_rules_v8.py.
postprocess_observations = functools.partial(_postprocess, rules=7)

NUMBERED = {**V2_NUMBERED, 4: msg(4, "Jon", "Sorry to hear that! Dancing is my passion, it makes me happy.")}


def fact(statement: str, subject: str, relation: str, obj: str, ended: bool = False) -> dict[str, Any]:
    return {"statement": statement, "subject": subject, "relation": relation, "object": obj, "ended": ended}


def extract(numbered: dict[int, Message], *slots: tuple[int, dict[str, Any] | None]) -> tuple[list[Any], list[str]]:
    """The v3 post-processing of a reply with these (line, fact) slots."""
    obs = parse_line_observations({"lines": [{"line": n, "fact": f} for n, f in slots]})
    return postprocess_observations(obs, numbered, trust_turn=True)


def test_schema_has_one_slot_per_line_with_the_line_number_fixed() -> None:
    s = schema_for_lines([2, 3, 4])
    arr = s["properties"]["lines"]
    assert arr["minItems"] == arr["maxItems"] == 3
    assert [slot["properties"]["line"] for slot in arr["prefixItems"]] == [{"const": 2}, {"const": 3}, {"const": 4}]
    fact_schema = arr["prefixItems"][0]["properties"]["fact"]["anyOf"]
    assert fact_schema[0] == {"type": "null"}
    assert fact_schema[1]["properties"]["relation"]["enum"] == list(RELATIONS)
    json.dumps(s)  # plain JSON: the provider turns it into a grammar


def test_the_schema_compiles_to_a_llama_grammar() -> None:
    xllamacpp = pytest.importorskip("xllamacpp")
    grammar = xllamacpp.json_schema_to_grammar(json.dumps(schema_for_lines([1, 2])))
    if grammar.startswith("%llguidance"):  # PyPI's wheel: the schema itself, held by llguidance
        assert "prefixItems" in grammar
    else:  # built without llguidance (scripts/native-llama.sh): a GBNF grammar with one rule per slot
        assert "root ::=" in grammar and "lines-tuple-0" in grammar and "lines-tuple-1" in grammar


def test_parse_keeps_filled_slots_with_their_line_and_drops_nulls_and_repeats() -> None:
    reply = {"lines": [
        {"line": 1, "fact": None},
        {"line": 2, "fact": fact("Jon lost his job as a banker yesterday.", "Jon", "lost", "job as a banker")},
        {"line": 3, "fact": fact("Jon lost his job as a banker yesterday.", "Jon", "lost", "job as a banker")},
        {"line": 4, "fact": fact("", "Jon", "likes", "dancing")},
    ]}
    obs = parse_line_observations(reply)
    assert [(o.turn, o.statement) for o in obs] == [(2, "Jon lost his job as a banker yesterday.")]


def test_parse_rejects_a_reply_that_is_not_slots() -> None:
    with pytest.raises(pydantic.ValidationError):
        parse_line_observations({"lines": "nothing"})


def test_the_slot_line_is_the_source_even_when_another_line_shares_more_words() -> None:
    # Gina's line 3 repeats "job" and "lost"; the statement was written in line 2's slot
    cands, _ = extract(NUMBERED,
        (2, fact("Jon lost his job as a banker yesterday and wants his own business.", "Jon", "lost",
                 "job as a banker", True)),
        (4, fact("Jon's passion is dancing; it makes him happy.", "Jon", "likes", "dancing")))
    by_text = {c.text.split(" (")[0]: c for c in cands}
    assert by_text["Jon lost his job as a banker yesterday and wants his own business"].source_ids[0] == "D1:2"
    assert by_text["Jon's passion is dancing; it makes him happy."].source_ids == ["D1:4"]
    banker = by_text["Jon lost his job as a banker yesterday and wants his own business"]
    assert (banker.relation, banker.object, banker.valid_to) == ("job_title", "banker", datetime(2023, 1, 19, tzinfo=UTC))


def test_a_slot_statement_its_line_does_not_support_is_regrounded_or_dropped() -> None:
    cands, notes = extract(
        NUMBERED,
        # written in the greeting's slot, but line 3 says it
        (1, fact("Gina lost her job at Door Dash this month.", "Gina", "works_at", "Door Dash", True)),
        # nothing in the chunk says it
        (4, fact("Jon lives in Portugal.", "Jon", "lives_in", "Portugal")))
    assert [(c.object, c.source_ids) for c in cands] == [("Door Dash", ["D1:3"])]
    assert any("Portugal" in n for n in notes)


def scripted_lines(messages: list[dict[str, str]], script: dict[str, dict[str, Any]]) -> list[tuple[int, dict[str, Any] | None]]:
    """Each line under "Turns" of the user message: its number and the SCRIPT's fact for its text (or None)."""
    out = []
    for line in messages[-1]["content"].split("Turns:")[1].strip().splitlines():
        n, _, rest = line.partition("] ")
        out.append((int(n.strip("[")), script.get(rest.split(": ", 1)[1])))
    return out


MAYA = [{"id": "a1", "speaker": "Maya", "text": "Hi!"},
        {"id": "a2", "speaker": "Maya", "text": "I work at Acme as a product manager."},
        {"id": "a3", "speaker": "Maya", "text": "I moved to Lisbon last month."}]


def add_maya(mem: Memory, prompt_version: str | None = None) -> Any:
    """Maya's three turns through the v3 write path (``prompt_version``: the method's default)."""
    pipe = mem.write_pipeline(method="v3", prompt_version=prompt_version)
    assert isinstance(pipe.extractor(), LineObservationExtractor)
    return pipe.add(MAYA, user_id="u1", session_id="s1", timestamp="2023-06-02T10:00:00Z")


class SlotLLM:
    """A test double for the v3 call: fills each line's slot from SCRIPT (by the line's text)."""

    name = "slots"
    context_window = 8192
    SCRIPT = {
        "I work at Acme as a product manager.": fact("Maya works at Acme as a product manager.", "Maya", "works_at", "Acme"),
        "I moved to Lisbon last month.": fact("Maya moved to Lisbon last month.", "Maya", "moved_to", "Lisbon"),
    }

    def __init__(self) -> None:
        self.schemas: list[dict[str, Any]] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    PROMPT = "observe_lines_v1"  # the prompt version the double expects and answers in

    def lines(self, told: list[tuple[int, dict[str, Any] | None]]) -> Any:
        """The reply's "lines" in the PROMPT's layout."""
        return [{"line": n, "fact": fact} for n, fact in told]

    def chat(self, messages: list[dict[str, str]], *, schema: Any = None, max_tokens: int = 512,
             temperature: float = 0.0, stop: Any = None, purpose: str = "", penalties: Any = None) -> ChatResult:
        self.schemas.append(schema)
        self.penalties = penalties
        assert messages[0]["content"] == system_prompt(RELATIONS, self.PROMPT)
        return ChatResult(text="{}", usage=CallUsage(prompt_tokens=50, completion_tokens=30, latency_s=0.01,
                                                      purpose=purpose),
                          data={"lines": self.lines(scripted_lines(messages, self.SCRIPT))})


def test_pipeline_v3_end_to_end() -> None:
    llm = SlotLLM()
    mem = Memory(":memory:", llm=llm)
    try:
        assert add_maya(mem).ok
        assert llm.penalties is None  # greedy slots (a penalty was tried, BENCHMARKS.md)
        lines = llm.schemas[0]["properties"]["lines"]["prefixItems"]
        assert [s["properties"]["line"]["const"] for s in lines] == [0, 1, 2]
        facts = {(f.relation, f.object): f for f in mem.facts(user_id="u1", subject="Maya")}
        assert facts[("works_at", "Acme")].source_ids == ["a2"]
        assert facts[("lives_in", "Lisbon")].text == "Maya moved to Lisbon last month (May 2023)."
    finally:
        mem.close()


def test_dialogue_acts_are_dropped_but_reported_content_and_plans_are_kept() -> None:
    from chronomem.extract.observations import dialogue_act

    assert dialogue_act("Jon asked Gina about the dance studio's flooring.", "Jon")
    assert not dialogue_act("Gina is encouraging Jon to push through.", "Gina")  # advice: LoCoMo records it
    assert dialogue_act("Jon is appreciating Gina's support.", "Jon")
    assert not dialogue_act("Jon said he lost his job as a banker.", "Jon")
    assert not dialogue_act("Jon and Gina agreed to dance on Friday.", "Jon")
    assert not dialogue_act("Gina asked her landlord for a longer lease.", "")  # no subject: nothing to check


def test_ungrounded_possessive_and_unnamed_place_objects_read_as_did() -> None:
    numbered = {
        1: msg(1, "Jon", "Hey Gina! Whoa, your store looks great! All your hard work really paid off."),
        2: msg(2, "Jon", "I'm looking for a spot for my studio. [shares an image: a bathroom with a blue floor]"),
        3: msg(3, "Gina", "I moved to Rome last spring, by the way."),
    }
    obs = parse_line_observations({"lines": [
        {"line": 1, "fact": fact("Jon thinks Gina's store looks great.", "Jon", "works_at", "Gina's store")},
        {"line": 2, "fact": fact("Jon shared a photo of a bathroom with a blue floor.", "Jon", "visited", "Paris")},
        {"line": 3, "fact": fact("Gina moved to Rome last spring.", "Gina", "moved_to", "Rome")},
    ]})
    cands, _ = postprocess_observations(obs, numbered, canonical=lambda r: "lives_in" if r == "moved_to" else r,
                                        trust_turn=True)
    got = {c.text.split(" (")[0]: (c.relation, c.object) for c in cands}
    assert got["Jon thinks Gina's store looks great."] == ("did", "Gina's store")
    assert got["Jon shared a photo of a bathroom with a blue floor."][0] == "did"  # "Paris" is nowhere
    assert got["Gina moved to Rome last spring"] == ("lives_in", "Rome")


def test_named_place_ignores_speaker_names_and_possessives() -> None:
    from chronomem.extract.observations import named_place

    assert named_place("Lisbon", ["Jon", "Gina"])
    assert not named_place("Gina's store", ["Jon", "Gina"])
    assert not named_place("the studio", ["Jon", "Gina"])


def test_ended_needs_words_that_say_so_and_never_closes_an_event() -> None:
    from chronomem.extract.observations import says_ended

    assert says_ended("Jon lost his job as a banker yesterday.") and says_ended("Ana no longer lives in Porto.")
    assert not says_ended("Gina likes contemporary dance too.")
    numbered = {
        1: msg(1, "Gina", "Contemporary is my fave too, and I just opened my online clothing store!"),
        2: msg(2, "Jon", "Losing my job gave me the push to start my own dance studio."),
        3: msg(3, "Jon", "Ha, ha! Thanks, Gina. Sounds familiar, who do those words belong to?"),
    }
    cands, notes = extract(numbered,
        (1, fact("Gina likes contemporary dance.", "Gina", "likes", "contemporary", True)),
        (2, fact("Jon lost his job and started his own dance studio.", "Jon", "started", "dance studio", True)),
        (3, fact("Jon says the words 'Ha, ha! Thanks, Gina.'", "Jon", "did", "words")))
    assert [(c.relation, c.valid_to) for c in cands] == [("likes", None), ("started", None)]
    assert any("bare quote" in n for n in notes)


def test_short_statements_are_dropped_and_praise_aimed_at_a_speaker_is_not_a_relation() -> None:
    numbered = {1: msg(1, "Jon", "Thanks, Gina! Your kind words mean a lot. I won't give up!"),
                2: msg(2, "Gina", "With your drive, Jon, your dance studio will be a huge success!")}
    cands, notes = extract(numbered,
        (1, fact("Jon won.", "Jon", "won", "Jon won")),
        (2, fact("Gina believes Jon's dance studio will be a huge success.", "Gina", "likes", "Jon")))
    assert [(c.relation, c.object) for c in cands] == [("did", "Jon")]
    assert any("too short" in n for n in notes)


def test_a_shared_photo_belongs_to_the_speaker_of_the_line_that_carries_it() -> None:
    numbered = {1: msg(1, "Gina", "Remember that staying positive is very important. [shares an image: a quote on a white sheet]"),
                2: msg(2, "Jon", "Thanks! I will.")}
    cands, notes = extract(numbered,
        (1, fact("Jon shares an image of a quote on a white sheet.", "Jon", "did", "quote")),
        (2, None))
    assert [(c.subject, c.text) for c in cands] == [("Gina", "Gina shares an image of a quote on a white sheet.")]


def test_quotes_in_the_transcript_are_single_and_quoted_speech_is_dropped() -> None:
    from chronomem.extract.chunking import Chunk

    ex = LineObservationExtractor(SlotLLM())
    messages, _ = ex.messages_for(Chunk(context=(), turns=(msg(1, "Jon", 'I\'m reading "The Lean Startup" now.'),)))
    assert "'The Lean Startup'" in messages[-1]["content"] and '"' not in messages[-1]["content"]
    numbered = {1: msg(1, "Gina", "Go Jon! Obstacles are inevitable, but you can do awesome things."),
                2: msg(2, "Gina", "Congrats, Jon! The studio looks amazing, so pumped for the launch tomorrow.")}
    cands, _ = extract(numbered,
        (1, fact("Gina says to Jon, 'Go Jon! Obstacles are inevitable.'", "Gina", "did", "Jon")),
        (2, fact("Gina congratulated Jon on the studio launch tomorrow.", "Gina", "did", "studio launch")))
    assert [c.object for c in cands] == ["studio launch"]  # congratulations name the news


# ----------------------------------------------------------------- the slim, flat slots (observe_lines_v3)

def test_flat_schema_has_no_subject_or_ended_and_still_fixes_each_line() -> None:
    s = schema_for_lines([2, 3], layout_for("observe_lines_v3"))
    slots = s["properties"]["lines"]["prefixItems"]
    assert len(slots) == 2
    for n, slot in zip((2, 3), slots):
        empty, told = slot["anyOf"]
        assert empty["properties"] == {"line": {"const": n}, "statement": {"type": "null"}}
        assert told["required"] == ["line", "statement", "relation", "object"]
        assert told["properties"]["relation"]["enum"] == list(RELATIONS)
        assert told["additionalProperties"] is False


def test_the_flat_schema_compiles_to_a_llama_grammar() -> None:
    xllamacpp = pytest.importorskip("xllamacpp")
    assert "statement" in xllamacpp.json_schema_to_grammar(json.dumps(schema_for_lines([1, 2], layout_for("observe_lines_v3"))))


def test_flat_slots_parse_with_ended_read_from_the_statement() -> None:
    obs = parse_line_observations({"lines": [
        {"line": 1, "statement": None},
        {"line": 2, "statement": "Jon lost his job as a banker yesterday.", "relation": "job_title", "object": "banker"},
        {"line": 3, "statement": "Gina likes contemporary dance.", "relation": "likes", "object": "contemporary dance"},
    ]})
    assert [(o.turn, o.subject, o.ended) for o in obs] == [(2, "", True), (3, "", False)]


def test_a_flat_statement_is_about_the_first_speaker_it_names_else_the_speaker_of_its_line() -> None:
    from chronomem.extract.observations import statement_subject

    assert statement_subject("Gina is proud of Jon for starting a business.", ["Jon", "Gina"]) == "Gina"
    assert statement_subject("The photo Jon shared shows his studio.", ["Gina", "Jon"]) == "Jon"
    assert statement_subject("The studio opens tomorrow.", ["Jon", "Gina"]) is None
    numbered = {1: msg(1, "Jon", "Gina, you're so proud of me, I can tell! The studio opens tomorrow."),
                2: msg(2, "Gina", "So proud of you, Jon! Starting a business takes guts.")}
    obs = parse_line_observations({"lines": [
        {"line": 1, "statement": "The dance studio opens tomorrow.", "relation": "did", "object": "the dance studio"},
        {"line": 2, "statement": "Gina is proud of Jon for starting a business.", "relation": "feels", "object": "proud"},
    ]})
    cands, _ = postprocess_observations(obs, numbered, trust_turn=True)
    assert [(c.subject, c.source_ids[0]) for c in cands] == [("Jon", "D1:1"), ("Gina", "D1:2")]


class FlatSlotLLM(SlotLLM):
    """SlotLLM answering in the flat layout of the slim prompt."""

    PROMPT = "observe_lines_v3"

    def lines(self, told: list[tuple[int, dict[str, Any] | None]]) -> Any:
        return [{"line": n, "statement": None} if not fact else
                {"line": n, **{k: fact[k] for k in ("statement", "relation", "object")}} for n, fact in told]


def test_pipeline_v3_with_the_slim_prompt_end_to_end() -> None:
    llm = FlatSlotLLM()
    mem = Memory(":memory:", llm=llm)
    try:
        assert add_maya(mem, "observe_lines_v3").ok
        slot = llm.schemas[0]["properties"]["lines"]["prefixItems"][0]
        assert "subject" not in slot["anyOf"][1]["properties"]
        facts = {(f.relation, f.object): f for f in mem.facts(user_id="u1", subject="Maya")}
        assert facts[("works_at", "Acme")].source_ids == ["a2"]
        assert facts[("lives_in", "Lisbon")].valid_to is None
    finally:
        mem.close()


class PrefillSlotLLM(SlotLLM):
    """SlotLLM with a prompt cache to fill, as the embedded model has."""

    def __init__(self) -> None:
        super().__init__()
        self.heads: list[list[dict[str, str]]] = []

    def prefill(self, head: list[dict[str, str]]) -> int:
        self.heads.append(head)
        return 600


def test_warm_prefills_the_extraction_system_prompt_that_every_call_then_starts_with() -> None:
    llm = PrefillSlotLLM()
    mem = Memory(":memory:", llm=llm)
    try:
        pipe = mem.write_pipeline(method="v3")
        assert pipe.warm() == 600
        assert llm.heads == [[{"role": "system", "content": system_prompt(RELATIONS, "observe_lines_v1")}]]
        assert add_maya(mem).ok  # SlotLLM asserts each call's system message is that same head
        assert mem.warm() == 600 and len(llm.heads) == 2  # Memory.warm: the configured method's prompt
    finally:
        mem.close()
    plain = Memory(":memory:", llm=SlotLLM())  # no prompt cache of its own to fill (a remote model)
    try:
        assert plain.warm() == 0
    finally:
        plain.close()


def test_serve_warm_prefills_in_the_background_and_logs_a_model_that_cannot_load(caplog: pytest.LogCaptureFixture) -> None:
    from chronomem.cli.serve import warm_in_background

    llm = PrefillSlotLLM()
    mem = Memory(":memory:", llm=llm)

    class BrokenLLM(PrefillSlotLLM):
        def prefill(self, head: list[dict[str, str]]) -> int:
            raise RuntimeError("llama.cpp could not load the model")

    broken = Memory(":memory:", llm=BrokenLLM())
    try:
        warm_in_background(mem).join(timeout=10)
        assert len(llm.heads) == 1
        with caplog.at_level("WARNING", logger="chronomem.jobs.worker"):
            warm_in_background(broken).join(timeout=10)
        assert "could not warm the model: llama.cpp could not load the model" in caplog.text
    finally:
        mem.close()
        broken.close()


# ----------------------------------------------------------------- the keyed slots (observe_lines_v4)

def test_every_prompt_version_has_a_layout_and_the_default_is_nested_with_all_fields() -> None:
    from chronomem.extract.line_observations import FULL_FIELDS, LAYOUTS, SLIM_FIELDS, SlotLayout
    from chronomem.extract.observations import STATEMENT_SCHEMA

    assert layout_for("observe_lines_v1") == SlotLayout("nested", FULL_FIELDS)
    assert schema_for_lines([4], layout_for("observe_lines_v1"))["properties"]["lines"]["prefixItems"][0][
        "properties"]["fact"]["anyOf"][1] == STATEMENT_SCHEMA  # the default layout's schema (cached replies' key)
    slim = schema_for_lines([4], layout_for("observe_lines_v6"))["properties"]["lines"]["prefixItems"][0]
    assert slim["properties"]["line"] == {"const": 4}
    assert slim["properties"]["fact"]["anyOf"][1]["required"] == list(SLIM_FIELDS)
    for version in LAYOUTS:  # each layout's prompt file exists and its example parses in that layout
        from chronomem.extract.observations import system_prompt as prompt_of

        example = prompt_of(RELATIONS, version).split("Example output:\n")[1]
        obs = parse_line_observations(json.loads(example))
        assert [o.turn for o in obs] == [1, 3, 4] and all(o.statement for o in obs)


def test_keyed_schema_has_a_slim_slot_per_line_number_in_order() -> None:
    s = schema_for_lines([2, 3, 10], layout_for("observe_lines_v4"))
    lines = s["properties"]["lines"]
    assert list(lines["properties"]) == ["2", "3", "10"] and lines["required"] == ["2", "3", "10"]
    assert lines["additionalProperties"] is False
    empty, told = lines["properties"]["10"]["anyOf"]
    assert empty == {"type": "null"}
    assert told["required"] == ["statement", "relation", "object"] and told["additionalProperties"] is False
    assert told["properties"]["relation"]["enum"] == list(RELATIONS)


def test_the_keyed_schema_compiles_to_a_llama_grammar() -> None:
    xllamacpp = pytest.importorskip("xllamacpp")
    assert "statement" in xllamacpp.json_schema_to_grammar(json.dumps(schema_for_lines([1, 2], layout_for("observe_lines_v4"))))


def test_keyed_slots_parse_with_their_line_and_ended_read_from_the_statement() -> None:
    obs = parse_line_observations({"lines": {
        "1": None,
        "2": {"statement": "Jon lost his job as a banker yesterday.", "relation": "job_title", "object": "banker"},
        "[3]": {"statement": "Gina likes contemporary dance.", "relation": "likes", "object": "contemporary dance"},
        "4": {"statement": "gina likes contemporary dance.", "relation": "likes", "object": "dance"},
    }})
    assert [(o.turn, o.subject, o.relation, o.ended) for o in obs] == [(2, "", "job_title", True), (3, "", "likes", False)]


@pytest.mark.parametrize("lines, wrong", [({"one": None}, "line number"), ({"1": "Gina dances."}, "fact object or null")])
def test_a_keyed_reply_with_a_bad_key_or_slot_is_rejected_naming_it(lines: dict[str, Any], wrong: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=wrong):
        parse_line_observations({"lines": lines})


class KeyedSlotLLM(SlotLLM):
    """SlotLLM answering in the keyed layout of the slim keyed prompt."""

    PROMPT = "observe_lines_v4"

    def lines(self, told: list[tuple[int, dict[str, Any] | None]]) -> Any:
        return {str(n): fact and {k: fact[k] for k in ("statement", "relation", "object")} for n, fact in told}


def test_pipeline_v3_with_the_keyed_prompt_end_to_end() -> None:
    llm = KeyedSlotLLM()
    mem = Memory(":memory:", llm=llm)
    try:
        assert add_maya(mem, "observe_lines_v4").ok
        slot = next(iter(llm.schemas[0]["properties"]["lines"]["properties"].values()))
        assert set(slot["anyOf"][1]["properties"]) == {"statement", "relation", "object"}
        facts = {(f.relation, f.object): f for f in mem.facts(user_id="u1", subject="Maya")}
        assert facts[("works_at", "Acme")].source_ids == ["a2"]
        assert facts[("lives_in", "Lisbon")].valid_to is None
    finally:
        mem.close()


def test_a_statement_about_a_context_line_cites_it_when_it_clearly_supports_it() -> None:
    # the model writes the last context line's news into the first slot of the chunk
    context = {0: msg(24, "Jon", "I rehearsed with a small group of dancers after work. We do contemporary and hip-hop.")}
    numbered = {1: msg(25, "Gina", "Wow, it looks awesome! Are they yours at the festival?"),
                2: msg(26, "Jon", "Yeah, that's us! We're performing at the festival next month.")}
    obs = parse_line_observations({"lines": [
        {"line": 1, "fact": fact("Jon rehearsed with a small group of dancers after work.", "Jon", "did", "dancers")},
        {"line": 2, "fact": fact("Gina met a famous chef in Milan.", "Gina", "met", "a famous chef")},
    ]})
    cands, notes = postprocess_observations(obs, numbered, trust_turn=True, context=context)
    assert [(c.subject, c.source_ids) for c in cands] == [("Jon", ["D1:24"])]
    assert any("grounded in context line D1:24" in n for n in notes)
    assert any("no turn supports: Gina met a famous chef" in n for n in notes)  # the context is no licence to invent
    plain, _ = postprocess_observations(obs, numbered, trust_turn=True)
    assert plain == []  # without the context lines nothing here supports either statement


def test_a_context_line_that_supports_a_statement_better_than_its_slot_comes_first() -> None:
    # conv-30 D6:15-17: the statement is the context line's, written into the slot of the reply
    context = {0: msg(15, "Jon", "It's great we both face the same challenges, it motivates us, like a partner to dance with!"),
               1: msg(16, "Gina", "Yep! We're both on different paths, but we can do it!")}
    numbered = {2: msg(17, "Jon", "Definitely! Having a partner back us up is great. Let's keep going together!")}
    statement = "Jon and Gina both face the same challenges, which motivates them like a dance partner."
    obs = parse_line_observations({"lines": [{"line": 2, "fact": fact(statement, "Jon", "did", "challenges")}]})
    cands, notes = postprocess_observations(obs, numbered, trust_turn=True, context=context,
                                           context_speakers=["Jon", "Gina"])
    assert [c.source_ids for c in cands] == [["D1:15", "D1:17"]]  # the slot's line stays cited, after it
    assert any("grounded in context line D1:15" in n for n in notes)
    # when the slot's line supports it about as well, the context line is not brought in
    numbered[2] = msg(17, "Jon", "We both face the same challenges; it motivates us like a dance partner would.")
    cands, notes = postprocess_observations(obs, numbered, trust_turn=True, context=context,
                                           context_speakers=["Jon", "Gina"])
    assert [c.source_ids for c in cands] == [["D1:17"]]
    assert not any("context line" in n for n in notes)


# ----------------------------------------------------------------- plain rows (observe_rows_v1)

def test_rows_grammar_fixes_one_row_per_line_and_the_relations() -> None:
    from chronomem.extract.line_observations import rows_grammar

    g = rows_grammar([3, 4])
    assert g.splitlines()[0] == "root ::= row3 row4"
    assert 'row3 ::= "3|" (nil | fact) "\\n"' in g
    rel = next(line for line in g.splitlines() if line.startswith("rel ::="))
    assert rel.count('"') == 2 * len(RELATIONS) and '"job_title"' in rel


def test_rows_parse_tolerates_what_no_grammar_held() -> None:
    from chronomem.extract.line_observations import parse_line_rows

    text = ("Here are the rows:\n"
            "3|Jon lost his job as a banker yesterday.|Jon|job_title|banker\n"
            "[4] | -\n"
            "5|Gina loves green tea.|Gina|adores|green tea\n"
            "6|Gina loves green tea.|Gina|likes|green tea\n"
            "7|Jon will open his dance studio next month.\n")
    obs = parse_line_rows(text)
    assert [(o.turn, o.subject, o.relation, o.object, o.ended) for o in obs] == [
        (3, "Jon", "job_title", "banker", True),   # "lost": ended, from the statement
        (5, "Gina", "did", "green tea", False),    # a relation outside the list reads as did
        (7, "", "did", "", False),                 # missing columns are empty; the repeat (6) is dropped
    ]


class RowsLLM(SlotLLM):
    """SlotLLM answering in rows, checking that the rows prompt and a grammar (no schema) were sent."""

    def chat(self, messages: list[dict[str, str]], *, schema: Any = None, max_tokens: int = 512,
             temperature: float = 0.0, stop: Any = None, purpose: str = "", penalties: Any = None,
             grammar: str | None = None) -> ChatResult:
        assert schema is None and grammar is not None
        self.schemas.append(grammar)
        assert messages[0]["content"] == system_prompt(RELATIONS, "observe_rows_v1")
        rows = [f"{n}|" + (f"{told['statement']}|{told['subject']}|{told['relation']}|{told['object']}" if told else "-")
                for n, told in scripted_lines(messages, self.SCRIPT)]
        return ChatResult(text="\n".join(rows) + "\n",
                          usage=CallUsage(prompt_tokens=50, completion_tokens=15, latency_s=0.01, purpose=purpose))


def test_pipeline_v3_with_rows_end_to_end() -> None:
    llm = RowsLLM()
    mem = Memory(":memory:", llm=llm)
    try:
        assert add_maya(mem, "observe_rows_v1").ok
        assert llm.schemas[0].startswith("root ::= row0 row1 row2")
        facts = {(f.relation, f.object): f for f in mem.facts(user_id="u1", subject="Maya")}
        assert facts[("works_at", "Acme")].source_ids == ["a2"]
        assert facts[("lives_in", "Lisbon")].text == "Maya moved to Lisbon last month (May 2023)."
    finally:
        mem.close()
