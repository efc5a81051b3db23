"""Post-processing rules 8 (extraction method v5): typed facts the statement does not say.

Each statement below is one the 1.5B model wrote on LoCoMo conv-30 (one-call, fast-forward or the
AVX-512 build's replies, BENCHMARKS.md "v5"), with the typing it gave.  A ``works_at``, ``job_title``
or ``studies_at`` fact is single-valued: a wrong one closes the right one, so it needs a statement
that speaks of work, a role or study.  A shared photo is what it shows, not a thing its sharer owns.
"""

from __future__ import annotations

import pytest

from chronomem import Config, Memory
from chronomem.extract.line_observations import parse_line_observations
from chronomem.extract.observations import postprocess_observations, role_head, says_typed, shared_photo
from chronomem.model import Message

from test_extract_line_observations import fact
from test_extract_observations import msg
from test_extract_rules_v7 import ScriptedV1LLM


@pytest.mark.parametrize("relation, statement", [
    ("works_at", "Gina congratulated Jon on opening the dance studio and said it looks amazing."),
    ("works_at", "Jon said he's excited about the launch and that he's been working hard to make everything just right."),
    ("works_at", "Gina found the perfect spot for her store and expanded her clothing store."),
    ("works_at", "Jon agreed to show Gina a routine sometime."),
    ("works_at", "Gina and Jon are collaborating on creating cool content and managing social media accounts."),
    ("job_title", "Jon rehearsed with a small group of dancers after work."),
    ("job_title", "Gina worked with the artist to make it happen."),
    ("studies_at", "Gina used to compete in a few dance competitions and shows."),
])
def test_a_single_valued_fact_the_statement_does_not_say(relation: str, statement: str) -> None:
    assert not says_typed(relation, statement)


@pytest.mark.parametrize("relation, statement", [
    ("works_at", "Gina lost their job at Door Dash this month."),
    ("works_at", "Jon turned his love of dance into a business by working at a dance studio."),
    ("works_at", "Maya works for Acme as a data analyst."),
    ("works_at", "Sam was hired by Globex."),
    ("job_title", "Jon lost his job as a banker yesterday."),
    ("job_title", "Maya is a product manager now."),
    ("job_title", "Sam started working as a nurse."),
    ("studies_at", "Caroline is taking classes at the community college."),
    ("likes", "Gina likes contemporary dance too."),  # not a single-valued registry fact: no word needed
])
def test_a_single_valued_fact_the_statement_says(relation: str, statement: str) -> None:
    assert says_typed(relation, statement)


def test_role_head() -> None:
    assert role_head("group of dancers") == "group"
    assert role_head("small group Of dancers") == "small group"
    assert role_head("dance teacher") == "dance teacher"


@pytest.mark.parametrize("statement, shown", [
    ("Gina shares an image of three girls in ballet costumes sitting on a desk.",
     "three girls in ballet costumes sitting on a desk"),
    ("Gina shares a photo of a trophy with a glass globe on top, which is a reminder of the hard work.",
     "a trophy with a glass globe on top"),
    ("Jon shared a photo of a cartoon character with a quote about fear.", "a cartoon character with a quote about fear"),
    ("Gina shares a photo of a group of young women in ballet attire, bringing back memories.",
     "a group of young women in ballet attire"),
    ("Jon shares an image of himself performing a dance (2022).", "himself performing a dance"),
    ("Jon posted a picture of his friends at the beach.", "his friends at the beach"),  # friends are not owned
])
def test_what_a_shared_photo_shows(statement: str, shown: str) -> None:
    assert shared_photo(statement, "Gina" if statement.startswith("Gina") else "Jon") == shown


@pytest.mark.parametrize("statement, subject", [
    ("Jon shares an image of his new dance studio.", "Jon"),  # his own: the typed fact may be right
    ("Gina shared a photo of Gina's hoodie.", "Gina"),
    ("Jon got a photo from a dance competition last year.", "Jon"),  # got, not shared
    ("Gina likes the photos.", "Gina"),
])
def test_no_shared_photo(statement: str, subject: str) -> None:
    assert shared_photo(statement, subject) is None


def test_an_overlong_photo_description_is_cut_at_a_word() -> None:
    shown = shared_photo("Gina shares a photo of " + "a very long winding road " * 8 + "in spring.", "Gina")
    assert shown is not None and len(shown) <= 80 and shown.endswith(("road", "a", "very", "long", "winding"))


