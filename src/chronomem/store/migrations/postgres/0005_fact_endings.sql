-- Which turns ended a fact in place.  An explicit ending ("we had to rehome Pixel") closes the
-- open fact it matches instead of adding one (chronomem.temporal, rule 1); forgetting the turns
-- that said it must reopen the fact, as if the ending had never been said.  A JSON list of
-- message ids; NULL when no statement ended the fact (every fact written before this version).
ALTER TABLE facts ADD COLUMN ended_by TEXT;
