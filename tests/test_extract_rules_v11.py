"""Post-processing rules 11 (extraction method v8): reactions dropped, typed facts checked against
their statements, shared photos kept as catch-all facts.

The statements are ones the 1.5B model wrote on LoCoMo conv-30 (the one-call replies, BENCHMARKS.md
"v8"); two raters judging every fact of that run called reactions small talk, and ``owns``/``is_a``/
``likes`` facts the statement does not say wrong, while the statement itself was right.
"""

from __future__ import annotations

import pytest

from chronomem.extract.line_observations import parse_line_observations
from chronomem.extract.observations import postprocess_observations, reaction, says_typed
from chronomem.model import Message

from test_extract_line_observations import fact
from test_extract_observations import msg

SPEAKERS = ("Jon", "Gina")


@pytest.mark.parametrize("statement, subject", [
    ("Jon agrees with Gina's excitement about the grand opening.", "Jon"),
    ("Gina agrees with Jon's opinion on dancing.", "Gina"),
    ("Gina is inspired by Jon's success and encourages him to keep going.", "Gina"),
    ("Jon is grateful for Gina's support and encourages her to keep her positive outlook.", "Jon"),
    ("Gina is proud of Jon for starting his own business!", "Gina"),
    ("Gina was impressed by Jon's dancing routines.", "Gina"),
    ("Gina is happy to see Jon's words motivating him.", "Gina"),
    ("Jon said thanks, Gina - really appreciate your words!", "Jon"),
    ("Gina can't wait to see Jon's new studio.", "Gina"),
])
def test_a_reaction_to_the_other_speaker(statement: str, subject: str) -> None:
    assert reaction(statement, subject, SPEAKERS)


@pytest.mark.parametrize("statement, subject", [
    ("Jon is excited about the launch of his dance studio.", "Jon"),  # his own news
    ("Jon is grateful for his love for dance and how it helps him de-stress.", "Jon"),
    ("Gina is excited and nervous about the fashion internship.", "Gina"),
    ("Gina can't wait for tomorrow's grand opening.", "Gina"),
    ("Gina congratulated Jon on opening the dance studio.", "Gina"),  # congratulations name the news
    ("Gina encouraged Jon to focus on his successes.", "Gina"),  # advice: left to small_talk
    ("Jon lost his job as a banker.", "Jon"),
    ("Jon and Gina agree with the plan.", "Jon and Gina"),  # not one named subject's reaction
])
def test_not_a_reaction(statement: str, subject: str) -> None:
    assert not reaction(statement, subject, SPEAKERS)


@pytest.mark.parametrize("relation, statement, says", [
    ("is_a", "Jon is searching for a dance studio location, but he's determined to find the right spot.", False),
    ("is_a", "Jon is getting ready for a dance comp near him next month.", False),
    ("is_a", "Gina is a fashion designer.", True),
    ("likes", "Jon is reading 'The Lean Startup' and hoping it'll give him tips for his biz.", False),
    ("likes", "Jon hopes his dance studio will make a huge difference.", False),
    ("likes", "Jon likes Marley flooring because it's grippy.", True),
    ("likes", "Contemporary dance is Jon's top pick.", True),
    ("hobby", "Jon will make his dreams come true!", False),
    ("hobby", "Jon loves dancing in his free time.", True),
    ("visited", "Jon visited Rome last week.", True),  # not one rules 11 check
])
def test_rules_11_check_is_a_and_liking_against_the_statement(relation: str, statement: str, says: bool) -> None:
    assert says_typed(relation, statement, rules=11) is says
    assert says_typed(relation, statement, rules=8)  # rules 8 checked only works_at, job_title, studies_at


NUMBERED: dict[int, Message] = {
    1: msg(1, "Gina", "Wow, Jon, can't wait for tomorrow's grand opening!"),
    2: msg(2, "Jon", "Same! I'm stoked. Still searching for the right dance studio location though."),
    3: msg(3, "Gina", "Look at this! [shares an image: three girls in ballet costumes sitting on a desk]"),
    4: msg(4, "Jon", "I'm reading The Lean Startup, hoping it'll give me tips for my biz."),
    5: msg(5, "Gina", "Here's my pup! [shares an image: her dog Max on a couch]"),
    6: msg(6, "Jon", "Great pic! The last networking event was packed. [shares an image: people standing in a room]"),
}
SLOTS = {"lines": [
    {"line": 1, "fact": fact("Gina is excited about tomorrow's grand opening.", "Gina", "feels", "excited")},
    {"line": 2, "fact": fact("Jon agrees with Gina's excitement about the grand opening.", "Jon", "did", "Gina")},
    {"line": 3, "fact": fact("Gina shares an image of three girls in ballet costumes sitting on a desk.", "Gina",
                             "owns", "the group of girls")},
    {"line": 4, "fact": fact("Jon is reading 'The Lean Startup' and hoping it'll give him tips for his biz.", "Jon",
                             "likes", "The Lean Startup")},
    {"line": 5, "fact": fact("Gina shares a photo of her dog Max on a couch.", "Gina", "has_pet", "Max")},
    {"line": 6, "fact": fact("Jon shares a photo of the last networking event.", "Jon", "visited",
                             "the networking event")},
]}


