-- facts.start_guessed: 1 when a fact's start was not said but inferred from its slot (chronomem.temporal:
-- "I left Porto in 2015", then "I left Lisbon in 2018": Lisbon is taken to start when Porto ended).  A
-- start said later replaces the guess, and forgetting the fact it was inferred from infers it again.
-- NULL when the start was said, or is unknown.  NULL on every row written before this version, guesses
-- included: nothing tells them from said starts.
ALTER TABLE facts ADD COLUMN start_guessed INTEGER;
