// The timeline: every stored version as a bar over its validity interval, an as-of slider, and what
// the server says was true at that moment (GET facts?as_of=…).
import { all, isAbort, userPath } from "./api.js";
import { factState } from "./facts.js";
import { announce, dateInputToDate, day, debounce, factText, fill, h, interval, pct, s } from "./util.js";

const LABEL_W = 190;
const LANE_H = 24;
const ROW_GAP = 8;
const AXIS_H = 28;
const PAD_R = 16;

const monthStart = (y, m) => new Date(Date.UTC(y, m, 1));

/** Months from ``t0`` to ``d`` (both UTC). */
function monthsBetween(t0, d) {
  return (d.getUTCFullYear() - t0.getUTCFullYear()) * 12 + d.getUTCMonth() - t0.getUTCMonth();
}

/** Rows of (subject, relation), each with its versions packed into non-overlapping lanes. */
export function buildRows(facts, end) {
  const rows = new Map();
  for (const f of facts) {
    const key = `${f.subject}\u0000${f.relation}`;
    if (!rows.has(key)) rows.set(key, { subject: f.subject, relation: f.relation, facts: [] });
    rows.get(key).facts.push(f);
  }
  const count = new Map();
  for (const f of facts) count.set(f.subject, (count.get(f.subject) || 0) + 1);
  const out = [...rows.values()].sort((a, b) =>
    (count.get(b.subject) - count.get(a.subject)) || a.subject.localeCompare(b.subject)
    || a.relation.localeCompare(b.relation));
  for (const row of out) {
    row.facts.sort((a, b) => (a.valid_from || "").localeCompare(b.valid_from || ""));
    const laneEnds = [];
    for (const f of row.facts) {
      const start = f.valid_from ? new Date(f.valid_from) : new Date(-8.64e15);
      const stop = f.valid_to ? new Date(f.valid_to) : end;
      let lane = laneEnds.findIndex((e) => e <= start);
      if (lane < 0) { lane = laneEnds.length; laneEnds.push(stop); } else laneEnds[lane] = stop;
      f._lane = lane;
    }
    row.lanes = Math.max(1, laneEnds.length);
  }
  return out;
}

/** Below θ_stable and not a version replaced by a correction (those have confidence 0). */
export function isHedged(f, theta) { return f.confidence < theta && factState(f, theta) !== "corrected"; }

export class TimelineView {
  /** ``signal`` aborts when the app leaves this view: nothing of it is drawn after that. */
  constructor(root, { user, theta, panel, signal = null }) {
    this.root = root;
    this.signal = signal || new AbortController().signal;
    this.user = user;
    this.theta = theta;
    this.panel = panel;
    this.facts = [];
    this.current = new Set();
    this.asOf = null;  // null: now
    this.request = 0;
    this.refreshCurrent = debounce(() => this.fetchCurrent(), 150);
    // redraw when the chart's box changes width (window resized, fact panel opened or closed)
    this.resizer = new ResizeObserver(() => requestAnimationFrame(() => {
      if (this.svgBox && this.svgBox.isConnected && Math.abs(this.svgBox.clientWidth - this.width) > 4) this.draw();
    }));
    this.onSelected = () => this.restyle();
    document.addEventListener("factselected", this.onSelected);
  }

  destroy() {
    this.resizer.disconnect();
    document.removeEventListener("factselected", this.onSelected);
  }

  async load() {
    const facts = await all(`${userPath(this.user)}/history`, {}, { signal: this.signal });
    if (this.signal.aborted) return;  // another view owns the root now
    this.facts = facts;
    this.now = new Date();
    const starts = this.facts.map((f) => new Date(f.valid_from || f.recorded_at));
    const ends = this.facts.filter((f) => f.valid_to).map((f) => new Date(f.valid_to));
    const first = starts.length ? new Date(Math.min(...starts)) : this.now;
    const last = new Date(Math.max(this.now, ...ends));
    this.t0 = monthStart(first.getUTCFullYear(), 0);
    this.t1 = monthStart(last.getUTCFullYear() + 1, 0);
    this.renderShell();
    this.draw();
    if (this.asOf) this.setAsOf(this.asOf, "reload");  // a reload keeps the moment being looked at
    await this.fetchCurrent();
  }

