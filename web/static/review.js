// The archived page view (docs/ui.md): pick a figure on the inert page and the "add entry" form opens
// with the reader's best guesses. A selection that covers one figure picks it; a click on a figure not
// read picks it. Keys: n / p next / previous figure not read, Enter add it, a add the selected figure,
// Esc close the form, Ctrl+Enter save. Served from the app's origin under its CSP: the archived page's
// own script never runs here (the page is rendered inert by the server).
(function () {
  "use strict";
  var page = document.getElementById("archived-page");
  var form = document.getElementById("add-form");
  var status = document.getElementById("pick-status");
  var dataEl = document.getElementById("figures-data");
  if (!page || !form || !dataEl) { return; }
  var figures = JSON.parse(dataEl.textContent || "[]");
  var byN = {};
  figures.forEach(function (f) { byN[f.n] = f; });
  var unread = Array.prototype.slice.call(page.querySelectorAll("mark.fig-unread"));
  var FIELDS = ["model", "hardware", "gpu_count", "engine", "engine_version", "quantization", "phase", "scope",
                "concurrency", "test", "draft_tokens", "spec_method", "steady_low", "steady_high", "prompt"];

  function say(text) { status.textContent = text; }

  function pick(mark) {
    // a plain figure's data is its mark's own: its text and its position in the decoded text
    var f = byN[mark.getAttribute("data-n")] || {status: "plain", exact: mark.textContent,
      start: mark.getAttribute("data-start"), end: mark.getAttribute("data-end")};
    Array.prototype.forEach.call(page.querySelectorAll("mark.picked"), function (m) { m.classList.remove("picked"); });
    mark.classList.add("picked");
    if (f.status === "read" && f.entry) {
      say("The reader already reads " + f.exact + " as entry " + f.entry + "; correct it on its entry page (/entries/" + f.entry + ").");
      form.hidden = true;
      return;
    }
    document.getElementById("add-start").value = f.start;
    document.getElementById("add-end").value = f.end;
    document.getElementById("add-exact").textContent = f.exact;
    var guess = f.guess || {};
    FIELDS.forEach(function (name) {
      var input = document.getElementById("add-" + name);
      if (input) { input.value = guess[name] === undefined || guess[name] === null ? "" : String(guess[name]); }
    });
    form.hidden = false;
    say("Adding " + f.exact + (guess._from ? " (guesses from entry " + guess._from + ")" : "") + ".");
    document.getElementById("add-model").focus();
  }

  function selected() {
    var sel = window.getSelection();
    if (!sel || sel.isCollapsed || !sel.rangeCount) { return null; }
    var range = sel.getRangeAt(0);
    if (!page.contains(range.commonAncestorContainer)) { return null; }
    var hits = Array.prototype.filter.call(page.querySelectorAll("mark.fig"), function (m) {
      return range.intersectsNode(m);
    });
    if (hits.length !== 1) {
      say(hits.length ? "The selection holds " + hits.length + " figures: select just one." : "The selection holds no figure: select a number.");
      return null;
    }
    return hits[0];
  }

  page.addEventListener("mouseup", function () {
    var m = selected();
    if (m) { pick(m); }
  });
  page.addEventListener("click", function (ev) {
    var m = ev.target.closest && ev.target.closest("mark.fig");
    var sel = window.getSelection();
    if (m && (!sel || sel.isCollapsed)) { pick(m); }
  });
  document.addEventListener("keydown", function (ev) {
    var t = ev.target;
    var typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT");
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && t && t.form === form) {
      ev.preventDefault();
      if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
      return;
    }
    if (ev.key === "Escape" && !form.hidden) {
      form.hidden = true;
      say("Form closed.");
      var picked = page.querySelector("mark.picked");
      if (picked && picked.tabIndex >= 0) { picked.focus(); }
      return;
    }
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    if (ev.key === "Enter" && t && t.classList && t.classList.contains("fig")) {
      ev.preventDefault();
      pick(t);
    } else if (ev.key === "n" || ev.key === "p") {
      if (!unread.length) { say("No figure left that the reader did not read."); return; }
      var at = unread.indexOf(document.activeElement);
      var next = ev.key === "n" ? (at + 1) % unread.length : (at <= 0 ? unread.length - 1 : at - 1);
      ev.preventDefault();
      unread[next].scrollIntoView({block: "center"});
      unread[next].focus();
    } else if (ev.key === "a") {
      var m = selected();
      if (m) { ev.preventDefault(); pick(m); }
    }
  });
  var notice = document.getElementById("added-notice");
  if (notice) { notice.focus(); }
})();
