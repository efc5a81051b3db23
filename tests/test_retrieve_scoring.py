"""Pure scoring functions of the REAL beam search and the rule-based query analysis."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chronomem.model import Fact, Intent, Origin
from chronomem.registry import RelationRegistry
from chronomem.retrieve import scoring as S
from chronomem.retrieve.intents import analyze, asks_time_or_state, find_time_window

UTC = timezone.utc
NOW = datetime(2025, 6, 1, tzinfo=UTC)


def fact(s: str, r: str, o: str, vf: str | None = None, vt: str | None = None, c: float = 1.0,
         fid: str | None = None) -> Fact:
    p = lambda x: None if x is None else datetime.fromisoformat(x).replace(tzinfo=UTC)  # noqa: E731
    return Fact(id=fid or f"{s}-{r}-{o}-{vf}", user_id="u", subject=s, relation=r, object=o,
                valid_from=p(vf), valid_to=p(vt), confidence=c, intent=Intent.FACT, origin=Origin.IMPORTED,
                recorded_at=NOW, subject_id=s.lower(), object_id=o.lower())


def test_stem_makes_query_and_relation_words_meet() -> None:
    assert S.stem("lives") == S.stem("living") == S.stem("lived") == S.stem("live")
    assert S.stem("married") == S.stem("marry")
    assert S.terms("Where does Maya's brother live?") == {"maya", "brother", S.stem("live")}


def test_lexical_and_hybrid_relevance() -> None:
    q = {"maya", "brother", "liv"}
    assert S.lexical_relevance(q, {"maya", "liv"}) == pytest.approx(2 / 3)
    assert S.lexical_relevance(set(), {"x"}) == 0.0
    assert S.hybrid_relevance(0.5, None, 0.5) == 0.5
    assert S.hybrid_relevance(0.5, 0.9, 0.5) == pytest.approx(0.7)
    assert S.hybrid_relevance(0.5, 1.7, 1.0) == 1.0  # clipped


def test_temporal_coherence() -> None:
    a = fact("Maya", "lives_in", "Porto", "2017-01-01", "2020-09-01")
    b = fact("Maya", "works_at", "Feedzai", "2020-09-01")
    assert S.common_validity([a, b]) is None
    assert S.temporal_coherence([a, b]) == 0.2
    assert S.temporal_coherence([a, b], history=True) == 0.8
    c = fact("Rui", "lives_in", "Braga", "2017-03-01")
    assert S.temporal_coherence([a, c]) == 1.0
    window = (datetime(2019, 1, 1, tzinfo=UTC), datetime(2020, 1, 1, tzinfo=UTC))
    assert S.temporal_coherence([a], window=window) == 1.0
    assert S.temporal_coherence([b], window=window) == 0.2


def test_contradictions_of_single_valued_relations() -> None:
    single = RelationRegistry().spec
    sv = lambda r: single(r).single_valued  # noqa: E731
    porto = fact("Maya", "lives_in", "Porto", "2017-01-01")
    lisbon = fact("Maya", "lives_in", "Lisbon", "2020-01-01")
    assert S.contradictions([porto, lisbon], sv) == 1
    closed = fact("Maya", "lives_in", "Porto", "2017-01-01", "2020-01-01")
    assert S.contradictions([closed, lisbon], sv) == 0
    likes = [fact("Maya", "likes", "jazz"), fact("Maya", "likes", "tea")]
    assert S.contradictions(likes, sv) == 0  # multi-valued
    assert S.logical_consistency([porto, lisbon], sv) == pytest.approx(0.5)
    # history mode: versions may coexist in a path (contradictions are what it is about)
    assert S.logical_consistency([porto, lisbon], sv, history=True) == pytest.approx(1.0)
    assert S.logical_consistency([closed, lisbon], sv, history=True) == pytest.approx(0.8)


def test_confidence_is_a_geometric_mean() -> None:
    assert S.confidence_score([]) == 1.0
    assert S.confidence_score([fact("a", "r", "b", c=0.5), fact("b", "r", "c", c=0.5)]) == pytest.approx(0.5)
    assert S.confidence_score([fact("a", "r", "b", c=1.0), fact("b", "r", "c", c=0.25)]) == pytest.approx(0.5)


def test_answer_types() -> None:
    assert "place" in S.expected_types("where", {"liv"})
    assert "organisation" in S.expected_types("where", {"work"})
    assert "organisation" not in S.expected_types("where", {"liv"})
    assert S.expected_types("who", set()) == S.PERSON_TYPES
    assert S.expected_types("what", set()) == frozenset()
    assert S.type_match("place", S.expected_types("where", set())) == 1.0
    assert S.type_match("person", S.expected_types("where", set())) == 0.1
    assert S.type_match(None, S.expected_types("where", set())) == 0.5
    assert S.type_match("anything", frozenset()) == 1.0


def test_answer_sufficiency() -> None:
    where = S.AnswerSpec(types=S.expected_types("where", set()),
                         relation_groups=(frozenset({"sibling_of"}), frozenset({"lives_in"})))
    full = S.answer_sufficiency(where, answer_type="place", answer_terms={"braga"},
                                path_relations=["sibling_of", "lives_in"], last_has_time=True)
    half = S.answer_sufficiency(where, answer_type="place", answer_terms={"lisbon"},
                                path_relations=["lives_in"], last_has_time=True)
    wrong = S.answer_sufficiency(where, answer_type="person", answer_terms={"rui"},
                                 path_relations=["sibling_of"], last_has_time=True)
    assert full == 1.0 and half == 0.5 and wrong == pytest.approx(0.05)
    yn = S.AnswerSpec(yes_no=True, targets=frozenset({"dog"}))
    assert S.answer_sufficiency(yn, answer_type=None, answer_terms={"dog"}, path_relations=["has_pet"],
                                last_has_time=False) == 1.0
    assert S.answer_sufficiency(yn, answer_type=None, answer_terms={"sunny"}, path_relations=["has_pet"],
                                last_has_time=False) == pytest.approx(0.2)
    when = S.AnswerSpec(types=S.TIME_TYPES, wants_time=True)
    assert S.answer_sufficiency(when, answer_type=None, answer_terms=set(), path_relations=["x"],
                                last_has_time=False) == pytest.approx(0.3)


def test_path_score_weights_and_intent() -> None:
    assert S.path_score(1, 1, 1) == 1.0
    assert S.path_score(1, 0, 0) == pytest.approx(0.4)
    assert S.path_score(0, 0, 1, S.Weights(qr=0, lc=0, as_=1)) == 1.0
    assert S.path_score(1, 1, 1, intent_weight=0.5) == 0.5


def test_relation_vocabulary_includes_synonyms() -> None:
    reg = RelationRegistry()
    spec = reg.spec("sibling_of")
    vocab = S.relation_terms(spec.name, spec.synonyms)
    assert "brother" in vocab and "sister" in vocab


@pytest.mark.parametrize("q,intents,history", [
    ("Where does Maya live?", ["FACT"], False),
    ("How has Maya's job changed?", ["EVOLUTION"], True),
    ("Where did Maya live before Lisbon?", ["EVOLUTION", "FACT"], True),
    ("When did Maya move to Lisbon?", ["TEMPORAL"], True),
    ("Why did Maya move to Lisbon?", ["CAUSAL"], False),
    ("Does Maya prefer tea or coffee?", ["CONTRAST", "FACT"], False),
])
def test_rule_intents(q: str, intents: list[str], history: bool) -> None:
    a = analyze(q, RelationRegistry(), now=NOW)
    assert [i.value for i in a.intents] == intents
    assert a.history is history


def test_analysis_relation_groups_window_and_yes_no() -> None:
    reg = RelationRegistry()
    a = analyze("Where does Tiago's wife work?", reg, now=NOW)
    groups = dict(a.relation_groups)
    assert "married_to" in groups["wife"] and "works_at" in groups["work"]
    assert "organisation" in a.types
    w = analyze("Where did Maya live in 2020?", reg, now=NOW)
    assert w.window == (datetime(2020, 1, 1, tzinfo=UTC), datetime(2021, 1, 1, tzinfo=UTC))
    yn = analyze("Does Maya have a dog?", reg, now=NOW)
    assert yn.yes_no and yn.answer_spec().targets == {"maya", "dog"}
    assert analyze("Where is my brother?", reg, now=NOW).speaker_refs
    unsure = analyze("How does Maya feel lately?", reg, now=NOW)
    assert not unsure.confident


@pytest.mark.parametrize("q,expected", [
    ("When did Maya move to Porto?", True),            # asks when
    ("Where did Maya live in 2020?", True),            # a time window
    ("Has Maya moved before?", True),                  # a change
    ("Where does Maya live?", True),                   # lives_in is single-valued: a state that changes
    ("Is Maya married?", True),
    ("Where does Maya's brother work?", True),
    ("Who is Maya's brother?", False),                 # sibling_of holds many values, none replaces another
    ("What did Gina say about her store?", False),
    ("What kind of flooring is Jon looking for?", False),
])
def test_asks_time_or_state(q: str, expected: bool) -> None:
    reg = RelationRegistry()
    assert asks_time_or_state(analyze(q, reg, now=NOW), reg) is expected


def test_a_custom_single_valued_relation_is_a_state() -> None:
    reg = RelationRegistry()
    reg.define("drives", single_valued=True, synonyms=("car",))
    assert asks_time_or_state(analyze("What car does Maya have?", reg, now=NOW), reg)


def test_logical_consistency_can_ignore_confidence() -> None:
    from datetime import datetime, timezone

    from chronomem.model import Fact, Intent, Origin
    from chronomem.retrieve.scoring import logical_consistency

    t = datetime(2020, 1, 1, tzinfo=timezone.utc)
    f = Fact(id="f", user_id="u", subject="A", relation="likes", object="B", valid_from=t, valid_to=None,
             confidence=0.25, intent=Intent.FACT, origin=Origin.IMPORTED, recorded_at=t)
    with_conf = logical_consistency([f], lambda r: False)
    without = logical_consistency([f], lambda r: False, use_confidence=False)
    assert with_conf < without and without == pytest.approx(with_conf / 0.25)


@pytest.mark.parametrize("q, text, start, end", [
    ("What did Gina find for her store on 1 February, 2023?", "on 1 February, 2023", (2023, 2, 1), (2023, 2, 2)),
    ("What movie did Joanna watch on 1 May, 2022?", "on 1 May, 2022", (2022, 5, 1), (2022, 5, 2)),
    ("What did Nate cook on November 9, 2022?", "on November 9, 2022", (2022, 11, 9), (2022, 11, 10)),
    ("Where was Maya in March, 2020?", "in March, 2020", (2020, 3, 1), (2020, 4, 1)),
    ("Where did Maya live in 2020?", "in 2020", (2020, 1, 1), (2021, 1, 1)),
])
def test_a_date_with_a_comma_after_its_month_is_one_window(q: str, text: str, start: tuple, end: tuple) -> None:
    """"on 1 February, 2023" is that day — read as "2023" alone, the window was the whole year and
    answer() asked "… on 1 February,?" with the year cut out."""
    found = find_time_window(q, NOW)
    assert found is not None
    assert found[1] == text and found[0] == (datetime(*start, tzinfo=UTC), datetime(*end, tzinfo=UTC))


def test_time_window_moves_from_the_question_into_as_of() -> None:
    from datetime import datetime, timezone

    from chronomem.answering import _decouple_time

    now = datetime(2026, 11, 30, tzinfo=timezone.utc)
    an = {"window_text": "in 2020", "window": ["2020-01-01T00:00:00+00:00", "2021-01-01T00:00:00+00:00"]}
    q, at = _decouple_time("Where did Maya live in 2020?", an, now)
    assert q == "Where did Maya live?" and at.year == 2020 and at.month == 7
    before = {"window_text": "before 2021", "window": [None, "2021-01-01T00:00:00+00:00"]}
    q, at = _decouple_time("Where did Maya live before 2021?", before, now)
    assert q == "Where did Maya live?" and at.date().isoformat() == "2020-12-31"
    # the caller's as_of bounds the point: asked as of March 2020, "in 2020" is asked as of then
    march = datetime(2020, 3, 1, tzinfo=timezone.utc)
    assert _decouple_time("Where did Maya live in 2020?", an, march) == ("Where did Maya live?", march)
    # a window after the as_of keeps its words, and questions without a window are left alone
    assert _decouple_time("Where did Maya live in 2020?", an, datetime(2019, 6, 1, tzinfo=timezone.utc)) == (
        "Where did Maya live in 2020?", datetime(2019, 6, 1, tzinfo=timezone.utc))
    assert _decouple_time("Where does Maya live?", {}, now) == ("Where does Maya live?", now)


def test_a_span_or_a_window_open_towards_now_keeps_its_words() -> None:
    """No one point stands for "between 2010 and 2013" (asked as of mid-2012, the question lost the values of
    its other years) or for "since 2015" (asked as of its first day, it lost everything after)."""
    from datetime import datetime, timezone

    from chronomem.answering import _decouple_time

    now = datetime(2026, 11, 30, tzinfo=timezone.utc)
    span = {"window_text": "between 2010 and 2013",
            "window": ["2010-01-01T00:00:00+00:00", "2014-01-01T00:00:00+00:00"]}
    q, at = _decouple_time("Where did Lena work between 2010 and 2013?", span, now)
    assert q == "Where did Lena work between 2010 and 2013?" and at.isoformat().startswith("2013-12-31T23:59:59")
    since = {"window_text": "since 2015", "window": ["2015-01-01T00:00:00+00:00", None]}
    assert _decouple_time("Where has Lena worked since 2015?", since, now) == (
        "Where has Lena worked since 2015?", now)
    leap = {"window_text": "in 2020", "window": ["2020-01-01T00:00:00+00:00", "2021-01-01T00:00:00+00:00"]}
    assert _decouple_time("Where did Maya live in 2020?", leap, now)[0] == "Where did Maya live?"  # 366 days


def test_a_span_in_a_question_is_its_window_whole() -> None:
    from datetime import datetime, timezone

    from chronomem.retrieve.intents import find_time_window

    ref = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for question, phrase, start, end in [
            ("Where did Lena work between 2010 and 2013?", "between 2010 and 2013", 2010, 2014),
            ("Where did Lena work from 2011 to 2013?", "from 2011 to 2013", 2011, 2014),
            ("Where did Lena work 2010-2013?", "2010-2013", 2010, 2014)]:
        found = find_time_window(question, ref)
        assert found is not None and found[1] == phrase, question
        assert (found[0][0].year, found[0][1].year) == (start, end), question  # type: ignore[union-attr]
    day = find_time_window("What happened on 2010-05-03?", ref)
    assert day is not None and day[1] == "on 2010-05-03"  # a date, not the year 2010 and a rest


def test_fmt_time_writes_month_names() -> None:
    from datetime import datetime, timezone

    from chronomem.retrieve.render import fmt_time

    assert fmt_time(datetime(2023, 1, 19, tzinfo=timezone.utc)) == "19 January 2023"
    assert fmt_time(datetime(2023, 1, 20, 16, 4, tzinfo=timezone.utc)) == "20 January 2023 16:04"
    assert fmt_time(None) == "?"


def test_fact_text_drops_only_time_words_the_interval_dates_exactly() -> None:
    from dataclasses import replace

    from chronomem.retrieve.render import fact_text, render_fact

    base = fact("Jon", "started", "dance studio", "2023-01-19")
    exact = replace(base, text="Jon started dance studio [yesterday]")
    assert fact_text(exact) == "Jon started dance studio"
    assert render_fact(exact).startswith("Jon started dance studio [19 January 2023 -> now) c=")
    vague = replace(base, text="Gina got a tattoo [a few years ago]")  # the date is only an estimate
    assert fact_text(vague) == "Gina got a tattoo [a few years ago]"
    unknown = replace(base, text="Jon opens studio [soon]")
    assert fact_text(unknown) == "Jon opens studio [soon]"
    undated = replace(base, text="Jon started dance studio [yesterday]", valid_from=None)
    assert fact_text(undated) == "Jon started dance studio [yesterday]"
    assert fact_text(replace(base, text="")) == "Jon started dance studio"


_PIECES = list("aeiouylnrstdgcmpbhkfwvzéü'’ -EYS") + ["ies", "ied", "ing", "ed", "es", "'s", "ss"]
_WORDISH = st.lists(st.sampled_from(_PIECES), max_size=14).map("".join)  # suffixes the stemmer strips, often


@given(_WORDISH, st.lists(_WORDISH, max_size=4))
def test_probes_miss_no_text_that_shares_a_term(text: str, question: list[str]) -> None:
    """``may_share_terms`` may only say yes too often: a text whose terms meet the question's is never
    passed over (a hub's cut skips stemming the names that hold no probe)."""
    wanted = set().union(*(S.term_set(q) for q in question)) if question else set()
    if S.term_set(text) & wanted:
        assert S.may_share_terms(text, S.term_probes(wanted))


def test_probes_of_a_stem_made_from_ies_drop_its_y() -> None:
    assert set(S.term_probes({"party", "liv"})) == {"part", "liv"}
    assert S.may_share_terms("The Parties of 2019", S.term_probes(S.term_set("party")))
    assert not S.may_share_terms("song 17", S.term_probes(S.term_set("where does Maya live")))
