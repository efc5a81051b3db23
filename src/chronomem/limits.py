"""The input limits every store enforces alike, checked before anything reaches a driver.

SQLite would store almost anything and PostgreSQL refuses some of it (NUL characters,
text that is not valid UTF-8, index rows over ~2.7 kB), so without one set of limits a
memory written to one store could not always be copied to the other.  The validation
layer (:mod:`chronomem.validation`) checks every caller-supplied string against these
before a store sees it; the REST server also refuses request bodies over
:data:`MAX_BODY_BYTES` (an import's over :data:`MAX_IMPORT_BYTES`) with 413.

Lengths are in characters (Python ``len``); names also have a limit in bytes of UTF-8, which
PostgreSQL's index rows count (relations are ASCII: the registry keeps ``[0-9a-z_]``).  Every string must also be encodable as
UTF-8 (no lone surrogates such as ``"\\ud800"``) and free of NUL characters.
"""

from __future__ import annotations

#: ids: ``user_id``, ``session_id``, ``agent_id``, message ids, fact ids, ``source_ids`` items.
MAX_ID_CHARS = 256
#: names: entity names (subject, object, aliases), relations, entity types, speakers.
#: Names are primary-key parts on PostgreSQL, whose B-tree rows must stay under ~2.7 kB.
MAX_NAME_CHARS = 500
#: ... and at most this many bytes of UTF-8, as given and as matched (case-folded, NFKC: "ﷺ" is 18
#: characters so): an index row holds the user's key (up to ~1.1 kB of a tenant and a 256-character id of
#: 4-byte characters) beside it.
MAX_NAME_BYTES = 1200
#: free text: a message's text, a fact's ``text``.
MAX_TEXT_CHARS = 100_000
#: the other statements' words a fact keeps (``Fact.other_words``); the oldest go first.
MAX_OTHER_WORDS = 8
#: the later starts of its other statements a fact keeps (``Fact.later_starts``); beyond it, the two
#: closest are kept as one, at the later start.
MAX_LATER_STARTS = 64
#: a search query or a question (every surface: Python, REST, CLI, MCP).
MAX_QUERY_CHARS = 4000
#: the largest REST request body, in bytes (413 above it).
MAX_BODY_BYTES = 16 * 1024 * 1024
#: the largest REST import (``POST /v1/users/{u}/import``, an export), in bytes: it is read to a
#: temporary file as it arrives and imported a batch of rows at a time
MAX_IMPORT_BYTES = 1024 * 1024 * 1024

__all__ = ["MAX_BODY_BYTES", "MAX_ID_CHARS", "MAX_IMPORT_BYTES", "MAX_NAME_BYTES", "MAX_NAME_CHARS",
           "MAX_LATER_STARTS", "MAX_OTHER_WORDS", "MAX_QUERY_CHARS", "MAX_TEXT_CHARS"]
