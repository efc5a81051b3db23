-- chronomem schema v1 (SQLite).  Times are integers: microseconds since the Unix epoch, UTC.
-- Every table is keyed by user_id first: all reads and writes are scoped by it.
CREATE TABLE chronomem_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE sessions (
  user_id    TEXT NOT NULL,
  id         TEXT NOT NULL,
  agent_id   TEXT,
  started_at INTEGER,
  ended_at   INTEGER,
  PRIMARY KEY (user_id, id)
);

CREATE TABLE messages (
  user_id     TEXT NOT NULL,
  id          TEXT NOT NULL,
  session_id  TEXT NOT NULL,
  agent_id    TEXT,
  seq         INTEGER NOT NULL,
  speaker     TEXT NOT NULL,
  text        TEXT NOT NULL,
  ts          INTEGER NOT NULL,
  recorded_at INTEGER NOT NULL,
  extracted   INTEGER NOT NULL DEFAULT 0,  -- 0 pending, 1 done, -1 failed (to retry)
  PRIMARY KEY (user_id, id)
);
CREATE INDEX messages_by_session ON messages (user_id, session_id, seq);
CREATE INDEX messages_pending ON messages (user_id, extracted);

CREATE TABLE entities (
  user_id    TEXT NOT NULL,
  id         TEXT NOT NULL,
  name       TEXT NOT NULL,
  type       TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (user_id, id)
);

-- every spelling (canonical name and aliases), normalised, points at one entity
CREATE TABLE entity_names (
  user_id   TEXT NOT NULL,
  norm      TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  alias     TEXT NOT NULL,
  PRIMARY KEY (user_id, norm)
);
CREATE INDEX entity_names_by_entity ON entity_names (user_id, entity_id);

CREATE TABLE facts (
  user_id     TEXT NOT NULL,
  id          TEXT NOT NULL,
  subject_id  TEXT NOT NULL,
  subject     TEXT NOT NULL,
  relation    TEXT NOT NULL,
  object_id   TEXT NOT NULL,
  object      TEXT NOT NULL,
  valid_from  INTEGER,          -- NULL: start unknown
  valid_to    INTEGER,          -- NULL: still true
  stated_to   INTEGER,          -- end as stated by the source, before closures
  confidence  REAL NOT NULL,
  intent      TEXT NOT NULL,
  origin      TEXT NOT NULL,
  recorded_at INTEGER NOT NULL,
  session_id  TEXT,
  agent_id    TEXT,
  source_ids  TEXT NOT NULL DEFAULT '[]',
  text        TEXT NOT NULL DEFAULT '',
  closed_by   TEXT,
  PRIMARY KEY (user_id, id)
);
-- the temporal point query: facts of user U about S with relation R valid at T
CREATE INDEX facts_by_subject ON facts (user_id, subject_id, relation, valid_from);
CREATE INDEX facts_by_object ON facts (user_id, object_id, relation);
CREATE INDEX facts_by_session ON facts (user_id, session_id);

CREATE VIRTUAL TABLE facts_fts USING fts5 (text, content='facts', content_rowid='rowid',
                                           tokenize='porter unicode61');
CREATE TRIGGER facts_fts_ins AFTER INSERT ON facts BEGIN
  INSERT INTO facts_fts (rowid, text) VALUES (new.rowid, new.subject || ' ' || replace(new.relation, '_', ' ') || ' ' || new.object || ' ' || new.text);
END;
CREATE TRIGGER facts_fts_del AFTER DELETE ON facts BEGIN
  INSERT INTO facts_fts (facts_fts, rowid, text) VALUES ('delete', old.rowid, old.subject || ' ' || replace(old.relation, '_', ' ') || ' ' || old.object || ' ' || old.text);
END;
CREATE TRIGGER facts_fts_upd AFTER UPDATE OF text, subject, object ON facts BEGIN
  INSERT INTO facts_fts (facts_fts, rowid, text) VALUES ('delete', old.rowid, old.subject || ' ' || replace(old.relation, '_', ' ') || ' ' || old.object || ' ' || old.text);
  INSERT INTO facts_fts (rowid, text) VALUES (new.rowid, new.subject || ' ' || replace(new.relation, '_', ' ') || ' ' || new.object || ' ' || new.text);
END;

CREATE VIRTUAL TABLE messages_fts USING fts5 (speaker, text, content='messages', content_rowid='rowid',
                                              tokenize='porter unicode61');
CREATE TRIGGER messages_fts_ins AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (rowid, speaker, text) VALUES (new.rowid, new.speaker, new.text);
END;
CREATE TRIGGER messages_fts_del AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, speaker, text) VALUES ('delete', old.rowid, old.speaker, old.text);
END;

-- embeddings of entities, facts and messages; exact per-user k-NN with sqlite-vec's distance functions
CREATE TABLE vectors (
  user_id  TEXT NOT NULL,
  kind     TEXT NOT NULL,     -- 'entity' | 'fact' | 'message'
  item_id  TEXT NOT NULL,
  model    TEXT NOT NULL,
  dim      INTEGER NOT NULL,
  vec      BLOB NOT NULL,     -- float32, sqlite-vec format
  PRIMARY KEY (user_id, kind, item_id)
);

-- Rsum memories M_i, one per ended session
CREATE TABLE checkpoints (
  user_id      TEXT NOT NULL,
  seq          INTEGER NOT NULL,
  session_id   TEXT NOT NULL,
  memory       TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  session_time INTEGER,
  PRIMARY KEY (user_id, seq)
);
