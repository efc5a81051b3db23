// The explorer shell: sign-in with a tenant key, the users/sessions sidebar, hash routes, views.
import { ApiError, all, api, clearKey, getKey, isAbort, setKey, userPath } from "./api.js";
import { AskView } from "./ask.js";
import { FactPanel } from "./facts.js";
import { GraphView } from "./graph.js";
import { SessionsView } from "./sessions.js";
import { TimelineView } from "./timeline.js";
import { announce, clear, clearError, day, fill, h } from "./util.js";

const VIEWS = ["timeline", "graph", "sessions", "ask"];
const $ = (id) => document.getElementById(id);

// nav: the AbortController of the route being shown (aborted when another route replaces it, so a
// slow answer for the previous route never fills the view); sessionsNav: the same for the sidebar.
const state = { settings: null, user: null, view: null, panel: null, users: [], nav: null, sessionsNav: null,
                graphOptions: { depth: "1", asOf: "", derived: true } };

/** ``#/users/<u>/<view>/<arg>`` → {user, view, arg}. */
export function parseRoute(hash) {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] !== "users" || !parts[1]) return { user: null, view: null, arg: null };
  const view = VIEWS.includes(parts[2]) ? parts[2] : "timeline";
  return { user: parts[1], view, arg: parts[3] || null };
}

export function route(user, view = "timeline", arg = null) {
  return `#/users/${encodeURIComponent(user)}/${view}${arg ? `/${encodeURIComponent(arg)}` : ""}`;
}

function show(sectionId) {
  for (const id of ["signin", "home", "user"]) $(id).hidden = id !== sectionId;
}

async function signIn(message = "") {
  show("signin");
  $("sidebar").hidden = true;
  $("detail").hidden = true;
  $("change-key").hidden = true;
  $("key-error").textContent = message;
  $("key-input").value = "";
  $("key-input").focus();
}

async function start() {
  try {
    state.settings = await api("/v1/settings");
    state.users = await all("/v1/users");
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      return signIn(getKey() ? `That key was not accepted: ${e.message}` : "");
    }
    show("home");
    announce(`Cannot load the tenant: ${e.message}`, { error: true });
    return;
  }
  $("sidebar").hidden = false;
  $("change-key").hidden = !getKey();
  $("whoami").textContent = `tenant ${state.settings.tenant} · θ_stable ${state.settings.theta_stable}`;
  state.panel = new FactPanel($("detail"), {
    theta: state.settings.theta_stable,
    onChange: async () => { if (state.view) await state.view.load(); },
  });
  renderUsers();
  await onRoute();
}

function renderUsers() {
  const current = parseRoute(location.hash).user;
  fill($("users"),
    state.users.length ? null : h("li", { class: "muted" }, "No users in this tenant yet."),
    state.users.map((u) => h("li", {}, h("a", {
      href: route(u.user_id), "aria-current": u.user_id === current ? "page" : null }, u.user_id))));
}

async function renderSessions(user) {
  if (state.sessionsNav) state.sessionsNav.abort();  // the previous user's list must not land here
  const { signal } = state.sessionsNav = new AbortController();
  const list = clear($("sessions"));
  $("sessions-nav").hidden = false;
  try {
    const sessions = await all(`${userPath(user)}/sessions`, {}, { signal });
    if (signal.aborted) return;
    sessions.sort((a, b) => (a.started_at || "").localeCompare(b.started_at || ""));
    fill(list, sessions.length ? null : h("li", { class: "muted" }, "None"),
      sessions.map((sess) => h("li", {}, h("a", { href: route(user, "sessions", sess.id) },
        sess.id, h("span", { class: "meta" }, ` ${sess.started_at ? day(sess.started_at) : ""}`)))));
  } catch (e) {
    if (isAbort(e) || signal.aborted) return;
    list.append(h("li", { class: "error" }, e.message));
  }
}

async function onRoute() {
  if (!state.settings) return;
  const { user, view, arg } = parseRoute(location.hash);
  if (state.nav) state.nav.abort();  // whatever the previous route still awaits is dropped
  const nav = state.nav = new AbortController();
  const { signal } = nav;
  clearError();  // an error about the page being left is stale once another is shown
  renderUsers();
  if (!user) {
    show("home");
    $("sessions-nav").hidden = true;
    state.panel.close();
    if (state.view) state.view.destroy();
    state.view = null;
    return;
  }
  show("user");
  if (user !== state.user) {
    state.panel.close();
    state.graphOptions = { depth: "1", asOf: "", derived: true };
    state.user = user;
    $("user-h").textContent = `Memory of ${user}`;
    renderSessions(user);
  }
  for (const a of document.querySelectorAll(".tabs a")) {
    a.href = route(user, a.dataset.view);
    if (a.dataset.view === view) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (state.view) state.view.destroy();
  const root = clear($("view"));
  const theta = state.settings.theta_stable;
  const panel = state.panel;
  if (view === "timeline") state.view = new TimelineView(root, { user, theta, panel, signal });
  else if (view === "graph") {
    state.view = new GraphView(root, { user, panel, signal, entity: arg, options: state.graphOptions,
      onEntity: (name) => { if (name) { state.focusGraph = true; location.hash = route(user, "graph", name); } } });
  } else if (view === "sessions") state.view = new SessionsView(root, { user, signal, focusSession: arg });
  else state.view = new AskView(root, { user, panel, signal });
  try {
    await state.view.load();
    if (signal.aborted) return;
    if (view === "graph" && state.focusGraph) {
      state.focusGraph = false;
      const first = root.querySelector("g.node[tabindex]");
      (first || $("entity-input")).focus();
    }
  } catch (e) {
    if (isAbort(e) || signal.aborted) return;  // another route replaced this one meanwhile
    fill(root, h("p", { class: "error" }, e.message));
    announce(e.message, { error: true });
  }
}

function init() {
  $("key-form").addEventListener("submit", (e) => {
    e.preventDefault();
    setKey($("key-input").value.trim());
    start();
  });
  $("change-key").addEventListener("click", () => { clearKey(); state.settings = null; signIn(); });
  window.addEventListener("hashchange", onRoute);
  document.addEventListener("keydown", (e) => {  // Escape closes the fact panel (dialogs handle their own)
    if (e.key === "Escape" && !$("detail").hidden && !document.querySelector("dialog[open]")) {
      state.panel.close();
      $("user-h").focus();
    }
  });
  $("user-h").setAttribute("tabindex", "-1");
  start();
}

init();
