// The crawl database as a table: filters (state, host, text) kept in the route, paging by cursor.
import { crawlPath, get, query } from "../api.js";
import { badge, fmtBytes, fmtTime, h, replace } from "../dom.js";
import { link } from "../routes.js";

const STATES = ["", "unfetched", "fetched", "gone", "redirect_temp", "redirect_perm", "not_modified", "duplicate"];
const LIMIT = 50;

/** Render the URL table into `main`; returns its cleanup. */
export function urlsView(main, id, params) {
  const filters = { state: params.get("state") || "", host: params.get("host") || "", q: params.get("q") || "" };
  const asked = Number.parseInt(params.get("limit") || "", 10);
  const limit = asked >= 1 && asked <= 1000 ? asked : LIMIT;
  const states = STATES.includes(filters.state) ? STATES : [...STATES, filters.state];
  const form = h(
    "form",
    { class: "card filters", role: "search", "aria-label": "Filter URLs" },
    h("label", {}, "State ", h("select", { name: "state" }, states.map((s) => h("option", { value: s, selected: s === filters.state, text: s || "any" })))),
    h("label", {}, "Host ", h("input", { type: "text", name: "host", value: filters.host, placeholder: "any host" })),
    h("label", {}, "Text ", h("input", { type: "search", name: "q", value: filters.q, placeholder: "part of the URL" })),
    h("button", { type: "submit", text: "Filter" }),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const f = form.elements;
    const wanted = { state: f.state.value, host: f.host.value.trim(), q: f.q.value.trim() };
    if (limit !== LIMIT) wanted.limit = String(limit);
    window.location.hash = link("crawls", id, "urls", wanted);
  });

  const status = h("p", { class: "muted", dataset: { testid: "urls-status" }, text: "Loading…" });
  const body = h("tbody", {});
  const prev = h("button", { type: "button", class: "secondary", text: "‹ Previous", disabled: true });
  const next = h("button", { type: "button", class: "secondary", text: "Next ›", disabled: true });
  const pageNo = h("span", { class: "muted small" });
  replace(
    main,
    h("h1", { text: "URLs" }),
    form,
    h(
      "section",
      { class: "card" },
      status,
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "urls", dataset: { testid: "urls" } },
          h("thead", {}, h("tr", {}, ["URL", "State", "Status", "Size", "Fetched"].map((t, i) => h("th", { class: i >= 3 ? "wide-only" : "", text: t })))),
          body,
        ),
      ),
      h("div", { class: "pager" }, prev, pageNo, next),
    ),
  );

  const cursors = [""]; // cursors[i]: the cursor of page i (the first page has none)
  let page = 0;
  let nextCursor = null;
  let gone = false;

  async function load() {
    prev.disabled = next.disabled = true;
    status.hidden = false;
    status.className = "muted";
    status.textContent = "Loading…";
    try {
      const data = await get(crawlPath(id, "urls") + query({ ...filters, limit, cursor: cursors[page] }));
      if (gone) return;
      const rows = data.urls || [];
      replace(
        body,
        rows.map((u) =>
          h(
            "tr",
            {},
            h("td", { class: "url" }, h("a", { href: link("crawls", id, "page", { url: u.url }), text: u.url })),
            h("td", {}, badge(u.state)),
            h("td", { class: "num", text: u.status ? String(u.status) : "" }),
            h("td", { class: "num wide-only", text: u.bytes ? fmtBytes(u.bytes) : "" }),
            h("td", { class: "wide-only", text: fmtTime(u.fetched_at) }),
          ),
        ),
      );
      nextCursor = data.next_cursor || null;
      status.textContent = rows.length ? "" : "No URLs match.";
      status.hidden = rows.length > 0;
      pageNo.textContent = `page ${page + 1}`;
      prev.disabled = page === 0;
      next.disabled = !nextCursor;
    } catch (err) {
      status.className = "error";
      status.textContent = `Could not load the URLs: ${err.message}`;
      prev.disabled = page === 0;
    }
  }

  next.addEventListener("click", () => {
    if (!nextCursor) return;
    cursors[page + 1] = nextCursor;
    page += 1;
    load();
  });
  prev.addEventListener("click", () => {
    if (page === 0) return;
    page -= 1;
    load();
  });
  load();
  return () => {
    gone = true;
  };
}
