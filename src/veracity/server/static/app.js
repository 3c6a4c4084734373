// veracity's page: the form, and the live view of a run over Server-Sent Events.
// Steps are rendered as they arrive with the same markup as templates/steps.html (grouped the way
// views.group_steps groups them); when the run ends, the server-rendered panel replaces the live one.
(function () {
  "use strict";

  const $ = (sel, root) => (root || document).querySelector(sel);
  const dataEl = $("#catalog-data");
  const catalog = dataEl ? JSON.parse(dataEl.textContent) : { pipelines: [], qa_modules: [] };
  const STOP_REASONS = {
    verifier: "the verifier judged the answers enough to decide",
    max_iterations: "the most questions allowed were asked",
    no_question: "no further question came",
  };
  const REASONING = { reasoner: "Reasoner", cot: "Chain of thought", direct: "Direct answer" };
  const SKIP = new Set(["claim", "verdict", "model_call", "retrieval"]);

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
  const pipelineInfo = (name) => catalog.pipelines.find((p) => p.name === name);

  // ---- the form --------------------------------------------------------------------------------

  function initForm() {
    const form = $("#check-form");
    if (!form) return;
    const claim = $("#claim"), count = $("#claim-count"), pipeline = $("#pipeline"), qa = $("#qa");
    const qaField = $("#qa-field"), qaDesc = $("#qa-desc"), pipeDesc = $("#pipeline-desc");
    const imageField = $("#image-field"), errorBox = $("#form-error"), submit = $("#submit");
    const question = $("#question"), answer = $("#answer");
    const max = catalog.max_claim_chars || 2000;
    const mode = () => (form.querySelector("input[name=mode]:checked") || { value: "claim" }).value;

    // Claim check or answer check: show that mode's fields (the hidden ones are disabled, so they are
    // neither required nor sent), and name the button after it.
    function updateMode() {
      const answerMode = mode() === "answer";
      $("#claim-fields").hidden = answerMode;
      $("#answer-fields").hidden = !answerMode;
      $("#pipeline-field").hidden = answerMode;
      claim.disabled = answerMode;
      question.disabled = !answerMode;
      answer.disabled = !answerMode;
      pipeline.disabled = answerMode;
      $("#form-h").textContent = answerMode ? "Check an answer" : "Check a claim";
      submit.textContent = answerMode ? "Check answer" : "Check claim";
      if (answerMode) {
        qaField.hidden = true;
        qa.disabled = true;
        imageField.hidden = true;
        $("#image").disabled = true;
      } else {
        updatePipeline();
      }
    }

    function updateCount() {
      const n = claim.value.length;
      count.textContent = `${n} / ${max} characters`;
      count.classList.toggle("over", n > max);
    }
    function updateQaDesc() {
      const m = catalog.qa_modules.find((q) => q.name === qa.value);
      qaDesc.textContent = m ? m.description : "";
    }
    function updatePipeline() {
      const info = pipelineInfo(pipeline.value);
      if (!info) return;
      if (pipeDesc) pipeDesc.textContent = info.description;
      if (info.qa === "choice") {
        qaField.hidden = false;
        qa.disabled = false;
        updateQaDesc();
      } else if (info.qa) {
        qaField.hidden = false;
        qa.value = info.qa;
        qa.disabled = true;
        qaDesc.textContent = `${info.name} always uses ${info.qa}`;
      } else {
        qaField.hidden = true;
        qa.disabled = true;
      }
      // DEFAME will take an image: the field shows only for pipelines that accept one.
      imageField.hidden = !info.accepts_images;
      $("#image").disabled = !info.accepts_images;
    }
    function showError(text) {
      errorBox.textContent = text;
      errorBox.hidden = !text;
    }

    for (const r of form.querySelectorAll("input[name=mode]")) r.addEventListener("change", updateMode);
    claim.addEventListener("input", updateCount);
    pipeline.addEventListener("change", updatePipeline);
    qa.addEventListener("change", updateQaDesc);
    for (const b of document.querySelectorAll("button.example")) {
      b.addEventListener("click", () => {
        claim.value = b.dataset.claim;
        updateCount();
        claim.focus();
      });
    }
    updateCount();
    updateMode();

    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      showError("");
      const answerMode = mode() === "answer";
      const body = answerMode
        ? { question: question.value, answer: answer.value, pipeline: "answer-check", model: $("#model").value }
        : { claim: claim.value, pipeline: pipeline.value, model: $("#model").value };
      const info = pipelineInfo(body.pipeline);
      if (!answerMode && info && info.qa === "choice") body.qa = qa.value;
      submit.disabled = true;
      try {
        const resp = await fetch("/api/checks", {
          method: "POST", credentials: "same-origin",
          headers: { "Content-Type": "application/json", Accept: "application/json" },
          body: JSON.stringify(body),
        });
        const data = await resp.json().catch(() => ({}));
        if (!resp.ok) {
          let msg = data.detail || `The server answered ${resp.status}.`;
          if (resp.status === 401) msg += " Reload the page to sign in.";
          showError(msg);
          (answerMode ? (/answer/.test(data.error || "") ? answer : question) : claim).focus();
          return;
        }
        history.pushState({ run: data.id }, "", `/checks/${data.id}`);
        const panel = livePanel(data.id, body, info);
        const area = $("#run-area");
        area.replaceChildren(panel);
        attach(panel);
        const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
        panel.scrollIntoView({ block: "start", behavior: still ? "auto" : "smooth" });
        refreshHistory(data.id);
      } catch (e) {
        showError(`Could not reach the server: ${e.message}`);
      } finally {
        submit.disabled = false;
      }
    });
  }

  // ---- a run, live -------------------------------------------------------------------------------

  function livePanel(id, body, info) {
    const qaName = info && info.qa === "choice" ? body.qa : info && info.qa;
    const meta = [body.pipeline, qaName ? `QA: ${qaName}` : null, body.model].filter(Boolean).join(" · ");
    const title = body.pipeline === "answer-check" ? body.question : body.claim;
    return el("section", { class: "card run", id: "run", "data-run-id": id, "data-status": "queued",
                           "data-live": "1", "aria-labelledby": "run-h" },
      el("h2", { id: "run-h", class: "run-claim" }, title.trim().split(/\s+/).join(" ")),
      el("p", { class: "run-meta" }, meta),
      el("p", { id: "run-status", class: "status status-queued", role: "status", "aria-live": "polite" }, "Starting…"),
      el("h3", { class: "steps-h" }, body.pipeline === "answer-check"
        ? "Answer, sentence by sentence (select one for its evidence)" : "Steps"),
      el("ol", { class: "steps", id: "steps" }),
      el("div", { class: "run-actions" },
        el("button", { type: "button", class: "linklike danger", id: "delete-run", "data-run-id": id },
           "Delete this run")));
  }

  function evidenceBlock(e) {
    let src = e.source || "evidence";
    if (e.doc_id && !e.url) src = `${src} (${e.doc_id})`;
    const safeUrl = e.url && /^https?:\/\//i.test(e.url);
    return el("blockquote", { class: "ev" }, el("p", null, e.text || ""),
      el("footer", { class: "src" },
         safeUrl ? el("a", { href: e.url, rel: "noopener noreferrer nofollow" }, src) : src));
  }

  function note(cls, label, ...rest) {
    return el("li", { class: `step note ${cls}` }, key(label), " ", ...rest);
  }

  // Renders one trace step into the list; `state` carries the open question card between steps.
  function renderStep(list, s, state) {
    const st = s.stage;
    if (st === "model_call") { state.calls += 1; return null; }
    if (SKIP.has(st)) return null;
    let item = null;
    if (st === "question") {
      const head = el("div", { class: "step-head" }, el("span", { class: "depth" }, `Step ${s.depth}`));
      if (s.duplicate) head.append(el("span", { class: "badge b-muted" }, "already asked: skipped"));
      const text = el("div", { class: "qa-text" }, el("p", { class: "q" }, key("Question"), " ", s.question));
      const body = el("div", { class: "step-body" }, text);
      item = el("li", { class: `step qa${s.duplicate ? " duplicate" : ""}` }, head, body);
      state.card = { question: s.question, item, head, text, body };
      state.status = `Step ${s.depth}: ${s.question}`;
    } else if (st === "answer" && state.card && state.card.question === s.question) {
      const c = state.card;
      c.text.append(el("p", { class: "a" }, key("Answer"), " ", s.answer));
      if (s.evidence && s.evidence.length) {
        c.body.classList.add("two");
        c.body.append(el("div", { class: "evidence" }, ...s.evidence.map(evidenceBlock)));
      }
      state.status = `Step ${s.depth}: answered`;
      return c.item;
    } else if (st === "validator" && state.card && state.card.question === s.question) {
      const c = state.card;
      c.head.append(s.useful ? el("span", { class: "badge b-kept" }, "validator: useful, kept")
                             : el("span", { class: "badge b-dropped" }, "validator: not useful, discarded"));
      if (!s.useful) c.item.classList.add("discarded");
      return c.item;
    } else if (st === "leaf_sentence") {
      // one sentence of the answer: a disclosure with its query, evidence and rating (as templates/steps.html)
      const ev = s.evidence && s.evidence.length ? s.evidence.map(evidenceBlock)
                                                 : [el("p", { class: "hint" }, "No evidence found in the index.")];
      const body = el("div", { class: "leaf-body" }, el("p", null, key("Query"), " ", s.query || ""), ...ev,
                      s.reasoning ? el("p", null, key("Reasoning"), " ", s.reasoning) : null);
      const summary = el("summary", null, el("span", { class: "sent" }, s.sentence || ""), " ",
                         el("span", { class: `badge ${s.supported ? "b-kept" : "b-dropped"}` }, s.rating || "no decision"),
                         conf(s.confidence));
      item = el("li", { class: `step leaf ${s.supported ? "supported" : "unsupported"}`, "data-index": s.index },
                el("details", null, summary, body));
      state.status = `Sentence ${s.index}: ${s.rating || "no decision"}`;
    } else if (st === "leaf_score") {
      item = note("leaf-score", "LEAF score", `${Number(s.score || 0).toFixed(2)} (${s.supported} of ${s.checked} sentences supported)`);
    } else if (st === "leaf_note") {
      item = note("warn", "Note", s.note || "");
    } else if (st === "verifier") {
      item = note("verifier", "Verifier", s.enough ? "enough to decide" : "not enough yet: ask another question",
                  conf(s.confidence));
    } else if (st === "parse_failure") {
      const raw = String(s.raw || "");
      item = note("warn", "Unusable model output",
                  `${s.for_stage}: “${raw.length > 120 ? raw.slice(0, 117) + "..." : raw}”; ${s.fallback || ""}`);
    } else if (st === "context_done") {
      item = note("stop", "Stopped asking", STOP_REASONS[s.reason] || s.reason);
      state.status = "Weighing the answers…";
    } else if (st in REASONING) {
      item = note("reasoning", REASONING[st], s.label, conf(s.confidence));
    } else {
      const data = Object.assign({}, s);
      delete data.stage; delete data.t;
      item = note("other", st, el("code", null, JSON.stringify(data)));
    }
    if (item) list.append(item);
    return item;
  }

  function attach(panel) {
    const id = panel.dataset.runId;
    const list = $("#steps", panel), status = $("#run-status", panel);
    const state = { card: null, calls: 0, status: "Running…" };
    bindDelete(panel);
    const source = new EventSource(`/api/checks/${id}/events`);
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
        setStatus("running", "Running…");
      }
    });
    source.addEventListener("step", (e) => {
      renderStep(list, JSON.parse(e.data), state);
      const calls = state.calls ? ` (${state.calls} model call${state.calls === 1 ? "" : "s"})` : "";
      setStatus("running", `${state.status}${calls}`);
    });
    source.addEventListener("done", async (e) => {
      source.close();
      const d = JSON.parse(e.data);
      if (d.status === "deleted") {
        setStatus("failed", "This run was deleted.");
        return;
      }
      setStatus(d.status === "done" ? "done" : d.status, d.status === "done" ? "Finished" : `${d.status}: ${d.error || ""}`);
      await swapPanel(panel, id);
      refreshHistory(id);
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) setStatus("failed", "Lost the connection: reload the page.");
    };
  }

  // The finished run, as the server renders it (the same page a reload shows).
  async function swapPanel(panel, id) {
    try {
      const resp = await fetch(`/checks/${id}/panel`, { credentials: "same-origin" });
      if (!resp.ok) return;
      const tpl = document.createElement("template");
      tpl.innerHTML = await resp.text();
      const fresh = tpl.content.querySelector("#run");
      if (fresh && panel.isConnected) {
        panel.replaceWith(fresh);
        bindDelete(fresh);
        localTimes(fresh);
      }
    } catch (e) { /* the live panel stays */ }
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
      const resp = await fetch(`/api/checks/${btn.dataset.runId}`, { method: "DELETE", credentials: "same-origin" });
      if (resp.status === 204 || resp.status === 404) {
        panel.remove();
        history.pushState({}, "", "/");
        refreshHistory(null);
        ($("#claim").disabled ? $("#question") : $("#claim")).focus();
      }
    });
  }

  function localTimes(root) {
    for (const t of (root || document).querySelectorAll("time[datetime]")) {
      const d = new Date(t.getAttribute("datetime"));
      if (!isNaN(d)) t.textContent = d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    initForm();
    localTimes(document);
    const panel = $("#run");
    if (panel) {
      markCurrent(panel.dataset.runId);
      if (panel.dataset.live) attach(panel); else bindDelete(panel);
    }
    window.addEventListener("popstate", () => window.location.reload());
  });
})();
