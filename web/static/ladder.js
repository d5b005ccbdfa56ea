/* Draws the draft-width ladder from the JSON in #ladder-data with the vendored Chart.js.
   The stated steady state is drawn as a shaded band (two flat datasets filled between them).
   The chart instance is kept on window.caveatLadderChart for tests and the console. */
(function () {
  "use strict";
  var holder = document.getElementById("ladder-data");
  var canvas = document.getElementById("ladder-chart");
  if (!holder || !canvas || typeof Chart === "undefined") { return; }
  var data = JSON.parse(holder.textContent);
  var points = data.points || [];
  if (!points.length) { return; }
  var xs = points.map(function (p) { return p.x; });
  var minX = Math.min.apply(null, xs), maxX = Math.max.apply(null, xs);
  var pad = Math.max(1, Math.round((maxX - minX) * 0.05));
  var datasets = [];
  if (data.band) {
    var edge = function (v) { return [{ x: Math.max(0, minX - pad), y: v }, { x: maxX + pad, y: v }]; };
    datasets.push({ label: "Stated steady state (low)", data: edge(data.band.low), borderColor: "#2f7d4f",
      borderWidth: 1, pointRadius: 0, fill: false, showLine: true, order: 3 });
    datasets.push({ label: "Stated steady state " + data.band.low + "–" + data.band.high + " tok/s",
      data: edge(data.band.high), borderColor: "#2f7d4f", borderWidth: 1, pointRadius: 0,
      backgroundColor: "rgba(47, 125, 79, 0.22)", fill: "-1", showLine: true, order: 2 });
  }
  datasets.push({
    label: "Headline tok/s by draft width", data: points.map(function (p) { return { x: p.x, y: p.y }; }),
    borderColor: "#8a1c1c", backgroundColor: points.map(function (p) { return p.current ? "#d62828" : "#8a1c1c"; }),
    pointRadius: points.map(function (p) { return p.current ? 7 : 4; }), showLine: true, borderWidth: 2,
    tension: 0, order: 1
  });
  var reduce = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  window.caveatLadderChart = new Chart(canvas, {
    type: "scatter",
    data: { datasets: datasets },
    options: {
      responsive: true, maintainAspectRatio: false, animation: reduce ? false : { duration: 300 },
      scales: {
        x: { type: "linear", title: { display: true, text: "Draft tokens" }, min: Math.max(0, minX - pad), max: maxX + pad },
        y: { title: { display: true, text: "Tokens per second" }, beginAtZero: true }
      },
      plugins: {
        legend: { labels: { filter: function (item) { return item.text.indexOf("(low)") === -1; } } },
        tooltip: { callbacks: { label: function (ctx) { return ctx.dataset.label + ": " + ctx.parsed.y + " tok/s at draft " + ctx.parsed.x; } } }
      }
    }
  });
}());
