"""Test helper: put an SQLite memory back to an older schema version, so a test can show what a later
migration does to a file written before it.  Each later migration whose statements cannot run twice
(ALTER TABLE ... ADD COLUMN) is reverted here, newest first."""

from __future__ import annotations

from typing import Any


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


def downgrade(db: Any, version: int) -> None:
    """Record ``version`` as the file's schema version, reverting what cannot be applied twice."""
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
