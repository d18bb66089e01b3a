// One crawl, live: its summary from `status` events and its history (the chart, recent events) from
// the crawl's own events, both on one EventSource; stop / resume / delete with a confirm step.
import { crawlPath, del, get, post } from "../api.js";
import { badge, fmtBytes, fmtInt, fmtTime, h, replace } from "../dom.js";
import { link } from "../routes.js";
import { RateChart } from "./chart.js";

const ACTIVE = new Set(["running", "stopping"]);
const KINDS = ["crawl_started", "fetched", "failed", "gave_up", "skipped", "host_paused", "crawl_finished"];
const RECENT = 25;

/** A two-column table of [label, value] rows, or a "none" line. */
function pairTable(testid, head, rows) {
  if (!rows.length) return h("p", { class: "muted", dataset: { testid }, text: "none yet" });
  return h(
    "table",
    { class: "pairs", dataset: { testid } },
    h("thead", {}, h("tr", {}, h("th", { text: head[0] }), h("th", { class: "num", text: head[1] }))),
    h("tbody", {}, rows.map(([k, v]) => h("tr", {}, h("td", { class: "url", text: k }), h("td", { class: "num", text: fmtInt(v) })))),
  );
}

function stat(label, testid) {
  const value = h("span", { class: "stat-value", dataset: { testid }, text: "–" });
  const name = h("span", { class: "stat-label", text: label });
  return { el: h("div", { class: "stat" }, value, name), value, label: name };
}

