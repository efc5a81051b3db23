"""Pure extraction logic: schema parsing, confidence, chunking, post-processing, entity matching."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pydantic import ValidationError as PydanticValidationError

from chronomem.extract import confidence
from chronomem.extract.chunking import chunk_turns
from chronomem.extract.entities import acronym, is_acronym_of, similarity, variant_key
from chronomem.prompts import load_prompt
from chronomem.extract.extractor import (
    Extractor,
    postprocess,
    render_transcript,
    resolve_person,
    system_prompt,
)
from chronomem.extract.chunking import Chunk
from chronomem.extract.schema import EXTRACTION_SCHEMA, MAX_FACTS_PER_CHUNK, Certainty, parse_output
from chronomem.model import Intent, Message
from chronomem.registry import RelationRegistry

UTC = timezone.utc
TS = datetime(2023, 5, 10, 14, tzinfo=UTC)


def msg(i: int, speaker: str, text: str, ts: datetime = TS) -> Message:
    return Message(id=f"m{i}", user_id="u", session_id="s1", speaker=speaker, text=text,
                   timestamp=ts, recorded_at=ts, seq=i)


# ------------------------------------------------------------------ schema


def test_schema_caps_the_array_and_orders_fields() -> None:
    facts = EXTRACTION_SCHEMA["properties"]["facts"]
    assert facts["maxItems"] == MAX_FACTS_PER_CHUNK
    assert list(facts["items"]["properties"])[:3] == ["subject", "relation", "object"]
    assert set(facts["items"]["required"]) == set(facts["items"]["properties"])


def test_parse_output_normalises_small_deviations() -> None:
    out = parse_output({"facts": [
        {"turns": 3, "subject": " Anna ", "relation": "lives_in", "object": "Lyon", "time": None,
         "ended": False, "certainty": "CERTAIN", "intent": "evolution"},
        {"turns": ["T4"], "subject": "Anna", "relation": "likes", "object": "tea",
         "certainty": "bogus", "intent": "nonsense"},
        {"turns": [1], "subject": "", "relation": "likes", "object": "x"},  # dropped: no subject
    ]})
    assert [f.subject for f in out.facts] == ["Anna", "Anna"]
    assert out.facts[0].turns == [3] and out.facts[0].time == ""
    assert out.facts[0].certainty is Certainty.CERTAIN and out.facts[0].intent == "EVOLUTION"
    assert out.facts[1].turns == [4]
    assert out.facts[1].certainty is Certainty.CERTAIN and out.facts[1].intent == "FACT"


def test_parse_output_accepts_a_bare_list_and_caps_it() -> None:
    many = [{"turns": [1], "subject": "A", "relation": "likes", "object": f"x{i}"} for i in range(30)]
    assert len(parse_output(many).facts) == MAX_FACTS_PER_CHUNK


def test_parse_output_rejects_garbage() -> None:
    with pytest.raises(PydanticValidationError):
        parse_output({"facts": "not a list"})


# ------------------------------------------------------------------ confidence


@pytest.mark.parametrize(
    ("label", "text", "obj", "expected_stable"),
    [
        ("certain", "I live in Berlin.", "Berlin", True),
        ("certain", "I might move to Paris.", "Paris", False),
        ("certain", "Maybe I'll adopt a cat.", "cat", False),
        ("certain", "I'm thinking about learning Spanish.", "Spanish", False),
        ("certain", "I'm not sure I'll stay at Acme.", "Acme", False),
        ("certain", "Apparently Tom moved to Rome.", "Rome", False),
        ("certain", "I heard that Lisa got married.", "married", False),
        ("uncertain", "I love hiking.", "hiking", False),
        ("likely", "I think it's in Lyon.", "Lyon", True),
    ],
)
def test_confidence_stratification(label: str, text: str, obj: str, expected_stable: bool) -> None:
    c = confidence.score(label, text, obj)
    assert 0.0 <= c <= 1.0
    assert (c >= 0.6) is expected_stable


def test_emphatic_cue_raises_a_stable_fact() -> None:
    assert confidence.score("certain", "I always go running on Sundays.", "running") == confidence.HIGH
    assert confidence.score("certain", "I definitely love sushi.", "sushi") > confidence.score("certain", "I love sushi.", "sushi")


def test_cues_are_read_from_the_clause_of_the_fact() -> None:
    text = "I live in Berlin but I might move to Paris next year."
    assert confidence.score("certain", text, "Berlin") >= 0.6
    assert confidence.score("certain", text, "Paris") < 0.6


def test_cue_words_inside_other_words_do_not_count() -> None:
    # "mighty" is not "might", "maybelline" is not "maybe"
    assert confidence.cue_level("the mighty ducks") is None
    assert confidence.cue_level("she sells maybelline") is None


# ------------------------------------------------------------------ chunking


def test_chunks_have_size_and_preceding_context() -> None:
    turns = list(range(20))
    chunks = chunk_turns(turns, size=8, context=2)
    assert [list(c.turns) for c in chunks] == [list(range(0, 8)), list(range(8, 16)), list(range(16, 20))]
    assert [list(c.context) for c in chunks] == [[], [6, 7], [14, 15]]


def test_short_tail_is_merged_to_save_a_call() -> None:
    chunks = chunk_turns(list(range(17)), size=8, context=1)
    assert [len(c.turns) for c in chunks] == [8, 9]


def test_history_gives_the_first_chunk_context() -> None:
    chunks = chunk_turns([10, 11, 12], size=8, context=2, history=[7, 8, 9])
    assert list(chunks[0].context) == [8, 9]


def test_chunk_arguments_are_checked() -> None:
    with pytest.raises(ValueError):
        chunk_turns([1], size=0)
    with pytest.raises(ValueError):
        chunk_turns([1], context=-1)


# ------------------------------------------------------------------ prompt & transcript


def test_prompt_is_versioned_and_lists_relations() -> None:
    assert all("Example output" in load_prompt("chronomem.extract", v) for v in ("extract_v1", "extract_v3"))
    sp = system_prompt(RelationRegistry().names())
    assert "lives_in" in sp and "has_pet" in sp and "{{relations}}" not in sp


def test_transcript_numbers_turns_and_marks_context() -> None:
    ch = Chunk(context=(msg(0, "Ben", "Hi!"),), turns=(msg(1, "Anna", "I moved.\nTo Lyon."), msg(2, "Ben", "Cool")))
    text, numbered = render_transcript(ch)
    assert text.splitlines() == ["Speakers: Ben, Anna", "Context:", "[0] Ben: Hi!", "Turns:",
                                 "[1] Anna: I moved. To Lyon.", "[2] Ben: Cool"]
    assert {k: v.id for k, v in numbered.items()} == {1: "m1", 2: "m2"}


def test_extractor_system_prompt_is_a_shared_prefix() -> None:
    class NoLLM:
        name = "none"
        context_window = 4096

    ex = Extractor(NoLLM(), relations=["lives_in"])  # type: ignore[arg-type]
    a, _ = ex.messages_for(Chunk((), (msg(1, "A", "x"),)))
    b, _ = ex.messages_for(Chunk((), (msg(2, "B", "y"),)))
    assert a[0] == b[0] and a[0]["role"] == "system" and a[1] != b[1]


# ------------------------------------------------------------------ post-processing


def test_resolve_person() -> None:
    assert resolve_person("I", "Anna", "Ben") == "Anna"
    assert resolve_person("me", "Anna", "Ben") == "Anna"
    assert resolve_person("you", "Anna", "Ben") == "Ben"
    assert resolve_person("my son", "Anna", "Ben") == "Anna's son"
    assert resolve_person("Your dog", "Anna", "Ben") == "Ben's dog"
    assert resolve_person("you", "Anna", None) == "you"  # ambiguous: left as said
    assert resolve_person("Julia", "Anna", "Ben") == "Julia"


def _facts(*rows: dict) -> list:
    return parse_output({"facts": list(rows)}).facts


def test_postprocess_resolves_time_confidence_pronouns_and_provenance() -> None:
    reg = RelationRegistry()
    numbered = {1: msg(1, "Anna", "I moved to Lyon last week. I might get a cat."), 2: msg(2, "Ben", "Nice, I have a dog.")}
    cands, notes = postprocess(_facts(
        {"turns": [1], "subject": "I", "relation": "resides in", "object": "Lyon", "time": "last week",
         "ended": False, "certainty": "certain", "intent": "EVOLUTION"},
        {"turns": [1], "subject": "Anna", "relation": "has_pet", "object": "cat", "time": "",
         "ended": False, "certainty": "certain", "intent": "FACT"},
        {"turns": [2], "subject": "I", "relation": "has_pet", "object": "dog", "time": "",
         "ended": False, "certainty": "certain", "intent": "FACT"},
    ), numbered, canonical=reg.canonical)
    assert notes == []
    lyon, cat, dog = cands
    assert (lyon.subject, lyon.relation, lyon.object) == ("Anna", "lives_in", "Lyon")
    assert lyon.valid_from == datetime(2023, 5, 1, tzinfo=UTC) and lyon.valid_to is None
    assert lyon.source_ids == ["m1"] and lyon.session_id == "s1"
    assert lyon.confidence >= 0.6 and cat.confidence < 0.6  # "might" in cat's clause only
    assert (dog.subject, dog.valid_from) == ("Ben", TS)  # no time expression: the message time
    d = lyon.as_dict()
    assert d["origin"] == "stated" and d["intent"] == "EVOLUTION" and d["subject_type"] == "person"


def test_postprocess_endings_and_causal_links() -> None:
    numbered = {3: msg(3, "Anna", "We had to rehome Pixel because my son is allergic.")}
    cands, _ = postprocess(_facts(
        {"turns": [3], "subject": "Anna", "relation": "has_pet", "object": "Pixel", "time": "",
         "ended": True, "certainty": "certain", "intent": "FACT"},
        {"turns": [3], "subject": "Anna rehomed Pixel", "relation": "caused_by", "object": "my son is allergic",
         "time": "", "ended": False, "certainty": "certain", "intent": "FACT"},
    ), numbered)
    ended, causal = cands
    assert ended.valid_from is None and ended.valid_to == TS and ended.intent is Intent.EVOLUTION
    assert causal.intent is Intent.CAUSAL


def test_postprocess_grounds_facts_and_drops_junk_and_duplicates() -> None:
    numbered = {2: msg(2, "Anna", "I love jazz and tea."), 3: msg(3, "Ben", "I moved to Porto with my parrots.")}
    cands, notes = postprocess(_facts(
        {"subject": "Ben", "relation": "likes", "object": "rock and roll music"},  # said nowhere
        {"subject": "Porto", "relation": "located_in", "object": "Portugal"},  # hallucinated country
        {"subject": "Anna", "relation": "likes", "object": "jazz"},
        {"subject": "Anna", "relation": "likes", "object": "Jazz"},  # duplicate
        {"subject": "Anna", "relation": "likes", "object": "nothing"},  # junk
        {"subject": "Anna", "relation": "is_a", "object": "anna"},  # self loop
        {"subject": "I", "relation": "has_pet", "object": "parrot"},  # stem match, I = Ben (turn 3)
    ), numbered, context_speakers=["Anna", "Ben"])
    assert [(c.subject, c.object, c.source_ids) for c in cands] == [
        ("Anna", "jazz", ["m2"]), ("Ben", "parrot", ["m3"])]
    assert "rock and roll" in notes[0] and "Portugal" in notes[1] and "nothing" in notes[2]


def test_grounding_prefers_the_subjects_turn() -> None:
    from chronomem.extract.extractor import ground

    numbered = {1: msg(1, "Anna", "Do you like Lisbon?"), 2: msg(2, "Ben", "Yes, I love Lisbon.")}
    (f,) = _facts({"subject": "Ben", "relation": "likes", "object": "Lisbon"})
    assert [m.id for m in ground(f, numbered, ["Anna", "Ben"])] == ["m2"]


def test_postprocess_ending_with_range_keeps_interval() -> None:
    numbered = {1: msg(1, "Anna", "From 2016 to 2021 I lived in Oslo.")}
    (c,), _ = postprocess(_facts(
        {"turns": [1], "subject": "Anna", "relation": "lives_in", "object": "Oslo", "time": "from 2016 to 2021",
         "ended": True, "certainty": "certain", "intent": "TEMPORAL"},
    ), numbered)
    assert (c.valid_from, c.valid_to) == (datetime(2016, 1, 1, tzinfo=UTC), datetime(2022, 1, 1, tzinfo=UTC))


# ------------------------------------------------------------------ entity matching helpers


def test_entity_variants_and_acronyms() -> None:
    assert variant_key("The Golden Gate Bridge") == variant_key("golden gate bridge")
    assert acronym("New York City") == "nyc"
    assert is_acronym_of("NYC", "New York City")
    assert not is_acronym_of("NYC", "Nice York")
    assert acronym("Paris") is None
    assert similarity("Anna", "Anne") < 0.92


def test_an_entity_that_lost_its_name_takes_the_first_spelling_still_said() -> None:
    from chronomem.entities import best_spelling

    at = {"m2": (20, 0), "m3": (30, 0), "m4": (40, 0), "m5": (30, 1)}
    assert best_spelling([]) is None
    assert best_spelling([("Zed Clinic", ["m3", "m4"]), ("ZC", ["m4", "m2"])], at) == "ZC"  # said first
    assert best_spelling([("ZC", ["m5"]), ("Zed Clinic", ["m3"])], at) == "Zed Clinic"  # same time, earlier turn
    assert best_spelling([("the clinic", None), ("ZC", ["m4"])], at) == "ZC"  # a name given by hand has no time
    assert best_spelling([("the clinic", None), ("ZC", ["x9"])], at) == "ZC"  # cited, if not stored
    assert best_spelling([("ZC", ["x1"]), ("Zed Clinic", ["x2", "x3"])]) == "Zed Clinic"  # unplaced: most turns
    assert best_spelling([("the clinic", None)], at) == "the clinic"
    assert best_spelling([("zc", ["m2"]), ("ZC", ["m2"])], at) == "ZC"  # a tie: the same answer every time
    assert best_spelling([("ZC", ["m2"]), ("zc", ["m2"])], at) == "ZC"


def test_change_verbs_map_to_state_relations_only_when_unknown() -> None:
    from chronomem.extract.extractor import canonical_relation

    reg = RelationRegistry()
    assert canonical_relation("moved to", reg) == "lives_in"
    assert canonical_relation("joined", reg) == "works_at"
    assert canonical_relation("Resides In", reg) == "lives_in"
    reg.define("moved_to")  # a user-defined relation wins over the built-in mapping
    assert canonical_relation("moved_to", reg) == "moved_to"


def test_ending_verbs_become_ended_states() -> None:
    from chronomem.extract.extractor import canonical_relation

    reg = RelationRegistry()
    numbered = {1: msg(1, "Anna", "We rehomed Pixel and I quit Acme.")}
    cands, _ = postprocess(_facts(
        {"turns": [1], "subject": "Anna", "relation": "rehomed", "object": "Pixel"},
        {"turns": [1], "subject": "Anna", "relation": "quit", "object": "Acme"},
    ), numbered, canonical=lambda r: canonical_relation(r, reg))
    assert [(c.relation, c.object, c.valid_from, c.valid_to) for c in cands] == [
        ("has_pet", "Pixel", None, TS), ("works_at", "Acme", None, TS)]
    assert all(c.intent is Intent.EVOLUTION for c in cands)


def test_we_and_our_are_the_speaker() -> None:
    assert resolve_person("We", "Anna", "Ben") == "Anna"
    assert resolve_person("our dog", "Anna", "Ben") == "Anna's dog"


def test_intentions_and_plans_stay_below_threshold() -> None:
    assert confidence.score("certain", "Gonna continue my edu!", "edu", "plans_to") < 0.6
    assert confidence.score("certain", "I want to learn piano.", "piano", "wants_to_learn") < 0.6
    assert confidence.score("certain", "I'm keen on counseling.", "counseling", "interested_in") < 0.6
    assert confidence.score("certain", "I play the piano.", "piano", "plays") >= 0.6


def test_a_fact_copied_to_both_speakers_keeps_the_turns_speaker() -> None:
    numbered = {1: msg(1, "Caroline", "I talked about my transgender journey at school."),
                2: msg(2, "Melanie", "I love my husband.")}
    cands, notes = postprocess(_facts(
        {"subject": "Caroline", "relation": "talked_about", "object": "transgender journey"},
        {"subject": "Melanie", "relation": "talked_about", "object": "transgender journey"},
        {"subject": "Melanie", "relation": "loves", "object": "husband"},
    ), numbered)
    assert [(c.subject, c.object) for c in cands] == [("Caroline", "transgender journey"), ("Melanie", "husband")]
    assert any("other speaker" in n or "speaker of the line" in n for n in notes)


def test_first_person_given_to_the_wrong_speaker_is_fixed() -> None:
    numbered = {1: msg(1, "Sam", "How is life?"), 2: msg(2, "Maya", "Hi Sam! I live in Berlin and have two dogs."),
                3: msg(3, "Maya", "Sam, you work at Acme, right?")}
    cands, notes = postprocess(_facts(
        {"subject": "Sam", "relation": "lives_in", "object": "Berlin"},  # model's mistake: Maya said it
        {"subject": "Maya", "relation": "has_pet", "object": "dog"},  # plural in the text
        {"subject": "Sam", "relation": "works_at", "object": "Acme"},  # Sam is named in the line: kept
    ), numbered)
    assert [(c.subject, c.object) for c in cands] == [("Maya", "Berlin"), ("Maya", "dog"), ("Sam", "Acme")]
    assert any("the speaker of the line" in n for n in notes)


def test_postprocess_drops_facts_about_the_conversation_itself() -> None:
    numbered = {1: msg(1, "Sam", "Hi Maya, how is life?"), 2: msg(2, "Maya", "Good! Sam, I live in Berlin.")}
    cands, notes = postprocess(_facts(
        {"turns": [1], "subject": "Sam", "relation": "asks", "object": "Maya"},
        {"turns": [2], "subject": "Maya", "relation": "answers", "object": "Sam"},
        {"turns": [2], "subject": "Maya", "relation": "lives_in", "object": "Berlin"},
    ), numbered, context_speakers=["Sam", "Maya"])
    assert [(c.subject, c.relation, c.object) for c in cands] == [("Maya", "lives_in", "Berlin")]
    assert sum("small talk" in n for n in notes) == 2


def test_postprocess_drops_the_act_of_sharing_a_photo_but_keeps_what_it_shows() -> None:
    numbered = {1: msg(1, "Jon", "Look at my studio! [shares an image: a photo of a dance studio with mirrors]"),
                2: msg(2, "Gina", "We share an apartment with my cousin.")}
    cands, notes = postprocess(_facts(
        {"turns": [1], "subject": "Jon", "relation": "shared_image", "object": "dance studio with mirrors"},
        {"turns": [1], "subject": "Jon", "relation": "shares", "object": "a photo of a dance studio"},
        {"turns": [1], "subject": "Jon", "relation": "owns", "object": "dance studio"},
        {"turns": [2], "subject": "Gina", "relation": "shares", "object": "apartment"},
    ), numbered, context_speakers=["Jon", "Gina"])
    assert [(c.subject, c.relation, c.object) for c in cands] == [("Jon", "owns", "dance studio"),
                                                                 ("Gina", "shares", "apartment")]
    assert sum("small talk" in n for n in notes) == 2


def test_is_photo_sharing() -> None:
    from chronomem.extract.extractor import is_photo_sharing

    for rel in ("shares_an_image", "shared_image", "posted_photo", "sends_a_picture", "shows_pics"):
        assert is_photo_sharing(rel, "anything"), rel
    assert is_photo_sharing("shared", "A photo of a cake") and is_photo_sharing("posts", "an image of Rome")
    assert not is_photo_sharing("shares", "apartment") and not is_photo_sharing("painted", "a picture of a lake")
    assert not is_photo_sharing("likes", "photos")


def test_plausible_pet() -> None:
    from chronomem.extract.extractor import plausible_pet

    for obj in ("dog", "golden retriever", "two cats", "Pixel", "Mr Whiskers", "a puppy", "guinea pigs"):
        assert plausible_pet(obj, ["Jon", "Gina"]), obj
    for obj in ("pink sign", "business plan", "online store", "Gina", "jon", "passion", "", "123"):
        assert not plausible_pet(obj, ["Jon", "Gina"]), obj


def test_postprocess_drops_has_pet_used_as_a_generic_has() -> None:
    numbered = {1: msg(1, "Jon", "I made a pink sign for the studio, and Rex my beagle loves it.")}
    cands, notes = postprocess(_facts(
        {"turns": [1], "subject": "Jon", "relation": "has_pet", "object": "pink sign"},
        {"turns": [1], "subject": "Jon", "relation": "has_pet", "object": "Rex"},
        {"turns": [1], "subject": "Jon", "relation": "has_pet", "object": "beagle"},
    ), numbered, context_speakers=["Jon", "Gina"])
    assert [c.object for c in cands] == ["Rex", "beagle"]
    assert any("no animal or pet name" in n for n in notes)
