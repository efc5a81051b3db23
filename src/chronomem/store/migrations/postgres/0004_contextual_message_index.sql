-- Contextual full-text index of turns (see the SQLite migration 0007 for why): each turn is also
-- indexed with the turn before it in its session.  `context` is index data, not exported, and
-- recomputed whenever turns are stored or imported (SQLStore.add_messages / load_user).
ALTER TABLE messages ADD COLUMN context text NOT NULL DEFAULT '';
UPDATE messages m SET context = COALESCE((
  SELECT p.speaker || ': ' || p.text FROM messages p
  WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.seq < m.seq
  ORDER BY p.seq DESC LIMIT 1), '');
DROP INDEX messages_fts;
ALTER TABLE messages DROP COLUMN tsv;
-- the turn's own words weigh A, its predecessor's B: ts_rank, which does not normalise by length,
-- then ranks the turn that says it above the reply that follows it
ALTER TABLE messages ADD COLUMN tsv tsvector GENERATED ALWAYS AS
  (setweight(to_tsvector('english'::regconfig, speaker || ' ' || text), 'A')
   || setweight(to_tsvector('english'::regconfig, context), 'B')) STORED;
CREATE INDEX messages_fts ON messages USING gin (tsv);
