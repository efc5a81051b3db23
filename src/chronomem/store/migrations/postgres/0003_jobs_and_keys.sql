-- Jobs (queued ingestion and session ends) and API keys (tenants), PostgreSQL, schema v3; the same tables as migrations/sqlite/0006.
--
-- A job row is written in the same transaction as the turns it extracts, so a job exists for
-- every stored turn that waits for extraction; the queue only carries the job id.  user_id is the
-- user as the tenant knows it; (tenant, id) is what a tenant-bound store may read.
CREATE TABLE IF NOT EXISTS jobs (
  id           text COLLATE "C" NOT NULL PRIMARY KEY,
  tenant       text NOT NULL,
  user_id      text NOT NULL,
  kind         text NOT NULL,            -- add | end_session
  session_id   text,
  status       text NOT NULL,            -- queued | running | done | failed
  payload      text NOT NULL DEFAULT '{}',
  result       text,                     -- JSON of the AddResult / SessionEnd
  error        text,
  attempts     bigint NOT NULL DEFAULT 0,
  worker       text,
  lease_until  bigint,                  -- a running job whose lease passed is redelivered
  created_at   bigint NOT NULL,
  sent_at      bigint,                  -- handed to the queue (NULL: not yet; the sweeper sends it)
  started_at   bigint,
  finished_at  bigint,
  updated_at   bigint NOT NULL
);
-- user keys already carry the tenant
CREATE INDEX IF NOT EXISTS jobs_by_user ON jobs (user_id, created_at);
CREATE INDEX IF NOT EXISTS jobs_by_tenant ON jobs (tenant, created_at);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status, lease_until);

-- An API key is shown once; only its sha256 is kept.  prefix is the public half (its id).
CREATE TABLE IF NOT EXISTS api_keys (
  prefix      text COLLATE "C" NOT NULL PRIMARY KEY,
  tenant      text NOT NULL,
  hash        text NOT NULL,
  name        text NOT NULL DEFAULT '',
  created_at  bigint NOT NULL,
  revoked_at  bigint
);
CREATE INDEX IF NOT EXISTS api_keys_by_tenant ON api_keys (tenant);