/** Render the crawl view into `main`; returns its cleanup. */
export function crawlView(main, id) {
  const title = h("h1", { class: "mono", text: id });
  const stateSlot = h("span", {});
  const seedsEl = h("ul", { class: "seeds" });
  const meta = h("p", { class: "muted small" });
  const settingsList = h("ul", { class: "settings small" });
  const settingsBox = h("details", { class: "more", hidden: true }, h("summary", { text: "Settings" }), settingsList);
  const message = h("p", { class: "message", dataset: { testid: "message" }, hidden: true });
  const live = h("span", { class: "live muted small", dataset: { testid: "live" }, text: "connecting…" });
  const actionError = h("p", { class: "error", role: "alert", hidden: true, dataset: { testid: "action-error" } });

  const stopBtn = h("button", { type: "button", class: "secondary", text: "Stop", hidden: true });
  const resumeBtn = h("button", { type: "button", class: "secondary", text: "Resume", hidden: true });
  const deleteBtn = h("button", { type: "button", class: "danger", text: "Delete" });
  const confirmText = h("span", {});
  const confirmYes = h("button", { type: "button", class: "danger", text: "Yes" });
  const confirmNo = h("button", { type: "button", class: "secondary", text: "Cancel" });
  const confirmBox = h("div", { class: "confirm", role: "alertdialog", hidden: true }, confirmText, " ", confirmYes, " ", confirmNo);

  const pages = stat("pages", "pages");
  const rate = stat("pages/s", "rate");
  const bytes = stat("stored", "bytes");
  const failed = stat("failed", "failed");

  const chartEl = h("div", { class: "chart", dataset: { testid: "chart", points: "0" } }, h("p", { class: "muted", text: "Waiting for pages…" }));
  const countsSlot = h("div", {});
  const statusSlot = h("div", {});
  const hostsSlot = h("div", {});
  const errorsSlot = h("div", {});
  const recentEl = h("ol", { class: "events", dataset: { testid: "events" } });

  const searchForm = h(
    "form",
    { class: "inline-form", role: "search" },
    h("input", { type: "search", name: "q", placeholder: "Search this crawl", "aria-label": "Search this crawl" }),
    h("button", { type: "submit", text: "Search" }),
  );
  searchForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = searchForm.elements.q.value.trim();
    if (q) window.location.hash = link("crawls", id, "search", { q });
  });

  replace(
    main,
    h(
      "section",
      { class: "card" },
      h("div", { class: "title-row" }, title, stateSlot, live),
      seedsEl,
      meta,
      settingsBox,
      message,
      h("div", { class: "actions" }, stopBtn, resumeBtn, deleteBtn, h("a", { class: "button secondary", href: link("crawls", id, "urls"), text: "Browse URLs" })),
      confirmBox,
      actionError,
      searchForm,
    ),
    h("section", { class: "stats" }, pages.el, rate.el, bytes.el, failed.el),
    h("section", { class: "card" }, h("h2", { text: "Pages per second" }), chartEl),
    h(
      "section",
      { class: "grid" },
      h("div", { class: "card" }, h("h2", { text: "URLs by state" }), countsSlot),
      h("div", { class: "card" }, h("h2", { text: "Status codes" }), statusSlot),
      h("div", { class: "card" }, h("h2", { text: "Top hosts" }), hostsSlot),
      h("div", { class: "card" }, h("h2", { text: "Errors by class" }), errorsSlot),
    ),
    h("section", { class: "card" }, h("h2", { text: "Recent events" }), recentEl),
  );

  const chart = new RateChart(chartEl);
  let recent = [];
  let recentDirty = false;
  let es = null;
  let sawIds = false;
  let poll = null;
  let closed = false;

  function showSummary(s) {
    replace(stateSlot, badge(s.state));
    replace(seedsEl, (s.seeds || []).map((u) => h("li", { class: "url", text: u })));
    meta.textContent = s.created ? `created ${fmtTime(s.created)}` : "";
    const settings = Object.entries(s.settings || {});
    settingsBox.hidden = settings.length === 0;
    replace(settingsList, settings.map(([k, v]) => h("li", {}, h("span", { class: "mono", text: k }), ` = ${JSON.stringify(v)}`)));
    message.textContent = s.message || "";
    message.hidden = !s.message;
    pages.value.textContent = fmtInt(s.pages);
    rate.value.textContent = Number(s.pages_per_second || 0).toFixed(1);
    rate.label.textContent = ACTIVE.has(s.state) ? "pages/s now" : "pages/s over the run";
    bytes.value.textContent = fmtBytes(s.bytes);
    const errorRows = Object.entries(s.errors || {}).sort((a, b) => b[1] - a[1]);
    // URLs that failed, as the run's last event counts them; errorRows are remarks of any kind.
    failed.value.textContent = fmtInt(s.failed || 0);
    const counts = Object.entries(s.counts || {}).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
    replace(countsSlot, pairTable("counts", ["state", "URLs"], counts));
    const statuses = Object.entries(s.statuses || {}).sort((a, b) => Number(a[0]) - Number(b[0]));
    replace(statusSlot, pairTable("statuses", ["status", "pages"], statuses));
    const hosts = (s.top_hosts || []).map((x) => [x.host, x.pages]);
    replace(hostsSlot, pairTable("hosts", ["host", "pages"], hosts));
    replace(errorsSlot, pairTable("error-classes", ["class", "count"], errorRows));
    const active = ACTIVE.has(s.state);
    stopBtn.hidden = s.state !== "running";
    resumeBtn.hidden = active;
  }

  function onEvent(kind, ev) {
    if (kind === "fetched") chart.addFetch(ev.time);
    recent.push({ kind, ...ev });
    if (recent.length > RECENT * 4) recent = recent.slice(-RECENT);
    recentDirty = true;
  }

  function drawRecent() {
    if (!recentDirty) return;
    recentDirty = false;
    const rows = recent.slice(-RECENT).reverse();
    replace(
      recentEl,
      rows.map((ev) =>
        h(
          "li",
          { class: `ev ev-${ev.kind}` },
          h("span", { class: "ev-kind", text: ev.kind }),
          ev.status ? h("span", { class: "ev-status", text: String(ev.status) }) : null,
          h("span", { class: "url", text: ev.url || ev.host || "" }),
          ev.error_class || ev.message ? h("span", { class: "muted", text: ` ${ev.error_class || ""} ${ev.message || ""}` }) : null,
        ),
      ),
    );
  }
  const recentTimer = setInterval(drawRecent, 1000);

  function stopPolling() {
    clearInterval(poll);
    poll = null;
  }

  function startPolling() {
    if (poll || closed) return;
    poll = setInterval(async () => {
      try {
        const s = await get(crawlPath(id));
        showSummary(s);
        chart.addSample(s.pages_per_second);
        if (!ACTIVE.has(s.state)) stopPolling();
      } catch {
        // Shown by the next successful refresh; a 401 goes to the sign-in page by itself.
      }
    }, 3000);
  }

  function closeStream() {
    if (es) es.close();
    es = null;
  }

  function openStream() {
    if (es || closed) return;
    // A new stream replays the crawl's history from its start: draw it afresh.
    chart.reset();
    recent = [];
    recentDirty = true;
    sawIds = false;
    const source = new EventSource(crawlPath(id, "events"));
    es = source;
    source.addEventListener("open", () => {
      live.textContent = "live";
      stopPolling();
      // Without event ids a reconnection replays the crawl's history from its start.
      if (!sawIds) {
        chart.reset();
        recent = [];
        recentDirty = true;
      }
    });
    for (const kind of KINDS) {
      source.addEventListener(kind, (e) => {
        if (e.lastEventId) sawIds = true;
        try {
          onEvent(kind, JSON.parse(e.data));
        } catch (err) {
          console.error("bad event", err);
        }
      });
    }
    source.addEventListener("status", (e) => {
      let s;
      try {
        s = JSON.parse(e.data);
      } catch {
        return;
      }
      showSummary(s);
      if (!chart.buckets.size) chart.addSample(s.pages_per_second);
      if (!ACTIVE.has(s.state)) {
        // The stream ends with the crawl; without closing, EventSource would reconnect forever.
        closeStream();
        live.textContent = "ended";
      }
    });
    source.addEventListener("error", (e) => {
      if (e.data) {
        // The server's own `error` event (the crawl was deleted while watched): the stream is over.
        let detail = e.data;
        try {
          detail = JSON.parse(e.data).detail || detail;
        } catch {
          // Plain text: shown as it is.
        }
        closeStream();
        live.textContent = "ended";
        actionError.textContent = String(detail);
        actionError.hidden = false;
        return;
      }
      if (source.readyState === EventSource.CLOSED) {
        es = null;
        live.textContent = "polling";
        startPolling();
      } else {
        live.textContent = "reconnecting…";
      }
    });
  }

  let confirmAction = null;
  function ask(text, yesLabel, action) {
    confirmText.textContent = text;
    confirmYes.textContent = yesLabel;
    confirmAction = action;
    confirmBox.hidden = false;
    confirmYes.focus();
  }
  confirmNo.addEventListener("click", () => {
    confirmBox.hidden = true;
    confirmAction = null;
  });
  confirmYes.addEventListener("click", async () => {
    const action = confirmAction;
    confirmBox.hidden = true;
    confirmAction = null;
    if (action) await run(action);
  });

  async function run(action) {
    actionError.hidden = true;
    for (const b of [stopBtn, resumeBtn, deleteBtn]) b.disabled = true;
    try {
      await action();
    } catch (err) {
      actionError.textContent = err.message;
      actionError.hidden = false;
    } finally {
      for (const b of [stopBtn, resumeBtn, deleteBtn]) b.disabled = false;
    }
  }

  stopBtn.addEventListener("click", () =>
    ask("Stop this crawl? It can be resumed later.", "Stop crawl", async () => {
      showSummary(await post(crawlPath(id, "stop")));
    }),
  );
  resumeBtn.addEventListener("click", () =>
    run(async () => {
      showSummary(await post(crawlPath(id, "resume")));
      closeStream();
      openStream();
    }),
  );
  deleteBtn.addEventListener("click", () =>
    ask("Delete this crawl and everything it stored? This cannot be undone.", "Delete for good", async () => {
      closeStream();
      await del(`${crawlPath(id)}?confirm=true`);
      window.location.hash = "#/";
    }),
  );

  (async () => {
    try {
      showSummary(await get(crawlPath(id)));
    } catch (err) {
      if (err.status === 404) {
        replace(main, h("p", { class: "error", text: `No crawl ${id}.` }), h("a", { href: "#/", text: "Back to the crawls" }));
        closed = true;
        return;
      }
      actionError.textContent = err.message;
      actionError.hidden = false;
    }
    openStream();
  })();

  return () => {
    closed = true;
    closeStream();
    stopPolling();
    clearInterval(recentTimer);
    chart.destroy();
  };
}
