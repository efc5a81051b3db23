-- facts.later_starts, facts.later_ends: the statements of a fact said again with a later date than its own,
-- each a JSON list of [date, recorded, [message ids]] with times in microseconds since the epoch
-- (chronomem.model.LaterDate, chronomem.temporal).  They were folded into the fact with nothing but their
-- turns and confidence, so the order statements arrived in changed the timeline:
--   later_starts: "Maya lives in Lisbon" said in 2021 of a fact held since 2017; a value learned later to
--     hold between the two ("Porto from 2018") closed the fact for good and the return to Lisbon was lost.
--     The update rules now split the fact there (chronomem.temporal.split_later_starts).
--   later_ends: "the cat died in 2022" said of a stint that ended in 2018; a start learned later between
--     the two ("a cat again from 2020") stayed open.  It now takes that end.
-- NULL when there are none, and on every row written before this version (those dates are not known).
ALTER TABLE facts ADD COLUMN IF NOT EXISTS later_starts TEXT;
ALTER TABLE facts ADD COLUMN IF NOT EXISTS later_ends TEXT;
