-- Contextual full-text index of turns: each turn is also indexed with the turn before it in its
-- session ("Speaker: text"), so a question that shares its words with what was asked finds the
-- reply that answers it.  On LoCoMo conv-26/30/42 (430 questions) BM25 over turns so indexed finds
-- 0.710 of the gold evidence turns in its top 10 against 0.612 for the turn alone
-- (BENCHMARKS.md "Fused read path").  `context` is index data, not part of a message: it is not
-- exported, and it is recomputed whenever turns are stored or imported (SQLStore.add_messages).
ALTER TABLE messages ADD COLUMN context TEXT NOT NULL DEFAULT '';
UPDATE messages SET context = COALESCE((
  SELECT p.speaker || ': ' || p.text FROM messages p
  WHERE p.user_id = messages.user_id AND p.session_id = messages.session_id AND p.seq < messages.seq
  ORDER BY p.seq DESC LIMIT 1), '');
DROP TRIGGER IF EXISTS messages_fts_ins;
DROP TRIGGER IF EXISTS messages_fts_del;
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5 (speaker, text, context, content='messages', content_rowid='rowid',
                                              tokenize='porter unicode61');
INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
CREATE TRIGGER messages_fts_ins AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (rowid, speaker, text, context) VALUES (new.rowid, new.speaker, new.text, new.context);
END;
CREATE TRIGGER messages_fts_del AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, speaker, text, context)
  VALUES ('delete', old.rowid, old.speaker, old.text, old.context);
END;
CREATE TRIGGER messages_fts_upd AFTER UPDATE OF speaker, text, context ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, speaker, text, context)
  VALUES ('delete', old.rowid, old.speaker, old.text, old.context);
  INSERT INTO messages_fts (rowid, speaker, text, context) VALUES (new.rowid, new.speaker, new.text, new.context);
END;
