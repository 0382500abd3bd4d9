// Draws a make capacity search's curve in its report.html with uPlot, from
// the search's answer (capacity.json in <script id="capacity-data">):
// throughput and p99 against the load, one point a cell, the cells that
// failed the goal marked, the knee (the verified maximum) a dashed vertical
// line, the goal's p99 a dotted one. Every chart is listed in
// window.ltReportCharts ({id, cell, title, chart, marks}: marks are what a
// hook drew, not a series) so a browser test can read what was drawn.
(function () {
  'use strict';

  const answer = JSON.parse(document.getElementById('capacity-data').textContent);
  const charts = [];
  window.ltReportCharts = charts;
  const COLORS = { tps: '#1f77b4', p99: '#d62728', failed: '#ff7f0e', knee: '#2ca02c', goal: '#7f7f7f' };
  const isNumber = (v) => typeof v === 'number' && Number.isFinite(v);

  // The cells the search judged, by load (uPlot wants x ascending).
  const cells = answer.cells.filter((c) => c.passed !== null && isNumber(c.load)).sort((a, b) => a.load - b.load);
  const loads = cells.map((c) => c.load);

  // A hook drawing a vertical line at load x, labelled.
  function vertical(x, color, dash, text) {
    return (u) => {
      const px = u.valToPos(x, 'x', true);
      const { ctx } = u;
      ctx.save();
      ctx.strokeStyle = color;
      ctx.fillStyle = color;
      ctx.lineWidth = 2 * devicePixelRatio;
      ctx.setLineDash(dash.map((d) => d * devicePixelRatio));
      ctx.beginPath();
      ctx.moveTo(px, u.bbox.top);
      ctx.lineTo(px, u.bbox.top + u.bbox.height);
      ctx.stroke();
      ctx.font = `${12 * devicePixelRatio}px sans-serif`;
      ctx.fillText(text, px + 4 * devicePixelRatio, u.bbox.top + 14 * devicePixelRatio);
      ctx.restore();
    };
  }

  function draw(id, title, key, color, yLabel, extra) {
    const parent = document.getElementById('capacity-curve');
    const values = cells.map((c) => (isNumber(c[key]) ? c[key] : null));
    if (!parent || loads.length === 0 || !values.some(isNumber)) return;
    const box = window.ltChartBox(parent, id, title);
    const failed = cells.map((c, i) => (c.passed === false ? values[i] : null));
    const series = [
      { label: key, stroke: color, width: 2, points: { show: true, size: 7, fill: color } },
      { label: 'failed the goal', stroke: COLORS.failed, width: 0, paths: () => null,
        points: { show: true, size: 11, width: 2, fill: '#ffffff', stroke: COLORS.failed } },
    ].concat(extra.map(([s]) => s));
    const marks = [];
    const hooks = [];
    if (isNumber(answer.knee)) {
      marks.push({ label: `knee ${answer.knee}`, color: COLORS.knee, x: answer.knee });
      hooks.push(vertical(answer.knee, COLORS.knee, [6, 4], `knee ${answer.knee}`));
    }
    const span = Math.max(1, loads[loads.length - 1] - loads[0]);
    const chart = new uPlot({
      width: 560,
      height: 240,
      scales: {
        x: { time: false, range: () => [loads[0] - span * 0.1 - 0.5, loads[loads.length - 1] + span * 0.1 + 0.5] },
        y: { range: (u, min, max) => [0, max > 0 ? max * 1.15 : 1] },
      },
      axes: [{ label: `${answer.knob} (${answer.unit})`, splits: () => loads }, { label: yLabel, size: window.ltAxisSize }],
      series: [{ label: answer.knob }].concat(series),
      hooks: { draw: hooks },
    }, [loads, values, failed].concat(extra.map(([, v]) => v)), box);
    charts.push({ id, cell: null, title, chart, marks });
  }

  const goal = answer.goal && answer.goal.p99_ms;
  draw('chart-capacity-tps', `Throughput against ${answer.knob}`, 'tps', COLORS.tps, 'requests/s', []);
  draw('chart-capacity-p99', `p99 against ${answer.knob}`, 'lat_p99_ms', COLORS.p99, 'ms',
    isNumber(goal) ? [[{ label: `goal ${goal} ms`, stroke: COLORS.goal, width: 1.5, dash: [2, 4], points: { show: false } },
      loads.map(() => goal)]] : []);
}());
