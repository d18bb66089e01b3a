// The single-page app: routes by URL hash to a view; each view renders into <main> and returns a
// function that stops what it started (event streams, timers) when the route changes.
import { post } from "./api.js";
import { h, replace } from "./dom.js";
import { link, parseHash } from "./routes.js";
import { crawlView } from "./views/crawl.js";
import { listView } from "./views/list.js";
import { pageView } from "./views/page.js";
import { searchView } from "./views/search.js";
import { urlsView } from "./views/urls.js";

const main = document.getElementById("view");
const crumbs = document.getElementById("crumbs");
let cleanup = null;

function setCrumbs(id, section) {
  const items = [h("a", { href: "#/", text: "Crawls" })];
  if (id) {
    items.push(" › ", h("a", { href: link("crawls", id), text: id }));
    items.push(" · ", h("a", { href: link("crawls", id, "urls"), class: section === "urls" ? "here" : "", text: "URLs" }));
    items.push(" · ", h("a", { href: link("crawls", id, "search"), class: section === "search" ? "here" : "", text: "Search" }));
  }
  replace(crumbs, ...items);
}

function route() {
  if (cleanup) {
    try {
      cleanup();
    } catch (err) {
      console.error(err);
    }
    cleanup = null;
  }
  const { parts, params } = parseHash();
  main.replaceChildren();
  window.scrollTo(0, 0);
  if (parts.length === 0) {
    setCrumbs(null);
    cleanup = listView(main);
  } else if (parts[0] === "crawls" && parts.length >= 2) {
    const id = parts[1];
    const section = parts[2] || "";
    setCrumbs(id, section);
    if (section === "") cleanup = crawlView(main, id);
    else if (section === "urls") cleanup = urlsView(main, id, params);
    else if (section === "page") cleanup = pageView(main, id, params.get("url") || "");
    else if (section === "search") cleanup = searchView(main, id, params.get("q") || "");
    else notFound();
  } else {
    notFound();
  }
}

function notFound() {
  setCrumbs(null);
  replace(main, h("p", { class: "error", text: "No such page here." }), h("a", { href: "#/", text: "Back to the crawls" }));
}

document.getElementById("logout").addEventListener("click", async () => {
  try {
    await post("/logout");
  } catch {
    // Signed out already, or the server is gone: the sign-in page is where to go either way.
  }
  window.location.assign("/login");
});

window.addEventListener("hashchange", route);
route();
