// Hash routes: reading the current one and making links to others.

/** The route: path parts and query parameters of the hash (#/crawls/<id>/urls?state=fetched). */
export function parseHash(hash = window.location.hash) {
  const raw = hash.replace(/^#/, "") || "/";
  const [path, qs = ""] = raw.split("?", 2);
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(qs) };
}

/** A hash link: link("crawls", id, "urls", {state: "fetched"}) -> #/crawls/<id>/urls?state=fetched */
export function link(...parts) {
  let params = null;
  if (parts.length && typeof parts[parts.length - 1] === "object") params = parts.pop();
  let out = `#/${parts.map(encodeURIComponent).join("/")}`;
  if (params) {
    const q = new URLSearchParams();
    for (const [key, value] of Object.entries(params)) if (value) q.set(key, value);
    const s = q.toString();
    if (s) out += `?${s}`;
  }
  return out;
}
