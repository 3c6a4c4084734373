// veracity's page, shared by its scripts (templates/base.html loads them in order: dom.js, items.js, live.js,
// form.js, app.js): markup built safely (`el`), and the state of the form's button and of the focus that the form and
// a live run both change. Each script adds what it offers to `window.veracity`.
(function (ns) {
  "use strict";

  const $ = (sel, root) => (root || document).querySelector(sel);

  // el("p", {class: "q"}, child, "text", ...): text is always set as text, never parsed as HTML.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  const conf = (c) => (c === null || c === undefined ? null : el("span", { class: "conf" }, `(${c.toFixed(2)})`));
  const key = (text) => el("span", { class: "k" }, text);

  // While a run starts or streams, the form's button is off: a second press cannot start a duplicate.
  function setBusy(on) {
    const submit = $("#submit"), form = $("#check-form");
    if (!submit) return;
    submit.disabled = on;
    if (form) form.setAttribute("aria-busy", on ? "true" : "false");
  }
  const isBusy = () => { const submit = $("#submit"); return !!(submit && submit.disabled); };

  // Move focus into the results (their heading has tabindex=-1) and scroll them into view (not when
  // `scrollTarget` is null), unless the user has since put the focus somewhere else on the page (typing the next
  // claim, say).
  function focusResults(target, scrollTarget) {
    if (!target) return;
    const active = document.activeElement;
    const free = !active || active === document.body || active.id === "main" || !active.isConnected ||
                 active.closest("#run-area") || active.id === "submit";
    if (!free) return;
    const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    target.focus({ preventScroll: true });
    if (scrollTarget === null) return;
    (scrollTarget || target).scrollIntoView({ block: "start", behavior: still ? "auto" : "smooth" });
  }

  Object.assign(ns, { $, el, conf, key, setBusy, isBusy, focusResults });
})(window.veracity = window.veracity || {});
