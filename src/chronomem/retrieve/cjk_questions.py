"""Japanese and Chinese questions: the cue words the read path's English rules cannot see.

"マヤはどこに住んでいますか" carries no English question word, relation word or time phrase, and is written
without spaces, so :func:`chronomem.retrieve.intents.analyze` read it as asking nothing in particular: no answer
type, no relation, no window, and the state-facts step did not know it asked for Maya's current residence.  The
tables and pure functions here read such a question in English terms: its question word as the English one it
stands for (:data:`CJK_WH_WORDS`), its relation words as the built-in relations their English counterparts name
(:data:`CJK_RELATION_WORDS`; the registry's synonyms are lower-case ASCII relation names and cannot hold them),
intent and history cues, a question ending in "か"/"吗" as yes/no, "私"/"我" as the speaker.  Its time phrase
("2020年に", "去年", "3年前") is read by :mod:`chronomem.cjk_time`, which the write path shares.

``analyze`` consults this module only for a text :func:`chronomem.cjk.has_cjk` says holds such characters, so
every other question is read exactly as before.  Nothing here touches a store or a model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ..model import Intent
from .scoring import term_set

#: Japanese and Chinese question words, as the English question word they stand for.  These languages put the
#: question word anywhere in the sentence and write no spaces, so the first of them found in the text counts,
#: the longest at a place first ("いつから" before "いつ", "什么时候" before "什么").  A word mapped to ``None``
#: holds a question word and is not one ("何か" something, "いつも" always, "任何" any): matched whole, it hides
#: the one inside it.  "How many/much/long" has no answer type of its own in English either ("how").
CJK_WH_WORDS: Mapping[str, str | None] = {
    # Japanese
    "どこ": "where", "何処": "where", "どこから": "where", "どちらに": "where", "どちらへ": "where",
    "どちらで": "where", "どちらから": "where", "どちらの出身": "where",
    "いつ": "when", "いつから": "when", "何時": "when", "何年": "when", "何月": "when", "何日": "when",
    "何曜": "when", "何年前": "when", "何日前": "when", "何か月前": "when", "何ヶ月前": "when", "何カ月前": "when",
    "誰": "who", "だれ": "who", "どなた": "who", "誰から": "who", "だれから": "who",
    "何": "what", "なに": "what", "なん": "what", "何から": "what", "なにから": "what", "どんな": "what",
    "どういう": "what", "どのような": "what",
    "なぜ": "why", "何故": "why", "どうして": "why", "なんで": "why",
    "いくつ": "how", "いくら": "how", "何歳": "how", "何人": "how", "何回": "how", "何度": "how",
    "何時間": "how", "何日間": "how", "何年間": "how", "何週間": "how", "何か月": "how", "何ヶ月": "how",
    "何カ月": "how", "何匹": "how", "何個": "how", "何冊": "how", "何台": "how", "どのくらい": "how",
    "どれくらい": "how", "どのぐらい": "how", "どれぐらい": "how", "どうやって": "how", "どう": "how",
    "どの": "which", "どれ": "which", "どちら": "which", "どっち": "which", "どれから": "which",
    # Japanese words that hold one and are not one: somewhere, always, someone, something, anything, grape …
    "どこか": None, "どこも": None, "どこでも": None, "いつか": None, "いつも": None, "いつでも": None,
    "いつつ": None, "あいつ": None, "こいつ": None, "そいつ": None, "誰か": None, "誰も": None, "誰でも": None,
    "だれか": None, "だれも": None, "だれでも": None, "何か": None, "何も": None, "何でも": None, "なにか": None,
    "なにも": None, "なんか": None, "なんて": None, "なんと": None, "なんでも": None, "いくつか": None,
    "いくらか": None, "いくらでも": None, "どうぞ": None, "どうも": None, "どうか": None, "どうしても": None,
    "ぶどう": None, "どれか": None, "どれも": None, "どれでも": None,
    # Chinese
    "哪里": "where", "哪儿": "where", "哪裡": "where", "哪兒": "where", "什么地方": "where", "什麼地方": "where",
    "什么时候": "when", "什麼時候": "when", "何时": "when", "哪年": "when", "哪一年": "when", "哪天": "when",
    "几月": "when", "几号": "when", "几点": "when",
    "谁": "who",
    "什么": "what", "什麼": "what", "甚么": "what",
    "为什么": "why", "為什麼": "why", "为何": "why", "為何": "why", "怎么会": "why",
    "多少": "how", "几": "how", "多久": "how", "多大": "how", "怎么": "how", "怎樣": "how", "怎样": "how",
    "如何": "how",
    "哪个": "which", "哪個": "which", "哪些": "which", "哪": "which",
    # anyone, any, almost, coffee table, even if
    "谁都": None, "誰都": None, "任何": None, "几乎": None, "茶几": None, "哪怕": None,
}

#: Japanese and Chinese words that name a relation of the built-in registry, for questions in those languages.
#: The registry's synonyms are relation names (lower-case ASCII, :func:`chronomem.registry.normalize_relation`),
#: which these words cannot be; each maps to the relations its English counterpart's group names ("work" →
#: works_at, job_title).  Matched in the text as :data:`CJK_WH_WORDS` are (the longest at a place first, so
#: "親友" is a friend and not a parent); a word mapped to no relation holds a relation word and is not one
#: ("大丈夫" fine, "彼女" she, "祖父" grandfather: no relation names them).
CJK_RELATION_WORDS: Mapping[str, tuple[str, ...]] = {
    # lives_in
    "住": ("lives_in",), "暮ら": ("lives_in",), "引っ越": ("lives_in",), "引越": ("lives_in",),
    "移住": ("lives_in",), "搬家": ("lives_in",), "搬到": ("lives_in",),
    # work: the place and the job, as English "work" and "job"
    "働": ("works_at", "job_title"), "仕事": ("works_at", "job_title"), "工作": ("works_at", "job_title"),
    "勤": ("works_at",), "職場": ("works_at",), "会社": ("works_at",), "公司": ("works_at",),
    "上班": ("works_at",), "就职": ("works_at",), "就職": ("works_at",),
    "職業": ("job_title",), "职业": ("job_title",), "職種": ("job_title",),
    # study
    "学校": ("studies_at",), "大学": ("studies_at",), "高校": ("studies_at",), "在学": ("studies_at",),
    "通っ": ("studies_at",), "通う": ("studies_at",), "通い": ("studies_at",), "通わ": ("studies_at",),
    "通学": ("studies_at",), "通勤": ("works_at",),
    "勉強": ("studies_at",), "専攻": ("studies_at",), "留学": ("studies_at",), "上学": ("studies_at",),
    "读书": ("studies_at",), "就读": ("studies_at",), "学习": ("studies_at",),
    # people
    "結婚": ("married_to",), "结婚": ("married_to",), "妻": ("married_to",), "夫": ("married_to",),
    "配偶": ("married_to",), "奥さん": ("married_to",), "旦那": ("married_to",), "老公": ("married_to",),
    "大丈夫": (), "工夫": (), "夫人": ("married_to",),
    "恋人": ("partner_of",), "彼氏": ("partner_of",), "付き合": ("partner_of",), "交際": ("partner_of",),
    "男朋友": ("partner_of",), "女朋友": ("partner_of",), "彼女": (),
    "兄": ("sibling_of",), "弟": ("sibling_of",), "姉": ("sibling_of",), "妹": ("sibling_of",),
    "姐": ("sibling_of",), "哥": ("sibling_of",), "きょうだい": ("sibling_of",), "弟子": (),
    "友": ("friend_of",), "親友": ("friend_of",),
    "父": ("child_of", "parent_of"), "母": ("child_of", "parent_of"), "親": ("child_of", "parent_of"),
    "爸": ("child_of", "parent_of"), "妈": ("child_of", "parent_of"), "息子": ("child_of", "parent_of"),
    "娘": ("child_of", "parent_of"), "子供": ("child_of", "parent_of"), "子ども": ("child_of", "parent_of"),
    "孩子": ("child_of", "parent_of"), "儿子": ("child_of", "parent_of"), "女儿": ("child_of", "parent_of"),
    "祖父": (), "祖母": (), "叔父": (), "伯父": (), "叔母": (), "伯母": (), "親切": (), "親戚": (),
    "母国": (), "母語": (), "母语": (),
    # pets, likes, hobbies, birth
    "飼": ("has_pet",), "ペット": ("has_pet",), "宠物": ("has_pet",), "寵物": ("has_pet",),
    "好き": ("likes",), "好物": ("likes",), "喜欢": ("likes",), "喜歡": ("likes",),
    "嫌い": ("dislikes",), "苦手": ("dislikes",), "讨厌": ("dislikes",), "討厭": ("dislikes",),
    "不喜欢": ("dislikes",),
    "趣味": ("hobby",), "爱好": ("hobby",), "愛好": ("hobby",),
    "生まれ": ("born_in",), "出身": ("born_in",), "出生": ("born_in",),
}


def _longest_first(words: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))


_CJK_WH = _longest_first(CJK_WH_WORDS)
_CJK_RELATION = _longest_first(CJK_RELATION_WORDS)


def cjk_question_word(text: str) -> str | None:
    """The English question word (:data:`WH_WORDS`) the first Japanese or Chinese question word of ``text``
    stands for; ``None`` without one.  Pure.

    >>> cjk_question_word("マヤはどこに住んでいますか"), cjk_question_word("玛雅什么时候搬家的?")
    ('where', 'when')
    >>> cjk_question_word("マヤは何か飼っていますか") is None
    True
    """
    for m in _CJK_WH.finditer(text):
        wh = CJK_WH_WORDS[m.group()]
        if wh is not None:
            return wh
    return None


def cjk_relation_words(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The Japanese and Chinese relation words of ``text`` (:data:`CJK_RELATION_WORDS`), in order, each with
    the relations it names.  Pure.

    >>> cjk_relation_words("マヤの親友はどこで働いていますか")
    [('親友', ('friend_of',)), ('働', ('works_at', 'job_title'))]
    """
    return [(m.group(), rels) for m in _CJK_RELATION.finditer(text) if (rels := CJK_RELATION_WORDS[m.group()])]