  // -- layout ----------------------------------------------------------------------------------
  renderShell() {
    const maxMonth = monthsBetween(this.t0, this.now) + 1;  // the last step is "now"
    this.maxMonth = maxMonth;
    this.slider = h("input", {
      type: "range", id: "asof-slider", min: 0, max: maxMonth, step: 1, value: maxMonth,
      "aria-label": "As of (month)", "aria-describedby": "asof-help",
      oninput: () => this.setAsOf(this.sliderDate(), "slider"),
    });
    this.dateInput = h("input", {
      type: "date", id: "asof-date", "aria-label": "As of (exact date)", min: "0001-01-01", max: "9999-12-31",
      onchange: () => this.onDateInput(),
    });
    this.asOfLabel = h("output", { id: "asof-label", for: "asof-slider" });
    this.svgBox = h("div", { class: "svgbox", id: "timeline-chart" });
    this.hedgedBox = h("div", { class: "svgbox", id: "timeline-hedged" });
    this.truePanel = h("div", { id: "asof-facts", "aria-live": "polite", "data-state": "loading" });
    const stable = this.facts.filter((f) => !isHedged(f, this.theta));
    const hedged = this.facts.filter((f) => isHedged(f, this.theta));
    this.stable = stable;
    this.hedged = hedged;
    fill(this.root,
      h("div", { class: "asof" },
        h("div", { class: "asof-row" },
          h("label", { for: "asof-slider", class: "asof-title" }, "As of"),
          this.slider, this.asOfLabel, this.dateInput,
          h("button", { type: "button", onclick: () => this.setAsOf(null, "now") }, "Now")),
        h("p", { id: "asof-help", class: "hint" },
          "Arrow keys move a month, Page Up/Down a year, Home/End the first month/now."),
        h("section", { class: "true-then", "aria-labelledby": "true-h" },
          h("h2", { id: "true-h" }, "True then"), this.truePanel)),
      h("h2", { class: "sr-only" }, "Timeline"),
      this.legend(),
      this.svgBox,
      h("h2", { class: "sub" }, `Hedged (confidence below θ = ${this.theta})`),
      hedged.length ? this.hedgedBox
        : h("p", { class: "muted" }, "No hedged facts: everything stored is stated firmly enough."),
    );
    this.resizer.disconnect();
    this.resizer.observe(this.svgBox);
    this.slider.addEventListener("keydown", (e) => {  // a year per Page Up/Down
      if (e.key !== "PageUp" && e.key !== "PageDown") return;
      e.preventDefault();
      const v = Number(this.slider.value) + (e.key === "PageUp" ? 12 : -12);
      this.slider.value = String(Math.max(0, Math.min(this.maxMonth, v)));
      this.setAsOf(this.sliderDate(), "slider");
    });
    this.updateLabel();
  }

  legend() {
    const item = (cls, text) => h("li", {}, h("span", { class: `swatch ${cls}`, "aria-hidden": "true" }), text);
    return h("ul", { class: "legend", "aria-label": "Legend" },
      item("current", "true at the as-of date"), item("past", "other versions (closed or later)"),
      item("corrected", "replaced by a correction"), item("hedged", "hedged"));
  }

  /** The exact-date field: a date the API cannot take (a year past 9999) is refused, not sent. */
  onDateInput() {
    const value = this.dateInput.value;
    if (!value) { this.setAsOf(null, "date"); return; }
    const date = dateInputToDate(value);
    if (!date) {
      this.dateInput.value = this.asOf ? day(this.asOf) : "";  // back to the moment still shown
      announce(`As of: ${value} is not a date the timeline can show (years 0001 to 9999)`, { error: true });
      return;
    }
    this.setAsOf(date, "date");
  }

