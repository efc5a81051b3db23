// Modal dialogs (native <dialog>: focus stays inside, Escape cancels, Enter submits the form).
import { day, dateInputToIso } from "./util.js";

// Cancel buttons are type=button so that Enter in a field submits the form's primary action.
for (const b of document.querySelectorAll("dialog button.cancel")) {
  b.addEventListener("click", () => b.closest("dialog").close("cancel"));
}

function openModal(dialog, focusEl) {
  const opener = document.activeElement;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      if (opener && opener.isConnected && typeof opener.focus === "function") opener.focus();
      resolve(dialog.returnValue);
    }, { once: true });
    dialog.returnValue = "cancel";
    dialog.showModal();
    if (focusEl) focusEl.focus();
  });
}

/** Ask before acting; resolves true only when the user confirms. */
export async function confirmAction({ title, message, confirmLabel, danger = false }) {
  const dialog = document.getElementById("confirm-dialog");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-message").textContent = message;
  const ok = document.getElementById("confirm-ok");
  ok.textContent = confirmLabel;
  ok.classList.toggle("danger", danger);
  return (await openModal(dialog, ok)) === "confirm";
}

/** The correction form for ``fact``: resolves to the changed fields (null when cancelled or unchanged). */
export async function editCorrection(fact) {
  const dialog = document.getElementById("correct-dialog");
  const form = document.getElementById("correct-form");
  const fields = {
    subject: fact.subject, relation: fact.relation, object: fact.object,
    valid_from: fact.valid_from ? day(fact.valid_from) : "",
    valid_to: fact.valid_to ? day(fact.valid_to) : "",
    confidence: String(fact.confidence),
  };
  for (const [name, value] of Object.entries(fields)) form.elements[name].value = value;
  document.getElementById("correct-error").textContent = "";
  const result = await openModal(dialog, form.elements.object);
  if (result !== "save") return null;
  const changes = {};
  for (const name of ["subject", "relation", "object"]) {
    const v = form.elements[name].value.trim();
    if (v && v !== fields[name]) changes[name] = v;
  }
  for (const name of ["valid_from", "valid_to"]) {
    const v = form.elements[name].value;
    if (v !== fields[name]) changes[name] = dateInputToIso(v);
  }
  const conf = form.elements.confidence.value;
  if (conf !== fields.confidence && conf !== "") changes.confidence = Number(conf);
  return Object.keys(changes).length ? changes : null;
}

/** Which entity ``name`` is merged into: resolves to the chosen name (null when cancelled). */
export async function chooseMergeTarget(name, others) {
  const dialog = document.getElementById("merge-dialog");
  const input = document.getElementById("merge-into");
  document.getElementById("merge-title").textContent = `Merge ${name} into another entity`;
  document.getElementById("merge-hint").textContent = `${name}'s facts and names move to the entity you `
    + "choose, which keeps its own name; both histories are placed in time order together, and a fact "
    + "both say becomes one. Use it when two names are one person, place or thing. It cannot be undone.";
  const list = document.getElementById("merge-options");
  list.replaceChildren(...others.map((n) => Object.assign(document.createElement("option"), { value: n })));
  input.value = "";
  const result = await openModal(dialog, input);
  const into = input.value.trim();
  return result === "merge" && into ? into : null;
}
