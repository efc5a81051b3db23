"""State rules (rules 13 / 14, extraction v10 / v11): what a statement says about a state changing.

The lines and the model's slots are the 1.5B model's replies on the evolving-state benchmark's tune
set (benchmarks/evolving/tune.json): a job change typed as a school, an ending put on the wrong
clause, a past interval cut to its start, a daughter typed as a pet.  Under rules 7 (v4) each of
these left the memory with the wrong job or home "now".
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from chronomem.extract import states
from chronomem.extract import replies
from chronomem.extract.line_observations import parse_line_observations
from chronomem.extract.observations import RULE_VERSIONS, STATE_RULES, postprocess_observations
from chronomem.extract.pipeline import METHOD_RECIPES
from chronomem.model import Message

from test_extract_line_observations import fact

WHEN = datetime(2022, 8, 19, 19, tzinfo=timezone.utc)


def line(i: int, speaker: str, text: str, ts: datetime = WHEN) -> Message:
    return Message(id=f"E:{i}", user_id="u", session_id="s", speaker=speaker, text=text, timestamp=ts,
                   recorded_at=ts, seq=i)


def run(numbered: dict[int, Message], *slots: tuple[int, dict], rules: int = 13) -> tuple[list, list[str]]:
    obs = parse_line_observations({"lines": [{"line": n, "fact": f} for n, f in slots]})
    return postprocess_observations(obs, numbered, trust_turn=True, rules=rules)


def triples(facts) -> list[tuple[str, str, str, bool]]:
    return [(f.subject, f.relation, f.object, f.valid_to is not None) for f in facts]


# ----------------------------------------------------------------- the pure functions

@pytest.mark.parametrize("text, phrase", [
    ("Lena worked at a bakery in York from 2014 to 2016.", "from 2014 to 2016"),
    ("I lived there between May and July 2022.", "between May and July 2022"),
    ("Nia lived in Accra until 2015.", "until 2015"),
    ("She played in the orchestra 2009-2012.", "2009-2012"),
    ("Lena moved into a flat in Leeds in March.", ""),
    ("Diego has lived in Madrid since 2016.", ""),  # a start, not a range: the old rule reads it
])
def test_range_phrase(text: str, phrase: str) -> None:
    assert states.range_phrase(text) == phrase


@pytest.mark.parametrize("statement, obj, ends", [
    ("Diego quit La Paz and now works at Hospital Clinico in Valencia.", "La Paz", True),
    ("Diego quit La Paz and now works at Hospital Clinico in Valencia.", "Hospital Clinico", False),
    ("Carmen moved to Lisbon last year and closed her cafe.", "Lisbon", False),
    ("Diego moved to Valencia in April because he left Madrid.", "Valencia", False),
    ("Diego moved to Valencia in April because he left Madrid.", "Madrid", True),
    ("Kenji and I broke up in the spring.", "Kenji", True),
    ("Jon lost his job as a banker yesterday.", "banker", True),
    ("Maya sold her ex-car.", "ex-car", True),
])
def test_an_ending_reaches_its_object_only_in_its_clause(statement: str, obj: str, ends: bool) -> None:
    assert states.ending_governs(statement, obj) is ends


def test_a_strong_ending_needs_the_object_and_a_closing_verb() -> None:
    assert states.ending_governs("Aiko and Kenji broke up in the spring.", "Kenji", strong=True)
    assert not states.ending_governs("Jon lost his job as a banker.", "banker", strong=True)  # "lost": the model's call
    assert not states.ending_governs("They broke up.", "Kenji", strong=True)  # the object is not there
    assert states.ending_governs("They broke up.", "Kenji")  # the old reading: any ending word


def test_state_clauses() -> None:
    assert states.state_clauses("Aiko left Sony in August and is freelancing now.", "works_at", "freelancing") == [
        ("works_at", "Sony", True, "Aiko")]
    # the model typed a school; "left" a school only when the statement speaks of studying
    assert states.state_clauses("Lena left Ridgeway High in June and joined Novartis as a lab scientist.",
                                "studies_at", "Novartis") == [("works_at", "Ridgeway High", True, "Lena")]
    assert states.state_clauses("Lena told Omar that Felix moved to Oslo last month.", "friend_of", "Felix") == [
        ("lives_in", "Oslo", False, "Felix")]
    assert states.state_clauses("Diego moved to Valencia because he left Madrid.", "lives_in", "Valencia") == []
    assert states.state_clauses("Sam might move to Paris and relocate to Lyon later.", "did", "Paris") == []
    # a "left" clause only for the states it can end
    assert states.state_clauses("Jon left the party early.", "did", "party") == []


def test_employer_named() -> None:
    assert states.employer_named("Lena joined Novartis as a lab scientist.", "Novartis")
    assert states.employer_named("Maya got a job at Globex.", "Globex")
    assert not states.employer_named("Melanie joined a pottery class.", "pottery class")
    assert not states.employer_named("Luca is studying engineering at TU Munich.", "TU Munich")


def test_kin_mentions() -> None:
    said = states.kin_mentions("How is your brother Felix doing?", "Omar", "Lena")
    assert said == [states.KinMention("Lena", "sibling_of", "Felix", "brother")]
    assert said[0].statement() == "Felix is Lena's brother."
    assert states.kin_mentions("my wife Giulia teaches and my son Luca started school", "Marco", "Elena") == [
        states.KinMention("Marco", "married_to", "Giulia", "wife"), states.KinMention("Marco", "parent_of", "Luca", "son")]
    assert states.kin_mentions("How is your brother Felix?", "Omar", None) == []  # whose "your"? unknown
    assert states.kin_mentions("my friend Omar", "Lena", "Omar") == []  # talk to the listener, not news
    assert states.kin_mentions("my kids are great and my sister is here", "Mel", "Caroline") == []  # no name


# ----------------------------------------------------------------- through post-processing

def test_rules_13_and_14_are_methods_v10_and_v11() -> None:
    assert {13, 14, 15} <= set(RULE_VERSIONS) and STATE_RULES == {13, 14, 15}
    assert METHOD_RECIPES["v10"].rules == 13 and METHOD_RECIPES["v11"].rules == 14


JOB_CHANGE = {
    0: line(0, "Diego", "I quit La Paz and now I work at Hospital Clinico in Valencia."),
}


def test_the_new_job_stays_open_and_the_old_one_ends() -> None:
    slot = (0, fact("Diego quit La Paz and now works at Hospital Clinico in Valencia.", "Diego", "works_at",
                    "Hospital Clinico", ended=True))
    old, _ = run(JOB_CHANGE, slot, rules=7)
    assert triples(old) == [("Diego", "works_at", "Hospital Clinico", True)]  # v4: the new job, ended
    new, notes = run(JOB_CHANGE, slot)
    assert triples(new) == [("Diego", "works_at", "Hospital Clinico", False), ("Diego", "works_at", "La Paz", True)]
    assert any("another clause's" in n for n in notes)


def test_an_employer_typed_as_a_school_and_the_school_it_left() -> None:
    numbered = {0: line(0, "Lena", "Big changes. I left Ridgeway High in June and joined Novartis as a lab scientist.")}
    slot = (0, fact("Lena left Ridgeway High in June and joined Novartis as a lab scientist.", "Lena", "studies_at",
                    "Novartis"))
    facts, _ = run(numbered, slot)
    assert triples(facts) == [("Lena", "works_at", "Novartis", False), ("Lena", "works_at", "Ridgeway High", True)]
    assert facts[0].valid_from == datetime(2022, 6, 1, tzinfo=timezone.utc)


def test_a_past_told_late_keeps_both_ends() -> None:
    numbered = {0: line(0, "Lena", "Ha, before I became a teacher I worked at a bakery in York from 2014 to 2016.")}
    slot = (0, fact("Lena worked at a bakery in York from 2014 to 2016.", "Lena", "works_at", "York bakery"))
    [f] = run(numbered, slot)[0]
    assert (f.valid_from.year, f.valid_to) == (2014, datetime(2017, 1, 1, tzinfo=timezone.utc))
    [v4] = run(numbered, slot, rules=7)[0]
    assert v4.valid_to is None  # rules 7 read "from 2014" only: the bakery job would still be open


def test_a_break_up_ends_the_partnership_and_the_move_is_kept() -> None:
    numbered = {0: line(0, "Aiko", "Kenji and I broke up in the spring. I moved to Tokyo in May.")}
    slot = (0, fact("Aiko and Kenji broke up in the spring and moved to Tokyo in May.", "Aiko", "married_to", "Kenji"))
    facts, _ = run(numbered, slot)
    assert triples(facts) == [("Aiko", "partner_of", "Kenji", True), ("Aiko", "lives_in", "Tokyo", False)]


def test_a_move_told_of_someone_else_is_theirs() -> None:
    numbered = {0: line(0, "Omar", "No way! How is your brother Felix doing?"),
                1: line(1, "Lena", "Felix is fine, he moved to Oslo last month for work.")}
    slot = (1, fact("Lena told Omar that Felix moved to Oslo last month for work.", "Lena", "friend_of", "Felix"))
    facts, notes = run(numbered, (0, None), slot)
    assert ("Felix", "lives_in", "Oslo", False) in triples(facts)
    assert ("Lena", "sibling_of", "Felix", False) in triples(facts)  # retyped: the line says brother
    assert not any(f.subject == "Lena" and f.relation == "lives_in" for f in facts)


def test_kin_named_in_a_line_is_a_fact_and_retypes_a_pet() -> None:
    numbered = {0: line(0, "Diego", "Yes, same hospital. Oh, and my daughter Lucia was born in October!"),
                1: line(1, "Aiko", "I'm sharing an apartment in Osaka with my boyfriend Kenji.")}
    pet = (0, fact("Diego's daughter Lucia was born in October!", "Diego", "has_pet", "Lucia"))
    facts, _ = run(numbered, pet, (1, None))
    assert ("Diego", "parent_of", "Lucia", False) in triples(facts)
    assert not any(f.relation == "has_pet" for f in facts)
    [kenji] = [f for f in facts if f.object == "Kenji"]
    assert (kenji.subject, kenji.relation, kenji.text, kenji.source_ids) == (
        "Aiko", "partner_of", "Kenji is Aiko's boyfriend.", ["E:1"])
    assert run(numbered, pet, (1, None), rules=7)[0][0].relation == "has_pet"  # v4 unchanged


def test_reported_owner() -> None:
    assert states.reported_owner("Diego is telling Priya about Carmen's living situation in Seville.", "Diego",
                                 "Seville") == "Carmen"
    assert states.reported_owner("Jon moved into Gina's old flat in Berlin.", "Jon", "Berlin") is None  # no telling
    assert states.reported_owner("Diego told Priya about his home in Madrid.", "Diego", "Madrid") is None
    # the object is in another clause: not the named person's
    assert states.reported_owner("Diego told Priya about Carmen's cafe, and he lives in Madrid.", "Diego",
                                 "Madrid") is None


def test_kin_answered() -> None:
    said = replies.kin_answered("And your sister?", "Priya", "Carmen is still in Seville, she runs a cafe.", "Diego")
    assert said == states.KinMention("Diego", "sibling_of", "Carmen", "sister")
    assert replies.kin_answered("How are your kids?", "Priya", "Yeah, they're fine.", "Diego") is None
    assert replies.kin_answered("Seen your friends?", "A", "Most of them moved away.", "B") is None
    assert replies.kin_answered("And your brother Felix?", "Omar", "Felix is fine.", "Lena") is None  # named: kin_mentions
    assert replies.kin_answered("And your sister?", "Priya", "Priya, she is fine.", "Diego") is None  # the asker's name


def test_line_states() -> None:
    assert [(s.relation, s.name) for s in states.line_states("Great! I moved into a flat in Leeds in March. "
                                                             "I work at Ridgeway High now.")] == [
        ("lives_in", "Leeds"), ("works_at", "Ridgeway High")]
    assert [(s.relation, s.name) for s in states.line_states("We moved to Basel in July for the job.")] == [
        ("lives_in", "Basel")]
    assert states.line_states("Do you live in Paris?") == []  # a question
    assert states.line_states("I might move to Paris and live in Montmartre.") == []  # a hedge
    assert states.line_states("I don't work at Acme anymore.") == []  # a negation
    assert states.line_states("Sam lives in Paris.") == []  # not the speaker's


def test_a_residence_the_slot_lost_is_read_from_the_line() -> None:
    numbered = {0: line(0, "Aiko", "I just started at Sony as a sound engineer, and I'm sharing an apartment in "
                                   "Osaka with my boyfriend Kenji.")}
    slot = (0, fact("Aiko started at Sony as a sound engineer and is sharing an apartment with Kenji.", "Aiko",
                    "works_at", "Sony"))
    facts, notes = run(numbered, slot)
    assert set(triples(facts)) == {("Aiko", "works_at", "Sony", False), ("Aiko", "lives_in", "Osaka", False),
                                   ("Aiko", "partner_of", "Kenji", False)}
    [osaka] = [f for f in facts if f.object == "Osaka"]
    assert osaka.source_ids == ["E:0"] and osaka.text == "Aiko lives in Osaka."
    assert [f.object for f in run(numbered, slot, rules=7)[0]] == ["Sony"]


def test_a_relative_named_in_an_answer_and_a_reported_home() -> None:
    numbered = {0: line(0, "Priya", "And your sister?"),
                1: line(1, "Diego", "Carmen is still in Seville, she runs a small cafe there.")}
    slot = (1, fact("Diego is telling Priya about Carmen's living situation in Seville.", "Diego", "lives_in",
                    "Seville"))
    facts, _ = run(numbered, (0, None), slot)
    assert set(triples(facts)) == {("Carmen", "lives_in", "Seville", False), ("Diego", "sibling_of", "Carmen", False)}


@pytest.mark.parametrize("text, found", [
    ("Petra and I got married in October!", [("married_to", "Petra", False)]),
    ("I married Daniel last month!", [("married_to", "Daniel", False)]),
    ("Kwame and I got engaged at Christmas.", [("partner_of", "Kwame", False)]),
    ("Erik and I split up last summer, so I moved back to Stockholm.",
     [("lives_in", "Stockholm", False), ("partner_of", "Erik", True)]),
    ("Omar and I got divorced.", [("married_to", "Omar", True)]),
    ("I'm in Nairobi, working as a journalist.", [("lives_in", "Nairobi", False)]),
    ("I'm in Paris for the weekend.", []),  # a visit
    ("I'm a software developer at Avast these days.", [("works_at", "Avast", False)]),
    ("News: I'm with Deloitte now, I switched in January.", [("works_at", "Deloitte", False)]),
    ("I'm with Sam at the park.", []),  # company, not an employer
    ("I started at Monzo in May.", [("works_at", "Monzo", False)]),
    ("If Ana and I got married, we would move.", []),  # a hedge
])
def test_line_states_of_couples_homes_and_employers(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.ended) for s in states.line_states(text)] == found


def test_a_relatives_move_after_and_is_theirs() -> None:
    assert states.state_clauses("Olga's dad Anders finally retired and moved to Gotland.", "did", "retired") == [
        ("lives_in", "Gotland", False, "Anders")]
    assert replies.kin_answered("Is your brother here too?", "Sofia", "Kwame stayed in Accra.", "Nia") == (
        states.KinMention("Nia", "sibling_of", "Kwame", "brother"))


def test_a_break_up_in_the_line_closes_the_partnership() -> None:
    numbered = {0: line(0, "Olga", "Erik and I split up last summer, so I moved back to Stockholm.")}
    slot = (0, fact("Olga moved back to Stockholm after splitting up with Erik.", "Olga", "moved_to", "Stockholm"))
    facts, _ = run(numbered, slot)
    [erik] = [f for f in facts if f.object == "Erik"]
    # "last summer", said in August 2022, is timeexpr's previous summer
    assert (erik.relation, erik.valid_from, erik.text) == ("partner_of", None, "Olga and Erik broke up (summer 2021).")
    assert erik.valid_to == datetime(2021, 6, 1, tzinfo=timezone.utc)


def test_a_state_reported_of_someone_else_is_theirs() -> None:
    numbered = {0: line(0, "Olga", "My dad Anders finally retired and moved to Gotland.")}
    slot = (0, fact("Olga told Tess that Anders finally retired and moved to Gotland.", "Olga", "lives_in",
                    "Gotland", ended=True))
    facts, notes = run(numbered, slot)
    assert ("Anders", "lives_in", "Gotland", False) in triples(facts)
    assert not any(f.subject == "Olga" and f.relation == "lives_in" for f in facts)  # Olga did not move
    assert ("Olga", "child_of", "Anders", False) in triples(facts)  # "my dad Anders"
    assert any("the state told is theirs" in n for n in notes)


def test_a_kin_word_after_a_modifier() -> None:
    # check3's "my twin sister Lucia": "twin" was read as the kin word and "sister" as no name
    assert states.kin_mentions("My twin sister Lucia runs a bakery in Cusco.", "Pablo", "Ines") == [
        states.KinMention("Pablo", "sibling_of", "Lucia", "sister")]
    assert states.kin_mentions("my twin Lucia", "Pablo", None) == [states.KinMention("Pablo", "sibling_of", "Lucia", "twin")]
    assert states.kin_mentions("my half-brother Tom", "Ana", None) == [states.KinMention("Ana", "sibling_of", "Tom", "brother")]


@pytest.mark.parametrize("text, found", [
    ("I switched to Kakao in October, same role.", [("works_at", "Kakao", False)]),
    ("I switched to Linux last year.", []),  # no word of work in the line
    ("I opened Brasa last year, so I'm not at Central anymore.", [("works_at", "Central", True)]),
    ("I no longer work at Acme.", [("works_at", "Acme", True)]),
    ("I relocated to Vancouver in June and joined Amazon there as a senior engineer.",
     [("lives_in", "Vancouver", False), ("works_at", "Amazon", False)]),
    ("Yes, I've lived in Santiago since March 2016.", [("lives_in", "Santiago", False)]),
    ("I've lived in Paris, it was fun.", []),  # an experience, not a home
    ("Now I teach at a culinary school in Valparaiso, where I live.", [("lives_in", "Valparaiso", False)]),
])
def test_line_states_of_switches_departures_and_homes(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.ended) for s in states.line_states(text)] == found


def test_home_answered() -> None:
    assert replies.home_answered("Hi Fatima, where are you based now?", "Toronto. I work for Shopify.") == "Toronto"
    assert replies.home_answered("Where do you live these days?", "Still in Lima, near the sea.") == "Lima"
    assert replies.home_answered("Where are you based now?", "Yes, why?") is None
    assert replies.home_answered("How is Toronto?", "Toronto. Cold.") is None  # not asked where they live


def test_a_bare_home_answer_is_a_residence() -> None:
    numbered = {0: line(0, "Chen", "Hi Fatima, where are you based now?"),
                1: line(1, "Fatima", "Toronto. I work for Shopify as a backend engineer.")}
    slot = (1, fact("Fatima works for Shopify as a backend engineer.", "Fatima", "works_at", "Shopify"))
    facts, _ = run(numbered, (0, None), slot)
    assert set(triples(facts)) == {("Fatima", "works_at", "Shopify", False), ("Fatima", "lives_in", "Toronto", False)}


def test_a_move_is_no_switch_of_employer() -> None:
    # check2's Ivan under the third cut: "moved to Berlin" in a line about work became works_at Berlin
    assert [(s.relation, s.name) for s in states.line_states(
        "I moved to Berlin in December and I'm working for Zalando now.")] == [("lives_in", "Berlin"), ("works_at", "Zalando")]


# ----------------------------------------------------------------- the fourth cut (from check5's failures)

@pytest.mark.parametrize("text, phrase", [
    ("Sofie spent 2012 to 2014 at the Rijksmuseum in Amsterdam as an assistant.", "2012 to 2014"),
    ("I was in Lyon March 2015 until June 2016.", "March 2015 until June 2016"),
    ("He drove from 2010 to Paris.", ""),  # a year and a place are no range
])
def test_a_range_without_from(text: str, phrase: str) -> None:
    assert states.range_phrase(text) == phrase


@pytest.mark.parametrize("text, found", [
    ("I'm engaged to Lars, we met at a climbing gym.", [("partner_of", "Lars", False)]),
    ("Thanks! I start as a nurse at St James's Hospital next month.", [("works_at", "St James's Hospital", False)]),
    ("I'm a data analyst for Renault, based in Paris.", [("lives_in", "Paris", False), ("works_at", "Renault", False)]),
    ("I'm not engaged to Lars.", []),
    ("I work with a team based in Paris.", []),  # the team's base, not the speaker's home
])
def test_line_states_of_engagements_starts_and_bases(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.ended) for s in states.line_states(text)] == found


def test_an_engagement_typed_as_a_marriage_is_a_partnership() -> None:
    numbered = {0: line(0, "Sofie", "I am. I'm engaged to Lars, we met at a climbing gym.")}
    slot = (0, fact("Sofie is engaged to Lars, we met at a climbing gym.", "Sofie", "married_to", "Lars"))
    facts, notes = run(numbered, slot)
    assert triples(facts) == [("Sofie", "partner_of", "Lars", False)]
    assert any("engaged, not married" in n for n in notes)
    assert states.engaged_only("Noor is engaged to Adam and they are getting married next summer.") is False


def test_a_job_begun_is_an_employer_and_a_late_past_is_closed() -> None:
    numbered = {0: line(0, "Tariq", "Thanks! I start as a nurse at St James's Hospital next month."),
                1: line(1, "Sofie", "Only once, I spent 2012 to 2014 at the Rijksmuseum in Amsterdam as an assistant.")}
    facts, _ = run(numbered,
                   (0, fact("Tariq starts as a nurse at St James's Hospital next month.", "Tariq", "started",
                            "St James's Hospital")),
                   (1, fact("Sofie spent 2012 to 2014 at the Rijksmuseum in Amsterdam as an assistant.", "Sofie",
                            "works_at", "the Rijksmuseum")))
    by_subject = {f.subject: f for f in facts}
    tariq, sofie = by_subject["Tariq"], by_subject["Sofie"]
    assert (tariq.relation, tariq.valid_from) == ("works_at", datetime(2022, 9, 1, tzinfo=timezone.utc))
    assert (sofie.valid_from, sofie.valid_to) == (datetime(2012, 1, 1, tzinfo=timezone.utc),
                                                  datetime(2015, 1, 1, tzinfo=timezone.utc))
    old, _ = run(numbered, (0, fact("Tariq starts as a nurse at St James's Hospital next month.", "Tariq", "started",
                                     "St James's Hospital")), rules=7)
    assert old[0].relation == "started"  # v4 kept the model's relation


def test_a_person_asked_after_by_name_and_answered_by_kin() -> None:
    assert replies.kin_answered("And Priya?", "Mei", "My wife just started her PhD at IISc.", "Ravi") == states.KinMention(
        "Ravi", "married_to", "Priya", "wife")
    assert replies.kin_answered("How's Adam doing?", "Sam", "My brother is fine.", "Noor") == states.KinMention(
        "Noor", "sibling_of", "Adam", "brother")
    assert replies.kin_answered("And Adam?", "Sam", "Adam proposed in March!", "Noor") is None
    assert replies.kin_answered("And Priya?", "Mei", "My wife Anna is fine.", "Ravi") is None  # the wife is named otherwise


# ----------------------------------------------------------------- the fifth cut (check7's failures)

def test_employer_named_by_a_role_or_by_teaching() -> None:
    assert states.employer_named("Mariana is head chef at Quintal Verde since January.", "Quintal Verde")
    assert states.employer_named("Linh teaches maths at Hanoi-Amsterdam High School now.", "Hanoi-Amsterdam High School")
    # a school word inside the employer's own name says nothing of studying
    assert states.employer_named("Agnieszka is a nurse at the University Hospital in Krakow.", "the University Hospital")
    assert not states.employer_named("Jon is better at Tennis than Gina.", "Tennis")  # no role noun
    assert not states.employer_named("Melanie is a student at Hongik University.", "Hongik University")
    assert not states.employer_named("Lena studies chemistry and works at Ridgeway High.", "Ridgeway High")


def test_reported_owner_told_about_someone_doing_something() -> None:
    said = "Thabo is telling Sipho about Lwazi finishing his degree and getting a job at Standard Bank in Cape Town."
    assert states.reported_owner(said, "Thabo", "Standard Bank") == "Lwazi"
    assert states.reported_owner("Agnieszka informed Beata that Piotr is now teaching nursing at Trinity College.",
                                 "Agnieszka", "Trinity College") == "Piotr"
    assert states.reported_owner("Agnieszka informed Beata that they divorced in 2017.", "Agnieszka", "2017") is None
    assert states.reported_owner("Gina is telling Jon about Paris being great for a studio.", "Gina", "Paris") is None


def test_a_chef_typed_as_a_student_and_a_brothers_new_job() -> None:
    numbered = {0: line(0, "Mariana", "I'm head chef at Quintal Verde since January!")}
    slot = (0, fact("Mariana is head chef at Quintal Verde since January.", "Mariana", "studies_at", "Quintal Verde"))
    assert ("Mariana", "works_at", "Quintal Verde", False) in triples(run(numbered, slot)[0])
    numbered = {0: line(0, "Thabo", "Lwazi finished his degree and got a job at Standard Bank in Cape Town.")}
    slot = (0, fact("Thabo is telling Sipho about Lwazi finishing his degree and getting a job at Standard Bank in "
                    "Cape Town.", "Thabo", "works_at", "Standard Bank"))
    facts, _ = run(numbered, slot)
    assert ("Lwazi", "works_at", "Standard Bank", False) in triples(facts)
    assert not any(f.subject == "Thabo" and f.relation == "works_at" for f in facts)


def test_a_couple_that_split_up_and_divorced_were_married() -> None:
    # check8's Renato: "broke up" retypes a marriage to a partnership, but not when the statement says divorce
    numbered = {0: line(0, "Renato", "Liza and I split up in January and the divorce came through last month.")}
    slot = (0, fact("Renato split up with Liza in January and the divorce came through last month.", "Renato",
                    "married_to", "Liza", ended=True))
    assert ("Renato", "married_to", "Liza", True) in triples(run(numbered, slot)[0])
    slot = (0, fact("Renato split up with Liza in January.", "Renato", "married_to", "Liza", ended=True))
    assert ("Renato", "partner_of", "Liza", True) in triples(run({0: line(0, "Renato", "Liza and I split up.")}, slot)[0])


# ----------------------------------------------------------------- the session-28 cut (from check7–9's failures)

@pytest.mark.parametrize("text, phrase", [
    ("Aga worked at a games studio called Pixel Wolf from autumn 2009 to spring 2010.", "from autumn 2009 to spring 2010"),
    ("Ben lived in Oslo between the summer of 2011 and spring 2013.", "between the summer of 2011 and spring 2013"),
    ("Nia stayed in Accra until spring 2015.", "until spring 2015"),
    ("Tomek came up in spring 2016.", ""),  # a start, not a range
])
def test_a_range_of_seasons(text: str, phrase: str) -> None:
    assert states.range_phrase(text) == phrase


@pytest.mark.parametrize("text, found", [
    ("No, I'm back in Johannesburg since last November.", [("lives_in", "Johannesburg", False)]),
    ("We're back in Leeds now.", [("lives_in", "Leeds", False)]),
    ("I came here in June. I got a developer job at Credit Suisse.", [("works_at", "Credit Suisse", False)]),
    ("I got a new job at the Ministry of Health last week.", [("works_at", "Ministry of Health", False)]),
    ("And I moved to Tokyo last year for a job at Sony.", [("lives_in", "Tokyo", False), ("works_at", "Sony", False)]),
    ("We came up in spring 2016 when Intel offered me a job at their campus.", [("works_at", "Intel", False)]),
    ("I quit Credit Suisse at Christmas. Now I'm at Allegro, working on their search.",
     [("works_at", "Allegro", False)]),
    ("I teach nursing at Trinity College now.", [("works_at", "Trinity College", False)]),
    ("And I left the department when I moved to Sydney to lecture at UNSW.",
     [("lives_in", "Sydney", False), ("works_at", "UNSW", False)]),
    # not a job held: declined, hedged, asked, or no word of work
    ("Google offered me a job but I turned it down.", []),
    ("I might take a job at Google.", []),
    ("Would you take a job at Google?", []),
    ("Now I'm at Heathrow, waiting for my flight.", []),
    ("I'm in Paris for a conference.", []),
])
def test_line_states_of_jobs_got_offered_and_taught_and_homes_returned_to(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.ended) for s in states.line_states(text)] == found


def test_a_past_told_late_in_seasons_is_closed_at_its_end() -> None:
    told = datetime(2018, 11, 3, 9, tzinfo=timezone.utc)
    numbered = {0: line(0, "Agnieszka", "From autumn 2009 to spring 2010 I lived in Katowice and worked at a tiny games "
                                        "studio called Pixel Wolf.", told)}
    slot = (0, fact("Agnieszka worked at a tiny games studio called Pixel Wolf from autumn 2009 to spring 2010.",
                    "Agnieszka", "works_at", "Pixel Wolf"))
    facts, _ = run(numbered, slot)
    job = next(f for f in facts if f.object == "Pixel Wolf")
    assert (job.valid_from, job.valid_to) == (datetime(2009, 9, 1, tzinfo=timezone.utc),
                                              datetime(2010, 6, 1, tzinfo=timezone.utc))


def test_a_season_dates_a_state_under_the_state_rules_only() -> None:
    told = datetime(2018, 11, 3, 9, tzinfo=timezone.utc)
    numbered = {0: line(0, "Agnieszka", "We came up in spring 2016 when Intel offered me a job at their campus in Oliwa.",
                        told)}
    facts, _ = run(numbered, (0, None))  # the model wrote nothing for the line
    intel = [f for f in facts if f.object == "Intel"]
    assert [(f.relation, f.valid_from) for f in intel] == [("works_at", datetime(2016, 3, 1, tzinfo=timezone.utc))]
    slot = (0, fact("Agnieszka moved to Gdansk in spring 2016.", "Agnieszka", "lives_in", "Gdansk"))
    for rules, start in ((13, datetime(2016, 3, 1, tzinfo=timezone.utc)), (7, told)):
        home = next(f for f in run(numbered, slot, rules=rules)[0] if f.object == "Gdansk")
        assert home.valid_from == start, rules  # rules 7 (v4) replay as they were measured: no seasons


@pytest.mark.parametrize("text, speaker, obj, owner", [
    ("Katerina got the job at the big pharmacy in Patras, so now she lectures me.", "Nikos", "Patras", "Katerina"),
    ("Oh, and Katerina finally left Patras, she runs a pharmacy in Heraklion now.", "Nikos", "Heraklion", "Katerina"),
    ("Ha, no, I'm dating Zainab, she's a doctor at Lagos University Teaching Hospital.", "Olu",
     "Lagos University Teaching Hospital", "Zainab"),
    ("Zainab and I got married in June, she works at Aga Khan Hospital here now.", "Olu", "Aga Khan Hospital", "Zainab"),
    ("My brother Piotr is in Dublin. He's been wiring houses there.", "Aga", "Dublin", "Piotr"),
    ("He's with Qatar National Bank now.", "Omar", "Qatar National Bank", ""),  # someone else, not named here
    ("My mom still lives in Lagos.", "Olu", "Lagos", ""),
    ("Mom still lives in Lagos.", "Olu", "Lagos", ""),
    # the speaker's own
    ("I quit Costamare in July and started a master's at Aristotle University.", "Nikos", "Aristotle University", None),
    ("Aroha and I got married in 2017 and moved to Blenheim the year after.", "Nikos", "Blenheim", None),
    ("My sister and I work at Google.", "Olu", "Google", None),
    ("Me and Tom moved to Paris last year.", "Ana", "Paris", None),
    ("I work at the Bank of America in New York.", "Ana", "New York", None),
    ("Mostly just chilling at home. Playing video games helps.", "Nate", "home", None),  # conv-42: no name
    ("I'm at Cloudy Bay, and they made me head winemaker.", "Nikos", "Cloudy Bay", None),
    ("Lena moved to Leeds.", "Omar", "Paris", None),  # the object is not in the line
])
def test_line_owner(text: str, speaker: str, obj: str, owner: str | None) -> None:
    assert states.line_owner(text, speaker, obj) == owner


def test_a_relatives_job_told_by_the_speaker_is_the_relatives() -> None:
    # check8's Nikos and check6's Olu: the model gave the speaker a sister's or a wife's job, which closed his own
    numbered = {0: line(0, "Nikos", "Katerina got the job at the big pharmacy in Patras, so now she lectures me."),
                1: line(1, "Olu", "Zainab and I got married in June, she works at Aga Khan Hospital here now."),
                2: line(2, "Omar", "He's with Qatar National Bank now.")}
    facts, notes = run(numbered,
                       (0, fact("Nikos works at Patras.", "Nikos", "works_at", "Patras")),
                       (1, fact("Olu told Kemi that she works at Aga Khan Hospital.", "Olu", "works_at",
                                "Aga Khan Hospital")),
                       (2, fact("Omar is with Qatar National Bank now.", "Omar", "works_at", "Qatar National Bank")))
    assert ("Katerina", "works_at", "Patras", False) in triples(facts)
    assert ("Zainab", "works_at", "Aga Khan Hospital", False) in triples(facts)
    assert not any(f.subject in ("Nikos", "Olu", "Omar") and f.relation == "works_at" for f in facts)
    assert any("someone it does not name" in n for n in notes)
    # v4's rules 7 keep the model's reading: its replays stay as they were measured
    assert ("Nikos", "works_at", "Patras", False) in triples(run(numbered, (0, fact(
        "Nikos works at Patras.", "Nikos", "works_at", "Patras")), rules=7)[0])


@pytest.mark.parametrize("text, found", [
    ("We've been in Helsinki since May 2021, when Nokia hired Kerem.", [("lives_in", "Helsinki", False)]),
    ("I've been in Paris for two years now.", [("lives_in", "Paris", False)]),
    ("I've been in Paris for a conference.", []),
    ("I graduated last summer, Tabanlioglu Architects took me on.", [("works_at", "Tabanlioglu Architects", False)]),
    ("The bus took me to Leeds.", []),
    ("But I'm back at Dokuz Eylul for my third year of architecture.", [("studies_at", "Dokuz Eylul", False)]),
    ("I'm back at Google, same team.", [("works_at", "Google", False)]),
    ("Barely! Final year of English at Hanoi University, thesis due soon.", [("studies_at", "Hanoi University", False)]),
    ("My third year of civil engineering at KNUST starts next week.", [("studies_at", "KNUST", False)]),
    ("I quit Costamare and started a master's in oenology at Aristotle University.",
     [("studies_at", "Aristotle University", False)]),
    ("My sister is doing a master's at Oxford.", []),  # hers, not the speaker's
    ("At Christmas I quit my job.", []),  # a holiday is no employer
])
def test_line_states_of_homes_kept_hires_and_studies(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.ended) for s in states.line_states(text)] == found


@pytest.mark.parametrize("question, answer, home", [
    ("Still in Athens, or has Ioanna dragged you off to an island?", "Still in Athens, and yes, still with Ioanna.",
     "Athens"),
    ("Ivan! Are you still in Prague?", "Yes, still in Prague. I'm a developer at Avast.", "Prague"),
    ("Happy new year! Still in Sapporo?", "Yes! Snow up to my knees.", "Sapporo"),
    ("Are you still in Sapporo?", "No, I moved to Tokyo.", None),
    ("Are you still in Sapporo?", "Yes, but in Otaru now.", None),
    ("Is Tom still in Berlin?", "Yes, he loves it.", None),  # Tom's home, not the answerer's
    ("Still in Sapporo?", "Haha, where else would I be?", None),
])
def test_a_home_asked_after_and_confirmed(question: str, answer: str, home: str | None) -> None:
    assert replies.home_answered(question, answer) == home


def test_a_course_read_from_the_line_is_a_school_and_going_out_is_a_couple() -> None:
    # the line state's own statement names the relation (a KeyError here once failed the whole chunk)
    numbered = {0: line(0, "Linh", "Barely! Final year of English at Hanoi University, thesis due soon."),
                1: line(1, "Zeynep", "Kerem, from the design team. We've been going out since March.")}
    facts, _ = run(numbered, (0, None),
                   (1, fact("Zeynep and Kerem have been going out since March.", "Zeynep", "friend_of", "Kerem")))
    assert ("Linh", "studies_at", "Hanoi University", False) in triples(facts)
    assert ("Zeynep", "partner_of", "Kerem", False) in triples(facts)
    assert next(f for f in facts if f.object == "Hanoi University").text == "Linh studies at Hanoi University."


# ----------------------------------------------------------------- session 29: check10's failures

@pytest.mark.parametrize("text, found", [
    # a past told with its years: both ends, the job named with "a" before it, a branch's "'s office" cut off
    ("Funny, I never told you this, but before uni, in 2006 and 2007, I lived in Dublin for a year and a half "
     "and worked at a Dell call centre.",
     [("lives_in", "Dublin", False, "between 2006 and 2007"), ("works_at", "Dell", False, "between 2006 and 2007")]),
    ("Funny thing, I never told you, but before Mercado Libre I spent 2008 to 2010 in Montevideo, working at "
     "Sabre's office there.",
     [("lives_in", "Montevideo", False, "2008 to 2010"), ("works_at", "Sabre", False, "2008 to 2010")]),
    ("From 2005 to 2007 I lived in Port Harcourt and was a graduate trainee at Shell.",
     [("lives_in", "Port Harcourt", False, "From 2005 to 2007"), ("works_at", "Shell", False, "From 2005 to 2007")]),
    ("I lived in Dublin and worked at Dell.", []),  # no years: when, the line does not say
    ("From 2008 to 2010 my sister lived in Tokyo.", []),  # hers
    # been at a place a while; a return home; a job lost to layoffs; a separation that ends in divorce
    ("I've been at Avast for three years now, ever since I moved here.", [("works_at", "Avast", False, "for three years now")]),
    ("I've been at Mercado Libre since January, on the payments team.", [("works_at", "Mercado Libre", False, "")]),
    ("I've been at the beach all day.", []),
    ("Lucie and I separated in 2021 and the divorce was finalised last year, so I came back to Brno in early 2022.",
     [("married_to", "Lucie", True, ""), ("lives_in", "Brno", False, "")]),
    ("I came back to Rome for a week to see my parents.", []),  # a trip
    ("I came back to Milan with three words of Spanish and a fan.", []),  # undated: a return told late
    ("Mine is less cheerful, the layoffs at Avast got me in February.", [("works_at", "Avast", True, "")]),
    ("Mom let me go to the party.", []),
    # "I'll" is no part of a name, and "next time" is no plain statement
    ("Deal. Next time I'm in Prague I'll bring a very late wedding present.", []),
    ("It's been two years since we moved here, when I joined Zalando, and the job is great.",
     [("works_at", "Zalando", False, "")]),
    ("I work at McDonald's.", [("works_at", "McDonald's", False, "")]),
])
def test_line_states_told_late_and_in_other_words(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.ended, s.time) for s in states.line_states(text)] == found


@pytest.mark.parametrize("question, answer, told", [
    ("Cute. Any news from Petra?", "She left Skoda last year and moved to Munich, she's with BMW now.",
     [("Petra", "works_at", "Skoda", True), ("Petra", "lives_in", "Munich", False), ("Petra", "works_at", "BMW", False)]),
    ("And Petra, is she still refusing to leave Munich?",
     "Ha, she broke her promise: she moved to Stuttgart two years ago and works for Bosch now.",
     [("Petra", "lives_in", "Stuttgart", False), ("Petra", "works_at", "Bosch", False)]),
    ("Is Minho still at Naver?", "No, he went back to Samsung in 2022 and they sent him to Austin, Texas.",
     [("Minho", "works_at", "Samsung", False), ("Minho", "lives_in", "Austin", False)]),
    ("Port Harcourt! What about Emeka, still at LUTH?",
     "No, he moved to Houston last year and is a resident at Houston Methodist now.",
     [("Emeka", "lives_in", "Houston", False), ("Emeka", "works_at", "Houston Methodist", False)]),
    ("How's Anna?", "She left Paris.", []),  # a home or a job: the answer does not say
    ("How's Anna?", "I moved to Lyon and I work at Sanofi.", []),  # the answerer's, not Anna's
    ("Even your brother?", "He's at Samsung.", []),  # "Even" names nobody
    ("Did Tom or Anna call?", "She's with BMW now.", []),  # two names: whose?
    ("How's Anna?", "She might move to Lyon.", []),  # a plan
])
def test_what_an_answer_tells_of_the_person_asked_after(question: str, answer: str, told: list) -> None:
    assert [(s.who, s.relation, s.name, s.ended) for s in told_states_of(question, answer)] == told


def told_states_of(question: str, answer: str) -> list:
    return replies.told_states(question, "Asker", answer, "Teller")


@pytest.mark.parametrize("question, answer, place", [
    ("So how is Prague treating you?", "I've been at Avast since 2010, ever since I moved here after graduating.", "Prague"),
    ("How's Berlin in lockdown?", "It's been two years since we moved here in spring 2018.", "Berlin"),
    ("How are things in Buenos Aires?", "We moved here last year.", "Buenos Aires"),
    ("How's Madrid?", "I might have moved here too early.", None),
    ("How's Madrid?", "Hot! Tom moved to Seville.", None),
    ("Where are you?", "I moved here last year.", None),  # no place asked
])
def test_here_is_the_place_the_question_names(question: str, answer: str, place: str | None) -> None:
    assert [s.name for s in replies.moved_here(question, answer)] == ([place] if place else [])


def test_a_job_asked_after_and_denied() -> None:
    st = replies.job_answered("And you? Still at Glovo?", "No, the layoffs got me in March last year. I took a break.")
    assert (st.relation, st.name, st.ended, st.clause) == ("works_at", "Glovo", True,
                                                          "No, the layoffs got me in March last year.")
    assert replies.job_answered("Still at Glovo?", "No, still there, but thinking of leaving.") is None
    assert replies.job_answered("Still at Glovo?", "Yes, same desk.") is None
    assert replies.job_answered("What about Emeka, still at LUTH?", "No, he left.", who="Emeka").who == "Emeka"


def test_titles_and_couples_as_subjects() -> None:
    assert states.plain_subject("Dr Hyejin", ["Ingrid", "Hyejin"]) == "Hyejin"
    assert states.plain_subject("Dr Emeka", ["Malik", "Adaeze"]) == "Emeka"
    assert states.plain_subject("Dr Pepper Company", ["Jon"]) == "Dr Pepper Company"
    assert states.pair_subject("Lucie and Radek", "Radek") == "Lucie"
    assert states.pair_subject("Radek & Lucie", "radek") == "Lucie"
    assert states.pair_subject("Lucie and Radek", "Prague") is None
    assert states.pair_subject("Lucie", "Radek") is None


def test_march_last_year_is_march_of_last_year() -> None:
    from chronomem import timeexpr
    from chronomem.timewords import find_time_phrase
    said = datetime(2024, 9, 12, tzinfo=timezone.utc)
    assert timeexpr.resolve("in March last year", said).start == datetime(2023, 3, 1, tzinfo=timezone.utc)
    assert find_time_phrase("the layoffs got me in March last year.", seasons=True) == "in March last year"
    assert find_time_phrase("the layoffs got me in March last year.") == "in March"  # older rule sets: as recorded


def test_answers_about_a_relative_become_her_facts_with_their_own_times() -> None:
    # check10's Radek: Petra's moves and jobs, told as answers; the model wrote nothing usable for them
    q1, q2 = datetime(2013, 6, 20, tzinfo=timezone.utc), datetime(2023, 5, 18, tzinfo=timezone.utc)
    numbered = {0: line(0, "Vesna", "Cute. Any news from Petra?", q1),
                1: line(1, "Radek", "She left Skoda last year and moved to Munich, she's with BMW now.", q1)}
    facts, notes = run(numbered, (1, fact("Petra is in Munich.", "Petra", "did", "Munich")))
    got = {(f.subject, f.relation, f.object): (f.valid_from, f.valid_to) for f in facts}
    year = datetime(2012, 1, 1, tzinfo=timezone.utc)
    assert got[("Petra", "works_at", "Skoda")] == (None, year)
    assert got[("Petra", "lives_in", "Munich")] == (year, None)
    assert got[("Petra", "works_at", "BMW")] == (year, None)
    # a past told late replaces the model's undated copy of it from the same line
    numbered = {0: line(0, "Vesna", "At least you've lived abroad before.", q2),
                1: line(1, "Radek", "Funny, before uni, in 2006 and 2007, I lived in Dublin.", q2)}
    facts, notes = run(numbered, (1, fact("Radek is sharing his experience of living in Dublin.", "Radek",
                                          "lives_in", "Dublin")))
    dublin = [f for f in facts if f.object == "Dublin"]
    assert [(f.valid_from.year, f.valid_to.year) for f in dublin] == [(2006, 2008)]
    assert any(n.startswith("dated from E:1") for n in notes)
    # the couple as subject: "Lucie and Radek married_to Radek" is Lucie's marriage to Radek
    numbered = {0: line(0, "Radek", "Lucie and I just had our first anniversary. We got married last August.", q2)}
    facts, _ = run(numbered, (0, fact("Lucie and Radek got married last August.", "Lucie and Radek", "married_to",
                                      "Radek")))
    assert ("Lucie", "married_to", "Radek", False) in triples(facts)


# ----------------------------------------------------------------- a rule that raises

def test_a_failing_rule_step_costs_its_own_facts_not_the_chunk(monkeypatch: pytest.MonkeyPatch,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    from chronomem.extract.observations import RULE_FAILED

    def broken(text: str) -> list:
        raise KeyError("studies_at")  # session 28's bug: a line state's statement without its verb

    monkeypatch.setattr(states, "line_states", broken)
    numbered = {0: line(0, "Maya", "I work at Acme as a product manager."),
                1: line(1, "Maya", "I moved to Lisbon last month.")}
    with caplog.at_level("ERROR", logger="chronomem.extract.observations"):
        facts, notes = run(numbered, (0, fact("Maya works at Acme as a product manager.", "Maya", "works_at", "Acme")),
                           (1, fact("Maya moved to Lisbon last month.", "Maya", "moved_to", "Lisbon")))
    assert ("Maya", "works_at", "Acme", False) in triples(facts)  # the model's facts are kept
    assert ("Maya", "moved_to", "Lisbon", False) in triples(facts)
    assert [n for n in notes if n.startswith(RULE_FAILED)] == [
        f"{RULE_FAILED}: the line states step: KeyError: 'studies_at'"]
    # the log says which error and where (the frames), and quotes none of the error's words (they may
    # be the user's): logs outlive forget
    message = caplog.records[0].getMessage()
    assert message.splitlines()[0] == f"{RULE_FAILED}: KeyError; the chunk keeps its other facts"
    assert "in broken" in message and caplog.records[0].exc_info is None  # frames, not the exception's words


def test_a_rule_that_raises_on_one_statement_drops_that_statement_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.extract.observations import RULE_FAILED

    def broken(line: str, speaker: str, obj: str) -> str | None:
        if obj == "Acme":
            raise IndexError("list index out of range")
        return None

    monkeypatch.setattr(states, "line_owner", broken)
    numbered = {0: line(0, "Maya", "I work at Acme as a product manager."),
                1: line(1, "Maya", "I moved to Lisbon last month.")}
    facts, notes = run(numbered, (0, fact("Maya works at Acme as a product manager.", "Maya", "works_at", "Acme")),
                       (1, fact("Maya moved to Lisbon last month.", "Maya", "moved_to", "Lisbon")))
    assert ("Maya", "moved_to", "Lisbon", False) in triples(facts)
    assert not any(f.text.startswith("Maya works at Acme as") for f in facts)  # that statement's fact is gone
    assert any(n.startswith(f"{RULE_FAILED}: the rules for the statement 'Maya works at Acme") for n in notes)


def test_memory_add_reports_a_failing_rule_and_keeps_the_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem import Memory
    from chronomem.extract.observations import RULE_FAILED

    from test_extract_line_observations import MAYA, SlotLLM

    def broken(text: str) -> list:
        raise KeyError("studies_at")

    monkeypatch.setattr(states, "line_states", broken)
    with Memory(":memory:", llm=SlotLLM()) as mem:  # the default method (v10) runs the state rules
        res = mem.add(MAYA, user_id="u1", session_id="s1", timestamp="2023-06-02T10:00:00Z")
        assert res.ok and res.messages_extracted == 3 and not res.failed_chunks
        assert any(w.startswith(RULE_FAILED) and "line states" in w for w in res.warnings)
        assert {(f.relation, f.object) for f in mem.facts(user_id="u1", subject="Maya")} >= {
            ("works_at", "Acme"), ("lives_in", "Lisbon")}


# ----------------------------------------------------------------- session 29, second cut: check11's failures

@pytest.mark.parametrize("question, answer, place", [
    ("Saw your photos from Liseberg, are you visiting Gothenburg?", "Not visiting, living. We moved back in June last year.",
     "Gothenburg"),
    ("Welcome home! How does Tashkent feel after all those years away?", "I came back in March last year.", "Tashkent"),
    ("It's so nice having you back in Nairobi! Are you settling in?", "We've been back since January last year.", "Nairobi"),
    ("Are you visiting Gothenburg?", "I came back from Oslo on Monday.", None),  # back from elsewhere
    ("Are you in Rome or in Paris now?", "We moved back last year.", None),  # two places asked
])
def test_back_is_the_place_the_question_names(question: str, answer: str, place: str | None) -> None:
    assert [s.name for s in replies.moved_here(question, answer)] == ([place] if place else [])


@pytest.mark.parametrize("question, answer, partner", [
    ("And the tall girl from your photos?", "Femke! We got engaged in February on a frozen canal.", "Femke"),
    ("Fame at last. And Felipe, anything to report?", "Well... he proposed on the beach at Zapallar in October!", "Felipe"),
    ("'We'? So Frida came along?", "She did. And at Midsummer I finally asked her, and she said yes!", "Frida"),
    ("How was the trip?", "We got engaged!", None),  # to whom, neither line says
    ("And Felipe?", "He might propose at Christmas.", None),
])
def test_an_engagement_is_with_the_person_named(question: str, answer: str, partner: str | None) -> None:
    got = replies.couple_answered(question, "Asker", answer, "Teller")
    assert [(s.relation, s.name) for s in got] == ([("partner_of", partner)] if partner else [])


@pytest.mark.parametrize("text, found", [
    ("Before we met in 2008 I spent all of 2007 in Seoul as a trainee at Samsung.",
     [("lives_in", "Seoul", "between 2007 and 2007"), ("works_at", "Samsung", "between 2007 and 2007")]),
    ("In 2006, after my first year, I dropped out and lived in Arusha for a year.",
     [("lives_in", "Arusha", "between 2006 and 2006")]),
    ("I never told you I spent 2008 there studying forestry at the Universidad Austral.",
     [("studies_at", "Universidad Austral", "between 2008 and 2008")]),
    ("I lived in Leeds in 2015 and I still do.", []),  # it goes on
    ("I never lived in Paris in 2008.", []),
    ("No, I jumped to Barclays last year, I lead a fraud analytics team.", [("works_at", "Barclays", "")]),
])
def test_one_past_year_and_a_jump(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.time) for s in states.line_states(text)] == found


def test_a_relative_sent_abroad_by_an_employer_and_a_job_taken() -> None:
    got = replies.told_states("Will Cristobal make it back?", "Ignacio",
                             "He'd better, though BHP moved him to Perth in June.", "Catalina")
    assert [(s.who, s.relation, s.name) for s in got] == [("Cristobal", "works_at", "BHP"),
                                                          ("Cristobal", "lives_in", "Perth")]
    got = replies.told_states("How's Ebba, still in Uppsala forever?", "Henrik",
                             "She took a cardiology job at Rikshospitalet and moved to Oslo last year.", "Oskar")
    assert [(s.who, s.relation, s.name) for s in got] == [("Ebba", "works_at", "Rikshospitalet"),
                                                          ("Ebba", "lives_in", "Oslo")]


def test_someone_described_as_a_person_is_no_employer() -> None:
    numbered = {0: line(0, "Emmi", "And Ville? Your mum mentioned a Ville."),
                1: line(1, "Aino", "My mum talks too much. But yes, Ville. He's a carpenter and he fixed my cello case.")}
    facts, notes = run(numbered, (1, fact("Aino mentioned Ville, who is a carpenter and fixed her cello case.", "Aino",
                                          "works_at", "Ville")))
    assert not any(f.relation == "works_at" for f in facts)
    assert any("says who Ville is" in n for n in notes)


# ----------------------------------------------------------------- session 30: check12's failures

@pytest.mark.parametrize("text, found", [
    ("Barely alive. Second year at the Politecnico di Milano is all models and no sleep.",
     [("studies_at", "Politecnico di Milano", False)]),
    ("Never. It's midterms at the American University in Cairo, I basically live in the library.",
     [("studies_at", "American University", False)]),
    ("My first year at Google was rough.", []),  # a year at a company is a job, not a school
    ("So in January I opened my own studio. Studio Ardesia. It's me and a printer.",
     [("works_at", "Studio Ardesia", False)]),
    ("So in August I started my own thing online, Jousi Studio, cello lessons over video.",
     [("works_at", "Jousi Studio", False)]),
    ("I might open my own studio. Studio Ardesia, maybe.", []),  # a hedge
    ("I quit! March was my last month there. I start at Tokopedia next Monday, product team.",
     [("works_at", "Tokopedia", False)]),
    ("I sold Brasa in 2020 and now I teach at a culinary school.", [("works_at", "Brasa", True)]),
])
def test_a_school_year_a_business_of_ones_own_a_start_and_a_sale(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.ended) for s in states.line_states(text)] == found


def test_four_years_is_no_one_and_a_project_is_no_employer() -> None:
    assert states.line_owner("Four years at Tokopedia was enough.", "Dewi", "Tokopedia") is None
    assert states.a_project("a bridge project in Cairo") and not states.a_project("Project Lead Ltd")
    numbered = {0: line(0, "Hossam", "Engineer Karim! How's Orascom?"),
                1: line(1, "Karim", "Started at Orascom Construction in September, and now I'm on a bridge project "
                                    "in Cairo.")}
    facts, notes = run(numbered, (1, fact("Karim is on a bridge project in Cairo.", "Karim", "works_at",
                                          "bridge project in Cairo")))
    assert not any(f.relation == "works_at" and "project" in f.object for f in facts)
    assert any("a project is no employer" in n for n in notes)


@pytest.mark.parametrize("question, answer, place, start", [
    ("How long have you been in Dubai now?", "Since May last year. Aramex, operations engineering.", "Dubai",
     datetime(2021, 5, 1, tzinfo=timezone.utc)),
    ("Are you two staying in Stockholm?", "For now, definitely. We've been here since January last year.",
     "Stockholm", datetime(2021, 1, 1, tzinfo=timezone.utc)),
    ("Are you visiting Gothenburg?", "Yes, we've been here for a week.", None, None),  # a stay, not a home
    ("How long have you been in Dubai now?", "Too long, I want to leave.", None, None),
])
def test_how_long_here_answered_with_since(question: str, answer: str, place: str | None,
                                           start: datetime | None) -> None:
    got = replies.moved_here(question, answer)
    assert [s.name for s in got] == ([place] if place else [])
    if place:
        facts, _ = run({0: line(0, "Friend", question), 1: line(1, "Me", answer)})
        assert [(f.subject, f.relation, f.object, f.valid_from) for f in facts] == [("Me", "lives_in", place, start)]


@pytest.mark.parametrize("question, answer, told", [
    ("Is it true Wayan sends memes to your whole family group now?",
     "Every morning at 5. We've only been married since May last year and he outranks me.",
     [("married_to", "Wayan", False)]),
    ("How are you otherwise? After everything with Hendra.",
     "Better. We separated in 2019 and the divorce was final in February last year.", [("married_to", "Hendra", True)]),
    ("And Jonas?", "We split up in March.", [("partner_of", "Jonas", True)]),  # no divorce: a couple
    ("How was the wedding?", "We got married in the rain!", []),  # to whom, neither line says
])
def test_a_marriage_or_a_separation_with_the_person_asked_after(question: str, answer: str, told: list) -> None:
    got = replies.couple_answered(question, "Asker", answer, "Teller")
    assert [(s.relation, s.name, s.ended) for s in got] == told


@pytest.mark.parametrize("text, phrase", [
    ("Eighteen months, and she talks. Three years married and Laila still can't believe it.", "for Three years"),
    ("Since last October, so yes, eight months of being Hendra's wife at every family event.", "since last October"),
    ("We've been married for two years now.", "for two years"),
    ("Three years at Aramex and I'm done.", ""),
    ("Are you married since May?", ""),
])
def test_how_long_a_marriage_has_lasted(text: str, phrase: str) -> None:
    assert states.marriage_length(text) == phrase


def test_a_marriage_dated_by_its_length_and_a_home_by_an_earlier_line() -> None:
    ts = datetime(2019, 10, 2, tzinfo=timezone.utc)
    numbered = {0: line(0, "Hossam", "With a baby! Farida must be what, one?", ts),
                1: line(1, "Karim", "Eighteen months. Three years married and Laila still can't believe it.", ts)}
    facts, _ = run(numbered, (1, fact("Karim is married to Laila.", "Karim", "married_to", "Laila")))
    assert [(f.object, f.valid_from) for f in facts if f.relation == "married_to"] == [
        ("Laila", datetime(2016, 10, 2, tzinfo=timezone.utc))]
    # "We've been in Manchester since 2012" dates the model's undated copy from a later line of the chunk
    numbered = {0: line(0, "Kwame", "We've been in Manchester since 2012, when Arup hired me.", ts),
                1: line(1, "Yaw", "And Efua?", ts),
                2: line(2, "Kwame", "She moved banks. Manchester suits us, even the rain.", ts)}
    facts, _ = run(numbered, (2, fact("Kwame lives in Manchester.", "Kwame", "lives_in", "Manchester")))
    assert [(f.object, f.valid_from) for f in facts if f.relation == "lives_in"] == [
        ("Manchester", datetime(2012, 1, 1, tzinfo=timezone.utc))]


# ----------------------------------------------------------------- session 30, fourth cut: check13's failures

@pytest.mark.parametrize("text, found", [
    ("It is! so I came home that summer. Got a job at the Marine Institute out in Oranmore, which is what I wanted",
     [("works_at", "Marine Institute", False)]),
    ("Passed last November 🙏 Started at St. Luke's Medical Center in Quezon City in January. ER.",
     [("works_at", "St. Luke's Medical Center", False)]),
    ("Tudo. Work at Serra Azul Mineração is ok, lots of spreadsheets about iron ore.",
     [("works_at", "Serra Azul Mineração", False)]),
    ("Porto! I quit Serra Azul in August and started a master's in engineering management at the Universidade do "
     "Porto. Two years", [("studies_at", "Universidade do Porto", False)]),
    ("In March, yes. Zeit Online offered me a spot on their digital politics team here in Berlin.",
     [("works_at", "Zeit Online", False)]),
    ("Got to go, talk later!", []),  # no subject dropped that names a place or employer
])
def test_chat_that_drops_the_subject_and_names_in_other_languages(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.ended) for s in states.line_states(text)] == found


def test_sentences_end_at_emoji_not_at_a_saints_name() -> None:
    assert states.sentences("Passed 🙏 Started at St. Luke's. ER!") == ["Passed 🙏", "Started at St. Luke's.", "ER!"]
    assert states.with_subject("Moved back in 2022 with Selin") == "I moved back in 2022 with Selin"
    assert states.with_subject("Moving is hard") == "Moving is hard"


@pytest.mark.parametrize("question, answer, home", [
    ("Wait where ARE you??", "Porto! I quit Serra Azul in August.", "Porto"),
    ("Jom! Long time. Still in Cebu?", "Still here lol, where else.", "Cebu"),
    ("Where are you going tonight?", "Porto! The club.", None),  # not a home asked
])
def test_where_are_you_and_still_here(question: str, answer: str, home: str | None) -> None:
    assert replies.home_answered(question, answer) == home


def test_here_without_a_subject_and_a_job_asked_by_what_it_is() -> None:
    got = replies.moved_here("How's Dubai? Hot?", "Hot is an understatement. Been here since March last year")
    assert [(s.relation, s.name) for s in got] == [("lives_in", "Dubai")]
    job = replies.job_named("Still at that consultancy in Dublin?", "Yep, Tidewell Consulting. Nearly three years.")
    assert job is not None and (job.relation, job.name) == ("works_at", "Tidewell Consulting")
    assert replies.job_named("Still at Tidewell?", "Yep, Tidewell Consulting.") is None  # named: job_answered's
    assert replies.job_named("Still at that consultancy?", "No, Arup now.") is None
    numbered = {0: line(0, "Declan", "Still at that consultancy in Dublin?"),
                1: line(1, "Siobhan", "Yep, Tidewell Consulting. Nearly three years since I moved up.")}
    facts, _ = run(numbered)
    assert [(f.subject, f.relation, f.object) for f in facts] == [("Siobhan", "works_at", "Tidewell Consulting")]


def test_a_state_copied_to_the_asker_whose_line_never_names_it_goes() -> None:
    numbered = {0: line(0, "Putri", "How's married life? Eight months already?"),
                1: line(1, "Dewi", "Since last October, so yes, eight months of being Hendra's wife.")}
    facts, notes = run(numbered,
                       (0, fact("Putri is married to Hendra.", "Putri", "married_to", "Hendra")),
                       (1, fact("Dewi is married to Hendra.", "Dewi", "married_to", "Hendra")))
    assert [(f.subject, f.relation, f.object) for f in facts] == [("Dewi", "married_to", "Hendra")]
    assert any("does not name Hendra" in n for n in notes)
    # both lines name it: neither is a copy
    numbered = {0: line(0, "Ines", "I moved to Montreal too!"), 1: line(1, "Hugo", "Montreal for me since May.")}
    facts, _ = run(numbered, (0, fact("Ines lives in Montreal.", "Ines", "lives_in", "Montreal")),
                   (1, fact("Hugo lives in Montreal.", "Hugo", "lives_in", "Montreal")))
    assert {f.subject for f in facts} == {"Ines", "Hugo"}


# ----------------------------------------------------------------- session 30, fifth cut: check14's failures

@pytest.mark.parametrize("text, found", [
    ("Not anymore, we moved to Tema last month. Abena found a school there too.", [("lives_in", "Tema", False)]),
    ("I don't think so, I never moved to Tema.", []),  # the negation is in the clause itself
    ("So a former colleague and I have set up Sankofa Structures here in Accra. Registered it in August.",
     [("works_at", "Sankofa Structures", False)]),
    ("Guess who's back in Accra for good? We landed in June.", [("lives_in", "Accra", False)]),
    ("Guess who I met in Accra?", []),
])
def test_an_earlier_clause_a_business_set_up_and_a_question_that_tells(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.ended) for s in states.line_states(text)] == found


def test_moved_up_left_for_and_we_live_here() -> None:
    got = replies.told_states("Ten years! And Akosua, still in London?", "Adjoa",
                              "No, she moved up to Manchester last autumn, senior nurse at a hospital there.", "Kwabena")
    assert [(s.who, s.relation, s.name) for s in got] == [("Akosua", "lives_in", "Manchester")]
    got = replies.told_states("Bravo! Is Daniyar still in Almaty doing freight?", "Saule",
                              "He left for Dubai last year, a logistics company hired him.", "Nurlan")
    assert [(s.who, s.relation, s.name) for s in got] == [("Daniyar", "lives_in", "Dubai")]
    got = replies.moved_here("Are you two on holiday in Almaty?", "Not a holiday, we live here now! We moved in February.")
    assert [(s.relation, s.name) for s in got] == [("lives_in", "Almaty")]


def test_an_interjection_is_no_partner_and_a_job_that_pays_for_studies_is_no_school() -> None:
    got = replies.couple_answered("Esteban must be so proud", "Lupita",
                                  "Ay... we broke up in July. He got a scholarship to Spain.", "Xiomara")
    assert [(s.relation, s.name, s.ended) for s in got] == [("partner_of", "Esteban", True)]
    assert replies.couple_answered("Nice photos", "Lupita", "Ay... we broke up in July.", "Xiomara") == []
    assert [(s.relation, s.name) for s in states.line_states(
        "Still at Intel, they're paying half of the master's 🙏 What about work for you?")] == [("works_at", "Intel")]
    assert [(s.relation, s.name) for s in states.line_states(
        "I'm back at Dokuz Eylul for my third year of architecture.")] == [("studies_at", "Dokuz Eylul")]


# ----------------------------------------------------------------- session 33: check16's failures

@pytest.mark.parametrize("text, found", [
    # a question that tells a past: read with its years, and only with them
    ("Funny story: did I ever tell you I spent all of 2008 in Vancouver working as an au pair?",
     [("lives_in", "Vancouver", False, "between 2008 and 2008")]),
    ("Did I ever tell you that I spent 1999 in Macau? I worked for a Portuguese trading house there.",
     [("lives_in", "Macau", False, "between 1999 and 1999")]),
    ("Did I ever tell you I did a part-time MBA at Prasetiya Mulya?", []),  # when: the next sentence says
    ("Did you ever live in Rome?", []),
    # a business of one's own after another verb, or named by "called"
    ("I left Aecon and opened my own firm, Meskel Bridge Consulting — small, just three of us for now.",
     [("works_at", "Meskel Bridge Consulting", False, "")]),
    ("I used the time to start my own thing — an online shop for Mongolian cashmere called Steppe Thread.",
     [("works_at", "Steppe Thread", False, "")]),
    ("I might start my own company, Tiffin Labs.", []),  # a plan
    # a partner introduced by name
    ("Her name is Clara; we have been together for a little over a year.", [("partner_of", "Clara", False, "")]),
    ("His name is Tomas and we've been dating since May.", [("partner_of", "Tomas", False, "")]),
    ("Her name is Clara, she teaches piano.", []),
])
def test_a_question_that_tells_a_business_of_ones_own_and_a_partner_by_name(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.ended, s.time) for s in states.line_states(text)] == found


def test_a_dash_ends_the_clause_a_negation_governs() -> None:
    told = told_states_of("Perfect match, haha. Does Hiwot know? Is she still in Nairobi?",
                          "She was the first to know! But she's not in Nairobi anymore — she moved to London "
                          "last year and works for Vodafone now.")
    assert [(s.who, s.relation, s.name, s.ended) for s in told] == [
        ("Hiwot", "lives_in", "London", False), ("Hiwot", "works_at", "Vodafone", False)]


# ----------------------------------------------------------------- session 33: check17's failures

@pytest.mark.parametrize("question, answer, name", [
    ("so where r u working now", "Coastline Logistics, im an operations analyst. lots of spreadsheets lol", "Coastline Logistics"),
    ("and u started somewhere new right?", "yep Pelagic Robotics since january.", "Pelagic Robotics"),
    ("Still at that consultancy in Dublin?", "Yep, Tidewell Consulting. Nearly three years.", "Tidewell Consulting"),
    ("so where r u working now", "Berlin, at a startup.", None),  # one word: as likely a town
    ("how's the new flat?", "Coastline Logistics, im an operations analyst.", None),  # no job asked
    ("and the job?", "Not great, honestly.", None),
])
def test_a_job_asked_after_and_named_by_the_answer(question: str, answer: str, name: str | None) -> None:
    named = replies.job_named(question, answer)
    assert (named.name if named else None) == name


def test_a_lowercase_word_after_still_at_is_no_employer() -> None:
    # "still at her place?": the name in the question keeps its case (the flag once reached it)
    assert replies.job_answered("finally! and leonie? still at her place?", "nope we moved in together") is None
    assert replies.job_named("still at the port?", "yep, the port.") is None


@pytest.mark.parametrize("text, found", [
    ("crazy busy. almost a year at Kestrel Consulting now, joined last july as an associate.",
     [("works_at", "Kestrel Consulting", "for a year now")]),
    ("Two years at Google now and I love it.", [("works_at", "Google", "for Two years now")]),
    ("Four years at Tokopedia was enough.", []),  # not "now": over
    ("My sister has been five years at Siemens now.", []),  # hers
])
def test_time_at_a_place_said_with_now(text: str, found: list) -> None:
    assert [(s.relation, s.name, s.time) for s in states.line_states(text)] == found


def test_a_company_is_no_home_and_no_partner() -> None:
    assert states.organisation_named("Clover Systems") and states.organisation_named("Gulfstar Telecom")
    assert not states.organisation_named("Cork") and not states.organisation_named("Santa Cruz")
    numbered = {0: line(0, "Diego", "so i left brightwater, been at Clover Systems since last summer, actual dev role"),
                1: line(1, "Anjali", "no he moved to dubai in spring last year, he's with Gulfstar Telecom now.")}
    facts, _ = run(numbered,
                   (0, fact("Diego left Brightwater and moved to Clover Systems since last summer.", "Diego", "lives_in",
                            "Clover Systems")),
                   (1, fact("Anjali is with Gulfstar Telecom now.", "Anjali", "partner_of", "Gulfstar Telecom")))
    assert ("Diego", "works_at", "Clover Systems", False) in triples(facts)
    assert not any(f.relation in ("lives_in", "partner_of") and f.object in ("Clover Systems", "Gulfstar Telecom")
                   for f in facts)


@pytest.mark.parametrize("statement, subject, obj, owner", [
    # session 33: the model's reported speech without "that", and congratulations: the news is the other's
    ("Tomasz said Pawel left Portova and moved to Gdynia in the spring.", "Tomasz", "Gdynia", "Pawel"),
    ("Diego said Lucia moved to Lisbon two years ago.", "Diego", "Lisbon", "Lucia"),
    ("Tomasz congratulated Kenji on his new job at Ferrowick Engineering.", "Tomasz", "Ferrowick Engineering", "Kenji"),
    ("Tomasz said he moved to Poznan in February.", "Tomasz", "Poznan", None),
    ("Ana said Pawel left, and she moved to Gdynia.", "Ana", "Gdynia", None),  # a new subject before the object
])
def test_reported_speech_without_that_and_congratulations(statement: str, subject: str, obj: str,
                                                          owner: str | None) -> None:
    assert states.reported_owner(statement, subject, obj) == owner