  sliderDate() {
    const v = Number(this.slider.value);
    if (v >= this.maxMonth) return null;
    return monthStart(this.t0.getUTCFullYear(), this.t0.getUTCMonth() + v);
  }

  setAsOf(date, from) {
    this.asOf = date;
    if (from !== "slider") this.slider.value = String(date ? Math.min(this.maxMonth, Math.max(0, monthsBetween(this.t0, date))) : this.maxMonth);
    if (from !== "date") this.dateInput.value = date ? day(date) : "";
    this.updateLabel();
    this.placeCursor();
    this.truePanel.dataset.state = "loading";
    this.refreshCurrent();
  }

  updateLabel() {
    const text = this.asOf ? day(this.asOf) : `now (${day(this.now)})`;
    this.asOfLabel.textContent = text;
    this.slider.setAttribute("aria-valuetext", text);
  }

  x(date) {
    const w = this.width - LABEL_W - PAD_R;
    return LABEL_W + ((date - this.t0) / (this.t1 - this.t0)) * w;
  }

  draw() {
    this.width = Math.max(520, this.svgBox.clientWidth || 760);
    this.cursors = [];
    fill(this.svgBox, this.chart(buildRows(this.stable, this.now), "Timeline of facts"));
    if (this.hedged.length) fill(this.hedgedBox, this.chart(buildRows(this.hedged, this.now), "Hedged facts"));
    this.placeCursor();
    this.restyle();
  }

  chart(rows, label) {
    const height = AXIS_H + rows.reduce((n, r) => n + r.lanes * LANE_H + ROW_GAP, 0) + 4;
    const svg = s("svg", { width: this.width, height, role: "group", "aria-label": label, class: "timeline" });
    // year ticks
    const years = this.t1.getUTCFullYear() - this.t0.getUTCFullYear();
    const every = Math.max(1, Math.ceil(years / Math.max(1, Math.floor((this.width - LABEL_W) / 60))));
    for (let y = this.t0.getUTCFullYear(); y <= this.t1.getUTCFullYear(); y += every) {
      const x = this.x(monthStart(y, 0));
      svg.append(s("line", { x1: x, x2: x, y1: AXIS_H - 6, y2: height, class: "tick" }));
      if (x + 34 < this.width) svg.append(s("text", { x: x + 3, y: AXIS_H - 10, class: "tick-label" }, String(y)));
    }
    const nowX = this.x(this.now);
    svg.append(s("line", { x1: nowX, x2: nowX, y1: AXIS_H - 6, y2: height, class: "now-line" }));
    let y = AXIS_H;
    for (const row of rows) {
      const rowH = row.lanes * LANE_H;
      svg.append(s("text", { x: 4, y: y + 16, class: "row-label" },
        s("tspan", { class: "row-subject" }, row.subject), " ", s("tspan", { class: "row-relation" }, row.relation)));
      svg.append(s("line", { x1: 0, x2: this.width, y1: y + rowH + ROW_GAP / 2, y2: y + rowH + ROW_GAP / 2, class: "row-sep" }));
      for (const f of row.facts) svg.append(this.bar(f, y + f._lane * LANE_H + 2));
      y += rowH + ROW_GAP;
    }
    const cursor = s("g", { class: "cursor", "aria-hidden": "true" },
      s("line", { x1: 0, x2: 0, y1: AXIS_H - 6, y2: height }));
    this.cursors.push(cursor);
    svg.append(cursor);
    return svg;
  }

