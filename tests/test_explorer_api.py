"""The explorer's endpoints over HTTP (no browser): settings, the neighbourhood graph with derived
edges, Rsum checkpoints by session, a fact's provenance, the answer's trace; keys and tenants
apply as on every /v1 route; the static pages are served with a same-origin-only policy."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from chronomem import Memory
from chronomem.server import create_app
from chronomem.server.ui import UI_DIR
from explorer_scenario import SUMMARY, TENANT, USER, ExplorerLLM, build, create_key


@pytest.fixture(params=["sqlite", "postgres"])
def client(request: pytest.FixtureRequest,
           url_factory: Callable[[str], str]) -> Iterator[tuple[TestClient, dict[str, str], str]]:  # noqa: F811
    db = url_factory(request.param)
    key = create_key(db)
    app = create_app(Memory(db, llm=ExplorerLLM(), embedder=False))
    build(app.state.tenancy.memory(TENANT))
    with TestClient(app) as c:
        yield c, {"Authorization": f"Bearer {key}"}, db


def edges(graph: dict[str, Any]) -> set[tuple[str, str, str, bool, str | None]]:
    return {(e["fact"]["subject"], e["fact"]["relation"], e["fact"]["object"], e["derived"], e["fact"]["rule"])
            for e in graph["edges"]}


def test_settings_name_the_tenant_and_threshold(client: tuple[TestClient, dict[str, str], str]) -> None:
    c, key, _ = client
    body = c.get("/v1/settings", headers=key).json()
    assert body["tenant"] == TENANT and body["theta_stable"] == 0.6


def test_graph_has_stored_and_derived_edges_at_a_moment(client: tuple[TestClient, dict[str, str], str]) -> None:
    c, key, _ = client
    now = c.get(f"/v1/users/{USER}/graph", params={"entity": "maya"}, headers=key).json()
    assert now["center"]["name"] == "Maya" and now["center"]["depth"] == 0
    assert edges(now) == {
        ("Maya", "lives_in", "Munich", False, None), ("Maya", "works_at", "Siemens", False, None),
        ("Rui", "sibling_of", "Maya", False, None), ("Maya", "hobby", "cello", False, None),
        ("Maya", "sibling_of", "Rui", True, "symmetry"),         # read from Maya's side
        ("Maya", "lives_in", "Germany", True, "containment"),    # Munich located_in Germany
    }
    derived = [e for e in now["edges"] if e["derived"]]
    assert all(e["fact"]["origin"] == "derived" and e["fact"]["support_ids"] for e in derived)
    assert {n["name"] for n in now["nodes"]} == {"Munich", "Siemens", "Rui", "cello", "Germany"}
    # in 2019 she lived in Berlin and worked at Zalando; the hedged plan is never an edge
    then = c.get(f"/v1/users/{USER}/graph", params={"entity": "Maya", "as_of": "2019-06-01T00:00:00Z"},
                 headers=key).json()
    assert then["as_of"] == "2019-06-01T00:00:00+00:00"  # times as every other surface writes them
    assert edges(then) == {("Maya", "lives_in", "Berlin", False, None), ("Maya", "works_at", "Zalando", False, None),
                           ("Rui", "sibling_of", "Maya", False, None), ("Maya", "sibling_of", "Rui", True, "symmetry")}
    two = c.get(f"/v1/users/{USER}/graph", params={"entity": "Rui", "depth": 2}, headers=key).json()
    assert ("Maya", "lives_in", "Munich", False, None) in edges(two)
    assert {n["name"]: n["depth"] for n in two["nodes"]}["Munich"] == 2


def test_graph_errors_name_what_is_wrong(client: tuple[TestClient, dict[str, str], str]) -> None:
    c, key, _ = client
    r = c.get(f"/v1/users/{USER}/graph", params={"entity": "Atlantis"}, headers=key)
    assert r.status_code == 404 and "Atlantis" in r.json()["detail"]
    r = c.get(f"/v1/users/{USER}/graph", params={"entity": "Maya", "depth": 3}, headers=key)
    assert r.status_code == 422 and r.json()["field"] == "depth"
    r = c.get(f"/v1/users/{USER}/graph", headers=key)
    assert r.status_code == 422 and r.json()["field"] == "entity"


def test_checkpoints_by_session(client: tuple[TestClient, dict[str, str], str]) -> None:
    c, key, _ = client
    page = c.get(f"/v1/users/{USER}/checkpoints", headers=key).json()
    assert [(cp["session_id"], cp["seq"], cp["memory"]) for cp in page["items"]] == [("s1", 1, SUMMARY)]
    assert page["items"][0]["created_at"].endswith("+00:00")
    assert c.get(f"/v1/users/{USER}/checkpoints", params={"session_id": "s9"}, headers=key).json()["items"] == []


def test_provenance_has_source_turns_versions_and_the_correction(
        client: tuple[TestClient, dict[str, str], str]) -> None:
    c, key, _ = client
    facts = c.get(f"/v1/users/{USER}/history", headers=key).json()["items"]
    cello = next(f for f in facts if f["object"] == "cello")
    prov = c.get(f"/v1/users/{USER}/facts/{cello['id']}/provenance", headers=key).json()
    assert [(m["speaker"], m["text"]) for m in prov["sources"]] == [("Maya", "I took up the cello last month.")]
    munich = next(f for f in facts if f["object"] == "Munich")
    fixed = c.patch(f"/v1/users/{USER}/facts/{munich['id']}", json={"object": "Augsburg"}, headers=key).json()
    prov = c.get(f"/v1/users/{USER}/facts/{munich['id']}/provenance", headers=key).json()
    assert [(v["object"], v["origin"]) for v in prov["versions"]] == [
        ("Berlin", "imported"), ("Munich", "imported"), ("Augsburg", "corrected")]
    assert prov["closed_by"]["id"] == fixed["fact"]["id"] and prov["fact"]["confidence"] == 0.0
    r = c.get(f"/v1/users/{USER}/facts/nope/provenance", headers=key)
    assert r.status_code == 404 and r.json()["error"] == "NotFoundError"


def test_the_versions_of_a_fact_of_many_values_are_its_own(tmp_path: Any) -> None:
    """The other things Maya likes are not versions of her liking tea (a hub of thousands made each
    provenance list them all); a correction is, even one that renames both ends."""
    mem = Memory(tmp_path / "v.db", llm=False, embedder=False)
    mem.add_facts([{"subject": "Maya", "relation": "likes", "object": o} for o in ("tea", "jazz", "chess")]
                  + [{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2019-01-01"},
                     {"subject": "Maya", "relation": "lives_in", "object": "Oslo", "valid_from": "2021-01-01"}],
                  user_id="u")
    by = {f.object: f for f in mem.history(user_id="u")}
    fixed = mem.correct(by["tea"].id, user_id="u", subject="Mia", object="green tea")  # both ends renamed
    with TestClient(create_app(mem, owns_memory=True)) as c:
        def versions(fact_id: str) -> list[tuple[str, str]]:
            prov = c.get(f"/v1/users/u/facts/{fact_id}/provenance").json()
            return [(v["subject"], v["object"]) for v in prov["versions"]]

        assert versions(by["tea"].id) == [("Maya", "tea"), ("Mia", "green tea")]
        assert versions(fixed.id) == [("Maya", "tea"), ("Mia", "green tea")]
        assert versions(by["jazz"].id) == [("Maya", "jazz")]
        assert versions(by["Oslo"].id) == [("Maya", "Porto"), ("Maya", "Oslo")]  # one value at a time: its slot


def test_answer_carries_its_search_trace(client: tuple[TestClient, dict[str, str], str]) -> None:
    c, key, _ = client
    body = c.post(f"/v1/users/{USER}/answer", json={"question": "Where does Maya live?", "method": "real"},
                  headers=key).json()
    assert body["text"] == "Munich"
    assert [r["name"] for r in body["trace"]["roots"]] == ["Maya"]
    assert body["trace"]["analysis"]["intents"] and body["trace"]["iterations"]


def test_keys_and_tenants_apply(client: tuple[TestClient, dict[str, str], str]) -> None:
    c, key, db = client
    for path in ("/v1/settings", f"/v1/users/{USER}/graph?entity=Maya", f"/v1/users/{USER}/checkpoints"):
        r = c.get(path)
        assert r.status_code == 401 and r.json()["error"] == "Unauthorized", path
    other = {"Authorization": f"Bearer {create_key(db, 'beta')}"}
    assert c.get("/v1/settings", headers=other).json()["tenant"] == "beta"
    r = c.get(f"/v1/users/{USER}/graph", params={"entity": "Maya"}, headers=other)
    assert r.status_code == 404  # beta's maya has no entities: nothing of acme's leaks
    assert c.get(f"/v1/users/{USER}/checkpoints", headers=other).json()["items"] == []


def test_ui_is_served_offline(client: tuple[TestClient, dict[str, str], str]) -> None:
    c, _, _ = client
    r = c.get("/ui", follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"] == "/ui/"
    page = c.get("/ui/")
    assert page.status_code == 200 and "chronomem explorer" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    assets = [p.relative_to(UI_DIR).as_posix() for p in UI_DIR.rglob("*") if p.is_file()]
    assert {"index.html", "app.css", "js/app.js", "js/timeline.js", "js/graph.js"} <= set(assets)
    for asset in assets:  # nothing fetched from elsewhere (the SVG namespace is a name, not a fetch)
        r = c.get(f"/ui/{asset}")
        text = r.text.replace("http://www.w3.org/2000/svg", "")
        assert r.status_code == 200 and "http://" not in text and "https://" not in text and "//" + "cdn" not in text, asset
    assert c.get("/ui/js/missing.js").status_code == 404
    assert "/ui" not in str(c.get("/openapi.json").json()["paths"])
