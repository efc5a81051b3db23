// Small DOM and date helpers shared by the views.

/** h("li", {class: "x", onclick: f}, child, "text") */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

/** Replace ``el``'s children (arrays are flattened, null and false skipped). */
export function fill(el, ...children) { append(clear(el), children); return el; }

export function parseTime(iso) { return iso ? new Date(iso) : null; }

/** YYYY-MM-DD in UTC ("" for no date or one that is not a date). */
export function day(d) {
  if (!d) return "";
  const date = d instanceof Date ? d : new Date(d);
  return Number.isNaN(date.getTime()) ? "" : date.toISOString().slice(0, 10);
}

/** The value of an <input type=date> as midnight UTC, or null when it is not a date of years 1–9999
 *  (what the API takes; a typed year like 10000 or 275760 would otherwise become an Invalid Date). */
export function dateInputToDate(value) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value || "");
  if (!m || m[1] === "0000") return null;
  const date = new Date(`${value}T00:00:00Z`);
  return Number.isNaN(date.getTime()) || day(date) !== value ? null : date;
}

export function interval(f) {
  const from = f.valid_from ? day(f.valid_from) : "always";
  const to = f.valid_to ? day(f.valid_to) : "now";
  return `${from} → ${to}`;
}

export function factText(f) { return `${f.subject} ${f.relation} ${f.object}`; }

export function pct(x) { return `${Math.round(x * 100)}%`; }

/** A date typed in an <input type=date> as the ISO instant the API takes (midnight UTC). */
export function dateInputToIso(value) { return value ? `${value}T00:00:00Z` : null; }

let statusTimer = null;
export function announce(message, { error = false } = {}) {
  const el = document.getElementById("status");
  el.textContent = message;
  el.classList.toggle("error", error);
  el.setAttribute("role", error ? "alert" : "status");
  clearTimeout(statusTimer);
  if (!error) statusTimer = setTimeout(() => { el.textContent = ""; }, 6000);
}

/** Take down an error announce() left up (errors stay until the next navigation). */
export function clearError() {
  const el = document.getElementById("status");
  if (!el.classList.contains("error")) return;
  el.textContent = "";
  el.classList.remove("error");
  el.setAttribute("role", "status");
}

export function debounce(fn, ms) {
  let t = null;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}
