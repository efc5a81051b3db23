"""Japanese and Chinese questions are read by the rule analysis (chronomem.retrieve.intents) as English ones are.

The write path and both full-text indexes learned these languages, but the read path's question analysis read
only English cues: "マヤはどこに住んでいますか?" had no answer type (where → place), no relation word (住 →
lives_in) and no intent, so the state lookup that answers "where does X live" from the graph's current fact did
not fire, and an old quoted turn "ポルトに住んでいて" stood where "マヤ lives in リスボン" should.  The analysis
now reads these languages' question words, relation words, intent and history cues, yes/no endings, "私"/"我"
and time phrases; any other question is read exactly as before (pinned below for a few English and other
non-CJK questions; the whole LoCoMo, MSC and MemoryBank text was compared old against new when this came in).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory
from chronomem.model import Intent, Message
from chronomem.providers.base import CallUsage, ChatResult
from chronomem.registry import RelationRegistry
from chronomem.cjk_time import cjk_time_in_english, find_cjk_time_window
from chronomem.retrieve.intents import analyze
from chronomem.retrieve.scoring import ORG_TYPES, PERSON_TYPES, PLACE_TYPES, TIME_TYPES

REF = datetime(2026, 1, 15, tzinfo=timezone.utc)
NOW = "2026-01-15T00:00:00+00:00"
REG = RelationRegistry()
BLOCK = "Facts that answer the question directly:"


def _read(question: str) -> dict[str, Any]:
    a = analyze(question, REG, now=REF)
    return {**a.as_dict(), "speaker_refs": a.speaker_refs, "targets": sorted(a.answer_spec().targets)}


def _utc(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=timezone.utc)


# -- question words -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "wh", "types"), [
    ("マヤはどこに住んでいますか?", "where", PLACE_TYPES),
    ("マヤはいつ結婚しましたか?", "when", TIME_TYPES),
    ("マヤは何年に大学を卒業しましたか?", "when", TIME_TYPES),
    ("マヤは何時に起きますか?", "when", TIME_TYPES),  # 何時: "when" and "what time" both want a time
    ("マヤの兄弟は誰ですか?", "who", PERSON_TYPES),
    ("マヤの仕事は何ですか?", "what", frozenset()),
    ("マヤはどんな音楽が好きですか?", "what", frozenset()),
    ("なぜマヤは引っ越したのですか?", "why", frozenset()),
    ("マヤは何歳ですか?", "how", frozenset()),  # how many / how much: as English "how", no type of its own
    ("マヤは何時間働きましたか?", "how", frozenset()),
    ("マヤはどの大学に通っていますか?", "which", frozenset()),
    ("マヤはどちらにお住まいですか?", "where", PLACE_TYPES),  # polite "where"; どちらが is "which"
    ("玛雅住在哪里?", "where", PLACE_TYPES),
    ("玛雅什么时候结婚的?", "when", TIME_TYPES),
    ("玛雅的哥哥是谁?", "who", PERSON_TYPES),
    ("玛雅喜欢什么?", "what", frozenset()),
    ("玛雅为什么搬家?", "why", frozenset()),
    ("玛雅有几个孩子?", "how", frozenset()),
])
def test_a_question_word_gives_the_answer_type(question: str, wh: str, types: frozenset[str]) -> None:
    a = analyze(question, REG, now=REF)
    assert (a.wh, a.types) == (wh, types)
    assert a.confident or wh in ("what", "which", "why", "how")


@pytest.mark.parametrize(("question", "wh"), [
    ("マヤは何か飼っていますか?", None),  # 何か: "something"
    ("マヤはどこかに行きましたか?", None),  # どこか: "somewhere"
    ("マヤはいつも何を食べますか?", "what"),  # いつも: "always"
    ("マヤは誰かと住んでいますか?", None),
    ("玛雅有任何宠物吗?", None),  # 任何: "any"
])
def test_a_word_that_holds_a_question_word_is_not_one(question: str, wh: str | None) -> None:
    assert analyze(question, REG, now=REF).wh == wh


def test_where_asks_for_an_organisation_when_the_question_is_about_work_or_study() -> None:
    assert ORG_TYPES <= analyze("マヤはどこで働いていますか?", REG, now=REF).types
    assert ORG_TYPES <= analyze("マヤはどこの大学に通っていますか?", REG, now=REF).types
    assert ORG_TYPES <= analyze("玛雅在哪里工作?", REG, now=REF).types
    assert not ORG_TYPES & analyze("マヤはどこに住んでいますか?", REG, now=REF).types


# -- relation words ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "groups"), [
    ("マヤはどこに住んでいますか?", {"住": ["lives_in"]}),
    ("マヤはどこで暮らしていますか?", {"暮ら": ["lives_in"]}),
    ("マヤはどこで働いていますか?", {"働": ["job_title", "works_at"]}),  # as English "work"
    ("マヤの勤め先はどこですか?", {"勤": ["works_at"]}),
    ("マヤの職業は何ですか?", {"職業": ["job_title"]}),
    ("マヤはペットを飼っていますか?", {"ペット": ["has_pet"]}),
    ("マヤの妹は誰ですか?", {"妹": ["sibling_of"]}),
    ("マヤの妻は誰ですか?", {"妻": ["married_to"]}),
    ("マヤの親友は誰ですか?", {"親友": ["friend_of"]}),  # not 親, a parent
    ("マヤの父親は誰ですか?", {"父": ["child_of", "parent_of"]}),
    ("マヤは何が好きですか?", {"好き": ["likes"]}),
    ("マヤの出身はどこですか?", {"出身": ["born_in"]}),
    ("マヤはどこの学校に通っていますか?", {"学校": ["studies_at"]}),
    ("マヤは大丈夫ですか?", {}),  # 大丈夫 "all right" holds 夫 "husband"
    ("彼女はどこに住んでいますか?", {"住": ["lives_in"]}),  # 彼女 "she", not a girlfriend
    ("玛雅在哪家公司工作?", {"公司": ["works_at"], "工作": ["job_title", "works_at"]}),
    ("玛雅的男朋友是谁?", {"男朋友": ["partner_of"]}),  # not 朋友, a friend
    ("玛雅结婚了吗?", {"结婚": ["married_to"]}),
])
def test_relation_words_name_the_relation_groups_english_words_do(question: str,
                                                                   groups: dict[str, list[str]]) -> None:
    assert analyze(question, REG, now=REF).as_dict()["relation_groups"] == groups


def test_an_english_word_and_its_japanese_counterpart_name_one_group() -> None:
    english = analyze("Where does Maya work?", REG, now=REF).relation_groups
    japanese = analyze("マヤはどこで働いていますか?", REG, now=REF).relation_groups
    assert [g for _, g in english] == [g for _, g in japanese] == [frozenset({"works_at", "job_title"})]


# -- intents, history, yes/no, the speaker --------------------------------------------------------------------
@pytest.mark.parametrize(("question", "intents", "history"), [
    ("マヤは以前どこに住んでいましたか?", ["EVOLUTION", "FACT"], True),
    ("マヤはもうポルトに住んでいないのですか?", ["EVOLUTION", "FACT"], True),
    ("マヤはいつからリスボンに住んでいますか?", ["TEMPORAL"], True),
    ("なぜマヤは会社を辞めたのですか?", ["CAUSAL"], False),
    ("マヤとトムの違いは何ですか?", ["CONTRAST", "FACT"], False),
    ("マヤの名前は何ですか?", ["FACT"], False),  # 名前は "the name is", not 前は "before"
    ("玛雅以前住在哪里?", ["EVOLUTION", "FACT"], True),
    ("玛雅为什么学习中文?", ["CAUSAL"], False),
])
def test_intent_and_history_cues(question: str, intents: list[str], history: bool) -> None:
    a = analyze(question, REG, now=REF)
    assert ([i.value for i in a.intents], a.history) == (intents, history)


def test_a_question_ending_in_the_question_particle_without_a_question_word_asks_yes_or_no() -> None:
    married = analyze("マヤは結婚していますか?", REG, now=REF)
    assert married.yes_no and married.intents == [Intent.FACT] and married.confident
    assert married.answer_spec().targets == {"マヤ"}  # the search drops the root's own terms
    tokyo = analyze("マヤは東京に住んでいますか?", REG, now=REF).answer_spec()
    assert tokyo.yes_no and tokyo.targets == {"マヤ", "東京"} and tokyo.relation_groups == (frozenset({"lives_in"}),)
    chinese = analyze("玛雅结婚了吗?", REG, now=REF).answer_spec()  # no kana to find its words by: no targets
    assert chinese.yes_no and chinese.targets == frozenset()
    assert not analyze("マヤはどこに住んでいますか?", REG, now=REF).yes_no


@pytest.mark.parametrize(("question", "speaker"), [
    ("私はどこに住んでいますか?", True), ("私たちはどこに住んでいますか?", False),
    ("マヤは私立大学に通っていますか?", False), ("我住在哪里?", True), ("我们住在哪里?", False),
])
def test_i_is_the_speaker(question: str, speaker: bool) -> None:
    assert analyze(question, REG, now=REF).speaker_refs is speaker


# -- time phrases --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "phrase", "window"), [
    ("マヤは2020年にどこに住んでいましたか?", "2020年に", (_utc(2020, 1, 1), _utc(2021, 1, 1))),
    ("マヤは2020年5月にどこにいましたか?", "2020年5月に", (_utc(2020, 5, 1), _utc(2020, 6, 1))),
    ("マヤは去年どこで働いていましたか?", "去年", (_utc(2025, 1, 1), _utc(2026, 1, 1))),
    ("マヤは先月どこにいましたか?", "先月", (_utc(2025, 12, 1), _utc(2026, 1, 1))),
    ("マヤは2019年より前どこに住んでいましたか?", "2019年より前", (None, _utc(2019, 1, 1))),
    ("マヤは2018年からどこに住んでいますか?", "2018年から", (_utc(2018, 1, 1), None)),
    ("マヤは2010年から2013年までどこで働いていましたか?", "2010年から2013年まで",
     (_utc(2010, 1, 1), _utc(2014, 1, 1))),
    ("玛雅2020年住在哪里?", "2020年", (_utc(2020, 1, 1), _utc(2021, 1, 1))),
    # seasons, of a year or alone where a particle or 天/季 says it is one (the last summer before January 2026)
    ("マヤは去年の夏どこにいましたか?", "去年の夏", (_utc(2025, 6, 1), _utc(2025, 9, 1))),
    ("玛雅去年夏天住在哪里?", "去年夏天", (_utc(2025, 6, 1), _utc(2025, 9, 1))),
    ("マヤは二〇二〇年の冬どこにいましたか?", "二〇二〇年の冬", (_utc(2020, 12, 1), _utc(2021, 3, 1))),
    ("マヤは2020年春からどこに住んでいますか?", "2020年春から", (_utc(2020, 3, 1), None)),
    ("マヤは夏にどこに行きましたか?", "夏に", (_utc(2025, 6, 1), _utc(2025, 9, 1))),
    # numbers in kanji past 十, and "a few"
    ("マヤは二十年前どこに住んでいましたか?", "二十年前", (_utc(2006, 1, 15), _utc(2006, 1, 16))),
    ("マヤは十五日前どこにいましたか?", "十五日前", (_utc(2025, 12, 31), _utc(2026, 1, 1))),
    ("マヤは数年前どこに住んでいましたか?", "数年前", (_utc(2023, 1, 15), _utc(2023, 1, 16))),
    ("玛雅几年前住在哪里?", "几年前", (_utc(2023, 1, 15), _utc(2023, 1, 16))),
    ("マヤは五月にどこにいましたか?", "五月に", (_utc(2025, 5, 1), _utc(2025, 6, 1))),
    ("玛雅二〇一九年十二月三日在哪里?", "二〇一九年十二月三日", (_utc(2019, 12, 3), _utc(2019, 12, 4))),
    # 以前 and 以後 hold the year they follow; より前 does not
    ("マヤは2019年以前どこに住んでいましたか?", "2019年以前", (None, _utc(2020, 1, 1))),
    ("マヤは2019年以後どこに住んでいますか?", "2019年以後", (_utc(2019, 1, 1), None)),
    ("マヤは一昨年の夏どこにいましたか?", "一昨年", (_utc(2024, 1, 1), _utc(2025, 1, 1))),  # the year, at least
    ("玛雅前天在哪里?", "前天", (_utc(2026, 1, 13), _utc(2026, 1, 14))),
])
def test_a_time_phrase_is_the_window(question: str, phrase: str,
                                     window: tuple[datetime | None, datetime | None]) -> None:
    a = analyze(question, REG, now=REF)
    assert (a.window, a.window_text) == (window, phrase)
    assert Intent.TEMPORAL in a.intents


def test_time_words_that_hold_another_are_not_it() -> None:
    # 一昨年 holds 昨年 (last year) and is the year before last
    assert find_cjk_time_window("マヤは一昨年どこにいましたか?", REF) == ((_utc(2024, 1, 1), _utc(2025, 1, 1)), "一昨年")
    assert find_cjk_time_window("マヤは今日本に住んでいますか?", REF) is None  # 今 日本: now, in Japan
    assert [cjk_time_in_english(p) for p in ("2020年13月", "3年前", "十日前")] == [None, "3 years ago", "10 days ago"]


# -- every other question reads as before ---------------------------------------------------------------------
ENGLISH = {  # what the analysis said before it read Japanese and Chinese
    "Where does Maya live now?": {
        "intents": ["FACT"], "source": "rules", "confident": True, "cues": {}, "wh": "where", "yes_no": False,
        "history": False, "window": None, "window_text": None,
        "types": ["address", "city", "country", "location", "place", "region"],
        "relation_groups": {"live": ["lives_in"]}, "terms": ["liv", "maya"], "speaker_refs": False, "targets": []},
    "When did Lena start working at Novartis?": {
        "intents": ["TEMPORAL"], "source": "rules", "confident": True, "cues": {"TEMPORAL": ["when"]}, "wh": "when",
        "yes_no": False, "history": True, "window": None, "window_text": None, "types": ["date", "time", "year"],
        "relation_groups": {"working": ["job_title", "works_at"]}, "terms": ["lena", "novarti", "start", "work"],
        "speaker_refs": False, "targets": []},
    "Did Maya use to live in Porto before 2020?": {
        "intents": ["EVOLUTION", "TEMPORAL", "FACT"], "source": "rules", "confident": True,
        "cues": {"EVOLUTION": ["before"], "TEMPORAL": ["before 2020"]}, "wh": None, "yes_no": True, "history": True,
        "window": [None, "2020-01-01T00:00:00+00:00"], "window_text": "before 2020", "types": [],
        "relation_groups": {"live": ["lives_in"]}, "terms": ["2020", "befor", "liv", "maya", "porto", "use"],
        "speaker_refs": False, "targets": ["2020", "befor", "maya", "porto", "use"]},
    "Why did Maya move to Lisbon last year?": {
        "intents": ["TEMPORAL", "CAUSAL"], "source": "rules", "confident": True,
        "cues": {"CAUSAL": ["why"], "TEMPORAL": ["last year"]}, "wh": "why", "yes_no": False, "history": False,
        "window": ["2025-01-01T00:00:00+00:00", "2026-01-01T00:00:00+00:00"], "window_text": "last year",
        "types": [], "relation_groups": {"move": ["lives_in"]}, "terms": ["last", "lisbon", "maya", "mov", "year"],
        "speaker_refs": False, "targets": []},
    "Is my brother married?": {
        "intents": ["FACT"], "source": "rules", "confident": True, "cues": {}, "wh": None, "yes_no": True,
        "history": False, "window": None, "window_text": None, "types": [],
        "relation_groups": {"brother": ["sibling_of"], "married": ["married_to"]}, "terms": ["brother", "marry"],
        "speaker_refs": True, "targets": []},
    "Où habite Zoë depuis 2019?": {
        "intents": ["TEMPORAL"], "source": "rules", "confident": True, "cues": {"TEMPORAL": ["2019"]}, "wh": None,
        "yes_no": False, "history": False, "window": ["2019-01-01T00:00:00+00:00", "2020-01-01T00:00:00+00:00"],
        "window_text": "2019", "types": [], "relation_groups": {}, "terms": ["2019", "depui", "habit", "où", "zoë"],
        "speaker_refs": False, "targets": []},
    "Где живёт Мария?": {
        "intents": ["FACT"], "source": "rules", "confident": False, "cues": {}, "wh": None, "yes_no": False,
        "history": False, "window": None, "window_text": None, "types": [], "relation_groups": {},
        "terms": ["где", "живёт", "мария"], "speaker_refs": False, "targets": []},
}



@pytest.mark.parametrize("question", [
    "マヤは秋葉原に住んでいますか?",  # 秋 in a name
    "マヤは青春時代どこにいましたか?",  # 春 in a word
    "玛雅前年夏天住在哪里?",  # the summer of a year word not read: not this summer
])
def test_a_season_character_inside_a_word_or_after_an_unread_year_is_no_time(question: str) -> None:
    assert find_cjk_time_window(question, REF) is None


@pytest.mark.parametrize("question", list(ENGLISH))
def test_a_question_without_cjk_characters_reads_as_before(question: str) -> None:
    assert _read(question) == ENGLISH[question]


# -- end to end: a memory without a model -------------------------------------------------------------------
class Recorder:
    """A chat model that answers with the first state fact it is shown (else "Not mentioned")."""

    name = "recorder"
    context_window = 8192

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: list[dict[str, str]], **kw: Any) -> ChatResult:
        lines = messages[-1]["content"].splitlines()
        text = lines[lines.index(BLOCK) + 1] if BLOCK in lines else "Not mentioned"
        return ChatResult(text=text, usage=CallUsage(prompt_tokens=len(lines), completion_tokens=3, latency_s=0.0,
                                                     purpose=kw.get("purpose", "")))


def _said(user: str, speaker: str, texts: list[tuple[str, datetime]]) -> list[Message]:
    return [Message(f"{user}{i}", user, f"s{i}", speaker, text, t, t, seq=0) for i, (text, t) in enumerate(texts)]


@pytest.fixture
def maya(tmp_path: Path) -> Iterator[Memory]:
    """Maya lived in Porto, then moved to Lisbon, in Japanese (user "ja"), Chinese ("zh") and English ("en"); she
    works at one place, keeps a dog and has a brother.  Facts written directly, as imported, some with a turn."""
    with Memory(tmp_path / "m.db", llm=Recorder(), embedder=False) as mem:
        for user, (maya, porto, lisbon, acme, pochi, ken), (lived, moved) in (
                ("ja", ("マヤ", "ポルト", "リスボン", "アクメ社", "ポチ", "ケン"),
                 ("私はポルトに住んでいて、毎日海を見ています。", "先月リスボンに引っ越しました。")),
                ("zh", ("玛雅", "波尔图", "里斯本", "阿克梅公司", "小白", "肯"),
                 ("我住在波尔图，每天看海。", "上个月我搬到了里斯本。")),
                ("en", ("Maya", "Porto", "Lisbon", "Acme", "Pochi", "Ken"),
                 ("I live in Porto and look at the sea every day.", "I moved to Lisbon last month."))):
            mem.store.add_messages(user, _said(user, maya, [(lived, _utc(2019, 3, 1)), (moved, _utc(2024, 6, 1))]))
            mem.add_facts([
                {"subject": maya, "relation": "lives_in", "object": porto, "valid_from": "2019-03-01",
                 "source_ids": [f"{user}0"]},
                {"subject": maya, "relation": "works_at", "object": acme, "valid_from": "2020-04-01"},
                {"subject": maya, "relation": "has_pet", "object": pochi, "valid_from": "2020-04-01"},
                {"subject": maya, "relation": "sibling_of", "object": ken, "valid_from": "2020-04-01"},
            ], user_id=user)
            mem.add_facts([{"subject": maya, "relation": "lives_in", "object": lisbon, "valid_from": "2024-06-01",
                            "source_ids": [f"{user}1"]}], user_id=user)  # closes Porto
        yield mem


def _first(mem: Memory, question: str, user: str) -> tuple[str, str]:
    best = mem.search(question, user_id=user, as_of=NOW).paths[0].facts[-1]
    return best.relation, best.object


def test_a_japanese_where_question_ranks_the_current_residence_first(maya: Memory) -> None:
    assert _first(maya, "マヤはどこに住んでいますか?", "ja") == ("lives_in", "リスボン")
    assert _first(maya, "玛雅住在哪里?", "zh") == ("lives_in", "里斯本")


def test_the_answer_context_opens_with_the_current_residence(maya: Memory) -> None:
    ans = maya.answer("マヤはどこに住んでいますか?", user_id="ja", as_of=NOW, method="real")
    assert ans.text.startswith("- マヤ lives in リスボン [1 June 2024 -> now)")
    assert ans.context.split("\n\n")[0].splitlines() == [BLOCK, ans.text]  # Porto no longer holds
    assert ans.context.index("リスボン") < ans.context.index("ポルトに住んでいて")  # the old turn comes after
    assert any("state fact(s) of lives_in" in n for n in ans.trace.notes)


def test_a_japanese_question_about_the_past_finds_the_closed_residence(maya: Memory) -> None:
    before = [p.facts[-1].object for p in maya.search("マヤは以前どこに住んでいましたか?", user_id="ja", as_of=NOW).paths]
    assert "ポルト" in before and "リスボン" in before
    assert _first(maya, "マヤは2020年にどこに住んでいましたか?", "ja") == ("lives_in", "ポルト")


@pytest.mark.parametrize(("question", "user", "relation"), [
    ("マヤはどこで働いていますか?", "ja", "works_at"), ("マヤの兄弟は誰ですか?", "ja", "sibling_of"),
    ("玛雅在哪里工作?", "zh", "works_at"), ("玛雅的哥哥是谁?", "zh", "sibling_of")])
def test_the_relation_a_question_names_ranks_first(maya: Memory, question: str, user: str, relation: str) -> None:
    assert _first(maya, question, user)[0] == relation


def test_the_english_twin_reads_as_before(maya: Memory) -> None:
    assert _first(maya, "Where does Maya live?", "en") == ("lives_in", "Lisbon")
    assert _first(maya, "Where does Maya work?", "en") == ("works_at", "Acme")
    assert _first(maya, "Where did Maya live in 2020?", "en") == ("lives_in", "Porto")
    ans = maya.answer("Where does Maya live?", user_id="en", as_of=NOW, method="real")
    assert ans.text.startswith("- Maya lives in Lisbon [1 June 2024 -> now)")


def test_a_japanese_question_in_the_past_tense_gets_the_last_state_that_ended(maya: Memory) -> None:
    """As "Where did Maya study?" does: no studies_at holds now, so the past tense asks for the one that ended."""
    maya.add_facts([{"subject": "マヤ", "relation": "studies_at", "object": "東京大学", "valid_from": "2010-04-01",
                     "valid_to": "2014-04-01"}], user_id="ja")
    past = maya.answer("マヤはどこで勉強していましたか?", user_id="ja", as_of=NOW, method="real")
    assert past.text.startswith("- マヤ studied at 東京大学") or "東京大学" in past.text.splitlines()[0]
    now = maya.answer("マヤはどこで勉強していますか?", user_id="ja", as_of=NOW, method="real")
    assert "東京大学" not in now.text  # the present tense: nothing holds now, no direct fact
