"""Extraction v2 (observation-first) without a model: parsing, turn-id validation, time
resolution into the statement, job typing, and the pipeline with a scripted LLM."""

from __future__ import annotations

import functools
import re
from datetime import datetime, timezone
from typing import Any

import pydantic
import pytest

from chronomem import Memory
from chronomem.errors import ValidationError
from chronomem.extract.observations import (
    OBSERVATION_SCHEMA,
    RELATIONS,
    Observation,
    max_statements,
    parse_observations,
    postprocess_observations as _postprocess,
    schema_for,
    source_turns,
    system_prompt,
    type_job,
    validate_turn,
    with_date,
)
from chronomem import timeexpr
from chronomem.timewords import counts_from_a_named_year, date_label, dated_text, find_time_phrase
from chronomem.model import Intent, Message
from chronomem.providers.base import CallUsage, ChatResult

#: These tests document the rules of the default method (v4: rules 7); rules 8 (v5) are in
#: test_extract_rules_v8.py.
postprocess_observations = functools.partial(_postprocess, rules=7)

UTC = timezone.utc
REF = datetime(2023, 1, 20, 16, 4, tzinfo=UTC)  # LoCoMo conv-30 session 1: "4:04 pm on 20 January, 2023"


def msg(i: int, speaker: str, text: str, ts: datetime = REF) -> Message:
    return Message(id=f"D1:{i}", user_id="u", session_id="s1", speaker=speaker, text=text, timestamp=ts,
                   recorded_at=ts, seq=i)


NUMBERED = {
    1: msg(1, "Gina", "Hey Jon! Good to see you. What's up? Anything new?"),
    2: msg(2, "Jon", "Hey Gina! Lost my job as a banker yesterday, so I'm gonna take a shot at starting my own business."),
    3: msg(3, "Gina", "Sorry about your job Jon! I also lost my job at Door Dash this month. What business are you thinking of?"),
    4: msg(4, "Jon", "I'm starting a dance studio 'cause I'm passionate about dancing."),
}


# ----------------------------------------------------------------- parsing

def test_parse_accepts_object_or_bare_list_and_drops_empty_and_repeated_statements() -> None:
    item = {"turn": 2, "statement": "Jon lost his job as a banker yesterday.", "subject": "Jon",
            "relation": "lost", "object": "job as a banker", "time": "yesterday", "ended": False}
    obs = parse_observations({"statements": [item, dict(item), {**item, "statement": "  "}]})
    assert [o.statement for o in obs] == ["Jon lost his job as a banker yesterday."]
    assert parse_observations([item])[0].turn == 2


def test_parse_normalises_turn_spellings() -> None:
    assert Observation(turn="[T3]", statement="x").turn == 3
    assert Observation(turn=[4, 5], statement="x").turn == 4
    assert Observation(turn=None, statement="x").turn is None


def test_parse_rejects_a_reply_that_is_not_statements() -> None:
    with pytest.raises(pydantic.ValidationError):
        parse_observations({"statements": "Jon lost his job"})


def test_parse_caps_a_looping_reply() -> None:
    items = [{"turn": 2, "statement": f"Jon likes thing {i}.", "subject": "Jon", "relation": "likes",
              "object": f"thing {i}", "time": "", "ended": False} for i in range(30)]
    assert len(parse_observations({"statements": items})) == 12


def test_the_statement_cap_follows_the_chunk_size() -> None:
    assert [max_statements(n) for n in (1, 4, 8, 12, 30)] == [3, 3, 6, 9, 12]
    assert schema_for(8)["properties"]["statements"]["maxItems"] == 6
    assert OBSERVATION_SCHEMA["properties"]["statements"]["maxItems"] == 12  # the constant is untouched


def test_schema_constrains_relations_to_the_vocabulary() -> None:
    rel = OBSERVATION_SCHEMA["properties"]["statements"]["items"]["properties"]["relation"]
    assert rel["enum"] == list(RELATIONS) and "job_title" in RELATIONS and "works_at" in RELATIONS
    assert "{{relations}}" not in system_prompt() and "job_title" in system_prompt()


# ----------------------------------------------------------------- turn ids