NUMBERED: dict[int, Message] = {
    1: msg(1, "Gina", "Wow, Jon, congrats on opening the dance studio! It looks amazing."),
    2: msg(2, "Jon", "Thanks! I rehearsed with a small group of dancers after work."),
    3: msg(3, "Gina", "Look at this! [shares an image: three girls in ballet costumes sitting on a desk]"),
    4: msg(4, "Jon", "Lost my job as a banker yesterday, but I got hired at Globex today."),
    5: msg(5, "Gina", "Here's my pup! [shares an image: her dog Max on a couch]"),
}
SLOTS = {"lines": [
    {"line": 1, "fact": fact("Gina congratulated Jon on opening the dance studio.", "Gina", "works_at", "the dance studio")},
    {"line": 2, "fact": fact("Jon rehearsed with a small group of dancers after work.", "Jon", "job_title",
                             "group of dancers")},
    {"line": 3, "fact": fact("Gina shares an image of three girls in ballet costumes sitting on a desk.", "Gina", "owns",
                             "the group of girls")},
    {"line": 4, "fact": fact("Jon lost his job as a banker yesterday and got hired at Globex today.", "Jon", "works_at",
                             "Globex")},
    {"line": 5, "fact": fact("Gina shares a photo of her dog Max on a couch.", "Gina", "has_pet", "Max")},
]}


def _typed(rules: int) -> dict[int, tuple[str, str, str]]:
    cands, _ = postprocess_observations(parse_line_observations(SLOTS), NUMBERED, trust_turn=True, rules=rules)
    return {i: (c.subject, c.relation, c.object) for i, c in enumerate(cands, 1)}


def test_rules_8_against_rules_7() -> None:
    v7, v8 = _typed(7), _typed(8)
    assert v7 == {1: ("Gina", "works_at", "the dance studio"), 2: ("Jon", "job_title", "group of dancers"),
                  3: ("Gina", "owns", "the group of girls"), 4: ("Jon", "works_at", "Globex"),
                  5: ("Gina", "has_pet", "Max")}
    # a catch-all fact's object is its statement: two statements that say different things about one
    # object stay two facts (the store keeps the first words of a fact said twice)
    assert v8 == {1: ("Gina", "did", "Gina congratulated Jon on opening the dance studio."),
                  2: ("Jon", "did", "Jon rehearsed with a small group of dancers after work."),
                  3: ("Gina", "shared_photo", "three girls in ballet costumes sitting on a desk"),
                  4: ("Jon", "works_at", "Globex"), 5: ("Gina", "has_pet", "Max")}


def test_rules_8_keep_the_statement_and_its_source() -> None:
    v7, _ = postprocess_observations(parse_line_observations(SLOTS), NUMBERED, trust_turn=True, rules=7)
    v8, notes = postprocess_observations(parse_line_observations(SLOTS), NUMBERED, trust_turn=True, rules=8)
    assert [(c.text, c.source_ids) for c in v8] == [(c.text, c.source_ids) for c in v7]
    assert any("owns → shared_photo" in n for n in notes)
    assert all(c.valid_to is None for c in v8 if c.relation == "shared_photo")


def test_two_catch_all_statements_about_one_thing_stay_two_facts() -> None:
    numbered = {1: msg(1, "Jon", "The dance studio opens tomorrow!"),
                2: msg(2, "Jon", "I've been working hard on the dance studio to make everything just right.")}
    slots = {"lines": [
        {"line": 1, "fact": fact("Jon's dance studio opens tomorrow.", "Jon", "did", "the dance studio")},
        {"line": 2, "fact": fact("Jon has been working hard to make the dance studio just right.", "Jon", "did",
                                 "the dance studio")},
    ]}
    v7, _ = postprocess_observations(parse_line_observations(slots), numbered, trust_turn=True, rules=7)
    v8, _ = postprocess_observations(parse_line_observations(slots), numbered, trust_turn=True, rules=8)
    assert [c.object for c in v7] == ["the dance studio"]  # the second is one (s, r, o) said again: dropped
    assert [c.object for c in v8] == ["Jon's dance studio opens tomorrow.",
                                      "Jon has been working hard to make the dance studio just right."]


#: Both of Jon's lines typed ``did the dance studio``.
DID_TWICE = [{"turns": [0], "subject": "I", "relation": "did", "object": "the dance studio"},
             {"turns": [1], "subject": "I", "relation": "did", "object": "the dance studio"}]


