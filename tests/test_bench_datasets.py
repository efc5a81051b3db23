"""Loaders on the real LoCoMo and MSC files (../shared/data relative to the repository)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from chronomem.bench.datasets import load_locomo, load_msc, parse_locomo_datetime, parse_time_gap
from chronomem.errors import ValidationError

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT / "../shared/data/locomo/locomo_dev.json"
MSC = ROOT / "../shared/data/msc/msc_episodes_dev.json"

needs_locomo = pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present")
needs_msc = pytest.mark.skipif(not MSC.exists(), reason="MSC data not present")


def test_parse_locomo_datetime() -> None:
    assert parse_locomo_datetime("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert parse_locomo_datetime("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=timezone.utc)
    assert parse_locomo_datetime("12:30 pm on 1 January, 2023").hour == 12
    with pytest.raises(ValidationError):
        parse_locomo_datetime("yesterday")


def test_parse_time_gap() -> None:
    assert parse_time_gap("5 days") == timedelta(days=5)
    assert parse_time_gap("1 hour") == timedelta(hours=1)
    assert parse_time_gap(None) is None


@pytest.fixture(scope="module")
def locomo():  # type: ignore[no-untyped-def]
    return load_locomo(LOCOMO)


@needs_locomo
def test_locomo_counts_match_the_data_readme(locomo) -> None:  # type: ignore[no-untyped-def]
    assert [c.sample_id for c in locomo] == ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44", "conv-47"]
    assert sum(len(c.turns) for c in locomo) == 4124
    assert sum(len(c.sessions) for c in locomo) == 187
    assert sum(len(c.qa) for c in locomo) == 1347


@needs_locomo
def test_locomo_sessions_turns_and_images(locomo) -> None:  # type: ignore[no-untyped-def]
    conv30 = next(c for c in locomo if c.sample_id == "conv-30")
    assert {conv30.speaker_a, conv30.speaker_b} == {"Gina", "Jon"}
    first = conv30.sessions[0]
    assert first.index == 1 and first.date_time is not None and first.date_time.tzinfo is not None
    assert first.turns[0].dia_id == "D1:1" and first.turns[0].time == first.date_time
    # sessions in order, every turn dated
    times = [s.date_time for s in conv30.sessions]
    assert all(t is not None for t in times) and times == sorted(times)  # type: ignore[type-var]
    images = [t for c in locomo for t in c.turns if t.blip_caption]
    assert len(images) > 800
    assert "shares an image" in images[0].render()


@needs_locomo
def test_locomo_qa_quirks(locomo) -> None:  # type: ignore[no-untyped-def]
    qa = [q for c in locomo for q in c.qa]
    assert len({q.qid for q in qa}) == len(qa)
    assert all(isinstance(q.answer, str) for q in qa)
    conv26 = next(c for c in locomo if c.sample_id == "conv-26")
    sunrise = next(q for q in conv26.qa if q.question == "When did Melanie paint a sunrise?")
    assert sunrise.answer == "2022"  # an int in the file
    split = next(q for q in conv26.qa if "D8:6; D9:17" in q.evidence_raw)
    assert split.evidence == ("D8:6", "D9:17")
    adversarial = [q for q in qa if q.category == 5]
    assert adversarial and all(q.adversarial_answer for q in adversarial)
    # the dev subset holds two of the four empty-evidence category-3 items
    assert [q.qid for q in qa if not q.evidence] == ["conv-26:q30", "conv-26:q46"]
    assert all(q.category == 3 for q in qa if not q.evidence_raw)
    assert Counter(q.category for q in qa).keys() == {1, 2, 3, 4, 5}
    # every normalised evidence id is well formed; almost all point at a real turn
    ids = {t.dia_id for c in locomo for t in c.turns}
    ev = [e for q in qa for e in q.evidence]
    assert all(e.startswith("D") and ":" in e for e in ev)
    assert sum(e in ids for e in ev) / len(ev) > 0.99


@needs_locomo
def test_locomo_select_by_id_and_unknown_id() -> None:
    convs = load_locomo(LOCOMO, ["conv-30", "conv-26"])
    assert [c.sample_id for c in convs] == ["conv-30", "conv-26"]
    with pytest.raises(ValidationError):
        load_locomo(LOCOMO, ["conv-99"])


@needs_msc
def test_msc_episodes() -> None:
    eps = load_msc(MSC)
    assert len(eps) == 200
    ep = eps[0]
    assert len(ep.conversation.sessions) == 3
    s = ep.conversation.sessions
    assert s[0].date_time < s[1].date_time < s[2].date_time  # type: ignore[operator]
    assert {t.speaker for t in ep.next_session} <= {"Speaker 1", "Speaker 2"}
    assert ep.persona_facts_session_4["Speaker 2"]
    assert ep.personas_after_session_3["Speaker 1"]
    assert ep.next_session[0].dia_id == "D4:1"
    assert len(load_msc(MSC, limit=5)) == 5