def obs(turn: int | None, statement: str, obj: str = "", **kw: Any) -> Observation:
    return Observation(turn=turn, statement=statement, subject=kw.get("subject", "Jon"),
                       relation=kw.get("relation", "did"), object=obj,
                       ended=kw.get("ended", False))


def test_a_correct_turn_id_is_kept() -> None:
    m = validate_turn(obs(2, "Jon lost his job as a banker yesterday.", "banker"), NUMBERED, ["Jon", "Gina"])
    assert m is not None and m.id == "D1:2"


def test_a_wrong_turn_id_is_regrounded_to_the_turn_that_says_it() -> None:
    # the model cited the question (turn 3) instead of the answer (turn 4)
    m = validate_turn(obs(3, "Jon is starting a dance studio.", "dance studio"), NUMBERED, ["Jon", "Gina"])
    assert m is not None and m.id == "D1:4"
    # out of range / a context turn number → regrounded too
    m = validate_turn(obs(9, "Gina lost her job at Door Dash.", "Door Dash"), NUMBERED, ["Jon", "Gina"])
    assert m is not None and m.id == "D1:3"


def test_a_statement_no_turn_supports_is_dropped() -> None:
    assert validate_turn(obs(2, "Jon lives in Portugal.", "Portugal"), NUMBERED, ["Jon", "Gina"]) is None
    # time words are no support: "yesterday" is in Jon's turn, the meeting is nowhere
    assert validate_turn(obs(1, "Gina met Jon yesterday.", "Jon", subject="Gina"), NUMBERED, ["Jon", "Gina"]) is None
    # speaker names alone are no support
    assert validate_turn(obs(1, "Jon and Gina.", "Gina"), NUMBERED, ["Jon", "Gina"]) is None


# ----------------------------------------------------------------- time

def test_find_time_phrase() -> None:
    assert find_time_phrase("Jon lost his job as a banker yesterday.") == "yesterday"
    assert find_time_phrase("Gina won first place last year.") == "last year"
    assert find_time_phrase("They met three weeks ago at a show.") == "three weeks ago"
    assert find_time_phrase("She has danced since 2015.") == "since 2015"
    assert find_time_phrase("Jon likes contemporary dance.") == ""


def test_find_time_phrase_reads_chat_time_under_the_state_rules() -> None:
    # short units, "couple", "X before last" and a season of last year (session 33): state rules only
    assert find_time_phrase("he moved there last yr", seasons=True) == "last yr"
    assert find_time_phrase("moved 2 yrs ago, right up in the hills", seasons=True) == "2 yrs ago"
    assert find_time_phrase("moved 2 yrs ago, right up in the hills") == ""
    assert find_time_phrase("we split up the summer before last", seasons=True) == "the summer before last"
    assert find_time_phrase("We've been together since spring last year", seasons=True) == "since spring last year"
    assert find_time_phrase("We've been together since spring last year") == "last year"


def test_the_year_after_counts_from_the_year_named_before_it() -> None:
    told = "Aroha and I got married in 2017 and moved to Blenheim the year after"
    assert find_time_phrase(told, seasons=True) == "in 2017"  # the first phrase is the wedding's
    assert find_time_phrase("moved to Blenheim the year after", seasons=True,
                            before="Aroha and I got married in 2017 and ") == "in 2018"
    assert find_time_phrase("The divorce went through the following year.", seasons=True,
                            before="We separated in 2021.") == "in 2022"
    # no year named: not the year after the one it was said in, so no time at all
    assert find_time_phrase("The divorce went through the next year, quietly", seasons=True) == ""
    assert counts_from_a_named_year("the next year") and not counts_from_a_named_year("next year")
    # "that summer": the summer of the year named before it
    assert find_time_phrase("that summer Clara and I moved to Braga", seasons=True,
                            before="I left KPMG in the spring of 2021, and ") == "in summer 2021"
    said = datetime(2023, 11, 18, tzinfo=UTC)
    assert dated_text("I left KPMG in the spring of 2021, and that summer we moved to Braga.", said) == (
        "I left KPMG in the spring of 2021, and that summer [summer 2021] we moved to Braga.")


