// duetime's dashboard: draws the charts of the page, again after htmx swaps a region in.
// A chart is <div class="chart" data-x="[epoch s, ...]" data-series="{name: [y, ...]}">.
(function () {
  "use strict";
  const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"];

  function draw(el) {
    if (typeof uPlot === "undefined") return;
    const x = JSON.parse(el.dataset.x || "[]");
    const series = JSON.parse(el.dataset.series || "{}");
    const names = Object.keys(series);
    el.replaceChildren();
    if (!x.length || !names.length) {
      el.textContent = "Nothing counted in the last hour.";
      el.classList.add("empty");
      return;
    }
    const opts = {
      width: Math.max(el.clientWidth, 320),
      height: 180,
      // Times in UTC, as the tables show them.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
      // Points shown: a minute with data between empty minutes (null) is still drawn.
      series: [{}].concat(names.map((name, i) => ({
        label: name, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: false,
        points: { show: true, size: 4 },
      }))),
      axes: [{}, { label: el.dataset.unit || "" }],
      legend: { live: false },
    };
    new uPlot(opts, [x].concat(names.map((n) => series[n])), el);
    el.dataset.drawn = "1";
  }

  function drawAll(root) {
    root.querySelectorAll(".chart[data-series]").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", () => drawAll(document));
  document.addEventListener("htmx:afterSwap", (event) => drawAll(event.detail.target.parentNode || document));
})();
