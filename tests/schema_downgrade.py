"""Test helper: put an SQLite memory back to an older schema version, so a test can show what a later
migration does to a file written before it.  Each later migration whose statements cannot run twice
(ALTER TABLE ... ADD COLUMN) is reverted here, newest first."""

from __future__ import annotations

from typing import Any

from chronomem.store.sql import migrations
from chronomem.store.sqlite import _split_sql


def undo_contextual_message_index(db: Any) -> None:
    """Migration 0007 in reverse: the turn index without the previous-turn column."""
    for trigger in ("messages_fts_ins", "messages_fts_del", "messages_fts_upd"):
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute("DROP TABLE messages_fts")
    db.execute("ALTER TABLE messages DROP COLUMN context")
    db.execute("CREATE VIRTUAL TABLE messages_fts USING fts5 (speaker, text, content='messages', "
               "content_rowid='rowid', tokenize='porter unicode61')")
    db.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', 1)")
    db.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
    db.execute("CREATE TRIGGER messages_fts_ins AFTER INSERT ON messages BEGIN INSERT INTO messages_fts "
               "(rowid, speaker, text) VALUES (new.rowid, new.speaker, new.text); END")
    db.execute("CREATE TRIGGER messages_fts_del AFTER DELETE ON messages BEGIN INSERT INTO messages_fts "
               "(messages_fts, rowid, speaker, text) VALUES ('delete', old.rowid, old.speaker, old.text); END")


def undo_forgetting_provenance(db: Any) -> None:
    """Migration 0008 in reverse: no turns that ended a fact or taught an alias."""
    db.execute("ALTER TABLE facts DROP COLUMN ended_by")
    db.execute("ALTER TABLE facts DROP COLUMN text_from")
    db.execute("ALTER TABLE entity_names DROP COLUMN learned_from")


def undo_statement_provenance(db: Any) -> None:
    """Migration 0009 in reverse: no record of the statements that raised a fact's confidence or gave
    it its start."""
    db.execute("ALTER TABLE facts DROP COLUMN confirmations")
    db.execute("ALTER TABLE facts DROP COLUMN started_by")
    db.execute("ALTER TABLE messages DROP COLUMN utc_offset")


def undo_guessed_starts(db: Any) -> None:
    """Migration 0011 in reverse: no mark on starts that were inferred."""
    db.execute("ALTER TABLE facts DROP COLUMN start_guessed")


def undo_other_words(db: Any) -> None:
    """Migration 0013 in reverse: facts keep no other statements' words."""
    db.execute("ALTER TABLE facts DROP COLUMN other_words")


def undo_later_dates(db: Any) -> None:
    """Migration 0018 in reverse: facts keep no later starts or ends of their statements."""
    db.execute("ALTER TABLE facts DROP COLUMN later_starts")
    db.execute("ALTER TABLE facts DROP COLUMN later_ends")


