// The REST v1 client: the tenant key lives in sessionStorage and goes out as a Bearer token.
const KEY = "chronomem.apiKey";

export function getKey() { return sessionStorage.getItem(KEY) || ""; }
export function setKey(key) { sessionStorage.setItem(KEY, key); }
export function clearKey() { sessionStorage.removeItem(KEY); }

/** An error answer of the API ({error, detail, field}) or a network failure. */
export class ApiError extends Error {
  constructor(status, body) {
    const detail = body && body.detail ? body.detail : `HTTP ${status}`;
    super(body && body.field ? `${detail} (field: ${body.field})` : detail);
    this.status = status;
    this.kind = body && body.error ? body.error : "HTTPError";
    this.field = body ? body.field : null;
  }
}

/** Whether ``e`` is the rejection of a request aborted because its view was left. */
export function isAbort(e) { return !!e && e.name === "AbortError"; }

/** ``signal`` (an AbortSignal) cancels the request; an aborted request rejects with an AbortError,
 *  even when its answer came back before the abort. */
export async function api(path, { method = "GET", query = null, body = undefined, signal = null } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, String(v));
  }
  const headers = { Accept: "application/json" };
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let resp;
  try {
    resp = await fetch(url, { method, headers, signal: signal || undefined,
                              body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    if (isAbort(e) || signal?.aborted) throw abortError();
    throw new ApiError(0, { error: "NetworkError", detail: `cannot reach the server (${e.message})` });
  }
  let data = null;
  let text;
  try { text = await resp.text(); } catch (e) { if (isAbort(e) || signal?.aborted) throw abortError(); throw e; }
  if (signal?.aborted) throw abortError();
  if (text) {
    try { data = JSON.parse(text); } catch { data = { error: "BadResponse", detail: text.slice(0, 200) }; }
  }
  if (!resp.ok) throw new ApiError(resp.status, data);
  return data;
}

function abortError() { return new DOMException("the view that asked was left", "AbortError"); }

/** Every item of a paged list (follows next_cursor). */
export async function all(path, query = {}, { signal = null } = {}) {
  const items = [];
  let cursor = null;
  do {
    const page = await api(path, { query: { ...query, limit: 500, cursor }, signal });
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

export const userPath = (user) => `/v1/users/${encodeURIComponent(user)}`;
