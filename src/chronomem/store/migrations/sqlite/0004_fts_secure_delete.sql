-- forget() must leave no bytes of what it forgot in the file.  By default an FTS5 delete only
-- appends a tombstone: the forgotten tokens stay in the index segments (facts_fts_data,
-- messages_fts_data) until a merge happens to rewrite them.  The 'secure-delete' option
-- (SQLite 3.42+; sqlean.py bundles a newer one) removes the entries from the segments
-- instead, and PRAGMA secure_delete (set on every connection) zeroes the freed bytes.
INSERT INTO facts_fts (facts_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', 1);
-- Scrub what earlier deletes left behind: rebuild both indexes from their content tables.
-- facts_fts indexes an expression (facts.fts_text since 0015), so 'rebuild', which would
-- read only facts.text, is replaced by delete-all plus the same insert the store uses.
INSERT INTO facts_fts (facts_fts) VALUES ('delete-all');
INSERT INTO facts_fts (rowid, text) SELECT rowid, subject || ' ' || replace(relation, '_', ' ') || ' ' || object || ' ' || text FROM facts;
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
