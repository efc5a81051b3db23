// Ask: the answer, its evidence and the search trace (anchors, intents, beam steps).
import { api, isAbort, userPath } from "./api.js";
import { announce, dateInputToIso, factText, fill, h, interval, pct } from "./util.js";

export class AskView {
  /** ``signal`` aborts when the app leaves this view: nothing of it is shown after that. */
  constructor(root, { user, panel, signal = null }) {
    this.root = root;
    this.signal = signal || new AbortController().signal;
    this.user = user;
    this.panel = panel;
  }

  destroy() {}

  async load() {
    this.q = h("input", { id: "ask-q", type: "text", required: true, size: 24, autocomplete: "off",
                          placeholder: "Where does Maya live?" });
    this.asOf = h("input", { id: "ask-asof", type: "date" });
    this.method = h("select", { id: "ask-method" },
      h("option", { value: "real" }, "graph (REAL)"), h("option", { value: "real+rsum" }, "graph + summary"),
      h("option", { value: "rsum" }, "summary (Rsum)"));
    this.out = h("div", { id: "ask-out", "aria-live": "polite" });
    const form = h("form", { class: "row controls", onsubmit: (e) => { e.preventDefault(); this.run(e.submitter?.value || "answer"); } },
      h("span", { class: "field grow" }, h("label", { for: "ask-q" }, "Question"), this.q),
      h("span", { class: "field" }, h("label", { for: "ask-asof" }, "As of"), this.asOf),
      h("span", { class: "field" }, h("label", { for: "ask-method" }, "Method"), this.method),
      h("button", { type: "submit", value: "answer", class: "primary" }, "Ask"),
      h("button", { type: "submit", value: "search" }, "Evidence only"));
    fill(this.root, h("h2", { class: "sr-only" }, "Ask"), form,
      h("p", { class: "hint" }, "Ask needs the server's model; “Evidence only” runs the search without it."),
      this.out);
    this.q.focus();
  }

  async run(kind) {
    const question = this.q.value.trim();
    if (!question) return;
    const as_of = dateInputToIso(this.asOf.value);
    fill(this.out, h("p", { class: "muted" }, kind === "search" ? "Searching…" : "Thinking…"));
    this.out.dataset.state = "loading";
    try {
      const res = kind === "search"
        ? await api(`${userPath(this.user)}/search`, { method: "POST", signal: this.signal,
          body: { query: question, as_of, top_k: 10 } })
        : await api(`${userPath(this.user)}/answer`, { method: "POST", signal: this.signal,
          body: { question, as_of, method: this.method.value } });
      if (this.signal.aborted) return;
      this.render(kind, res);
    } catch (e) {
      if (isAbort(e) || this.signal.aborted) return;
      fill(this.out, h("p", { class: "error" }, e.message));
      announce(`${kind === "search" ? "Search" : "Ask"} failed: ${e.message}`, { error: true });
    }
    this.out.dataset.state = "ready";
  }

  render(kind, res) {
    const evidence = kind === "search" ? res.facts : res.evidence;
    const trace = res.trace;
    fill(this.out,
      kind === "answer" ? h("section", { class: "answer", "aria-labelledby": "answer-h" },
        h("h3", { id: "answer-h" }, "Answer"), h("p", { class: "answer-text", id: "answer-text" }, res.text),
        h("p", { class: "meta" }, `method ${res.method} · ${res.context_tokens} context tokens`)) : null,
      h("section", { "aria-labelledby": "evidence-h" }, h("h3", { id: "evidence-h" }, "Evidence"),
        evidence.length ? h("ol", { class: "evidence", id: "evidence" }, evidence.map((f) => this.fact(f)))
          : h("p", { class: "muted" }, "No evidence.")),
      trace ? this.trace(trace) : h("p", { class: "muted" }, "No search trace (the summary-only method does not search)."));
  }

  fact(f) {
    const derived = f.origin === "derived";
    return h("li", { class: derived ? "derived" : "" },
      derived ? h("span", {}, factText(f))
        : h("button", { type: "button", class: "linkish", onclick: () => this.panel.show(this.user, f.id) }, factText(f)),
      h("span", { class: "meta" }, ` ${interval(f)} · ${pct(f.confidence)} · ${f.origin}`),
      derived ? h("span", { class: "badge derived" }, `derived: ${f.rule}`) : null);
  }

  trace(t) {
    const a = t.analysis || {};
    const table = (cols, rows) => h("table", {}, h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c === null || c === undefined ? "" : String(c)))))));
    return h("section", { class: "trace", id: "trace", "aria-labelledby": "trace-h" },
      h("h3", { id: "trace-h" }, "Search trace"),
      h("details", { open: true, id: "trace-anchors" }, h("summary", {}, `Anchors (${(t.roots || []).length})`),
        (t.roots || []).length ? table(["Entity", "Matched by", "Span", "Score"],
          t.roots.map((r) => [r.name, r.how, r.span, r.score])) : h("p", { class: "muted" }, "No anchor entity found.")),
      h("details", { open: true, id: "trace-intents" }, h("summary", {}, "Intents"),
        h("p", {}, (a.intents || []).map((i) => h("span", { class: "badge" }, i)),
          h("span", { class: "meta" }, ` from ${a.source || "?"}${a.wh ? ` · wh: ${a.wh}` : ""}${a.window_text ? ` · window: ${a.window_text}` : ""}`)),
        (t.sub_searches || []).length ? h("ul", {}, t.sub_searches.map((x) => h("li", {}, `${x.intent}: ${x.filter}`))) : null),
      h("details", { open: true, id: "trace-beam" }, h("summary", {}, `Beam steps (${(t.iterations || []).length})`),
        (t.iterations || []).map((it) => h("div", { class: "beam-step" },
          h("h4", {}, `${it.intent} · depth ${it.depth}`),
          table(["Beam", "Score", "Decision", "Children", "Derived", "Kept"],
            (it.beams || []).map((b) => [b.path, fmt(b.score), b.decision, b.children, b.derived, b.kept])),
          (it.kept || []).length ? h("p", { class: "meta" }, "kept: ",
            it.kept.map((k) => `${k.path} (${fmt(k.score)})`).join("; ")) : null))),
      h("details", {}, h("summary", {}, "Notes, budget, timings"),
        h("ul", {}, (t.notes || []).map((n) => h("li", {}, typeof n === "string" ? n : JSON.stringify(n)))),
        h("p", { class: "meta" }, `budget ${JSON.stringify(t.budget || {})}`),
        h("p", { class: "meta" }, `timings (ms) ${JSON.stringify(t.timings_ms || {})}`)));
  }
}

function fmt(x) { return typeof x === "number" ? x.toFixed(3) : x; }
