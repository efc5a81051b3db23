"""Does the order of one user's full-text hits depend on what other users of the same store said?

It must not: a user who can probe rankings would learn something of the others' words.  PostgreSQL's
``ts_rank`` reads each row alone.  SQLite computes FTS5's ``bm25`` from the user's own rows (migration
0015; ``tests/test_fulltext_ranking.py`` holds the exhaustive checks), where FTS5's own function weighs a
word by how many rows of the whole table hold it, every user's and tenant's included.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chronomem import Memory


def _order(mem: Memory) -> list[str]:
    return [mem.store.facts("a", ids=[i])[0].object for i, _ in mem.store.search_facts_text("a", "zebra opera")]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_users_ranking_does_not_move_with_other_users_words(kind: str, url_factory: Callable[[str], str]) -> None:
    with Memory(url_factory(kind), llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "Ana", "relation": "likes", "object": "zebra", "text": "Ana saw a zebra"},
                       {"subject": "Ana", "relation": "likes", "object": "opera", "text": "Ana went to the opera"}],
                      user_id="a")
        alone = _order(mem)
        assert sorted(alone) == ["opera", "zebra"]
        for user, word, n in (("b", "zebra", 300), ("c", "opera", 900)):
            mem.add_facts([{"subject": f"P{i}", "relation": "likes", "object": word, "text": f"P{i} saw a {word}"}
                           for i in range(n)], user_id=user)
            assert _order(mem) == alone, f"after user {user!r} said {word!r} {n} times"
