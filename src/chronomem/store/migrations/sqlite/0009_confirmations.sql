-- facts.confirmations: every statement that set a fact's confidence, in the order they were made, as a
-- JSON list of [confidence, [message ids]] pairs.  A fact said again is reinforced (chronomem.temporal:
-- its confidence is raised); forgetting the turns of one of those statements must lower it again, to
-- what the statements that remain would have given (chronomem.forgetting).
--
-- NULL until a fact is confirmed a second time (its confidence is then the one statement's), and on
-- every row written before this version.
ALTER TABLE facts ADD COLUMN confirmations TEXT;
