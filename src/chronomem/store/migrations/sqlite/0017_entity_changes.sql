-- Each user's changes to the spellings of their entities, logged for the fuzzy entity resolver
-- (chronomem.extract.entities): it keeps a user's spellings indexed in memory between writes and reads here
-- what changed since, in this process or any other.  Before, every write that named a new entity read all
-- of the user's entities and aliases (90 ms at 10,000 entities, 360 ms at 40,000).
-- A row per change: seq counts the user's changes; tag is drawn at random, so a change rolled back and
-- another made in its place share a seq, never a tag; entity_id is the entity that gained a spelling (its
-- own row or a name), NULL for a change a reader cannot add up (a spelling deleted or rewritten, an entity
-- renamed, merged or deleted): the rows before it are dropped, so whoever read before reads all again.
-- Only ids and numbers: a forgotten name leaves nothing here.  The last 512 changes of a user are kept.
CREATE TABLE IF NOT EXISTS entity_changes (
  user_id   TEXT NOT NULL,
  seq       INTEGER NOT NULL,
  tag       INTEGER NOT NULL,
  entity_id TEXT,
  PRIMARY KEY (user_id, seq)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS entities_added AFTER INSERT ON entities BEGIN
  INSERT INTO entity_changes (user_id, seq, tag, entity_id)
    SELECT NEW.user_id, coalesce(max(seq), 0) + 1, random(), NEW.id FROM entity_changes WHERE user_id = NEW.user_id;
  DELETE FROM entity_changes WHERE user_id = NEW.user_id
    AND seq <= (SELECT max(seq) FROM entity_changes WHERE user_id = NEW.user_id) - 512;
END;

CREATE TRIGGER IF NOT EXISTS entity_names_added AFTER INSERT ON entity_names BEGIN
  INSERT INTO entity_changes (user_id, seq, tag, entity_id)
    SELECT NEW.user_id, coalesce(max(seq), 0) + 1, random(), NEW.entity_id FROM entity_changes
    WHERE user_id = NEW.user_id;
  DELETE FROM entity_changes WHERE user_id = NEW.user_id
    AND seq <= (SELECT max(seq) FROM entity_changes WHERE user_id = NEW.user_id) - 512;
END;

CREATE TRIGGER IF NOT EXISTS entities_removed AFTER DELETE ON entities BEGIN
  INSERT INTO entity_changes (user_id, seq, tag, entity_id)
    SELECT OLD.user_id, coalesce(max(seq), 0) + 1, random(), NULL FROM entity_changes WHERE user_id = OLD.user_id;
  DELETE FROM entity_changes WHERE user_id = OLD.user_id
    AND seq < (SELECT max(seq) FROM entity_changes WHERE user_id = OLD.user_id);
END;

CREATE TRIGGER IF NOT EXISTS entity_names_removed AFTER DELETE ON entity_names BEGIN
  INSERT INTO entity_changes (user_id, seq, tag, entity_id)
    SELECT OLD.user_id, coalesce(max(seq), 0) + 1, random(), NULL FROM entity_changes WHERE user_id = OLD.user_id;
  DELETE FROM entity_changes WHERE user_id = OLD.user_id
    AND seq < (SELECT max(seq) FROM entity_changes WHERE user_id = OLD.user_id);
END;

-- a row rewritten counts for its old user, as if deleted, and for its new one (the same user, always)
CREATE TRIGGER IF NOT EXISTS entities_rewritten AFTER UPDATE OF user_id, id, name ON entities
WHEN OLD.user_id IS NOT NEW.user_id OR OLD.id IS NOT NEW.id OR OLD.name IS NOT NEW.name BEGIN
  INSERT INTO entity_changes (user_id, seq, tag, entity_id)
    SELECT OLD.user_id, coalesce(max(seq), 0) + 1, random(), NULL FROM entity_changes WHERE user_id = OLD.user_id;
  DELETE FROM entity_changes WHERE user_id = OLD.user_id
    AND seq < (SELECT max(seq) FROM entity_changes WHERE user_id = OLD.user_id);
  INSERT INTO entity_changes (user_id, seq, tag, entity_id)
    SELECT NEW.user_id, coalesce(max(seq), 0) + 1, random(), NULL FROM entity_changes WHERE user_id = NEW.user_id;
  DELETE FROM entity_changes WHERE user_id = NEW.user_id
    AND seq < (SELECT max(seq) FROM entity_changes WHERE user_id = NEW.user_id);
END;

CREATE TRIGGER IF NOT EXISTS entity_names_rewritten AFTER UPDATE OF user_id, norm, entity_id, alias ON entity_names
WHEN OLD.user_id IS NOT NEW.user_id OR OLD.norm IS NOT NEW.norm OR OLD.entity_id IS NOT NEW.entity_id
  OR OLD.alias IS NOT NEW.alias BEGIN
  INSERT INTO entity_changes (user_id, seq, tag, entity_id)
    SELECT OLD.user_id, coalesce(max(seq), 0) + 1, random(), NULL FROM entity_changes WHERE user_id = OLD.user_id;
  DELETE FROM entity_changes WHERE user_id = OLD.user_id
    AND seq < (SELECT max(seq) FROM entity_changes WHERE user_id = OLD.user_id);
  INSERT INTO entity_changes (user_id, seq, tag, entity_id)
    SELECT NEW.user_id, coalesce(max(seq), 0) + 1, random(), NULL FROM entity_changes WHERE user_id = NEW.user_id;
  DELETE FROM entity_changes WHERE user_id = NEW.user_id
    AND seq < (SELECT max(seq) FROM entity_changes WHERE user_id = NEW.user_id);
END;