def test_with_date_appends_the_absolute_date() -> None:
    text, r = with_date("Jon lost his job as a banker yesterday.", "yesterday", REF)
    assert text == "Jon lost his job as a banker yesterday (19 January 2023)."
    assert r is not None and r.start == datetime(2023, 1, 19, tzinfo=UTC)
    assert with_date("Gina lost her job this month", "this month", REF)[0] == "Gina lost her job this month (January 2023)."
    assert with_date("Jon likes jazz.", "", REF) == ("Jon likes jazz.", None)
    assert with_date("Jon went there recently.", "recently", REF) == ("Jon went there recently.", None)


def test_dated_text_writes_what_relative_time_words_stand_for() -> None:
    said = datetime(2024, 5, 18, 11, tzinfo=UTC)
    assert dated_text("Joon-ho and I moved to Ulaanbaatar two years ago.", said) == (
        "Joon-ho and I moved to Ulaanbaatar two years ago [about 18 May 2022].")
    # "in January" is the last January by then; "last year" the calendar year before
    assert dated_text("moved to santiago in january, we got married last year in cebu", said) == (
        "moved to santiago in january [January 2024], we got married last year [2023] in cebu")
    # a season whose year follows is dated by the year words, not as this year's season
    assert dated_text("We've been together since spring last year.", datetime(2015, 5, 20, tzinfo=UTC)) == (
        "We've been together since spring last year [since spring 2014].")
    assert dated_text("moved 2 yrs ago, right up in the hills", said) == (
        "moved 2 yrs ago [about 18 May 2022], right up in the hills")
    # words that count from a time the turn itself names are not dated from when it was said
    told = "After Mikko and I separated in 2021 I came back in the autumn."
    assert dated_text(told, said) == told
    # "the next year" is the year after the last one named (session 33), and left alone when none was
    assert dated_text(told + " The divorce went through the next year.", said) == (
        told + " The divorce went through the next year [2022].")
    assert dated_text("The divorce went through the next year, quietly.", said) == (
        "The divorce went through the next year, quietly.")
    # words that name their date, mean the day it was said, or resolve to nothing stay as they are
    for text in ("Our wedding was back in August 2022.", "I spent 2007 in Rome.", "Today I rest.",
                 "I went there recently.", ""):
        assert dated_text(text, said) == text


def test_time_words_said_as_a_figure_of_speech_give_no_date() -> None:
    said = datetime(2024, 5, 18, 11, tzinfo=UTC)
    for text in ("5 years already! feels like just yesterday I put this dress on!", "it seems like only yesterday",
                 "as if it was yesterday that we met"):
        assert dated_text(text, said) == text
        assert find_time_phrase(text, seasons=True) == ""
    # the same word said plainly, in the same line, is still dated
    assert dated_text("I moved in march last year, feels like yesterday", said) == (
        "I moved in march last year [March 2023], feels like yesterday")
    assert dated_text("as if it was yesterday we met, and I left yesterday", said) == (
        "as if it was yesterday we met, and I left yesterday [17 May 2024]")
    assert find_time_phrase("I went yesterday, like I said") == "yesterday"


def test_date_labels_by_granularity() -> None:
    def label(expr: str) -> str:
        r = timeexpr.resolve(expr, REF)
        assert r is not None
        return date_label(r)

    assert label("last week") == "the week of 9 January 2023"
    assert label("last year") == "2022"
    assert label("last summer") == "summer 2022"
    assert label("since 2019") == "since 2019"
    assert label("two days ago") == "about 18 January 2023"
    assert label("from 2016 to 2021") == "1 January 2016 to 1 January 2022"


# ----------------------------------------------------------------- typing rules

@pytest.mark.parametrize(("rel", "obj", "ended", "want"), [
    ("lost", "his job as a banker", False, ("job_title", "banker", True)),
    ("lost", "job at Door Dash", False, ("works_at", "Door Dash", True)),
    ("lost", "banker", False, ("job_title", "banker", True)),
    ("started", "a new job at Globex", False, ("works_at", "Globex", False)),
    ("works_at", "product manager", False, ("job_title", "product manager", False)),  # the demo's collision
    ("works_at", "Globex", False, ("works_at", "Globex", False)),
    ("job_title", "Globex", False, ("works_at", "Globex", False)),
    ("job_title", "a dance teacher", False, ("job_title", "dance teacher", False)),
    ("job_title", "passion", False, ("did", "passion", False)),
    ("likes", "contemporary dance", False, ("likes", "contemporary dance", False)),
])
def test_type_job_keeps_roles_and_employers_apart(rel: str, obj: str, ended: bool, want: tuple[str, str, bool]) -> None:
    assert type_job(rel, obj, ended) == want


