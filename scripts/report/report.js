// Draws report.html's charts with uPlot from the run's data (the JSON in
// <script id="report-data">): per cell, over time, and across cells.
// Every chart is listed in window.ltReportCharts ({id, cell, title, chart})
// so a browser test can read what was drawn.
(function () {
  'use strict';

  const data = JSON.parse(document.getElementById('report-data').textContent);
  const charts = [];
  window.ltReportCharts = charts;

  const COLORS = {
    blue: '#1f77b4', orange: '#ff7f0e', green: '#2ca02c', red: '#d62728',
    purple: '#9467bd', brown: '#8c564b', pink: '#e377c2', grey: '#7f7f7f', olive: '#bcbd22',
  };
  const CAUSE_COLORS = {
    answered: COLORS.green, connect: COLORS.red, reset: COLORS.purple,
    timeout: COLORS.orange, http_error: COLORS.brown, other: COLORS.grey,
  };
  const WIDTH = 560;
  const HEIGHT = 220;

  function isNumber(v) {
    return typeof v === 'number' && Number.isFinite(v);
  }

  function hasData(values) {
    return values.some(isNumber);
  }

  // A constant as a series over xs (a limit, or a prediction).
  function constant(xs, value) {
    return xs.map(() => value);
  }

  function line(label, color, extra) {
    return Object.assign({ label, stroke: color, width: 2, spanGaps: false }, extra || {});
  }

  function limit(label, color) {
    return line(label, color, { dash: [8, 4], width: 1.5 });
  }

  function predicted(label, color) {
    return line(label, color, { dash: [2, 4], width: 2 });
  }

  function dots(label, color, size) {
    return {
      label, stroke: color, fill: color, width: 0,
      paths: () => null, points: { show: true, size: size || 4, width: 0, fill: color, stroke: color },
    };
  }

  // Draw one chart in parent; series entries are [seriesOptions, values].
  function draw(parent, id, cell, title, xs, series, opts) {
    const shown = series.filter(([, values]) => hasData(values));
    if (xs.length === 0 || shown.length === 0) return null;
    const box = window.ltChartBox(parent, id, title);
    const options = Object.assign({
      width: WIDTH,
      height: HEIGHT,
      scales: { x: { time: false } },
      axes: [{ label: 's since the cell started' }, { label: opts && opts.yLabel || '', size: window.ltAxisSize }],
      series: [{ label: opts && opts.xLabel || 's' }].concat(shown.map(([s]) => s)),
    }, opts && opts.uplot || {});
    const chart = new uPlot(options, [xs].concat(shown.map(([, values]) => values)), box);
    charts.push({ id, cell, title, chart });
    return chart;
  }

  // Seconds since the cell started: the earliest of its samples and k6's.
  function cellStart(cell) {
    const starts = [];
    if (cell.samples && cell.samples.ts && cell.samples.ts.length) starts.push(cell.samples.ts[0]);
    if (cell.k6) {
      if (cell.k6.per_second.t.length) starts.push(cell.k6.per_second.t[0]);
      if (cell.k6.latency.start.length) starts.push(Math.min.apply(null, cell.k6.latency.start));
    }
    return starts.length ? Math.floor(Math.min.apply(null, starts)) : 0;
  }

  function sampleCharts(parent, cell, t0, xRange, sync) {
    const s = cell.samples || {};
    const col = (name) => s[name] || [];
    const xs = col('ts').map((t) => +(t - t0).toFixed(3));
    const row = cell.row || {};
    const env = cell.env || {};
    const common = { uplot: { scales: { x: { time: false, range: xRange } }, cursor: { sync: { key: sync } } } };
    const id = (name) => `chart-${cell.cell}-${name}`;
    const withConstant = (list, label, value, style) =>
      isNumber(value) ? list.concat([[style(label), constant(xs, value)]]) : list;

    draw(parent, id('accept-queue'), cell.cell, 'Accept queue: length (Recv-Q) against the backlog (Send-Q)', xs, [
      [line('queue length', COLORS.blue), col('listen_recvq')],
      [limit('backlog', COLORS.red), col('listen_sendq')],
    ], Object.assign({ yLabel: 'connections' }, common));

    let conns = [
      [line('established (server)', COLORS.blue), col('server_estab')],
      [line('held by Tomcat', COLORS.green), col('tomcat_connections')],
    ];
    conns = withConstant(conns, 'queue_capacity', row.queue_capacity, (l) => limit(l, COLORS.red));
    conns = withConstant(conns, 'predicted peak', row.predicted_server_conns_peak, (l) => predicted(l, COLORS.purple));
    draw(parent, id('connections'), cell.cell, 'Server connections against queue_capacity', xs, conns,
      Object.assign({ yLabel: 'connections' }, common));

    const maxThreads = env.TOMCAT_MAX_THREADS === undefined ? null : Number(env.TOMCAT_MAX_THREADS);
    draw(parent, id('threads'), cell.cell, 'Tomcat busy threads against the maximum', xs,
      withConstant([[line('busy threads', COLORS.blue), col('tomcat_threads_busy')]],
        'threads max', maxThreads, (l) => limit(l, COLORS.red)),
      Object.assign({ yLabel: 'threads' }, common));

    // Behind nginx its two ends are counted apart: towards Tomcat and towards the users.
    const proxyEnds = [
      [line('TIME-WAIT (nginx to Tomcat)', COLORS.purple), col('proxy_upstream_time_wait')],
      [line('TIME-WAIT (nginx to users)', COLORS.pink), col('proxy_client_time_wait')],
    ].filter(([, values]) => hasData(values));
    draw(parent, id('syn-time-wait'), cell.cell, 'SYN-RECV and TIME-WAIT on every side', xs, [
      [line('SYN-RECV (server)', COLORS.orange), col('server_syn_recv')],
      [line('TIME-WAIT (server)', COLORS.blue), col('server_time_wait')],
      [line('TIME-WAIT (client)', COLORS.green), col('client_time_wait')],
    ].concat(proxyEnds), Object.assign({ yLabel: 'sockets' }, common));

    draw(parent, id('k6-cpu'), cell.cell, "k6's CPU (100 % = one core)", xs, [
      [line('k6 CPU %', COLORS.grey), col('k6_cpu_pct')],
    ], Object.assign({ yLabel: '%' }, common));
  }

  function k6Charts(parent, cell, t0, xRange, sync) {
    const id = (name) => `chart-${cell.cell}-${name}`;
    const common = { scales: { x: { time: false, range: xRange } }, cursor: { sync: { key: sync } } };
    const perSecond = cell.k6.per_second;
    // With K6_INSTANCES=N only the first k6 process writes its samples.
    const instances = Number((cell.env || {}).K6_INSTANCES || 1);
    const share = instances > 1 ? ` (k6 instance 1 of ${instances}: its share of the load)` : '';
    const xs = perSecond.t.map((t) => t - t0);
    const causes = ['answered', 'connect', 'reset', 'timeout', 'http_error', 'other'];
    draw(parent, id('requests'), cell.cell, `Requests per second by cause (at completion)${share}`, xs,
      causes.map((c) => [line(c, CAUSE_COLORS[c], { points: { show: true, size: 4 } }), perSecond[c]]),
      { yLabel: 'requests/s', uplot: common });

    // Scatter: uPlot wants ascending x, so the points are sorted by start.
    const latency = cell.k6.latency;
    const order = latency.start.map((_, i) => i).sort((a, b) => latency.start[a] - latency.start[b]);
    const starts = order.map((i) => +(latency.start[i] - t0).toFixed(3));
    const ms = order.map((i) => latency.ms[i]);
    const note = latency.stride > 1 ? ` (every ${latency.stride}th of ${latency.answered})` : '';
    draw(parent, id('latency'), cell.cell, `Latency of each answered request against its start${note}${share}`,
      starts, [[dots('latency (ms)', COLORS.blue), ms]],
      { yLabel: 'ms', uplot: Object.assign({}, common, { cursor: { sync: { key: sync }, points: { show: false } } }) });
  }

  function cellCharts() {
    for (const cell of data.cells) {
      const parent = document.getElementById(`charts-${cell.cell}`);
      if (!parent) continue;
      const t0 = cellStart(cell);
      // One time axis for every chart of the cell.
      let end = 0;
      if (cell.samples && cell.samples.ts) end = Math.max(end, ...cell.samples.ts.map((t) => t - t0));
      if (cell.k6) {
        end = Math.max(end, ...cell.k6.per_second.t.map((t) => t - t0 + 1));
        end = Math.max(end, ...cell.k6.latency.start.map((t) => t - t0));
      }
      const xRange = () => [0, Math.ceil(end) || 1];
      sampleCharts(parent, cell, t0, xRange, cell.cell);
      if (cell.k6) k6Charts(parent, cell, t0, xRange, cell.cell);
      if (!parent.querySelector('figure')) {
        parent.textContent = 'No samples for this cell.';
      }
    }
  }

  // A row's number for key, or null.
  const value = (row, key) => (key && isNumber(row[key]) ? row[key] : null);

  // A column's title for people: its label in the columns' schema
  // (scripts/ltsuite/columns.py, passed in the data), else its name.
  const label = (key) => (data.labels && data.labels[key]) || key;

  // The figures compared across cells: measured bars, with a reference
  // (a limit) and a prediction drawn beside them when the rows carry one.
  // A chart's title is its column's label (of the column named by titleOf
  // when the bars are not one column's), " against " the reference's.
  const FIGURES = [
    { key: 'failed_reqs' },
    // The users the kernel's rules say could not get in, beside the column
    // the row's check counted them in (fail_connect or failed_reqs).
    { key: 'failed_users', titleOf: 'predicted_failed_users_from',
      measured: (row) => value(row, row.predicted_failed_users_from), predicted: 'predicted_failed_users' },
    { key: 'failed_rate' },
    { key: 'lat_p95_ms' },
    { key: 'lat_max_ms', predicted: 'predicted_lat_max_ms' },
    { key: 'server_conns_peak', reference: 'queue_capacity', predicted: 'predicted_server_conns_peak' },
    { key: 'listen_overflows', predicted: 'predicted_listen_overflows' },
    // tps counts every request sent; predicted_tps is a rate of answers, so
    // it is drawn beside the answered requests per second.
    { key: 'tps' },
    { key: 'answered_tps', predicted: 'predicted_tps' },
  ];
  const title = (figure) => label(figure.titleOf || figure.key)
    + (figure.reference ? ` against ${label(figure.reference)}` : '');

  // A cell's axis values; "#k" for repetition k when the run repeats cells.
  function cellLabel(row) {
    const axes = row.axes || {};
    const names = Object.keys(axes);
    const label = names.length ? names.map((k) => axes[k]).join(' / ') : (row.repeat_of || row.cell);
    return row.repeat > 1 || data.cells.some((c) => c.row && c.row.repeat > 1) ? `${label} #${row.repeat}` : label;
  }

  function acrossCells() {
    const parent = document.getElementById('across-cells');
    if (!parent) return;
    const rows = data.cells.map((c) => c.row).filter((r) => r && r.cell);
    if (rows.length === 0) return;
    const xs = rows.map((_, i) => i + 1);
    const labels = rows.map(cellLabel);
    const bars = uPlot.paths.bars({ size: [0.6, 60] });
    for (const figure of FIGURES) {
      const measured = figure.measured || ((r) => value(r, figure.key));
      const series = [[{ label: figure.key, stroke: COLORS.blue, fill: COLORS.blue, width: 1, paths: bars, points: { show: false } },
        rows.map(measured)]];
      if (figure.reference) series.push([dots(label(figure.reference), COLORS.red, 10), rows.map((r) => value(r, figure.reference))]);
      if (figure.predicted) series.push([dots(label(figure.predicted), COLORS.purple, 10), rows.map((r) => value(r, figure.predicted))]);
      draw(parent, `chart-across-${figure.key}`, null, title(figure), xs, series, {
        xLabel: 'cell',
        uplot: {
          scales: { x: { time: false, range: () => [0.5, xs.length + 0.5] }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
          axes: [
            { label: (data.axes || []).join(' / ') || 'cell', splits: () => xs, values: (u, splits) => splits.map((x) => labels[x - 1] || '') },
            { size: window.ltAxisSize },
          ],
        },
      });
    }
  }

  acrossCells();
  cellCharts();
}());
