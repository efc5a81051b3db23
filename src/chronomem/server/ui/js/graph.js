// The entity graph: stored edges around an entity plus the edges the read path derives from them
// (symmetry, inverse, hyponymy, containment), fetched from GET /v1/users/{u}/graph.
import { all, api, isAbort, userPath } from "./api.js";
import { chooseMergeTarget } from "./dialogs.js";
import { announce, clear, dateInputToIso, factText, fill, h, interval, pct, s } from "./util.js";

const HEIGHT = 480;
const LABEL_MAX = 28;  // characters of a node or edge label drawn; the full text is in its tooltip

/** ``text`` cut to ``max`` characters (code points, so an emoji is never split) with an ellipsis. */
export function shorten(text, max = LABEL_MAX) {
  const chars = Array.from(String(text));
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : String(text);
}

/** Positions: the centre in the middle, depth-1 nodes on a ring, depth-2 nodes on an outer ring near their parent. */
export function layout(graph, width, height) {
  const cx = width / 2;
  const cy = height / 2;
  const pos = new Map([[graph.center.id, { x: cx, y: cy }]]);
  const ring1 = graph.nodes.filter((n) => n.depth === 1);
  const r1 = Math.min(width, height) * (graph.nodes.some((n) => n.depth === 2) ? 0.24 : 0.36);
  ring1.forEach((n, i) => {
    const a = (2 * Math.PI * i) / Math.max(1, ring1.length) - Math.PI / 2;
    pos.set(n.id, { x: cx + r1 * 1.45 * Math.cos(a), y: cy + r1 * Math.sin(a), a });
  });
  const ring2 = graph.nodes.filter((n) => n.depth === 2);
  const parentOf = new Map();
  for (const e of graph.edges) {
    for (const [a, b] of [[e.source, e.target], [e.target, e.source]]) {
      if (ring2.some((n) => n.id === a) && pos.has(b) && b !== graph.center.id && !parentOf.has(a)) parentOf.set(a, b);
    }
  }
  const r2 = Math.min(width, height) * 0.44;
  const groups = new Map();
  for (const n of ring2) {
    const p = parentOf.get(n.id);
    if (!groups.has(p)) groups.set(p, []);
    groups.get(p).push(n);
  }
  for (const [p, kids] of groups) {
    const base = p && pos.get(p) ? pos.get(p).a : 0;
    kids.forEach((n, i) => {
      const a = base + (i - (kids.length - 1) / 2) * 0.32;
      pos.set(n.id, { x: cx + r2 * 1.45 * Math.cos(a), y: cy + r2 * Math.sin(a), a });
    });
  }
  return pos;
}

export class GraphView {
  /** ``signal`` aborts when the app leaves this view: nothing of it is drawn after that. */
  constructor(root, { user, panel, entity, onEntity, options, signal = null }) {
    this.root = root;
    this.signal = signal || new AbortController().signal;
    this.options = options;  // depth, as-of and derived: kept by the app across re-centring
    this.user = user;
    this.panel = panel;
    this.entity = entity;
    this.onEntity = onEntity;  // (name) => navigate to that entity's graph
  }

  destroy() {}

