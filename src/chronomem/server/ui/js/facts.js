// The fact panel: one fact, its versions and provenance; correct and forget it.
import { api, userPath } from "./api.js";
import { confirmAction, editCorrection } from "./dialogs.js";
import { announce, clear, day, factText, fill, h, interval, pct } from "./util.js";

/** A version's state for people: current, closed, corrected (superseded by a correction), hedged. */
export function factState(f, theta) {
  if (f.closed_by && f.confidence === 0) return "corrected";
  if (f.valid_to && new Date(f.valid_to) <= new Date()) return "closed";
  if (f.confidence < theta) return "hedged";
  return "current";
}

export class FactPanel {
  /** ``onChange(kind, fact)`` runs after a correction or a forget, so views can reload. */
  constructor(el, { theta, onChange }) {
    this.el = el;
    this.theta = theta;
    this.onChange = onChange;
    this.user = null;
    this.factId = null;
  }

  close() {
    this.factId = null;
    document.dispatchEvent(new CustomEvent("factselected", { detail: { id: null } }));
    this.el.hidden = true;
    clear(this.el);
  }

  async show(user, factId, { focus = true } = {}) {
    this.user = user;
    this.factId = factId;
    let prov;
    try {
      prov = await api(`${userPath(user)}/facts/${encodeURIComponent(factId)}/provenance`);
    } catch (e) {
      if (this.factId === factId) announce(`Cannot show that fact: ${e.message}`, { error: true });
      return;
    }
    if (this.factId !== factId) return;  // another fact was chosen meanwhile
    this.render(prov);
    this.el.hidden = false;
    document.dispatchEvent(new CustomEvent("factselected", { detail: { id: factId } }));
    if (focus) this.el.querySelector("h2").focus();
  }

  render({ fact: f, versions, sources, closed_by: closedBy, supports }) {
    const state = factState(f, this.theta);
    const corrected = state === "corrected";
    fill(this.el,
      h("div", { class: "detail-head" },
        h("h2", { tabindex: "-1", id: "detail-h" }, factText(f)),
        h("button", { type: "button", class: "linkish", "aria-label": "Close fact details",
                      onclick: () => this.close() }, "Close")),
      h("p", {}, h("span", { class: `badge ${state}` }, state),
        " ", h("span", { class: "badge origin" }, f.origin)),
      h("dl", { class: "facts-dl" },
        h("dt", {}, "Valid"), h("dd", {}, interval(f)),
        h("dt", {}, "Confidence"), h("dd", {}, `${pct(f.confidence)}`,
          f.confidence < this.theta && !corrected ? ` (below θ = ${this.theta}: hedged)` : ""),
        h("dt", {}, "Origin"), h("dd", {}, f.origin),
        h("dt", {}, "Intent"), h("dd", {}, f.intent),
        h("dt", {}, "Recorded"), h("dd", {}, day(f.recorded_at)),
        f.session_id ? [h("dt", {}, "Session"), h("dd", {}, f.session_id)] : null,
        f.text ? [h("dt", {}, "Said as"), h("dd", {}, `“${f.text}”`)] : null,
        closedBy ? [h("dt", {}, corrected ? "Corrected by" : "Closed by"),
          h("dd", {}, this.factLink(closedBy))] : null),
      h("div", { class: "buttons" },
        h("button", { type: "button", id: "correct-btn", disabled: corrected,
                      title: corrected ? "already corrected: correct the newer version" : null,
                      onclick: () => this.correct(f) }, "Correct…"),
        h("button", { type: "button", id: "forget-btn", class: "danger",
                      onclick: () => this.forget(f) }, "Forget…")),
      h("h3", {}, "Source turns"),
      sources.length
        ? h("ol", { class: "turns", id: "sources" }, sources.map((m) =>
            h("li", {}, h("span", { class: "speaker" }, m.speaker), ": ", m.text,
              h("span", { class: "meta" }, ` ${day(m.timestamp)} · ${m.session_id}`))))
        : h("p", { class: "muted", id: "sources" }, "No source turns: added as a structured fact."),
      supports.length ? [h("h3", {}, "Rests on"), h("ul", { class: "plain" },
        supports.map((x) => h("li", {}, this.factLink(x))))] : null,
      h("h3", {}, "History"),
      h("ol", { class: "versions", id: "versions", "aria-label": "Versions of this fact, oldest first" },
        versions.map((v) => this.versionItem(v, f))),
    );
  }

  factLink(f) {
    return h("button", { type: "button", class: "linkish", onclick: () => this.show(this.user, f.id) },
      `${factText(f)} (${interval(f)})`);
  }

  versionItem(v, selected) {
    const state = factState(v, this.theta);
    return h("li", { class: v.id === selected.id ? "selected" : "", "data-state": state, "data-origin": v.origin },
      h("button", { type: "button", class: "linkish", "aria-current": v.id === selected.id ? "true" : null,
                    onclick: () => this.show(this.user, v.id) }, v.object),
      " ", h("span", { class: "meta" }, interval(v)),
      " ", h("span", { class: `badge ${state}` }, state),
      " ", h("span", { class: "badge origin" }, v.origin),
      " ", h("span", { class: "meta" }, pct(v.confidence)));
  }

  async correct(f) {
    const changes = await editCorrection(f);
    if (!changes) return;
    const summary = Object.entries(changes).map(([k, v]) => `${k}: ${v === null ? "(none)" : v}`).join(", ");
    const ok = await confirmAction({
      title: "Apply this correction?",
      message: `“${factText(f)}” gets a corrected version (${summary}). The old version stays in the history, closed.`,
      confirmLabel: "Correct",
    });
    if (!ok) return;
    try {
      const res = await api(`${userPath(this.user)}/facts/${encodeURIComponent(f.id)}`,
        { method: "PATCH", body: changes });
      announce(`Corrected: now “${factText(res.fact)}”.`);
      await this.onChange("corrected", res.fact);
      await this.show(this.user, res.fact.id);
    } catch (e) {
      announce(`Correction failed: ${e.message}`, { error: true });
    }
  }

  async forget(f) {
    const ok = await confirmAction({
      title: "Forget this fact?",
      message: `“${factText(f)}” (${interval(f)}) is deleted for real, with no history kept. Facts it had closed hold again.`,
      confirmLabel: "Forget",
      danger: true,
    });
    if (!ok) return;
    try {
      const res = await api(`${userPath(this.user)}/facts/${encodeURIComponent(f.id)}`, { method: "DELETE" });
      announce(`Forgot “${factText(f)}”` + (res.reopened ? `; ${res.reopened} earlier fact(s) hold again.` : "."));
      this.close();
      await this.onChange("forgotten", f);
    } catch (e) {
      announce(`Forget failed: ${e.message}`, { error: true });
    }
  }
}
