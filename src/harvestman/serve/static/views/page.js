// A stored response: status, headers, and the body as text (never rendered), plus a link to the raw
// bytes (served by the API in a sandbox).
import { crawlPath, get, query } from "../api.js";
import { h, replace } from "../dom.js";

/** Render a stored page into `main`; returns its cleanup. */
export function pageView(main, id, url) {
  let gone = false;
  if (!url) {
    replace(main, h("p", { class: "error", text: "No URL given." }));
    return () => {};
  }
  replace(main, h("h1", { class: "url", text: url }), h("p", { class: "muted", text: "Loading…" }));
  (async () => {
    let page;
    try {
      page = await get(crawlPath(id, "page") + query({ url }));
    } catch (err) {
      if (!gone) replace(main, h("h1", { class: "url", text: url }), h("p", { class: "error", dataset: { testid: "page-error" }, text: err.message }));
      return;
    }
    if (gone) return;
    const raw = crawlPath(id, "page") + query({ url, raw: 1 });
    const headers = page.headers || [];
    replace(
      main,
      h("h1", { class: "url", dataset: { testid: "page-url" }, text: page.url || url }),
      h(
        "section",
        { class: "card" },
        h(
          "dl",
          { class: "facts" },
          h("dt", { text: "Status" }),
          h("dd", { dataset: { testid: "page-status" }, text: String(page.status ?? "") }),
          h("dt", { text: "Content type" }),
          h("dd", { text: page.content_type || "" }),
        ),
        h(
          "p",
          { class: "actions" },
          h("a", { class: "button secondary", href: raw, target: "_blank", rel: "noopener noreferrer", text: "Raw body" }),
          h("a", { class: "button secondary", href: page.url || url, target: "_blank", rel: "noopener noreferrer", text: "Live URL" }),
        ),
      ),
      h(
        "section",
        { class: "card" },
        h("h2", { text: `Headers (${headers.length})` }),
        h(
          "div",
          { class: "table-wrap" },
          h("table", { class: "pairs headers", dataset: { testid: "page-headers" } }, h("tbody", {}, headers.map(([name, value]) => h("tr", {}, h("th", { text: name }), h("td", { class: "url", text: value }))))),
        ),
      ),
      h(
        "section",
        { class: "card" },
        h("h2", { text: "Body" }),
        page.truncated ? h("p", { class: "muted small", text: "Shown in part: the raw body has all of it." }) : null,
        h("pre", { class: "body", dataset: { testid: "page-body" }, text: page.body || "" }),
      ),
    );
  })();
  return () => {
    gone = true;
  };
}
