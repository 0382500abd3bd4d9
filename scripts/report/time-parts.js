// Draws, per cell of report.html, where each user's time went ("time_parts"
// in the JSON of <script id="report-data">, made by
// scripts/ltsuite/timeparts.py):
//   - every request as a horizontal bar from when k6 asked for a connection,
//     split into connect / queued / service / rest (a few thousand bars at
//     most: every n-th request above that, in order of start);
//   - what the application saw beside what the users saw: the two latency
//     distributions (Tomcat's %D, k6's blocked + duration) on one axis.
// Each chart is added to window.ltReportCharts (report.js's list) in the
// shape the page's test reads: {id, cell, title, chart: {ctx, series, data}}.
(function () {
  'use strict';

  const source = document.getElementById('report-data');
  const data = source ? JSON.parse(source.textContent).time_parts : null;
  if (!data) return;
  const charts = window.ltReportCharts || (window.ltReportCharts = []);

  const PARTS = [
    { label: 'connect', color: '#d62728' },
    { label: 'queued', color: '#ff7f0e' },
    { label: 'service', color: '#2ca02c' },
    { label: 'rest', color: '#7f7f7f' },
  ];
  const APP = { label: 'the application (Tomcat %D)', color: '#1f77b4' };
  const USERS = { label: 'the users (k6: blocked + duration)', color: '#9467bd' };
  const WIDTH = 1120;
  const MARGIN = { left: 60, right: 20, top: 10, bottom: 36 };

  function figure(parent, id, title, height, legend) {
    const box = window.ltChartBox(parent, id, title, 'chart time-parts');
    const canvas = document.createElement('canvas');
    canvas.width = WIDTH;
    canvas.height = height;
    box.appendChild(canvas);
    const key = document.createElement('div');
    key.className = 'legend';
    for (const item of legend) {
      const swatch = document.createElement('span');
      swatch.style.cssText = `display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;background:${item.color}`;
      key.appendChild(swatch);
      key.appendChild(document.createTextNode(item.label));
    }
    box.appendChild(key);
    return canvas.getContext('2d');
  }

  // Round steps for an axis of max units: about 8 ticks.
  function ticks(max) {
    const raw = max / 8;
    const power = 10 ** Math.floor(Math.log10(raw || 1));
    const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) || power;
    const out = [];
    for (let t = 0; t <= max + 1e-9; t += step) out.push(t);
    return out;
  }

  function xAxis(ctx, height, max, scale, unit, divide) {
    ctx.fillStyle = '#333';
    ctx.strokeStyle = '#ccc';
    ctx.font = '11px sans-serif';
    for (const t of ticks(max)) {
      const x = MARGIN.left + t * scale;
      ctx.beginPath();
      ctx.moveTo(x, MARGIN.top);
      ctx.lineTo(x, height - MARGIN.bottom);
      ctx.stroke();
      ctx.fillText(String(+(t / divide).toFixed(3)), x - 8, height - MARGIN.bottom + 14);
    }
    ctx.fillText(unit, WIDTH / 2 - 40, height - 6);
  }

  function barsChart(parent, cell, parts) {
    const bars = parts.bars;
    const height = Math.min(520, Math.max(160, bars.length * 6)) + MARGIN.top + MARGIN.bottom;
    const note = parts.stride > 1 ? ` (every ${parts.stride}th of ${parts.count})` : ` (${parts.count})`;
    const title = `Each user's request split: connect, queued (before Tomcat started it), service, rest${note}`;
    const ctx = figure(parent, `chart-${cell}-time-parts`, title, height, PARTS);
    const end = Math.max(...bars.map((b) => b[0] + b[1] + b[2] + b[3] + Math.max(b[4], 0)), 1);
    const scale = (WIDTH - MARGIN.left - MARGIN.right) / end;
    const rowHeight = (height - MARGIN.top - MARGIN.bottom) / bars.length;
    xAxis(ctx, height, end, scale, 's since the first request', 1000);
    bars.forEach((bar, i) => {
      let x = MARGIN.left + bar[0] * scale;
      const y = MARGIN.top + i * rowHeight;
      PARTS.forEach((part, k) => {
        const width = Math.max(bar[k + 1], 0) * scale;
        ctx.fillStyle = part.color;
        ctx.fillRect(x, y, width, Math.max(rowHeight - (rowHeight > 3 ? 1 : 0), 1));
        x += width;
      });
    });
    ctx.fillStyle = '#333';
    ctx.fillText('requests, by start', 2, MARGIN.top + 10);
    const series = [{}].concat(PARTS.map((p) => ({ label: p.label, stroke: p.color })));
    const data = [bars.map((b) => b[0])].concat(PARTS.map((_, k) => bars.map((b) => b[k + 1])));
    charts.push({ id: `chart-${cell}-time-parts`, cell, title, chart: { ctx, series, data } });
  }

  // The share of values at or below each value: a step line per side.
  function distributionChart(parent, cell, parts) {
    const sides = [[APP, parts.app_ms], [USERS, parts.k6_ms]].filter(([, v]) => v.length);
    if (!sides.length) return;
    const height = 260;
    const title = 'What the application saw against what the users saw: the share of requests answered within x ms';
    const ctx = figure(parent, `chart-${cell}-app-vs-users`, title, height, sides.map(([s]) => s));
    const max = Math.max(...sides.map(([, v]) => v[v.length - 1]), 1);
    const scale = (WIDTH - MARGIN.left - MARGIN.right) / max;
    const plotHeight = height - MARGIN.top - MARGIN.bottom;
    xAxis(ctx, height, max, scale, 'ms', 1);
    ctx.fillStyle = '#333';
    for (const share of [0, 0.25, 0.5, 0.75, 1]) {
      ctx.fillText(`${share * 100} %`, 4, MARGIN.top + (1 - share) * plotHeight + 4);
    }
    for (const [side, values] of sides) {
      ctx.strokeStyle = side.color;
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.moveTo(MARGIN.left, MARGIN.top + plotHeight);
      values.forEach((v, i) => {
        const x = MARGIN.left + v * scale;
        ctx.lineTo(x, MARGIN.top + (1 - i / values.length) * plotHeight);
        ctx.lineTo(x, MARGIN.top + (1 - (i + 1) / values.length) * plotHeight);
      });
      ctx.stroke();
    }
    const series = [{}].concat(sides.map(([s]) => ({ label: s.label, stroke: s.color })));
    charts.push({ id: `chart-${cell}-app-vs-users`, cell, title,
      chart: { ctx, series, data: [[]].concat(sides.map(([, v]) => v)) } });
  }

  for (const [cell, parts] of Object.entries(data.cells || {})) {
    const parent = document.getElementById(`charts-${cell}`);
    if (!parent || !parts) continue;
    if (parts.bars && parts.bars.length) barsChart(parent, cell, parts);
    distributionChart(parent, cell, parts);
  }
}());
