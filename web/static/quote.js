// The quote citation page: bring the highlighted quote into view when it is off the first screen, as on
// a phone where it sits in a wide table that scrolls sideways in its own box (docs/ui.md). The quote the
// address names (#quote-3) wins; otherwise the first highlight. Nothing moves when it is already in view.
(function () {
  "use strict";
  var id = decodeURIComponent(location.hash.slice(1));
  var target = (id && document.getElementById(id)) || document.getElementById("quote");
  if (!target || target.tagName !== "MARK") {
    return;
  }
  function inView(el) {
    var r = el.getBoundingClientRect();
    return r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight &&
      r.right <= document.documentElement.clientWidth;
  }
  function show() {
    if (!inView(target)) {
      target.scrollIntoView({block: "center", inline: "center"});
    }
  }
  if (document.readyState === "complete") {
    show();
  } else {
    window.addEventListener("load", show);
  }
})();
