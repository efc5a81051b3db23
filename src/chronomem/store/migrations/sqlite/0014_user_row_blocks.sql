-- Each user's facts and turns get rowids in a block of their own (user_blocks.block * 2^32 onwards), so a
-- full-text search reads only the asking user's part of the index: FTS5 narrows a MATCH to a rowid range
-- inside its posting lists.  Before, a search read every user's rows that held its words and dropped the
-- others' afterwards: with 300 other users of 1,000 facts and a conversation each, one search over a
-- user's facts took 30 ms, now 1.7 (BENCHMARKS.md "Full-text search in a shared file").  The scores are
-- FTS5's bm25 as before.  Rows inserted since keep to the blocks (SQLiteStore._row_ids).
CREATE TABLE IF NOT EXISTS user_blocks (user_id TEXT PRIMARY KEY, block INTEGER NOT NULL UNIQUE);
INSERT INTO user_blocks (user_id, block)
  SELECT user_id, (SELECT COALESCE(MAX(block), 0) FROM user_blocks) + row_number() OVER (ORDER BY user_id)
  FROM (SELECT user_id FROM facts UNION SELECT user_id FROM messages)
  WHERE user_id NOT IN (SELECT user_id FROM user_blocks);
-- a row's place in its block is its old rowid (below 2^32 in any file written before this version; the
-- same value again for a row already in its block, so the statements can run twice)
UPDATE facts SET rowid = (SELECT block FROM user_blocks b WHERE b.user_id = facts.user_id) * 4294967296
  + rowid % 4294967296;
UPDATE messages SET rowid = (SELECT block FROM user_blocks b WHERE b.user_id = messages.user_id) * 4294967296
  + rowid % 4294967296;
-- the indexes point at rowids: build both again (facts_fts indexes an expression, see 0004)
INSERT INTO facts_fts (facts_fts) VALUES ('delete-all');
INSERT INTO facts_fts (rowid, text)
  SELECT rowid, subject || ' ' || replace(relation, '_', ' ') || ' ' || object || ' ' || text FROM facts;
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
