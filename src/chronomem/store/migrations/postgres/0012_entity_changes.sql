-- Each user's changes to the spellings of their entities, logged for the fuzzy entity resolver
-- (chronomem.extract.entities): it keeps a user's spellings indexed in memory between writes and reads here
-- what changed since, in this process or any other.  Before, every write that named a new entity read all
-- of the user's entities and aliases (96 ms at 10,000 entities, 177 ms at 20,000).  The same log as SQLite's
-- (its migration 0017): a row per change; seq counts the user's changes; tag is drawn at random, so a change
-- rolled back and another made in its place share a seq, never a tag; entity_id is the entity that gained a
-- spelling, NULL for a change a reader cannot add up (a spelling deleted or rewritten, an entity renamed,
-- merged or deleted), which drops the rows before it.  At least the last 512 changes of a user are kept.
-- Writers of a user hold its advisory lock, so the next seq is read without a race.
CREATE TABLE IF NOT EXISTS entity_changes (
  user_id   TEXT NOT NULL,
  seq       BIGINT NOT NULL,
  tag       BIGINT NOT NULL,
  entity_id TEXT,
  PRIMARY KEY (user_id, seq)
);

-- the function reads the log in its own schema, whatever the writer's search_path
CREATE OR REPLACE FUNCTION chronomem_entity_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$
DECLARE
  who text;
  entity text;  -- NULL: a row deleted or rewritten
  next bigint;
BEGIN
  IF TG_OP = 'INSERT' THEN
    who := NEW.user_id;
    IF TG_TABLE_NAME = 'entities' THEN
      entity := NEW.id;
    ELSE
      entity := NEW.entity_id;
    END IF;
  ELSE  -- a row rewritten counts for its old user, as if deleted (and below for its new one)
    who := OLD.user_id;
  END IF;
  SELECT coalesce(max(seq), 0) + 1 INTO next FROM entity_changes WHERE user_id = who;
  INSERT INTO entity_changes (user_id, seq, tag, entity_id) VALUES (who, next, (random() * 9.2e18)::bigint, entity);
  IF entity IS NULL THEN
    DELETE FROM entity_changes WHERE user_id = who AND seq < next;
  ELSIF next % 64 = 0 THEN  -- pruned now and then: between 512 and 575 rows a user
    DELETE FROM entity_changes WHERE user_id = who AND seq <= next - 512;
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.user_id IS DISTINCT FROM OLD.user_id THEN
    SELECT coalesce(max(seq), 0) + 1 INTO next FROM entity_changes WHERE user_id = NEW.user_id;
    INSERT INTO entity_changes (user_id, seq, tag, entity_id)
      VALUES (NEW.user_id, next, (random() * 9.2e18)::bigint, NULL);
    DELETE FROM entity_changes WHERE user_id = NEW.user_id AND seq < next;
  END IF;
  RETURN NULL;
END
$fn$;

DROP TRIGGER IF EXISTS entities_changed ON entities;
CREATE TRIGGER entities_changed AFTER INSERT OR DELETE ON entities
  FOR EACH ROW EXECUTE FUNCTION chronomem_entity_changed();
DROP TRIGGER IF EXISTS entities_rewritten ON entities;
CREATE TRIGGER entities_rewritten AFTER UPDATE OF user_id, id, name ON entities
  FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.id IS DISTINCT FROM NEW.id
                     OR OLD.name IS DISTINCT FROM NEW.name)
  EXECUTE FUNCTION chronomem_entity_changed();
DROP TRIGGER IF EXISTS entity_names_changed ON entity_names;
CREATE TRIGGER entity_names_changed AFTER INSERT OR DELETE ON entity_names
  FOR EACH ROW EXECUTE FUNCTION chronomem_entity_changed();
DROP TRIGGER IF EXISTS entity_names_rewritten ON entity_names;
CREATE TRIGGER entity_names_rewritten AFTER UPDATE OF user_id, norm, entity_id, alias ON entity_names
  FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.norm IS DISTINCT FROM NEW.norm
                     OR OLD.entity_id IS DISTINCT FROM NEW.entity_id OR OLD.alias IS DISTINCT FROM NEW.alias)
  EXECUTE FUNCTION chronomem_entity_changed();
