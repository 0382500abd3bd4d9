// The box every chart of the report pages is drawn in: a <figure
// class="chart"> with its title as <figcaption>, appended to parent.
// Inlined before the page's chart code (scripts/lib/report.sh), which draws
// into the box it returns: report.js, time-parts.js and capacity.js.
window.ltChartBox = function (parent, id, title, className) {
  'use strict';

  const box = document.createElement('figure');
  box.className = className || 'chart';
  box.id = id;
  const caption = document.createElement('figcaption');
  caption.textContent = title;
  box.appendChild(caption);
  parent.appendChild(box);
  return box;
};

// The width of a y axis (uPlot's axes[].size) from its longest tick label,
// measured in the chart's own font: uPlot's fixed default (50 px) cut
// "10,000" to "0,000" on the latency charts. Used by every chart's y axis.
window.ltAxisSize = function (self, values, axisIdx) {
  'use strict';

  const axis = self.axes[axisIdx];
  let size = axis.ticks.size + axis.gap;
  const longest = (values || []).reduce((a, v) => (v != null && String(v).length > a.length ? String(v) : a), '');
  if (longest !== '') {
    self.ctx.font = axis.font[0];
    size += self.ctx.measureText(longest).width / (window.devicePixelRatio || 1);
  }
  // Never narrower than uPlot's default: a narrower axis gives finer ticks (7.5), wider labels.
  return Math.max(50, Math.ceil(size) + 2);
};
