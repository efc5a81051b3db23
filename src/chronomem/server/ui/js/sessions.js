// Sessions with their Rsum checkpoint (the recursive summary M_i written when the session ended).
import { all, isAbort, userPath } from "./api.js";
import { day, fill, h } from "./util.js";

export class SessionsView {
  /** ``signal`` aborts when the app leaves this view: nothing of it is drawn after that. */
  constructor(root, { user, focusSession, signal = null }) {
    this.root = root;
    this.signal = signal || new AbortController().signal;
    this.user = user;
    this.focusSession = focusSession;
  }

  destroy() {}

  async load() {
    const { signal } = this;
    const [sessions, checkpoints] = await Promise.all([
      all(`${userPath(this.user)}/sessions`, {}, { signal }), all(`${userPath(this.user)}/checkpoints`, {}, { signal })]);
    if (signal.aborted) return;  // another view owns the root now
    const bySession = new Map();
    for (const c of checkpoints) bySession.set(c.session_id, c);
    sessions.sort((a, b) => (a.started_at || "").localeCompare(b.started_at || ""));
    fill(this.root,
      h("h2", { class: "sr-only" }, "Sessions"),
      sessions.length ? null : h("p", { class: "muted" }, "No sessions stored for this user."),
      sessions.map((sess) => this.session(sess, bySession.get(sess.id))));
    if (this.focusSession) {
      const el = this.root.querySelector(`[data-session="${CSS.escape(this.focusSession)}"] h3`);
      if (el) { el.focus(); el.scrollIntoView({ block: "start" }); }
    }
  }

  session(sess, cp) {
    const turns = h("div", { class: "turns-box" });
    const details = h("details", {}, h("summary", {}, "Turns"), turns);
    details.addEventListener("toggle", async () => {
      if (!details.open || turns.dataset.loaded) return;
      turns.dataset.loaded = "1";
      let msgs;
      try {
        msgs = await all(`${userPath(this.user)}/messages`, { session_id: sess.id }, { signal: this.signal });
      } catch (e) {
        delete turns.dataset.loaded;
        if (isAbort(e)) return;
        turns.append(h("p", { class: "error" }, e.message));
        return;
      }
      turns.append(msgs.length ? h("ol", { class: "turns" }, msgs.map((m) =>
        h("li", {}, h("span", { class: "speaker" }, m.speaker), ": ", m.text,
          h("span", { class: "meta" }, ` ${day(m.timestamp)}${m.extracted ? "" : " · not extracted yet"}`))))
        : h("p", { class: "muted" }, "No stored turns."));
    });
    return h("article", { class: "session", "data-session": sess.id },
      h("h3", { tabindex: "-1" }, `Session ${sess.id}`),
      h("p", { class: "meta" }, `${sess.started_at ? day(sess.started_at) : "?"} → ${sess.ended_at ? day(sess.ended_at) : "open"}`,
        sess.agent_id ? ` · agent ${sess.agent_id}` : ""),
      cp ? h("div", { class: "checkpoint" },
        h("h4", {}, `Summary after this session (M${cp.seq})`),
        h("p", { class: "summary-text" }, cp.memory))
        : h("p", { class: "muted" }, sess.ended_at ? "No summary checkpoint for this session."
          : "Not ended yet: its summary is written when the session ends."),
      details);
  }
}
