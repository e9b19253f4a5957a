/* uds report: the pages of the static site, drawn in the browser from data/index.js and the
 * per-model data/m<ID>.js files (loaded on demand with a <script> tag, so file:// works).
 * Every text from the results goes into the page as a text node or an attribute value set
 * through the DOM, never as markup: a name holding "<script>" shows as text. */
(function () {
  'use strict';
  var R = window.UDSreport = { data: null, models: {}, waiting: {}, state: null };
  R.index = function (d) { R.data = d; };
  R.model = function (id, d) {
    R.models[id] = d;
    (R.waiting[id] || []).forEach(function (f) { f(d); });
    delete R.waiting[id];
  };

  // ---------- small DOM helpers ----------
  var SVGNS = 'http://www.w3.org/2000/svg';
  function el(tag, attrs) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function sv(tag, attrs) {
    var node = document.createElementNS(SVGNS, tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k.slice(0, 2) === 'on') node.addEventListener(k.slice(2), v);
      else if (k === 'text') node.textContent = String(v);
      else node.setAttribute(k, String(v));
    });
  }
  function add(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
    node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function num(v) { return typeof v === 'number' && isFinite(v); }
  function fmt(v, d) {
    if (!num(v)) return '–';
    d = d === undefined ? 4 : d;
    var a = Math.abs(v);
    if (a !== 0 && (a < Math.pow(10, -d) || a >= 1e6)) return v.toExponential(2);
    return v.toFixed(d);
  }
  function link(hash, text, attrs) { return el('a', Object.assign({ href: hash }, attrs || {}), text); }
  function byId(id) { return document.getElementById(id); }

  // ---------- tooltip ----------
  function tipShow(ev, text) {
    var t = byId('tip');
    t.textContent = text;
    t.hidden = false;
    t.style.left = (ev.clientX + 14) + 'px';
    t.style.top = (ev.clientY + 10) + 'px';
  }
  function tipHide() { byId('tip').hidden = true; }

  // ---------- lazy model data ----------
  R.load = function (id) {
    return new Promise(function (resolve, reject) {
      if (R.models[id]) { resolve(R.models[id]); return; }
      var m = R.data.models[id];
      if (!m || !m.file) { reject(new Error('no per-model data')); return; }
      var first = !R.waiting[id];
      (R.waiting[id] = R.waiting[id] || []).push(resolve);
      if (!first) return;
      var s = document.createElement('script');
      s.src = m.file;
      s.onerror = function () { reject(new Error('could not load ' + m.file)); };
      document.head.appendChild(s);
    });
  };

  // ---------- leaderboard ----------
  var LB = { sort: null, dir: -1, method: '', text: '', hidden: null };
  function lbColumns() {
    var cols = R.data.columns.slice();
    if (LB.hidden === null) {   // by default: the first 14 columns, the rest in the chooser
      LB.hidden = {};
      cols.forEach(function (c, i) { if (i >= 14) LB.hidden[c] = true; });
    }
    return cols;
  }
  function cellValue(m, key) {
    if (key === 'name') return m.name;
    if (key === 'method') return m.method || '';
    var v = m.cells[key];
    return num(v) ? v : null;
  }
  function lbRows() {
    var text = LB.text.toLowerCase();
    var rows = R.data.models.filter(function (m) {
      return (!LB.method || m.method === LB.method) && (!text || m.name.toLowerCase().indexOf(text) >= 0);
    });
    if (LB.sort) {
      var k = LB.sort, dir = LB.dir;
      rows.sort(function (a, b) {
        var x = cellValue(a, k), y = cellValue(b, k);
        if (x === null || y === null) return (x === null) - (y === null);   // empty cells last
        if (typeof x === 'string') return dir * x.localeCompare(y);
        return dir * (x - y) || a.id - b.id;
      });
    }
    return rows;
  }
  function csvCell(v) {
    var s = v === null || v === undefined ? '' : String(v);
    if (/^[=+\-@\t\r]/.test(s) && !num(v)) s = "'" + s;   // no formula in a spreadsheet
    return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  R.csvText = function () {
    var cols = lbColumns().filter(function (c) { return !LB.hidden[c]; });
    var lines = [['model', 'method'].concat(cols, cols.indexOf('uds') >= 0 ? ['uds_ci_low', 'uds_ci_high'] : [])];
    lbRows().forEach(function (m) {
      var line = [m.name, m.method].concat(cols.map(function (c) { return cellValue(m, c); }));
      if (cols.indexOf('uds') >= 0) line.push(m.ci ? m.ci[0] : null, m.ci ? m.ci[1] : null);
      lines.push(line);
    });
    return lines.map(function (l) { return l.map(csvCell).join(','); }).join('\n') + '\n';
  };
  function exportCsv() {
    var blob = new Blob([R.csvText()], { type: 'text/csv' });
    var a = el('a', { href: URL.createObjectURL(blob), download: 'leaderboard.csv' });
    document.body.appendChild(a);
    a.click();
    a.remove();
  }
  function pageLeaderboard(main) {
    var cols = lbColumns();
    var methods = {};
    R.data.models.forEach(function (m) { if (m.method) methods[m.method] = true; });
    var chooser = el('details', { class: 'cols', id: 'lb-cols' }, el('summary', null, 'columns'),
      el('div', null, cols.map(function (c) {
        var box = el('input', { type: 'checkbox', 'data-col': c, onchange: function () {
          if (box.checked) delete LB.hidden[c]; else LB.hidden[c] = true;
          drawTable();
        } });
        box.checked = !LB.hidden[c];
        return el('label', null, box, ' ', c);
      })));
    var search = el('input', { type: 'search', id: 'lb-filter', placeholder: 'filter models…', value: LB.text,
      oninput: function () { LB.text = search.value; drawTable(); } });
    var select = el('select', { id: 'lb-method', onchange: function () { LB.method = select.value; drawTable(); } },
      el('option', { value: '' }, 'all methods'),
      Object.keys(methods).sort().map(function (m) { return el('option', { value: m }, m); }));
    select.value = LB.method;
    var count = el('span', { class: 'muted', id: 'lb-count' });
    var wrap = el('div', { class: 'wrap' });
    add(main, [el('h1', null, 'Leaderboard'),
      el('div', { class: 'controls' }, search, select, chooser,
        el('button', { id: 'lb-csv', onclick: exportCsv }, 'export CSV'), count), wrap]);

    function drawTable() {
      var t0 = performance.now();
      var shown = cols.filter(function (c) { return !LB.hidden[c]; });
      var head = el('tr', null, [['name', 'model'], ['method', 'method']].concat(shown.map(function (c) { return [c, c]; }))
        .map(function (p) {
          var cls = (p[0] === 'name' || p[0] === 'method' ? 'text ' : '') +
            (LB.sort === p[0] ? (LB.dir > 0 ? 'sorted-asc' : 'sorted-desc') : '');
          return el('th', { 'data-key': p[0], class: cls, title: 'sort by ' + p[1], onclick: function () {
            if (LB.sort === p[0]) LB.dir = -LB.dir;
            else { LB.sort = p[0]; LB.dir = p[0] === 'name' || p[0] === 'method' ? 1 : -1; }
            drawTable();
          } }, p[1]);
        }));
      var body = document.createElement('tbody');
      var rows = lbRows();
      rows.forEach(function (m) {
        var name = m.file ? link('#/model/' + m.id, m.name) : el('span', null, m.name);
        var tr = el('tr', { 'data-id': m.id }, el('td', { class: 'name' }, name), el('td', { class: 'text' }, m.method || ''));
        shown.forEach(function (c) {
          var v = m.cells[c];
          var text = fmt(v);
          if (c === 'uds' && m.ci && num(v)) text += ' [' + fmt(m.ci[0], 3) + ', ' + fmt(m.ci[1], 3) + ']';
          if (c === 'n_scored' || c === 'epoch') text = num(v) ? String(v) : '–';
          tr.appendChild(el('td', { 'data-col': c }, text));
        });
        body.appendChild(tr);
      });
      clear(wrap).appendChild(el('table', { id: 'lb-table' }, el('thead', null, head), body));
      count.textContent = rows.length + ' of ' + R.data.models.length + ' models';
      R.lastDrawMs = performance.now() - t0;
    }
    drawTable();
  }

  // ---------- charts ----------
  function scaleLin(d0, d1, r0, r1) {
    if (d1 === d0) { d1 = d0 + 1; }
    return function (v) { return r0 + (v - d0) * (r1 - r0) / (d1 - d0); };
  }
  function extent(arrays) {
    var lo = Infinity, hi = -Infinity;
    arrays.forEach(function (a) { a.forEach(function (v) { if (num(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }); });
    return lo === Infinity ? [0, 1] : [Math.min(lo, 0), Math.max(hi, 0)];
  }
  function pathOf(values, x, y) {
    var d = '', pen = false;
    values.forEach(function (v, i) {
      if (!num(v)) { pen = false; return; }
      d += (pen ? 'L' : 'M') + x(i).toFixed(1) + ',' + y(v).toFixed(1);
      pen = true;
    });
    return d;
  }
  /* Per-layer chart: series [{name, values, color, axis: 'left'|'right', dash}], hover per layer. */
  function layerChart(id, series, tipText, opts) {
    opts = opts || {};
    var n = Math.max.apply(null, series.map(function (s) { return s.values.length; }).concat([1]));
    var W = opts.width || 640, H = opts.height || 280, L = 56, Rm = 48, T = 12, B = 34;
    var left = series.filter(function (s) { return s.axis !== 'right'; });
    var ext = extent(left.map(function (s) { return s.values; }).concat(opts.tau ? [[opts.tau]] : []));
    var x = scaleLin(0, Math.max(n - 1, 1), L + 10, W - Rm - 10);
    var y = scaleLin(ext[0], ext[1], H - B, T);
    var y2 = scaleLin(0, 1, H - B, T);
    var g = sv('svg', { id: id, width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
    add(g, sv('line', { class: 'axis', x1: L, x2: W - Rm, y1: y(0), y2: y(0) }));
    add(g, sv('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }));
    [ext[0], (ext[0] + ext[1]) / 2, ext[1]].forEach(function (v) {
      add(g, sv('text', { x: L - 4, y: y(v) + 4, 'text-anchor': 'end', text: fmt(v, 2) }));
    });
    if (series.some(function (s) { return s.axis === 'right'; })) {
      add(g, sv('line', { class: 'axis', x1: W - Rm, x2: W - Rm, y1: T, y2: H - B }));
      [0, 0.5, 1].forEach(function (v) { add(g, sv('text', { x: W - Rm + 4, y: y2(v) + 4, text: String(v) })); });
    }
    if (opts.tau) add(g, sv('line', { x1: L, x2: W - Rm, y1: y(opts.tau), y2: y(opts.tau), stroke: '#999', 'stroke-dasharray': '2,3' }));
    var step = Math.max(1, Math.ceil(n / 16));
    for (var i = 0; i < n; i += step) add(g, sv('text', { x: x(i), y: H - B + 16, 'text-anchor': 'middle', text: String(i) }));
    add(g, sv('text', { x: (L + W - Rm) / 2, y: H - 4, 'text-anchor': 'middle', text: 'layer' }));
    series.forEach(function (s) {
      var yy = s.axis === 'right' ? y2 : y;
      add(g, sv('path', { d: pathOf(s.values, x, yy), fill: 'none', stroke: s.color, 'stroke-width': 2,
        'stroke-dasharray': s.dash || null, 'data-series': s.name }));
      s.values.forEach(function (v, j) {
        if (num(v)) add(g, sv('circle', { cx: x(j), cy: yy(v), r: 3, fill: s.color }));
      });
    });
    var band = n > 1 ? (x(1) - x(0)) : (W - L - Rm);
    for (var j = 0; j < n; j++) {
      (function (j) {
        add(g, sv('rect', { class: 'hover', 'data-layer': j, x: x(j) - band / 2, y: T, width: band, height: H - B - T,
          fill: 'transparent', onmousemove: function (ev) { tipShow(ev, tipText(j)); }, onmouseleave: tipHide }));
      })(j);
    }
    return el('div', null, g, el('div', { class: 'legend muted' }, series.map(function (s) {
      var swatch = el('i'); swatch.style.background = s.color;
      return el('span', null, swatch, s.label || s.name);
    })));
  }
  function barChart(id, values, label, tipText) {
    var n = values.length, W = 640, H = 160, L = 56, T = 10, B = 30;
    var hi = Math.max.apply(null, values.concat([1]));
    var bw = (W - L - 10) / Math.max(n, 1);
    var y = scaleLin(0, hi, H - B, T);
    var g = sv('svg', { id: id, width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    add(g, sv('line', { class: 'axis', x1: L, x2: W - 10, y1: H - B, y2: H - B }));
    add(g, sv('text', { x: L - 4, y: y(hi) + 4, 'text-anchor': 'end', text: String(hi) }));
    add(g, sv('text', { x: L - 4, y: H - B + 4, 'text-anchor': 'end', text: '0' }));
    values.forEach(function (v, i) {
      add(g, sv('rect', { x: L + i * bw + 1, y: y(v), width: Math.max(bw - 2, 1), height: H - B - y(v), fill: '#7aa6d6',
        'data-layer': i, onmousemove: function (ev) { tipShow(ev, tipText(i)); }, onmouseleave: tipHide }));
      if (n <= 40 || i % Math.ceil(n / 40) === 0) add(g, sv('text', { x: L + (i + 0.5) * bw, y: H - B + 14, 'text-anchor': 'middle', text: String(i) }));
    });
    add(g, sv('text', { x: (L + W) / 2, y: H - 2, 'text-anchor': 'middle', text: label }));
    return g;
  }
  /* One row per metric: every model's value as a grey tick, this model's in red. */
  function stripChart(values, mine) {
    var W = 260, H = 18, ext = extent([values]);
    if (ext[0] === ext[1]) ext[1] = ext[0] + 1;
    var lo = Math.min.apply(null, values), hi = Math.max.apply(null, values);
    if (lo === hi) { lo -= 0.5; hi += 0.5; }
    var x = scaleLin(lo, hi, 6, W - 6);
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    add(g, sv('line', { class: 'axis', x1: 6, x2: W - 6, y1: H / 2, y2: H / 2 }));
    values.forEach(function (v) { add(g, sv('line', { x1: x(v), x2: x(v), y1: 4, y2: H - 4, stroke: '#9aa4b1' })); });
    add(g, sv('circle', { cx: x(mine), cy: H / 2, r: 4.5, fill: '#d62728' }));
    return g;
  }

  // ---------- model page ----------
  function pageModel(main, id) {
    var m = R.data.models[id];
    if (!m) { add(main, el('p', { class: 'err' }, 'no such model')); return; }
    add(main, el('h1', { id: 'model-name' }, m.name));
    var holder = el('div', null, el('p', { class: 'muted' }, 'loading…'));
    add(main, holder);
    R.load(id).then(function (d) { drawModel(clear(holder), m, d); },
      function (e) { clear(holder).appendChild(el('p', { class: 'err' }, e.message)); });
  }
  function drawModel(box, m, d) {
    var s = d.summary, L = d.layers;
    var ci = s.ci95 ? '95% CI [' + fmt(s.ci95[0]) + ', ' + fmt(s.ci95[1]) + ']' : 'no interval';
    add(box, el('div', { class: 'cards' },
      el('div', { class: 'card' }, el('div', { class: 'muted' }, 'UDS'), el('div', { class: 'big', id: 'model-uds' }, fmt(s.uds)),
        el('div', { class: 'muted', id: 'model-ci' }, ci)),
      el('div', { class: 'card' }, el('div', null, 'scored ', String(s.n_scored), ' of ', String(s.n_examples), ' examples'),
        el('div', { class: 'muted' }, 'τ = ', String(s.tau), ', ', String(L.n), ' layers'),
        s.skipped_reasons && Object.keys(s.skipped_reasons).length ? el('div', { class: 'muted' }, 'skipped: ' + Object.keys(s.skipped_reasons)
          .map(function (k) { return k + ' ' + s.skipped_reasons[k]; }).join(', ')) : null),
      el('div', { class: 'card' }, el('div', null, 'full: ', s.full || '–'), el('div', null, 'retain: ', s.retain || '–'),
        el('div', { class: 'muted' }, d.source))));
    add(box, el('h2', null, 'Per layer: where the knowledge sits and how much of it was erased'));
    add(box, layerChart('layer-chart', [
      { name: 's1', label: 'mean Δ S1 (retain → full)', values: L.s1_mean, color: '#1f77b4' },
      { name: 's2', label: 'mean Δ S2 (unlearned → full)', values: L.s2_mean, color: '#ff7f0e' },
      { name: 'ratio', label: 'mean clipped ratio Δ S2/Δ S1 over KE examples (right axis)', values: L.ratio_mean,
        color: '#2ca02c', axis: 'right', dash: '5,3' }], function (j) {
      return 'layer ' + j + '\nmean Δ S1  ' + fmt(L.s1_mean[j]) + '\nmean Δ S2  ' + fmt(L.s2_mean[j]) +
        '\nratio      ' + fmt(L.ratio_mean[j]) + '\nKE in ' + L.ke_count[j] + ' examples';
    }, { tau: s.tau }));
    add(box, el('h2', null, 'KE layers: how many examples have each layer above τ'));
    add(box, barChart('ke-hist', L.ke_count, 'layer', function (i) { return 'layer ' + i + ': KE in ' + L.ke_count[i] + ' examples'; }));
    addPopulation(box, m);
    addExampleList(box, m, d);
  }
  function addPopulation(box, m) {
    var keys = R.data.columns.filter(function (c) { return num(m.cells[c]); });
    if (!keys.length) return;
    add(box, el('h2', null, 'Metric values against the population (' + R.data.models.length + ' models)'));
    var body = el('tbody');
    keys.forEach(function (k) {
      var vals = R.data.models.map(function (o) { return o.cells[k]; }).filter(num);
      var v = m.cells[k];
      var rank = 1 + vals.filter(function (x) { return x > v; }).length;
      body.appendChild(el('tr', { 'data-key': k }, el('td', { class: 'text' }, k), el('td', null, fmt(v)),
        el('td', { class: 'muted' }, rank + ' of ' + vals.length), el('td', null, stripChart(vals, v))));
    });
    add(box, el('table', { id: 'population' }, el('thead', null, el('tr', null,
      ['metric', 'value', 'rank (high first)', 'population'].map(function (h) { return el('th', { class: 'text' }, h); }))), body));
  }
  function exampleText(e) { return [e.idx, e.question, e.answer, e.entity].join(' ').toLowerCase(); }
  function addExampleList(box, m, d) {
    add(box, el('h2', null, 'Examples'));
    var search = el('input', { type: 'search', id: 'ex-search', placeholder: 'search question, answer, idx…' });
    var body = el('tbody');
    function draw() {
      var q = search.value.toLowerCase();
      clear(body);
      d.examples.forEach(function (e, pos) {
        if (q && exampleText(e).indexOf(q) < 0) return;
        body.appendChild(el('tr', { class: 'clickable', 'data-pos': pos, onclick: function () { location.hash = '#/example/' + m.id + '/' + pos; } },
          el('td', { class: 'text' }, link('#/example/' + m.id + '/' + pos, String(e.idx))),
          el('td', null, num(e.uds) ? fmt(e.uds) : (e.skipped_reason || '–')),
          el('td', { class: 'text' }, (e.ke_layers || []).join(' ')),
          el('td', { class: 'text' }, e.question || '')));
      });
    }
    search.addEventListener('input', draw);
    add(box, el('div', { class: 'controls' }, search, el('span', { class: 'muted' }, 'compare with '), compareSelect(m.id)));
    add(box, el('div', { class: 'wrap' }, el('table', { id: 'ex-table' }, el('thead', null, el('tr', null,
      ['idx', 'UDS_i', 'KE layers', 'question'].map(function (h) { return el('th', { class: 'text' }, h); }))), body)));
    draw();
  }
  function compareSelect(id) {
    var sel = el('select', { onchange: function () { if (sel.value !== '') location.hash = '#/compare/' + id + '/' + sel.value; } },
      el('option', { value: '' }, '(another model)'),
      R.data.models.filter(function (o) { return o.file && o.id !== id; }).map(function (o) { return el('option', { value: o.id }, o.name); }));
    return sel;
  }

  // ---------- example page ----------
  function pageExample(main, id, pos) {
    var m = R.data.models[id];
    if (!m) { add(main, el('p', { class: 'err' }, 'no such model')); return; }
    R.load(id).then(function (d) { drawExample(main, m, d, pos); },
      function (e) { add(main, el('p', { class: 'err' }, e.message)); });
  }
  function answerWithEntity(e) {
    var a = e.answer || '', sp = e.entity_span;
    if (!sp || sp[0] < 0 || sp[1] > a.length || sp[1] <= sp[0]) return [a];
    return [a.slice(0, sp[0]), el('mark', { id: 'ex-entity' }, a.slice(sp[0], sp[1])), a.slice(sp[1])];
  }
  function drawExample(main, m, d, pos) {
    var e = d.examples[pos];
    if (!e) { add(main, el('p', { class: 'err' }, 'no such example')); return; }
    var n = d.examples.length, go = function (p) { location.hash = '#/example/' + m.id + '/' + p; };
    add(main, el('div', { class: 'pager' }, link('#/model/' + m.id, m.name),
      el('button', { id: 'ex-prev', disabled: pos <= 0 ? 'disabled' : null, onclick: function () { go(pos - 1); } }, '← previous'),
      el('span', { id: 'ex-pos' }, (pos + 1) + ' of ' + n),
      el('button', { id: 'ex-next', disabled: pos >= n - 1 ? 'disabled' : null, onclick: function () { go(pos + 1); } }, 'next →')));
    var search = el('input', { type: 'search', id: 'ex-jump', placeholder: 'search examples…' });
    var list = el('div', { class: 'list', id: 'ex-list' });
    function drawList() {
      var q = search.value.toLowerCase();
      clear(list);
      d.examples.forEach(function (x, p) {
        if (q && exampleText(x).indexOf(q) < 0) return;
        list.appendChild(link('#/example/' + m.id + '/' + p, x.idx + ' · ' + (num(x.uds) ? fmt(x.uds, 3) : '–') + ' · ' +
          (x.question || '').slice(0, 70), { class: p === pos ? 'here' : null }));
      });
    }
    search.addEventListener('input', drawList);
    drawList();
    var ke = {};
    (e.ke_layers || []).forEach(function (l) { ke[l] = true; });
    var body = el('tbody');
    var d1 = e.s1_delta || [], d2 = e.s2_delta || [];
    var ratio = d1.map(function (a, j) { return ke[j] && num(a) && num(d2[j]) && a > 0 ? Math.min(1, Math.max(0, d2[j] / a)) : null; });
    d1.forEach(function (a, j) {
      body.appendChild(el('tr', { 'data-layer': j, class: ke[j] ? 'ke' : null }, el('td', null, String(j)),
        el('td', null, fmt(a, 6)), el('td', null, fmt(d2[j], 6)), el('td', null, fmt(ratio[j])), el('td', null, ke[j] ? 'KE' : '')));
    });
    var gens = [];
    if (typeof e.generation === 'string') gens.push(['this model', e.generation]);
    if (e.generations && typeof e.generations === 'object') Object.keys(e.generations).forEach(function (k) { gens.push([k, e.generations[k]]); });
    var detail = el('div', null,
      el('h1', null, 'Example ', el('span', { id: 'ex-idx' }, String(e.idx))),
      el('div', { class: 'qa' }, el('p', null, el('span', { class: 'label' }, 'Question'), el('span', { id: 'ex-question' }, e.question || '')),
        el('p', null, el('span', { class: 'label' }, 'Answer'), el('span', { id: 'ex-answer' }, answerWithEntity(e))),
        el('p', { class: 'muted' }, e.entity_span ? 'highlighted: the entity span UDS scores' :
          'entity not highlighted (the data file with the entity was not found)')),
      el('div', { class: 'cards' },
        el('div', { class: 'card' }, el('div', { class: 'muted' }, 'UDS_i'), el('div', { class: 'big', id: 'ex-uds' }, num(e.uds) ? fmt(e.uds) : '–'),
          e.skipped_reason ? el('div', { class: 'muted' }, 'skipped: ' + e.skipped_reason) : null),
        el('div', { class: 'card' }, el('div', { class: 'muted' }, 'KE layers'), el('div', { id: 'ex-ke' }, (e.ke_layers || []).join(', ') || 'none'))),
      d1.length ? layerChart('ex-chart', [
        { name: 's1', label: 'Δ S1', values: d1, color: '#1f77b4' },
        { name: 's2', label: 'Δ S2', values: d2, color: '#ff7f0e' },
        { name: 'ratio', label: 'clipped ratio on KE layers (right axis)', values: ratio, color: '#2ca02c', axis: 'right', dash: '5,3' }],
        function (j) { return 'layer ' + j + (ke[j] ? ' (KE)' : '') + '\nΔ S1  ' + fmt(d1[j], 6) + '\nΔ S2  ' + fmt(d2[j], 6) + '\nratio ' + fmt(ratio[j]); },
        { tau: d.summary.tau, height: 220 }) : null,
      d1.length ? el('table', { id: 'ex-layers' }, el('thead', null, el('tr', null,
        ['layer', 'Δ S1', 'Δ S2', 'clipped ratio', 'KE'].map(function (h) { return el('th', null, h); }))), body) : null,
      gens.length ? [el('h2', null, 'Generations'), gens.map(function (g) { return el('p', { class: 'qa' }, el('span', { class: 'label' }, g[0]), String(g[1])); })] : null);
    add(main, el('div', { class: 'layout' }, el('div', null, search, list), detail));
  }

  // ---------- compare ----------
  function pageCompare(main, a, b) {
    var withData = R.data.models.filter(function (o) { return o.file; });
    if (withData.length < 2) { add(main, el('p', null, 'compare needs two scored models (uds score folders)')); return; }
    if (!R.data.models[a] || !R.data.models[a].file) a = withData[0].id;
    if (!R.data.models[b] || !R.data.models[b].file || b === a) b = withData.filter(function (o) { return o.id !== a; })[0].id;
    function sel(v, other) {
      var s = el('select', { onchange: function () {
        location.hash = other === 'b' ? '#/compare/' + s.value + '/' + b : '#/compare/' + a + '/' + s.value; } },
        withData.map(function (o) { return el('option', { value: o.id }, o.name); }));
      s.value = String(v);
      return s;
    }
    add(main, el('h1', null, 'Compare two models, example by example'));
    add(main, el('div', { class: 'controls' }, 'A ', sel(a, 'b'), ' B ', sel(b, 'a')));
    var box = el('div', null, el('p', { class: 'muted' }, 'loading…'));
    add(main, box);
    Promise.all([R.load(a), R.load(b)]).then(function (ds) { drawCompare(clear(box), ds[0], ds[1], a, b); });
  }
  function drawCompare(box, A, B, a, b) {
    var byIdx = {};
    B.examples.forEach(function (e) { byIdx[String(e.idx)] = e; });
    var pairs = A.examples.map(function (e, pos) { return [e, byIdx[String(e.idx)], pos]; }).filter(function (p) { return p[1]; });
    var both = pairs.filter(function (p) { return num(p[0].uds) && num(p[1].uds); });
    var mean = function (xs) { return xs.length ? xs.reduce(function (s, x) { return s + x; }, 0) / xs.length : null; };
    add(box, el('p', null, pairs.length + ' examples in both; where both are scored (' + both.length + '): mean UDS_i A ' +
      fmt(mean(both.map(function (p) { return p[0].uds; }))) + ', B ' + fmt(mean(both.map(function (p) { return p[1].uds; }))) +
      '; B erased more on ' + both.filter(function (p) { return p[1].uds > p[0].uds; }).length + ', less on ' +
      both.filter(function (p) { return p[1].uds < p[0].uds; }).length));
    var sortByDiff = true;
    var body = el('tbody'), detail = el('div', { id: 'cmp-detail' });
    function draw() {
      var rows = pairs.slice();
      if (sortByDiff) rows.sort(function (x, y) {
        var dx = num(x[0].uds) && num(x[1].uds) ? Math.abs(x[1].uds - x[0].uds) : -1;
        var dy = num(y[0].uds) && num(y[1].uds) ? Math.abs(y[1].uds - y[0].uds) : -1;
        return dy - dx;
      });
      clear(body);
      if (rows.length && !detail.firstChild) show(rows[0]);
      rows.forEach(function (p) {
        var diff = num(p[0].uds) && num(p[1].uds) ? p[1].uds - p[0].uds : null;
        body.appendChild(el('tr', { class: 'clickable', 'data-idx': p[0].idx, onclick: function () { show(p); } },
          el('td', { class: 'text' }, String(p[0].idx)), el('td', null, fmt(p[0].uds)), el('td', null, fmt(p[1].uds)),
          el('td', null, fmt(diff)), el('td', { class: 'text clip', title: p[0].question || '' }, p[0].question || '')));
      });
    }
    function show(p) {
      var ea = p[0], eb = p[1];
      clear(detail);
      add(detail, [el('h2', null, 'Example ' + ea.idx), el('p', { class: 'qa' }, el('span', { class: 'label' }, 'Q'), ea.question || ''),
        el('p', { class: 'qa' }, el('span', { class: 'label' }, 'A'), answerWithEntity(ea)),
        layerChart('cmp-chart', [
          { name: 's1', label: 'Δ S1 (retain → full)', values: ea.s1_delta || [], color: '#1f77b4' },
          { name: 'a', label: 'Δ S2 of A: ' + A.name, values: ea.s2_delta || [], color: '#ff7f0e' },
          { name: 'b', label: 'Δ S2 of B: ' + B.name, values: eb.s2_delta || [], color: '#9467bd', dash: '4,3' }],
          function (j) { return 'layer ' + j + '\nΔ S1    ' + fmt((ea.s1_delta || [])[j], 6) + '\nΔ S2 A  ' + fmt((ea.s2_delta || [])[j], 6) +
            '\nΔ S2 B  ' + fmt((eb.s2_delta || [])[j], 6); }, { tau: A.summary.tau, height: 230 }),
        el('p', null, link('#/example/' + a + '/' + p[2], 'open in A'), ' · ',
          link('#/example/' + b + '/' + B.examples.indexOf(eb), 'open in B'))]);
    }
    var th = el('th', { onclick: function () { sortByDiff = !sortByDiff; draw(); }, title: 'sort by |B − A| / data order' }, 'B − A');
    add(box, el('div', { class: 'layout cmp' }, el('div', { class: 'wrap' }, el('table', { id: 'cmp-table' }, el('thead', null, el('tr', null,
      el('th', { class: 'text' }, 'idx'), el('th', null, 'UDS_i A'), el('th', null, 'UDS_i B'), th, el('th', { class: 'text' }, 'question'))), body)), detail));
    draw();
  }

  // ---------- meta-evaluation ----------
  function ciBar(lo, hi, mid) {
    var W = 160, H = 16, x = scaleLin(0, 1, 4, W - 4);
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    add(g, sv('line', { class: 'axis', x1: 4, x2: W - 4, y1: H / 2, y2: H / 2, 'stroke-opacity': 0.3 }));
    if (num(lo) && num(hi)) add(g, sv('line', { x1: x(lo), x2: x(hi), y1: H / 2, y2: H / 2, stroke: '#1f77b4', 'stroke-width': 4 }));
    if (num(mid)) add(g, sv('circle', { cx: x(mid), cy: H / 2, r: 4, fill: '#0b3d91' }));
    return g;
  }
  function histogram(groups, W, H) {
    var all = [];
    groups.forEach(function (g) { all = all.concat(g.values.filter(num)); });
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, id: 'pn-hist' });
    if (!all.length) return g;
    var lo = Math.min.apply(null, all), hi = Math.max.apply(null, all), bins = 12;
    if (lo === hi) { lo -= 0.5; hi += 0.5; }
    var counts = groups.map(function (gr) {
      var c = new Array(bins).fill(0);
      gr.values.filter(num).forEach(function (v) { c[Math.min(bins - 1, Math.floor((v - lo) / (hi - lo) * bins))]++; });
      return c;
    });
    var top = Math.max.apply(null, counts.map(function (c) { return Math.max.apply(null, c); }));
    var x = scaleLin(0, bins, 40, W - 10), y = scaleLin(0, top, H - 30, 10), bw = (x(1) - x(0)) / groups.length;
    counts.forEach(function (c, gi) {
      c.forEach(function (v, i) {
        add(g, sv('rect', { x: x(i) + gi * bw, y: y(v), width: bw - 1, height: H - 30 - y(v), fill: groups[gi].color,
          onmousemove: function (ev) { tipShow(ev, groups[gi].name + ': ' + v + ' models in [' + fmt(lo + i * (hi - lo) / bins, 3) + ', ' + fmt(lo + (i + 1) * (hi - lo) / bins, 3) + ')'); },
          onmouseleave: tipHide }));
      });
    });
    add(g, sv('line', { class: 'axis', x1: 40, x2: W - 10, y1: H - 30, y2: H - 30 }));
    add(g, sv('text', { x: 40, y: H - 14, text: fmt(lo, 3) }));
    add(g, sv('text', { x: W - 10, y: H - 14, 'text-anchor': 'end', text: fmt(hi, 3) }));
    add(g, sv('text', { x: 36, y: y(top) + 4, 'text-anchor': 'end', text: String(top) }));
    return g;
  }
  function scatter(points, W, H, id) {
    var xs = points.map(function (p) { return p.x; }), ys = points.map(function (p) { return p.y; });
    var ext = extent([xs.concat(ys)]);
    var lo = Math.min.apply(null, xs.concat(ys).filter(num)), hi = Math.max.apply(null, xs.concat(ys).filter(num));
    if (!num(lo)) { lo = 0; hi = 1; } if (lo === hi) { lo -= 0.5; hi += 0.5; }
    var x = scaleLin(lo, hi, 44, W - 10), y = scaleLin(lo, hi, H - 30, 10);
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, id: id });
    add(g, sv('line', { x1: x(lo), y1: y(lo), x2: x(hi), y2: y(hi), stroke: '#bbb', 'stroke-dasharray': '3,3' }));
    add(g, sv('line', { class: 'axis', x1: 44, x2: W - 10, y1: H - 30, y2: H - 30 }));
    add(g, sv('line', { class: 'axis', x1: 44, x2: 44, y1: 10, y2: H - 30 }));
    add(g, sv('text', { x: (W + 44) / 2, y: H - 6, 'text-anchor': 'middle', text: 'before' }));
    add(g, sv('text', { x: 10, y: 20, text: 'after' }));
    add(g, sv('text', { x: 44, y: H - 16, text: fmt(lo, 3) }));
    add(g, sv('text', { x: W - 10, y: H - 16, 'text-anchor': 'end', text: fmt(hi, 3) }));
    points.forEach(function (p) {
      if (!num(p.x) || !num(p.y)) return;
      add(g, sv('circle', { cx: x(p.x), cy: y(p.y), r: 4, fill: p.kept ? '#1f77b4' : 'none', stroke: '#1f77b4',
        onmousemove: function (ev) { tipShow(ev, p.name + '\nbefore ' + fmt(p.x) + '\nafter  ' + fmt(p.y) + (p.kept ? '\nkept by the filters' : '\ndropped by the filters')); },
        onmouseleave: tipHide }));
    });
    void ext;
    return g;
  }
  var META = { sort: 'overall', dir: -1, text: '', key: null };
  function pageMeta(main, n) {
    var metas = R.data.meta;
    var me = metas[n] || metas[0];
    if (!me) { add(main, el('p', null, 'no meta-evaluation given')); return; }
    add(main, el('h1', null, 'Meta-evaluation'));
    if (metas.length > 1) add(main, el('p', null, metas.map(function (x, i) { return link('#/meta/' + i, 'run ' + (i + 1) + ' ', null); })));
    var st = me.settings || {};
    add(main, el('p', { class: 'muted' }, 'zoo ' + (st.zoo || '?') + '; robustness ' + (st.robustness_form || '?') +
      '; filters ' + (st.filters === false ? 'off' : 'on') + (st.left_out && st.left_out.length ? '; left out ' + st.left_out.length + ' models' : '') +
      ' · ' + me.source));
    var search = el('input', { type: 'search', id: 'meta-filter', placeholder: 'filter metrics…', value: META.text });
    var minAuc = el('select', { id: 'meta-min-auc' }, ['0', '0.5', '0.7', '0.9'].map(function (v) { return el('option', { value: v }, 'AUC ≥ ' + v); }));
    var wrap = el('div', { class: 'wrap' }), side = el('div', { id: 'meta-detail' });
    var cols = [['key', 'metric'], ['auc', 'faith AUC'], ['ci', '95% CI'], ['p_mean', 'P mean'], ['n_mean', 'N mean'], ['q', 'Q'],
      ['r', 'R'], ['robustness', 'robustness'], ['overall', 'overall'], ['n_kept', 'kept'], ['dropped', 'dropped']];
    function draw() {
      var text = search.value.toLowerCase(), floor = parseFloat(minAuc.value);
      META.text = search.value;
      var rows = me.keys.filter(function (k) { return k.key.toLowerCase().indexOf(text) >= 0 && (floor === 0 || (num(k.auc) && k.auc >= floor)); });
      var sk = META.sort, dir = META.dir;
      rows.sort(function (x, y) {
        var a = sk === 'dropped' ? x.dropped.length : x[sk], b = sk === 'dropped' ? y.dropped.length : y[sk];
        if (sk === 'key') return dir * String(a).localeCompare(String(b));
        if (!num(a) || !num(b)) return (!num(a)) - (!num(b));
        return dir * (a - b);
      });
      var body = el('tbody');
      rows.forEach(function (k) {
        body.appendChild(el('tr', { class: 'clickable', 'data-key': k.key, onclick: function () { META.key = k.key; showKey(k); } },
          el('td', { class: 'text' }, k.key), el('td', null, fmt(k.auc, 3)),
          el('td', { title: k.ci ? '[' + fmt(k.ci[0], 3) + ', ' + fmt(k.ci[1], 3) + ']' : 'no interval' }, ciBar(k.ci && k.ci[0], k.ci && k.ci[1], k.auc)),
          el('td', null, fmt(k.p_mean, 3)), el('td', null, fmt(k.n_mean, 3)), el('td', null, fmt(k.q)), el('td', null, fmt(k.r)),
          el('td', null, fmt(k.robustness)), el('td', null, fmt(k.overall, 3)), el('td', null, num(k.n_kept) ? String(k.n_kept) : '–'),
          el('td', null, String(k.dropped.length))));
      });
      clear(wrap).appendChild(el('table', { id: 'meta-table' }, el('thead', null, el('tr', null, cols.map(function (c) {
        return el('th', { class: (c[0] === 'key' ? 'text ' : '') + (META.sort === c[0] ? (META.dir > 0 ? 'sorted-asc' : 'sorted-desc') : ''),
          onclick: function () { if (META.sort === c[0]) META.dir = -META.dir; else { META.sort = c[0]; META.dir = c[0] === 'key' ? 1 : -1; } draw(); } }, c[1]);
      }))), body));
    }
    function showKey(k) {
      clear(side);
      add(side, el('h2', null, k.key + ': faithfulness AUC ' + fmt(k.auc, 3) + (k.ci ? ' [' + fmt(k.ci[0], 3) + ', ' + fmt(k.ci[1], 3) + ']' : '')));
      var vals = me.values, members = me.members;
      if (vals && members && vals.orig) {
        var pool = function (lab) { return Object.keys(members).filter(function (n) { return members[n].kind === 'pool' && members[n].pool === lab; })
          .map(function (n) { return (vals.orig[n] || {})[k.key]; }); };
        add(side, [el('p', { class: 'legend muted' }, el('span', null, 'P pool (knowledge present) in blue, N pool (absent) in orange; raw values')),
          histogram([{ name: 'P', values: pool('P'), color: '#1f77b4' }, { name: 'N', values: pool('N'), color: '#ff7f0e' }], 420, 200)]);
        [['nf4', 'NF4 quantisation', k.q], ['relearn', 'relearning', k.r]].forEach(function (s) {
          if (!vals[s[0]]) return;
          var kept = {};
          var rob = k.dropped.map(function (x) { return x.model; });
          var pts = Object.keys(members).filter(function (n) { return members[n].kind === 'unlearned'; }).map(function (n) {
            kept[n] = rob.indexOf(n) < 0;
            return { name: n, x: (vals.orig[n] || {})[k.key], y: (vals[s[0]][n] || {})[k.key], kept: kept[n] };
          });
          add(side, [el('h2', null, s[1] + ' (score ' + fmt(s[2]) + '): raw value before vs after'), scatter(pts, 420, 260, 'scatter-' + s[0])]);
        });
      } else {
        var imgs = me.images || {};
        ['pn_histograms.png', 'quantization_scatter.png', 'relearning_scatter.png'].forEach(function (nm) {
          if (imgs[nm]) add(side, el('img', { class: 'plot', src: imgs[nm], alt: nm }));
        });
        if (!Object.keys(imgs).length) add(side, el('p', { class: 'muted' }, 'no per-model values or plots in this meta-evaluation output'));
      }
      add(side, el('h2', null, 'Models the filters dropped (' + k.dropped.length + ')'));
      add(side, el('table', { id: 'meta-dropped' }, el('tbody', null, k.dropped.map(function (x) {
        return el('tr', null, el('td', { class: 'text' }, x.model), el('td', { class: 'text muted' }, x.reason));
      }))));
    }
    search.addEventListener('input', draw);
    minAuc.addEventListener('change', draw);
    add(main, el('div', { class: 'controls' }, search, minAuc, el('span', { class: 'muted' }, 'click a metric for its P/N histogram, robustness scatter and filtered models')));
    add(main, el('div', { class: 'layout meta' }, wrap, side));
    draw();
    var first = me.keys.filter(function (k) { return k.key === META.key; })[0] || me.keys.filter(function (k) { return k.key === 'uds'; })[0] || me.keys[0];
    if (first) showKey(first);
  }

  // ---------- probe and audit ----------
  function pageProbe(main) {
    add(main, el('h1', null, 'Probe: verbatim vs semantic memory'));
    R.data.probes.forEach(function (p, i) {
      var levels = (p.settings && p.settings.levels) || [];
      if (!levels.length) Object.keys(p.models).forEach(function (m) { Object.keys(p.models[m].levels).forEach(function (l) { if (levels.indexOf(l) < 0) levels.push(l); }); });
      add(main, el('p', { class: 'muted' }, 'corpus ' + ((p.settings || {}).corpus || '?') + ' · ' + p.source));
      var body = el('tbody');
      Object.keys(p.models).forEach(function (m) {
        var b = p.models[m];
        body.appendChild(el('tr', null, el('td', { class: 'name' }, m), levels.map(function (l) { return el('td', null, fmt((b.levels[l] || {}).verbatim_rate, 2)); }),
          el('td', null, fmt((b.levels[levels[levels.length - 1]] || {}).semantic_acc, 2)), el('td', null, fmt(b.masked_by_refusal, 2))));
      });
      add(main, el('table', { id: 'probe-table-' + i }, el('thead', null, el('tr', null, el('th', { class: 'text' }, 'model'),
        levels.map(function (l) { return el('th', null, 'verbatim ' + l); }), el('th', null, 'semantic acc'), el('th', null, 'masked by refusal'))), body));
      if (p.image) add(main, el('img', { class: 'plot', src: p.image, alt: 'probe heatmap' }));
    });
  }
  function pageAudit(main) {
    add(main, el('h1', null, 'Deletion audit'));
    R.data.audits.forEach(function (a, i) {
      add(main, el('h2', null, String(a.model), ' on ', String(a.db)));
      var fields = ['leakage', 'retrieval_mediated', 'artifact_rate', 'full_em', 'n_facts'];
      var body = el('tbody');
      Object.keys(a.variants).forEach(function (v) {
        var r = a.variants[v] || {};
        body.appendChild(el('tr', null, el('td', { class: 'text' }, v), fields.map(function (f) { return el('td', null, f === 'n_facts' ? String(r[f]) : fmt(r[f], 3)); })));
      });
      add(main, el('table', { id: 'audit-table-' + i }, el('thead', null, el('tr', null, el('th', { class: 'text' }, 'variant'),
        fields.map(function (f) { return el('th', null, f); }))), body));
      if (a.cells.length) {
        var keys = Object.keys(a.cells[0]);
        add(main, [el('h2', null, 'cells (variant × prompt style)'), el('div', { class: 'wrap' }, el('table', null,
          el('thead', null, el('tr', null, keys.map(function (k) { return el('th', null, k); }))),
          el('tbody', null, a.cells.map(function (c) { return el('tr', null, keys.map(function (k) { return el('td', null, num(c[k]) ? fmt(c[k], 3) : String(c[k])); })); }))))]);
      }
      if (a.image) add(main, el('img', { class: 'plot', src: a.image, alt: 'attribution' }));
      add(main, el('p', { class: 'muted' }, a.source));
    });
  }
  function pageSkipped(main) {
    add(main, el('h1', null, 'Passed over'));
    add(main, el('table', { id: 'skipped' }, el('tbody', null, R.data.skipped.map(function (s) {
      return el('tr', null, el('td', { class: 'text' }, s[0]), el('td', { class: 'text muted' }, s[1]));
    }))));
  }

  // ---------- routing ----------
  function nav(here) {
    var d = R.data, links = [['#/', 'leaderboard', 'lb']];
    if (d.models.filter(function (m) { return m.file; }).length >= 2) links.push(['#/compare', 'compare', 'compare']);
    if (d.meta.length) links.push(['#/meta', 'meta-evaluation', 'meta']);
    if (d.probes.length) links.push(['#/probe', 'probe', 'probe']);
    if (d.audits.length) links.push(['#/audit', 'audit', 'audit']);
    if (d.skipped.length) links.push(['#/skipped', 'passed over (' + d.skipped.length + ')', 'skipped']);
    clear(byId('nav'));
    links.forEach(function (l) { byId('nav').appendChild(link(l[0], l[1], { class: l[2] === here ? 'here' : null, id: 'nav-' + l[2] })); });
  }
  function route() {
    tipHide();
    var main = clear(byId('main'));
    if (!R.data) { add(main, el('p', { class: 'err' }, 'data/index.js is missing: rebuild the report with uds report')); return; }
    var parts = location.hash.replace(/^#\/?/, '').split('/');
    var page = parts[0] || 'lb', a = parseInt(parts[1], 10), b = parseInt(parts[2], 10);
    nav(page === 'model' || page === 'example' ? 'lb' : page);
    if (page === 'model') pageModel(main, a);
    else if (page === 'example') pageExample(main, a, isNaN(b) ? 0 : b);
    else if (page === 'compare') pageCompare(main, a, b);
    else if (page === 'meta') pageMeta(main, isNaN(a) ? 0 : a);
    else if (page === 'probe') pageProbe(main);
    else if (page === 'audit') pageAudit(main);
    else if (page === 'skipped') pageSkipped(main);
    else pageLeaderboard(main);
    R.page = page;
    window.scrollTo(0, 0);
  }
  window.addEventListener('hashchange', route);
  document.addEventListener('DOMContentLoaded', function () { route(); R.ready = true; });
})();
