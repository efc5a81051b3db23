"""The web explorer end to end: headless Debian Chromium (tests/explorer_browser.py) against a live
`chronomem serve` app over Maya's memory (tests/explorer_scenario.py), signed in with a tenant key.

Every page load is checked to stay on the server's origin (the explorer works offline) and to
raise no script error.  ``CHRONOMEM_SCREENSHOTS=docs`` writes the README's screenshots there.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from explorer_browser import VIEWPORT, chromium, live_server
from chronomem import Memory
from chronomem.server import create_app
from explorer_scenario import SUMMARY, TENANT, USER, ExplorerLLM, build, create_key


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, str]]:
    db = tmp_path / "explorer.db"
    key = create_key(db)
    app = create_app(Memory(db, llm=ExplorerLLM(), embedder=False))
    build(app.state.tenancy.memory(TENANT))
    with live_server(app) as url:
        yield url, key


@pytest.fixture
def page(browser: Any, site: tuple[str, str]) -> Iterator[Any]:
    url, _ = site
    context = browser.new_context(viewport=VIEWPORT)
    elsewhere: list[str] = []
    errors: list[str] = []

    def only_local(route: Any) -> None:
        if route.request.url.startswith(url) or route.request.url.startswith("data:"):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert elsewhere == [], f"the explorer tried to load from elsewhere: {elsewhere}"
    assert errors == [], f"script errors: {errors}"


def sign_in(page: Any, site: tuple[str, str], hash_: str = "") -> None:
    url, key = site
    page.goto(f"{url}/ui/{hash_}")
    page.wait_for_selector("#key-input:focus")  # the key field has focus on arrival
    page.keyboard.type(key)
    page.keyboard.press("Enter")
    page.wait_for_selector("#users a")


def open_timeline(page: Any, site: tuple[str, str]) -> None:
    sign_in(page, site, f"#/users/{USER}/timeline")
    page.wait_for_selector("#asof-facts[data-state=ready]")


def true_then(page: Any, relation: str) -> list[str]:
    page.wait_for_selector("#asof-facts[data-state=ready]")
    return page.eval_on_selector_all(f"#true-firm li[data-relation={relation}]", "els => els.map(e => e.dataset.object)")


def bar(page: Any, obj: str) -> Any:
    return page.locator(f"g.bar[data-object='{obj}']")


def test_the_key_is_asked_for_kept_per_tab_and_refused_when_wrong(page: Any, site: tuple[str, str]) -> None:
    url, key = site
    page.goto(f"{url}/ui/")
    page.fill("#key-input", "cmk_000000000000_" + "x" * 43)
    page.press("#key-input", "Enter")
    page.wait_for_selector("#key-error:has-text('not accepted')")
    sign_in(page, site)
    assert page.evaluate("sessionStorage.getItem('chronomem.apiKey')") == key
    assert page.evaluate("localStorage.length") == 0
    page.reload()
    page.wait_for_selector("#users a")  # same tab: still signed in
    assert page.inner_text("#whoami").startswith(f"tenant {TENANT}")


def test_slider_changes_which_city_is_current(page: Any, site: tuple[str, str]) -> None:
    open_timeline(page, site)
    assert true_then(page, "lives_in") == ["Munich"]
    assert "is-current" in bar(page, "Munich").get_attribute("class")
    slider = page.locator("#asof-slider")
    slider.focus()
    page.keyboard.press("Home")
    page.wait_for_selector("#asof-facts[data-as-of='2017-01-01']")
    assert true_then(page, "lives_in") == []  # before she moved to Berlin
    page.keyboard.press("PageUp")
    page.keyboard.press("PageUp")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.wait_for_selector("#asof-facts[data-as-of='2019-04-01']")
    assert slider.get_attribute("aria-valuetext") == "2019-04-01"
    assert true_then(page, "lives_in") == ["Berlin"]
    assert true_then(page, "works_at") == ["Zalando"]
    assert "is-current" in bar(page, "Berlin").get_attribute("class")
    assert "not-current" in bar(page, "Munich").get_attribute("class")
    page.keyboard.press("PageUp")
    page.keyboard.press("PageUp")
    page.keyboard.press("PageUp")
    page.wait_for_selector("#asof-facts[data-as-of='2022-04-01']")
    assert true_then(page, "lives_in") == ["Munich"]
    assert "not-current" in bar(page, "Berlin").get_attribute("class")
    page.fill("#asof-date", "2021-05-31")  # the day before the move, to the day
    page.wait_for_selector("#asof-facts[data-as-of='2021-05-31']")
    assert true_then(page, "lives_in") == ["Berlin"]
    page.keyboard.press("End")  # the slider is where the date input put it; End is now
    page.locator("#asof-slider").press("End")
    page.wait_for_selector("#asof-facts[data-as-of=now]")
    assert true_then(page, "lives_in") == ["Munich"]


def test_hedged_facts_are_shown_apart(page: Any, site: tuple[str, str]) -> None:
    open_timeline(page, site)
    assert page.locator("#timeline-hedged g.bar[data-object=Lisbon]").count() == 1
    assert page.locator("#timeline-chart g.bar[data-object=Lisbon]").count() == 0
    assert page.eval_on_selector_all("#true-hedged li", "els => els.map(e => e.dataset.object)") == ["Lisbon"]
    assert true_then(page, "plans_to_visit") == []


def test_a_correction_shows_up_in_the_history(page: Any, site: tuple[str, str]) -> None:
    open_timeline(page, site)
    bar(page, "Munich").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#detail-h:has-text('Maya lives_in Munich')")
    assert page.evaluate("document.activeElement.id") == "detail-h"
    page.click("#correct-btn")
    page.wait_for_selector("#correct-dialog[open]")
    assert page.evaluate("document.activeElement.id") == "c-object"
    page.keyboard.press("Escape")  # cancelling changes nothing
    page.wait_for_selector("#correct-dialog:not([open])", state="attached")
    page.click("#correct-btn")
    page.fill("#c-object", "Augsburg")
    page.keyboard.press("Enter")
    page.wait_for_selector("#confirm-dialog[open]")
    assert "Augsburg" in page.inner_text("#confirm-message")
    page.keyboard.press("Enter")  # the confirm button has focus
    page.wait_for_selector("#detail-h:has-text('Maya lives_in Augsburg')")
    versions = page.eval_on_selector_all(
        "#versions li", "els => els.map(e => [e.querySelector('button').textContent, e.dataset.state, e.dataset.origin])")
    assert versions == [["Berlin", "closed", "imported"], ["Munich", "corrected", "imported"],
                        ["Augsburg", "current", "corrected"]]
    page.wait_for_selector("#true-firm li[data-object=Augsburg]")
    assert true_then(page, "lives_in") == ["Augsburg"]
    assert bar(page, "Munich").get_attribute("data-state") == "corrected"  # the old version stays visible


def test_forget_removes_the_bar(page: Any, site: tuple[str, str]) -> None:
    open_timeline(page, site)
    bar(page, "Siemens").click()
    page.wait_for_selector("#detail-h:has-text('Maya works_at Siemens')")
    page.click("#forget-btn")
    page.wait_for_selector("#confirm-dialog[open]")
    page.keyboard.press("Escape")
    page.wait_for_selector("#confirm-dialog:not([open])", state="attached")
    assert page.evaluate("document.activeElement.id") == "forget-btn"  # focus returns to the opener
    assert bar(page, "Siemens").count() == 1
    page.click("#forget-btn")
    page.wait_for_selector("#confirm-dialog[open]")
    page.keyboard.press("Enter")
    page.wait_for_selector("g.bar[data-object=Siemens]", state="detached")
    page.wait_for_selector("#true-firm li[data-object=Zalando]")  # the job it had closed holds again
    assert true_then(page, "works_at") == ["Zalando"]
    assert page.locator("#detail").is_hidden()


def test_source_turns_and_session_summaries(page: Any, site: tuple[str, str]) -> None:
    open_timeline(page, site)
    bar(page, "cello").click()
    page.wait_for_selector("#sources li")
    assert "I took up the cello last month." in page.inner_text("#sources")
    page.click("#sessions a:has-text('s1')")
    page.wait_for_selector("article[data-session=s1] .summary-text")
    assert page.inner_text("article[data-session=s1] .summary-text") == SUMMARY
    page.click("article[data-session=s1] summary")
    page.wait_for_selector("article[data-session=s1] .turns li")
    assert "How are the lessons going?" in page.inner_text("article[data-session=s1] .turns")


def test_graph_marks_derived_edges_and_recentres(page: Any, site: tuple[str, str]) -> None:
    sign_in(page, site, f"#/users/{USER}/graph/Maya")
    page.wait_for_selector("#graph-chart svg")
    kinds = page.eval_on_selector_all("#graph-edges tbody tr",
                                      "rows => rows.map(r => r.cells[1].textContent + ':' + r.cells[5].textContent)")
    assert sorted(kinds) == sorted(["sibling_of:stored", "lives_in:stored", "works_at:stored", "hobby:stored",
                                    "sibling_of:derived: symmetry", "lives_in:derived: containment"])
    assert page.locator("#graph-chart path.edge.derived").count() == 2
    page.uncheck("#graph-derived")
    assert page.locator("#graph-chart path.edge.derived").count() == 0
    page.check("#graph-derived")
    page.locator("g.node[data-entity=Munich]").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("g.node.center[data-entity=Munich]")
    assert page.evaluate("document.activeElement.getAttribute('data-entity')") is not None  # focus stays in the graph
    page.fill("#graph-asof", "2019-06-01")
    page.wait_for_selector("#graph-edges tbody tr")
    page.fill("#entity-input", "Maya")
    page.press("#entity-input", "Enter")
    page.wait_for_selector("g.node.center[data-entity=Maya]")
    page.wait_for_selector("g.node[data-entity=Berlin]")  # as of 2019: Berlin, not Munich
    assert page.locator("g.node[data-entity=Munich]").count() == 0


def test_graph_merges_two_names_of_one_person(page: Any, site: tuple[str, str]) -> None:
    """"my brother" was kept apart from Rui: merged from its graph, Rui's graph holds both."""
    import httpx

    url, key = site
    r = httpx.post(f"{url}/v1/users/{USER}/facts", headers={"Authorization": f"Bearer {key}"}, json={"facts": [
        {"subject": "my brother", "relation": "lives_in", "object": "Porto", "valid_from": "2020-01-01"}]})
    assert r.status_code == 200, r.text
    sign_in(page, site, f"#/users/{USER}/graph/my brother")
    page.wait_for_selector("g.node.center[data-entity='my brother']")
    page.click("#merge-btn")
    page.wait_for_selector("#merge-into:focus")
    assert "Rui" in page.eval_on_selector_all("#merge-options option", "os => os.map(o => o.value)")
    page.keyboard.press("Escape")  # cancelled: nothing merged
    assert page.locator("#merge-dialog[open]").count() == 0
    assert page.evaluate("document.activeElement.id") == "merge-btn"  # focus back where it was
    page.fill("#entity-input", "my brother")
    page.press("#entity-input", "Enter")
    page.wait_for_selector("g.node.center[data-entity='my brother']")
    page.click("#merge-btn")
    page.keyboard.type("Rui")
    page.keyboard.press("Enter")
    page.wait_for_selector("g.node.center[data-entity=Rui]")
    page.wait_for_selector("g.node[data-entity=Porto]")
    page.wait_for_selector("#status:has-text('Merged my brother into Rui: 1 fact moved')")
    assert page.locator("g.node[data-entity=Maya]").count() == 1


