// The form: claim check, text check or answer check, its limits checked as the user types, and the run it starts
// (drawn live by live.js).
(function (ns) {
  "use strict";

  const { $, el, setBusy, isBusy, focusResults, livePanel, attach, refreshHistory } = ns;
  const dataEl = $("#catalog-data");
  const catalog = dataEl ? JSON.parse(dataEl.textContent) : { pipelines: [], qa_modules: [] };
  const pipelineInfo = (name) => catalog.pipelines.find((p) => p.name === name);

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
      evidence.disabled = answerMode;  // a claim or a text is checked against a source given; an answer, the index
      $("#evidence-field").hidden = answerMode;
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
      const given = mode() !== "answer" && evidence.value.trim() !== "";
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
      if (!answerMode && evidence.value.trim()) body.evidence = givenPassages();
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

  Object.assign(ns, { initForm });
})(window.veracity = window.veracity || {});
