// One view item of a run as markup, with the same markup as templates/steps.html. The server folds the run's steps
// into view items (veracity.steps.view_items); this script only draws them (`drawItem`).
(function (ns) {
  "use strict";

  const { el, conf, key } = ns;
  const REASONING = { reasoner: "Reasoner", cot: "Chain of thought", direct: "Direct answer",
                      evidence_verifier: "Evidence verifier" };

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

  // a published fact-check of the claim (as templates/steps.html's macro factcheck)
  function factcheckBlock(m) {
    const safeUrl = m.url && /^https?:\/\//i.test(m.url);
    const who = m.publisher || "publisher not given";
    return el("blockquote", { class: "ev factcheck" },
      el("p", null, m.rating ? el("span", { class: "badge b-rating" }, m.rating) : null, m.rating ? " " : null,
         `“${m.claim || ""}”`),
      el("footer", { class: "src" }, safeUrl ? el("a", { href: m.url, rel: "noopener noreferrer nofollow" }, who) : who,
         m.date ? " " : null, m.date ? el("span", { class: "when" }, `(${m.date})`) : null,
         m.probability !== undefined && m.probability !== null
           ? el("span", { class: "conf" }, ` same claim: ${Number(m.probability).toFixed(2)}`) : null));
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
        const published = (it.factchecks || []).map(factcheckBlock);
        const body = el("div", { class: "leaf-body" },
          published.length ? el("p", null, key("Published fact-checks")) : null, ...published,
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
      case "published_factchecks":  // what fact-checkers already published on the claim, before the check's steps
        return el("li", { class: `step published-factchecks${it.found ? " found" : ""}` },
          el("div", { class: "step-head" }, el("span", { class: "depth" }, "Published fact-checks"), " ",
             el("span", { class: "q" }, it.summary || "")),
          ...(it.matches || []).map(factcheckBlock));
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
                    it.stage === "evidence_verifier" && it.rationale ? el("p", { class: "hint" }, it.rationale) : null,
                    it.stage === "evidence_verifier" && (it.evidence || []).length
                      ? el("div", { class: "evidence" }, ...it.evidence.map(evidenceBlock)) : null);
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

  Object.assign(ns, { drawItem });
})(window.veracity = window.veracity || {});
