-- Jobs (queued ingestion and session ends) and API keys (tenants), schema v6.
--
-- A job row is written in the same transaction as the turns it extracts, so a job exists for
-- every stored turn that waits for extraction; the queue only carries the job id.  user_id is the
-- user as the tenant knows it; (tenant, id) is what a tenant-bound store may read.
CREATE TABLE IF NOT EXISTS jobs (
  id           TEXT NOT NULL PRIMARY KEY,
  tenant       TEXT NOT NULL,
  user_id      TEXT NOT NULL,
  kind         TEXT NOT NULL,            -- add | end_session
  session_id   TEXT,
  status       TEXT NOT NULL,            -- queued | running | done | failed
  payload      TEXT NOT NULL DEFAULT '{}',
  result       TEXT,                     -- JSON of the AddResult / SessionEnd
  error        TEXT,
  attempts     INTEGER NOT NULL DEFAULT 0,
  worker       TEXT,
  lease_until  INTEGER,                  -- a running job whose lease passed is redelivered
  created_at   INTEGER NOT NULL,
  sent_at      INTEGER,                  -- handed to the queue (NULL: not yet; the sweeper sends it)
  started_at   INTEGER,
  finished_at  INTEGER,
  updated_at   INTEGER NOT NULL
);
-- user keys already carry the tenant
CREATE INDEX IF NOT EXISTS jobs_by_user ON jobs (user_id, created_at);
CREATE INDEX IF NOT EXISTS jobs_by_tenant ON jobs (tenant, created_at);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status, lease_until);

-- An API key is shown once; only its sha256 is kept.  prefix is the public half (its id).
CREATE TABLE IF NOT EXISTS api_keys (
  prefix      TEXT NOT NULL PRIMARY KEY,
  tenant      TEXT NOT NULL,
  hash        TEXT NOT NULL,
  name        TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  revoked_at  INTEGER
);
CREATE INDEX IF NOT EXISTS api_keys_by_tenant ON api_keys (tenant);
