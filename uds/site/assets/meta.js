/* uds report: the meta-evaluation page (ours per metric beside the published spec §5.7 values, the
 * rank of each metric in both and Spearman between the rankings, per-metric P/N histogram with the
 * pools' members named on hover, robustness scatters, the models the filters dropped; what the run
 * lacks, and its n), and the probe, audit and passed-over pages. */
(function () {
  'use strict';
  var R = window.UDSreport, u = R.ui, el = u.el, add = u.add, clear = u.clear, num = u.num, link = u.link, fmt = u.fmt;
  var META = { sort: 'overall', dir: -1, text: '', key: null };
  var HIGHER = { knowledge: 'knowledge', erasure: 'erased', utility: 'utility' };

  /* Table columns: [id, header, value getter, decimals (0 = text / count), group]. */
  function pub(f) { return function (k) { return k.published ? k.published[f] : null; }; }
  function rank(f) { return function (k) { return k.rank[f]; }; }
  var COLS = [
    ['key', 'metric', function (k) { return k.key; }, 0, ''],
    ['dir', 'higher =', function (k) { return HIGHER[k.direction] || ''; }, 0, ''],
    ['auc', 'faith AUC', function (k) { return k.auc; }, 3, 'ours'],
    ['q', 'Q', function (k) { return k.q; }, 4, 'ours'],
    ['r', 'R', function (k) { return k.r; }, 4, 'ours'],
    ['robustness', 'robust.', function (k) { return k.robustness; }, 4, 'ours'],
    ['overall', 'overall', function (k) { return k.overall; }, 3, 'ours'],
    ['rank', 'rank', rank('overall'), -1, 'ours'],
    ['pub_auc', 'faith AUC', pub('faithfulness'), 3, 'published'],
    ['pub_q', 'Q', pub('q'), 4, 'published'],
    ['pub_r', 'R', pub('r'), 4, 'published'],
    ['pub_robustness', 'robust.', pub('robustness'), 4, 'published'],
    ['pub_overall', 'overall', pub('overall'), 3, 'published'],
    ['pub_rank', 'rank', rank('overall_pub'), -1, 'published'],
    ['n_pn', 'P / N', function (k) { return num(k.n_p) || num(k.n_n) ? (k.n_p || 0) + ' / ' + (k.n_n || 0) : null; }, 0, 'n'],
    ['n_kept', 'kept', function (k) { return k.n_kept; }, -1, 'n'],
    ['dropped', 'dropped', function (k) { return k.dropped.length; }, -1, 'n']];

  function counts(me) {
    var by = me.members_by_kind || {}, keys = Object.keys(by);
    if (!keys.length && me.settings.models) { by = me.settings.models; keys = Object.keys(by); }
    return keys.length ? 'n = ' + keys.map(function (k) { return by[k] + ' ' + k; }).join(', ') : 'model counts not recorded';
  }
  function spearmanText(s, what) {
    if (num(s.rho)) return 'by ' + what + ' ρ = ' + fmt(s.rho, 3) + ' over ' + s.n + ' metrics';
    return 'by ' + what + ' n/a (' + s.n + ' metric' + (s.n === 1 ? '' : 's') + ' ranked in both; Spearman needs at least 3 and a ranking that is not constant)';
  }
  function header(draw) {
    var top = el('tr', { class: 'groups' }), row = el('tr'), spans = [];
    COLS.forEach(function (c) {
      if (spans.length && spans[spans.length - 1][0] === c[4]) spans[spans.length - 1][1]++;
      else spans.push([c[4], 1]);
    });
    var label = { ours: 'this run', published: 'published (spec §5.7)', n: 'n', '': '' };
    spans.forEach(function (s) { add(top, el('th', { colspan: s[1], class: 'group' }, label[s[0]])); });
    COLS.forEach(function (c) {
      add(row, el('th', { 'data-key': c[0], class: (c[3] === 0 ? 'text ' : '') + (META.sort === c[0] ? (META.dir > 0 ? 'sorted-asc' : 'sorted-desc') : ''),
        onclick: function () {
          if (META.sort === c[0]) META.dir = -META.dir;
          else { META.sort = c[0]; META.dir = c[3] === 0 || /rank/.test(c[0]) ? 1 : -1; }
          draw();
        } }, c[1]));
    });
    return el('thead', null, top, row);
  }
  function cell(c, k) {
    var v = c[2](k);
    if (c[3] === 0) return el('td', { class: 'text', 'data-col': c[0] }, v === null || v === undefined || v === '' ? '–' : String(v));
    if (c[3] < 0) return el('td', { 'data-col': c[0] }, num(v) ? String(v) : '–');
    var title = c[0] === 'auc' && k.ci ? '95% CI [' + fmt(k.ci[0], 3) + ', ' + fmt(k.ci[1], 3) + ']' : u.exactTitle(v);
    return el('td', { 'data-col': c[0], title: title }, fmt(v, c[3]));
  }
  /* The run's n, what it lacks (with its path) and Spearman against the published ranking. */
  function preamble(me) {
    var st = me.settings || {}, out = [];
    out.push(el('p', { class: 'muted', id: 'meta-n' }, 'zoo ' + (st.zoo || '?') + ' · ' + counts(me) + ' · robustness ' +
      (st.robustness_form || '?') + ' · filters ' + (st.filters === false ? 'off' : 'on') +
      (st.left_out && st.left_out.length ? ' · partial zoo: ' + st.left_out.length + ' models left out' : '') + ' · ' + me.source));
    if (me.lacks.length) out.push(el('ul', { class: 'notice', id: 'meta-lacks' }, me.lacks.map(function (t) {
      return el('li', null, me.source + ': ' + t);
    })));
    out.push(el('p', { id: 'meta-spearman' }, 'Spearman between this run\'s ranking of the metrics and the published one (' +
      me.published_source + '): ' + spearmanText(me.spearman.overall, 'overall') + '; ' +
      spearmanText(me.spearman.faithfulness, 'faithfulness') + '; ' + spearmanText(me.spearman.robustness, 'robustness') +
      '. Ranks (by overall): 1 = highest, among the metrics of this run.'));
    return out;
  }
  function sortRows(rows) {
    var col = COLS.filter(function (c) { return c[0] === META.sort; })[0] || COLS[6], dir = META.dir;
    return rows.sort(function (x, y) {
      var a = col[2](x), b = col[2](y);
      if (typeof a === 'string' && typeof b === 'string') return dir * a.localeCompare(b);
      if (!num(a) || !num(b)) return (!num(a)) - (!num(b));             // empty cells last
      return dir * (a - b);
    });
  }
  /* The P/N histogram of one metric: each pool's members with their raw values. */
  function poolHistogram(me, k) {
    var vals = me.values, members = me.members;
    var pool = function (lab) {
      return Object.keys(members).filter(function (n) { return members[n].kind === 'pool' && members[n].pool === lab; })
        .map(function (n) { return { name: n, value: (vals.orig[n] || {})[k.key] }; });
    };
    var hist = u.histogram([{ name: 'P', points: pool('P'), color: '#1f77b4' }, { name: 'N', points: pool('N'), color: '#ff7f0e' }], 420, 200);
    return hist ? [el('p', { class: 'legend muted' }, el('span', null, 'P pool (knowledge present) in blue, N pool (absent) in ' +
      'orange; raw values; hover a bar for its models')), hist]
      : el('p', { class: 'notice', id: 'pn-empty' }, 'no pool model has a value of ' + k.key + ' in ' + me.source + ': no histogram');
  }
  /* Before vs after NF4 and relearning for the unlearned models, or a line saying there is nothing to draw. */
  function robustnessScatters(me, k) {
    var vals = me.values, members = me.members, dropped = k.dropped.map(function (x) { return x.model; });
    return [['nf4', 'NF4 quantisation', k.q], ['relearn', 'relearning', k.r]].map(function (s) {
      var pts = vals[s[0]] ? Object.keys(members).filter(function (n) { return members[n].kind === 'unlearned'; }).map(function (n) {
        return { name: n, x: (vals.orig[n] || {})[k.key], y: (vals[s[0]][n] || {})[k.key], kept: dropped.indexOf(n) < 0 };
      }) : [];
      return [el('h2', null, s[1] + ' (score ' + fmt(s[2]) + '): raw value before vs after'), u.scatter(pts, 420, 260, 'scatter-' + s[0]) ||
        el('p', { class: 'notice', id: 'scatter-' + s[0] + '-empty' }, 'no unlearned model measured both before and after ' + s[1] + ' in ' + me.source)];
    });
  }
  function showKey(side, me, k) {
    clear(side);
    var p = k.published || {};
    add(side, el('h2', null, k.key + ': faithfulness AUC ' + fmt(k.auc, 3) + (k.ci ? ' [' + fmt(k.ci[0], 3) + ', ' + fmt(k.ci[1], 3) + ']' : '') +
      ' (published ' + fmt(p.faithfulness, 3) + ')'));
    add(side, el('p', { class: 'muted', id: 'meta-means' }, 'raw pool means: P ' + fmt(k.p_mean, 3) + ' (published ' + fmt(p.p_mean, 3) +
      '), N ' + fmt(k.n_mean, 3) + ' (published ' + fmt(p.n_mean, 3) + '); pools of ' + (num(k.n_p) ? k.n_p : '?') + ' and ' +
      (num(k.n_n) ? k.n_n : '?') + ' models; robustness over ' + (num(k.n_kept) ? k.n_kept : '?') + ' kept models'));
    if (me.values && me.members && me.values.orig) add(side, [poolHistogram(me, k), robustnessScatters(me, k)]);
    else {
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
  R.pages.meta = function (main, h) {
    var metas = R.data.meta, me = metas[isNaN(h.a) ? 0 : h.a] || metas[0];
    if (!me) { add(main, el('p', null, 'no meta-evaluation given')); return; }
    add(main, el('h1', null, 'Meta-evaluation'));
    if (metas.length > 1) add(main, el('p', null, 'runs: ', metas.map(function (x, i) { return [link('#/meta/' + i, String(i + 1), { title: x.source }), ' ']; })));
    add(main, preamble(me));
    var search = el('input', { type: 'search', id: 'meta-filter', placeholder: 'filter metrics…', value: META.text });
    var minAuc = el('select', { id: 'meta-min-auc' }, ['0', '0.5', '0.7', '0.9'].map(function (v) { return el('option', { value: v }, 'AUC ≥ ' + v); }));
    var wrap = el('div', { class: 'wrap' }), side = el('div', { id: 'meta-detail' });
    function draw() {
      var text = search.value.toLowerCase(), floor = parseFloat(minAuc.value);
      META.text = search.value;
      var rows = sortRows(me.keys.filter(function (k) {
        return k.key.toLowerCase().indexOf(text) >= 0 && (floor === 0 || (num(k.auc) && k.auc >= floor));
      }));
      clear(wrap).appendChild(el('table', { id: 'meta-table' }, header(draw), el('tbody', null, rows.map(function (k) {
        return el('tr', { class: 'clickable', 'data-key': k.key, onclick: function () { META.key = k.key; showKey(side, me, k); } },
          COLS.map(function (c) { return cell(c, k); }));
      }))));
    }
    search.addEventListener('input', draw);
    minAuc.addEventListener('change', draw);
    add(main, el('div', { class: 'controls' }, search, minAuc, el('span', { class: 'muted' }, 'click a metric for its P/N histogram, robustness scatters and filtered models')));
    add(main, el('div', { class: 'layout meta' }, wrap, side));
    draw();
    var first = me.keys.filter(function (k) { return k.key === META.key; })[0] || me.keys.filter(function (k) { return k.key === 'uds'; })[0] || me.keys[0];
    if (first) showKey(side, me, first);
  };

  // ---------- probe and audit ----------
  R.pages.probe = function (main) {
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
  };
  R.pages.audit = function (main) {
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
  };

  R.pages.skipped = function (main) {
    add(main, el('h1', null, 'Passed over'));
    add(main, el('table', { id: 'skipped' }, el('tbody', null, R.data.skipped.map(function (s) {
      return el('tr', null, el('td', { class: 'text' }, s[0]), el('td', { class: 'text muted' }, s[1]));
    }))));
  };
})();
