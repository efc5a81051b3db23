"""Text in the scripts written without spaces between words: Chinese, Japanese, and Korean (whose words
carry their particles).  Both full-text indexes, the query's words, the lexical relevance of the read path
and the spans a question could name an entity by see a run of such characters through this module.
"""

from __future__ import annotations

import re

#: The characters of the scripts written without spaces between words, as a regular expression's class:
#: Han (CJK ideographs and their marks 々〆〇), Hiragana, Katakana (full- and half-width) and Hangul
#: syllables, whose words carry their particles ("마야는").  Every one is a word character to FTS5's unicode61
#: and to PostgreSQL's parser, which both keep a whole run of them as one token: "私は去年リスボンに" was one
#: word, and no question ever shared it.  ``tests/test_fulltext_cjk.py`` checks the class against FTS5.
CJK = ("\u3005-\u3007\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff\u3400-\u4dbf"
       "\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002b81f")
_HAS_CJK = re.compile(f"[{CJK}]")
_CJK_RUN = re.compile(f"[{CJK}]+")
_CJK_EDGE = re.compile(f"([^ {CJK}])(?=[{CJK}])|([{CJK}])(?=[^ {CJK}])")
_CJK_INNER = re.compile(f"(?<=[{CJK}])([{CJK}])(?=[{CJK}])")


def cjk_bigrams(text: str) -> str:
    """``text`` with each run of :data:`CJK` characters written as its overlapping pairs of characters, apart
    from the words around it: what both full-text indexes hold and what a query asks for, so "リスボン"
    finds "私は去年リスボンに引っ越しました" (CJKAnalyzer's way in Lucene: no dictionary, no model).  A lone
    character stays itself; any other text is returned as it is, so nothing else is indexed otherwise.
    PostgreSQL's ``chronomem_fts_text`` (migration 0011) applies the same two expressions.

    >>> cjk_bigrams("Maya: 私は去年リスボンに"), cjk_bigrams("犬 and 마야는"), cjk_bigrams("café")
    ('Maya: 私は は去 去年 年リ リス スボ ボン ンに', '犬 and 마야 야는', 'café')
    """
    if text.isascii() or _HAS_CJK.search(text) is None:  # isascii: a flag CPython keeps, no scan
        return text
    return _CJK_INNER.sub(r"\1 \1", _CJK_EDGE.sub(r"\1\2 ", text))


def split_cjk(word: str) -> list[str]:
    """``word`` cut where a run of :data:`CJK` characters begins or ends: ``"Mayaは去年"`` → ``["Maya", "は去年"]``.

    >>> split_cjk("Mayaは去年"), split_cjk("Porto")
    (['Maya', 'は去年'], ['Porto'])
    """
    if word.isascii() or _HAS_CJK.search(word) is None:
        return [word]
    out, at = [], 0
    for m in _CJK_RUN.finditer(word):
        out += [word[at:m.start()], m.group()] if m.start() > at else [m.group()]
        at = m.end()
    return out + ([word[at:]] if at < len(word) else [])


def is_cjk(text: str) -> bool:
    """Whether ``text`` is a run of :data:`CJK` characters and nothing else."""
    return _CJK_RUN.fullmatch(text) is not None


def cjk_pairs(text: str) -> list[str]:
    """The words a run of :data:`CJK` characters stands for where words are compared: its overlapping pairs of
    characters (a lone character itself), in order.  Text without such characters has none.

    >>> cjk_pairs("Maya: ポルトに住む"), cjk_pairs("犬 and cat")
    (['ポル', 'ルト', 'トに', 'に住', '住む'], ['犬'])
    """
    if text.isascii():
        return []
    return [run[k:k + 2] for run in _CJK_RUN.findall(text) for k in range(max(1, len(run) - 1))]


def cjk_characters(text: str) -> int:
    """How many :data:`CJK` characters ``text`` holds."""
    return 0 if text.isascii() else sum(len(run) for run in _CJK_RUN.findall(text))


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a :data:`CJK` character; an ASCII text answers at once.

    >>> has_cjk("Where does Maya live?"), has_cjk("Café Zürich"), has_cjk("マヤはどこ?")
    (False, False, True)
    """
    return not text.isascii() and _HAS_CJK.search(text) is not None