def without_cjk_relation_words(text: str) -> str:
    """``text`` with each Japanese or Chinese relation word (and each word that only holds one) blanked out."""
    return _CJK_RELATION.sub(" ", text)


# -- Japanese and Chinese cues (read only in a text that holds such characters) ---------------------
# no \b: these scripts have no spaces, so a cue is any run that is not part of a longer word it names
# ("名前は" is "the name is", not "before"; "いつも" is "always"; "2019年より前" is a time, not a comparison)
CJK_CUES: dict[Intent, re.Pattern[str]] = {
    Intent.EVOLUTION: re.compile(
        r"以前|(?<![名午])前は|昔|かつて|変わ|変化|引っ越|引越|もう[^。？?]{0,12}?(?:ない|ません)|最初|元々|もともと|"
        r"過去|曾经|曾經|过去|原来|原來|一开始|不再|改变|改變|变化|搬家|搬到|搬去"),
    Intent.TEMPORAL: re.compile(
        r"いつ(?!も|か(?!ら)|つ|でも)|何時|何年|何月|何日|何曜|何週|何[かヶカヵケ]月|(?:どの|どれ)[くぐ]らい(?:前|の間|の期間)|"
        r"初めて|最後に|何回|何度|什么时候|什麼時候|何时|哪一?年|哪一?天|几月|几号|几点|几年|多久|多长时间|"
        r"第一次|最后一次|以来|直到"),
    Intent.CAUSAL: re.compile(
        r"なぜ|何故|どうして|なんで(?!も)|理由|原因|きっかけ|動機|ため(?=[にでだの、])|せいで|おかげ|"
        r"为什么|為什麼|为何|為何|为了|為了|因为|因為|导致|導致|怎么会|由于|由於|动机"),
    Intent.CONTRAST: re.compile(
        r"違い|違う|比べ|比較|(?<!何)より(?![前後]|も前)|どちらが|どっちが|方が|両方|共通|似て|"
        r"区别|區別|不同|比较|相比|对比|對比|哪个更|更喜欢|更好|两者|兩者|相似"),
}
# "keep closed versions": the EVOLUTION cues a history is asked with (not a move, as "moved" in English)
CJK_HISTORY = re.compile(
    r"以前|(?<![名午])前は|昔|かつて|変わ|変化|もう[^。？?]{0,12}?(?:ない|ません)|最初|元々|もともと|過去|"
    r"曾经|曾經|过去|原来|原來|一开始|不再|改变|改變|变化")
