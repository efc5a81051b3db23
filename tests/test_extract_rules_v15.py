"""Rules 15 (extraction v12): rules 8's check of an employer against its statement, read wider.

Rules 11 and 12 (v8, v9) keep a ``works_at`` only when the statement uses a word from rules 8's short
list (working at, job, hired, quit …); rules 14 (v11) add the state rules on top.  On the evolving-state
benchmark that list turned real jobs into catch-all facts — "Lena teaches chemistry at Ridgeway High",
"Marco flies for Alitalia", "Hana is a UX designer at Naver" — and with the job went the state rules'
ending ("left Ridgeway High") and the job "now".  The statements below are the 1.5B model's, from
those runs.  What rules 8 were written to stop stays stopped.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from chronomem.extract.observations import JOBS_15, job_talk, says_typed
from chronomem.extract.pipeline import METHOD_RECIPES

from test_extract_line_observations import fact
from test_extract_states import line, run, triples


@pytest.mark.parametrize("statement", [
    "Lena teaches chemistry at Ridgeway High now.",
    "Tomas is still teaching history at Colegio San Ignacio in Santiago.",
    "Marco flies for Alitalia out of Rome, where we live now.",
    "Hana is a UX designer at Naver now, and she rents a tiny studio in Mapo.",
    "Sofie is a curator at the Design Museum.",
    "Hugo is the head chef at Le Petit Zinc in Lyon since last year (2012).",
    "Sofie spent 2012 to 2014 at the Rijksmuseum in Amsterdam as an assistant (1 January 2012 to 1 January 2015).",
    "Lena left Ridgeway High in June and joined Novartis as a lab scientist (June 2021).",
    "Tomas retired from Colegio San Ignacio in March (March 2018).",
    "Aiko left Sony in August and is freelancing now (August 2021).",
    "Adam and I bought a house in Leeds in 2020, and I moved to Arup's Leeds office.",
])
def test_job_talk_reads_how_people_say_where_they_work(statement: str) -> None:
    assert job_talk(statement)
    assert says_typed("works_at", statement, rules=15)
    assert not says_typed("works_at", statement, rules=14)  # the list rules 8–14 read


@pytest.mark.parametrize("statement", [
    "Gina congratulated Jon on opening the dance studio.",  # what rules 8 were written for
    "Melanie is a student at the college.",  # studying
    "Caroline signed up as a volunteer at the shelter.",  # no employee
    "Jon is a fan of the Lakers.",
    "Gina visited Jon's studio.",
])
def test_job_talk_is_not_any_mention_of_a_place(statement: str) -> None:
    assert not job_talk(statement)
    assert not says_typed("works_at", statement, rules=15)


def test_rules_15_is_v12_and_only_it_reads_job_talk() -> None:
    assert METHOD_RECIPES["v12"].rules == 15 and JOBS_15 == {15}
    assert METHOD_RECIPES["v11"].rules == 14  # frozen: its figures replay


def test_a_job_the_list_missed_stays_a_job_and_its_ending_closes_it() -> None:
    s1 = datetime(2019, 4, 10, tzinfo=timezone.utc)
    taught = {0: line(0, "Lena", "I teach chemistry at Ridgeway High now.", s1)}
    slot = (0, fact("Lena teaches chemistry at Ridgeway High now.", "Lena", "works_at", "Ridgeway High"))
    # rules 14's check makes the slot a catch-all fact; since session 28 the state rules read "I teach … at
    # Ridgeway High" from the line itself (states.line_states), so the job is there beside it
    assert triples(run(taught, slot, rules=14)[0]) == [("Lena", "did", "Ridgeway High", False),
                                                       ("Lena", "works_at", "Ridgeway High", False)]
    assert triples(run(taught, slot, rules=15)[0]) == [("Lena", "works_at", "Ridgeway High", False)]

    s2 = datetime(2021, 9, 1, tzinfo=timezone.utc)
    left = {0: line(0, "Aiko", "I left Sony in August and I'm freelancing now.", s2)}
    slot = (0, fact("Aiko left Sony in August and is freelancing now.", "Aiko", "works_at", "Sony", ended=True))
    assert triples(run(left, slot, rules=14)[0]) == [("Aiko", "did", "Sony", True)]
    facts, _ = run(left, slot, rules=15)
    assert triples(facts) == [("Aiko", "works_at", "Sony", True)]
    assert facts[0].valid_to == datetime(2021, 8, 1, tzinfo=timezone.utc)


def test_an_employer_the_state_rules_name_survives_the_check() -> None:
    """"starts as a nurse at X": the state rules retype ``started`` to ``works_at``
    (:func:`.states.employer_named`); rules 14's check then made it a catch-all fact again."""
    numbered = {0: line(0, "Tariq", "I start as a nurse at St James's Hospital next month!")}
    slot = (0, fact("Tariq starts as a nurse at St James's Hospital next month.", "Tariq", "started",
                    "St James's Hospital"))
    assert ("Tariq", "did", "St James's Hospital", False) in triples(run(numbered, slot, rules=14)[0])
    assert ("Tariq", "works_at", "St James's Hospital", False) in triples(run(numbered, slot, rules=15)[0])


def test_congratulations_on_a_studio_are_still_no_job() -> None:
    numbered = {0: line(0, "Gina", "Congrats on opening the dance studio, Jon!")}
    slot = (0, fact("Gina congratulated Jon on opening the dance studio.", "Gina", "works_at", "the dance studio"))
    assert [t[1] for t in triples(run(numbered, slot, rules=15)[0])] in ([], ["did"])