  bar(f, y) {
    const start = f.valid_from ? new Date(f.valid_from) : this.t0;
    const end = f.valid_to ? new Date(f.valid_to) : this.now;
    const x1 = this.x(start);
    const x2 = Math.max(x1 + 4, this.x(end));
    const state = factState(f, this.theta);
    const label = `${factText(f)}, ${interval(f)}, ${state}, confidence ${pct(f.confidence)}, origin ${f.origin}`;
    const g = s("g", {
      class: `bar ${state}${isHedged(f, this.theta) ? " hedged" : ""}${f.valid_from ? "" : " open-start"}${f.valid_to ? "" : " open-end"}`,
      tabindex: "0", role: "button", "aria-label": label, "data-fact-id": f.id, "data-object": f.object,
      "data-relation": f.relation, "data-state": state,
      onclick: () => this.panel.show(this.user, f.id),
      onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); this.panel.show(this.user, f.id); } },
    }, s("title", {}, label), s("rect", { x: x1, y, width: x2 - x1, height: LANE_H - 5, rx: 3 }));
    const room = Math.floor((x2 - x1 - 8) / 7);
    if (room >= 3) {
      const text = f.object.length > room ? `${f.object.slice(0, room - 1)}…` : f.object;
      g.append(s("text", { x: x1 + 5, y: y + 14, class: "bar-label" }, text));
    }
    if (!f.valid_to) g.append(s("path", { d: `M${x2},${y} l6,${(LANE_H - 5) / 2} l-6,${(LANE_H - 5) / 2} z`, class: "arrow" }));
    return g;
  }

  placeCursor() {
    const x = this.x(this.asOf || this.now);
    for (const c of this.cursors || []) c.setAttribute("transform", `translate(${x},0)`);
  }

  // -- what was true ----------------------------------------------------------------------------
  async fetchCurrent() {
    const req = ++this.request;
    const asOf = this.asOf;
    try {
      const facts = await all(`${userPath(this.user)}/facts`,
        { as_of: asOf ? asOf.toISOString() : null, include_unstable: true }, { signal: this.signal });
      if (req !== this.request || this.signal.aborted) return;
      const believed = facts.filter((f) => f.confidence > 0);  // a corrected-away version is believed never
      this.current = new Set(believed.map((f) => f.id));
      this.renderTrue(believed, asOf);
      this.restyle();
    } catch (e) {
      if (req === this.request && !isAbort(e) && !this.signal.aborted) announce(`Could not load the facts as of ${day(asOf)}: ${e.message}`, { error: true });
    }
  }

  restyle() {
    for (const g of this.root.querySelectorAll("g.bar")) {
      const on = this.current.has(g.dataset.factId);
      g.classList.toggle("is-current", on);
      g.classList.toggle("not-current", !on);
      g.classList.toggle("selected", g.dataset.factId === this.panel.factId);
    }
  }

  renderTrue(facts, asOf) {
    const firm = facts.filter((f) => f.confidence >= this.theta);
    const hedged = facts.filter((f) => f.confidence < this.theta);
    const item = (f) => h("li", { "data-relation": f.relation, "data-object": f.object, "data-fact-id": f.id },
      h("button", { type: "button", class: "linkish", onclick: () => this.panel.show(this.user, f.id) },
        h("span", { class: "subj" }, f.subject), " ", h("span", { class: "rel" }, f.relation.replaceAll("_", " ")),
        " ", h("strong", { class: "obj" }, f.object)),
      h("span", { class: "meta" }, ` since ${f.valid_from ? day(f.valid_from) : "always"}`));
    fill(this.truePanel,
      h("span", { class: "when" }, asOf ? `on ${day(asOf)}` : "now"),
      firm.length ? h("ul", { class: "plain true-list", id: "true-firm", "aria-label": "Stated facts" }, firm.map(item))
        : h("p", { class: "muted" }, "Nothing known to be true then."),
      hedged.length ? h("ul", { class: "plain true-list hedged", id: "true-hedged", "aria-label": "Hedged facts" },
        hedged.map((f) => {
          const li = item(f);
          li.prepend(h("span", { class: "maybe" }, "maybe "));
          li.append(h("span", { class: "meta" }, ` · ${pct(f.confidence)}`));
          return li;
        })) : null,
    );
    this.truePanel.dataset.state = "ready";
    this.truePanel.dataset.asOf = asOf ? day(asOf) : "now";
  }
}
