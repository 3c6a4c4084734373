// veracity's page: the form, and the live view of a run over Server-Sent Events.
// The server folds the run's steps into view items (veracity.steps.view_items) and sends, with each step, a
// `view` event with the items it added or changed; this script only draws them, with the same markup as
// templates/steps.html (a checked text's items draw the text itself, its passages coloured by their claims'
// outcomes). When the run ends, the server-rendered panel replaces the live one.
(function () {
  "use strict";

  const $ = (sel, root) => (root || document).querySelector(sel);
  const dataEl = $("#catalog-data");
  const catalog = dataEl ? JSON.parse(dataEl.textContent) : { pipelines: [], qa_modules: [] };
  const REASONING = { reasoner: "Reasoner", cot: "Chain of thought", direct: "Direct answer",
                      evidence_verifier: "Evidence verifier" };

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

  // ---- the form --------------------------------------------------------------------------------

  function initForm() {
    const form = $("#check-form");
    if (!form) return;
    const claim = $("#claim"), count = $("#claim-count"), pipeline = $("#pipeline"), qa = $("#qa");
    const qaField = $("#qa-field"), qaDesc = $("#qa-desc"), pipeDesc = $("#pipeline-desc");
    const imageField = $("#image-field"), errorBox = $("#form-error"), submit = $("#submit");
    const question = $("#question"), answer = $("#answer");
    const questionCount = $("#question-count"), answerCount = $("#answer-count");
    const text = $("#text"), textFile = $("#text-file"), textCount = $("#text-count");
    const extract = $("#extract"), maxClaims = $("#max-claims");
    const texts = catalog.texts || { max_bytes: 10e6, max_claims: 100 };
    const reuse = $("#reuse-images");  // a reopened run's images, sent again unless others are chosen
    const imageInput = $("#image"), dateInput = $("#date"), imageList = $("#image-list"), evidence = $("#evidence");
    const max = catalog.max_claim_chars || 2000;
    const mode = () => (form.querySelector("input[name=mode]:checked") || { value: "claim" }).value;

    // Claim check, text check or answer check: show that mode's fields (the hidden ones are disabled, so they
    // are neither required nor sent), and name the button after it.
    const HEADS = { claim: ["Check a claim", "Check claim"], text: ["Check a text", "Check text"],
                    answer: ["Check an answer", "Check answer"] };
    function updateMode() {
      const m = mode(), answerMode = m === "answer", textMode = m === "text";
      showError("");  // an error about the other mode's input no longer applies
      errorBox.dataset.images = "";
      $("#claim-fields").hidden = m !== "claim";
      $("#answer-fields").hidden = !answerMode;
      $("#text-fields").hidden = !textMode;
      $("#pipeline-field").hidden = answerMode;
      claim.disabled = m !== "claim";
      evidence.disabled = m !== "claim";
      question.disabled = !answerMode;
      answer.disabled = !answerMode;
      for (const f of [textFile, extract, maxClaims]) f.disabled = !textMode;
      text.disabled = !textMode || !!(textFile.files && textFile.files.length);
      pipeline.disabled = answerMode;
      $("#form-h").textContent = (HEADS[m] || HEADS.claim)[0];
      const picked = form.querySelector("input[name=mode]:checked");
      if (picked && picked.dataset.hint) $("#mode-hint").textContent = picked.dataset.hint;  // the chosen mode's
      submit.textContent = (HEADS[m] || HEADS.claim)[1];
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
    const MB = 1e6;
    const size = (n) => (n >= MB ? `${(n / MB).toFixed(1)} MB` : `${(n / 1e3).toFixed(1)} kB`);
    // A text check: the file, else the text, within the server's size limit (it counts UTF-8 bytes).
    function textProblem() {
      const file = textFile.files && textFile.files[0];
      if (file) {
        if (file.size === 0) return [textFile, `${file.name} is empty.`];
        return file.size > texts.max_bytes
          ? [textFile, `${file.name} is ${size(file.size)}; the limit is ${size(texts.max_bytes)}: check a part of it.`]
          : null;
      }
      const n = new TextEncoder().encode(text.value).length;
      if (!text.value.trim()) return [text, "The text is empty: paste the text to check, or upload a file."];
      return n > texts.max_bytes ? [text, `The text has ${size(n)}; the limit is ${size(texts.max_bytes)}: ` +
                                          "check a part of it."] : null;
    }
    function lengthProblem() {
      if (mode() === "text") return textProblem();
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
      if (textCount) {  // the limit counts UTF-8 bytes, as the server does
        const n = new TextEncoder().encode(text.value).length, over = n > texts.max_bytes;
        textCount.textContent = `${text.value.length} characters` +
          (over ? `: ${size(n)}, ${size(n - texts.max_bytes)} over the limit of ${size(texts.max_bytes)}` : "");
        textCount.classList.toggle("over", over);
      }
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
        followSource();  // back from a pipeline with its own QA module: the one that follows the source
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
      // Images and the claim date: only for claim checks by pipelines that look at images (DEFAME).
      showImages(info.accepts_images && mode() === "claim");
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

    // Pipelines and QA modules that read documents: on a server without an index, usable with a source given above.
    // Until the user picks a QA module, QACheck's questions are answered from a source given (retriever-reader), and
    // by the server's default without one (the rule of pipeline.qa_for; a reopened run's own choice stays).
    const needsIndex = Array.from(form.querySelectorAll("option[data-needs-index]"));
    const defaultQa = (catalog.defaults || {}).qa;
    let qaChosen = qa.value !== defaultQa;
    function updateEvidence() {
      const given = mode() === "claim" && evidence.value.trim() !== "";
      for (const o of needsIndex) o.disabled = !given;
      followSource();
    }
    function followSource() {
      if (qaChosen || qa.disabled) return;
      qa.value = mode() === "claim" && evidence.value.trim() !== "" ? "retriever-reader" : defaultQa;
      updateQaDesc();
    }
    // a reopened run's several passages, kept beside the box: sent again as they were while the box shows them
    // unchanged, else the box is one passage (pages.given_passages, the same rule for the form without JavaScript)
    const keptInput = $("#evidence-passages"), keptHint = $("#evidence-passages-hint");
    const kept = keptInput ? JSON.parse(keptInput.value) : null;
    const unix = (s) => s.replace(/\r\n/g, "\n");
    const keptAsShown = () => !!kept && unix(kept.join("\n\n")) === unix(evidence.value);
    function givenPassages() { return keptAsShown() ? kept : [evidence.value]; }
    const keptSaid = keptHint ? keptHint.textContent : "";  // the page's own words while the box is unchanged
    if (keptHint) evidence.addEventListener("input", () => {
      keptHint.textContent = keptAsShown() ? keptSaid : "Edited: the box is sent as one passage.";
    });
    evidence.addEventListener("input", updateEvidence);
    for (const r of form.querySelectorAll("input[name=mode]")) r.addEventListener("change", updateMode);
    for (const r of form.querySelectorAll("input[name=mode]")) r.addEventListener("change", updateEvidence);
    claim.addEventListener("input", updateCount);
    text.addEventListener("input", updateCount);
    textFile.addEventListener("change", () => {  // a chosen file is checked instead of the text box
      text.disabled = !!(textFile.files && textFile.files.length);
      const problem = textProblem();
      showError(problem && problem[0] === textFile ? problem[1] : "");
    });
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
    qa.addEventListener("change", () => {
      qaChosen = true;
      updateQaDesc();
    });
    for (const b of document.querySelectorAll("button.example")) {
      b.addEventListener("click", () => {
        claim.value = b.dataset.claim;
        updateCount();
        claim.focus();
      });
    }
    updateCount();
    updateMode();
    updateEvidence();  // a reopened run's source, refilled: what reads it is usable again

    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (isBusy()) return;  // a run is starting or streaming: no duplicate
      showError("");
      errorBox.dataset.length = "";
      const answerMode = mode() === "answer", textMode = mode() === "text";
      const tooLong = lengthProblem();
      if (tooLong) {
        errorBox.dataset.length = "1";
        showError(tooLong[1]);
        tooLong[0].focus();
        return;
      }
      const body = answerMode
        ? { question: question.value, answer: answer.value, pipeline: "answer-check", model: $("#model").value }
        : textMode ? { pipeline: pipeline.value, model: $("#model").value, extract: extract.value }
        : { claim: claim.value, pipeline: pipeline.value, model: $("#model").value };
      if (mode() === "claim" && evidence.value.trim()) body.evidence = givenPassages();
      if (textMode && maxClaims.value) body.max_claims = Number(maxClaims.value);
      const info = pipelineInfo(body.pipeline);
      if (!answerMode && info && info.qa === "choice") body.qa = qa.value;
      const withImages = mode() === "claim" && !imageInput.disabled;
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
        if (textMode) {
          const file = textFile.files && textFile.files[0];
          if (file) body.file = { data: await readBase64(file), filename: file.name };
          else body.text = text.value;
        } else if (withImages && imageInput.files.length) {
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
        const resp = await fetch(textMode ? "/api/texts" : "/api/checks", {
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
            : textMode ? (/^file/.test(code) || body.file ? textFile : /claims/.test(code) ? maxClaims : text)
            : /^image|images/.test(code) && withImages ? imageInput
            : code === "invalid_date" && withImages ? dateInput
            : /^evidence|passages/.test(code) ? evidence : claim).focus();
          return;
        }
        history.pushState({ run: data.id }, "", `/checks/${data.id}`);
        const panel = livePanel(data.id, body, info, data, textMode);
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

  // as views.source_of names it: a passage the model recited is its memory, not a source
  function evidenceBlock(e) {
    let src = e.memory ? "the model's memory (recited, not a source)" : e.source || "evidence";
    if (e.doc_id && !e.url && e.doc_id !== src) src = `${src} (${e.doc_id})`;  // a given text's name is its id: once
    const safeUrl = e.url && /^https?:\/\//i.test(e.url);
    // a source says when it was published and read (views: steps.evidence_when); the memory is marked plainly
    return el("blockquote", { class: `ev${e.memory ? " memory" : ""}` }, el("p", null, e.text || ""),
      el("footer", { class: "src" },
         safeUrl ? el("a", { href: e.url, rel: "noopener noreferrer nofollow" }, src) : src,
         e.when ? " " : null, e.when ? el("span", { class: "when" }, `(${e.when})`) : null,
         e.license ? " " : null, e.license ? el("span", { class: "license" }, e.license) : null));
  }

  // a failed check in plain words, its technical line behind a toggle (as templates/run.html's failure)
  function failureBlock(f) {
    return el("div", { class: "failure" },
              el("p", null, key("Failed"), " ", f.message || "", f.advice ? ` ${f.advice}` : ""),
              f.details ? el("details", { class: "failure-details" }, el("summary", null, "Details"),
                             el("code", null, f.details)) : null);
  }

  function note(cls, label, ...rest) {
    return el("li", { class: `step note ${cls}` }, key(label), " ", ...rest);
  }

  // a claim image as the model's tools name it (<image:1>), in words (as views.plain_refs)
  const plainRefs = (text) => String(text).replace(/<image:(\d+)>/g, "image $1");
  const link = (title, href) => (href ? el("a", { href, rel: "noopener noreferrer nofollow" }, title) : title);
  const labelClass = (l) => ({ Supported: "supported", Refuted: "refuted" })[l] || "other";
  const notRelevant = () => el("span", { class: "badge b-muted" }, "not relevant");

  // One view item as markup (as templates/steps.html draws it). The items come folded from the server.
  function drawItem(it) {
    switch (it.kind) {
      case "text_claim": {
        // one claim of a checked text: its outcome, and on opening its evidence (or why it was not checked)
        const checked = ["supported", "refuted", "uncertain"].includes(it.outcome);
        const ev = (it.evidence || []).map(evidenceBlock);
        const body = el("div", { class: "leaf-body" },
          it.outcome === "pending" ? el("p", { class: "hint" }, "Not decided yet.")
            : it.failure ? failureBlock(it.failure)
            : it.note ? el("p", null, key(checked ? "Note" : "Not checked"), " ", it.note) : null,
          it.rationale ? el("p", null, key("Rationale"), " ", it.rationale) : null, ...ev,
          !ev.length && checked ? el("p", { class: "hint" }, "No evidence: the pipeline decided without passages.")
                                : null);
        const summary = el("summary", null, el("span", { class: "cid" }, String(it.id)), " ",
                           el("span", { class: `badge o-${it.outcome}` }, it.outcome_label || it.outcome),
                           conf(it.confidence), " ", el("span", { class: "sent" }, it.text || ""));
        return el("li", { class: `step tclaim o-${it.outcome}`, id: `claim-${it.id}`, "data-claim": it.id },
                  el("details", null, summary, body));
      }
      case "text_summary": {
        const rows = (it.rows || []).map(([a, b]) => el("tr", null, el("th", { scope: "row" }, a), el("td", null, b)));
        const noteText = it.note ? `${it.note[0].toUpperCase()}${it.note.slice(1)}.` : null;
        return el("li", { class: "step note text-summary" },
                  el("table", { class: "summary" }, el("tbody", null, ...rows)),
                  noteText ? el("p", { class: "hint" }, noteText) : null,
                  it.stopped ? el("p", { class: "warn-text" }, `Stopped early: ${it.stopped}.`) : null);
      }
      case "qa": {
        const head = el("div", { class: "step-head" }, el("span", { class: "depth" }, `Step ${it.depth}`));
        if (it.duplicate) head.append(el("span", { class: "badge b-muted" }, "already asked: skipped"));
        else if (it.useful === true) head.append(el("span", { class: "badge b-kept" }, "validator: useful, kept"));
        else if (it.useful === false) {
          head.append(el("span", { class: "badge b-dropped" }, "validator: not useful, discarded"));
        }
        const ev = it.evidence || [];
        const text = el("div", { class: "qa-text" }, el("p", { class: "q" }, key("Question"), " ", it.question),
          it.answer === null || it.answer === undefined ? null : el("p", { class: "a" }, key("Answer"), " ", it.answer));
        const cls = `step qa${it.useful === false ? " discarded" : ""}${it.duplicate ? " duplicate" : ""}`;
        return el("li", { class: cls }, head,
          el("div", { class: `step-body${ev.length ? " two" : ""}` }, text,
             ev.length ? el("div", { class: "evidence" }, ...ev.map(evidenceBlock)) : null));
      }
      case "retrieval": {
        // passages retrieved outside a question card (the evidence-only pipelines, the baselines, LEAF's answers)
        const ev = it.results || [];
        return el("li", { class: "step retrieval" },
          el("div", { class: "step-head" }, el("span", { class: "depth" }, "Retrieved"), " ",
             el("span", { class: "q" }, it.query || "")),
          ev.length ? el("div", { class: "evidence" }, ...ev.map(evidenceBlock))
                    : el("p", { class: "hint" }, "No passage found."));
      }
      case "leaf": {
        // one sentence of the answer: a disclosure with its query, evidence and rating
        const ev = it.evidence && it.evidence.length ? it.evidence.map(evidenceBlock)
                                                     : [el("p", { class: "hint" }, "No evidence found in the index.")];
        const body = el("div", { class: "leaf-body" },
                        it.read_as ? el("p", { class: "read-as" }, key("Read as"), " ", it.read_as) : null,
                        el("p", null, key("Query"), " ", it.query || ""), ...ev,
                        it.reasoning ? el("p", null, key("Reasoning"), " ", it.reasoning) : null);
        const summary = el("summary", null, el("span", { class: "sent" }, it.sentence || ""), " ",
                           el("span", { class: `badge ${it.supported ? "b-kept" : "b-dropped"}` },
                              it.rating || "no decision"), conf(it.confidence));
        return el("li", { class: `step leaf ${it.supported ? "supported" : "unsupported"}`, "data-index": it.index },
                  el("details", null, summary, body));
      }
      case "leaf_score":
        return note("leaf-score", "LEAF score",
                    `${Number(it.score || 0).toFixed(2)} (${it.supported} of ${it.checked} sentences supported)`);
      case "leaf_note":
        return note("warn", "Note", it.note || "");
      case "verifier":
        return note("verifier", "Verifier", it.enough ? "enough to decide" : "not enough yet: ask another question",
                    conf(it.confidence));
      case "parse_failure": {
        const raw = String(it.raw || "");
        return note("warn", "Unusable model output",
                    `${it.for_stage}: “${raw.length > 120 ? raw.slice(0, 117) + "..." : raw}”; ${it.fallback || ""}`);
      }
      case "stop":
        return note("stop", "Stopped asking", it.reason);
      case "reasoning":  // the evidence verifier's line says which passage decided (a reasoner's: the verdict's)
        return note("reasoning", REASONING[it.stage] || it.stage, it.label, conf(it.confidence),
                    it.stage === "evidence_verifier" && it.rationale ? el("p", { class: "hint" }, it.rationale) : null);
      case "images":
        return note("images", "Claim images", (it.refs || []).map(plainRefs).join(", "), !it.model_sees_images
          ? el("span", { class: "hint" },
               " (the model reads text only: it knows the images through the tools’ findings)")
          : null);
      case "plan": {
        const head = el("div", { class: "step-head" }, el("span", { class: "depth" }, `Round ${it.round} · Plan`));
        if (it.fallback) {
          head.append(" ", el("span", { class: "badge b-dropped" }, "no usable action: searched the claim itself"));
        }
        if (it.static) head.append(" ", el("span", { class: "badge b-muted" }, "static: every tool once"));
        const actions = it.actions || [], unavailable = Object.entries(it.unavailable || {});
        return el("li", { class: "step plan", "data-round": it.round }, head,
          actions.length ? el("ul", { class: "acts" }, ...actions.map((a) => el("li", null, el("code", null, plainRefs(a)))))
                         : el("p", { class: "hint" }, `No new action${it.note ? `: ${it.note}` : ""}`),
          (it.rejected || []).length ? el("p", { class: "hint" }, `Not run: ${it.rejected.join("; ")}`) : null,
          unavailable.length ? el("p", { class: "hint", title: unavailable.map(([n, why]) => `${n}: ${why}`).join("; ") },
            `Not set up on this server: ${unavailable.map(([n]) => n.replace(/_/g, " ")).join(", ")}.`) : null);
      }
      case "action": {
        const head = el("div", { class: "step-head" }, el("span", { class: "depth" }, `Round ${it.round}`), " ",
                        el("code", { class: "act" }, plainRefs(it.action || "")));
        if (it.error) head.append(" ", el("span", { class: "badge b-dropped" }, "failed"));
        const results = it.results || [];
        return el("li", { class: `step tool${it.error ? " failed" : ""}`, "data-round": it.round }, head,
          it.error ? el("p", { class: "warn-text" }, it.error) : null,
          ...(it.notes || []).map((n) => el("p", { class: "hint" }, n)),
          results.length ? el("ol", { class: "results" }, ...results.map(resultRow))
                         : (it.error ? null : el("p", { class: "hint" }, "No results.")));
      }
      case "summary":  // a summary of no result shown: on its own
        return note("summary", "Summary", link(it.title, it.href), ": ", it.summary ? it.summary : notRelevant());
      case "develop":
        return note("develop", `Reasoning · round ${it.round}`, it.text || "");
      case "judge":
        return note("judge", `Judgement · round ${it.round}`,
                    el("span", { class: `badge label-${labelClass(it.label)}` }, it.label || ""), conf(it.confidence),
                    it.findings ? el("p", { class: "findings" }, it.findings) : null,
                    it.final ? null : el("p", { class: "hint" }, "Not enough to decide yet: planning another round."));
      case "justify": {
        // the text with the model's Markdown links as links, and its sources
        const sources = it.sources || [];
        const hint = sources.length ? el("p", { class: "hint" }, "Sources: ") : null;
        sources.forEach((x, i) => hint.append(...(i ? [", ", link(x.title, x.url)] : [link(x.title, x.url)])));
        return note("justify", "Justification", ...(it.parts || []).map((p) => link(p.text, p.href)), hint);
      }
      default:  // a kind without markup of its own: its stage and data, as they are
        return note("other", it.stage || it.kind, el("code", null, JSON.stringify(it.data || {})));
    }
  }

  // One result of a DEFAME tool call, with its summary once the summarizer has read it.
  function resultRow(r) {
    const irrelevant = r.summarized && !r.summary;
    const when = r.when || (r.date ? `published ${r.date}` : "");
    const title = el("p", { class: "r-title" }, link(plainRefs(r.title), r.href),
                     when ? " " : null, when ? el("span", { class: "hint when" }, `(${when})`) : null,
                     irrelevant ? " " : null, irrelevant ? notRelevant() : null);
    return el("li", { class: `result${irrelevant ? " irrelevant" : ""}` }, title,
              r.summary ? el("p", { class: "r-sum" }, key("Summary"), " ", r.summary) : null,
              r.text ? el("details", { class: "r-text" }, el("summary", null, "Source text"), el("p", null, r.text))
                     : null);
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

  // A highlighted passage of a checked text: open its claims (their evidence) and move to the first.
  document.addEventListener("click", (ev) => {
    const mark = ev.target.closest && ev.target.closest("a.mark[data-claims]");
    if (!mark) return;
    const items = mark.dataset.claims.split(" ").map((id) => document.getElementById(`claim-${id}`)).filter(Boolean);
    if (!items.length) return;
    ev.preventDefault();
    for (const li of document.querySelectorAll(".tclaim.picked")) {  // the passage opened before closes
      li.classList.remove("picked");
      const d = $("details", li);
      if (d) d.open = false;
    }
    for (const li of items) {
      li.classList.add("picked");
      const d = $("details", li);
      if (d) d.open = true;
    }
    const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    const first = $("summary", items[0]);
    if (first) first.focus({ preventScroll: true });
    items[0].scrollIntoView({ block: "nearest", behavior: still ? "auto" : "smooth" });
  });

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
