/* uds report: the core of the static site's pages (drawn in the browser from data/index.js and
 * the per-model data/m<ID>.js files, loaded on demand with a <script> tag, so file:// works):
 * DOM helpers, number printing, tooltip, lazy model data, SVG charts and the router. The pages
 * live in leaderboard.js, model.js and meta.js and register themselves in UDSreport.pages.
 * Every text from the results goes into the page as a text node or an attribute value set
 * through the DOM, never as markup: a name holding "<script>" shows as text. */
(function () {
  'use strict';
  var R = window.UDSreport = { data: null, models: {}, waiting: {}, pages: {}, ui: {} };
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
  /* A long name as text nodes with a <wbr> after each _ / - . so it wraps between its parts, never
   * inside one. */
  function breakable(text) {
    var out = [];
    String(text).split(/(?<=[_\/\-.])/).forEach(function (part, i) {
      if (i) out.push(document.createElement('wbr'));
      out.push(document.createTextNode(part));
    });
    return out;
  }
  function num(v) { return typeof v === 'number' && isFinite(v); }
  function link(hash, text, attrs) { return el('a', Object.assign({ href: hash }, attrs || {}), text); }
  function byId(id) { return document.getElementById(id); }

  // ---------- numbers ----------
  // The rule of uds_leaderboard/rows.py's display_number: fixed decimals, "0" below 1e-6 in
  // magnitude (7e-12 is spec §6.1's epsilon, not a measurement), never "-0.000"; the exact value
  // goes into the title of the cell (exactTitle).
  var ZERO_BELOW = 1e-6;
  function fmt(v, d) {
    if (!num(v)) return '–';
    d = d === undefined ? 4 : d;
    if (Math.abs(v) < ZERO_BELOW) return '0';
    var s = v.toFixed(d);
    return /^-0(\.0*)?$/.test(s) ? s.slice(1) : s;
  }
  /* A column value by its format code (uds/site/columns.py): f<d>, int, sci, plain. */
  function fmtCol(v, format) {
    if (!num(v)) return '–';
    if (format === 'int') return String(Math.round(v));
    if (format === 'sci') { var e = v.toExponential(); return e.slice(-3) === 'e+0' ? e.slice(0, -3) : e; }
    if (format === 'plain') return String(v);
    return fmt(v, parseInt((format || 'f3').slice(1), 10));
  }
  function exactTitle(v) { return num(v) ? 'exact value ' + String(v) : null; }
  var DIR_TAG = { knowledge: '↑ knowledge', erasure: '↑ erased', utility: '↑ utility', better: '↑ better' };
  function dirTag(direction) { return DIR_TAG[direction] || ''; }

  // ---------- tooltip ----------
  function tipShow(ev, text) {
    var t = byId('tip');
    t.textContent = text;
    t.hidden = false;
    t.style.left = Math.min(ev.clientX + 14, window.innerWidth - 320) + 'px';
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

  // ---------- charts ----------
  /* Round tick values in [lo, hi] (cover: from the round value at or below lo to the one at or
   * above hi, for an axis that is then stretched to them): steps of 1, 2 or 5 times a power of
   * ten, about n of them. */
  function niceTicks(lo, hi, n, cover) {
    if (!num(lo) || !num(hi)) return [];
    if (hi === lo) return [lo];
    var raw = (hi - lo) / Math.max(n || 4, 1), pow = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * pow; }).filter(function (st) { return st >= raw * (1 - 1e-9); })[0];
    var first = (cover ? Math.floor(lo / step + 1e-9) : Math.ceil(lo / step - 1e-9)) * step;
    var last = cover ? Math.ceil(hi / step - 1e-9) * step : hi;
    var out = [];
    for (var i = 0, v = first; v <= last + step * 1e-9; i++, v = first + i * step) {
      out.push(Math.abs(v) < step * 1e-9 ? 0 : +v.toPrecision(12));
    }
    return out;
  }
  /* How many decimals a tick of this step needs. */
  function tickDecimals(ticks) {
    if (ticks.length < 2) return 2;
    var step = Math.abs(ticks[1] - ticks[0]);
    return Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
  }
  function tickText(v, d) { return Math.abs(v) < 1e-12 ? '0' : v.toFixed(d); }
  /* Axis titles: under the x axis, and turned along the y axis at x = at. */
  function xTitle(g, text, x, y) { add(g, sv('text', { class: 'axis-title', x: x, y: y, 'text-anchor': 'middle', text: text })); }
  function yTitle(g, text, at, mid) {
    add(g, sv('text', { class: 'axis-title', x: at, y: mid, 'text-anchor': 'middle', transform: 'rotate(-90 ' + at + ' ' + mid + ')', text: text }));
  }
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
    var W = opts.width || 640, H = opts.height || 280, L = 64, Rm = 56, T = 12, B = 38;
    var left = series.filter(function (s) { return s.axis !== 'right'; });
    var ext = extent(left.map(function (s) { return s.values; }).concat(opts.tau ? [[opts.tau]] : []));
    var ticks = niceTicks(ext[0], ext[1], 5, true);
    if (ticks.length > 1) { ext = [ticks[0], ticks[ticks.length - 1]]; }
    var x = scaleLin(0, Math.max(n - 1, 1), L + 10, W - Rm - 10);
    var y = scaleLin(ext[0], ext[1], H - B, T);
    var y2 = scaleLin(0, 1, H - B, T);
    var g = sv('svg', { id: id, width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
    add(g, sv('line', { class: 'axis', x1: L, x2: W - Rm, y1: y(0), y2: y(0) }));
    add(g, sv('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }));
    var d = tickDecimals(ticks);
    ticks.forEach(function (v) {
      add(g, sv('line', { class: 'tick', x1: L - 3, x2: L, y1: y(v), y2: y(v) }));
      add(g, sv('text', { x: L - 5, y: y(v) + 4, 'text-anchor': 'end', text: tickText(v, d) }));
    });
    yTitle(g, opts.yTitle || 'value', 14, (T + H - B) / 2);
    if (series.some(function (s) { return s.axis === 'right'; })) {
      add(g, sv('line', { class: 'axis', x1: W - Rm, x2: W - Rm, y1: T, y2: H - B }));
      [0, 0.5, 1].forEach(function (v) { add(g, sv('text', { x: W - Rm + 5, y: y2(v) + 4, text: String(v) })); });
      yTitle(g, opts.y2Title || 'ratio', W - 10, (T + H - B) / 2);
    }
    if (opts.tau) add(g, sv('line', { x1: L, x2: W - Rm, y1: y(opts.tau), y2: y(opts.tau), stroke: '#999', 'stroke-dasharray': '2,3' }));
    if (opts.tau) add(g, sv('text', { x: W - Rm - 4, y: y(opts.tau) - 4, 'text-anchor': 'end', text: 'τ = ' + opts.tau }));
    var step = Math.max(1, Math.ceil(n / 16));
    for (var i = 0; i < n; i += step) add(g, sv('text', { x: x(i), y: H - B + 16, 'text-anchor': 'middle', text: String(i) }));
    xTitle(g, opts.xTitle || 'layer', (L + W - Rm) / 2, H - 4);
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
  function barChart(id, values, label, tipText, yLabel) {
    var n = values.length, W = 640, H = 170, L = 64, T = 10, B = 36;
    var ticks = niceTicks(0, Math.max.apply(null, values.concat([1])), 4).filter(function (v) { return v === Math.round(v); });
    var hi = Math.max.apply(null, values.concat(ticks).concat([1]));
    var bw = (W - L - 10) / Math.max(n, 1);
    var y = scaleLin(0, hi, H - B, T);
    var g = sv('svg', { id: id, width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    add(g, sv('line', { class: 'axis', x1: L, x2: W - 10, y1: H - B, y2: H - B }));
    add(g, sv('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }));
    ticks.forEach(function (v) { add(g, sv('text', { x: L - 5, y: y(v) + 4, 'text-anchor': 'end', text: String(v) })); });
    yTitle(g, yLabel || 'count', 14, (T + H - B) / 2);
    values.forEach(function (v, i) {
      add(g, sv('rect', { x: L + i * bw + 1, y: y(v), width: Math.max(bw - 2, 1), height: H - B - y(v), fill: '#7aa6d6',
        'data-layer': i, onmousemove: function (ev) { tipShow(ev, tipText(i)); }, onmouseleave: tipHide }));
      if (n <= 40 || i % Math.ceil(n / 40) === 0) add(g, sv('text', { x: L + (i + 0.5) * bw, y: H - B + 14, 'text-anchor': 'middle', text: String(i) }));
    });
    xTitle(g, label, (L + W) / 2, H - 2);
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

  function ciBar(lo, hi, mid) {
    var W = 160, H = 16, x = scaleLin(0, 1, 4, W - 4);
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    add(g, sv('line', { class: 'axis', x1: 4, x2: W - 4, y1: H / 2, y2: H / 2, 'stroke-opacity': 0.3 }));
    if (num(lo) && num(hi)) add(g, sv('line', { x1: x(lo), x2: x(hi), y1: H / 2, y2: H / 2, stroke: '#1f77b4', 'stroke-width': 4 }));
    if (num(mid)) add(g, sv('circle', { cx: x(mid), cy: H / 2, r: 4, fill: '#0b3d91' }));
    return g;
  }
  /* P/N histogram: groups [{name, color, points: [{name, value}]}]; each bar's hover names its models.
   * opts.threshold (a raw value) is drawn and is a bin edge, so a bin never holds values from both
   * sides of it: where the threshold separates the pools, no bar suggests an overlap. */
  function histogram(groups, W, H, opts) {
    opts = opts || {};
    var all = [];
    groups.forEach(function (gr) { gr.points.forEach(function (p) { if (num(p.value)) all.push(p.value); }); });
    if (!all.length) return null;
    var L = 52, Rm = 12, T = 12, B = 40, t = opts.threshold;
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, id: opts.id || 'pn-hist' });
    var lo = Math.min.apply(null, all), hi = Math.max.apply(null, all);
    if (num(t)) { lo = Math.min(lo, t); hi = Math.max(hi, t); }
    if (lo === hi) { lo -= 0.5; hi += 0.5; }
    var w = (hi - lo) / 12, start = num(t) ? t - Math.ceil((t - lo) / w - 1e-9) * w : lo;
    var bins = Math.max(1, Math.ceil((hi - start) / w - 1e-9));
    if (start + bins * w <= hi) bins++;                  // the top value inside the last bin
    var binOf = function (v) { return Math.max(0, Math.min(bins - 1, Math.floor((v - start) / w + 1e-9))); };
    var members = groups.map(function (gr) {
      var c = []; for (var i = 0; i < bins; i++) c.push([]);
      gr.points.forEach(function (p) { if (num(p.value)) c[binOf(p.value)].push(p); });
      return c;
    });
    var top = Math.max.apply(null, members.map(function (c) { return Math.max.apply(null, c.map(function (b) { return b.length; })); }));
    var x = scaleLin(start, start + bins * w, L, W - Rm), y = scaleLin(0, Math.max(top, 1), H - B, T);
    var bw = (x(start + w) - x(start)) / groups.length;
    members.forEach(function (c, gi) {
      c.forEach(function (ps, i) {
        var names = ps.map(function (p) { return p.name + '  ' + fmt(p.value, 3); }).join('\n');
        var text = groups[gi].name + ': ' + ps.length + ' models in [' + fmt(start + i * w, 3) + ', ' +
          fmt(start + (i + 1) * w, 3) + ')' + (names ? '\n' + names : '');
        add(g, sv('rect', { x: x(start + i * w) + gi * bw, y: y(ps.length), width: Math.max(bw - 1, 1), height: H - B - y(ps.length),
          fill: groups[gi].color, 'data-pool': groups[gi].name, 'data-bin': i, 'data-names': ps.map(function (p) { return p.name; }).join('\n'),
          onmousemove: function (ev) { tipShow(ev, text); }, onmouseleave: tipHide }));
      });
    });
    add(g, sv('line', { class: 'axis', x1: L, x2: W - Rm, y1: H - B, y2: H - B }));
    add(g, sv('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }));
    var xt = niceTicks(start, start + bins * w, 5), xd = tickDecimals(xt);
    xt.forEach(function (v) { add(g, sv('text', { x: x(v), y: H - B + 14, 'text-anchor': 'middle', text: tickText(v, xd) })); });
    niceTicks(0, Math.max(top, 1), 3).filter(function (v) { return v === Math.round(v); }).forEach(function (v) {
      add(g, sv('text', { x: L - 5, y: y(v) + 4, 'text-anchor': 'end', text: String(v) }));
    });
    if (num(t)) {
      add(g, sv('line', { id: (opts.id || 'pn-hist') + '-threshold', 'data-value': t, x1: x(t), x2: x(t), y1: T - 4, y2: H - B,
        stroke: '#444', 'stroke-width': 1.5, 'stroke-dasharray': '5,3' }));
      add(g, sv('text', { x: x(t) + 4, y: T + 6, text: 'threshold ' + fmt(t, 3) }));
    }
    xTitle(g, opts.xTitle || 'value', (L + W - Rm) / 2, H - 6);
    yTitle(g, 'models', 14, (T + H - B) / 2);
    return g;
  }
  /* Before (x) vs after (y) per model, the line of no change dashed; kept models filled. */
  function scatter(points, W, H, id, opts) {
    opts = opts || {};
    if (!points.some(function (p) { return num(p.x) && num(p.y); })) return null;   // no empty axes
    var xs = points.map(function (p) { return p.x; }), ys = points.map(function (p) { return p.y; });
    var lo = Math.min.apply(null, xs.concat(ys).filter(num)), hi = Math.max.apply(null, xs.concat(ys).filter(num));
    if (!num(lo)) { lo = 0; hi = 1; } if (lo === hi) { lo -= 0.5; hi += 0.5; }
    var ticks = niceTicks(lo, hi, 5, true);
    lo = ticks[0]; hi = ticks[ticks.length - 1];
    var L = 56, T = 10, B = 40, Rm = 12;
    var x = scaleLin(lo, hi, L, W - Rm), y = scaleLin(lo, hi, H - B, T), d = tickDecimals(ticks);
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, id: id });
    add(g, sv('line', { x1: x(lo), y1: y(lo), x2: x(hi), y2: y(hi), stroke: '#bbb', 'stroke-dasharray': '3,3' }));
    add(g, sv('line', { class: 'axis', x1: L, x2: W - Rm, y1: H - B, y2: H - B }));
    add(g, sv('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }));
    ticks.forEach(function (v) {
      add(g, sv('text', { class: 'xtick', x: x(v), y: H - B + 14, 'text-anchor': 'middle', text: tickText(v, d) }));
      add(g, sv('text', { class: 'ytick', x: L - 5, y: y(v) + 4, 'text-anchor': 'end', text: tickText(v, d) }));
    });
    xTitle(g, opts.xTitle || 'before', (L + W - Rm) / 2, H - 6);
    yTitle(g, opts.yTitle || 'after', 14, (T + H - B) / 2);
    points.forEach(function (p) {
      if (!num(p.x) || !num(p.y)) return;
      add(g, sv('circle', { cx: x(p.x), cy: y(p.y), r: 4, fill: p.kept ? '#1f77b4' : 'none', stroke: '#1f77b4',
        onmousemove: function (ev) { tipShow(ev, p.name + '\nbefore ' + fmt(p.x) + '\nafter  ' + fmt(p.y) + (p.kept ? '\nkept by the filters' : '\ndropped by the filters')); },
        onmouseleave: tipHide }));
    });
    return el('div', { class: 'figure' }, g, el('div', { class: 'legend muted', id: id + '-legend' },
      el('span', null, '● kept by the filters'), el('span', null, '○ dropped by the filters'),
      el('span', null, '- - - unchanged (after = before)')));
  }

  // ---------- routing ----------
  /* '#/meta/1?x=2' -> {page: 'meta', a: 1, b: NaN, params: URLSearchParams('x=2')} */
  function parseHash(hash) {
    var raw = hash.replace(/^#\/?/, ''), q = raw.indexOf('?');
    var parts = (q >= 0 ? raw.slice(0, q) : raw).split('/');
    return { page: parts[0] || 'lb', a: parseInt(parts[1], 10), b: parseInt(parts[2], 10),
      params: new URLSearchParams(q >= 0 ? raw.slice(q + 1) : '') };
  }
  function nav(here) {
    var d = R.data, links = [['#/', 'leaderboard', 'lb']];
    if (d.models.filter(function (m) { return m.file; }).length >= 2) links.push(['#/compare', 'compare', 'compare']);
    if (d.meta.length) links.push(['#/meta', 'meta-evaluation', 'meta']);
    if (d.probes.length) links.push(['#/probe', 'probe', 'probe']);
    if (d.audits.length) links.push(['#/audit', 'audit', 'audit']);
    if ((d.curves || []).length) links.push(['#/curves', 'curves', 'curves']);
    if (d.skipped.length) links.push(['#/skipped', 'passed over (' + d.skipped.length + ')', 'skipped']);
    clear(byId('nav'));
    links.forEach(function (l) { byId('nav').appendChild(link(l[0], l[1], { class: l[2] === here ? 'here' : null, id: 'nav-' + l[2] })); });
  }
  function route() {
    tipHide();
    var main = clear(byId('main'));
    if (!R.data) { add(main, el('p', { class: 'err' }, 'data/index.js is missing: rebuild the report with uds report')); return; }
    var h = parseHash(location.hash);
    var page = R.pages[h.page] ? h.page : 'lb';
    nav(page === 'model' || page === 'example' ? 'lb' : page);
    R.pages[page](main, h);
    R.page = page;
    window.scrollTo(0, 0);
  }
  window.addEventListener('hashchange', route);
  document.addEventListener('DOMContentLoaded', function () { route(); R.ready = true; });

  R.ui = { el: el, sv: sv, add: add, clear: clear, num: num, link: link, byId: byId, fmt: fmt, fmtCol: fmtCol,
    exactTitle: exactTitle, dirTag: dirTag, tipShow: tipShow, tipHide: tipHide, scaleLin: scaleLin, extent: extent,
    layerChart: layerChart, barChart: barChart, stripChart: stripChart, histogram: histogram, scatter: scatter,
    ciBar: ciBar, breakable: breakable, niceTicks: niceTicks, tickDecimals: tickDecimals, tickText: tickText,
    xTitle: xTitle, yTitle: yTitle };
})();