def undo_user_fulltext_statistics(db: Any) -> None:
    """Migration 0015 in reverse: facts_fts indexes an expression no column holds, no counts per block.
    The index keeps its bytes (the tables behind both declarations hold the same tokens the same way),
    so what a file of that age left in its index stays there."""
    for trigger in ("facts_fts_del", "facts_fts_upd", "messages_fts_ins", "messages_fts_del", "messages_fts_upd"):
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute("DROP VIEW facts_fts_lengths")
    db.execute("DROP VIEW messages_fts_lengths")
    db.execute("ALTER TABLE facts_fts RENAME TO facts_fts_new")
    for column in ("facts_rows", "facts_tokens", "messages_rows", "messages_tokens"):
        db.execute(f"ALTER TABLE user_blocks DROP COLUMN {column}")
    expression = "subject || ' ' || replace({0}relation, '_', ' ') || ' ' || {0}object || ' ' || {0}text"
    db.execute("CREATE VIRTUAL TABLE facts_fts USING fts5 (text, content='facts', content_rowid='rowid', "
               "tokenize='porter unicode61')")
    for shadow in ("data", "idx", "docsize", "config"):
        db.execute(f"DELETE FROM facts_fts_{shadow}")
        db.execute(f"INSERT INTO facts_fts_{shadow} SELECT * FROM facts_fts_new_{shadow}")
    db.execute("DROP TABLE facts_fts_new")
    db.execute("ALTER TABLE facts DROP COLUMN fts_text")
    old = "old." + expression.format("old.")
    new = "new." + expression.format("new.")
    db.execute("CREATE TRIGGER facts_fts_del AFTER DELETE ON facts BEGIN INSERT INTO facts_fts (facts_fts, rowid, "
               f"text) VALUES ('delete', old.rowid, {old}); END")
    db.execute("CREATE TRIGGER facts_fts_upd AFTER UPDATE OF text, subject, object ON facts BEGIN "
               f"INSERT INTO facts_fts (facts_fts, rowid, text) VALUES ('delete', old.rowid, {old}); "
               f"INSERT INTO facts_fts (rowid, text) VALUES (new.rowid, {new}); END")
    columns = "speaker, text, context"
    db.execute("CREATE TRIGGER messages_fts_ins AFTER INSERT ON messages BEGIN INSERT INTO messages_fts "
               f"(rowid, {columns}) VALUES (new.rowid, new.speaker, new.text, new.context); END")
    db.execute("CREATE TRIGGER messages_fts_del AFTER DELETE ON messages BEGIN INSERT INTO messages_fts "
               f"(messages_fts, rowid, {columns}) VALUES ('delete', old.rowid, old.speaker, old.text, old.context); "
               "END")
    db.execute(f"CREATE TRIGGER messages_fts_upd AFTER UPDATE OF {columns} ON messages BEGIN "
               f"INSERT INTO messages_fts (messages_fts, rowid, {columns}) "
               "VALUES ('delete', old.rowid, old.speaker, old.text, old.context); "
               f"INSERT INTO messages_fts (rowid, {columns}) VALUES (new.rowid, new.speaker, new.text, new.context); "
               "END")


def undo_cjk_bigrams(db: Any) -> None:
    """Migration 0016 in reverse: both indexes read their tables' text as it is (no view, no function).  The
    index keeps its bytes, which a file without Chinese, Japanese or Korean text holds the same way."""
    for trigger in ("facts_fts_del", "facts_fts_upd", "messages_fts_ins", "messages_fts_del", "messages_fts_upd"):
        db.execute(f"DROP TRIGGER {trigger}")
    views = [r[0] for r in db.execute("SELECT sql FROM sqlite_master WHERE name IN "
                                      "('facts_fts_lengths', 'messages_fts_lengths')")]
    db.execute("DROP VIEW facts_fts_lengths")
    db.execute("DROP VIEW messages_fts_lengths")
    for table, columns in (("facts", "fts_text"), ("messages", "speaker, text, context")):
        db.execute(f"ALTER TABLE {table}_fts RENAME TO {table}_fts_new")
        db.execute(f"CREATE VIRTUAL TABLE {table}_fts USING fts5 ({columns}, content='{table}', "
                   "content_rowid='rowid', tokenize='porter unicode61')")
        for shadow in ("data", "idx", "docsize", "config"):
            db.execute(f"DELETE FROM {table}_fts_{shadow}")
            db.execute(f"INSERT INTO {table}_fts_{shadow} SELECT * FROM {table}_fts_new_{shadow}")
        db.execute(f"DROP TABLE {table}_fts_new")
        db.execute(f"DROP VIEW {table}_fts_content")
    for view in views:
        db.execute(view)
    for stmt in _split_sql(dict(migrations("sqlite"))[15]):  # 0015's triggers, which read the text as it is
        if stmt.lstrip().startswith("CREATE TRIGGER"):
            db.execute(stmt)


def downgrade(db: Any, version: int) -> None:
    """Record ``version`` as the file's schema version, reverting what cannot be applied twice."""
    if version < 18:
        undo_later_dates(db)
    if version < 16:
        undo_cjk_bigrams(db)
    if version < 15:
        undo_user_fulltext_statistics(db)
    if version < 13:
        undo_other_words(db)
    if version < 11:
        undo_guessed_starts(db)
    if version < 9:
        undo_statement_provenance(db)
    if version < 8:
        undo_forgetting_provenance(db)
    if version < 7:
        undo_contextual_message_index(db)
    db.execute("UPDATE chronomem_meta SET value = ? WHERE key = 'schema_version'", (str(version),))