  async load() {
    const entities = await all(`${userPath(this.user)}/entities`, {}, { signal: this.signal });
    if (this.signal.aborted) return;  // another view owns the root now
    this.entities = entities;
    const list = h("datalist", { id: "entity-options" }, entities.map((e) => h("option", { value: e.name })));
    this.input = h("input", { id: "entity-input", list: "entity-options", required: true, value: this.entity || "",
                              autocomplete: "off" });
    this.depth = h("select", { id: "graph-depth" },
      h("option", { value: "1" }, "1 hop"), h("option", { value: "2" }, "2 hops"));
    this.asOf = h("input", { type: "date", id: "graph-asof" });
    this.derived = h("input", { type: "checkbox", id: "graph-derived", checked: true,
                                onchange: () => this.graph && this.draw() });
    this.box = h("div", { class: "svgbox graphbox", id: "graph-chart" });
    this.table = h("div", { id: "graph-edges" });
    fill(this.root,
      h("form", { class: "row controls", onsubmit: (e) => { e.preventDefault(); this.onEntity(this.input.value.trim()); } },
        h("span", { class: "field" }, h("label", { for: "entity-input" }, "Entity"), this.input, list),
        h("span", { class: "field" }, h("label", { for: "graph-depth" }, "Depth"), this.depth),
        h("span", { class: "field" }, h("label", { for: "graph-asof" }, "As of"), this.asOf),
        h("label", { class: "check" }, this.derived, " derived edges"),
        h("button", { type: "submit", class: "primary" }, "Show")),
      h("ul", { class: "legend", "aria-label": "Legend" },
        h("li", {}, h("span", { class: "swatch edge-stored", "aria-hidden": "true" }), "stored fact"),
        h("li", {}, h("span", { class: "swatch edge-derived", "aria-hidden": "true" }),
          "derived by a rule (symmetry, inverse, hyponymy, containment): not stored"),
        h("li", {}, "Enter or click on an entity shows its graph")),
      this.box, this.table);
    this.depth.value = this.options.depth;
    this.asOf.value = this.options.asOf;
    this.derived.checked = this.options.derived;
    for (const el of [this.depth, this.asOf]) {
      el.addEventListener("change", () => {
        Object.assign(this.options, { depth: this.depth.value, asOf: this.asOf.value });
        if (this.entity) this.fetch();
      });
    }
    this.derived.addEventListener("change", () => { this.options.derived = this.derived.checked; });
    if (!this.entity && entities.length) {  // the user themself when an entity bears their id, else a person
      const lower = this.user.toLowerCase();
      const main = entities.find((e) => e.name.toLowerCase() === lower
        || (e.aliases || []).some((a) => a.toLowerCase() === lower))
        || entities.find((e) => (e.type || "") === "person") || entities[0];
      this.entity = main.name;
      this.input.value = main.name;
    }
    if (this.entity) await this.fetch();
    else this.box.append(h("p", { class: "muted" }, "No entities yet."));
  }

  async fetch() {
    try {
      const graph = await api(`${userPath(this.user)}/graph`, { signal: this.signal,
        query: { entity: this.entity, depth: this.depth.value, as_of: dateInputToIso(this.asOf.value) } });
      if (this.signal.aborted) return;
      this.graph = graph;
      this.draw();
    } catch (e) {
      if (isAbort(e) || this.signal.aborted) return;
      fill(this.box, h("p", { class: "error" }, e.message));
      clear(this.table);
      announce(`Graph: ${e.message}`, { error: true });
    }
  }

