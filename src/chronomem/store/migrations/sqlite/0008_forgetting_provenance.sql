-- What forgetting needs to undo an effect whose cause it deletes (chronomem.forgetting).
--
-- facts.ended_by: which turns ended a fact in place.  An explicit ending ("we had to rehome Pixel")
-- closes the open fact it matches instead of adding one (chronomem.temporal, rule 1); forgetting the
-- turns that said it must reopen the fact, as if the ending had never been said.
--
-- facts.text_from: which turns gave a fact stored without words (add_facts) its text when they said it
-- again; forgetting them takes the words back.
--
-- entity_names.learned_from: which turns taught an alias.  Extraction joins a new spelling to a known
-- entity ("NYC" to "New York City"); forgetting every turn that used the spelling must drop it.
--
-- All three are JSON lists of message ids; NULL when nothing of the kind happened (every row written
-- before this version, canonical names, and aliases given by hand, which forgetting keeps).
ALTER TABLE facts ADD COLUMN ended_by TEXT;
ALTER TABLE facts ADD COLUMN text_from TEXT;
ALTER TABLE entity_names ADD COLUMN learned_from TEXT;