def test_postprocess_builds_dated_facts_with_the_statement_as_text() -> None:
    observations = [
        obs(2, "Jon lost his job as a banker yesterday.", "his job as a banker", relation="lost", time="yesterday"),
        obs(3, "Gina lost her job at Door Dash this month.", "job at Door Dash", relation="lost", subject="I"),
        obs(4, "Jon is starting a dance studio.", "dance studio", relation="started"),
        obs(2, "Jon lives in Portugal.", "Portugal", relation="lives_in"),  # unsupported
    ]
    cands, notes = postprocess_observations(observations, NUMBERED)
    by = {c.source_ids[0]: c for c in cands}
    assert set(by) == {"D1:2", "D1:3", "D1:4"}
    jon = by["D1:2"]
    assert (jon.subject, jon.relation, jon.object, jon.valid_from) == ("Jon", "job_title", "banker", None)
    assert jon.valid_to == datetime(2023, 1, 19, tzinfo=UTC) and jon.intent == Intent.EVOLUTION
    assert jon.text == "Jon lost his job as a banker yesterday (19 January 2023)."
    gina = by["D1:3"]  # "I" is the speaker of the turn; the time comes from the statement
    assert (gina.subject, gina.relation, gina.object) == ("Gina", "works_at", "Door Dash")
    assert gina.valid_from is None and gina.valid_to == datetime(2023, 1, 1, tzinfo=UTC)  # ended this month
    assert gina.text.endswith("this month (January 2023).")
    assert by["D1:4"].valid_from == REF and by["D1:4"].valid_to is None
    assert any("Portugal" in n for n in notes)


def test_an_ending_wins_over_its_present_tense_copy_and_generic_pets_are_dropped() -> None:
    cands, notes = postprocess_observations([
        obs(None, "Jon lost his job as a banker yesterday.", "banker", relation="lost"),
        obs(None, "Jon is a banker.", "banker", relation="job_title"),
        obs(None, "Jon has a pet.", "pet", relation="has_pet", ended=True),
    ], NUMBERED)
    assert [(c.relation, c.object, c.valid_to is not None) for c in cands] == [("job_title", "banker", True)]


def test_a_statement_joining_two_turns_cites_both() -> None:
    numbered = {0: msg(5, "Gina", "Where did you open the dance studio?"),
                1: msg(6, "Jon", "I opened the dance studio downtown near the river."),
                2: msg(7, "Gina", "Cool!")}
    found = source_turns(obs(None, "Jon opened the dance studio downtown near the river.", "dance studio"),
                         numbered, ["Jon", "Gina"])
    # the question next to the answer shares the topic: cited after it (ADJACENT_SUPPORT)
    assert [m.id for m in found] == ["D1:6", "D1:5"]
    numbered[2] = msg(7, "Jon", "The dance studio opened downtown last week, right by the river.")
    found = source_turns(obs(None, "Jon opened the dance studio downtown near the river.", "dance studio"),
                         numbered, ["Jon", "Gina"])
    assert [m.id for m in found] == ["D1:6", "D1:7", "D1:5"]


def test_a_neighbouring_line_needs_less_support_than_a_distant_one() -> None:
    statement = obs(None, "Jon opened the dance studio downtown near the river.", "dance studio")
    answer = msg(6, "Jon", "I opened the dance studio downtown near the river.")
    question = "Where did you open the dance studio?"
    near = source_turns(statement, {0: msg(5, "Gina", question), 1: answer}, ["Jon", "Gina"])
    far = source_turns(statement, {0: msg(2, "Gina", question), 1: msg(3, "Gina", "Cool!"),
                                   2: msg(4, "Gina", "Nice."), 3: answer}, ["Jon", "Gina"])
    assert [m.id for m in near] == ["D1:6", "D1:5"]
    assert [m.id for m in far] == ["D1:6"]
    # a neighbour sharing one content word is no evidence
    lone = source_turns(statement, {0: msg(5, "Gina", "Dance is fun."), 1: answer}, ["Jon", "Gina"])
    assert [m.id for m in lone] == ["D1:6"]