# a Japanese question in the past tense: a verb, adjective or copula in its past form before the question
# particle ("住んでいましたか", "どこでしたか", "楽しかった?", casual "住んでた?"); Chinese marks no tense a rule
# could read safely ("了" is also a change now), so its questions are read as the present
CJK_PAST = re.compile(r"(?:ました|でした|だった|かった|[てで]いた|[んっ][でだ]た|[てっ]た)(?:の|ん)?(?:です)?(?:か|かね)?"
                      r"[\s?？。!！]*$")
# a question ending in the question particle, with no question word in it, asks yes or no
CJK_YES_NO = re.compile(r"(?:か|吗|嗎)[\s?？。!！]*$")
# "I" (not "we", not "private" 私立)
CJK_SPEAKER = re.compile(r"私(?!たち|達|ども|立|鉄)|わたし(?!たち)|僕(?!ら|たち|達)|俺(?!ら|たち|達)|我(?![们們])")
_HIRAGANA = re.compile("[\u3041-\u309f]")
# what parts a Japanese sentence's words: hiragana (particles, endings), spaces and punctuation
_NOT_A_WORD = re.compile(r"[\u3041-\u309f\W_]+")


def cjk_yes_no_targets(text: str) -> frozenset[str]:
    """What a Japanese yes/no question asks about: the terms of its words other than relation words, its words
    being what lies between hiragana (particles, verb endings) and punctuation ("マヤは犬を飼っていますか" →
    マヤ, 犬, and 飼 a relation word).  A Chinese question has no such marks between its words: none.  Pure.

    >>> sorted(cjk_yes_no_targets("マヤはリスボンに住んでいますか"))
    ['スボ', 'ボン', 'マヤ', 'リス']
    """
    if _HIRAGANA.search(text) is None:
        return frozenset()
    return frozenset(t for run in _NOT_A_WORD.split(without_cjk_relation_words(text)) for t in term_set(run))
