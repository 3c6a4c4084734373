// veracity's page: the form, and the live view of a run over Server-Sent Events. This script starts them once the
// page is parsed; templates/base.html loads the parts before it, in order: dom.js (markup and focus helpers),
// items.js (a view item's markup, as templates/steps.html draws it), live.js (a run followed live, the history,
// deleting a run) and form.js (the form).
(function (ns) {
  "use strict";

  const { $, initForm, localTimes, markCurrent, attach, bindDelete } = ns;

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
})(window.veracity = window.veracity || {});