def test_postprocess_uses_the_statement_when_the_object_is_empty_and_caps_plans() -> None:
    numbered = {5: msg(5, "Jon", "I'm gonna take a shot at starting my own business.")}
    cands, _ = postprocess_observations(
        [obs(5, "Jon plans to start his own business.", "", relation="plans_to")], numbered)
    (c,) = cands
    assert c.object == "Jon plans to start his own business." and c.confidence < 0.6


# ----------------------------------------------------------------- the pipeline, scripted model

LINE = re.compile(r"^\[(\d+)\] ([^:]+): (.*)$")
SCRIPT: dict[str, list[dict[str, Any]]] = {
    "I work at Acme as a product manager.": [
        {"statement": "Maya works at Acme.", "subject": "Maya", "relation": "works_at", "object": "Acme"},
        {"statement": "Maya is a product manager.", "subject": "Maya", "relation": "works_at",
         "object": "product manager"}],
    "I moved to Globex last week.": [
        {"statement": "Maya moved to Globex last week.", "subject": "Maya", "relation": "works_at",
         "object": "Globex"}],
}


class ObservingLLM:
    """A test double: answers the observation schema from SCRIPT, citing the line's number."""

    name = "observing"
    context_window = 8192

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: list[dict[str, str]], *, schema: Any = None, max_tokens: int = 512,
             temperature: float = 0.0, stop: Any = None, purpose: str = "", penalties: Any = None) -> ChatResult:
        assert schema["properties"]["statements"]["items"] is OBSERVATION_SCHEMA["properties"]["statements"]["items"]
        assert purpose == "extract"
        self.calls += 1
        out = []
        for line in messages[-1]["content"].split("Turns:")[1].splitlines():
            m = LINE.match(line)
            if m:
                out += [{"turn": int(m.group(1)), "time": "", "ended": False, **s} for s in SCRIPT.get(m.group(3), [])]
        return ChatResult(text="{}", usage=CallUsage(prompt_tokens=50, completion_tokens=30, latency_s=0.01,
                                                      purpose=purpose), data={"statements": out})


def test_pipeline_v2_keeps_employer_and_title_apart_and_closes_the_employer() -> None:
    llm = ObservingLLM()
    mem = Memory(":memory:", llm=llm)
    try:
        pipe = mem.write_pipeline(method="v2")
        pipe.add([{"id": "a1", "speaker": "Maya", "text": "I work at Acme as a product manager."}],
                 user_id="u1", session_id="s1", timestamp="2023-01-02T10:00:00Z")
        pipe.add([{"id": "b1", "speaker": "Maya", "text": "I moved to Globex last week."}],
                 user_id="u1", session_id="s2", timestamp="2023-03-15T10:00:00Z")
        current = {(f.relation, f.object) for f in mem.facts(user_id="u1", subject="Maya")}
        assert current == {("works_at", "Globex"), ("job_title", "product manager")}
        acme = next(f for f in mem.history(user_id="u1") if f.object == "Acme")
        assert acme.valid_to == datetime(2023, 3, 6, tzinfo=UTC)  # Monday of "last week"
        globex = next(f for f in mem.history(user_id="u1") if f.object == "Globex")
        assert globex.text == "Maya moved to Globex last week (the week of 6 March 2023)."
        assert globex.source_ids == ["b1"] and llm.calls == 2
    finally:
        mem.close()


def test_unknown_method_is_refused_by_name() -> None:
    mem = Memory(":memory:", llm=ObservingLLM())
    try:
        with pytest.raises(ValidationError, match="method"):
            mem.write_pipeline(method="v99")
    finally:
        mem.close()


def test_memory_selects_the_method_from_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.config import Config

    monkeypatch.setenv("CHRONOMEM_EXTRACTION", "v2")
    mem = Memory(":memory:", llm=ObservingLLM())
    try:
        assert mem.config.extraction == "v2" and mem.pipeline.method == "v2"
    finally:
        mem.close()
    with pytest.raises(ValidationError, match="extraction"):
        Config(extraction="v99")


