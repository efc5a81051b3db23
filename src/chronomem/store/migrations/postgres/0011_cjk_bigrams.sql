-- Chinese, Japanese and Korean text is indexed as overlapping pairs of characters, as SQLite's is (its
-- migration 0016; chronomem.cjk.cjk_bigrams): the parser kept a whole run of such characters as one word
-- (a sentence of Japanese was one), so no question written in them found a turn or a fact.  This file is
-- ASCII, as 0010 is: a LATIN1 database takes it.
-- chronomem_fts_text() keeps its folding (0010, now chronomem_fts_fold, copied from the installed body) and
-- then applies chronomem_cjk_bigrams(), the same two regular expressions as the Python function: a space
-- between such a run and the word it touches, and each character inside a run written twice, "AB BC CD".
-- A text without such characters is returned as it is, so every other row's words stay as they were; the
-- rows that hold some are written again (an UPDATE computes the generated columns anew).
DO $do$
BEGIN
  EXECUTE format('CREATE OR REPLACE FUNCTION chronomem_fts_fold(t text) RETURNS text '
                 'LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS %L',
                 (SELECT prosrc FROM pg_proc WHERE proname = 'chronomem_fts_text'
                  AND pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())));
  IF getdatabaseencoding() = 'UTF8' THEN
    CREATE OR REPLACE FUNCTION chronomem_cjk_bigrams(t text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN
      IF (t COLLATE "C") !~ E'[\\u3005-\\u3007\\u3041-\\u3096\\u309D-\\u309F\\u30A1-\\u30FA\\u30FC-\\u30FF'
                           '\\u31F0-\\u31FF\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uAC00-\\uD7A3\\uF900-\\uFAFF'
                           '\\uFF66-\\uFF9F\\U00020000-\\U0002B81F]' THEN
        RETURN t;
      END IF;
      RETURN regexp_replace(regexp_replace(t COLLATE "C",
        E'([^ \\u3005-\\u3007\\u3041-\\u3096\\u309D-\\u309F\\u30A1-\\u30FA\\u30FC-\\u30FF\\u31F0-\\u31FF'
        '\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uAC00-\\uD7A3\\uF900-\\uFAFF\\uFF66-\\uFF9F\\U00020000-\\U0002B81F])'
        '(?=[\\u3005-\\u3007\\u3041-\\u3096\\u309D-\\u309F\\u30A1-\\u30FA\\u30FC-\\u30FF\\u31F0-\\u31FF'
        '\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uAC00-\\uD7A3\\uF900-\\uFAFF\\uFF66-\\uFF9F\\U00020000-\\U0002B81F])'
        '|([\\u3005-\\u3007\\u3041-\\u3096\\u309D-\\u309F\\u30A1-\\u30FA\\u30FC-\\u30FF\\u31F0-\\u31FF'
        '\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uAC00-\\uD7A3\\uF900-\\uFAFF\\uFF66-\\uFF9F\\U00020000-\\U0002B81F])'
        '(?=[^ \\u3005-\\u3007\\u3041-\\u3096\\u309D-\\u309F\\u30A1-\\u30FA\\u30FC-\\u30FF\\u31F0-\\u31FF'
        '\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uAC00-\\uD7A3\\uF900-\\uFAFF\\uFF66-\\uFF9F\\U00020000-\\U0002B81F])',
        E'\\1\\2 ', 'g'),
        E'(?<=[\\u3005-\\u3007\\u3041-\\u3096\\u309D-\\u309F\\u30A1-\\u30FA\\u30FC-\\u30FF\\u31F0-\\u31FF'
        '\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uAC00-\\uD7A3\\uF900-\\uFAFF\\uFF66-\\uFF9F\\U00020000-\\U0002B81F])'
        '([\\u3005-\\u3007\\u3041-\\u3096\\u309D-\\u309F\\u30A1-\\u30FA\\u30FC-\\u30FF\\u31F0-\\u31FF'
        '\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uAC00-\\uD7A3\\uF900-\\uFAFF\\uFF66-\\uFF9F\\U00020000-\\U0002B81F])'
        '(?=[\\u3005-\\u3007\\u3041-\\u3096\\u309D-\\u309F\\u30A1-\\u30FA\\u30FC-\\u30FF\\u31F0-\\u31FF'
        '\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uAC00-\\uD7A3\\uF900-\\uFAFF\\uFF66-\\uFF9F\\U00020000-\\U0002B81F])',
        E'\\1 \\1', 'g');
    END
    $fn$;
  ELSE  -- a database that cannot hold these characters (0010) has no runs of them
    CREATE OR REPLACE FUNCTION chronomem_cjk_bigrams(t text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$ BEGIN RETURN t; END $fn$;
  END IF;
END
$do$;

-- the same function (the generated columns depend on it), its body now the folding, then the pairs
CREATE OR REPLACE FUNCTION chronomem_fts_text(t text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
BEGIN RETURN chronomem_cjk_bigrams(chronomem_fts_fold(t)); END
$fn$;

UPDATE facts SET text = text WHERE chronomem_cjk_bigrams(subject || ' ' || object || ' ' || text)
  <> subject || ' ' || object || ' ' || text;
UPDATE messages SET text = text WHERE chronomem_cjk_bigrams(speaker || ' ' || text || ' ' || context)
  <> speaker || ' ' || text || ' ' || context;
