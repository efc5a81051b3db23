"""Post-processing rules 12 (extraction method v9): who a statement is about, read from the chunk's lines.

The lines and statements are the 1.5B model's on LoCoMo conv-26 and conv-30 (one-call replies); the
census of every fact rules 11 kept (BENCHMARKS.md "Precision by census") called each of these a wrong
subject: a photo given to the speaker who did not share it, a line copied under the other speaker's
name, one speaker's "we" written as both, and "Mel" kept as a person of its own.
"""

from __future__ import annotations

import pytest

from chronomem.extract import speakers as sp
from chronomem.extract.line_observations import parse_line_observations
from chronomem.extract.observations import RULE_VERSIONS, postprocess_observations
from chronomem.extract.pipeline import method_versions
from chronomem.model import Message

from test_extract_line_observations import fact
from test_extract_observations import msg

PAIR = ("Caroline", "Melanie")


def _run(numbered: dict[int, Message], *slots: tuple[int, dict], rules: int = 12) -> tuple[list, list[str]]:
    obs = parse_line_observations({"lines": [{"line": n, "fact": f} for n, f in slots]})
    return postprocess_observations(obs, numbered, trust_turn=True, rules=rules)


# ----------------------------------------------------------------- the pure functions

STAINED_GLASS = {
    1: msg(1, "Melanie", "Thanks, Caroline! What made you decide to transition? "
                         "[shares an image: a stained glass window with a key in it]"),
    2: msg(2, "Caroline", "I made this at the studio! [shares an image: a stained glass window with a picture of "
                          "a person on a horse]"),
    3: msg(3, "Melanie", "I'm in awe of your courage. Have you made any more art lately?"),
}


def test_the_photo_a_statement_describes_is_the_caption_it_shares_most_words_with() -> None:
    lines = list(STAINED_GLASS.values())
    statement = "Melanie shared a photo of a stained glass window with a picture of a person on a horse."
    assert sp.photo_line(statement, lines, PAIR) is STAINED_GLASS[2]  # "person", "horse" decide it
    assert sp.caption(STAINED_GLASS[3]) == ""


@pytest.mark.parametrize("statement", [
    "Melanie is in awe of Caroline's courage.",  # no picture in it
    "Melanie shared a photo of her new car.",  # no caption shares two words with it
    "Melanie shared a photo of a stained glass window.",  # two speakers' captions tie
])
def test_no_photo_line(statement: str) -> None:
    assert sp.photo_line(statement, list(STAINED_GLASS.values()), PAIR) is None


CONCERT = {
    1: msg(1, "Caroline", "Sounds like a great night! Who was playing?"),
    2: msg(2, "Melanie", "Thanks, Caroline! It was Matt Patterson, he is so talented! His voice and songs were amazing."),
    3: msg(3, "Caroline", "The pride event was awesome! It was so encouraging to be surrounded by so much love."),
}


def test_a_statement_copies_a_line_when_nearly_all_its_words_are_there() -> None:
    lines = list(CONCERT.values())
    assert sp.copied_line("Thanks, Caroline! It was Matt Patterson, he is so talented! His voice was amazing.", lines,
                          PAIR) is CONCERT[2]
    assert sp.copied_line("The pride event was awesome! So encouraging to be surrounded by love.", lines,
                          PAIR) is CONCERT[3]
    assert sp.copied_line("Melanie went to a concert.", lines, PAIR) is None  # too short to tell
    assert sp.copied_line("Melanie heard Matt Patterson play his new songs at the festival downtown.", lines,
                          PAIR) is None  # half its words are not there


@pytest.mark.parametrize("statement, lines, one", [
    ("Melanie and Caroline had a great day playing games and eating good food.",
     [msg(1, "Melanie", "It was so fun! We played games, ate good food, and just hung out together.")], "Melanie"),
    ("Caroline and Melanie are getting along well.",
     [msg(1, "Melanie", "Awesome news that you two are getting along!")], "Melanie"),
    # the other speaker's lines are cited too: both may be meant
    ("Melanie and Caroline had a great day.",
     [msg(1, "Melanie", "We had a great day!"), msg(2, "Caroline", "We did!")], None),
    # the line names the other speaker: "we" may be the two of them
    ("Melanie and Caroline will go hiking.", [msg(1, "Melanie", "Caroline, we should go hiking!")], None),
    ("Melanie and Caroline both love hiking.", [msg(1, "Melanie", "We both love hiking.")], None),
    ("Melanie went camping with her family.", [msg(1, "Melanie", "We went camping.")], None),
])
def test_one_speakers_we_written_as_both(statement: str, lines: list[Message], one: str | None) -> None:
    assert sp.joint_speaker(statement, lines, PAIR) == one


def test_as_one_speaker_keeps_the_verb_agreeing() -> None:
    assert sp.as_one_speaker("Caroline and Melanie are getting along well.", "Melanie", PAIR) == \
        "Melanie is getting along well."
    assert sp.as_one_speaker("Melanie and Caroline had a great day.", "Melanie", PAIR) == "Melanie had a great day."


