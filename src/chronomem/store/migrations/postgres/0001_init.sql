-- chronomem schema v1 (PostgreSQL).  The same tables and columns as migrations/sqlite/0001_init.sql,
-- created inside chronomem's own schema (default "chronomem"; the store sets search_path), in one
-- transaction, under the migration advisory lock.  Times are BIGINT microseconds since the epoch (UTC).
-- Text keys use COLLATE "C" so ordering is byte order, exactly as in SQLite.
-- @VECTOR_TYPE@ is replaced by `vector` when the pgvector extension is available, else by `bytea`
-- (float32 little-endian, exact per-user k-NN in numpy); the choice is recorded in chronomem_meta.
CREATE TABLE chronomem_meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL);

CREATE TABLE sessions (
  user_id    text COLLATE "C" NOT NULL,
  id         text COLLATE "C" NOT NULL,
  agent_id   text COLLATE "C",
  started_at bigint,
  ended_at   bigint,
  PRIMARY KEY (user_id, id)
);

CREATE TABLE messages (
  user_id     text COLLATE "C" NOT NULL,
  id          text COLLATE "C" NOT NULL,
  session_id  text COLLATE "C" NOT NULL,
  agent_id    text COLLATE "C",
  seq         integer NOT NULL,
  speaker     text COLLATE "C" NOT NULL,
  text        text NOT NULL,
  ts          bigint NOT NULL,
  recorded_at bigint NOT NULL,
  extracted   integer NOT NULL DEFAULT 0,  -- 0 pending, 1 done, -1 failed (to retry)
  tsv         tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, speaker || ' ' || text)) STORED,
  PRIMARY KEY (user_id, id)
);
CREATE INDEX messages_by_session ON messages (user_id, session_id, seq);
CREATE INDEX messages_pending ON messages (user_id, extracted);
CREATE INDEX messages_fts ON messages USING gin (tsv);

CREATE TABLE entities (
  user_id    text COLLATE "C" NOT NULL,
  id         text COLLATE "C" NOT NULL,
  name       text COLLATE "C" NOT NULL,
  type       text COLLATE "C",
  created_at bigint NOT NULL,
  PRIMARY KEY (user_id, id)
);

-- every spelling (canonical name and aliases), normalised, points at one entity
CREATE TABLE entity_names (
  user_id   text COLLATE "C" NOT NULL,
  norm      text COLLATE "C" NOT NULL,
  entity_id text COLLATE "C" NOT NULL,
  alias     text COLLATE "C" NOT NULL,
  PRIMARY KEY (user_id, norm)
);
CREATE INDEX entity_names_by_entity ON entity_names (user_id, entity_id);

CREATE TABLE facts (
  user_id     text COLLATE "C" NOT NULL,
  id          text COLLATE "C" NOT NULL,
  subject_id  text COLLATE "C" NOT NULL,
  subject     text COLLATE "C" NOT NULL,
  relation    text COLLATE "C" NOT NULL,
  object_id   text COLLATE "C" NOT NULL,
  object      text COLLATE "C" NOT NULL,
  valid_from  bigint,                 -- NULL: start unknown
  valid_to    bigint,                 -- NULL: still true
  stated_to   bigint,                 -- end as stated by the source, before closures
  confidence  double precision NOT NULL,
  intent      text COLLATE "C" NOT NULL,
  origin      text COLLATE "C" NOT NULL,
  recorded_at bigint NOT NULL,
  session_id  text COLLATE "C",
  agent_id    text COLLATE "C",
  source_ids  text NOT NULL DEFAULT '[]',
  text        text NOT NULL DEFAULT '',
  closed_by   text COLLATE "C",
  tsv         tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig,
                subject || ' ' || replace(relation, '_', ' ') || ' ' || object || ' ' || text)) STORED,
  PRIMARY KEY (user_id, id)
);
-- the temporal point query: facts of user U about S with relation R valid at T
CREATE INDEX facts_by_subject ON facts (user_id, subject_id, relation, valid_from);
CREATE INDEX facts_by_object ON facts (user_id, object_id, relation);
CREATE INDEX facts_by_session ON facts (user_id, session_id);
CREATE INDEX facts_fts ON facts USING gin (tsv);

-- embeddings of entities, facts and messages.  With pgvector, an HNSW index per dimension is
-- created on first use: CREATE INDEX vectors_hnsw_d<dim> ... ((vec::vector(<dim>))) WHERE dim = <dim>.
CREATE TABLE vectors (
  user_id  text COLLATE "C" NOT NULL,
  kind     text COLLATE "C" NOT NULL,     -- 'entity' | 'fact' | 'message'
  item_id  text COLLATE "C" NOT NULL,
  model    text COLLATE "C" NOT NULL,
  dim      integer NOT NULL,
  vec      @VECTOR_TYPE@ NOT NULL,
  PRIMARY KEY (user_id, kind, item_id)
);

-- Rsum memories M_i, one per ended session
CREATE TABLE checkpoints (
  user_id      text COLLATE "C" NOT NULL,
  seq          integer NOT NULL,
  session_id   text COLLATE "C" NOT NULL,
  memory       text NOT NULL,
  created_at   bigint NOT NULL,
  session_time bigint,
  PRIMARY KEY (user_id, seq)
);
