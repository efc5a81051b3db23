-- A user's full-text ranking depends on that user's rows alone.  FTS5's bm25 weighs a word by how many rows
-- of the whole table hold it and a row's length by the whole table's average: in a shared file, the order
-- of one user's hits moved with what the other users said (a side channel, and the cost of counting a
-- common word's rows in every user's part of the index).  SQLiteStore._fts now computes the same bm25 with
-- the user's own counts (fulltext.bm25_ranking): the rows and tokens of the user's block, kept below by
-- triggers, and for each matched row its instances of each word (highlight()) and its length (docsize).
-- A user alone in a file ranks exactly as before.

-- 1. highlight() reads the text a row was indexed with from the content table: facts_fts indexed an
-- expression (0004) that no column held, so it reads it now from a generated column (no bytes stored)
ALTER TABLE facts ADD COLUMN fts_text TEXT GENERATED ALWAYS AS (
  subject || ' ' || replace(relation, '_', ' ') || ' ' || object || ' ' || text) VIRTUAL;
DROP TRIGGER facts_fts_del;
DROP TRIGGER facts_fts_upd;
DROP TABLE facts_fts;
CREATE VIRTUAL TABLE facts_fts USING fts5 (fts_text, content='facts', content_rowid='rowid',
                                           tokenize='porter unicode61');
