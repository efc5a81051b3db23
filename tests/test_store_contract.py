"""The store contract suite (tests/contract.py), run against every store: SQLite, the machine's
PostgreSQL (no pgvector) and a bundled PostgreSQL + pgvector — see tests/pg_servers.py."""

from contract import *  # noqa: F401,F403 - the parametrised contract tests
