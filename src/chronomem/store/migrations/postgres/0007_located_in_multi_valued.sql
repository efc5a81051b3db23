-- located_in became multi-valued (a place is in Germany and in Europe at once).  Before, a second
-- container closed the first: "Berlin located_in Europe" ended "Berlin located_in Germany" (or, said
-- with the same start, superseded it).  Such closures are undone here: a located_in fact closed by
-- another located_in fact of the same subject with a different object gets its stated end back
-- (usually none) and no closer.  Endings that were said (closed_by is NULL) and versions a
-- correction replaced (confidence 0) stay as they are.  Running it twice changes nothing.
UPDATE facts SET valid_to = stated_to, closed_by = NULL
WHERE relation = 'located_in' AND confidence > 0 AND closed_by IS NOT NULL
  AND EXISTS (SELECT 1 FROM facts AS closer
              WHERE closer.user_id = facts.user_id AND closer.id = facts.closed_by
                AND closer.relation = 'located_in' AND closer.subject_id = facts.subject_id
                AND closer.object_id <> facts.object_id);