def test_swapped_speakers_are_put_back_on_the_line_that_says_it() -> None:
    cands, notes = postprocess_observations(
        [obs(None, "Gina lost her job as a banker yesterday.", "banker", subject="Gina", relation="lost")],
        NUMBERED)
    (c,) = cands
    assert c.subject == "Jon" and c.source_ids == ["D1:2"]
    assert c.text == "Jon lost their job as a banker yesterday (19 January 2023)."
    # a line addressed to the other speaker keeps its subject
    numbered = {0: msg(8, "Gina", "Your dance studio looks amazing, Jon!")}
    (c,) = postprocess_observations([obs(None, "Jon's dance studio looks amazing.", "dance studio")], numbered)[0]
    assert c.subject == "Jon"


def test_person_relations_need_a_person() -> None:
    numbered = {0: msg(9, "Gina", "My team and my sister Ana won first place at regionals.")}
    cands, _ = postprocess_observations([
        obs(None, "Gina won first place with her team.", "team", subject="Gina", relation="partner_of"),
        obs(None, "Gina's sister is Ana.", "Ana", subject="Gina", relation="sibling_of"),
    ], numbered)
    assert {(c.relation, c.object) for c in cands} == {("did", "team"), ("sibling_of", "Ana")}


def test_grounding_prefers_the_subjects_own_line_and_joint_statements_keep_their_subject() -> None:
    numbered = {0: msg(11, "Gina", "Let's explore some new dance moves!"),
                1: msg(12, "Jon", "Wanna see my new dance moves next Fri?")}
    found = source_turns(obs(None, "Jon wants to show his new dance moves next Friday.", "dance moves"),
                         numbered, ["Jon", "Gina"])
    assert found[0].id == "D1:12"
    # the other speaker's line, not first person: no swap
    (c,) = postprocess_observations(
        [obs(None, "Jon wants to explore new dance moves.", "dance moves")], {0: numbered[0]})[0]
    assert c.subject == "Jon"
    (c,) = postprocess_observations(
        [obs(None, "Gina and Jon are planning a dance session soon.", "dance session", subject="Gina",
             relation="plans_to")], {0: msg(11, "Gina", "We should plan a dance session soon!")})[0]
    assert c.subject == "Gina" and c.text.startswith("Gina and Jon")


def test_a_bare_job_object_is_read_from_the_statement() -> None:
    cands, _ = postprocess_observations([
        obs(None, "Jon lost his job as a banker yesterday.", "job", relation="lost"),
        obs(None, "Gina lost her job at Door Dash this month.", "her job", subject="Gina", relation="lost"),
    ], NUMBERED)
    assert {(c.subject, c.relation, c.object, c.valid_to is not None) for c in cands} == {
        ("Jon", "job_title", "banker", True), ("Gina", "works_at", "Door Dash", True)}


def test_residence_needs_a_named_place_and_a_missing_object_reads_as_did() -> None:
    numbered = {0: msg(9, "Jon", "My dance studio in Berlin is finally open, come see the studio!")}
    cands, _ = postprocess_observations([
        obs(None, "Jon lives in Berlin.", "Berlin", relation="lives_in"),
        obs(None, "Jon's dance studio is open.", "studio", relation="lives_in"),
        obs(None, "Jon invites everyone to see his dance studio.", "", relation="lives_in"),
    ], numbered)
    assert [(c.relation, c.object) for c in cands] == [
        ("lives_in", "Berlin"), ("did", "studio"), ("did", "Jon invites everyone to see his dance studio.")]


def test_employers_and_schools_must_look_like_organisations() -> None:
    numbered = {0: msg(10, "Jon", "I'm working on my biz plan. I also work at Globex and at a bakery, and I study at Berlin University and my notes.")}
    cands, _ = postprocess_observations([
        obs(None, "Jon is working on his biz plan.", "biz plan", relation="works_at"),
        obs(None, "Jon works at Globex.", "Globex", relation="works_at"),
        obs(None, "Jon works at a bakery.", "a bakery", relation="works_at"),
        obs(None, "Jon studies at Berlin University.", "Berlin University", relation="studies_at"),
        obs(None, "Jon studies his notes on the plan.", "notes", relation="studies_at"),
    ], numbered)
    assert [c.relation for c in cands] == ["did", "works_at", "works_at", "studies_at", "did"]
