-- Fewer B-trees to update per bulk-loaded fact (BENCHMARKS.md "Core store").
--
-- entities and entity_names become WITHOUT ROWID tables: each was a rowid table plus the
-- B-tree of its primary key, and nothing uses their rowids, so every entity insert wrote two
-- B-trees where one holds the same rows in primary-key order.  Same columns, same keys,
-- same rows; the by-entity index is recreated.
CREATE TABLE entities_v3 (
  user_id    TEXT NOT NULL,
  id         TEXT NOT NULL,
  name       TEXT NOT NULL,
  type       TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (user_id, id)
) WITHOUT ROWID;
INSERT INTO entities_v3 (user_id, id, name, type, created_at)
  SELECT user_id, id, name, type, created_at FROM entities;
DROP TABLE entities;
ALTER TABLE entities_v3 RENAME TO entities;

CREATE TABLE entity_names_v3 (
  user_id   TEXT NOT NULL,
  norm      TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  alias     TEXT NOT NULL,
  PRIMARY KEY (user_id, norm)
) WITHOUT ROWID;
INSERT INTO entity_names_v3 (user_id, norm, entity_id, alias)
  SELECT user_id, norm, entity_id, alias FROM entity_names;
DROP TABLE entity_names;
ALTER TABLE entity_names_v3 RENAME TO entity_names;
CREATE INDEX entity_names_by_entity ON entity_names (user_id, entity_id);

-- facts_by_session serves `session_id = ?`, which never matches NULL: facts without a session
-- (add_facts imports) need no entry.  SQLite uses a partial index for `session_id = ?` because
-- that comparison implies `session_id IS NOT NULL`.
DROP INDEX facts_by_session;
CREATE INDEX facts_by_session ON facts (user_id, session_id) WHERE session_id IS NOT NULL;
