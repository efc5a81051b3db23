-- What forgetting needs to undo the effects of a statement said about a fact already stored, and the
-- speaker's clock.
--
-- facts.confirmations: every statement that set a fact's confidence, in the order they were made, as a
-- JSON list of [confidence, [message ids]] pairs.  A fact said again is reinforced (chronomem.temporal:
-- its confidence is raised); forgetting the turns of one of those statements must lower it again, to
-- what the statements that remain would have given (chronomem.forgetting).  NULL until a fact is
-- confirmed a second time (its confidence is then the one statement's).
--
-- facts.started_by: which turns gave a stint known only by its end ("I left Acme in June 2020") its
-- start ("I joined Acme in 2018"), a JSON list of message ids; forgetting them makes the start unknown
-- again.  NULL when the fact's start came with it.
--
-- messages.utc_offset: the UTC offset, in minutes, of the clock a turn's time was given on ("2024-05-01
-- 20:00-04:00" is -240), so its time words ("yesterday", "this year") are read in its speaker's day
-- (chronomem.timeexpr); NULL for UTC or a time given without an offset.
--
-- All three are NULL on every row written before this version.
ALTER TABLE facts ADD COLUMN confirmations TEXT;
ALTER TABLE facts ADD COLUMN started_by TEXT;
ALTER TABLE messages ADD COLUMN utc_offset INTEGER;