INSERT INTO facts_fts (facts_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO facts_fts (facts_fts) VALUES ('rebuild');

-- 2. each indexed row's length in tokens, all columns together, as FTS5 stored it: the docsize blob holds
-- one SQLite varint per column (7 bits a byte, high bit set on every byte but a value's last), read here
-- from the blob's hex.  A blob of one byte a column (every column under 128 tokens) is the sum of its
-- bytes; a longer one is summed byte by byte.  One view a table: under a UNION ALL of both tables SQLite
-- no longer read a block's range through the docsize index (filling the counts of 1,000 users took 89 s).
CREATE VIEW facts_fts_lengths AS
  SELECT d.id AS id,
    CASE WHEN length(d.sz) = 1 THEN
           (instr('0123456789ABCDEF', substr(hex(d.sz), 1, 1)) - 1) * 16
             + instr('0123456789ABCDEF', substr(hex(d.sz), 2, 1)) - 1
    ELSE (
    WITH RECURSIVE v(pos, b, acc, total) AS (
      SELECT 0, (instr('0123456789ABCDEF', substr(hex(d.sz), 1, 1)) - 1) * 16
                + instr('0123456789ABCDEF', substr(hex(d.sz), 2, 1)) - 1, 0, 0
      UNION ALL
      SELECT pos + 1, (instr('0123456789ABCDEF', substr(hex(d.sz), 2 * pos + 3, 1)) - 1) * 16
                      + instr('0123456789ABCDEF', substr(hex(d.sz), 2 * pos + 4, 1)) - 1,
             CASE WHEN b < 128 THEN 0 ELSE (acc + (b & 127)) * 128 END,
             CASE WHEN b < 128 THEN total + acc + b ELSE total END
      FROM v WHERE pos < length(d.sz)
    ) SELECT max(total) FROM v) END AS tokens
  FROM facts_fts_docsize d;
CREATE VIEW messages_fts_lengths AS
  SELECT d.id AS id,
    CASE WHEN length(d.sz) = 3 THEN
           ((instr('0123456789ABCDEF', substr(hex(d.sz), 1, 1)) - 1) * 16
             + instr('0123456789ABCDEF', substr(hex(d.sz), 2, 1)) - 1)
           + ((instr('0123456789ABCDEF', substr(hex(d.sz), 3, 1)) - 1) * 16
             + instr('0123456789ABCDEF', substr(hex(d.sz), 4, 1)) - 1)
           + ((instr('0123456789ABCDEF', substr(hex(d.sz), 5, 1)) - 1) * 16
             + instr('0123456789ABCDEF', substr(hex(d.sz), 6, 1)) - 1)
    ELSE (
    WITH RECURSIVE v(pos, b, acc, total) AS (
      SELECT 0, (instr('0123456789ABCDEF', substr(hex(d.sz), 1, 1)) - 1) * 16
                + instr('0123456789ABCDEF', substr(hex(d.sz), 2, 1)) - 1, 0, 0
      UNION ALL
      SELECT pos + 1, (instr('0123456789ABCDEF', substr(hex(d.sz), 2 * pos + 3, 1)) - 1) * 16
                      + instr('0123456789ABCDEF', substr(hex(d.sz), 2 * pos + 4, 1)) - 1,
             CASE WHEN b < 128 THEN 0 ELSE (acc + (b & 127)) * 128 END,
             CASE WHEN b < 128 THEN total + acc + b ELSE total END
      FROM v WHERE pos < length(d.sz)
    ) SELECT max(total) FROM v) END AS tokens
  FROM messages_fts_docsize d;

-- 3. each block's indexed rows and tokens, per table (a block is a user's: rowid >> 32, see 0014)
ALTER TABLE user_blocks ADD COLUMN facts_rows INTEGER NOT NULL DEFAULT 0;
ALTER TABLE user_blocks ADD COLUMN facts_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE user_blocks ADD COLUMN messages_rows INTEGER NOT NULL DEFAULT 0;
ALTER TABLE user_blocks ADD COLUMN messages_tokens INTEGER NOT NULL DEFAULT 0;
UPDATE user_blocks SET
  (facts_rows, facts_tokens) = (
    SELECT count(*), COALESCE(sum(tokens), 0) FROM facts_fts_lengths
    WHERE id BETWEEN block * 4294967296 AND block * 4294967296 + 4294967295),
  (messages_rows, messages_tokens) = (
    SELECT count(*), COALESCE(sum(tokens), 0) FROM messages_fts_lengths
    WHERE id BETWEEN block * 4294967296 AND block * 4294967296 + 4294967295);

-- 4. the triggers keep the counts with the index: a row's length is read before its entry is deleted and
-- after it is written.  New facts are indexed a batch at a time by SQLiteStore._indexing_new_facts, which
-- counts them the same way.
CREATE TRIGGER facts_fts_del AFTER DELETE ON facts BEGIN
  UPDATE user_blocks SET facts_rows = facts_rows - 1,
    facts_tokens = facts_tokens - (SELECT tokens FROM facts_fts_lengths WHERE id = old.rowid)
  WHERE block = old.rowid >> 32;
  INSERT INTO facts_fts (facts_fts, rowid, fts_text) VALUES ('delete', old.rowid, old.fts_text);
END;
CREATE TRIGGER facts_fts_upd AFTER UPDATE OF subject, relation, object, text ON facts BEGIN
  UPDATE user_blocks SET facts_tokens = facts_tokens
    - (SELECT tokens FROM facts_fts_lengths WHERE id = old.rowid)
  WHERE block = old.rowid >> 32;
  INSERT INTO facts_fts (facts_fts, rowid, fts_text) VALUES ('delete', old.rowid, old.fts_text);
  INSERT INTO facts_fts (rowid, fts_text) VALUES (new.rowid, new.fts_text);
  UPDATE user_blocks SET facts_tokens = facts_tokens
    + (SELECT tokens FROM facts_fts_lengths WHERE id = new.rowid)
  WHERE block = new.rowid >> 32;
END;
DROP TRIGGER messages_fts_ins;
DROP TRIGGER messages_fts_del;
DROP TRIGGER messages_fts_upd;
CREATE TRIGGER messages_fts_ins AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (rowid, speaker, text, context) VALUES (new.rowid, new.speaker, new.text, new.context);
  UPDATE user_blocks SET messages_rows = messages_rows + 1,
    messages_tokens = messages_tokens + (SELECT tokens FROM messages_fts_lengths WHERE id = new.rowid)
  WHERE block = new.rowid >> 32;
END;
CREATE TRIGGER messages_fts_del AFTER DELETE ON messages BEGIN
  UPDATE user_blocks SET messages_rows = messages_rows - 1,
    messages_tokens = messages_tokens - (SELECT tokens FROM messages_fts_lengths WHERE id = old.rowid)
  WHERE block = old.rowid >> 32;
  INSERT INTO messages_fts (messages_fts, rowid, speaker, text, context)
  VALUES ('delete', old.rowid, old.speaker, old.text, old.context);
END;
CREATE TRIGGER messages_fts_upd AFTER UPDATE OF speaker, text, context ON messages BEGIN
  UPDATE user_blocks SET messages_tokens = messages_tokens
    - (SELECT tokens FROM messages_fts_lengths WHERE id = old.rowid)
  WHERE block = old.rowid >> 32;
  INSERT INTO messages_fts (messages_fts, rowid, speaker, text, context)
  VALUES ('delete', old.rowid, old.speaker, old.text, old.context);
  INSERT INTO messages_fts (rowid, speaker, text, context) VALUES (new.rowid, new.speaker, new.text, new.context);
  UPDATE user_blocks SET messages_tokens = messages_tokens
    + (SELECT tokens FROM messages_fts_lengths WHERE id = new.rowid)
  WHERE block = new.rowid >> 32;
END;
