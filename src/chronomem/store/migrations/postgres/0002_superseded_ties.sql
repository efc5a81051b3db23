-- The tie rule (chronomem.temporal): a fact replaced by a later statement with the same start
-- used to be closed at its own start (valid_to = valid_from, an empty interval add_facts
-- refuses, so such exports could not be imported).  It is now "superseded": closed_by names the
-- winner and valid_to is NULL; queries at an instant never return it.
UPDATE facts SET valid_to = NULL WHERE valid_to IS NOT NULL AND valid_to = valid_from AND closed_by IS NOT NULL;
