#!/usr/bin/env node
// Summary: open a report.html in headless Chromium (Debian's chromium, driven by playwright-core) and print what it drew, as JSON.
// Usage: node scripts/report/open-report.js REPORT_HTML [--screenshot PNG [--at CSS_SELECTOR]]
//
// Output: {"errors": [console errors and page errors], "requests": [URLs other
// than the file itself], "headline": the h1's text and the first reason under
// it (as the browser shows them), "charts": [{id, cell, title, series: [{label,
// points, color, pixels}], marks: [{label, color, pixels, ...}: what the
// chart's hooks drew, e.g. a knee's line], data: [[x...], [y...]...]}]}.
// "pixels" counts the canvas pixels of the series' (or mark's) colour: a
// chart that drew its data has some.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const toolsDir = process.env.LT_REPORT_TOOLS || path.join(__dirname, '..', '..', '.tools', 'report');
const { chromium } = require(path.join(toolsDir, 'node_modules', 'playwright-core'));

const CHROMIUM = process.env.LT_CHROMIUM || '/usr/bin/chromium';
const FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

function usage(message) {
  process.stderr.write(`open-report: ${message}\nUsage: node scripts/report/open-report.js REPORT_HTML [--screenshot PNG [--at CSS_SELECTOR]]\n`);
  process.exit(2);
}

async function main() {
  const args = process.argv.slice(2);
  const file = args[0];
  if (!file || !fs.existsSync(file)) usage(`no such report: ${file || '(none given)'}`);
  let screenshot = null;
  let at = null;
  for (let i = 1; i < args.length; i += 2) {
    if (!args[i + 1]) usage(`${args[i]} needs a value`);
    if (args[i] === '--screenshot') screenshot = args[i + 1];
    else if (args[i] === '--at') at = args[i + 1];
    else usage(`unknown argument ${args[i]}`);
  }
  const url = `file://${path.resolve(file)}`;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ltsuite-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1300, height: 900 },
  });
  const errors = [];
  const requests = [];
  try {
    const page = context.pages()[0] || await context.newPage();
    page.on('console', (msg) => { if (msg.type() === 'error') errors.push(msg.text()); });
    page.on('pageerror', (err) => errors.push(String(err)));
    page.on('request', (req) => { if (req.url() !== url) requests.push(req.url()); });
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForFunction(() => Array.isArray(window.ltReportCharts), null, { timeout: 10000 });
    const charts = await page.evaluate(() => window.ltReportCharts.map(({ id, cell, title, chart, marks }) => {
      const canvas = chart.ctx.canvas;
      const pixels = chart.ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      const rgb = (color) => {
        const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(color || '');
        return m ? [1, 2, 3].map((i) => parseInt(m[i], 16)) : null;
      };
      // count(color): the canvas pixels of that colour.
      const count = (color) => {
        const want = rgb(color);
        let n = 0;
        if (want) {
          for (let p = 0; p < pixels.length; p += 4) {
            if (pixels[p + 3] > 200 && Math.abs(pixels[p] - want[0]) < 8
              && Math.abs(pixels[p + 1] - want[1]) < 8 && Math.abs(pixels[p + 2] - want[2]) < 8) n += 1;
          }
        }
        return n;
      };
      const series = chart.series.slice(1).map((s, i) => {
        const color = typeof s.stroke === 'function' ? s._stroke : s.stroke;
        const points = chart.data[i + 1].filter((v) => typeof v === 'number' && Number.isFinite(v)).length;
        return { label: s.label, points, color: s._stroke || color, pixels: count(s._stroke || color) };
      });
      // What a chart's hooks drew besides its series (a knee's line), with its pixels.
      const drawn = (marks || []).map((m) => Object.assign({}, m, { pixels: count(m.color) }));
      return { id, cell, title, series, marks: drawn, data: chart.data };
    }));
    // What a reader sees first: the heading and the line under it.
    const headline = await page.evaluate(() => [document.querySelector('h1'), document.getElementById('first-reason')]
      .filter(Boolean).map((e) => e.innerText).join('\n'));
    if (screenshot) {
      // The viewport from the element on (the page's top without --at).
      if (at) await page.evaluate((sel) => document.querySelector(sel).scrollIntoView(), at);
      await page.screenshot({ path: screenshot, fullPage: false });
    }
    process.stdout.write(`${JSON.stringify({ errors, requests, headline, charts })}\n`);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`open-report: ${err.stack || err}\n`);
  process.exit(1);
});
