// The JSON API, same-origin with the session cookie. POST/DELETE carry the CSRF token (double submit):
// the value of the harvestman_csrf cookie in the X-CSRF-Token header.

/** An API error: HTTP status, the server's message, and the settings field it names (422). */
export class ApiError extends Error {
  constructor(status, message, field = null) {
    super(message);
    this.status = status;
    this.field = field;
  }
}

/** The value of cookie `name`, or "". */
export function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return "";
}

/** The message and field of an error body: {"detail": str, "field"?} (docs/serve.md, "Errors"). */
function describe(body, fallback) {
  if (!body || body.detail === undefined) return { message: fallback, field: null };
  return { message: String(body.detail), field: body.field || null };
}

/** Call the API; resolves to the JSON body (null for 204), rejects with ApiError. */
export async function api(method, path, body = undefined) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = cookie("harvestman_csrf");
  let resp;
  try {
    resp = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch (err) {
    throw new ApiError(0, `the server did not answer (${err.message})`);
  }
  if (resp.status === 204) return null;
  let data = null;
  try {
    data = await resp.json();
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const { message, field } = describe(data, `${resp.status} ${resp.statusText}`);
    if (resp.status === 401) {
      window.location.assign("/login");
    }
    throw new ApiError(resp.status, message, field);
  }
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body);
export const del = (path) => api("DELETE", path);

/** A crawl's API path: crawlPath(id, "urls") -> /api/crawls/<id>/urls */
export function crawlPath(id, ...rest) {
  return ["/api/crawls", encodeURIComponent(id), ...rest].join("/");
}

/** A query string from an object, leaving out empty values. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") q.set(key, String(value));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}
