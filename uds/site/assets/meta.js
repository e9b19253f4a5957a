/* uds report: the meta-evaluation page (ours per metric beside the published spec §5.7 values, the
 * rank of each metric in both and Spearman between the rankings, per-metric P/N histogram with the
 * pools' members named on hover and the decision threshold, robustness scatters, the models the
 * filters dropped; each run named by what it is, the unfiltered runs first, a run's counterpart
 * with the filters the other way beside it; robustness resting on fewer than min_kept models
 * marked and not ranked), and the probe, audit and passed-over pages. */
(function () {
  'use strict';
  var R = window.UDSreport, u = R.ui, el = u.el, add = u.add, clear = u.clear, num = u.num, link = u.link, fmt = u.fmt;
  var META = { sort: 'rank', dir: 1, text: '', key: null };
  var HIGHER = { knowledge: 'knowledge', erasure: 'erased', utility: 'utility' };
  var THIN = { q: 1, r: 1, robustness: 1, overall: 1 };      // values that rest on the kept models

  /* Table columns: [id, header, value getter, decimals (0 = text / count), group, hover]. */
  function pub(f) { return function (k) { return k.published ? k.published[f] : null; }; }
  function rank(f) { return function (k) { return k.rank[f]; }; }
  function paired(f) { return function (k, me) { var p = me.pair && me.pair.keys[k.key]; return p ? p[f] : null; }; }
  var COLS = [
    ['key', 'metric', function (k) { return k.label || k.key; }, 0, '', 'the metric (its key on hover)'],
    ['dir', 'higher =', function (k) { return HIGHER[k.direction] || ''; }, 0, '', 'what a higher raw value of the metric means'],
    ['auc', 'faith AUC', function (k) { return k.auc; }, 3, 'ours', 'faithfulness: ROC AUC of the P pool (knowledge present) ' +
      'against the N pool (absent), the metric oriented so that higher = more knowledge (spec §5.2); 95% interval on hover'],
    ['q', 'Q', function (k) { return k.q; }, 4, 'ours', 'quantisation robustness: mean over the kept unlearned models of 1 − ' +
      'the relative change of the metric after NF4 quantisation (spec §5.4)'],
    ['r', 'R', function (k) { return k.r; }, 4, 'ours', 'relearning robustness: mean over the kept unlearned models of 1 − the ' +
      'relative difference between the change after relearning and the retain model\'s (spec §5.4)'],
    ['robustness', 'robust.', function (k) { return k.robustness; }, 4, 'ours', 'robustness = HM(Q, R) (spec §5.6)'],
    ['overall', 'overall', function (k) { return k.overall; }, 3, 'ours', 'overall = HM(faithfulness AUC, robustness) (spec §5.6)'],
    ['rank', 'rank', rank('overall'), -1, 'ours', 'place by overall among the metrics of this run whose robustness rests on ' +
      'enough kept models; – = not ranked'],
    ['pair_robustness', 'robust.', paired('robustness'), 4, 'pair', 'robustness in the run with the filters the other way'],
    ['pair_overall', 'overall', paired('overall'), 3, 'pair', 'overall in the run with the filters the other way'],
    ['pair_rank', 'rank', paired('rank'), -1, 'pair', 'place by overall in the run with the filters the other way'],
    ['pub_auc', 'faith AUC', pub('faithfulness'), 3, 'published', 'the published faithfulness AUC (spec §5.7)'],
    ['pub_q', 'Q', pub('q'), 4, 'published', 'the published Q (spec §5.7)'],
    ['pub_r', 'R', pub('r'), 4, 'published', 'the published R (spec §5.7)'],
    ['pub_robustness', 'robust.', pub('robustness'), 4, 'published', 'the published robustness (spec §5.7)'],
    ['pub_overall', 'overall', pub('overall'), 3, 'published', 'the published overall (spec §5.7)'],
    ['pub_rank', 'rank', rank('overall_pub'), -1, 'published', 'place by the published overall among the same metrics'],
    ['n_pn', 'P / N', function (k) { return num(k.n_p) || num(k.n_n) ? (k.n_p || 0) + ' / ' + (k.n_n || 0) : null; }, 0, 'n',
      'models in the P and N pools with a value of the metric'],
    ['n_kept', 'kept', function (k) { return k.n_kept; }, -1, 'n', 'unlearned models the filters kept: Q and R are means over them (spec §5.5)'],
    ['dropped', 'dropped', function (k) { return k.dropped.length; }, -1, 'n', 'unlearned models the filters dropped']];

  function cols(me) { return COLS.filter(function (c) { return c[4] !== 'pair' || me.pair; }); }
  function counts(me) {
    var by = me.members_by_kind || {}, keys = Object.keys(by);
    if (!keys.length && me.settings.models) { by = me.settings.models; keys = Object.keys(by); }
    return keys.length ? 'n = ' + keys.map(function (k) { return by[k] + ' ' + k; }).join(', ') : 'model counts not recorded';
  }
  function spearmanText(s, what) {
    if (num(s.rho)) return 'by ' + what + ' ρ = ' + fmt(s.rho, 3) + ' over ' + s.n + ' metrics';
    return 'by ' + what + ' n/a (' + s.n + ' metric' + (s.n === 1 ? '' : 's') + ' ranked in both; Spearman needs at least 3 and a ranking that is not constant)';
  }
  function filtersText(f) { return f === false ? 'filters off' : f === true ? 'filters on' : 'filters not recorded'; }
  function unlearnedOf(me) { return (me.members_by_kind || {}).unlearned || (me.settings.models || {}).unlearned; }
  /* A run as its tab names it: folder, filters, the models its robustness rests on. */
  function runLabel(me) {
    var kr = me.kept_range, n = unlearnedOf(me);
    var kept = kr ? (kr[0] === kr[1] ? kr[0] : kr[0] + '–' + kr[1]) + (num(n) ? ' of ' + n : '') + ' unlearned kept' : 'no robustness';
    return me.name + ' · ' + filtersText(me.filters) + ' · ' + kept;
  }
  function header(me, draw) {
    var top = el('tr', { class: 'groups' }), row = el('tr'), spans = [], cs = cols(me);
    cs.forEach(function (c) {
      if (spans.length && spans[spans.length - 1][0] === c[4]) spans[spans.length - 1][1]++;
      else spans.push([c[4], 1]);
    });
    var label = { ours: 'this run (' + filtersText(me.filters) + ')', pair: me.pair ? 'the same zoo, ' + filtersText(me.pair.filters) : '',
      published: 'published (spec §5.7)', n: 'n', '': '' };
    spans.forEach(function (s) { add(top, el('th', { colspan: s[1], class: 'group' }, label[s[0]])); });
    cs.forEach(function (c) {
      add(row, el('th', { 'data-key': c[0], title: c[5] + ' (click: sort; again: reverse)',
        class: (c[3] === 0 ? 'text ' : '') + (META.sort === c[0] ? (META.dir > 0 ? 'sorted-asc' : 'sorted-desc') : ''),
        onclick: function () {
          if (META.sort === c[0]) META.dir = -META.dir;
          else { META.sort = c[0]; META.dir = c[3] === 0 || /rank/.test(c[0]) ? 1 : -1; }
          draw();
        } }, c[1]));
    });
    return el('thead', null, top, row);
  }
  function thinTitle(k, me) {
    return 'rests on ' + k.n_kept + ' kept model' + (k.n_kept === 1 ? '' : 's') + ' (fewer than ' + me.min_kept +
      '): shown, not ranked';
  }
  function cell(c, k, me) {
    var v = c[2](k, me);
    if (c[3] === 0) return el('td', { class: 'text', 'data-col': c[0], title: c[0] === 'key' ? k.key : null },
      v === null || v === undefined || v === '' ? '–' : String(v));
    if (c[0] === 'rank' && k.thin) return el('td', { 'data-col': c[0], class: 'thin', title: thinTitle(k, me) }, '–');
    if (c[0] === 'pair_rank' && me.pair && (me.pair.keys[k.key] || {}).thin) return el('td', { 'data-col': c[0], class: 'thin' }, '–');
    if (c[3] < 0) return el('td', { 'data-col': c[0] }, num(v) ? String(v) : '–');
    var thin = (THIN[c[0]] && k.thin) || (/^pair_/.test(c[0]) && me.pair && (me.pair.keys[k.key] || {}).thin);
    var title = c[0] === 'auc' && k.ci ? '95% CI [' + fmt(k.ci[0], 3) + ', ' + fmt(k.ci[1], 3) + ']' : u.exactTitle(v);
    var td = el('td', { 'data-col': c[0], class: thin && num(v) ? 'thin' : null, title: thin && num(v) ? thinTitle(k, me) : title },
      fmt(v, c[3]));
    if (thin && num(v)) add(td, el('span', { class: 'flag' }, ' ⚠'));
    return td;
  }
  /* The verdict on UDS (or the top metric): its AUC, robustness, overall and place, and how many
   * models the robustness rests on. */
  function verdict(me) {
    var k = me.keys.filter(function (x) { return x.key === 'uds'; })[0];
    if (!k) return null;
    var ranked = me.keys.filter(function (x) { return num(x.rank.overall); }).length;
    var rob = num(k.robustness) ? 'robustness ' + fmt(k.robustness, 4) + ' over ' + k.n_kept + ' kept unlearned model' +
      (k.n_kept === 1 ? '' : 's') : 'no robustness';
    var place = num(k.rank.overall) ? 'rank ' + k.rank.overall + ' of ' + ranked + ' ranked metrics by overall' :
      k.thin ? 'not ranked: its robustness rests on fewer than ' + me.min_kept + ' kept models' : 'not ranked';
    return el('p', { id: 'meta-verdict', class: k.thin ? 'notice' : 'verdict' }, el('b', null, 'UDS'), ' in this run (' +
      filtersText(me.filters) + '): faithfulness AUC ' + fmt(k.auc, 3) + ', ' + rob + ', overall ' + fmt(k.overall, 3) + '; ' + place + '.',
      me.pair ? [' With ' + filtersText(me.pair.filters) + ' (', link('#/meta/' + me.pair.index, me.pair.name, { id: 'meta-pair' }), '): ' +
        pairText(me.pair.keys.uds, me)] : null);
  }
  function pairText(p, me) {
    if (!p) return 'no UDS.';
    return 'overall ' + fmt(p.overall, 3) + ' over ' + p.n_kept + ' kept, ' + (num(p.rank) && !p.thin ? 'rank ' + p.rank :
      'not ranked') + '.';
  }
  /* The run's n, what it lacks (with its path) and Spearman against the published ranking. */
  function preamble(me) {
    var st = me.settings || {}, out = [];
    out.push(verdict(me));
    out.push(el('p', { class: 'muted', id: 'meta-n' }, 'zoo ' + (st.zoo || '?') + ' · ' + counts(me) + ' · robustness ' +
      (st.robustness_form || '?') + ' · ' + filtersText(me.filters) +
      (st.left_out && st.left_out.length ? ' · partial zoo: ' + st.left_out.length + ' models left out' : '') + ' · ' + me.source));
    if (me.n_thin) out.push(el('p', { class: 'notice', id: 'meta-thin' }, me.n_thin + ' metric' + (me.n_thin > 1 ? 's\'' : '\'s') +
      ' robustness rests on fewer than ' + me.min_kept + ' kept unlearned models (⚠): Q, R, robustness and overall are shown ' +
      'but not ranked (rank –) and left out of Spearman by overall and by robustness.'));
    if (me.lacks.length) out.push(el('ul', { class: 'notice', id: 'meta-lacks' }, me.lacks.map(function (t) {
      return el('li', null, me.source + ': ' + t);
    })));
    out.push(el('p', { id: 'meta-spearman' }, 'Spearman between this run\'s ranking of the metrics and the published one (' +
      me.published_source + '): ' + spearmanText(me.spearman.overall, 'overall') + '; ' +
      spearmanText(me.spearman.faithfulness, 'faithfulness') + '; ' + spearmanText(me.spearman.robustness, 'robustness') +
      '. Ranks (by overall): 1 = highest, among the ranked metrics of this run.'));
    return out;
  }
  function legend(me) {
    return el('dl', { class: 'legend-list muted', id: 'meta-legend' }, cols(me).filter(function (c) {
      return c[4] !== 'published' && c[4] !== 'pair'; }).map(function (c) {
      return [el('dt', null, c[1]), el('dd', null, c[5])];
    }), el('dt', null, '⚠'), el('dd', null, 'the value rests on fewer than ' + me.min_kept + ' kept unlearned models: not ranked'),
    el('dt', null, 'published'), el('dd', null, 'the same values in the published table (spec §5.7)'));
  }
  function sortRows(rows, me) {
    var col = COLS.filter(function (c) { return c[0] === META.sort; })[0] || COLS[7], dir = META.dir;
    return rows.sort(function (x, y) {
      var a = col[2](x, me), b = col[2](y, me);
      if (col[0] === 'rank') { a = x.thin ? null : a; b = y.thin ? null : b; }
      if (typeof a === 'string' && typeof b === 'string') return dir * a.localeCompare(b);
      if (!num(a) || !num(b)) {                 // empty cells last, among them by overall
        if (num(a) !== num(b)) return num(a) ? -1 : 1;
        return (num(y.overall) ? y.overall : -1) - (num(x.overall) ? x.overall : -1);
      }
      return dir * (a - b);
    });
  }
  /* The decision threshold of spec §5.5 on the raw scale: the recorded one is on the knowledge scale
   * (1 − value for an erasure metric). */
  function rawThreshold(k) {
    if (!num(k.threshold)) return null;
    return k.direction === 'erasure' ? 1 - k.threshold : k.threshold;
  }
  /* The P/N histogram of one metric: each pool's members with their raw values. */
  function poolHistogram(me, k) {
    var vals = me.values, members = me.members;
    var pool = function (lab) {
      return Object.keys(members).filter(function (n) { return members[n].kind === 'pool' && members[n].pool === lab; })
        .map(function (n) { return { name: n, value: (vals.orig[n] || {})[k.key] }; });
    };
    var t = rawThreshold(k), name = k.label || k.key;
    var hist = u.histogram([{ name: 'P', points: pool('P'), color: '#1f77b4' }, { name: 'N', points: pool('N'), color: '#ff7f0e' }],
      460, 230, { threshold: t, xTitle: 'raw ' + name + ' (higher = ' + (HIGHER[k.direction] || '?') + ')' });
    return hist ? [el('p', { class: 'legend muted', id: 'pn-legend' }, el('span', null, el('i', { class: 'sw p' }), 'P pool (knowledge present)'),
      el('span', null, el('i', { class: 'sw n' }), 'N pool (absent)'),
      num(t) ? el('span', null, '- - - decision threshold of the filter (spec §5.5), a bin edge') : null,
      el('span', null, 'hover a bar for its models')), hist]
      : el('p', { class: 'notice', id: 'pn-empty' }, 'no pool model has a value of ' + name + ' in ' + me.source + ': no histogram');
  }
  /* Before vs after NF4 and relearning for the unlearned models, or a line saying there is nothing to draw. */
  function robustnessScatters(me, k) {
    var vals = me.values, members = me.members, dropped = k.dropped.map(function (x) { return x.model; });
    var name = k.label || k.key;
    return [['nf4', 'NF4 quantisation', k.q, 'Q'], ['relearn', 'relearning', k.r, 'R']].map(function (s) {
      var pts = vals[s[0]] ? Object.keys(members).filter(function (n) { return members[n].kind === 'unlearned'; }).map(function (n) {
        return { name: n, x: (vals.orig[n] || {})[k.key], y: (vals[s[0]][n] || {})[k.key], kept: dropped.indexOf(n) < 0 };
      }) : [];
      return [el('h2', null, s[1] + ' (' + s[3] + ' ' + fmt(s[2]) + (k.thin ? ' ⚠ over ' + k.n_kept + ' kept' : '') + '): raw ' + name +
        ' before vs after'), u.scatter(pts, 460, 280, 'scatter-' + s[0], { xTitle: name + ' before', yTitle: name + ' after ' + s[1] }) ||
        el('p', { class: 'notice', id: 'scatter-' + s[0] + '-empty' }, 'no unlearned model measured both before and after ' + s[1] + ' in ' + me.source)];
    });
  }
  function showKey(side, me, k) {
    clear(side);
    var p = k.published || {};
    add(side, el('h2', { title: k.key }, (k.label || k.key) + ': faithfulness AUC ' + fmt(k.auc, 3) + (k.ci ? ' [' + fmt(k.ci[0], 3) + ', ' + fmt(k.ci[1], 3) + ']' : '') +
      ' (published ' + fmt(p.faithfulness, 3) + ')'));
    add(side, el('p', { class: 'muted', id: 'meta-means' }, 'raw pool means: P ' + fmt(k.p_mean, 3) + ' (published ' + fmt(p.p_mean, 3) +
      '), N ' + fmt(k.n_mean, 3) + ' (published ' + fmt(p.n_mean, 3) + '); pools of ' + (num(k.n_p) ? k.n_p : '?') + ' and ' +
      (num(k.n_n) ? k.n_n : '?') + ' models; robustness over ' + (num(k.n_kept) ? k.n_kept : '?') + ' kept models' +
      (k.thin ? ' (fewer than ' + me.min_kept + ': not ranked)' : '')));
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
    var metas = R.data.meta, at = isNaN(h.a) || !metas[h.a] ? 0 : h.a, me = metas[at];
    if (!me) { add(main, el('p', null, 'no meta-evaluation given')); return; }
    add(main, el('h1', null, 'Meta-evaluation'));
    if (metas.length > 1) add(main, el('div', { class: 'tabs', id: 'meta-runs' }, metas.map(function (x, i) {
      return link('#/meta/' + i, runLabel(x), { class: i === at ? 'here' : null, title: x.source, id: 'meta-run-' + i });
    })));
    add(main, preamble(me));
    var search = el('input', { type: 'search', id: 'meta-filter', placeholder: 'filter metrics…', value: META.text });
    var minAuc = el('select', { id: 'meta-min-auc' }, ['0', '0.5', '0.7', '0.9'].map(function (v) { return el('option', { value: v }, 'AUC ≥ ' + v); }));
    var wrap = el('div', { class: 'wrap' }), side = el('div', { id: 'meta-detail' });
    function draw() {
      var text = search.value.toLowerCase(), floor = parseFloat(minAuc.value);
      META.text = search.value;
      var rows = sortRows(me.keys.filter(function (k) {
        return (k.key + ' ' + (k.label || '')).toLowerCase().indexOf(text) >= 0 && (floor === 0 || (num(k.auc) && k.auc >= floor));
      }), me);
      clear(wrap).appendChild(el('table', { id: 'meta-table' }, header(me, draw), el('tbody', null, rows.map(function (k) {
        return el('tr', { class: 'clickable' + (k.thin ? ' thin-row' : ''), 'data-key': k.key, onclick: function () { META.key = k.key; showKey(side, me, k); } },
          cols(me).map(function (c) { return cell(c, k, me); }));
      }))));
    }
    search.addEventListener('input', draw);
    minAuc.addEventListener('change', draw);
    add(main, el('div', { class: 'controls' }, search, minAuc, el('span', { class: 'muted' }, 'click a metric for its P/N histogram, robustness scatters and filtered models')));
    add(main, el('div', { class: 'layout meta' }, wrap, legend(me), side));
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

  /* Inputs passed over, grouped by reason, each group with its count. */
  R.pages.skipped = function (main) {
    add(main, el('h1', null, 'Passed over'));
    var groups = [], by = {};
    R.data.skipped.forEach(function (s) {
      if (!by[s[1]]) { by[s[1]] = { reason: s[1], paths: [] }; groups.push(by[s[1]]); }
      if (by[s[1]].paths.indexOf(s[0]) < 0) by[s[1]].paths.push(s[0]);
    });
    groups.sort(function (a, b) { return b.paths.length - a.paths.length; });
    add(main, el('p', { class: 'muted' }, R.data.skipped.length + ' inputs passed over or read only in part, for ' + groups.length +
      ' reason' + (groups.length === 1 ? '' : 's') + '.'));
    add(main, el('div', { id: 'skipped' }, groups.map(function (g) {
      return el('section', { class: 'skip-group', 'data-count': g.paths.length },
        el('h2', null, g.reason, el('span', { class: 'tag' }, String(g.paths.length))),
        el('ul', null, g.paths.map(function (p) { return el('li', { class: 'path' }, u.breakable(p)); })));
    })));
  };
})();
