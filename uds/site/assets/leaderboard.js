/* uds report: the leaderboard page. One row per model (merged by uds/site/table.py, in the default
 * order of `uds leaderboard`: references, then Overall, then UDS). By default the unlearned models
 * under the full and retain reference rows (which stay on top whatever the sort); the P/N pool
 * members and the base model in their own section when switched on. The headline columns always,
 * the named groups when switched on; any column sorts both ways; the view (groups, sort, filters,
 * other populations) lives in the URL: #/?show=mia,training&sort=-overall&method=npo&q=text&others=1
 * ("-" = high to low). The exports are the view. */
(function () {
  'use strict';
  var R = window.UDSreport, u = R.ui, el = u.el, add = u.add, clear = u.clear, num = u.num;
  var LB = { sort: null, dir: -1, method: '', text: '', groups: {}, others: false };
  var MAIN = { reference: true, unlearned: true };      // the default populations; the rest: "others"
  var POP_TAG = { pool: 'pool', base: 'base model' };
  var TEXT = { name: 'model', method: 'method', epoch: 'epoch' };
  R.lb = LB;

  function colMap() {
    if (!R.colByKey) {
      R.colByKey = {};
      R.data.columns.forEach(function (c) { R.colByKey[c.key] = c; });
    }
    return R.colByKey;
  }
  /* Visible keys: model name, the headline values, method, epoch, then each switched-on group's columns. */
  function visibleKeys() {
    var head = R.data.columns.filter(function (c) { return c.group === 'headline'; }).map(function (c) { return c.key; });
    var rest = [];
    R.data.groups.forEach(function (g) { if (LB.groups[g.name]) rest = rest.concat(g.columns); });
    return ['name'].concat(head, ['method', 'epoch'], rest);
  }

  // ---------- the view in the URL ----------
  function fromParams(p) {
    LB.text = p.get('q') || '';
    LB.method = p.get('method') || '';
    LB.others = p.get('others') === '1';
    LB.groups = {};
    (p.get('show') || '').split(',').forEach(function (g) { if (g) LB.groups[g] = true; });
    var s = p.get('sort') || '';
    LB.sort = s ? s.replace(/^-/, '') : null;
    LB.dir = s.charAt(0) === '-' ? -1 : 1;
    if (LB.sort && !TEXT[LB.sort] && !colMap()[LB.sort]) LB.sort = null;
  }
  function query() {
    var q = [], shown = R.data.groups.map(function (g) { return g.name; }).filter(function (g) { return LB.groups[g]; });
    if (shown.length) q.push('show=' + shown.map(encodeURIComponent).join(','));
    if (LB.sort) q.push('sort=' + (LB.dir < 0 ? '-' : '') + encodeURIComponent(LB.sort));
    if (LB.method) q.push('method=' + encodeURIComponent(LB.method));
    if (LB.text) q.push('q=' + encodeURIComponent(LB.text));
    if (LB.others) q.push('others=1');
    return q.join('&');
  }
  /* replaceState fires no hashchange: the page is not redrawn, the view is only recorded */
  function remember() { var q = query(); history.replaceState(null, '', '#/' + (q ? '?' + q : '')); }

  // ---------- rows ----------
  function epochNumber(e) { var m = /\d+/.exec(String(e || '')); return m ? parseInt(m[0], 10) : null; }
  function sortValue(m, key) {
    if (key === 'name') return m.name;
    if (key === 'method') return m.method || null;
    if (key === 'epoch') return epochNumber(m.epoch);
    return num(m.cells[key]) ? m.cells[key] : null;
  }
  function matches(m) {
    var text = LB.text.toLowerCase();
    return (!LB.method || m.method === LB.method) &&
      (!text || (m.name + ' ' + m.specs.join(' ')).toLowerCase().indexOf(text) >= 0);
  }
  function sorted(rows) {
    if (!LB.sort) return rows;                 // the default order: the models' order in the data
    var k = LB.sort, dir = LB.dir;
    return rows.slice().sort(function (a, b) {
      var x = sortValue(a, k), y = sortValue(b, k);
      if (x === null || y === null) return (x === null) - (y === null) || a.id - b.id;   // empty cells last
      var c = typeof x === 'string' ? x.localeCompare(y) : x - y;
      return dir * c || a.id - b.id;
    });
  }
  /* The rows of the view in sections: [{name: 'main'|'others', rows}]. The main section holds the
   * reference rows first (sorted among themselves) then the unlearned models sorted; 'others' (pool
   * members and the base model) only when switched on, sorted the same way. */
  R.lbSections = function () {
    var rows = R.data.models.filter(matches);
    var refs = sorted(rows.filter(function (m) { return m.population === 'reference'; }));
    var main = refs.concat(sorted(rows.filter(function (m) { return m.population === 'unlearned'; })));
    var out = [{ name: 'main', rows: main }];
    if (LB.others) out.push({ name: 'others', rows: sorted(rows.filter(function (m) { return !MAIN[m.population]; })) });
    return out;
  };
  R.lbRows = function () {
    return [].concat.apply([], R.lbSections().map(function (s) { return s.rows; }));
  };
  function othersCount() { return R.data.models.filter(function (m) { return !MAIN[m.population]; }).length; }

  // ---------- cells ----------
  function udsText(m) {
    var v = m.cells.uds;
    return u.fmt(v, 4) + (m.ci && num(v) ? ' [' + u.fmt(m.ci[0], 3) + ', ' + u.fmt(m.ci[1], 3) + ']' : '');
  }
  function cellText(m, key) {
    if (key === 'name') return m.name;
    if (key === 'method') return m.method || '–';
    if (key === 'epoch') return m.epoch === null || m.epoch === undefined ? '–' : String(m.epoch);
    if (key === 'uds') return udsText(m);
    return u.fmtCol(m.cells[key], colMap()[key].format);
  }
  /* The hover of a marked cell: each run's value as the column prints it, the spread likewise, and
   * which one the cell shows by the stated rule. */
  function differsTitle(m, key) {
    var d = m.differs[key];
    return 'runs differ at the shown precision (spread ' + d.printed_spread + '):\n' + d.values.map(function (p, i) {
      return d.printed[i] + '  ' + m.sources[p[0]].path;
    }).join('\n') + '\nshown: ' + d.printed[0] + ', the first by the order stated under the table';
  }
  function valueCell(m, key) {
    var v = m.cells[key], d = m.differs[key];
    var td = el('td', { 'data-col': key, class: d ? 'differs' : null,
      title: d ? differsTitle(m, key) : u.exactTitle(v) }, cellText(m, key));
    if (d) add(td, el('span', { class: 'flag' }, ' ≠'));
    return td;
  }
  function nameCell(m) {
    var n = Object.keys(m.differs).length;
    return el('td', { class: 'name' }, u.link('#/model/' + m.id, u.breakable(m.name), { title: m.name }),
      m.reference ? el('span', { class: 'tag', title: 'reference model (spec §6): shown first, not ranked against the unlearned' }, 'reference') : null,
      POP_TAG[m.population] ? el('span', { class: 'tag', title: m.population === 'pool' ? 'a P/N pool member of a meta-evaluation ' +
        'zoo (trained to hold or lack the forget set): not an unlearned model' : 'the base model the world was trained from' },
        m.method && m.population === 'pool' ? m.method : POP_TAG[m.population]) : null,
      m.published_only ? el('span', { class: 'tag', title: 'values of the reference\'s published table only' }, 'published') : null,
      n ? el('span', { class: 'tag warn', title: 'runs of this model differ on ' + n + ' value(s) at the shown precision: see its page' }, '≠ ' + n) : null);
  }

  // ---------- exports of the current view ----------
  function exportColumns() {
    return visibleKeys().filter(function (k) { return k !== 'name'; });
  }
  function better(key) {
    var c = colMap()[key];
    if (!c || !c.direction) return '';
    return c.lower_is_better ? ' ↓' : ' ↑';
  }
  /* CSV of the current view: rows as filtered and sorted (pool and base models only when shown,
   * with their population), numbers as shown (3 decimals, UDS 4). */
  R.csvText = function () {
    var keys = exportColumns(), head = ['model'];
    keys.forEach(function (k) { head.push(k); if (k === 'uds') head.push('uds_ci_low', 'uds_ci_high'); });
    head.push('population');
    var lines = [head];
    R.lbRows().forEach(function (m) {
      var line = [m.name];
      keys.forEach(function (k) {
        var t = k === 'uds' ? u.fmt(m.cells.uds, 4) : cellText(m, k);
        line.push(t === '–' ? '' : t);
        if (k === 'uds') line.push(m.ci ? u.fmt(m.ci[0], 3) : '', m.ci ? u.fmt(m.ci[1], 3) : '');
      });
      line.push(m.population);
      lines.push(line);
    });
    return lines.map(function (l) { return l.map(csvCell).join(','); }).join('\n') + '\n';
  };
  function csvCell(v) {
    var s = String(v);
    if (/^[=+\-@\t\r]/.test(s) && !/^-?\d/.test(s)) s = "'" + s;   // no formula in a spreadsheet
    return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  /* Markdown of the current view, the table to paste into a paper: ↑ / ↓ = which end is better. */
  R.mdText = function () {
    var keys = exportColumns();
    var head = ['model'].concat(keys.map(function (k) {
      return (TEXT[k] || (k === 'uds' ? 'UDS [95% CI]' : colMap()[k].label)) + better(k);
    }));
    var lines = ['| ' + head.join(' | ') + ' |', '|' + head.map(function (h, i) {
      return i === 0 || TEXT[keys[i - 1]] ? '---' : '---:';
    }).join('|') + '|'];
    R.lbSections().forEach(function (sec) {
      if (sec.name === 'others' && sec.rows.length) {
        lines.push('| *pool and base models (not unlearned)* |' + keys.map(function () { return ' |'; }).join(''));
      }
      sec.rows.forEach(function (m) {
        var cells = [m.name].concat(keys.map(function (k) { return cellText(m, k); }));
        lines.push('| ' + cells.map(function (c) { return String(c).replace(/\|/g, '\\|'); }).join(' | ') + ' |');
      });
    });
    return lines.join('\n') + '\n';
  };
  function download(text, name, type) {
    var a = el('a', { href: URL.createObjectURL(new Blob([text], { type: type })), download: name });
    document.body.appendChild(a);
    a.click();
    a.remove();
  }

  // ---------- the page ----------
  function notes() {
    var d = R.data, out = [];
    if (d.conflicts) out.push(el('p', { class: 'notice', id: 'lb-conflicts' }, d.conflicts + ' model(s) have values that differ ' +
      'between result folders at the shown precision (≠: hover the cell for each folder\'s value; the model page lists ' +
      'every run). Smaller differences, below half a unit of the last digit shown, are not marked.'));
    if (d.skipped.length) out.push(el('p', { class: 'notice', id: 'lb-skipped' }, d.skipped.length + ' input(s) were passed over or ' +
      'read only in part: ', u.link('#/skipped', 'see which and why'), '.'));
    return out;
  }
  function controls(draw) {
    var methods = {};
    R.data.models.forEach(function (m) { if (m.method) methods[m.method] = true; });
    var search = el('input', { type: 'search', id: 'lb-filter', placeholder: 'filter models…', value: LB.text,
      oninput: function () { LB.text = search.value; draw(); } });
    var select = el('select', { id: 'lb-method', onchange: function () { LB.method = select.value; draw(); } },
      el('option', { value: '' }, 'all methods'),
      Object.keys(methods).sort().map(function (m) { return el('option', { value: m }, m); }));
    select.value = LB.method;
    var groups = el('span', { id: 'lb-groups', class: 'groups' }, 'columns: ', R.data.groups.map(function (g) {
      var box = el('input', { type: 'checkbox', 'data-group': g.name, onchange: function () {
        LB.groups[g.name] = box.checked;
        draw();
      } });
      box.checked = !!LB.groups[g.name];
      return el('label', { title: g.columns.join(', ') }, box, ' ' + g.label + ' (' + g.columns.length + ')');
    }));
    var n = othersCount(), others = null;
    if (n) {
      var box = el('input', { type: 'checkbox', id: 'lb-others', onchange: function () { LB.others = box.checked; draw(); } });
      box.checked = LB.others;
      others = el('label', { title: 'P/N pool members of a meta-evaluation zoo and the base model: not unlearned models, ' +
        'shown in their own section below the leaderboard, not ranked with it' }, box, ' pool and base models (' + n + ')');
    }
    var mdBox = el('textarea', { id: 'lb-md-text', readonly: 'readonly', rows: 8, hidden: 'hidden' });
    var buttons = el('span', null,
      el('button', { id: 'lb-default', title: 'references, then Overall, then UDS, high to low', onclick: function () {
        LB.sort = null; draw(); } }, 'default order'),
      el('button', { id: 'lb-csv', onclick: function () { download(R.csvText(), 'leaderboard.csv', 'text/csv'); } }, 'export CSV'),
      el('button', { id: 'lb-md', onclick: function () {
        mdBox.value = R.mdText(); mdBox.hidden = false; mdBox.select();
      } }, 'markdown'));
    return [el('div', { class: 'controls' }, search, select, buttons, others, el('span', { class: 'muted', id: 'lb-count' })),
      el('div', { class: 'controls' }, groups), mdBox];
  }
  function header(keys) {
    var cm = colMap(), top = el('tr', { class: 'groups' }), row = el('tr');
    var spans = [];
    keys.forEach(function (k) {
      var g = TEXT[k] || (cm[k] && cm[k].group === 'headline') ? 'headline' : cm[k].group;
      if (spans.length && spans[spans.length - 1][0] === g) spans[spans.length - 1][1]++;
      else spans.push([g, 1]);
    });
    spans.forEach(function (s) {
      var label = s[0] === 'headline' ? '' : (R.data.groups.filter(function (g) { return g.name === s[0]; })[0] || { label: s[0] }).label;
      add(top, el('th', { colspan: s[1], class: 'group' }, label));
    });
    keys.forEach(function (k) {
      var c = cm[k], text = !!TEXT[k];
      var cls = (text ? 'text ' : '') + (LB.sort === k ? (LB.dir > 0 ? 'sorted-asc' : 'sorted-desc') : '');
      add(row, el('th', { 'data-key': k, class: cls + (k === 'name' ? ' name' : ''), title: (c ? c.title : k) + ' (click: sort; again: reverse)',
        onclick: function () { sortBy(k); } }, text ? TEXT[k] : c.label, c && c.direction ? el('small', null, u.dirTag(c.direction)) : null));
    });
    return el('thead', null, top, row);
  }
  var redraw = null;
  function sortBy(k) {
    if (LB.sort === k) LB.dir = -LB.dir;
    else { LB.sort = k; LB.dir = TEXT[k] && k !== 'epoch' ? 1 : -1; }
    redraw();
  }
  R.pages.lb = function (main, h) {
    if (!R.data.models.length) {
      add(main, [el('h1', null, 'Leaderboard'), el('p', { class: 'notice', id: 'lb-empty' }, 'No per-model results among the ' +
        'inputs (no `uds score` folder, metrics.json, results.json or leaderboard CSV), so there is no leaderboard; the ' +
        'other pages are in the bar above.'), notes()]);
      return;
    }
    fromParams(h.params);
    var wrap = el('div', { class: 'wrap' });
    add(main, [el('h1', null, 'Leaderboard'), notes(), controls(function () { redraw(); }), wrap,
      el('p', { class: 'muted' }, 'The unlearned models under the full and retain reference rows (which stay on top in any ' +
        'sort). Default order: Overall, then UDS, high to low (as `uds leaderboard`). Values to 3 decimals (UDS 4); 0 = below ' +
        '1e-6 in magnitude; hover a cell for the exact value. Column headers say what a higher value means.'),
      el('p', { class: 'muted', id: 'lb-rule' }, 'Which run a cell shows: ' + R.data.precedence + ' ≠ marks a value on which ' +
        'the runs differ at the shown precision, by at least half a unit of its last digit.')]);
    var built = { keys: null, rows: {} };     // a row's cells depend on the columns only: sorting reuses them
    function rowOf(m, keys) {
      if (!built.rows[m.id]) {
        var tr = el('tr', { 'data-id': m.id, class: m.reference ? 'ref' : null }, nameCell(m));
        keys.slice(1).forEach(function (k) {
          tr.appendChild(TEXT[k] ? el('td', { class: 'text', 'data-col': k }, cellText(m, k)) : valueCell(m, k));
        });
        built.rows[m.id] = tr;
      }
      return built.rows[m.id];
    }
    redraw = function () {
      var t0 = performance.now(), keys = visibleKeys(), sections = R.lbSections(), shown = 0;
      if (built.keys !== keys.join(',')) built = { keys: keys.join(','), rows: {} };
      var table = el('table', { id: 'lb-table' }, header(keys));
      sections.forEach(function (sec) {
        var body = el('tbody', { 'data-section': sec.name });
        if (sec.name === 'others') {
          body.appendChild(el('tr', { class: 'section' }, el('td', { class: 'name section', colspan: 1 },
            'pool and base models (' + sec.rows.length + '): not unlearned, not ranked with the above'), el('td', { colspan: keys.length - 1 })));
        }
        sec.rows.forEach(function (m) { body.appendChild(rowOf(m, keys)); });
        shown += sec.rows.length;
        table.appendChild(body);
      });
      clear(wrap).appendChild(table);
      var main = R.data.models.length - othersCount();
      u.byId('lb-count').textContent = sections[0].rows.length + ' of ' + main + ' models' +
        (LB.others ? ' + ' + (shown - sections[0].rows.length) + ' pool and base' : '');
      remember();
      R.lastDrawMs = performance.now() - t0;
    };
    redraw();
  };
})();
