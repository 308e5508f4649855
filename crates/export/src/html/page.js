// culprit's HTML report: draws the views from the JSON data block (the page model,
// crates/export/src/html/model.rs). Every text from the file goes into the page through
// textContent, text nodes, attribute values or canvas fillText: never parsed as markup.
'use strict';
(function () {
  const T0 = performance.now();
  const D = JSON.parse(document.getElementById('culprit-data').textContent);
  const E = D.events;
  const F = D.flame;
  let N = F.parent.length;
  const render = {};
  const state = { ev: 0, zoom: 0, icicle: false, query: '', fn: -1, ann: D.annotations.length ? 0 : -1 };
  // The trees open on the hottest function of the table that is in the call tree.
  const firstFrame = D.functions.rows.find((r) => r.frame !== null && r.frame !== undefined);
  if (firstFrame) state.tree = firstFrame.frame;

  // ---- helpers -------------------------------------------------------------------------
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      const v = attrs[k];
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of kids) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  const fmtPct = (p) => p.toFixed(2) + '%';
  const share = (v, t) => (t > 0 ? (v * 100) / t : 0);
  const fmtInt = (n) => n.toLocaleString('en-US');
  function fmtValue(v, e) {
    if (E[e].unit !== 'nanoseconds') return fmtInt(v) + ' events';
    if (v >= 1e9) return (v / 1e9).toFixed(3) + ' s';
    if (v >= 1e6) return (v / 1e6).toFixed(3) + ' ms';
    if (v >= 1e3) return (v / 1e3).toFixed(3) + ' µs';
    return v + ' ns';
  }
  function clear(node) { while (node.firstChild) node.firstChild.remove(); return node; }
  function eventSelect(onchange) {
    const s = el('select', { class: 'evsel', title: 'event' });
    E.forEach((ev, i) => s.append(el('option', { value: String(i), text: ev.name })));
    s.value = String(state.ev);
    s.addEventListener('change', () => onchange(Number(s.value)));
    return s;
  }
  function barCell(p, text) {
    const b = el('span', { class: 'b' });
    b.style.width = Math.min(100, Math.max(0, p)).toFixed(2) + '%';
    return el('td', { class: 'num bar' }, b, el('span', { class: 't', text: text }));
  }
  function table(cols, rows, opts) {
    const t = el('table', opts && opts.id ? { id: opts.id } : {});
    t.append(el('thead', {}, el('tr', {}, ...cols.map((c) => el('th', { class: c.num ? 'num' : '', text: c.label })))));
    const body = el('tbody');
    for (const r of rows) body.append(el('tr', {}, ...cols.map((c) => el('td', { class: c.num ? 'num' : '', text: c.get(r) }))));
    t.append(body);
    return t;
  }

  // ---- tabs ----------------------------------------------------------------------------
  const views = [['summary', 'Summary'], ['timeline', 'Timeline'], ['functions', 'Hot functions'], ['flame', 'Flame graph'],
    ['calltree', 'Call tree'], ['trees', 'Callers / callees'], ['annotate', 'Annotate']];
  views.push(['why', 'Why']);
  if (D.topdown) views.push(['topdown', 'Top-Down']);
  if (D.ibs) views.push(['ibs', 'IBS']);
  if (D.diff) views.push(['diff', 'Diff']);
  const tabs = document.getElementById('tabs');
  const shown = {};
  let current = 'summary';
  function show(name) {
    current = name;
    for (const s of document.querySelectorAll('section.view')) s.hidden = s.id !== 'v-' + name;
    for (const b of tabs.children) b.classList.toggle('active', b.dataset.view === name);
    if (!shown[name] || name === 'flame' || name === 'timeline') { shown[name] = true; render[name](); }
  }
  tabs.append(el('span', { id: 'selection' }));
  const crumbs = el('div', { id: 'transforms' });
  tabs.after(crumbs);
  const selectionBar = tabs.lastChild;
  for (const [name, label] of views) tabs.insertBefore(el('button', { 'data-view': name, id: 'tab-' + name, text: label, onclick: () => show(name) }), selectionBar);
  document.getElementById('title').textContent = D.summary.input + (D.diff ? ' against ' + D.diff.other.file : '');

  // ---- the call tree -------------------------------------------------------------------
  // Children and depth of each node of the current tree (rebuilt after a transform).
  let kids = [], depth = new Int32Array(0);
  const fname = (i) => (F.frame[i] < 0 ? 'all' : F.frames[F.frame[i]].name);
  function rebuildIndex() {
    N = F.parent.length;
    kids = Array.from({ length: N }, () => []);
    depth = new Int32Array(N);
    for (let i = 1; i < N; i++) { kids[F.parent[i]].push(i); depth[i] = depth[F.parent[i]] + 1; }
    for (const k of kids) k.sort((a, b) => (fname(a) < fname(b) ? -1 : fname(a) > fname(b) ? 1 : 0));
  }
  rebuildIndex();
  const frameLabel = (f) => F.frames[f].name + (F.frames[f].dso ? ' (' + F.frames[f].dso + ')' : '');
  function hasAncestorFrame(n, f) {
    for (let p = F.parent[n]; p > 0; p = F.parent[p]) if (F.frame[p] === f) return true;
    return false;
  }
  function frameTotals(f, e) {
    const v = F.value[e];
    let total = 0, self = 0;
    for (let i = 1; i < N; i++) {
      if (F.frame[i] !== f || !v[i]) continue;
      let below = 0;
      for (const c of kids[i]) below += v[c];
      self += v[i] - below;
      if (!hasAncestorFrame(i, f)) total += v[i];
    }
    return { total, self };
  }

  // ---- time selection ------------------------------------------------------------------
  // A selection is a run of whole timeline buckets [a, b): every view is drawn from the
  // per-bucket cells of the model (node self and function self periods per bucket).
  const TL = D.timeline;
  const VALUE_ALL = F.value;
  // The page's own tree; transforms draw another one from it.
  const ORIG = { parent: F.parent, frame: F.frame };
  let BASE = VALUE_ALL;
  let ROWS = D.functions.rows;
  let SEL = null;
  const NS = 1e9;
  const secs = (t) => Math.floor(t / NS) + '.' + String(t % NS).padStart(9, '0');
  // The `culprit report --time` window of the selection (inclusive bounds).
  function selWindow() {
    const r = viewRange();
    if (!r) return '';
    return secs(TL.start + r.a * TL.width) + ',' + secs(TL.start + r.b * TL.width - 1);
  }
  // Index of the first cell of bucket `a` or later (cells are sorted by bucket).
  function firstCell(c, a) {
    let lo = 0, hi = c.b.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (c.b[m] < a) lo = m + 1; else hi = m; }
    return lo;
  }
  // Each node's value in buckets [a, b), on the page's own tree (before transforms).
  function selectedValues(a, b) {
    const n = ORIG.parent.length;
    return TL.nodes.map((c) => {
      const v = new Array(n).fill(0);
      for (let k = firstCell(c, a); k < c.b.length && c.b[k] < b; k++) v[c.k[k]] += c.p[k];
      for (let i = n - 1; i > 0; i--) v[ORIG.parent[i]] += v[i];
      return v;
    });
  }
  // The hot functions table of the selection: each function's self period in it.
  function selectedRows(a, b) {
    const byFrame = new Map();
    const annotationOf = new Map(D.functions.rows.filter((r) => r.annotation != null).map((r) => [r.dso + '\u0000' + r.name, r.annotation]));
    const totals = E.map((ev, e) => TL.period[e].slice(a, b).reduce((x, y) => x + y, 0));
    TL.functions.forEach((c, e) => {
      for (let k = firstCell(c, a); k < c.b.length && c.b[k] < b; k++) {
        const f = c.k[k];
        if (F.frames[f].kind === 'comm') continue;
        let r = byFrame.get(f);
        if (!r) {
          const fr = F.frames[f];
          r = { name: fr.name, dso: fr.dso, tag: fr.kind === 'kernel' ? '[k]' : '[.]', frame: f, samples: E.map(() => 0), period: E.map(() => 0), percent: [],
            annotation: annotationOf.has(fr.dso + '\u0000' + fr.name) ? annotationOf.get(fr.dso + '\u0000' + fr.name) : null };
          byFrame.set(f, r);
        }
        r.samples[e] += c.s[k];
        r.period[e] += c.p[k];
      }
    });
    const rows = [...byFrame.values()];
    for (const r of rows) r.percent = r.period.map((p, e) => share(p, totals[e]));
    return rows;
  }
  // The range every view shows: the selection, else the range a "drop samples outside
  // the selection" transform kept, else none (the whole recording).
  function viewRange() {
    if (SEL) return SEL;
    for (let k = transforms.length - 1; k >= 0; k--) if (transforms[k].range) return transforms[k].range;
    return null;
  }
  function select(range) {
    SEL = range && range.b > range.a ? range : null;
    const r = viewRange();
    BASE = r ? selectedValues(r.a, r.b) : VALUE_ALL;
    ROWS = r ? selectedRows(r.a, r.b) : D.functions.rows;
    applyTransforms();
    state.fn = -1; state.zoom = 0;
    const bar = clear(document.getElementById('selection'));
    if (SEL) {
      bar.append(el('span', { text: 'Time selection ' + fmtSpan(SEL.a * TL.width) + '–' + fmtSpan(SEL.b * TL.width) + ' filters every view ' }),
        el('button', { id: 'selection-clear', text: 'Clear', onclick: () => select(null) }));
    }
    for (const k in shown) shown[k] = false;
    show(current);
  }
  function fmtSpan(ns) { return (ns / NS).toFixed(ns < 1e7 ? 6 : 3) + ' s'; }

  // ---- transforms ----------------------------------------------------------------------
  // Each transform rewrites the frame path (root first, the command at [0]) of every node
  // with self time; the tree is built again from the rewritten paths. They apply in order,
  // show as breadcrumbs, and clicking a breadcrumb undoes the ones after it.
  const transforms = [];
  const libFrame = new Map();
  function libraryFrame(dso) {
    if (!libFrame.has(dso)) { F.frames.push({ name: '[' + dso + ']', dso, kind: 'library' }); libFrame.set(dso, F.frames.length - 1); }
    return libFrame.get(dso);
  }
  const dedupe = (p, f) => p.filter((x, k) => !(x === f && k > 0 && p[k - 1] === f));
  const transformKinds = {
    merge: (t) => ({ label: 'merge ' + F.frames[t.f].name, apply: (p) => p.filter((x, k) => k === 0 || x !== t.f) }),
    focusFunction: (t) => ({ label: 'focus on ' + F.frames[t.f].name, apply: (p) => { const k = p.indexOf(t.f); return k < 0 ? null : p.slice(k); } }),
    focusSubtree: (t) => ({ label: 'focus on subtree ' + F.frames[t.prefix[t.prefix.length - 1]].name,
      apply: (p) => (p.length >= t.prefix.length && t.prefix.every((f, k) => p[k] === f) ? p.slice(t.prefix.length - 1) : null) }),
    collapseLibrary: (t) => ({ label: 'collapse ' + t.dso, apply: (p) => { const lf = libraryFrame(t.dso); return dedupe(p.map((x, k) => (k > 0 && F.frames[x].dso === t.dso ? lf : x)), lf); } }),
    collapseRecursion: (t) => ({ label: 'collapse recursion of ' + F.frames[t.f].name, apply: (p) => dedupe(p, t.f) }),
    dropOutside: (t) => ({ label: 'keep ' + fmtSpan(t.range.a * TL.width) + '–' + fmtSpan(t.range.b * TL.width), apply: (p) => p }),
  };
  function pushTransform(t) {
    const x = Object.assign(t, transformKinds[t.kind](t));
    transforms.push(x);
    if (t.kind === 'dropOutside') SEL = null;
    select(SEL);
  }
  function popTransforms(n) { transforms.length = n; select(SEL); }
  function applyTransforms() {
    if (!transforms.length) { F.parent = ORIG.parent; F.frame = ORIG.frame; F.value = BASE; rebuildIndex(); drawCrumbs(); return; }
    const n0 = ORIG.parent.length;
    const self = BASE.map((v) => { const s = v.slice(); for (let i = 1; i < n0; i++) s[ORIG.parent[i]] -= v[i]; return s; });
    const parent = [-1], frame = [-1], value = E.map(() => [0]), child = new Map();
    for (let i = 1; i < n0; i++) {
      if (!E.some((ev, e) => self[e][i])) continue;
      let p = [];
      for (let q = i; q > 0; q = ORIG.parent[q]) p.push(ORIG.frame[q]);
      p.reverse();
      for (const t of transforms) { p = t.apply(p); if (!p || !p.length) break; }
      if (!p || !p.length) continue;
      E.forEach((ev, e) => { value[e][0] += self[e][i]; });
      let cur = 0;
      for (const f of p) {
        const key = cur + ':' + f;
        let c = child.get(key);
        if (c === undefined) {
          c = parent.length; parent.push(cur); frame.push(f); E.forEach((ev, e) => value[e].push(0));
          child.set(key, c);
        }
        E.forEach((ev, e) => { value[e][c] += self[e][i]; });
        cur = c;
      }
    }
    F.parent = parent; F.frame = frame; F.value = value;
    rebuildIndex();
    drawCrumbs();
  }
  function drawCrumbs() {
    const bar = document.getElementById('transforms');
    if (!bar) return;
    clear(bar);
    if (!transforms.length) return;
    bar.append(el('button', { class: 'crumb', text: 'Full profile', onclick: () => popTransforms(0) }));
    transforms.forEach((t, k) => bar.append(' › ', el('button', { class: 'crumb', 'data-kind': t.kind, text: t.label, onclick: () => popTransforms(k + 1) })));
    bar.append(' ', el('button', { id: 'transform-undo', text: 'Undo', onclick: () => popTransforms(transforms.length - 1) }));
  }
  // Buttons of the transforms of frame `f` (`prefix`: its path, for focus on subtree).
  function transformButtons(f, prefix) {
    const b = (kind, text, extra) => el('button', { class: 'transform', 'data-kind': kind, text, onclick: () => pushTransform(Object.assign({ kind }, extra)) });
    const out = [];
    if (f >= 0 && F.frames[f].kind !== 'comm') {
      out.push(b('merge', 'Merge function', { f }), b('focusFunction', 'Focus on function', { f }));
      if (prefix) out.push(b('focusSubtree', 'Focus on subtree', { prefix }));
      if (F.frames[f].dso) out.push(b('collapseLibrary', 'Collapse ' + F.frames[f].dso, { dso: F.frames[f].dso }));
      out.push(b('collapseRecursion', 'Collapse recursion', { f }));
    }
    if (SEL) out.push(b('dropOutside', 'Drop samples outside the selection', { range: SEL }));
    return out;
  }
  const pathOf = (n) => { const p = []; for (let q = n; q > 0; q = F.parent[q]) p.push(F.frame[q]); return p.reverse(); };

  // ---- timeline ------------------------------------------------------------------------
  const TRACK = 24, GROUP = 18, RULER = 20, LABEL = 200;
  let drag = null;
  render.timeline = function () {
    const v = clear(document.getElementById('v-timeline'));
    if (!TL) { v.append(el('p', { class: 'note', text: 'The samples have no time (record with timestamps, as culprit and perf do by default): no timeline.' })); return; }
    v.append(el('div', { class: 'controls' }, eventSelect((x) => { state.ev = x; render.timeline(); }),
      el('span', { id: 'timeline-range', class: 'note' })));
    const canvas = el('canvas', { id: 'timeline' });
    v.append(el('div', { id: 'timeline-wrap' }, canvas));
    const e = state.ev;
    const isTime = E[e].unit === 'nanoseconds' && e !== TL.offcpu;
    v.append(el('p', { class: 'note', text: 'One track per thread, grouped by process; ' +
      (isTime ? 'bar height: CPU usage (' + E[e].name + ' time per bucket of ' + fmtSpan(TL.width) + ')' : 'bar height: ' + E[e].name + ' samples per bucket of ' + fmtSpan(TL.width) + ', relative to the busiest') +
      (TL.offcpu != null ? '; grey under a track: off-CPU intervals (offcpu-time)' : '; off-CPU intervals appear with culprit record --off-cpu') +
      '. Drag to select a time range: every view then shows only its samples.' }));
    drawTimeline();
    canvas.addEventListener('mousedown', (ev) => { drag = { from: bucketAt(canvas, ev) }; drag.to = drag.from; drawTimeline(); });
    canvas.addEventListener('mousemove', (ev) => { if (drag) { drag.to = bucketAt(canvas, ev); drawTimeline(); } });
    canvas.addEventListener('mouseup', (ev) => {
      if (!drag) return;
      const a = Math.min(drag.from, bucketAt(canvas, ev)), b = Math.max(drag.from, bucketAt(canvas, ev)) + 1;
      drag = null;
      select({ a, b });
    });
  };
  function bucketAt(canvas, ev) {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left - LABEL, w = r.width - LABEL;
    return Math.max(0, Math.min(TL.buckets - 1, Math.floor((x / w) * TL.buckets)));
  }
  function drawTimeline() {
    const canvas = document.getElementById('timeline');
    if (!canvas) return;
    const e = state.ev;
    const W = canvas.parentElement.clientWidth || 1200, plot = W - LABEL, bw = plot / TL.buckets;
    let pid = null, H = RULER;
    const rowsAt = [];
    for (const t of TL.threads) { if (t.pid !== pid) { pid = t.pid; H += GROUP; } rowsAt.push(H); H += TRACK; }
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.floor(W * dpr); canvas.height = Math.floor(H * dpr); canvas.style.height = H + 'px';
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11.5px system-ui, sans-serif'; ctx.textBaseline = 'middle'; ctx.fillStyle = '#5b6570';
    const span = TL.width * TL.buckets;
    for (let k = 0; k <= 4; k++) ctx.fillText(fmtSpan((span * k) / 4), LABEL + (plot * k) / 4 - (k === 4 ? 60 : 0), RULER / 2);
    const isTime = E[e].unit === 'nanoseconds' && e !== TL.offcpu;
    let max = 1;
    if (!isTime) for (const t of TL.threads) for (const x of t.samples[e]) if (x > max) max = x;
    pid = null;
    TL.threads.forEach((t, i) => {
      const y = rowsAt[i];
      if (t.pid !== pid) {
        pid = t.pid;
        ctx.fillStyle = '#1d232a';
        ctx.fillText(t.tid < 0 ? t.comm : 'process ' + t.pid + ' (' + t.comm + ')', 4, y - GROUP / 2);
      }
      ctx.fillStyle = i % 2 ? '#fff' : '#f5f7f9'; ctx.fillRect(0, y, W, TRACK);
      ctx.fillStyle = '#5b6570'; ctx.fillText((t.tid < 0 ? '' : t.comm + ' ' + t.tid), 12, y + TRACK / 2);
      ctx.fillStyle = '#3b6fb6';
      for (let b = 0; b < TL.buckets; b++) {
        const f = isTime ? Math.min(1, t.period[e][b] / TL.width) : t.samples[e][b] / max;
        if (f > 0) { const h = Math.max(1, f * (TRACK - 6)); ctx.fillRect(LABEL + b * bw, y + TRACK - 4 - h, Math.max(bw - 0.3, 0.7), h); }
      }
      ctx.fillStyle = '#9aa3ad';
      for (const [s0, s1] of t.offcpu) {
        const x0 = LABEL + ((s0 - TL.start) / span) * plot, x1 = LABEL + ((s1 - TL.start) / span) * plot;
        ctx.fillRect(Math.max(LABEL, x0), y + TRACK - 3, Math.max(1, x1 - Math.max(LABEL, x0)), 3);
      }
    });
    const sel = drag ? { a: Math.min(drag.from, drag.to), b: Math.max(drag.from, drag.to) + 1 } : viewRange();
    if (sel) { ctx.fillStyle = 'rgba(255,196,0,0.25)'; ctx.fillRect(LABEL + sel.a * bw, RULER, (sel.b - sel.a) * bw, H - RULER); }
    const range = document.getElementById('timeline-range');
    if (range) {
      clear(range);
      const R = viewRange();
      if (R) {
        const n = E.map((ev, k) => fmtInt(TL.samples[k].slice(R.a, R.b).reduce((x, y) => x + y, 0)) + ' ' + ev.name);
        range.append((SEL ? 'Selected ' : 'Kept ') + fmtSpan(R.a * TL.width) + '–' + fmtSpan(R.b * TL.width) + ': ' + n.join(', ') + ' samples; the CLI\'s numbers: culprit report --time ',
          el('code', { id: 'timeline-window', text: selWindow() }));
      } else range.append('No selection: the views show the whole recording (' + fmtSpan(span) + ').');
    }
  }

  // ---- summary -------------------------------------------------------------------------
  render.summary = function () {
    const s = D.summary;
    const v = clear(document.getElementById('v-summary'));
    const kv = [['Input', s.input], ['Command', s.cmdline], ['Host', s.hostname], ['Arch', s.arch],
      ['CPU', s.cpu], ['Kernel', s.os_release], ['Recorded by', s.perf_version],
      ['Duration', s.duration_ns == null ? null : (s.duration_ns / 1e9).toFixed(3) + ' s (first to last sample)'],
      ['Samples', fmtInt(s.samples)], ['Lost samples', fmtInt(s.lost)]];
    if (D.diff) kv.push(['Compared with', D.diff.other.file]);
    const t = el('table', { class: 'kv', id: 'summary-table' });
    for (const [k, val] of kv) if (val !== null && val !== undefined) t.append(el('tr', {}, el('th', { text: k }), el('td', { text: val })));
    v.append(el('h2', { text: 'Recording' }), t);
    // The top functions of the first event.
    const top = D.functions.rows.filter((r) => r.period[0] > 0).sort((a, b) => b.period[0] - a.period[0]).slice(0, 10);
    if (top.length) {
      v.append(el('h3', { text: 'Top functions (' + E[0].name + ', self)' }));
      v.append(table([{ label: E[0].name, num: true, get: (r) => fmtPct(r.percent[0]) }, { label: 'Function', get: (r) => (r.tag ? r.tag + ' ' : '') + r.name + (r.addr ? ' ' + r.addr : '') },
        { label: 'DSO', get: (r) => r.dso }], top, { id: 'summary-top' }));
    }
    v.append(el('h3', { text: 'Events' }));
    v.append(table([{ label: 'Event', get: (e) => e.name }, { label: 'Samples', num: true, get: (e) => fmtInt(e.samples) },
      { label: 'Total', num: true, get: (e) => fmtValue(e.period, E.indexOf(e)) }], E, { id: 'events-table' }));
    if (s.stopped) v.append(el('p', { class: 'warn', text: 'Reading stopped at byte ' + s.stopped.offset + ': ' + s.stopped.reason + '; the report shows what was read before.' }));
    for (const w of s.warnings) v.append(el('p', { class: 'warn', text: 'warning: ' + w }));
    v.append(el('h3', { text: 'Notes' }));
    const software = E.length && E.every((e) => /^(cpu-clock|task-clock|offcpu-time)/.test(e.name));
    const notes = [software ? 'Only software events (' + E.map((e) => e.name).join(', ') + '): hardware counters were not used (a machine or VM without a PMU falls back to cpu-clock); precise data needs them (see the Why tab).' : null,
      F.pruned ? F.pruned + ' call-tree nodes below ' + (F.min_fraction * 100).toPrecision(2) + '% of every event are left out of the flame graph and trees (their time stays in their callers)' : null,
      D.functions.hidden ? D.functions.hidden + ' functions beyond the top rows of every event are left out of the table' : null];
    for (const n of notes) if (n) v.append(el('p', { class: 'note', text: n }));
    v.append(el('p', { class: 'note', text: 'Written by ' + D.generator + '.' }));
  };

  // ---- hot functions -------------------------------------------------------------------
  let fnSort = 0;
  render.functions = function () {
    const v = clear(document.getElementById('v-functions'));
    const filter = el('input', { type: 'search', id: 'fn-filter', placeholder: 'filter functions' });
    v.append(el('div', { class: 'controls' }, filter,
      el('span', { class: 'note', text: viewRange() ? 'Self share of each event\'s total in the selected time range (culprit report --sort sym --no-children --time ' + selWindow() + '; code without a symbol is one row per DSO). Click a header to sort, a function to annotate it.' : 'Self share of each event\'s total (culprit report --sort sym --no-children). Click a header to sort, a function to annotate it.' })));
    const head = el('tr');
    E.forEach((ev, e) => {
      const th = el('th', { class: 'num sort' + (e === fnSort ? ' on' : ''), text: ev.name, title: 'sort by ' + ev.name });
      th.addEventListener('click', () => { fnSort = e; render.functions(); });
      head.append(th);
    });
    head.append(el('th', { text: 'Function' }), el('th', { text: 'DSO' }));
    const rows = ROWS.map((r, i) => i);
    rows.sort((a, b) => ROWS[b].period[fnSort] - ROWS[a].period[fnSort] || a - b);
    const body = el('tbody');
    for (const i of rows) {
      const r = ROWS[i];
      const tr = el('tr', { class: 'pick' + (i === state.fn ? ' sel' : ''), 'data-row': String(i) });
      E.forEach((ev, e) => {
        const td = barCell(r.percent[e], fmtPct(r.percent[e]));
        td.title = fmtInt(r.samples[e]) + ' samples, ' + fmtValue(r.period[e], e);
        tr.append(td);
      });
      tr.append(el('td', { class: 'fn', text: (r.tag ? r.tag + ' ' : '') + r.name + (r.addr ? ' ' + r.addr : '') }),
        el('td', { class: 'fn', text: r.dso }));
      tr.addEventListener('click', () => pickFunction(i));
      body.append(tr);
    }
    const t = el('table', { id: 'functions-table' }, el('thead', {}, head), body);
    filter.addEventListener('input', () => {
      const q = filter.value.toLowerCase();
      for (const tr of body.children) {
        const r = ROWS[Number(tr.dataset.row)];
        tr.hidden = q !== '' && !(r.name.toLowerCase().includes(q) || r.dso.toLowerCase().includes(q));
      }
    });
    v.append(el('div', { class: 'scroll' }, t));
    if (D.functions.hidden && !viewRange()) v.append(el('p', { class: 'note', text: D.functions.hidden + ' more functions (below the top rows of every event) are not listed.' }));
  };
  function pickFunction(i) {
    const r = ROWS[i];
    state.fn = i;
    if (r.frame !== null && r.frame !== undefined) state.tree = r.frame;
    if (r.annotation !== null && r.annotation !== undefined) state.ann = r.annotation;
    else state.ann = -1;
    state.missing = r.annotation == null ? r : null;
    shown.annotate = false; shown.trees = false; shown.functions = false;
    show('annotate');
  }

  // ---- flame graph and icicle ----------------------------------------------------------
  const ROW = 17;
  // The search highlight: crates/export/src/flamegraph.rs SEARCH_COLOR (no DSO hue is near).
  const SEARCH = '#0000ff';
  let rects = [];
  function hue(s) { let h = 2166136261; for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); } return (h >>> 0) / 4294967296; }
  function color(i) {
    if (F.frame[i] < 0) return 'rgb(200,200,210)';
    const f = F.frames[F.frame[i]];
    // The SVG's colour (culprit flamegraph), computed when the page was written.
    if (f.color) return f.color;
    const x = hue(f.name);
    switch (f.kind) {
      case 'comm': return 'rgb(170,180,200)';
      case 'kernel': return `rgb(${190 + Math.floor(65 * x)},${90 + Math.floor(65 * x)},0)`;
      case 'program': return `rgb(${205 + Math.floor(50 * x)},${Math.floor(230 * x)},55)`;
      case 'jit': return `rgb(${Math.floor(60 * x)},${200 + Math.floor(55 * x)},${Math.floor(60 * x)})`;
      case 'library': {
        const hues = [[80, 80, 190], [50, 165, 165], [190, 80, 190], [0, 200, 0], [175, 175, 50]];
        const c = hues[Math.floor(hue(f.dso) * hues.length)];
        return `rgb(${c[0] + Math.floor(55 * x)},${c[1] + Math.floor(55 * x)},${c[2] + Math.floor(55 * x)})`;
      }
      default: return `rgb(${160 + Math.floor(40 * x)},${160 + Math.floor(40 * x)},${160 + Math.floor(40 * x)})`;
    }
  }
  function matches(i) { return state.query !== '' && F.frame[i] >= 0 && F.frames[F.frame[i]].name.toLowerCase().includes(state.query); }
  function noSamples(v) {
    if (E.length && N > 1) return false;
    clear(v).append(el('p', { class: 'note', text: 'No samples to draw.' }));
    return true;
  }
  render.flame = function () {
    const v = document.getElementById('v-flame');
    if (noSamples(v)) return;
    if (!v.firstChild) {
      const search = el('input', { type: 'search', id: 'flame-search', placeholder: 'search frames' });
      search.addEventListener('input', () => { state.query = search.value.toLowerCase(); drawFlame(); });
      const icicle = el('input', { type: 'checkbox', id: 'flame-icicle' });
      icicle.addEventListener('change', () => { state.icicle = icicle.checked; drawFlame(); });
      v.append(el('div', { class: 'controls' }, eventSelect((e) => { state.ev = e; state.zoom = 0; shown.trees = false; drawFlame(); }),
        el('label', {}, icicle, ' icicle'), search,
        el('button', { id: 'flame-reset', text: 'Reset zoom', onclick: () => { state.zoom = 0; drawFlame(); } }),
        el('span', { id: 'flame-status', class: 'note' })));
      const canvas = el('canvas', { id: 'flame' });
      v.append(el('div', { id: 'flame-wrap' }, canvas), el('div', { id: 'frame-info' }));
      v.append(el('p', { class: 'note', text: 'Click a frame to zoom, search to highlight; widths are each event\'s period. Colours (as culprit flamegraph\'s SVG): kernel orange, the program red-yellow, each library its own hue, JIT green; search matches blue.' }));
      const tip = document.getElementById('tip');
      canvas.addEventListener('mousemove', (ev) => {
        const n = hit(canvas, ev);
        if (n < 0) { tip.hidden = true; return; }
        tip.textContent = frameText(n);
        tip.hidden = false;
        tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 300) + 'px';
        tip.style.top = (ev.clientY + 14) + 'px';
      });
      canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
      canvas.addEventListener('click', (ev) => {
        const n = hit(canvas, ev);
        if (n < 0) return;
        state.zoom = n;
        drawFlame();
        frameInfo(n);
      });
      window.addEventListener('resize', () => { if (!v.hidden) drawFlame(); });
    }
    drawFlame();
  };
  function frameText(n) {
    const t = F.value[state.ev][0];
    const label = F.frame[n] < 0 ? 'all' : frameLabel(F.frame[n]);
    return label + ' — ' + fmtValue(F.value[state.ev][n], state.ev) + ', ' + fmtPct(share(F.value[state.ev][n], t));
  }
  function frameInfo(n) {
    const info = clear(document.getElementById('frame-info'));
    info.append(el('span', { text: frameText(n) + ' ' }));
    if (F.frame[n] < 0 || F.frames[F.frame[n]].kind === 'comm') return;
    const f = F.frame[n];
    info.append(el('button', { text: 'Callers / callees', onclick: () => { state.tree = f; shown.trees = false; show('trees'); } }));
    info.append(...transformButtons(f, pathOf(n)), ' ');
    const row = ROWS.findIndex((r) => r.frame === f);
    if (row >= 0) info.append(' ', el('button', { text: 'Annotate', onclick: () => pickFunction(row) }));
  }
  function hit(canvas, ev) {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    for (const [rx, ry, rw, n] of rects) if (x >= rx && x < rx + rw && y >= ry && y < ry + ROW) return n;
    return -1;
  }
  function drawFlame() {
    const canvas = document.getElementById('flame');
    if (!canvas) return;
    const e = state.ev, v = F.value[e];
    if (!v[state.zoom]) state.zoom = 0;
    const W = canvas.parentElement.clientWidth || 1200;
    const total = v[state.zoom] || 1;
    const laid = [];
    // Ancestors of the zoomed frame span the width.
    for (let p = state.zoom; p >= 0; p = F.parent[p]) laid.push([p, 0, W]);
    let maxDepth = depth[state.zoom];
    const stack = [[state.zoom, 0]];
    while (stack.length) {
      const [n, x] = stack.pop();
      let cx = x;
      for (const c of kids[n]) {
        const w = (v[c] / total) * W;
        if (w >= 0.5) { laid.push([c, cx, w]); stack.push([c, cx]); if (depth[c] > maxDepth) maxDepth = depth[c]; }
        cx += w;
      }
    }
    const H = (maxDepth + 1) * ROW + 4;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.floor(W * dpr); canvas.height = Math.floor(H * dpr);
    canvas.style.height = H + 'px';
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11.5px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    rects = [];
    for (const [n, x, w] of laid) {
      const y = state.icicle ? depth[n] * ROW : H - (depth[n] + 1) * ROW;
      const m = matches(n);
      ctx.fillStyle = m ? SEARCH : color(n);
      ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
      rects.push([x, y, w, n]);
      if (w > 30) {
        const label = F.frame[n] < 0 ? 'all' : F.frames[F.frame[n]].name;
        const fit = Math.floor((w - 6) / 6.2);
        ctx.fillStyle = m ? '#fff' : '#000';
        ctx.fillText(label.length > fit ? label.slice(0, Math.max(fit - 2, 0)) + '..' : label, x + 3, y + ROW / 2);
      }
    }
    // Deep stacks make a tall canvas: show the roots (the bottom of a flame graph).
    canvas.parentElement.scrollTop = state.icicle ? 0 : canvas.parentElement.scrollHeight;
    const status = document.getElementById('flame-status');
    // The matched share from the tree itself (every node, drawn or too thin to draw), each
    // stack once: as report --children's share of the function.
    let matched = 0;
    if (state.query) for (let n = 1; n < N; n++) if (v[n] && matches(n) && !hasAncestorMatch(n)) matched += v[n];
    status.textContent = state.query ? 'matched: ' + fmtPct(share(matched, v[0])) + ' of all' : '';
  }
  function hasAncestorMatch(n) { for (let p = F.parent[n]; p > 0; p = F.parent[p]) if (matches(p)) return true; return false; }

  // ---- callers / callees ---------------------------------------------------------------
  function topFrames(e) {
    const best = new Map();
    for (let i = 1; i < N; i++) {
      const f = F.frame[i];
      if (f < 0 || F.frames[f].kind === 'comm' || !F.value[e][i]) continue;
      if (!hasAncestorFrame(i, f)) best.set(f, (best.get(f) || 0) + F.value[e][i]);
    }
    return [...best.entries()].sort((a, b) => b[1] - a[1]);
  }
  function mergeCallees(node, into, e) {
    for (const c of kids[node]) {
      const v = F.value[e][c];
      if (!v) continue;
      let t = into.kids.get(F.frame[c]);
      if (!t) { t = { f: F.frame[c], v: 0, kids: new Map() }; into.kids.set(F.frame[c], t); }
      t.v += v;
      mergeCallees(c, t, e);
    }
  }
  function callTrees(f, e) {
    const callees = { f, v: 0, kids: new Map() }, callers = { f, v: 0, kids: new Map() };
    for (let i = 1; i < N; i++) {
      if (F.frame[i] !== f || !F.value[e][i] || hasAncestorFrame(i, f)) continue;
      const v = F.value[e][i];
      callees.v += v; callers.v += v;
      mergeCallees(i, callees, e);
      let cur = callers;
      for (let p = F.parent[i]; p > 0; p = F.parent[p]) {
        let t = cur.kids.get(F.frame[p]);
        if (!t) { t = { f: F.frame[p], v: 0, kids: new Map() }; cur.kids.set(F.frame[p], t); }
        t.v += v;
        cur = t;
      }
    }
    return { callers, callees };
  }
  function treeList(node, total, open, top) {
    const ul = el('ul', { class: top ? 'tree top' : 'tree' });
    const li = el('li');
    const sorted = [...node.kids.values()].sort((a, b) => b.v - a.v);
    const tog = el('span', { class: 'tog', text: sorted.length ? (open ? '▾' : '▸') : ' ' });
    li.append(tog, el('span', { class: 'pct', text: fmtPct(share(node.v, total)) }),
      el('span', { class: 'name', text: F.frames[node.f].name }), el('span', { class: 'dso', text: F.frames[node.f].dso }));
    let sub = null;
    const expand = (o) => {
      if (o && !sub) { sub = el('div'); for (const k of sorted) sub.append(treeList(k, total, open > 1 ? open - 1 : 0, false)); li.append(sub); }
      if (sub) sub.hidden = !o;
      tog.textContent = sorted.length ? (o ? '▾' : '▸') : ' ';
    };
    tog.addEventListener('click', () => expand(!sub || sub.hidden));
    if (open) expand(true);
    ul.append(li);
    return ul;
  }
  render.trees = function () {
    const v = clear(document.getElementById('v-trees'));
    if (noSamples(v)) return;
    const e = state.ev;
    const tops = topFrames(e);
    if (state.tree === undefined && tops.length) state.tree = tops[0][0];
    const pick = el('select', { id: 'tree-fn' });
    for (const [f, val] of tops.slice(0, 300)) pick.append(el('option', { value: String(f), text: frameLabel(f) + ' — ' + fmtPct(share(val, F.value[e][0])) }));
    if (state.tree !== undefined && !tops.slice(0, 300).some(([f]) => f === state.tree)) pick.prepend(el('option', { value: String(state.tree), text: frameLabel(state.tree) }));
    pick.value = String(state.tree);
    pick.addEventListener('change', () => { state.tree = Number(pick.value); render.trees(); });
    v.append(el('div', { class: 'controls' }, eventSelect((x) => { state.ev = x; render.trees(); }), pick));
    if (state.tree === undefined) { v.append(el('p', { class: 'note', text: 'No samples.' })); return; }
    const f = state.tree, total = F.value[e][0];
    const t = frameTotals(f, e);
    v.append(el('h2', { id: 'tree-title', text: frameLabel(f) }),
      el('p', { class: 'note', text: 'total ' + fmtPct(share(t.total, total)) + ', self ' + fmtPct(share(t.self, total)) + ' of ' + E[e].name + ' (shares of the event\'s total, from the call tree)' }));
    const { callers, callees } = callTrees(f, e);
    v.append(el('div', { class: 'cols' },
      el('div', { id: 'callers' }, el('h3', { text: 'Callers (who calls it)' }), treeList(callers, total, 3, true)),
      el('div', { id: 'callees' }, el('h3', { text: 'Callees (what it calls)' }), treeList(callees, total, 3, true))));
  };

  // ---- call tree (top-down and inverted) -----------------------------------------------
  // A view tree: node ids with a frame, a parent, and per event total and self values.
  // Top-down is the flame tree itself; inverted starts at each function's self time and
  // goes out to its callers (each node's total: the self time of the stacks ending there).
  function topDownTree() {
    const self = F.value.map((v) => { const s = v.slice(); for (let i = 1; i < N; i++) s[F.parent[i]] -= v[i]; return s; });
    return { frame: (n) => F.frame[n], kids: (n) => kids[n], total: (e, n) => F.value[e][n], self: (e, n) => self[e][n], root: 0 };
  }
  function invertedTree() {
    const frame = [-1], parent = [-1], ikids = [[]], total = E.map(() => [0]), self = E.map(() => [0]);
    const child = new Map();
    const nodeSelf = F.value.map((v) => { const s = v.slice(); for (let i = 1; i < N; i++) s[F.parent[i]] -= v[i]; return s; });
    for (let i = 1; i < N; i++) {
      if (!E.some((ev, e) => nodeSelf[e][i])) continue;
      let cur = 0, first = true;
      for (let p = i; p > 0; p = F.parent[p]) {
        const key = cur * (F.frames.length + 1) + F.frame[p];
        let c = child.get(key);
        if (c === undefined) {
          c = frame.length; frame.push(F.frame[p]); parent.push(cur); ikids.push([]); ikids[cur].push(c);
          E.forEach((ev, e) => { total[e].push(0); self[e].push(0); });
          child.set(key, c);
        }
        E.forEach((ev, e) => { total[e][c] += nodeSelf[e][i]; if (first) self[e][c] += nodeSelf[e][i]; });
        cur = c; first = false;
      }
    }
    E.forEach((ev, e) => { total[e][0] = F.value[e][0]; });
    return { frame: (n) => frame[n], kids: (n) => ikids[n], total: (e, n) => total[e][n], self: (e, n) => self[e][n], root: 0 };
  }
  render.calltree = function () {
    const v = clear(document.getElementById('v-calltree'));
    if (noSamples(v)) return;
    const inv = el('input', { type: 'checkbox', id: 'calltree-inverted' });
    inv.checked = !!state.inverted;
    inv.addEventListener('change', () => { state.inverted = inv.checked; render.calltree(); });
    v.append(el('div', { class: 'controls' }, el('label', {}, inv, ' inverted (from the sampled functions out to their callers)'),
      el('span', { class: 'note', text: state.inverted ? 'Inverted: a top row\'s total is the function\'s self time (culprit report --no-children); below it, the callers that led there.' : 'Top-down: from each command down to the functions it calls; total includes callees, self does not.' })));
    const actions = el('div', { id: 'calltree-actions', class: 'controls' }, el('span', { class: 'note', text: 'Click a row to open it and to transform the tree from its function.' }));
    if (SEL) actions.append(...transformButtons(-1, null));
    v.append(actions);
    const T = state.inverted ? invertedTree() : topDownTree();
    const grand = E.map((ev, e) => F.value[e][0]);
    const head = el('tr');
    E.forEach((ev) => head.append(el('th', { class: 'num', text: ev.name + ' total' }), el('th', { class: 'num', text: 'self' })));
    head.append(el('th', { text: 'Function' }));
    const body = el('tbody');
    const order = (n) => T.kids(n).filter((c) => E.some((ev, e) => T.total(e, c))).sort((a, b) => T.total(state.ev, b) - T.total(state.ev, a));
    function row(n, depth) {
      const tr = el('tr', { class: 'pick', 'data-node': String(n), 'data-depth': String(depth) });
      E.forEach((ev, e) => {
        tr.append(barCell(share(T.total(e, n), grand[e]), fmtPct(share(T.total(e, n), grand[e]))),
          el('td', { class: 'num', text: fmtPct(share(T.self(e, n), grand[e])) }));
      });
      const f = T.frame(n);
      const has = order(n).length > 0;
      const name = el('td', { class: 'fn' }, el('span', { class: 'tog', text: has ? '▸' : ' ' }), f < 0 ? 'all' : frameLabel(f));
      name.style.paddingLeft = (depth * 1.1 + 0.3) + 'em';
      tr.append(name);
      tr.addEventListener('click', () => {
        toggle(tr, n, depth);
        for (const x of body.querySelectorAll('tr.sel')) x.classList.remove('sel');
        tr.classList.add('sel');
        clear(actions).append(el('span', { class: 'note', text: (f < 0 ? 'all' : frameLabel(f)) + ': ' }), ...transformButtons(f, state.inverted ? null : pathOf(n)));
      });
      return tr;
    }
    function toggle(tr, n, depth) {
      const open = tr.dataset.open === '1';
      if (open) {
        let next = tr.nextSibling;
        while (next && Number(next.dataset.depth) > depth) { const x = next.nextSibling; next.remove(); next = x; }
        tr.dataset.open = '';
        tr.querySelector('.tog').textContent = order(n).length ? '▸' : ' ';
        return;
      }
      let after = tr;
      for (const c of order(n)) { const r = row(c, depth + 1); after.after(r); after = r; }
      tr.dataset.open = '1';
      tr.querySelector('.tog').textContent = '▾';
    }
    for (const c of order(T.root)) body.append(row(c, 0));
    // Open the heaviest path a few levels down.
    let tr = body.firstChild;
    for (let d = 0; d < 6 && tr; d++) {
      const n = Number(tr.dataset.node);
      if (!order(n).length) break;
      toggle(tr, n, d);
      tr = tr.nextSibling;
    }
    v.append(el('div', { class: 'scroll' }, el('table', { id: 'calltree-table' }, el('thead', {}, head), body)));
    v.append(el('p', { class: 'note', text: 'Shares of each event\'s total' + (viewRange() ? ' in the selected time range' : '') + (transforms.length ? ', after the transforms above' : '') + '; click a row to open or close it.' }));
  };

  // ---- annotate ------------------------------------------------------------------------
  render.annotate = function () {
    const v = clear(document.getElementById('v-annotate'));
    const A = D.annotations;
    const pick = el('select', { id: 'ann-fn' });
    pick.append(el('option', { value: '-1', text: '(choose a function)' }));
    A.forEach((a, i) => pick.append(el('option', { value: String(i), text: a.symbol + ' (' + a.dso + ')' })));
    pick.value = String(state.ann);
    pick.addEventListener('change', () => { state.ann = Number(pick.value); state.missing = null; render.annotate(); });
    const controls = el('div', { class: 'controls' }, pick, el('span', { class: 'note', text: D.annotate_note }));
    v.append(controls);
    if (state.ann < 0) {
      if (state.missing) v.append(el('p', { id: 'ann-missing', class: 'note', text: 'No annotation of ' + state.missing.name + ': only the hottest functions with a symbol are annotated.' }));
      return;
    }
    const a = A[state.ann];
    v.append(el('h2', { id: 'ann-title', text: a.symbol }),
      el('p', { class: 'note', text: a.dso_path + ', ' + a.start + '–' + a.end + '; ' + a.events.map((x) => x.name + ': ' + fmtInt(x.samples) + ' samples' + (x.precise ? ' (precise)' : '')).join(', ') + '. Percentages are of the function\'s samples of each event; the row colour\'s intensity is proportional to the share of the first event (the hottest row is the darkest).' }));
    if (!a.disassembled) v.append(el('p', { class: 'warn', text: 'The code could not be read: only the sampled addresses are listed.' }));
    if (a.insns.some((r) => r.d && r.d.length)) v.append(el('p', { class: 'est', text: 'Columns marked ~ are de-skid estimates: non-precise samples of memory and branch events moved to their most plausible culprit instruction' + (a.deskid_estimate ? ' (estimates, not measurements).' : '.') }));
    // Total columns when some call in the function has samples below it.
    const incl = a.callchains && a.insns.some((r) => r.i && r.i.length);
    const heads = [];
    a.events.forEach((x) => {
      heads.push(el('th', { class: 'num', text: x.name, title: 'self: samples at this row' }));
      if (incl) heads.push(el('th', { class: 'num', text: 'total', title: 'self and the samples below this row\'s calls' }));
      if (x.deskid) heads.push(el('th', { class: 'num est', text: '~' + x.name, title: 'de-skid estimate' }));
    });
    const cells = (s, inc, d, tr) => {
      a.events.forEach((x, k) => {
        const c = barCell(share(s[k], x.samples), s[k] ? fmtPct(share(s[k], x.samples)) : '');
        c.title = s[k] + ' samples';
        tr.append(c);
        if (incl) { const t = s[k] + (inc && inc[k] ? inc[k] : 0); tr.append(el('td', { class: 'num', text: t ? fmtPct(share(t, x.samples)) : '' })); }
        if (x.deskid) tr.append(el('td', { class: 'num est', text: d && d[k] ? fmtPct(share(d[k], x.samples)) : '' }));
      });
    };
    // Heat: alpha proportional to the row's share of the first event (of the hottest row's).
    const heat = (rows, get) => { let m = 0; for (const r of rows) m = Math.max(m, get(r)); return (r) => (m > 0 ? get(r) / m : 0); };
    const paint = (tr, h) => { if (h > 0) { tr.style.background = 'rgba(230,60,20,' + (0.85 * h).toFixed(3) + ')'; tr.dataset.heat = h.toFixed(4); } };
    const srcOf = (r) => { const l = r.l === null || r.l === undefined ? null : a.lines[r.l]; return l ? l.file.split('/').pop() + ':' + l.line : ''; };
    const haveSource = a.lines.some((l) => l.text !== null);
    const missing = [...new Set(a.lines.filter((l) => l.text === null).map((l) => l.file))];
    let hotSrc = null, hotAsm = null;
    const sourceTable = () => {
      const t = el('table', { class: 'asm', id: 'ann-source' }, el('thead', {}, el('tr', {}, ...heads.map((h) => h.cloneNode(true)), el('th', { text: 'Line' }), el('th', { text: 'Source' }))));
      const body = el('tbody');
      const h = heat(a.lines, (l) => l.samples[0] || 0);
      let best = 0;
      for (const l of a.lines) {
        const tr = el('tr', {});
        cells(l.samples, l.inclusive, null, tr);
        paint(tr, h(l));
        if ((l.samples[0] || 0) > best) { best = l.samples[0]; hotSrc = tr; }
        tr.append(el('td', { class: 'src', text: l.file.split('/').pop() + ':' + l.line }), el('td', { text: l.text === null ? '(source line not available)' : l.text }));
        body.append(tr);
      }
      t.append(body);
      return el('div', { class: 'scroll' }, t);
    };
    const asmTable = () => {
      const t = el('table', { class: 'asm', id: 'ann-asm' }, el('thead', {}, el('tr', {}, ...heads, el('th', { text: 'Address' }), el('th', { text: 'Instruction' }), el('th', { text: 'Source' }))));
      const body = el('tbody');
      const ncol = heads.length + 3;
      const h = heat(a.insns, (r) => r.s[0] || 0);
      let best = 0;
      for (const r of a.insns) {
        if (r.gap) body.append(el('tr', { class: 'gap' }, el('td', { colspan: String(ncol), text: '… instructions far from every sample not shown' })));
        const tr = el('tr', { 'data-addr': r.a });
        cells(r.s, r.i, r.d, tr);
        paint(tr, h(r));
        if ((r.s[0] || 0) > best) { best = r.s[0]; hotAsm = tr; }
        tr.append(el('td', { text: r.a }), el('td', { text: r.t }), el('td', { class: 'src', text: srcOf(r) + (r.n ? ' (inlined ' + r.n + ')' : '') }));
        body.append(tr);
      }
      t.append(body);
      return el('div', { class: 'scroll' }, t);
    };
    if (haveSource) {
      v.append(el('h3', { text: 'Source' }), sourceTable(), el('h3', { text: 'Disassembly' }), asmTable());
      if (missing.length) v.append(el('p', { class: 'note', text: 'Some source files were not found on the machine that wrote the page: ' + missing.join(', ') + '.' }));
    } else {
      // No source text: the disassembly leads; its rows name their file:line.
      v.append(el('p', { id: 'ann-nosource', class: 'warn', text: a.lines.length
        ? 'Source not available: ' + missing.join(', ') + ' ' + (missing.length > 1 ? 'are' : 'is') + ' not on the machine that wrote the page (install the sources, or write the page where they are). The disassembly below gives each instruction\'s file:line.'
        : 'Source not available: ' + a.dso + ' has no line information (no debug info). The disassembly below is all there is.' }),
      el('h3', { text: 'Disassembly' }), asmTable());
    }
    if (hotAsm || hotSrc) {
      controls.append(el('button', { id: 'ann-hottest', text: 'Jump to the hottest line', onclick: () => {
        for (const r of [hotSrc, hotAsm]) if (r) { r.scrollIntoView({ block: 'center' }); r.classList.add('flash'); setTimeout(() => r.classList.remove('flash'), 1200); }
      } }));
    }
    if (a.omitted) v.append(el('p', { class: 'note', text: a.omitted + ' instructions far from every sampled one are not shown.' }));
  };

  // ---- why -----------------------------------------------------------------------------
  // What explains the hot code: precise samples (IBS) and Top-Down, when the file has them;
  // else one line on what would be here and how to record it.
  render.why = function () {
    const v = clear(document.getElementById('v-why'));
    if (!D.ibs && !D.topdown) {
      v.append(el('p', { id: 'why-none', class: 'note', text: 'With precise samples (AMD IBS, Intel PEBS, Arm SPE) or Top-Down events this tab shows, per hot function, why it is slow: load latencies, where its misses were served, the data addresses and symbols it touched, and its Top-Down breakdown. This recording has none: on a machine with a hardware PMU, record with `culprit record --ibs op` (AMD), `culprit record -d -e <memory event>:pp` (Intel PEBS) or `culprit record --topdown`.' }));
      return;
    }
    v.append(el('h2', { text: 'Why the hot functions are slow' }));
    if (D.ibs && D.ibs.op) {
      const I = D.ibs.op;
      v.append(el('h3', { text: 'IBS op samples: loads, misses and latencies per function' }));
      const int = (label, k) => ({ label, num: true, get: (r) => (r[k] == null ? '' : fmtInt(r[k])) });
      v.append(table([int('ops', 'all'), int('loads', 'load'), int('DC miss', 'dc_miss'), { label: 'miss rate', num: true, get: (r) => (r.load ? fmtPct(share(r.dc_miss, r.load)) : '') },
        { label: 'avg miss latency (cycles)', num: true, get: (r) => r.avg_dc_miss_lat.toFixed(1) }, int('mispredicted', 'mispredicted'), { label: 'Function', get: (r) => r.key }],
      I.functions.slice(0, 15), { id: 'why-ibs' }));
      v.append(el('p', { class: 'note' }, 'Every IBS table (per instruction, data symbols, cache lines, pages): ', el('button', { text: 'IBS tab', onclick: () => show('ibs') })));
    }
    if (D.topdown) {
      v.append(el('h3', { text: 'Top-Down level 1 per function' }), el('p', { class: 'note' }, 'Where the pipeline slots went: ', el('button', { text: 'Top-Down tab', onclick: () => show('topdown') })));
    }
    for (const n of [D.ibs ? null : D.ibs_note, D.topdown ? null : D.topdown_note]) if (n) v.append(el('p', { class: 'note', text: n }));
  };

  // ---- Top-Down and IBS ----------------------------------------------------------------
  render.topdown = function () {
    const v = clear(document.getElementById('v-topdown'));
    const T = D.topdown;
    const p = (k) => (r) => fmtPct(r.level1[k] * 100);
    v.append(el('h2', { text: 'Per-function Top-Down level 1 (' + T.model + '), % of slots' }), el('p', { class: 'est', text: T.note }));
    v.append(table([{ label: 'frontend', num: true, get: p('frontend_bound') }, { label: 'bad spec', num: true, get: p('bad_speculation') },
      { label: 'backend', num: true, get: p('backend_bound') }, { label: 'retiring', num: true, get: p('retiring') },
      { label: 'smt', num: true, get: p('smt_contention') }, { label: 'samples', num: true, get: (r) => fmtInt(r.samples) },
      { label: 'min', num: true, get: (r) => fmtInt(r.min_samples) }, { label: 'Function', get: (r) => r.keys.sym || '' }], T.rows, { id: 'topdown-table' }));
  };
  render.ibs = function () {
    const v = clear(document.getElementById('v-ibs'));
    const I = D.ibs;
    for (const n of I.notes) v.append(el('p', { class: 'note', text: n }));
    const site = { label: 'Where', get: (r) => r.key };
    const int = (label, k) => ({ label, num: true, get: (r) => (r[k] === null || r[k] === undefined ? '' : fmtInt(r[k])) });
    const avg = (label, k) => ({ label, num: true, get: (r) => r[k].toFixed(1) });
    if (I.op) {
      const cols = [int('ops', 'all'), int('loads', 'load'), int('stores', 'store'), int('DC miss', 'dc_miss'), avg('avg miss lat', 'avg_dc_miss_lat'),
        int('branches', 'branch'), int('mispredicted', 'mispredicted'), avg('tag→ret', 'avg_tag_to_ret'), site];
      v.append(el('h2', { text: 'IBS op samples: ' + fmtInt(I.op.samples) + (I.op.invalid ? ' (' + I.op.invalid + ' invalid)' : '') }));
      v.append(el('h3', { text: 'Per function' }), table(cols, I.op.functions, { id: 'ibs-op-functions' }));
      v.append(el('h3', { text: 'Per ' + I.sort }), table(cols, I.op.rows, { id: 'ibs-op-rows' }));
    }
    if (I.fetch) {
      const cols = [int('fetches', 'all'), int('completed', 'completed'), int('aborted', 'aborted'), int('IC miss', 'ic_miss'),
        int('ITLB L1M L2H', 'itlb_l1m_l2h'), int('ITLB L1M L2M', 'itlb_l1m_l2m'), site];
      v.append(el('h2', { text: 'IBS fetch samples: ' + fmtInt(I.fetch.samples) + ' (' + fmtInt(I.fetch.killed) + ' killed)' }));
      v.append(el('h3', { text: 'Per function' }), table(cols, I.fetch.functions, { id: 'ibs-fetch-functions' }));
      v.append(el('h3', { text: 'Per ' + I.sort }), table(cols, I.fetch.rows, { id: 'ibs-fetch-rows' }));
    }
    if (I.data) {
      v.append(el('h2', { text: 'Data-centric: ' + fmtInt(I.data.accesses) + ' accesses, ' + fmtInt(I.data.dc_miss) + ' DC misses' }));
      const cols = [{ label: 'Key', get: (r) => r.key }, int('accesses', 'accesses'), int('DC miss', 'dc_miss'), int('miss latency', 'miss_lat_total'), int('local', 'local'), int('remote', 'remote')];
      for (const [k, label] of [['symbols', 'Data symbols'], ['lines', 'Cache lines'], ['pages', 'Pages'], ['addresses', 'Addresses']]) {
        v.append(el('h3', { text: label + ' by DC misses' }), table(cols, I.data[k].by_misses, { id: 'ibs-data-' + k }));
      }
    }
  };

  // ---- diff ----------------------------------------------------------------------------
  let diffEv = 0;
  render.diff = function () {
    const v = clear(document.getElementById('v-diff'));
    const Df = D.diff;
    if (!Df.events.length) { v.append(el('p', { class: 'note', text: 'The two files have no event in common.' })); return; }
    const s = el('select', { id: 'diff-ev' });
    Df.events.forEach((x, i) => s.append(el('option', { value: String(i), text: x.name })));
    s.value = String(diffEv);
    s.addEventListener('change', () => { diffEv = Number(s.value); render.diff(); });
    const x = Df.events[diffEv];
    v.append(el('div', { class: 'controls' }, s, el('span', { class: 'note', text: 'Baseline ' + Df.baseline.file + ' (' + fmtInt(x.baseline.samples) + ' samples) against ' + Df.other.file + ' (' + fmtInt(x.other.samples) + ' samples), as culprit diff: Delta = share in the other file minus share in the baseline (points); Ratio = other period / baseline period; by |Delta|.' })));
    const pct = (side) => (r) => (r[side] ? fmtPct(r[side].percent) : '');
    v.append(el('div', { class: 'scroll' }, table([{ label: 'Baseline', num: true, get: pct('baseline') },
      { label: 'Delta', num: true, get: (r) => (r.delta >= 0 ? '+' : '') + r.delta.toFixed(2) + '%' },
      { label: 'Ratio', num: true, get: (r) => (r.ratio === null ? '' : r.ratio.toFixed(4)) },
      { label: 'Other', num: true, get: pct('other') }, { label: '', get: (r) => (r.status === 'new' ? '[+]' : r.status === 'vanished' ? '[-]' : '') },
      { label: 'DSO', get: (r) => (r.keys.dso === undefined ? '' : String(r.keys.dso)) },
      { label: 'Symbol', get: (r) => (r.sym_level ? r.sym_level + ' ' : '') + (r.keys.sym === undefined ? '' : String(r.keys.sym)) }], x.rows, { id: 'diff-table' })));
    if (D.diff_hidden[diffEv]) v.append(el('p', { class: 'note', text: D.diff_hidden[diffEv] + ' rows with smaller changes are not listed.' }));
    if (Df.only_in_baseline.length) v.append(el('p', { class: 'note', text: 'Only in the baseline (not compared): ' + Df.only_in_baseline.join(', ') }));
    if (Df.only_in_other.length) v.append(el('p', { class: 'note', text: 'Only in the other file (not compared): ' + Df.only_in_other.join(', ') }));
  };

  show('summary');
  // Milliseconds from the script's start (data parsed, first view drawn): bench/html.sh.
  document.body.dataset.renderMs = String(Math.round(performance.now() - T0));
  document.body.dataset.ready = '1';
})();