def _typed(rules: int) -> list[tuple[str, str, str]]:
    cands, _ = postprocess_observations(parse_line_observations(SLOTS), NUMBERED, trust_turn=True, rules=rules)
    return [(c.subject, c.relation, c.object) for c in cands]


def test_rules_11_against_rules_10() -> None:
    assert _typed(10) == [
        ("Gina", "feels", "excited"), ("Jon", "did", "Gina"), ("Gina", "owns", "the group of girls"),
        ("Jon", "likes", "The Lean Startup"), ("Gina", "has_pet", "Max"), ("Jon", "visited", "the networking event")]
    assert _typed(11) == [
        ("Gina", "feels", "excited"),  # her own excitement stays
        # Jon's reaction to it is dropped; a photo is a catch-all fact about what it shows, its object kept
        ("Gina", "did", "the group of girls"),
        ("Jon", "did", "The Lean Startup"),  # reading is no liking
        ("Gina", "has_pet", "Max"),  # a photo of her own dog keeps its relation
        ("Jon", "did", "the networking event"),
    ]


def test_rules_11_keep_the_statements_and_their_sources() -> None:
    v10, _ = postprocess_observations(parse_line_observations(SLOTS), NUMBERED, trust_turn=True, rules=10)
    v11, notes = postprocess_observations(parse_line_observations(SLOTS), NUMBERED, trust_turn=True, rules=11)
    assert [(c.text, c.source_ids) for c in v11] == [(c.text, c.source_ids) for c in v10 if "agrees" not in c.text]
    assert any(n.startswith("dropped a reaction to the other speaker: Jon agrees") for n in notes)
    assert any("owns → did (a photo shared, not owned)" in n for n in notes)


def test_rules_11_check_the_relation_the_registry_stores() -> None:
    """conv-26: the model typed "signed up for a pottery class" as ``joined``, which the registry stores as
    ``works_at`` — an employer no word of the statement names, which would close the real one."""
    from chronomem.extract.extractor import canonical_relation
    from chronomem.registry import RelationRegistry

    reg = RelationRegistry()
    numbered = {1: msg(1, "Melanie", "I signed up for a pottery class yesterday!"),
                2: msg(2, "Caroline", "New job! I joined Acme last week.")}
    slots = {"lines": [
        {"line": 1, "fact": fact("Melanie signed up for a pottery class yesterday.", "Melanie", "joined", "pottery class")},
        {"line": 2, "fact": fact("Caroline joined Acme last week, her new job.", "Caroline", "joined", "Acme")}]}

    def typed(rules: int) -> list[tuple[str, str]]:
        cands, _ = postprocess_observations(parse_line_observations(slots), numbered, trust_turn=True, rules=rules,
                                            canonical=lambda r: canonical_relation(r, reg))
        return [(c.relation, c.object) for c in cands]

    assert typed(10) == [("works_at", "pottery class"), ("works_at", "Acme")]
    assert typed(11) == [("did", "pottery class"), ("works_at", "Acme")]  # Acme's statement speaks of a job


def test_a_photo_retyped_as_a_catch_all_fact_is_an_event() -> None:
    """A shared photo of something that ended ("the studio they left") is still only a photo shared: the
    catch-all fact has no end, as rules 8's ``shared_photo`` has none."""
    numbered = {1: msg(1, "Gina", "Throwback! [shares an image: the dance studio they left last year]")}
    slots = {"lines": [{"line": 1, "fact": fact("Gina shares a photo of the dance studio they left last year.", "Gina",
                                                "owns", "the dance studio", ended=True)}]}
    (c,), notes = postprocess_observations(parse_line_observations(slots), numbered, trust_turn=True, rules=11)
    assert (c.relation, c.object, c.valid_to) == ("did", "the dance studio", None)
    assert any("owns → did (a photo shared, not owned)" in n for n in notes)
