// The crawls list (polled) and the form that starts a crawl.
import { ApiError, get, post } from "../api.js";
import { badge, fmtInt, fmtTime, h, replace } from "../dom.js";
import { link } from "../routes.js";

const ACTIVE = new Set(["running", "stopping"]);

/** Lines of a textarea, trimmed, empty ones left out. */
function lines(text) {
  return text.split("\n").map((s) => s.trim()).filter(Boolean);
}

function field(name, label, input, hint = "") {
  input.id = `f-${name}`;
  input.name = name;
  return h(
    "div",
    { class: "field", dataset: { field: name } },
    h("label", { for: input.id, text: label }),
    input,
    hint ? h("small", { class: "hint", text: hint }) : null,
    h("p", { class: "field-error", role: "alert", hidden: true }),
  );
}

function numberInput(placeholder, step = "1", value = "") {
  return h("input", { type: "number", inputmode: step === "1" ? "numeric" : "decimal", step, placeholder, value });
}

function select(options, value) {
  return h("select", {}, options.map((o) => h("option", { value: o, selected: o === value, text: o })));
}

/** The start form; `onStarted(id)` is called with the new crawl's id. */
function startForm(onStarted) {
  const formError = h("p", { class: "error form-error", role: "alert", hidden: true, dataset: { testid: "form-error" } });
  const submit = h("button", { type: "submit", text: "Start crawl" });
  const form = h(
    "form",
    { class: "card start-form", novalidate: false, "aria-label": "Start a crawl" },
    h("h2", { text: "Start a crawl" }),
    field("seeds", "Seed URLs (one a line)", h("textarea", { rows: 3, required: true, placeholder: "https://example.org/" })),
    h(
      "div",
      { class: "row" },
      field("max_pages", "Max pages", numberInput("0 = no limit", "1", "100")),
      field("scope", "Scope", select(["host", "domain", "any"], "host")),
      field("max_depth", "Max depth", numberInput("25")),
    ),
    h(
      "details",
      { class: "more" },
      h("summary", { text: "More settings" }),
      h(
        "div",
        { class: "row" },
        field("concurrency", "Concurrency", numberInput("100")),
        field("per_host", "Per host", numberInput("2")),
        field("delay", "Delay (s)", numberInput("0", "any")),
      ),
      field("allow_net", "Allowed networks (CIDR, one a line)", h("textarea", { rows: 2, placeholder: "the server's" }),
        "Empty: the server's own (serve --allow-net). Ranges here may only narrow them."),
      field("resolve", "Resolve (HOST:PORT:ADDR, one a line)", h("textarea", { rows: 2, placeholder: "the server's" }),
        "Added to the server's pins; only to addresses the server may reach."),
      field("include", "Include patterns (one a line)", h("textarea", { rows: 2 })),
      field("exclude", "Exclude patterns (one a line)", h("textarea", { rows: 2 })),
      field("user_agent", "User agent", h("input", { type: "text", placeholder: "harvestman default" })),
      h(
        "div",
        { class: "field check", dataset: { field: "obey_robots" } },
        h("label", {}, h("input", { type: "checkbox", name: "obey_robots", id: "f-obey_robots", checked: true }), " Obey robots.txt"),
        h("p", { class: "field-error", role: "alert", hidden: true }),
      ),
    ),
    formError,
    submit,
  );

  function clearErrors() {
    formError.hidden = true;
    for (const p of form.querySelectorAll(".field-error")) {
      p.hidden = true;
      p.textContent = "";
    }
    for (const f of form.querySelectorAll(".field.invalid")) f.classList.remove("invalid");
  }

  function showError(err) {
    formError.textContent = err.message;
    formError.hidden = false;
    // A setting's name, or a dotted path in the body ("seeds.0"): its first part names the form field.
    const name = err.field ? err.field.split(".")[0] : "";
    const box = name ? form.querySelector(`.field[data-field="${CSS.escape(name)}"]`) : null;
    if (box) {
      box.classList.add("invalid");
      const p = box.querySelector(".field-error");
      p.textContent = err.message;
      p.hidden = false;
      const details = box.closest("details");
      if (details) details.open = true;
      const input = box.querySelector("input, textarea, select");
      if (input) input.focus();
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    const v = (name) => form.elements[name].value.trim();
    const settings = {};
    for (const name of ["max_pages", "max_depth", "concurrency", "per_host", "delay"]) {
      if (v(name) !== "") settings[name] = Number(v(name));
    }
    settings.scope = v("scope");
    for (const name of ["allow_net", "resolve", "include", "exclude"]) {
      const list = lines(form.elements[name].value);
      if (list.length) settings[name] = list;
    }
    if (v("user_agent")) settings.user_agent = v("user_agent");
    if (!form.elements.obey_robots.checked) settings.obey_robots = false;
    const seeds = lines(form.elements.seeds.value);
    if (!seeds.length) {
      showError(new ApiError(0, "Give at least one seed URL.", "seeds"));
      return;
    }
    submit.disabled = true;
    submit.textContent = "Starting…";
    try {
      const created = await post("/api/crawls", { seeds, settings });
      onStarted(created.id);
    } catch (err) {
      showError(err);
    } finally {
      submit.disabled = false;
      submit.textContent = "Start crawl";
    }
  });
  return form;
}

function crawlRow(c) {
  const seeds = c.seeds || [];
  return h(
    "tr",
    { dataset: { id: c.id } },
    h("td", {}, h("a", { href: link("crawls", c.id), class: "mono", text: c.id })),
    h("td", {}, badge(c.state)),
    h("td", { class: "url" }, seeds[0] || "", seeds.length > 1 ? h("span", { class: "muted", text: ` +${seeds.length - 1}` }) : null),
    h("td", { class: "num", text: fmtInt(c.pages) }),
    h("td", { class: "num wide-only", text: Number(c.pages_per_second || 0).toFixed(1) }),
    h("td", { class: "wide-only", text: fmtTime(c.created) }),
  );
}

/** Render the list view into `main`; returns its cleanup. */
export function listView(main) {
  const status = h("p", { class: "muted", text: "Loading crawls…" });
  const body = h("tbody", {});
  const table = h(
    "table",
    { class: "crawls", dataset: { testid: "crawls" } },
    h("thead", {}, h("tr", {}, ["Crawl", "State", "Seeds", "Pages", "Pages/s", "Created"].map((t, i) =>
      h("th", { class: i >= 4 ? "wide-only" : "", text: t })))),
    body,
  );
  const form = startForm((id) => {
    window.location.hash = link("crawls", id);
  });
  replace(main, form, h("section", { class: "card" }, h("h2", { text: "Crawls" }), status, h("div", { class: "table-wrap" }, table)));

  let timer = null;
  let stopped = false;
  async function refresh() {
    let delay = 10000;
    try {
      const data = await get("/api/crawls");
      const crawls = data.crawls || [];
      replace(body, crawls.map(crawlRow));
      status.textContent = crawls.length ? "" : "No crawls yet: start one above.";
      status.hidden = crawls.length > 0;
      if (crawls.some((c) => ACTIVE.has(c.state))) delay = 2000;
    } catch (err) {
      status.hidden = false;
      status.className = "error";
      status.textContent = `Could not list the crawls: ${err.message}`;
    }
    if (!stopped) timer = setTimeout(refresh, delay);
  }
  refresh();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