def test_ask_shows_answer_evidence_and_trace(page: Any, site: tuple[str, str]) -> None:
    sign_in(page, site, f"#/users/{USER}/ask")
    page.wait_for_selector("#ask-q:focus")
    page.keyboard.type("Where does Maya live?")
    page.keyboard.press("Enter")
    page.wait_for_selector("#ask-out[data-state=ready] #answer-text")
    assert page.inner_text("#answer-text") == "Munich"
    assert "Maya lives_in Munich" in page.inner_text("#evidence")
    assert "Maya" in page.inner_text("#trace-anchors")
    assert "FACT" in page.inner_text("#trace-intents")
    assert "depth 1" in page.inner_text("#trace-beam") and "Maya -lives_in-> Munich" in page.inner_text("#trace-beam")


def tab_to(page: Any, js_test: str, limit: int = 80) -> None:
    """Press Tab until ``js_test`` (an expression over ``el``, the focused element) holds."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"(() => {{ const el = document.activeElement; return !!({js_test}); }})()"):
            return
    raise AssertionError(f"Tab never reached an element where {js_test}")


def test_keyboard_only(page: Any, site: tuple[str, str]) -> None:
    sign_in(page, site)
    tab_to(page, f"el.textContent === '{USER}' && el.tagName === 'A'")
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"  # visible focus
    page.keyboard.press("Enter")
    page.wait_for_selector("#asof-facts[data-state=ready]")
    tab_to(page, "el.id === 'asof-slider'")
    page.keyboard.press("Home")
    page.wait_for_selector("#asof-facts[data-as-of='2017-01-01']")
    tab_to(page, "el.dataset && el.dataset.object === 'Berlin'")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')").startswith("Maya lives_in Berlin")
    page.keyboard.press("Enter")
    page.wait_for_selector("#detail-h:has-text('Maya lives_in Berlin')")
    page.keyboard.press("Escape")
    page.wait_for_selector("#detail", state="hidden")
    page.keyboard.press("Shift+Tab")
    tab_to(page, "el.dataset && el.dataset.view === 'graph'")
    page.keyboard.press("Enter")
    page.wait_for_selector("#graph-chart svg")
    tab_to(page, "el.dataset && el.dataset.entity === 'Rui'")
    page.keyboard.press("Enter")
    page.wait_for_selector("g.node.center[data-entity=Rui]")


README_SHOTS = ("timeline", "graph")


@pytest.mark.parametrize("view", ["timeline", "graph", "sessions", "ask"])
def test_fits_1280_by_800(page: Any, site: tuple[str, str], view: str, tmp_path: Path) -> None:
    sign_in(page, site, f"#/users/{USER}/{view}")
    ready = {"timeline": "#asof-facts[data-state=ready]", "graph": "#graph-chart svg",
             "sessions": "article[data-session=s1]", "ask": "#ask-q"}[view]
    page.wait_for_selector(ready)
    if view == "timeline":  # with a fact open, as the README shows it
        page.fill("#asof-date", "2019-06-01")
        page.wait_for_selector("#asof-facts[data-as-of='2019-06-01']")
        bar(page, "Berlin").click()
        page.wait_for_selector("#versions li")
        page.wait_for_function("""() => {  // the chart redrew for the narrower column
            const box = document.querySelector('#timeline-chart');
            return Math.abs(box.querySelector('svg').getAttribute('width') - box.clientWidth) < 5; }""")
    if view == "ask":
        page.fill("#ask-q", "Where does Maya live?")
        page.press("#ask-q", "Enter")
        page.wait_for_selector("#ask-out[data-state=ready] #answer-text")
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]  # no sideways scrolling
    assert page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)") >= 14
    out = Path(os.environ.get("CHRONOMEM_SCREENSHOTS") or tmp_path) if view in README_SHOTS else tmp_path
    shot = out / f"explorer-{view}.png"
    page.screenshot(path=str(shot))
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])
    assert (width, height) == (VIEWPORT["width"], VIEWPORT["height"])


# -- defects found by exploratory testing -------------------------------------------------------------

OTHER = "zoe"


def add_facts(site: tuple[str, str], user: str, facts: list[dict[str, Any]]) -> None:
    import httpx

    url, key = site
    r = httpx.post(f"{url}/v1/users/{user}/facts", headers={"Authorization": f"Bearer {key}"}, json={"facts": facts})
    assert r.status_code == 200, r.text


class Held:
    """Holds the browser's requests whose path ends with one of ``suffixes`` until ``release()``:
    a reply that comes back only after the user has moved on."""

    def __init__(self, page: Any, *suffixes: str) -> None:
        self.routes: list[Any] = []
        self.done: set[int] = set()
        self.page = page
        page.on("requestfinished", lambda r: self.done.add(id(r)))
        page.on("requestfailed", lambda r: self.done.add(id(r)))  # dropped by the page (aborted)
        for suffix in suffixes:
            page.route(lambda u, s=suffix: u.split("?")[0].endswith(s), self.hold)

    def hold(self, route: Any) -> None:
        self.routes.append(route)

    def wait(self, n: int) -> None:
        for _ in range(200):
            if len(self.routes) >= n:
                return
            self.page.wait_for_timeout(50)
        raise AssertionError(f"only {len(self.routes)} of {n} requests were made")

    def release(self) -> None:
        from playwright.sync_api import Error

        for route in self.routes:
            try:
                route.continue_()
            except Error:
                pass  # the page dropped that request already
        for _ in range(200):  # each got its answer or was dropped
            if all(id(route.request) in self.done for route in self.routes):
                break
            self.page.wait_for_timeout(50)
        else:
            raise AssertionError("a released request never ended")
        self.page.wait_for_timeout(300)  # time for a late answer to be drawn, were it drawn


def test_a_late_answer_for_the_previous_user_is_not_shown(page: Any, site: tuple[str, str]) -> None:
    add_facts(site, OTHER, [{"subject": "Zoe", "relation": "lives_in", "object": "Oslo", "valid_from": "2020-01-01"}])
    held = Held(page, f"/users/{USER}/history", f"/users/{USER}/sessions")
    sign_in(page, site)
    page.evaluate(f"location.hash = '#/users/{USER}/timeline'")
    held.wait(2)  # Maya's timeline and sidebar sessions are on their way
    page.click(f"#users a:has-text('{OTHER}')")
    page.wait_for_selector("#true-firm li[data-object=Oslo]")
    held.release()  # Maya's answers arrive now, after the switch
    assert page.inner_text("#user-h") == f"Memory of {OTHER}"
    assert page.eval_on_selector_all("g.bar", "gs => gs.map(g => g.dataset.object)") == ["Oslo"]
    assert true_then(page, "lives_in") == ["Oslo"]
    assert page.eval_on_selector_all("#sessions a", "as => as.map(a => a.getAttribute('href'))") == []
    assert page.inner_text("#sessions") == "None"  # Zoe has no sessions: Maya's s1 is not listed
    bar(page, "Oslo").click()
    page.wait_for_selector("#detail-h:has-text('Zoe lives_in Oslo')")


def test_a_late_answer_does_not_replace_the_next_view(page: Any, site: tuple[str, str]) -> None:
    add_facts(site, OTHER, [{"subject": "Zoe", "relation": "lives_in", "object": "Oslo", "valid_from": "2020-01-01"}])
    sign_in(page, site, f"#/users/{USER}/timeline")
    page.wait_for_selector("#asof-facts[data-state=ready]")
    held = Held(page, f"/users/{USER}/checkpoints")
    page.click(".tabs a[data-view=sessions]")
    held.wait(1)
    page.click(".tabs a[data-view=graph]")  # Maya's graph while her sessions are still loading
    page.wait_for_selector("g.node.center[data-entity=Maya]")
    held.release()
    assert page.locator("#graph-chart svg").count() == 1
    assert page.locator("article[data-session]").count() == 0
    page.click(f"#users a:has-text('{OTHER}')")  # and the same for another user's sessions
    page.wait_for_selector("#asof-facts[data-state=ready]")
    held = Held(page, f"/users/{USER}/sessions")
    page.evaluate(f"location.hash = '#/users/{USER}/sessions'")
    held.wait(2)  # the view's list and the sidebar's
    page.evaluate(f"location.hash = '#/users/{OTHER}/sessions'")
    page.wait_for_selector("#view p.muted:has-text('No sessions stored')")
    held.release()
    assert page.locator("article[data-session]").count() == 0
    assert page.inner_text("#user-h") == f"Memory of {OTHER}"


def test_timeline_refuses_a_year_past_9999(page: Any, site: tuple[str, str]) -> None:
    open_timeline(page, site)
    page.fill("#asof-date", "2019-06-01")
    page.wait_for_selector("#asof-facts[data-as-of='2019-06-01']")
    for value in ["10000-01-01", "275760-09-13"]:
        page.evaluate("v => { const d = document.getElementById('asof-date'); d.value = v;"
                      " d.dispatchEvent(new Event('change')); }", value)
        page.wait_for_selector(f"#status.error:has-text('{value}')")
        assert page.input_value("#asof-date") == "2019-06-01"  # the moment shown is kept
        assert page.inner_text("#asof-label") == "2019-06-01"
        assert page.get_attribute("#asof-facts", "data-as-of") == "2019-06-01"
    assert true_then(page, "lives_in") == ["Berlin"]
    page.fill("#asof-date", "9999-12-31")  # the last date the API takes still works
    page.wait_for_selector("#asof-facts[data-as-of='9999-12-31']")
    assert true_then(page, "lives_in") == ["Munich"]


def test_an_error_goes_away_on_navigation(page: Any, site: tuple[str, str]) -> None:
    sign_in(page, site, f"#/users/{USER}/graph/Maya")
    page.wait_for_selector("#graph-chart svg")
    page.evaluate("() => { const d = document.getElementById('graph-asof'); d.value = '10000-01-01';"
                  " d.dispatchEvent(new Event('change')); }")
    page.wait_for_selector("#status.error:has-text('Graph:')")
    page.click(".tabs a[data-view=timeline]")
    page.wait_for_selector("#asof-facts[data-state=ready]")
    assert page.inner_text("#status") == ""
    assert page.get_attribute("#status", "role") == "status"


@pytest.mark.parametrize("view", ["graph", "timeline"])
def test_a_long_name_without_spaces_wraps(page: Any, site: tuple[str, str], view: str) -> None:
    long_name = "Q" * 300
    add_facts(site, USER, [{"subject": "Maya", "relation": "likes", "object": long_name, "valid_from": "2019-01-01"}])
    sign_in(page, site, f"#/users/{USER}/{view}/Maya")
    page.wait_for_selector("#graph-edges tbody tr" if view == "graph" else "#asof-facts[data-state=ready]")
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]  # no sideways scrolling
    if view == "graph":
        node = page.locator(f"g.node[data-entity='{long_name}']")
        label = node.locator("text.node-label").text_content()
        assert len(label) <= 28 and label.endswith("…") and long_name.startswith(label[:-1])
        assert node.locator("title").text_content() == long_name  # the whole name as its tooltip
        assert node.get_attribute("aria-label").startswith(long_name)
