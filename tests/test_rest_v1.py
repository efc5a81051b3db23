"""REST v1 as a deployment runs it: PostgreSQL, RabbitMQ, a `chronomem worker` loop, API keys.

Two tenants each have a user named ``u1``.  Their keys post messages (202 + job), wait for
the jobs, read facts, end a session, read the summary, correct a fact, page through lists;
then every cross-tenant read, write and delete is tried and must leak nothing.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeModelServer
from fastapi.testclient import TestClient
from typer.testing import CliRunner
from test_worker_kill import AMQP_URL, queue_env  # noqa: F401 - the RabbitMQ queue fixture

from chronomem import Memory
from chronomem.cli import app as cli_app
from chronomem.errors import ConfigError
from chronomem.jobs.queue import BrokerQueue
from chronomem.jobs.worker import run_worker
from chronomem.server import create_app
from chronomem.server.auth import check_exposure


pytestmark = pytest.mark.usefixtures("local_service_env")  # the model key; no queue, Redis or server key


def keys_create(db: str, tenant: str) -> str:
    r = CliRunner().invoke(cli_app, ["keys", "create", "--tenant", tenant, "--db", db], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    key = r.stdout.strip().splitlines()[0]
    assert key.startswith("cmk_")
    return key


@pytest.fixture
def deployment(url_factory: Callable[[str], str], queue_env: str,  # noqa: F811
               llm: FakeModelServer) -> Iterator[tuple[TestClient, dict[str, dict[str, str]], str]]:
    db = url_factory("postgres")
    keys = {t: {"Authorization": f"Bearer {keys_create(db, t)}"} for t in ("acme", "beta")}
    stop = threading.Event()
    worker = threading.Thread(target=run_worker, args=(db, AMQP_URL),
                              kwargs={"threads": 2, "stop": stop, "llm": llm.spec, "embedder": False,
                                      "lease_s": 5}, daemon=True)
    worker.start()
    queue = BrokerQueue(AMQP_URL)
    mem = Memory(db, llm=llm.spec, embedder=False, queue=queue)
    try:
        with TestClient(create_app(mem)) as client:
            yield client, keys, db
    finally:
        queue.close()
        stop.set()
        worker.join(30)


def post_turns(c: TestClient, key: dict[str, str], user: str, session: str, *texts: str,
               prefix: str = "m") -> dict[str, Any]:
    msgs = [{"id": f"{prefix}{i}", "speaker": "Maya", "text": t, "timestamp": "2024-03-01T10:00:00Z"}
            for i, t in enumerate(texts)]
    r = c.post(f"/v1/users/{user}/messages", headers=key, json={"session_id": session, "messages": msgs})
    assert r.status_code == 202, r.text
    return r.json()


def wait_job(c: TestClient, key: dict[str, str], job_id: str) -> dict[str, Any]:
    for _ in range(600):
        r = c.get(f"/v1/jobs/{job_id}", headers=key)
        assert r.status_code == 200, r.text
        if r.json()["status"] in ("done", "failed"):
            return r.json()
        threading.Event().wait(0.1)
    raise AssertionError(f"job {job_id} did not finish")


def test_two_tenants_each_with_u1_never_see_each_other(deployment) -> None:
    c, keys, _ = deployment
    acme, beta = keys["acme"], keys["beta"]

    # ingestion: 202 + job → done → facts
    ja = post_turns(c, acme, "u1", "s1", "I live in Porto.", "I work at Acme.", "I like tea.")
    jb = post_turns(c, beta, "u1", "s1", "I live in Oslo.", prefix="b")
    assert ja["status"] == "queued" and ja["user_id"] == "u1" and ja["kind"] == "add"
    done_a, done_b = wait_job(c, acme, ja["id"]), wait_job(c, beta, jb["id"])
    assert done_a["status"] == "done" and len(done_a["result"]["added"]) == 3, done_a
    assert done_b["status"] == "done" and len(done_b["result"]["added"]) == 1, done_b
    facts_a = c.get("/v1/users/u1/facts", headers=acme).json()["items"]
    facts_b = c.get("/v1/users/u1/facts", headers=beta).json()["items"]
    assert sorted(f["object"] for f in facts_a) == ["Acme", "Porto", "tea"]
    assert [f["object"] for f in facts_b] == ["Oslo"]

    # wait=true blocks until the job finished
    r = c.post("/v1/users/u1/messages", headers=acme, params={"wait": "true"}, json={
        "session_id": "s1", "messages": [{"id": "m9", "speaker": "Maya", "text": "I work at Initech.",
                                          "timestamp": "2024-03-01T11:00:00Z"}]})
    assert r.status_code == 200 and r.json()["status"] == "done" and r.json()["result"]["added"][0]["object"] == "Initech"

    # end the session → summary
    r = c.post("/v1/users/u1/sessions/s1/end", headers=acme)
    assert r.status_code == 202
    ended = wait_job(c, acme, r.json()["id"])
    assert ended["status"] == "done" and ended["kind"] == "end_session", ended
    summary = c.get("/v1/users/u1/summary", headers=acme).json()
    assert summary["summary"] and summary["summary"] == ended["result"]["summary"]
    assert c.get("/v1/users/u1/summary", headers=beta).json()["summary"] == ""  # beta's u1 ended nothing
    assert c.get("/v1/users/u1/summary", headers=acme, params={"as_of": "2000-01-01T00:00:00Z"}).json()["summary"] == ""
    ctx = c.post("/v1/users/u1/context", headers=acme, json={
        "messages": [{"role": "user", "content": "hi again"}], "budget_tokens": 512}).json()
    assert ctx["messages"][0]["role"] == "system" and ctx["messages"][-1]["content"] == "hi again"

    # correct a fact: new version origin corrected, old kept in history, closed
    porto = next(f for f in facts_a if f["object"] == "Porto")
    r = c.patch(f"/v1/users/u1/facts/{porto['id']}", headers=acme, json={"object": "Lisbon"})
    assert r.status_code == 200, r.text
    new, old = r.json()["fact"], r.json()["corrected"]
    assert new["origin"] == "corrected" and new["object"] == "Lisbon" and old["closed_by"] == new["id"]
    assert r.json()["notes"] == []  # held as asked
    assert c.get(f"/v1/users/u1/facts/{new['id']}", headers=acme).json()["object"] == "Lisbon"
    now = [f["object"] for f in c.get("/v1/users/u1/facts", headers=acme).json()["items"]]
    assert "Lisbon" in now and "Porto" not in now
    hist = [(f["object"], f["origin"]) for f in c.get("/v1/users/u1/history", headers=acme).json()["items"]]
    assert ("Porto", "stated") in hist and ("Lisbon", "corrected") in hist

    # pagination: every page is disjoint, together they are the whole list
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = c.get("/v1/users/u1/history", headers=acme, params=params).json()
        seen += [f["id"] for f in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    full = [f["id"] for f in c.get("/v1/users/u1/history", headers=acme, params={"limit": 500}).json()["items"]]
    assert pages >= 3 and seen == full and len(set(seen)) == len(seen)
    msgs = c.get("/v1/users/u1/messages", headers=acme, params={"session_id": "s1", "limit": 3}).json()
    assert [m["id"] for m in msgs["items"]] == ["m0", "m1", "m2"] and msgs["next_cursor"]
    jobs = c.get("/v1/users/u1/jobs", headers=acme, params={"limit": 1}).json()
    assert len(jobs["items"]) == 1 and jobs["next_cursor"]
    assert c.get("/v1/users", headers=acme).json() == {"items": [{"user_id": "u1"}], "next_cursor": None}
    assert [s["id"] for s in c.get("/v1/users/u1/sessions", headers=acme).json()["items"]] == ["s1"]

    # cross-tenant: beta tries acme's objects by id; every attempt must fail or see only beta's own
    leaks = 0
    acme_ids = [f["id"] for f in c.get("/v1/users/u1/history", headers=acme, params={"limit": 500}).json()["items"]]
    for fid in acme_ids:
        leaks += c.get(f"/v1/users/u1/facts/{fid}", headers=beta).status_code != 404
        leaks += c.patch(f"/v1/users/u1/facts/{fid}", headers=beta, json={"object": "X"}).status_code != 404
        leaks += c.delete(f"/v1/users/u1/facts/{fid}", headers=beta).status_code != 404
    for job_id in (ja["id"], ended["id"]):
        leaks += c.get(f"/v1/jobs/{job_id}", headers=beta).status_code != 404
    assert c.delete("/v1/users/u1/sessions/s1", headers=beta).json()["messages_deleted"] == 1  # beta's own s1
    beta_view = [f["object"] for f in c.get("/v1/users/u1/history", headers=beta).json()["items"]]
    leaks += sum(o in beta_view for o in ("Porto", "Lisbon", "Acme", "tea", "Initech"))
    leaks += len([m for m in c.get("/v1/users/u1/messages", headers=beta).json()["items"] if m["id"].startswith("m")])
    leaks += any(j["id"] == ja["id"] for j in c.get("/v1/users/u1/jobs", headers=beta).json()["items"])
    # beta writes to "its" u1 and deletes "its" u1: acme's u1 is untouched
    post_turns(c, beta, "u1", "s1", "I live in Bergen.", prefix="b2")
    assert c.delete("/v1/users/u1", headers=beta).status_code == 200
    after = sorted(f["id"] for f in c.get("/v1/users/u1/history", headers=acme, params={"limit": 500}).json()["items"])
    leaks += after != sorted(acme_ids)
    leaks += len(c.get("/v1/users/u1/messages", headers=acme, params={"limit": 500}).json()["items"]) != 4
    assert leaks == 0

    # keys: missing, malformed, revoked → 401 with the error shape
    r = c.get("/v1/users", headers={"Authorization": "Bearer cmk_000000000000_" + "x" * 43})
    assert r.status_code == 401 and r.json()["error"] == "Unauthorized"
    assert c.get("/v1/users").status_code == 401


def test_keys_cli_lists_and_revokes(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    key = keys_create(db, "acme")
    runner = CliRunner()
    listed = runner.invoke(cli_app, ["keys", "list", "--db", db], catch_exceptions=False).stdout
    prefix = key.split("_")[1]
    assert prefix in listed and "acme" in listed and key not in listed  # the secret is never shown again
    with Memory(db, embedder=False) as mem:
        stored = mem.store.inner.api_key(prefix)  # type: ignore[attr-defined]
        assert stored is not None and stored.hash != key and key.split("_", 2)[2] not in stored.hash
    with TestClient(create_app(Memory(db, embedder=False))) as c:
        auth = {"Authorization": f"Bearer {key}"}
        assert c.get("/v1/users", headers=auth).status_code == 200
        r = runner.invoke(cli_app, ["keys", "revoke", prefix, "--db", db], catch_exceptions=False)
        assert r.exit_code == 0
        assert c.get("/v1/users", headers=auth).status_code == 401  # refused from the next request on
        assert c.get("/v1/users").status_code == 401  # revoking the last key did not open the service
        assert c.get("/health").json()["auth"] == "keys"
    with TestClient(create_app(Memory(db, embedder=False))) as c:  # nor does a restart with it revoked
        assert c.get("/v1/users").status_code == 401
    r = runner.invoke(cli_app, ["keys", "create", "--tenant", "bad tenant", "--db", db])
    assert r.exit_code != 0


def test_no_keys_means_loopback_only_and_health_hides_the_address(url_factory: Callable[[str], str]) -> None:
    db = url_factory("postgres")
    with_password = db.replace("postgres@", "postgres:hunter2@", 1)
    app = create_app(Memory(with_password, embedder=False))
    with TestClient(app) as c:
        body = c.get("/health").text
        assert "hunter2" not in body and "127.0.0.1" not in body and "postgresql" in body
        check_exposure("127.0.0.1", app.state.tenancy)
        check_exposure("::1", app.state.tenancy)
        for everywhere in ("0.0.0.0", ""):  # "" binds every interface too
            with pytest.raises(ConfigError, match="without API keys"):
                check_exposure(everywhere, app.state.tenancy)
        keys_create(db, "acme")
        check_exposure("0.0.0.0", app.state.tenancy)  # with a key, any address


def test_docs_are_served_without_a_cdn(tmp_path: Path) -> None:
    with TestClient(create_app(Memory(tmp_path / "d.db", embedder=False))) as c:
        for page in ("/docs", "/redoc"):
            html = c.get(page).text
            assert "cdn" not in html.lower() and "fonts.googleapis" not in html
            for asset in [s for s in html.split('"') if s.startswith("/docs-assets/")]:
                assert c.get(asset).status_code == 200
        spec = c.get("/openapi.json").json()
        ok = spec["paths"]["/v1/users/{user_id}/messages"]["post"]["responses"]
        assert "202" in ok and ok["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")


def test_errors_share_one_shape(tmp_path: Path) -> None:
    with TestClient(create_app(Memory(tmp_path / "e.db", embedder=False))) as c:
        for r in (c.get("/v1/users/u1/facts", params={"limit": 0}),
                  c.get("/v1/users/u1/facts", params={"cursor": "nope"}),
                  c.post("/v1/users/u1/messages", json={"messages": []}),
                  c.post("/v1/users/u1/messages", json={"messages": [{"speaker": "x"}]}),
                  c.get(f"/v1/jobs/{uuid.uuid4().hex}"), c.get("/v1/nowhere"),
                  c.patch("/v1/users/u1/facts/nope", json={"object": "x"})):
            assert r.status_code in (404, 422), r.text
            assert set(r.json()) == {"error", "detail", "field"} and r.json()["detail"]


def test_serve_refuses_a_public_address_without_keys(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli_app, ["serve", "--host", "0.0.0.0", "--db", str(tmp_path / "s.db")])
    assert r.exit_code != 0 and isinstance(r.exception, ConfigError) and "without API keys" in str(r.exception)


def test_a_page_turns_only_its_own_items_into_replies() -> None:
    from chronomem.server import pagination
    from chronomem.server.pagination import paged

    made: list[int] = []
    first = paged(list(range(10)), "n", lambda x: [x], (int,), None, 3, lambda x: made.append(x) or {"n": x})
    assert first["items"] == [{"n": 0}, {"n": 1}, {"n": 2}] and made == [0, 1, 2]
    last = paged(list(range(10)), "n", lambda x: [x], (int,), pagination.encode_after("n", [8]), 3,
                 lambda x: made.append(x) or {"n": x})
    assert last == {"items": [{"n": 9}], "next_cursor": None} and made == [0, 1, 2, 9]
