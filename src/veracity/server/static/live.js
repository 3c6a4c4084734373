// A run, live: its panel, followed over Server-Sent Events (the server sends, with each step, a `view` event with the
// items it added or changed; `drawItem` draws them, and a checked text's items draw the text itself, its passages
// coloured by their claims' outcomes). When the run ends, the server-rendered panel replaces the live one. Also the
// history list, and deleting a run.
(function (ns) {
  "use strict";

  const { $, el, key, setBusy, focusResults, drawItem } = ns;

  // ---- a run, live -------------------------------------------------------------------------------

  // The claim's date and images (as templates/run.html shows them), from the 202 answer.
  function claimExtra(accepted) {
    const images = accepted.images || [];
    if (!accepted.date && !images.length) return null;
    return el("div", { class: "claim-extra" },
      accepted.date ? el("p", { class: "claim-date" }, key("Claim date"), " ", accepted.date) : null,
      images.length ? el("ul", { class: "thumbs", "aria-label": "The claim’s images" }, ...images.map((im) =>
        el("li", null,
          el("a", { href: im.url, target: "_blank", rel: "noopener" },
             el("img", { src: im.url, alt: `Claim image ${im.index}${im.filename ? `: ${im.filename}` : ""}`,
                         width: im.width, height: im.height })),
          el("span", { class: "hint" }, `image ${im.index}${im.filename ? `: ${im.filename}` : ""} · ` +
                                        `${im.width}×${im.height}`)))) : null);
  }

  function livePanel(id, body, info, accepted, textRun) {
    const qaName = info && info.qa === "choice" ? body.qa : info && info.qa;
    const meta = [textRun ? "text-check" : null, textRun ? `claims checked by ${body.pipeline}` : body.pipeline,
                  qaName ? `QA: ${qaName}` : null, body.model].filter(Boolean).join(" · ");
    const title = textRun ? accepted.title : body.pipeline === "answer-check" ? body.question : body.claim;
    const kind = textRun ? "text" : body.pipeline === "answer-check" ? "answer" : "claim";
    return el("section", { class: "card run", id: "run", "data-run-id": id, "data-status": "queued",
                           "data-kind": kind, "data-live": "1", "aria-labelledby": "run-h" },
      el("h2", { id: "run-h", class: "run-claim", tabindex: "-1" }, title.trim().split(/\s+/).join(" ")),
      el("p", { class: "run-meta" }, meta),
      claimExtra(accepted || {}),
      el("div", { class: "status-row" },
        el("p", { id: "run-status", class: "status status-queued", role: "status", "aria-live": "polite" }, "Starting…"),
        el("p", { class: "hint elapsed", id: "run-elapsed" })),
      textRun ? el("section", { class: "text-panel", "aria-labelledby": "text-h" },
        el("h3", { class: "steps-h", id: "text-h" }, "The text (select a highlighted passage for its claims)"),
        el("p", { class: "hint text-meta", id: "text-meta" }),
        el("div", { class: "text-view", id: "text-view" })) : null,
      el("h3", { class: "steps-h" }, body.pipeline === "answer-check"
        ? "Answer, sentence by sentence (select one for its evidence)"
        : textRun ? "Claims (select one for its evidence)" : "Steps"),
      el("ol", { class: "steps", id: "steps" }),
      el("div", { class: "run-actions" },
        el("button", { type: "button", class: "linklike danger", id: "delete-run", "data-run-id": id },
           "Delete this run")));
  }

  // A checked text (as templates/steps.html's text_view draws it): the text, and each stretch that claims cover
  // (a `text_mark` item, in text order) as a link to its claims, coloured by their outcome.
  function textDrawer(panel) {
    const view = $("#text-view", panel), meta = $("#text-meta", panel);
    let source = "", pos = 0, tail = null;
    return {
      source(it) {
        source = it.text || "";
        pos = 0;
        tail = document.createTextNode(source);
        if (view) view.replaceChildren(tail);
        if (meta) {
          const parts = [`${it.sentences} sentences`, `${it.claims} claims, ${it.checkable} to check`,
                         `claims found by ${it.method}`];
          if (it.source_kind && it.source_kind !== "text") parts.push(`read from ${it.source_kind.toUpperCase()}`);
          meta.textContent = parts.concat([it.note, it.source_note].filter(Boolean)).join(" · ");
        }
        return null;
      },
      markNode(it) {
        return el("a", { class: `mark o-${it.outcome}`, href: `#claim-${it.claims[0]}`,
                         "data-claims": it.claims.join(" "), title: it.label }, source.slice(it.start, it.end));
      },
      mark(it) {  // a new stretch comes after the ones drawn so far
        const node = this.markNode(it);
        if (view && tail) {
          view.insertBefore(document.createTextNode(source.slice(pos, it.start)), tail);
          view.insertBefore(node, tail);
          pos = it.end;
          tail.textContent = source.slice(pos);
        }
        return node;
      },
    };
  }

  // Draws the items a `view` event carries: a new one is appended, a changed one replaces its old markup
  // (keeping which of its disclosures were open, and the focus). A text's own items go to its text.
  function drawView(list, view, nodes, text) {
    for (const { index, item } of view.items || []) {
      if (item.kind === "text_source") {
        text.source(item);
        continue;
      }
      if (item.kind === "text_mark" && !nodes[index]) {
        nodes[index] = text.mark(item);
        continue;
      }
      const fresh = item.kind === "text_mark" ? text.markNode(item) : drawItem(item);
      const old = nodes[index];
      if (old && old.isConnected) {
        const open = Array.from(old.querySelectorAll("details")).map((d) => d.open);
        fresh.querySelectorAll("details").forEach((d, i) => { if (open[i]) d.open = true; });
        const focusable = (n) => Array.from(n.querySelectorAll("summary, a, button"));
        const focused = focusable(old).indexOf(document.activeElement), itself = old === document.activeElement;
        old.replaceWith(fresh);
        if (itself) fresh.focus({ preventScroll: true });
        else if (focused >= 0 && focusable(fresh)[focused]) focusable(fresh)[focused].focus({ preventScroll: true });
      } else {
        list.append(fresh);
      }
      nodes[index] = fresh;
    }
  }

  // What a run does before its first step says more (the live view's `status`), by what it checks.
  const FIRST_STEP = { text: "Finding the claims in the text…", answer: "Checking the answer, sentence by sentence…",
                       claim: "Checking the claim: waiting for the model’s first step…" };

  // The seconds a run has been running, counted on the page from the `elapsed` of its status event (not in the
  // status line, which a screen reader announces on every change).
  function elapsedClock(node) {
    let timer = null, t0 = 0;
    const show = () => {
      const s = Math.floor((performance.now() - t0) / 1000);
      node.textContent = `${s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`} so far`;
    };
    return {
      start(seconds) {
        if (!node) return;
        t0 = performance.now() - 1000 * (seconds || 0);
        show();
        clearInterval(timer);
        timer = setInterval(show, 1000);
      },
      stop() { clearInterval(timer); },
    };
  }

  function attach(panel) {
    const id = panel.dataset.runId;
    const list = $("#steps", panel), status = $("#run-status", panel);
    const nodes = [];  // the drawn items, by their index in the run's view
    const text = textDrawer(panel);
    const clock = elapsedClock($("#run-elapsed", panel));
    let doing = FIRST_STEP[panel.dataset.kind] || FIRST_STEP.claim;
    bindDelete(panel);
    setBusy(true);
    const source = new EventSource(`/api/checks/${id}/events`);
    source.veracityPanel = panel;
    source.veracityClock = clock;
    live.source = source;
    const setStatus = (cls, text) => {
      status.className = `status status-${cls}`;
      status.textContent = text;
      panel.dataset.status = cls;
    };
    source.addEventListener("status", (e) => {
      const d = JSON.parse(e.data);
      if (d.status === "queued") {
        setStatus("queued", d.queue_position ? `Waiting in the queue (position ${d.queue_position})…`
                                             : "Waiting in the queue…");
      } else if (d.status === "running") {
        setStatus("running", doing);
        clock.start(d.elapsed);
      }
    });
    source.addEventListener("view", (e) => {
      const view = JSON.parse(e.data);
      drawView(list, view, nodes, text);
      const calls = view.calls ? ` (${view.calls} model call${view.calls === 1 ? "" : "s"})` : "";
      if (view.status) doing = view.status;
      setStatus("running", `${doing}${calls}`);
    });
    source.addEventListener("done", async (e) => {
      source.close();
      clock.stop();
      live.source = null;
      setBusy(false);
      const d = JSON.parse(e.data);
      if (d.status === "deleted") {
        setStatus("failed", "This run was deleted.");
        return;
      }
      // what went wrong is said by the finished panel, in plain words (its details behind a toggle)
      setStatus(d.status, { done: "Finished", failed: "Failed" }[d.status] || "Interrupted");
      const text = $("#text-view", panel), textTop = text && text.getBoundingClientRect().top;
      const fresh = await swapPanel(panel, id);
      if (fresh) {  // the verdict (or what went wrong) in view, with the focus, unless the user is elsewhere
        const target = $("#verdict-h", fresh) || $("#run-h", fresh), freshText = $("#text-view", fresh);
        if (text && freshText) {  // a checked text stays where it was on the screen: its colours are the result
          window.scrollBy(0, freshText.getBoundingClientRect().top - textTop);
          focusResults(target, null);
        } else {
          focusResults(target, $(".verdict", fresh) || $(".failure", fresh) || fresh);
        }
      }
      refreshHistory(id);
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        clock.stop();
        live.source = null;
        setBusy(false);
        setStatus("failed", "Lost the connection: reload the page.");
      }
    };
  }
  const live = { source: null };  // the stream being followed, if any

  // The finished run, as the server renders it (the same page a reload shows).
  async function swapPanel(panel, id) {
    try {
      const resp = await fetch(`/checks/${id}/panel`, { credentials: "same-origin" });
      if (!resp.ok) return;
      const tpl = document.createElement("template");
      tpl.innerHTML = await resp.text();
      const fresh = tpl.content.querySelector("#run");
      if (fresh && panel.isConnected) {
        const hadFocus = panel.contains(document.activeElement);
        panel.replaceWith(fresh);
        bindDelete(fresh);
        localTimes(fresh);
        if (hadFocus) $("#run-h", fresh).focus({ preventScroll: true });  // never dropped to the body
        return fresh;
      }
    } catch (e) { /* the live panel stays */ }
    return null;
  }

  async function refreshHistory(currentId) {
    const box = $("#history");
    if (!box) return;
    try {
      const resp = await fetch(`/partials/history`, { credentials: "same-origin" });
      if (!resp.ok) return;
      const tpl = document.createElement("template");
      tpl.innerHTML = await resp.text();
      box.replaceChildren(tpl.content);
      markCurrent(currentId);
      localTimes(box);
    } catch (e) { /* keep the old list */ }
  }

  function markCurrent(id) {
    for (const a of document.querySelectorAll(".history a[data-run-id]")) {
      const on = a.dataset.runId === id;
      a.parentElement.classList.toggle("current", on);
      if (on) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
  }

  function bindDelete(panel) {
    const btn = $("#delete-run", panel);
    if (!btn) return;
    btn.addEventListener("click", async () => {
      if (!window.confirm("Delete this run and its steps?")) return;
      const id = btn.dataset.runId;
      btn.disabled = true;
      let resp = null;
      try {
        resp = await fetch(`/api/checks/${id}`, { method: "DELETE", credentials: "same-origin" });
      } catch (e) { /* said below */ }
      if (resp && (resp.status === 204 || resp.status === 404)) {
        if (live.source && live.source.veracityPanel === panel) {  // a run deleted while it streams
          live.source.close();
          live.source.veracityClock.stop();
          live.source = null;
          setBusy(false);
        }
        const notice = el("p", { class: "card notice", id: "run-deleted", role: "status", tabindex: "-1" },
                          resp.status === 204 ? "The run was deleted." : "That run was already deleted.");
        panel.replaceWith(notice);
        // the deleted run's address leaves the address bar and the history (Back cannot return to it)
        if (window.location.pathname.startsWith(`/checks/${id}`)) history.replaceState({}, "", "/");
        refreshHistory(null);
        notice.focus();
      } else {
        btn.disabled = false;
        let msg = resp ? `The server answered ${resp.status}.` : "Could not reach the server.";
        if (resp) {
          const data = await resp.json().catch(() => ({}));
          if (data.detail) msg = data.detail;
        }
        const old = $(".delete-error", panel);
        if (old) old.remove();
        btn.after(el("p", { class: "error delete-error", role: "alert" }, `Not deleted: ${msg}`));
      }
    });
  }

  function localTimes(root) {
    for (const t of (root || document).querySelectorAll("time[datetime]")) {
      const d = new Date(t.getAttribute("datetime"));
      if (!isNaN(d)) t.textContent = d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
    }
  }

  Object.assign(ns, { livePanel, attach, refreshHistory, markCurrent, bindDelete, localTimes });
})(window.veracity = window.veracity || {});
