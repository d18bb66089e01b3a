// Full-text search of a crawl: hits with highlighted snippets, each opening the stored page.
import { crawlPath, get, query } from "../api.js";
import { fmtInt, h, replace, snippetNodes } from "../dom.js";
import { link } from "../routes.js";

/** Render the search view into `main`; returns its cleanup. */
export function searchView(main, id, q) {
  let gone = false;
  const form = h(
    "form",
    { class: "card inline-form", role: "search" },
    h("input", { type: "search", name: "q", value: q, placeholder: "Words to find", "aria-label": "Search", autofocus: !q }),
    h("button", { type: "submit", text: "Search" }),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = form.elements.q.value.trim();
    if (text) window.location.hash = link("crawls", id, "search", { q: text });
  });
  const status = h("p", { class: "muted", dataset: { testid: "search-status" } });
  const results = h("ol", { class: "hits", dataset: { testid: "hits" } });
  replace(main, h("h1", { text: "Search" }), form, h("section", { class: "card" }, status, results));
  if (!q) {
    status.textContent = "Type words to find in the crawl's pages.";
    return () => {};
  }
  status.textContent = "Searching… (the first search of a crawl builds its index)";
  (async () => {
    try {
      const data = await get(crawlPath(id, "search") + query({ q, limit: 20 }));
      if (gone) return;
      const hits = data.hits || [];
      status.textContent = `${fmtInt(data.total ?? hits.length)} ${(data.total ?? hits.length) === 1 ? "page" : "pages"} found`;
      replace(
        results,
        hits.map((hit) =>
          h(
            "li",
            { class: "hit" },
            h("a", { class: "hit-title", href: link("crawls", id, "page", { url: hit.url }), text: hit.title || hit.url }),
            h("div", { class: "url muted small", text: hit.url }),
            h("p", { class: "snippet" }, snippetNodes(hit.snippet_html)),
          ),
        ),
      );
    } catch (err) {
      if (!gone) {
        status.className = "error";
        status.textContent = `Search failed: ${err.message}`;
      }
    }
  })();
  return () => {
    gone = true;
  };
}
