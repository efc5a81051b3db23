-- Chinese, Japanese and Korean text is indexed as overlapping pairs of characters (fulltext.cjk_bigrams):
-- unicode61 kept a whole run of such characters as one token ("私は去年リスボンに引っ越しました" was one
-- word), so no question written in them ever found a turn or a fact.  Both indexes now read their text
-- through a view that applies chronomem_cjk_bigrams(), a deterministic function every connection of
-- SQLiteStore registers; it returns a text without such characters as it is, so every other row is indexed
-- exactly as before.  The tables keep the words as said and read without it (sqlite3's shell still reads
-- them all; it cannot write facts or turns, whose triggers call the function).
DROP TRIGGER facts_fts_del;
DROP TRIGGER facts_fts_upd;
DROP TABLE facts_fts;
CREATE VIEW facts_fts_content AS
  SELECT rowid AS row_id, chronomem_cjk_bigrams(fts_text) AS fts_text FROM facts;
CREATE VIRTUAL TABLE facts_fts USING fts5 (fts_text, content='facts_fts_content', content_rowid='row_id',
                                           tokenize='porter unicode61');
INSERT INTO facts_fts (facts_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO facts_fts (facts_fts) VALUES ('rebuild');

DROP TRIGGER messages_fts_ins;
DROP TRIGGER messages_fts_del;
DROP TRIGGER messages_fts_upd;
DROP TABLE messages_fts;
CREATE VIEW messages_fts_content AS
  SELECT rowid AS row_id, chronomem_cjk_bigrams(speaker) AS speaker, chronomem_cjk_bigrams(text) AS text,
         chronomem_cjk_bigrams(context) AS context FROM messages;
CREATE VIRTUAL TABLE messages_fts USING fts5 (speaker, text, context, content='messages_fts_content',
                                              content_rowid='row_id', tokenize='porter unicode61');
INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');

-- each block's tokens again (a row with such characters holds more tokens now; see 0015)
UPDATE user_blocks SET
  (facts_rows, facts_tokens) = (
    SELECT count(*), COALESCE(sum(tokens), 0) FROM facts_fts_lengths
    WHERE id BETWEEN block * 4294967296 AND block * 4294967296 + 4294967295),
  (messages_rows, messages_tokens) = (
    SELECT count(*), COALESCE(sum(tokens), 0) FROM messages_fts_lengths
    WHERE id BETWEEN block * 4294967296 AND block * 4294967296 + 4294967295);

-- the triggers of 0015, each text through the function
CREATE TRIGGER facts_fts_del AFTER DELETE ON facts BEGIN
  UPDATE user_blocks SET facts_rows = facts_rows - 1,
    facts_tokens = facts_tokens - (SELECT tokens FROM facts_fts_lengths WHERE id = old.rowid)
  WHERE block = old.rowid >> 32;
  INSERT INTO facts_fts (facts_fts, rowid, fts_text)
  VALUES ('delete', old.rowid, chronomem_cjk_bigrams(old.fts_text));
END;
CREATE TRIGGER facts_fts_upd AFTER UPDATE OF subject, relation, object, text ON facts BEGIN
  UPDATE user_blocks SET facts_tokens = facts_tokens
    - (SELECT tokens FROM facts_fts_lengths WHERE id = old.rowid)
  WHERE block = old.rowid >> 32;
  INSERT INTO facts_fts (facts_fts, rowid, fts_text)
  VALUES ('delete', old.rowid, chronomem_cjk_bigrams(old.fts_text));
  INSERT INTO facts_fts (rowid, fts_text) VALUES (new.rowid, chronomem_cjk_bigrams(new.fts_text));
  UPDATE user_blocks SET facts_tokens = facts_tokens
    + (SELECT tokens FROM facts_fts_lengths WHERE id = new.rowid)
  WHERE block = new.rowid >> 32;
END;
CREATE TRIGGER messages_fts_ins AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (rowid, speaker, text, context)
  VALUES (new.rowid, chronomem_cjk_bigrams(new.speaker), chronomem_cjk_bigrams(new.text),
          chronomem_cjk_bigrams(new.context));
  UPDATE user_blocks SET messages_rows = messages_rows + 1,
    messages_tokens = messages_tokens + (SELECT tokens FROM messages_fts_lengths WHERE id = new.rowid)
  WHERE block = new.rowid >> 32;
END;
CREATE TRIGGER messages_fts_del AFTER DELETE ON messages BEGIN
  UPDATE user_blocks SET messages_rows = messages_rows - 1,
    messages_tokens = messages_tokens - (SELECT tokens FROM messages_fts_lengths WHERE id = old.rowid)
  WHERE block = old.rowid >> 32;
  INSERT INTO messages_fts (messages_fts, rowid, speaker, text, context)
  VALUES ('delete', old.rowid, chronomem_cjk_bigrams(old.speaker), chronomem_cjk_bigrams(old.text),
          chronomem_cjk_bigrams(old.context));
END;
CREATE TRIGGER messages_fts_upd AFTER UPDATE OF speaker, text, context ON messages BEGIN
  UPDATE user_blocks SET messages_tokens = messages_tokens
    - (SELECT tokens FROM messages_fts_lengths WHERE id = old.rowid)
  WHERE block = old.rowid >> 32;
  INSERT INTO messages_fts (messages_fts, rowid, speaker, text, context)
  VALUES ('delete', old.rowid, chronomem_cjk_bigrams(old.speaker), chronomem_cjk_bigrams(old.text),
          chronomem_cjk_bigrams(old.context));
  INSERT INTO messages_fts (rowid, speaker, text, context)
  VALUES (new.rowid, chronomem_cjk_bigrams(new.speaker), chronomem_cjk_bigrams(new.text),
          chronomem_cjk_bigrams(new.context));
  UPDATE user_blocks SET messages_tokens = messages_tokens
    + (SELECT tokens FROM messages_fts_lengths WHERE id = new.rowid)
  WHERE block = new.rowid >> 32;
END;
