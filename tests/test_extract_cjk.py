"""The write path keeps what the model read from a Japanese conversation.

Grounding compared a statement's words with its turn's by ``[a-z0-9]+``, and a statement needed four such
words: every fact the local model extracted from Japanese turns (it writes them well: "マヤ lives_in ポルト",
"マヤ has_pet ポチ") was dropped as unsupported, so a Japanese memory held no fact at all.  A run of
Chinese, Japanese or Korean characters now counts as its pairs of characters there (two characters a word
for the length rule); English statements are read exactly as before.
"""

from __future__ import annotations

from datetime import datetime, timezone

from chronomem.cjk import cjk_characters, cjk_pairs
from chronomem.extract.line_observations import parse_line_observations
from chronomem.extract.observations import postprocess_observations, statement_words
from chronomem.extract.pipeline import METHOD_RECIPES
from chronomem.model import Message

T = datetime(2021, 3, 1, tzinfo=timezone.utc)
TURNS = [("マヤ", "2019年からポルトに住んでいて、ファーフェッチで働いています。"), ("トム", "いいですね!ペットはいますか?"),
         ("マヤ", "はい、ポチという柴犬を飼っています。")]
# the local Qwen2.5-Coder-1.5B's reply to these turns (the default prompt, v10), as it gave it
REPLY = {"lines": [
    {"line": 0, "fact": {"statement": "マヤ住んでいて、ファーフェッチで働いています。", "subject": "マヤ",
                         "relation": "lives_in", "object": "ポルト", "ended": False}},
    {"line": 1, "fact": None},
    {"line": 2, "fact": {"statement": "マヤ飼っています。", "subject": "マヤ", "relation": "has_pet",
                         "object": "ポチ", "ended": True}}]}


def _numbered(turns: list[tuple[str, str]]) -> dict[int, Message]:
    return {i: Message(f"m{i}", "u", "s", sp, text, T, T, seq=i) for i, (sp, text) in enumerate(turns)}


def test_facts_the_model_read_from_japanese_turns_are_kept_with_their_turns() -> None:
    cands, notes = postprocess_observations(parse_line_observations(REPLY), _numbered(TURNS), trust_turn=True,
                                            rules=METHOD_RECIPES["v10"].rules)
    assert [(c.subject, c.relation, c.object, c.source_ids, c.text) for c in cands] == [
        ("マヤ", "lives_in", "ポルト", ["m0"], "マヤ住んでいて、ファーフェッチで働いています。"),
        ("マヤ", "has_pet", "ポチ", ["m2"], "マヤ飼っています。")], notes
    # the typing rules read English cues ("lives in", a pet's kind): they turned both into "did" / "owns"
    assert "did → lives_in (the model's: no English cue to check it by): " \
        "マヤ住んでいて、ファーフェッチで働いています。" in notes


def test_english_statements_keep_their_checked_typing() -> None:
    turns = [("Maya", "I'm so excited about Paris, it looks amazing!")]
    reply = {"lines": [{"line": 0, "fact": {"statement": "Maya is excited about the trip to Paris.",
                                            "subject": "Maya", "relation": "lives_in", "object": "Paris",
                                            "ended": False}}]}
    cands, _ = postprocess_observations(parse_line_observations(reply), _numbered(turns), trust_turn=True,
                                        rules=METHOD_RECIPES["v10"].rules)
    assert [c.relation for c in cands] == ["did"]  # excitement is no residence: the cue rules still apply


def test_a_japanese_statement_no_turn_says_is_still_dropped() -> None:
    other = [("マヤ", "今日はとても寒いですね。"), ("トム", "そうですね、雪が降りそうです。")]
    cands, notes = postprocess_observations(parse_line_observations(REPLY), _numbered(other), trust_turn=True,
                                            rules=METHOD_RECIPES["v10"].rules)
    assert cands == [] and all("no turn supports" in n for n in notes) and len(notes) == 2


def test_words_are_counted_as_before_and_two_characters_make_a_word() -> None:
    assert statement_words("Jon won the dance contest.") == 5 and statement_words("Jon won.") == 2
    assert statement_words("マヤ飼っています。") == 4 and statement_words("犬です") == 1
    assert cjk_pairs("I live in Porto.") == [] and cjk_characters("café") == 0
    assert cjk_pairs("柴犬を飼う, 犬") == ["柴犬", "犬を", "を飼", "飼う", "犬"]


def test_a_japanese_statement_is_dated_by_its_own_time_words() -> None:
    """"先月リスボンに引っ越しました" said on 1 March 2021: the move is dated February 2021, as "I moved to Lisbon
    last month" is, not the day it was said (the time words of an English statement were the only ones read)."""
    turns = [("マヤ", "先月リスボンに引っ越しました。新しいアパートは広いです。"), ("マヤ", "2019年からポルトで働いています。")]
    reply = {"lines": [
        {"line": 0, "fact": {"statement": "マヤは先月リスボンに引っ越しました。", "subject": "マヤ",
                             "relation": "lives_in", "object": "リスボン", "ended": False}},
        {"line": 1, "fact": {"statement": "マヤは2019年からポルトで働いています。", "subject": "マヤ",
                             "relation": "works_at", "object": "ポルト", "ended": False}}]}
    cands, notes = postprocess_observations(parse_line_observations(reply), _numbered(turns), trust_turn=True,
                                            rules=METHOD_RECIPES["v10"].rules)
    dated = {c.object: c.valid_from for c in cands}
    assert dated == {"リスボン": datetime(2021, 2, 1, tzinfo=timezone.utc),
                     "ポルト": datetime(2019, 1, 1, tzinfo=timezone.utc)}, notes
