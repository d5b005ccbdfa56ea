// The entry page's correction forms, keyboard first (docs/ui.md): c = correct (the first field),
// x = reject (its reason), Ctrl+Enter = save the form being filled. After a save or a refusal, the
// notice takes the focus so a screen reader says what happened.
(function () {
  "use strict";
  function typing(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
  }
  var notice = document.getElementById("correction-problem") || document.getElementById("corrected-notice");
  if (notice) { notice.focus(); }
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      var form = ev.target && ev.target.form;
      if (form && (form.id === "correct-form" || form.id === "reject-form")) {
        ev.preventDefault();
        var button = form.querySelector("button[type=submit]");
        if (form.requestSubmit) { form.requestSubmit(button); } else { form.submit(); }
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target)) { return; }
    var target = null;
    if (ev.key === "c") { target = document.querySelector("#correct-form input:not([type=hidden]), #correct-form select"); }
    if (ev.key === "x") { target = document.getElementById("reject-why"); }
    if (target) {
      ev.preventDefault();
      target.scrollIntoView({block: "center"});
      target.focus();
    }
  });
})();
