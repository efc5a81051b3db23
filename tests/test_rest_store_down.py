"""A keyless ``chronomem serve`` whose store fails: the 503 the README documents ("A store failure is a 503
that names no database"), also when the failure comes from a middleware — LoopbackHostsOnly asks the store
whether keys exist before any route, outside the app's exception handlers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from chronomem import Memory
from chronomem.errors import StoreError
from chronomem.server import create_app

SECRET = "postgresql://admin:s3cret@db.internal/prod"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHRONOMEM_API_KEY", raising=False)
    monkeypatch.delenv("CHRONOMEM_QUEUE_URL", raising=False)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", llm=False, embedder=False) as m:
        yield m


def _store_down(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every store read fails as a dropped connection does, in words that name the database."""
    def fail(*_: object, **__: object) -> None:
        raise StoreError(f"PostgreSQL read failed on {SECRET}: terminating connection due to administrator command")

    raw = getattr(mem.store, "inner", mem.store)
    for name in ("api_keys", "api_key", "history", "facts"):
        if hasattr(raw, name):
            monkeypatch.setattr(raw, name, fail)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1:8765", "evil.example"])
def test_keyless_store_failure_in_the_host_check_is_a_503(mem: Memory, monkeypatch: pytest.MonkeyPatch,
                                                          host: str) -> None:
    app = create_app(mem, loopback_hosts_while_open=True)  # as `chronomem serve` builds it
    _store_down(mem, monkeypatch)
    with TestClient(app, raise_server_exceptions=False) as client:
        for path in ("/health", "/v1/users/u1/facts"):
            r = client.get(path, headers={"host": host})
            assert r.status_code == 503, (path, r.status_code, r.text)
            assert r.json() == {"error": "StoreError", "field": None,
                                "detail": "the store is unavailable or failed; the server log has the cause"}
            assert "s3cret" not in r.text and "db.internal" not in r.text


def test_keyed_store_failure_is_the_same_503(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(mem, api_key="k" * 32, loopback_hosts_while_open=True)
    _store_down(mem, monkeypatch)
    with TestClient(app, raise_server_exceptions=False) as client:
        r = client.get("/v1/users/u1/facts", headers={"authorization": "Bearer " + "k" * 32})
        assert r.status_code == 503 and r.json()["error"] == "StoreError" and "s3cret" not in r.text