@pytest.mark.parametrize("method, kept", [("v4", 1), ("v5", 2), ("v6", 2), ("v7", 2), ("v8", 2)])
def test_the_memory_keeps_each_statement_about_one_thing(method: str, kept: int) -> None:
    turns = [{"id": "t1", "speaker": "Jon", "text": "The dance studio opens tomorrow!"},
             {"id": "t2", "speaker": "Jon", "text": "I painted the dance studio blue last night."}]
    with Memory(":memory:", llm=ScriptedV1LLM(DID_TWICE), config=Config(extraction=method)) as mem:
        mem.add(turns, user_id="u1", session_id="s1", timestamp="2023-06-19T10:00:00Z")
        facts = mem.history(user_id="u1")
    # v4: rules 7 drop the chunk's second statement as the same (s, r, o) said again, and its words with it
    assert len(facts) == kept
    assert any("painted" in f.text for f in facts) == (method != "v4")
    if method in ("v6", "v7", "v8"):  # rules 9-11 keep the short object: a node "the dance studio" reaches
        assert {f.object for f in facts} == {"the dance studio"}


def test_a_time_the_statement_retells_less_precisely_is_the_lines() -> None:
    from datetime import datetime, timezone

    friday = datetime(2023, 1, 20, 16, 4, tzinfo=timezone.utc)  # conv-30 session 1 was on a Friday
    numbered = {1: msg(1, "Gina", "Sounds great, Jon! Next Friday works. Let's boogie!", ts=friday)}
    slots = {"lines": [{"line": 1, "fact": fact("Jon and Gina plan to boogie on Friday.", "Gina", "plans_to", "boogie")}]}
    (v7,), _ = postprocess_observations(parse_line_observations(slots), numbered, trust_turn=True, rules=7)
    (v8,), _ = postprocess_observations(parse_line_observations(slots), numbered, trust_turn=True, rules=8)
    assert v7.text.endswith("(20 January 2023).")  # the Friday it was said on
    assert v8.text.endswith("(27 January 2023).") and v8.valid_from is not None and v8.valid_from.day == 27


def test_line_time_phrase_keeps_a_phrase_no_line_says_more_precisely() -> None:
    from chronomem.extract.observations import line_time_phrase

    lines = [msg(1, "Jon", "Lost my job as a banker yesterday, and last week was rough.")]
    assert line_time_phrase("yesterday", lines) == "yesterday"
    assert line_time_phrase("last week", lines) == "last week"
    assert line_time_phrase("week", lines) == "last week"
    assert line_time_phrase("on Monday", lines) == "on Monday"


def test_a_photo_statement_naming_the_other_speaker_follows_the_photos_line() -> None:
    numbered = {1: msg(1, "Gina", "Wow, way to go! [shares an image: a photo of a red dress with gold accents on a mannequin]"),
                2: msg(2, "Jon", "Looks great!")}
    slots = {"lines": [{"line": 1, "fact": fact("Jon shared a photo of a red dress with gold accents on a mannequin.",
                                                "Gina", "did", "red dress")}]}
    (v7,), _ = postprocess_observations(parse_line_observations(slots), numbered, trust_turn=True, rules=7)
    (v8,), notes = postprocess_observations(parse_line_observations(slots), numbered, trust_turn=True, rules=8)
    assert (v7.subject, v7.text) == ("Gina", "Jon shared a photo of a red dress with gold accents on a mannequin.")
    assert (v8.subject, v8.relation, v8.object) == ("Gina", "shared_photo", "a red dress with gold accents on a mannequin")
    assert v8.text == "Gina shared a photo of a red dress with gold accents on a mannequin."
    assert any("'Jon' → 'Gina'" in n for n in notes)


def test_rules_10_are_rules_7_with_statement_keyed_catch_all_facts() -> None:
    """v7: none of rules 8's typing — a shared photo stays what v4 made of it — but both statements kept."""
    numbered = {1: msg(1, "Gina", "Look at the girls in my class! [shares an image: three girls in ballet costumes]"),
                2: msg(2, "Jon", "The dance studio opens tomorrow!"),
                3: msg(3, "Jon", "I painted the dance studio blue last night.")}
    slots = {"lines": [
        {"line": 1, "fact": fact("Gina shares an image of three girls in ballet costumes.", "Gina", "owns",
                                 "the group of girls")},
        {"line": 2, "fact": fact("Jon's dance studio opens tomorrow.", "Jon", "did", "the dance studio")},
        {"line": 3, "fact": fact("Jon painted the dance studio blue.", "Jon", "did", "the dance studio")}]}
    by_rules = {r: postprocess_observations(parse_line_observations(slots), numbered, trust_turn=True, rules=r)[0]
                for r in (7, 8, 10)}
    assert [(c.relation, c.object) for c in by_rules[10]] == [
        ("owns", "the group of girls"), ("did", "the dance studio"), ("did", "the dance studio")]
    assert [c.relation for c in by_rules[7]] == ["owns", "did"]  # the second statement merged away
    assert by_rules[8][0].relation == "shared_photo"  # rules 8's typing, which rules 10 leave out
