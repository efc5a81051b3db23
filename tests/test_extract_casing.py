"""The model's cased reading copy of turns typed in lowercase (:mod:`chronomem.extract.casing`, method v13)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from chronomem import Memory
from chronomem.errors import ValidationError
from chronomem.extract.casing import Names, common_words, places, reading_copy, truecase, uncased
from chronomem.extract.chunking import Chunk
from chronomem.model import Message

from test_extract_line_observations import SlotLLM, fact

SAID = datetime(2014, 10, 4, 13, 15, tzinfo=timezone.utc)


def turn(i: str, speaker: str, text: str) -> Message:
    return Message(i, "u1", "s1", speaker, text, SAID, SAID)


def test_a_turn_is_uncased_when_it_types_i_or_most_sentences_in_lowercase() -> None:
    assert uncased("berlin is great, cant believe i moved in april")
    assert uncased("still here! can u believe it. Left in march")  # two of three sentences start lowercase
    assert uncased("Speaking of which, i'm curious")  # "i" alone says it
    assert not uncased("We moved to Nice in May. I love it here.")
    assert not uncased("5 years already! Time flies- feels like just yesterday I put this dress on!")
    assert not uncased("ok. Fine. Great.")  # one lowercase start of three
    assert not uncased("")
    assert not uncased("😂😂")


def test_places_months_i_and_sentence_starts_are_capitalised() -> None:
    names = places()
    assert truecase("humid af. kuala lumpur is basically dhaka with better roads, been here since january",
                    names) == "Humid af. Kuala Lumpur is basically Dhaka with better roads, been here since January"
    assert truecase("im moving to rio de janeiro on monday, ive got the flat", names) == (
        "I'm moving to Rio de Janeiro on Monday, I've got the flat")
    assert truecase("zurück aus berlin, im Sommer wieder", names) == "Zurück aus Berlin, im Sommer wieder"
    # accents as typed or left out; only the case changes
    assert truecase("marta moved back to gdansk", names) == "Marta moved back to Gdansk"
    assert truecase("she loves gdańsk", names) == "She loves Gdańsk"


def test_words_that_are_also_places_or_months_stay_words() -> None:
    names = places()
    # "nice", "reading", "split" and "van" are towns, but in a lowercase line they are far more often the word
    assert truecase("a nice van, reading it now, we split the bill", names) == (
        "A nice van, reading it now, we split the bill")
    # "may" and "march" are months only where a time is said
    assert truecase("we may march on. back in may, and since march 2019", names) == (
        "We may march on. Back in May, and since March 2019")
    assert truecase("see you may 3rd", names) == "See you May 3rd"


def test_words_typed_with_capitals_are_left_as_typed() -> None:
    assert truecase("i left BERLIN for LA, then berlin again", places()) == "I left BERLIN for LA, then Berlin again"
    assert truecase("we met at McDonald's in oslo", places()) == "We met at McDonald's in Oslo"


def test_names_are_learned_from_the_memory_when_they_look_like_names() -> None:
    assert "reading" in common_words() and "kojo" not in common_words()
    learned = Names().learned(["Kojo", "Halden Bank", "University of Ibadan", "Reading", "Kemi's friend",
                               "his life", "Sorry", "A Very Long Company Name Here"])
    assert truecase("kojo moved from halden bank to the university of ibadan", learned) == (
        "Kojo moved from Halden Bank to the University of Ibadan")
    # a distinctive word of a name stands for it; common words of it ("bank", "university") do not
    assert truecase("i quit halden, went back to university. reading now", learned) == (
        "I quit Halden, went back to university. Reading now")
    assert truecase("sorry, a very long company name here", learned) == "Sorry, a very long company name here"


def test_a_reading_copy_cases_only_uncased_turns_and_keeps_their_ids() -> None:
    cased = turn("t0", "Ewa", "Been at Quellwerk Software since I arrived.")
    typed = turn("t1", "Tomasz", "so i quit quellwerk in january, ewa knows")
    chunk = Chunk(context=(cased,), turns=(typed,))
    copy = reading_copy(chunk, places())
    assert copy.context == (cased,)  # typed with capitals: as it was
    [read] = copy.turns
    assert read.text == "So I quit Quellwerk in January, Ewa knows"  # a name the chunk writes; a speaker's name
    assert (read.id, read.speaker, read.timestamp) == (typed.id, typed.speaker, typed.timestamp)
    assert typed.text == "so i quit quellwerk in january, ewa knows"  # the turn itself is not touched
    all_cased = Chunk(context=(), turns=(cased,))
    assert reading_copy(all_cased, places()) is all_cased


class CasedSlotLLM(SlotLLM):
    """The v3 double, answering only lines it reads with capitals."""

    SCRIPT = {"I moved to Berlin in April, been at Quellwerk since.":
              fact("Tomasz moved to Berlin in April.", "Tomasz", "moved_to", "Berlin")}

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def chat(self, messages: list[dict[str, str]], **kw: Any) -> Any:
        self.seen.append(messages[-1]["content"])
        return super().chat(messages, **kw)


@pytest.mark.parametrize("method, moved", [("v13", True), ("v10", False)])
def test_v13_extracts_from_the_cased_copy_and_stores_the_turn_verbatim(method: str, moved: bool) -> None:
    llm = CasedSlotLLM()
    typed = "i moved to berlin in april, been at quellwerk since."
    with Memory(":memory:", llm=llm) as mem:
        pipe = mem.write_pipeline(method=method)
        assert pipe.add([{"id": "t1", "speaker": "Tomasz", "text": typed}], user_id="u1", session_id="s1",
                        timestamp="2014-10-04T13:15:00Z").ok
        assert ("Berlin" in llm.seen[0]) is moved
        assert [m.text for m in mem.store.messages("u1")] == [typed]
        facts = mem.facts(user_id="u1", subject="Tomasz", relation="lives_in")
        assert [(f.object, f.source_ids) for f in facts] == ([("Berlin", ["t1"])] if moved else [])


def test_an_unknown_extraction_method_is_named_in_the_error() -> None:
    with Memory(":memory:", llm=CasedSlotLLM()) as mem, pytest.raises(ValidationError, match="v14"):
        mem.write_pipeline(method="v14")