@pytest.mark.parametrize("name, speaker", [
    ("Mel", "Melanie"), ("mel", "Melanie"), ("Caro", "Caroline"),
    ("Melanie", None),  # a whole name is no nickname
    ("Me", None),  # too short
    ("Ma", None), ("Matt", None), ("Mel's brother", None),
])
def test_nickname_of(name: str, speaker: str | None) -> None:
    assert sp.nickname_of(name, PAIR) == speaker


def test_a_nickname_both_speakers_begin_with_is_nobody() -> None:
    assert sp.nickname_of("Sam", ("Samuel", "Samantha")) is None
    assert sp.full_names("Sam went home.", ("Samuel", "Samantha")) == "Sam went home."
    assert sp.full_names("Mel shared a photo.", PAIR) == "Melanie shared a photo."
    assert sp.full_names("Melt the butter first.", PAIR) == "Melt the butter first."  # not a nickname: no match


# ----------------------------------------------------------------- the rules in postprocess_observations

def test_rules_12_follow_the_photo_to_its_line() -> None:
    slot = (3, fact("Melanie shared a photo of a stained glass window with a picture of a person on a horse.",
                    "Melanie", "owns", "stained glass window"))
    (v11,), _ = _run(STAINED_GLASS, slot, rules=11)
    (v12,), notes = _run(STAINED_GLASS, slot)
    assert v11.subject == "Melanie"
    assert (v12.subject, v12.source_ids[0]) == ("Caroline", "D1:2")
    assert v12.text.startswith("Caroline shared a photo of a stained glass window")
    assert any(n.startswith("subject 'Melanie' → 'Caroline'") for n in notes)


def test_rules_12_give_a_verbatim_copy_to_its_speaker_and_keep_its_words() -> None:
    statement = "Thanks, Caroline! It was Matt Patterson, he is so talented! His voice and songs were amazing."
    (v11,), _ = _run(CONCERT, (2, fact(statement, "Caroline", "did", "Matt Patterson")), rules=11)
    (v12,), _ = _run(CONCERT, (2, fact(statement, "Caroline", "did", "Matt Patterson")))
    assert v11.subject == "Caroline"
    assert (v12.subject, v12.text) == ("Melanie", statement)


def test_rules_12_rewrite_a_retold_line_under_its_speaker() -> None:
    """conv-30: "Jon lost his job at Door Dash" retells Gina's line; the copy and its source move together."""
    numbered = {
        1: msg(1, "Jon", "Hey Gina! Lost my job as a banker yesterday, so I'm gonna start my own business."),
        2: msg(2, "Gina", "Sorry about your job Jon! Unfortunately, I also lost my job at Door Dash this month."),
    }
    (c,), _ = _run(numbered, (1, fact("Jon lost his job at Door Dash this month.", "Jon", "lost", "job at Door Dash")))
    assert c.subject == "Gina" and c.text.startswith("Gina lost their job at Door Dash")


def test_rules_12_leave_a_line_about_the_listener_to_the_listener() -> None:
    """conv-30: Gina's "color-coding is a great way to track your progress" is about Jon's color-coding."""
    numbered = {
        1: msg(1, "Jon", "Yes. I color-code achievements so I can easily track my progress."),
        2: msg(2, "Gina", "Wow, color-coding is a great way to track your progress & stay motivated. Keep it up!"),
    }
    (c,), _ = _run(numbered, (1, fact("Jon uses color-coding to track his progress and stay motivated.", "Jon",
                                       "did", "color-coding")))
    assert c.subject == "Jon"


def test_rules_12_leave_a_statement_naming_both_speakers() -> None:
    numbered = {1: msg(1, "Gina", "When things get rough, keep working hard. Don't quit!"),
                2: msg(2, "Jon", "Thanks, Gina! That sign reminds me to never give up, however hard things get.")}
    (c,), _ = _run(numbered, (1, fact("Gina is reminding Jon to never give up, however hard things get.", "Gina",
                                       "did", "reminding")))
    assert (c.subject, c.text) == ("Gina", "Gina is reminding Jon to never give up, however hard things get.")


def test_rules_12_write_one_speakers_we_as_that_speaker() -> None:
    numbered = {1: msg(1, "Caroline", "Looks like you had a great day! How was it?"),
                2: msg(2, "Melanie", "It was so fun! We played games, ate good food, and just hung out together.")}
    (c,), notes = _run(numbered, (2, fact("Melanie and Caroline had a great day playing games and eating good food.",
                                           "Melanie and Caroline", "did", "games")))
    assert (c.subject, c.text) == ("Melanie", "Melanie had a great day playing games and eating good food.")
    assert any(n.startswith("both speakers → 'Melanie'") for n in notes)


def test_rules_12_read_a_nickname_as_its_speaker() -> None:
    numbered = {1: msg(1, "Caroline", "Love it, Mel!"),
                2: msg(2, "Melanie", "Here's the bowl I made in class! [shares an image: a pottery bowl with a blue glaze]")}
    (c,), _ = _run(numbered, (2, fact("Mel made a pottery bowl with a blue glaze in class.", "Mel", "made",
                                       "a pottery bowl")))
    assert c.subject == "Melanie" and c.text.startswith("Melanie made a pottery bowl")


def test_v9_is_v3s_prompt_under_rules_12() -> None:
    assert 12 in RULE_VERSIONS
    assert method_versions("v9") == ("observe_lines_v1", 12)
