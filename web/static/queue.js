// The queue's filters start folded on a narrow screen, so the first entry is on the first screen.
(function () {
  var filters = document.getElementById("filters");
  if (filters && window.matchMedia("(max-width: 900px)").matches) {
    filters.removeAttribute("open");
  }
})();
