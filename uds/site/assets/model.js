/* uds report: the model page (headline values, every run of the model and where they differ, per
 * layer charts when a run has per-layer data, the population ranks, the examples), the example
 * page and the two-model comparison. */
(function () {
  'use strict';
  var R = window.UDSreport, u = R.ui, el = u.el, add = u.add, clear = u.clear, num = u.num, link = u.link, fmt = u.fmt;
  var KIND = { score: 'uds score run', metrics: 'uds metrics file', ou: 'Open-Unlearning eval summary',
    leaderboard: 'leaderboard / benchmark rows', build: 'zoo build manifest' };

  // ---------- model page ----------
  /* Its name and cards, then (once its data is loaded) the per-layer charts, its values against its
   * own population, its runs and where they differ (folded), and the examples. */
  R.pages.model = function (main, h) {
    var m = R.data.models[h.a];
    if (!m) { add(main, el('p', { class: 'err' }, 'no such model')); return; }
    add(main, el('h1', { id: 'model-name', title: m.name }, u.breakable(m.name)));
    add(main, el('p', { class: 'muted' }, 'method ' + (m.method || '–') + ' · epoch ' + (m.epoch || '–') + ' · ' +
      POP_TEXT[m.population] + ' · named ' + m.specs.join(', ')));
    var cards = addCards(main, m);
    var top = el('div', null, m.file ? el('p', { class: 'muted' }, 'loading…') : null);
    var bottom = el('div');
    add(main, top);
    addPopulation(main, m);
    addRuns(main, m);
    add(main, bottom);
    if (!m.file) { drawModel(top, bottom, cards, m, null); return; }
    R.load(m.id).then(function (d) { drawModel(clear(top), bottom, cards, m, d); },
      function (e) { clear(top).appendChild(el('p', { class: 'err' }, e.message)); });
  };
  var POP_TEXT = { reference: 'reference model', unlearned: 'unlearned model', pool: 'P/N pool member (not unlearned)',
    base: 'base model (not unlearned)' };
  function card(label, value, id, sub, title) {
    return el('div', { class: 'card' }, el('div', { class: 'muted' }, label),
      el('div', { class: 'big', id: id, title: title }, value), sub ? el('div', { class: 'muted', id: id + '-sub' }, sub) : null);
  }
  function addCards(box, m) {
    var c = m.cells;
    var ci = m.ci ? '95% CI [' + fmt(m.ci[0]) + ', ' + fmt(m.ci[1]) + ']' : 'no interval';
    var cards = [el('div', { class: 'card' }, el('div', { class: 'muted' }, 'UDS ', el('small', null, u.dirTag('erasure'))),
      el('div', { class: 'big', id: 'model-uds', title: u.exactTitle(c.uds) }, fmt(c.uds, 4)),
      el('div', { class: 'muted', id: 'model-ci' }, num(c.uds) ? ci : 'no uds score run'))];
    ['mem', 'privacy', 'utility_rel', 'overall'].forEach(function (k) {
      var col = colOf(k);
      cards.push(card(col ? col.label : k, fmt(c[k], 3), 'model-' + k, col ? u.dirTag(col.direction) : null, u.exactTitle(c[k])));
    });
    var row = el('div', { class: 'cards' }, cards);
    add(box, row);
    return row;
  }
  function colOf(key) { return R.data.columns.filter(function (x) { return x.key === key; })[0] || null; }
  function labelOf(key) { var c = colOf(key); return c ? c.label : key; }
  /* Every source of the model's values (folded when there are several), then each value on which
   * they differ at the shown precision, printed as its column prints it (folded). */
  function addRuns(box, m) {
    var runs = el('table', { id: 'model-runs' }, el('thead', null, el('tr', null, ['#', 'what', 'path', 'named', 'UDS', 'values']
      .map(function (t) { return el('th', { class: 'text' }, t); }))), el('tbody', null, m.sources.map(function (s, i) {
      return el('tr', { 'data-source': i }, el('td', null, String(i + 1)), el('td', { class: 'text' }, KIND[s.kind] || s.kind),
        el('td', { class: 'text path' }, u.breakable(s.path)), el('td', { class: 'text spec' }, u.breakable(s.spec)),
        el('td', { title: u.exactTitle(s.uds) }, fmt(s.uds, 4)), el('td', null, String(s.values)));
    })));
    var title = m.sources.length === 1 ? 'Its run' : 'Its ' + m.sources.length + ' runs and files (run 1 first: the order ' +
      'that decides which value is shown)';
    add(box, el('details', { id: 'model-runs-box', class: 'fold', open: m.sources.length <= 3 ? 'open' : null },
      el('summary', null, el('h2', null, title)), el('div', { class: 'wrap' }, runs),
      el('p', { class: 'muted' }, R.data.precedence)));
    var keys = Object.keys(m.differs), below = m.below || { n: 0, keys: [] };
    var belowText = below.n ? ' ' + below.n + ' more value' + (below.n > 1 ? 's differ' : ' differs') + ' only below the shown ' +
      'precision (' + below.keys.map(labelOf).join(', ') + ').' : '';
    if (!keys.length) {
      add(box, el('p', { class: 'muted', id: 'model-agree' }, m.sources.length > 1 ?
        'The runs agree on every value they share, at the precision shown.' + belowText : 'One source: nothing to compare.'));
      return;
    }
    var used = [];
    keys.forEach(function (k) { m.differs[k].values.forEach(function (p) { if (used.indexOf(p[0]) < 0) used.push(p[0]); }); });
    used.sort(function (a, b) { return a - b; });
    var table = el('table', { id: 'model-differs' }, el('thead', null, el('tr', null,
      el('th', { class: 'text' }, 'value'), used.map(function (i) { return el('th', { title: m.sources[i].path }, 'run ' + (i + 1)); }),
      el('th', null, 'spread'))), el('tbody', null, keys.map(function (k) {
      var d = m.differs[k], byRun = {};
      d.values.forEach(function (p, j) { byRun[p[0]] = [p[1], d.printed[j]]; });
      return el('tr', { 'data-key': k }, el('td', { class: 'text', title: k }, labelOf(k)), used.map(function (i) {
        return el('td', { title: i in byRun ? u.exactTitle(byRun[i][0]) : null, class: i === d.values[0][0] ? 'shown' : null },
          i in byRun ? byRun[i][1] : '–');
      }), el('td', { class: 'spread', title: u.exactTitle(d.spread) }, d.printed_spread));
    })));
    add(box, el('details', { id: 'model-differs-box', class: 'fold' },
      el('summary', null, el('h2', { class: 'warn' }, 'Where the runs differ at the shown precision (' + keys.length + ' value' +
        (keys.length > 1 ? 's' : '') + ')')),
      el('div', { class: 'wrap' }, table),
      el('p', { class: 'muted' }, 'Each run\'s value as its column prints it; in bold the one the leaderboard shows (run 1 first).' +
        belowText)));
  }
  /* What a run without per-layer data lacks and which command writes it. */
  function emptyState(m, d) {
    var text;
    if (!d) text = 'No `uds score` run of this model is among the inputs, so there is no UDS per layer or per example. ' +
      '`uds score --unlearned SPEC --out DIR` writes summary.json, examples.jsonl and layers.csv; pass DIR to uds report.';
    else text = 'This run (' + d.source + ') holds UDS and its interval but no per-layer data: no examples.jsonl or layers.csv ' +
      'beside its summary (an Open-Unlearning eval with the uds plug-in saves the summary only). ' +
      '`uds score --unlearned SPEC --out DIR` writes them; the per-layer charts and the examples need them.';
    return el('p', { class: 'notice', id: 'model-empty' }, text);
  }
  function hasLayers(d) {
    return d && d.layers && d.layers.n > 0 && d.layers.s1_mean.some(num);
  }
  function drawModel(top, bottom, cards, m, d) {
    if (d) {
      var s = d.summary, L = d.layers;
      add(cards, el('div', { class: 'card' }, el('div', null, 'scored ', String(s.n_scored), ' of ', String(s.n_examples), ' examples'),
        el('div', { class: 'muted' }, 'τ = ', String(s.tau), ', ', String(L.n), ' layers'),
        s.skipped_reasons && Object.keys(s.skipped_reasons).length ? el('div', { class: 'muted' }, 'skipped: ' + Object.keys(s.skipped_reasons)
          .map(function (k) { return k + ' ' + s.skipped_reasons[k]; }).join(', ')) : null,
        el('div', { class: 'muted', title: 'full: ' + (s.full || '–') + '\nretain: ' + (s.retain || '–') + '\nper-example data from ' + d.source },
          'anchors ', u.breakable(String(s.full || '–')), ', ', u.breakable(String(s.retain || '–')))));
    }
    if (hasLayers(d)) addLayers(top, d);
    else add(top, emptyState(m, d));
    if (d && d.examples.length) addExampleList(bottom, m, d);
  }
  function addLayers(box, d) {
    var s = d.summary, L = d.layers;
    add(box, el('h2', null, 'Per layer: where the knowledge sits and how much of it was erased'));
    add(box, u.layerChart('layer-chart', [
      { name: 's1', label: 'mean Δ S1 (retain → full)', values: L.s1_mean, color: '#1f77b4' },
      { name: 's2', label: 'mean Δ S2 (unlearned → full)', values: L.s2_mean, color: '#ff7f0e' },
      { name: 'ratio', label: 'mean clipped ratio Δ S2/Δ S1 over KE examples (right axis)', values: L.ratio_mean,
        color: '#2ca02c', axis: 'right', dash: '5,3' }], function (j) {
      return 'layer ' + j + '\nmean Δ S1  ' + fmt(L.s1_mean[j]) + '\nmean Δ S2  ' + fmt(L.s2_mean[j]) +
        '\nratio      ' + fmt(L.ratio_mean[j]) + '\nKE in ' + L.ke_count[j] + ' examples';
    }, { tau: s.tau, yTitle: 'Δ log-prob of the entity (nats)', y2Title: 'clipped ratio' }));
    add(box, el('h2', null, 'KE layers: how many examples have each layer above τ'));
    add(box, u.barChart('ke-hist', L.ke_count, 'layer', function (i) { return 'layer ' + i + ': KE in ' + L.ke_count[i] + ' examples'; },
      'examples'));
  }
  /* The models a model is compared with: its own population; the references and the base model
   * are set against the unlearned models without a rank. */
  function peers(m) {
    var pop = m.population === 'pool' ? 'pool' : 'unlearned';
    return R.data.models.filter(function (o) { return o.population === pop; });
  }
  /* Rank 1 = the best end of the metric's direction (lowest for knowledge metrics), within the
   * model's own population; no rank for a column without a direction (training settings), nor for
   * a reference or base model. */
  function addPopulation(box, m) {
    var cols = R.data.columns.filter(function (c) { return num(m.cells[c.key]); });
    if (!cols.length) return;
    var group = peers(m), ranked = m.population === 'unlearned' || m.population === 'pool';
    var who = m.population === 'pool' ? 'pool members' : 'unlearned models';
    add(box, el('h2', { id: 'population-title' }, 'Its values against the ' + group.length + ' ' + who +
      (ranked ? '' : ' (a ' + m.population + ' model is not ranked)')));
    var body = el('tbody');
    cols.forEach(function (c) {
      var k = c.key, v = m.cells[k];
      var vals = group.map(function (o) { return o.cells[k]; }).filter(num);
      var rank = ranked && c.direction ? 1 + vals.filter(function (x) { return c.lower_is_better ? x < v : x > v; }).length : null;
      body.appendChild(el('tr', { 'data-key': k }, el('td', { class: 'text', title: c.title }, c.label),
        el('td', { class: 'text muted' }, c.sentence ? c.sentence.replace(/^higher = /, '') : 'no direction'),
        el('td', { title: u.exactTitle(v) }, u.fmtCol(v, c.format)),
        el('td', { class: 'muted rank' }, rank === null ? '–' : rank + ' of ' + vals.length),
        el('td', null, vals.length ? u.stripChart(vals.concat(ranked ? [] : [v]), v) : null)));
    });
    add(box, el('div', { class: 'wrap' }, el('table', { id: 'population' }, el('thead', null, el('tr', null,
      ['metric', 'higher =', 'value', 'rank (1 = best)', 'among the ' + who + ' (its value in red)']
        .map(function (t) { return el('th', { class: 'text' }, t); }))), body)));
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
  R.pages.example = function (main, h) {
    var id = h.a, pos = isNaN(h.b) ? 0 : h.b;
    var m = R.data.models[id];
    if (!m) { add(main, el('p', { class: 'err' }, 'no such model')); return; }
    R.load(id).then(function (d) { drawExample(main, m, d, pos); },
      function (e) { add(main, el('p', { class: 'err' }, e.message)); });
  };
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
      d1.length ? u.layerChart('ex-chart', [
        { name: 's1', label: 'Δ S1', values: d1, color: '#1f77b4' },
        { name: 's2', label: 'Δ S2', values: d2, color: '#ff7f0e' },
        { name: 'ratio', label: 'clipped ratio on KE layers (right axis)', values: ratio, color: '#2ca02c', axis: 'right', dash: '5,3' }],
        function (j) { return 'layer ' + j + (ke[j] ? ' (KE)' : '') + '\nΔ S1  ' + fmt(d1[j], 6) + '\nΔ S2  ' + fmt(d2[j], 6) + '\nratio ' + fmt(ratio[j]); },
        { tau: d.summary.tau, height: 220, yTitle: 'Δ log-prob (nats)', y2Title: 'clipped ratio' }) : null,
      d1.length ? el('table', { id: 'ex-layers' }, el('thead', null, el('tr', null,
        ['layer', 'Δ S1', 'Δ S2', 'clipped ratio', 'KE'].map(function (h) { return el('th', null, h); }))), body) : null,
      gens.length ? [el('h2', null, 'Generations'), gens.map(function (g) { return el('p', { class: 'qa' }, el('span', { class: 'label' }, g[0]), String(g[1])); })] : null);
    add(main, el('div', { class: 'layout' }, el('div', null, search, list), detail));
  }

  // ---------- compare ----------
  R.pages.compare = function (main, h) {
    var a = h.a, b = h.b;
    var withData = R.data.models.filter(function (o) { return o.file; });
    if (withData.length < 2) { add(main, el('p', null, 'compare needs two scored models (uds score folders)')); return; }
    // opened without a choice: the first two unlearned models with per-example data (leaderboard order)
    var first = withData.filter(function (o) { return o.population === 'unlearned'; }).concat(withData.filter(function (o) {
      return o.population !== 'unlearned'; }));
    if (!R.data.models[a] || !R.data.models[a].file) a = first[0].id;
    if (!R.data.models[b] || !R.data.models[b].file || b === a) b = first.filter(function (o) { return o.id !== a; })[0].id;
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
  };
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
        u.layerChart('cmp-chart', [
          { name: 's1', label: 'Δ S1 (retain → full)', values: ea.s1_delta || [], color: '#1f77b4' },
          { name: 'a', label: 'Δ S2 of A: ' + A.name, values: ea.s2_delta || [], color: '#ff7f0e' },
          { name: 'b', label: 'Δ S2 of B: ' + B.name, values: eb.s2_delta || [], color: '#9467bd', dash: '4,3' }],
          function (j) { return 'layer ' + j + '\nΔ S1    ' + fmt((ea.s1_delta || [])[j], 6) + '\nΔ S2 A  ' + fmt((ea.s2_delta || [])[j], 6) +
            '\nΔ S2 B  ' + fmt((eb.s2_delta || [])[j], 6); }, { tau: A.summary.tau, height: 230, yTitle: 'Δ log-prob (nats)' }),
        el('p', null, link('#/example/' + a + '/' + p[2], 'open in A'), ' · ',
          link('#/example/' + b + '/' + B.examples.indexOf(eb), 'open in B'))]);
    }
    var th = el('th', { onclick: function () { sortByDiff = !sortByDiff; draw(); }, title: 'sort by |B − A| / data order' }, 'B − A');
    add(box, el('div', { class: 'layout cmp' }, el('div', { class: 'wrap' }, el('table', { id: 'cmp-table' }, el('thead', null, el('tr', null,
      el('th', { class: 'text' }, 'idx'), el('th', null, 'UDS_i A'), el('th', null, 'UDS_i B'), th, el('th', { class: 'text' }, 'question'))), body)), detail));
    draw();
  }

})();
