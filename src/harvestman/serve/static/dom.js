// Small DOM helpers: every string goes in as text (textContent), never as HTML.

/**
 * Build an element. `attrs` keys: "class", "text", "on<event>" (a listener), "dataset" (object),
 * boolean values set/omit the attribute, everything else via setAttribute. Children are nodes or
 * strings (strings become text nodes); null/undefined/false children are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = String(value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

/** Append children (nodes, strings, arrays of them) to `el`. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Remove every child of `el`, then append `children`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** Text with HTML character references decoded (the snippet's escaping); unknown ones stay as they are. */
export function decodeEntities(text) {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, name) => {
    if (name[0] === "#") {
      const code = name[1] === "x" || name[1] === "X" ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/**
 * A search snippet as DOM: the server sends escaped text with <b> highlights. No HTML parser is
 * involved: the text is split on the exact tags <b> and </b>, every other part decoded as text, so
 * anything else that looks like markup shows as the characters it is.
 */
export function snippetNodes(snippetHtml) {
  const out = [];
  let bold = false;
  for (const part of String(snippetHtml || "").split(/(<\/?b>)/i)) {
    const tag = part.toLowerCase();
    if (tag === "<b>") bold = true;
    else if (tag === "</b>") bold = false;
    else if (part) out.push(bold ? h("b", { text: decodeEntities(part) }) : document.createTextNode(decodeEntities(part)));
  }
  return out;
}

/** A number with thousands separators. */
export function fmtInt(n) {
  return Number(n || 0).toLocaleString("en-US");
}

/** Bytes as B/KiB/MiB/GiB. */
export function fmtBytes(n) {
  let value = Number(n || 0);
  for (const unit of ["B", "KiB", "MiB", "GiB"]) {
    if (value < 1024 || unit === "GiB") return unit === "B" ? `${value} B` : `${value.toFixed(1)} ${unit}`;
    value /= 1024;
  }
  return `${value} B`;
}

/** An epoch (seconds) as a local date-time, or "" for none. */
export function fmtTime(epoch) {
  if (!epoch) return "";
  const d = new Date(Number(epoch) * 1000);
  return Number.isNaN(d.getTime()) ? String(epoch) : d.toLocaleString();
}

/** A state badge. */
export function badge(state) {
  return h("span", { class: `badge state-${state || "unknown"}`, dataset: { testid: "state" }, text: state || "?" });
}