  draw() {
    const g = this.graph;
    const edges = g.edges.filter((e) => this.derived.checked || !e.derived);
    const width = Math.max(560, this.box.clientWidth || 800);
    const pos = layout(g, width, HEIGHT);
    const svg = s("svg", { width, height: HEIGHT, class: "graph", role: "group",
                           "aria-label": `Entity graph around ${g.center.name}` },
      s("defs", {},
        s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
          s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" })),
        s("marker", { id: "arrow-derived", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
          s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead derived" }))));
    // edges between the same two nodes fan out as arcs
    const pairs = new Map();
    for (const e of edges) {
      const k = [e.source, e.target].sort().join("|");
      if (!pairs.has(k)) pairs.set(k, []);
      pairs.get(k).push(e);
    }
    const edgeLayer = s("g", { class: "edges" });
    const labelLayer = s("g", { class: "edge-labels" });
    for (const group of pairs.values()) {
      group.forEach((e, i) => {
        const a = pos.get(e.source);
        const b = pos.get(e.target);
        if (!a || !b) return;
        const [sx, sy, tx, ty] = trim(a, b, 22);
        const off = (i - (group.length - 1) / 2) * 90 * ([e.source, e.target].sort()[0] === e.source ? 1 : -1);
        const mx = (sx + tx) / 2;
        const my = (sy + ty) / 2;
        const len = Math.hypot(tx - sx, ty - sy) || 1;
        const qx = mx + (-(ty - sy) / len) * off;
        const qy = my + ((tx - sx) / len) * off;
        const cls = e.derived ? "edge derived" : "edge";
        edgeLayer.append(s("path", { d: `M${sx},${sy} Q${qx},${qy} ${tx},${ty}`, class: cls,
          "marker-end": e.derived ? "url(#arrow-derived)" : "url(#arrow)" }));
        const lx = (sx + 2 * qx + tx) / 4;
        const ly = (sy + 2 * qy + ty) / 4;
        const text = e.derived ? `${e.fact.relation} (${e.fact.rule})` : e.fact.relation;
        labelLayer.append(s("text", { x: lx, y: ly, class: `edge-label${e.derived ? " derived" : ""}`, "text-anchor": "middle" },
          shorten(text) === text ? null : s("title", {}, text), shorten(text)));
      });
    }
    svg.append(edgeLayer, labelLayer);
    const nodeById = new Map([[g.center.id, g.center], ...g.nodes.map((n) => [n.id, n])]);
    for (const [id, p] of pos) {
      const n = nodeById.get(id);
      const isCenter = id === g.center.id;
      const go = () => { if (!isCenter) this.onEntity(n.name); };
      const node = s("g", {
        class: `node${isCenter ? " center" : ""}`, transform: `translate(${p.x},${p.y})`,
        tabindex: isCenter ? null : "0", role: isCenter ? null : "button", "data-entity": n.name,
        "aria-label": isCenter ? `${n.name} (centre)` : `${n.name}${n.type ? `, ${n.type}` : ""}: show its graph`,
        onclick: go, onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } },
      }, s("title", {}, n.name), s("circle", { r: isCenter ? 20 : 14 }),
      s("text", { y: isCenter ? 36 : (p.y < HEIGHT / 2 - 5 ? -21 : 30), "text-anchor": "middle", class: "node-label" },
        shorten(n.name)));
      svg.append(node);
    }
    fill(this.box, svg);
    this.drawTable(edges, nodeById);
  }

  /** Merge the centre into an entity the user names (two names of one person, place or thing). */
  async merge() {
    const centre = this.graph.center;
    const others = (this.entities || []).map((e) => e.name).filter((n) => n !== centre.name);
    const into = await chooseMergeTarget(centre.name, others);
    if (!into) return;
    try {
      const res = await api(`${userPath(this.user)}/entities/merge`, { method: "POST", body: { name: centre.id, into } });
      const n = res.facts_moved;
      announce(`Merged ${centre.name} into ${res.entity.name}: ${n} ${n === 1 ? "fact" : "facts"} moved`
        + (res.facts_folded ? `, ${res.facts_folded} of them said again what it held` : ""));
      this.onEntity(res.entity.name);
    } catch (e) {
      announce(`Merge failed: ${e.message}`, { error: true });
    }
  }

  drawTable(edges, nodeById) {
    const name = (id) => (nodeById.get(id) || { name: id }).name;
    const derivedCount = edges.filter((e) => e.derived).length;
    fill(this.table,
      h("p", { class: "meta" }, `${edges.length} edges (${derivedCount} derived)`,
        this.graph.truncated ? " — truncated: the entity has more edges than shown" : "", " ",
        h("button", { type: "button", id: "merge-btn", class: "linkish", onclick: () => this.merge() },
          `Merge ${this.graph.center.name} into…`)),
      h("table", { class: "edges-table" },
        h("caption", { class: "sr-only" }, `Edges around ${this.graph.center.name}`),
        h("thead", {}, h("tr", {}, ["From", "Relation", "To", "Valid", "Confidence", "Kind"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, edges.map((e) => h("tr", { class: e.derived ? "derived" : "", "data-derived": String(e.derived) },
          h("td", {}, name(e.source)),
          h("td", {}, e.derived ? e.fact.relation
            : h("button", { type: "button", class: "linkish", "aria-label": `details of ${factText(e.fact)}`,
                            onclick: () => this.panel.show(this.user, e.fact.id) }, e.fact.relation)),
          h("td", {}, name(e.target)),
          h("td", {}, interval(e.fact)),
          h("td", {}, pct(e.fact.confidence)),
          h("td", {}, e.derived ? h("span", { class: "badge derived" }, `derived: ${e.fact.rule}`) : "stored"))))));
  }
}

function trim(a, b, r) {
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const len = Math.hypot(dx, dy) || 1;
  return [a.x + (dx / len) * r, a.y + (dy / len) * r, b.x - (dx / len) * r, b.y - (dy / len) * r];
}
