/* uds report: the curves page (curve files of uds.callbacks.UdsCallback, payload.curve_document).
 * One chart per curve: step on x, UDS (black, thick) and the recorded output metrics on y
 * (knowledge metrics dashed, utility dotted), the chosen checkpoint marked with a green line and
 * a star; hovering a step shows its values. Below each chart, the table of its records. */
(function () {
  'use strict';
  var R = window.UDSreport, U = R.ui;
  var el = U.el, sv = U.sv, add = U.add, num = U.num, fmt = U.fmt;
  var COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
  var DASH = { knowledge: '6,4', utility: '2,3', erasure: null };

  function stepChart(id, c) {
    var W = 720, H = 300, L = 56, Rm = 16, T = 12, B = 36;
    var steps = c.records.map(function (r) { return r.step; });
    var maxStep = Math.max.apply(null, steps.concat([1]));
    var x = U.scaleLin(0, maxStep, L + 6, W - Rm - 6), y = U.scaleLin(0, 1, H - B, T);
    var g = sv('svg', { id: id, width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
    add(g, sv('line', { class: 'axis', x1: L, x2: W - Rm, y1: y(0), y2: y(0) }));
    add(g, sv('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }));
    [0, 0.5, 1].forEach(function (v) { add(g, sv('text', { x: L - 4, y: y(v) + 4, 'text-anchor': 'end', text: String(v) })); });
    U.yTitle(g, 'value (0 to 1)', 12, (T + H - B) / 2);
    var tick = Math.max(1, Math.ceil(maxStep / 12));
    for (var s = 0; s <= maxStep; s += tick) add(g, sv('text', { x: x(s), y: H - B + 16, 'text-anchor': 'middle', text: String(s) }));
    add(g, sv('text', { x: (L + W - Rm) / 2, y: H - 4, 'text-anchor': 'middle', text: 'optimiser step' }));
    if (num(c.best_step)) {
      add(g, sv('line', { class: 'best', x1: x(c.best_step), x2: x(c.best_step), y1: T, y2: H - B, stroke: '#2ca02c', 'stroke-width': 1.5 }));
    }
    var series = c.keys.map(function (k, i) {
      var uds = k === 'uds';
      return { key: k, color: uds ? '#000' : COLOURS[(i - 1) % COLOURS.length], width: uds ? 3 : 1.6,
        dash: uds ? null : DASH[c.orientation[k]] || null };
    });
    series.forEach(function (s) {
      var d = '', pen = false;
      c.records.forEach(function (r) {
        var v = r.values[s.key];
        if (!num(v)) { pen = false; return; }
        d += (pen ? 'L' : 'M') + x(r.step).toFixed(1) + ',' + y(v).toFixed(1);
        pen = true;
      });
      add(g, sv('path', { d: d, fill: 'none', stroke: s.color, 'stroke-width': s.width, 'stroke-dasharray': s.dash, 'data-series': s.key }));
    });
    var chosen = c.records.filter(function (r) { return r.step === c.best_step; })[0];
    if (chosen && num(chosen.values.uds)) {
      add(g, sv('text', { class: 'star', x: x(chosen.step), y: y(chosen.values.uds) + 6, 'text-anchor': 'middle', text: '★' }));
    }
    c.records.forEach(function (r) {
      if (r.error) add(g, sv('text', { class: 'failed', x: x(r.step), y: y(0) + 4, 'text-anchor': 'middle', fill: '#d62728', text: '×' }));
      add(g, sv('rect', { class: 'hover', 'data-step': r.step, x: x(r.step) - 4, y: T, width: 8, height: H - B - T, fill: 'transparent',
        onmousemove: function (ev) {
          U.tipShow(ev, 'step ' + r.step + (r.step === c.best_step ? ' (chosen)' : '') + '\n' + (r.error ? 'failed: ' + r.error :
            c.keys.map(function (k) { return ((c.labels || {})[k] || k) + ' ' + fmt(r.values[k]); }).join('\n')));
        }, onmouseleave: U.tipHide }));
    });
    return el('div', null, g, el('div', { class: 'legend muted' }, series.map(function (s) {
      var swatch = el('i'); swatch.style.background = s.color;
      return el('span', { title: s.key }, swatch, (c.labels || {})[s.key] || s.key);
    }).concat(num(c.best_step) ? [el('span', null, '★ chosen checkpoint: step ' + c.best_step)] : [])));
  }

  function recordTable(id, c) {
    var cols = ['step', 'epoch'].concat(c.keys).concat(['train_loss', 'eval_seconds']);
    return el('div', { class: 'wrap' }, el('table', { id: id },
      el('thead', null, el('tr', null, cols.map(function (k) { return el('th', { title: k }, (c.labels || {})[k] || k); }))),
      el('tbody', null, c.records.map(function (r) {
        return el('tr', { class: r.step === c.best_step ? 'chosen' : null }, cols.map(function (k) {
          if (k === 'step') return el('td', null, String(r.step) + (r.step === c.best_step ? ' ★' : ''));
          if (r.error && c.keys.indexOf(k) >= 0) return el('td', { class: 'err', title: r.error }, 'failed');
          var v = c.keys.indexOf(k) >= 0 ? r.values[k] : r[k];
          return el('td', { title: U.exactTitle(v) }, fmt(v, k === 'epoch' ? 2 : 4));
        }));
      }))));
  }

  R.pages.curves = function (main) {
    add(main, el('h1', null, 'Curves during unlearning'));
    add(main, el('p', { class: 'muted' }, 'UDS and output metrics of each model as it trained; the star marks the checkpoint its rule chose.'));
    R.data.curves.forEach(function (c, i) {
      var st = c.settings || {};
      add(main, el('h2', null, c.name));
      add(main, el('p', { class: 'muted' }, 'every ' + st.every + ' steps · anchors ' + st.full + ', ' + st.retain +
        ' · rule ' + (st.best || 'none') + ' · ' + c.source));
      add(main, stepChart('curve-chart-' + i, c));
      add(main, recordTable('curve-table-' + i, c));
    });
  };
})();
