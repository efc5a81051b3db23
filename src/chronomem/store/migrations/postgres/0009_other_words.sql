-- facts.other_words: the words of a fact's other statements, each with the turns that said it, as a
-- JSON list of [[message ids], words] (chronomem.temporal.keep_words).  A fact said in two sessions kept
-- only the first statement's words; forgetting that session left it with none, though the other session
-- had said it.  NULL when the fact was said once, and on every row written before this version.
ALTER TABLE facts ADD COLUMN other_words TEXT;
