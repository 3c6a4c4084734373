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

  // While a run starts or streams, the form's button is off: a second press cannot start a duplicate.
  function setBusy(on) {
    const submit = $("#submit"), form = $("#check-form");
    if (!submit) return;
    submit.disabled = on;
    if (form) form.setAttribute("aria-busy", on ? "true" : "false");
  }
  const isBusy = () => { const submit = $("#submit"); return !!(submit && submit.disabled); };

  // Move focus into the results (their heading has tabindex=-1) and scroll them into view, unless the user
  // has since put the focus somewhere else on the page (typing the next claim, say).
  function focusResults(target, scrollTarget) {
    if (!target) return;
    const active = document.activeElement;
    const free = !active || active === document.body || active.id === "main" || !active.isConnected ||
                 active.closest("#run-area") || active.id === "submit";
    if (!free) return;
    const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    target.focus({ preventScroll: true });
    (scrollTarget || target).scrollIntoView({ block: "start", behavior: still ? "auto" : "smooth" });
  }

  // ---- the form --------------------------------------------------------------------------------

  function initForm() {
    const form = $("#check-form");
    if (!form) return;
    const claim = $("#claim"), count = $("#claim-count"), pipeline = $("#pipeline"), qa = $("#qa");
    const qaField = $("#qa-field"), qaDesc = $("#qa-desc"), pipeDesc = $("#pipeline-desc");
    const imageField = $("#image-field"), errorBox = $("#form-error"), submit = $("#submit");
    const question = $("#question"), answer = $("#answer");
    const questionCount = $("#question-count"), answerCount = $("#answer-count");
    const reuse = $("#reuse-images");  // a reopened run's images, sent again unless others are chosen
    const imageInput = $("#image"), dateInput = $("#date"), imageList = $("#image-list");
    const max = catalog.max_claim_chars || 2000;
    const mode = () => (form.querySelector("input[name=mode]:checked") || { value: "claim" }).value;

    // Claim check or answer check: show that mode's fields (the hidden ones are disabled, so they are
    // neither required nor sent), and name the button after it.
    function updateMode() {
      const answerMode = mode() === "answer";
      showError("");  // an error about the other mode's input no longer applies
      errorBox.dataset.images = "";
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
        showImages(false);
      } else {
        updatePipeline();
      }
    }

    // Text over a limit is never cut: the count says how far over it is, and submitting says so.
    const maxAnswer = catalog.max_answer_chars || 10000;
    const limits = () => (mode() === "answer"
      ? [[question, "question", max], [answer, "answer", maxAnswer]] : [[claim, "claim", max]]);
    function lengthProblem() {
      for (const [field, what, limit] of limits()) {
        const n = field.value.length;
        if (n > limit) {
          return [field, `The ${what} has ${n} characters; the limit is ${limit}: shorten it by ${n - limit} ` +
                         "characters."];
        }
      }
      return null;
    }
    function countText(field, limit, node) {
      const n = field.value.length;
      node.textContent = n > limit ? `${n} / ${limit} characters: ${n - limit} over the limit`
                                   : `${n} / ${limit} characters`;
      node.classList.toggle("over", n > limit);
    }
    function updateCount() {
      countText(claim, max, count);
      if (questionCount) countText(question, max, questionCount);
      if (answerCount) countText(answer, maxAnswer, answerCount);
      if (errorBox.dataset.length && !lengthProblem()) {  // the text that was too long is short enough now
        errorBox.dataset.length = "";
        showError("");
      }
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
      // Images and the claim date: only for pipelines that look at images (DEFAME).
      showImages(info.accepts_images);
    }
    function showImages(on) {
      imageField.hidden = !on;
      imageInput.disabled = !on;
      dateInput.disabled = !on;
      if (!on && errorBox.dataset.images) {  // a problem with images that are no longer sent
        errorBox.dataset.images = "";
        showError("");
      } else if (on && imageInput.files && imageInput.files.length) {
        updateImages();
      }
    }

    // The chosen images, checked here first (the server checks them again, by their content): each one
    // listed with its size, and a message naming the one that is too large or not an image.
    const MB = 1e6;
    const size = (n) => (n >= MB ? `${(n / MB).toFixed(1)} MB` : `${(n / 1e3).toFixed(1)} kB`);
    const maxImages = catalog.max_images || 0, maxBytes = catalog.max_image_bytes || 10 * MB;
    const types = catalog.image_types || ["image/jpeg", "image/png", "image/gif", "image/webp"];
    function imageProblem() {
      const files = Array.from(imageInput.files || []);
      if (files.length > maxImages) {
        return maxImages ? `You chose ${files.length} images; at most ${maxImages} can go with a check.`
                         : "This server takes no images.";
      }
      for (const f of files) {
        if (f.size === 0) return `${f.name} is empty.`;
        if (f.size > maxBytes) {
          return `${f.name} is ${size(f.size)}; the limit is ${size(maxBytes)}: ` +
                 "choose a smaller or more compressed image.";
        }
        if (f.type && !types.includes(f.type)) return `${f.name} is not a JPEG, PNG, GIF or WebP image.`;
      }
      return "";
    }
    function updateImages() {
      const files = Array.from(imageInput.files || []);
      if (files.length && reuse && reuse.isConnected) reuse.remove();  // the chosen images replace the run's
      imageList.replaceChildren(...files.map((f) => el("li", null, f.name, " ",
        el("span", { class: "hint" }, size(f.size)))));
      const problem = imageProblem();
      errorBox.dataset.images = problem ? "1" : "";
      showError(problem);
    }
    function readBase64(file) {
      return new Promise((resolve, reject) => {
        const r = new FileReader();
        r.onload = () => resolve(String(r.result).slice(String(r.result).indexOf(",") + 1));
        r.onerror = () => reject(new Error(`could not read ${file.name}`));
        r.readAsDataURL(file);
      });
    }
    function showError(text) {
      errorBox.textContent = text;
      errorBox.hidden = !text;
    }

    for (const r of form.querySelectorAll("input[name=mode]")) r.addEventListener("change", updateMode);
    claim.addEventListener("input", updateCount);
    question.addEventListener("input", updateCount);
    answer.addEventListener("input", updateCount);
    if (reuse) {
      const drop = $("#reuse-drop", reuse);
      drop.hidden = false;
      drop.addEventListener("click", () => {
        reuse.remove();
        imageInput.focus();
      });
    }
    pipeline.addEventListener("change", updatePipeline);
    imageInput.addEventListener("change", updateImages);
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
      if (isBusy()) return;  // a run is starting or streaming: no duplicate
      showError("");
      errorBox.dataset.length = "";
      const answerMode = mode() === "answer";
      const tooLong = lengthProblem();
      if (tooLong) {
        errorBox.dataset.length = "1";
        showError(tooLong[1]);
        tooLong[0].focus();
        return;
      }
      const body = answerMode
        ? { question: question.value, answer: answer.value, pipeline: "answer-check", model: $("#model").value }
        : { claim: claim.value, pipeline: pipeline.value, model: $("#model").value };
      const info = pipelineInfo(body.pipeline);
      if (!answerMode && info && info.qa === "choice") body.qa = qa.value;
      const withImages = !answerMode && !imageInput.disabled;
      if (withImages) {
        const problem = imageProblem();
        if (problem) {
          showError(problem);
          imageInput.focus();
          return;
        }
        if (dateInput.value) body.date = dateInput.value;
      }
      setBusy(true);
      let started = false;
      try {
        if (withImages && imageInput.files.length) {
          // the file's own bytes: the server reads the type from the content, not from the file name
          body.images = await Promise.all(Array.from(imageInput.files).map(
            async (f) => ({ data: await readBase64(f), filename: f.name })));
        } else if (withImages && reuse && reuse.isConnected) {
          // the reopened run's images, as stored on this server
          body.images = await Promise.all(Array.from(reuse.querySelectorAll("img[data-url]")).map(async (img) => {
            const resp = await fetch(img.dataset.url, { credentials: "same-origin" });
            if (!resp.ok) throw new Error(`image ${img.dataset.index} of that run is gone (${resp.status})`);
            return { data: await readBase64(await resp.blob()), filename: img.dataset.filename || undefined };
          }));
        }
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
          const code = data.error || "";
          (answerMode ? (/answer/.test(code) ? answer : question)
            : /^image|images/.test(code) && withImages ? imageInput
            : code === "invalid_date" && withImages ? dateInput : claim).focus();
          return;
        }
        history.pushState({ run: data.id }, "", `/checks/${data.id}`);
        const panel = livePanel(data.id, body, info, data);
        const area = $("#run-area");
        area.replaceChildren(panel);
        started = true;  // the button stays off until the run's stream ends (attach)
        attach(panel);
        focusResults($("#run-h", panel), panel);
        refreshHistory(data.id);
      } catch (e) {
        showError(`Could not reach the server: ${e.message}`);
      } finally {
        if (!started) setBusy(false);
      }
    });
  }

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
          el("span", { class: "hint" }, `<image:${im.index}>${im.filename ? ` ${im.filename}` : ""} · ` +
                                        `${im.width}×${im.height}`)))) : null);
  }

  function livePanel(id, body, info, accepted) {
    const qaName = info && info.qa === "choice" ? body.qa : info && info.qa;
    const meta = [body.pipeline, qaName ? `QA: ${qaName}` : null, body.model].filter(Boolean).join(" · ");
    const title = body.pipeline === "answer-check" ? body.question : body.claim;
    return el("section", { class: "card run", id: "run", "data-run-id": id, "data-status": "queued",
                           "data-live": "1", "aria-labelledby": "run-h" },
      el("h2", { id: "run-h", class: "run-claim", tabindex: "-1" }, title.trim().split(/\s+/).join(" ")),
      el("p", { class: "run-meta" }, meta),
      claimExtra(accepted || {}),
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
    } else if (DEFAME.has(st)) {
      item = defameStep(s, state);
      if (item === undefined) return null;  // a summary: it went into its tool call's card
    } else {
      const data = Object.assign({}, s);
      delete data.stage; delete data.t;
      item = note("other", st, el("code", null, JSON.stringify(data)));
    }
    if (item) list.append(item);
    return item;
  }

  // ---- DEFAME's steps (as views.defame_item and templates/steps.html) -------------------------------

  const DEFAME = new Set(["images", "plan", "action", "summary", "develop", "judge", "justify"]);
  const httpUrl = (u) => (typeof u === "string" && /^https?:\/\//i.test(u) ? u : null);
  const link = (title, href) => (href ? el("a", { href, rel: "noopener noreferrer nofollow" }, title) : title);
  const labelClass = (l) => ({ Supported: "supported", Refuted: "refuted" })[l] || "other";
  const notRelevant = () => el("span", { class: "badge b-muted" }, "not relevant");

  function resultRow(r) {
    const title = el("p", { class: "r-title" }, link(r.source || r.url || "result", httpUrl(r.url)),
                     r.date ? " " : null, r.date ? el("span", { class: "hint" }, `(${r.date})`) : null);
    const li = el("li", { class: "result" }, title,
                  r.text ? el("details", { class: "r-text" }, el("summary", null, "Source text"), el("p", null, r.text))
                         : null);
    return { url: r.url || null, summarized: false, li, title };
  }

  // The next result of the call still without a summary gets this one (the summarizer reads them in order).
  function attachSummary(card, s) {
    const r = card.results.find((x) => !x.summarized && (!s.url || !x.url || x.url === s.url));
    if (!r) return false;
    r.summarized = true;
    if (s.summary) {
      r.title.after(el("p", { class: "r-sum" }, key("Summary"), " ", s.summary));
    } else {
      r.li.classList.add("irrelevant");
      r.title.append(" ", notRelevant());
    }
    return true;
  }

  function defameStep(s, state) {
    const st = s.stage;
    if (st === "images") {
      return note("images", "Claim images", (s.refs || []).join(", "), !s.model_sees_images
        ? el("span", { class: "hint" },
             " (the model reads text only: it knows the images through the tools’ findings)")
        : null);
    }
    if (st === "plan") {
      const head = el("div", { class: "step-head" }, el("span", { class: "depth" }, `Round ${s.round} · Plan`));
      if (s.fallback) {
        head.append(" ", el("span", { class: "badge b-dropped" }, "no usable action: searched the claim itself"));
      }
      if (s.static) head.append(" ", el("span", { class: "badge b-muted" }, "static: every tool once"));
      const actions = s.actions || [];
      const unavailable = s.round === 1 ? Object.entries(s.unavailable || {}) : [];
      state.status = actions.length ? `Round ${s.round}: running ${actions.join(", ")}`
                                    : `Round ${s.round}: no new action`;
      return el("li", { class: "step plan", "data-round": s.round }, head,
        actions.length ? el("ul", { class: "acts" }, ...actions.map((a) => el("li", null, el("code", null, a))))
                       : el("p", { class: "hint" }, `No new action${s.note ? `: ${s.note}` : ""}`),
        (s.rejected || []).length ? el("p", { class: "hint" }, `Not run: ${s.rejected.join("; ")}`) : null,
        unavailable.length ? el("p", { class: "hint" },
          `Unavailable: ${unavailable.map(([n, why]) => `${n} (${why})`).join("; ")}`) : null);
    }
    if (st === "action") {
      const head = el("div", { class: "step-head" }, el("span", { class: "depth" }, `Round ${s.round}`), " ",
                      el("code", { class: "act" }, s.action || ""));
      if (s.error) head.append(" ", el("span", { class: "badge b-dropped" }, "failed"));
      const results = (s.results || []).map(resultRow);
      state.tools[`${s.round}|${s.action}`] = { results };
      state.status = `Round ${s.round}: ${s.action} ${s.error ? "failed" : `found ${results.length} result(s)`}`;
      return el("li", { class: `step tool${s.error ? " failed" : ""}`, "data-round": s.round }, head,
        s.error ? el("p", { class: "warn-text" }, s.error) : null,
        ...(s.notes || []).map((n) => el("p", { class: "hint" }, n)),
        results.length ? el("ol", { class: "results" }, ...results.map((r) => r.li))
                       : (s.error ? null : el("p", { class: "hint" }, "No results.")));
    }
    if (st === "summary") {
      state.status = `Round ${s.round}: reading the results`;
      const card = state.tools[`${s.round}|${s.action}`];
      if (card && attachSummary(card, s)) return undefined;
      return note("summary", "Summary", link(s.source || s.url || "result", httpUrl(s.url)), ": ",
                  s.summary ? s.summary : notRelevant());
    }
    if (st === "develop") {
      state.status = `Round ${s.round}: judging`;
      return note("develop", `Reasoning · round ${s.round}`, s.text || "");
    }
    if (st === "judge") {
      state.status = s.final ? "Writing the justification…"
                             : `Round ${s.round}: not enough to decide, planning again`;
      return note("judge", `Judgement · round ${s.round}`,
                  el("span", { class: `badge label-${labelClass(s.label)}` }, s.label || ""), conf(s.confidence),
                  s.findings ? el("p", { class: "findings" }, s.findings) : null,
                  s.final ? null : el("p", { class: "hint" }, "Not enough to decide yet: planning another round."));
    }
    // justify: the text, and its sources (written as Markdown links) as links
    const sources = Array.from(new Set(s.sources || [])).map((x) => {
      const m = /^\[(.*)\]\((\S+)\)$/.exec(String(x).trim());
      return m ? link(m[1], httpUrl(m[2])) : String(x);
    });
    state.status = "Finishing…";
    const hint = sources.length ? el("p", { class: "hint" }, "Sources: ") : null;
    sources.forEach((x, i) => hint.append(...(i ? [", ", x] : [x])));
    return note("justify", "Justification", ...linkParts(s.text || ""), hint);
  }

  // The model's Markdown links [title](http...) as links, the rest as text (as views.link_parts).
  function linkParts(text) {
    const out = [];
    const re = /\[([^\[\]\n]{1,300})\]\((https?:\/\/[^\s()<>]{1,2000})\)/g;
    let pos = 0, m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > pos) out.push(text.slice(pos, m.index));
      out.push(link(m[1], m[2]));
      pos = m.index + m[0].length;
    }
    if (pos < text.length) out.push(text.slice(pos));
    return out;
  }

  function attach(panel) {
    const id = panel.dataset.runId;
    const list = $("#steps", panel), status = $("#run-status", panel);
    const state = { card: null, tools: {}, calls: 0, status: "Running…" };
    bindDelete(panel);
    setBusy(true);
    const source = new EventSource(`/api/checks/${id}/events`);
    source.veracityPanel = panel;
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
      live.source = null;
      setBusy(false);
      const d = JSON.parse(e.data);
      if (d.status === "deleted") {
        setStatus("failed", "This run was deleted.");
        return;
      }
      setStatus(d.status === "done" ? "done" : d.status, d.status === "done" ? "Finished" : `${d.status}: ${d.error || ""}`);
      const fresh = await swapPanel(panel, id);
      if (fresh) {  // the verdict (or what went wrong) in view, with the focus, unless the user is elsewhere
        const target = $("#verdict-h", fresh) || $("#run-h", fresh);
        focusResults(target, $(".verdict", fresh) || $(".failure", fresh) || fresh);
      }
      refreshHistory(id);
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
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
