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
