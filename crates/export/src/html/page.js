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
  // Children (by name) and depth of each node of the current tree: built again only when
  // a transform gives another tree (`indexed`: the tree they are of), not when a time
  // selection changes its values.
  let kids = [], depth = new Int32Array(0), indexed = null;
  // Each frame's rank by name (equal names, equal ranks): children sort by number.
  let nameRank = new Int32Array(0);
  function rankFrames() {
    const name = (f) => F.frames[f].name;
    const order = F.frames.map((_, f) => f).sort((a, b) => (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0));
    nameRank = new Int32Array(F.frames.length);
    order.forEach((f, k) => { nameRank[f] = k > 0 && name(order[k - 1]) === name(f) ? nameRank[order[k - 1]] : k; });
  }
  function rebuildIndex() {
    if (indexed === F.parent) return;
    if (nameRank.length !== F.frames.length) rankFrames();
    N = F.parent.length;
    kids = Array.from({ length: N }, () => []);
    depth = new Int32Array(N);
    for (let i = 1; i < N; i++) { kids[F.parent[i]].push(i); depth[i] = depth[F.parent[i]] + 1; }
    const rank = (i) => nameRank[F.frame[i]];
    for (const k of kids) if (k.length > 1) k.sort((a, b) => rank(a) - rank(b));
    indexed = F.parent;
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
  // The model writes periods in units of each event's TL.unit and leaves samples out where
  // every period is one unit (TL.fixed): multiply back, and give each cell its bucket.
  if (TL) {
    const samplesOf = (s, units, e) => (TL.fixed[e] ? units.slice() : s);
    const times = (v, e) => v.map((x) => x * TL.unit[e]);
    const decode = (o) => { o.samples = o.period.map((p, e) => samplesOf(o.samples[e], p, e)); o.period = o.period.map(times); };
    decode(TL);
    TL.threads.forEach(decode);
    const cells = (c, e) => {
      c.b = new Int32Array(c.k.length);
      let k = 0;
      c.n.forEach((n, b) => { c.b.fill(b, k, k + n); k += n; });
      c.s = samplesOf(c.s, c.p, e);
      c.p = times(c.p, e);
    };
    TL.functions.forEach(cells);
    TL.nodes.forEach(cells);
  }
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
  // The cell buckets of timeline buckets [a, b) (a selection is snapped to whole ones).
  const cellRange = (a, b) => [Math.floor(a / TL.cell_factor), Math.ceil(b / TL.cell_factor)];
  // The range [a, b) widened to whole cell buckets.
  function snap(a, b) {
    const f = TL.cell_factor;
    return { a: Math.floor(a / f) * f, b: Math.min(TL.buckets, Math.ceil(b / f) * f) };
  }
  // Each node's value in buckets [a, b), on the page's own tree (before transforms).
  function selectedValues(a, b) {
    const n = ORIG.parent.length;
    return TL.nodes.map((c) => {
      const v = new Array(n).fill(0);
      const [ca, cb] = cellRange(a, b);
      for (let k = firstCell(c, ca); k < c.b.length && c.b[k] < cb; k++) v[c.k[k]] += c.p[k];
      for (let i = n - 1; i > 0; i--) v[ORIG.parent[i]] += v[i];
      return v;
    });
  }
  // The hot functions table of the selection: each function's self period in it.
  function selectedRows(a, b) {
    const byFrame = new Map();
    const annotationOf = new Map(D.functions.rows.filter((r) => r.annotation != null).map((r) => [r.dso + '\u0000' + r.name, r.annotation]));
    const totals = E.map((ev, e) => TL.period[e].slice(a, b).reduce((x, y) => x + y, 0));
    const [ca, cb] = cellRange(a, b);
    TL.functions.forEach((c, e) => {
      for (let k = firstCell(c, ca); k < c.b.length && c.b[k] < cb; k++) {
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
        const key = cur * 4194304 + f; // a number, not a string: no allocation per step (frames < 2^22)
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
      (TL.offcpu != null ? '; grey under a track: off-CPU intervals (offcpu-time): click one for its blocked stack' + (TL.threads.some((t) => t.offcpu_waker.length) ? ' and its waker' : ' (and its waker, with culprit record --off-cpu=wakers)') : '; off-CPU intervals appear with culprit record --off-cpu') +
      (TL.states.length ? '. Band at the top of a track: its state per bucket (' + TL.state_names.map((n, k) => n + ' ' + STATE_COLORS[k]).join(', ') + ', from sched_switch); click a blocked part of it for its interval and waker; in a process\'s label row: its parallelism (threads running) per bucket' : '') +
      '. Drag to select a time range: every view then shows only its samples' +
      (TL.cell_factor > 1 ? ' (a selection snaps to steps of ' + fmtSpan(TL.width * TL.cell_factor) + ', the resolution the page keeps of each function and call path).' : '.') }));
    v.append(el('div', { id: 'state-detail', class: 'note' }));
    drawTimeline();
    canvas.addEventListener('mousedown', (ev) => { drag = { from: bucketAt(canvas, ev) }; drag.to = drag.from; drawTimeline(); });
    canvas.addEventListener('mousemove', (ev) => { if (drag) { drag.to = bucketAt(canvas, ev); drawTimeline(); } });
    canvas.addEventListener('mouseup', (ev) => {
      if (!drag) return;
      const a = Math.min(drag.from, bucketAt(canvas, ev)), b = Math.max(drag.from, bucketAt(canvas, ev)) + 1;
      const click = drag.from === a && b === a + 1;
      drag = null;
      if (click && (showBlockedAt(canvas, ev) || showOffcpuAt(canvas, ev))) { drawTimeline(); return; }
      select(snap(a, b));
    });
  };
  function bucketAt(canvas, ev) {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left - LABEL, w = r.width - LABEL;
    return Math.max(0, Math.min(TL.buckets - 1, Math.floor((x / w) * TL.buckets)));
  }
  // Colours of the thread states (TL.state_names' order) and the band they are drawn in.
  const STATE_COLORS = ['green', 'yellow', 'light blue', 'red', 'purple'];
  const STATE_FILL = ['#3c9a4e', '#e0b422', '#a9c8e8', '#d0453c', '#8e5cc2'];
  const BAND = 6;
  let trackRows = [];
  // Appends to `d` a call-tree node's frames, leaf first, as the list `id` under `title`
  // (nothing for node 0: not recorded).
  function appendStack(d, id, title, node) {
    if (!(node > 0)) return;
    const list = el('ol', { id });
    for (const f of pathOf(node).reverse()) list.append(el('li', { text: frameLabel(f) }));
    d.append(el('div', { text: title }), list);
  }
  // A click on a track's state band: the blocked interval under it (the longest within a
  // pixel) is shown below the timeline. False when there is none.
  function showBlockedAt(canvas, ev) {
    const r = canvas.getBoundingClientRect();
    const y = ev.clientY - r.top, x = ev.clientX - r.left - LABEL, w = r.width - LABEL;
    const i = trackRows.findIndex((ty) => y >= ty && y < ty + BAND + 2);
    const st = TL.states[i];
    if (!st || x < 0) return false;
    const span = TL.width * TL.buckets, t = TL.start + (x / w) * span, px = span / w;
    let k = -1;
    st.blocked.forEach((iv, j) => { if (iv[0] <= t + px && iv[1] >= t - px && (k < 0 || iv[1] - iv[0] > st.blocked[k][1] - st.blocked[k][0])) k = j; });
    if (k < 0) return false;
    const hit = st.blocked[k], waker = st.waker[k];
    const th = TL.threads[i], d = clear(document.getElementById('state-detail'));
    d.dataset.tid = th.tid; d.dataset.state = TL.state_names[hit[2]]; d.dataset.start = hit[0]; d.dataset.end = hit[1];
    d.append(el('b', { text: th.comm + ' ' + th.tid + ': ' + TL.state_names[hit[2]] }),
      ' from ' + fmtSpan(hit[0] - TL.start) + ' (' + (hit[0] / 1e9).toFixed(6) + ' s) for ' + fmtSpan(hit[1] - hit[0]) + (waker ? '; woken by ' : ''));
    if (waker) d.append(el('span', { id: 'state-waker', text: waker }));
    d.dataset.waker = waker;
    appendStack(d, 'blocked-stack', 'Blocked stack (leaf first):', st.stack[k]);
    appendStack(d, 'waker-stack', 'Waker\'s stack at the wake-up (leaf first):', st.waker_stack[k]);
    return true;
  }
  // A click on a track's off-CPU band (its bottom pixels): the off-CPU interval under it and
  // its blocked stack, leaf first. False when there is none.
  function showOffcpuAt(canvas, ev) {
    const r = canvas.getBoundingClientRect();
    const y = ev.clientY - r.top, x = ev.clientX - r.left - LABEL, w = r.width - LABEL;
    const i = trackRows.findIndex((ty) => y >= ty + TRACK - 6 && y < ty + TRACK);
    const t = TL.threads[i];
    if (!t || x < 0) return false;
    const span = TL.width * TL.buckets, at = TL.start + (x / w) * span, px = span / w;
    let k = -1;
    t.offcpu.forEach((iv, j) => { if (iv[0] <= at + px && iv[1] >= at - px && (k < 0 || iv[1] - iv[0] > t.offcpu[k][1] - t.offcpu[k][0])) k = j; });
    if (k < 0) return false;
    const hit = t.offcpu[k], waker = t.offcpu_waker[k] || '';
    const d = clear(document.getElementById('state-detail'));
    d.dataset.tid = t.tid; d.dataset.state = 'off-CPU'; d.dataset.start = hit[0]; d.dataset.end = hit[1]; d.dataset.waker = waker;
    d.append(el('b', { text: t.comm + ' ' + t.tid + ': off-CPU' }), ' from ' + fmtSpan(hit[0] - TL.start) + ' (' + (hit[0] / 1e9).toFixed(6) + ' s) for ' + fmtSpan(hit[1] - hit[0]) + (waker ? '; woken by ' : ''));
    if (waker) d.append(el('span', { id: 'state-waker', text: waker }));
    appendStack(d, 'blocked-stack', 'Blocked stack (leaf first):', hit[2]);
    appendStack(d, 'waker-stack', 'Waker\'s stack at the wake-up (leaf first):', t.offcpu_waker_stack[k]);
    return true;
  }
  function drawTimeline() {
    const canvas = document.getElementById('timeline');
    if (!canvas) return;
    const e = state.ev;
    const W = canvas.parentElement.clientWidth || 1200, plot = W - LABEL, bw = plot / TL.buckets;
    let pid = null, H = RULER;
    const rowsAt = [];
    for (const t of TL.threads) { if (t.pid !== pid) { pid = t.pid; H += GROUP; } rowsAt.push(H); H += TRACK; }
    trackRows = rowsAt;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.floor(W * dpr) || canvas.height !== Math.floor(H * dpr)) {
      canvas.width = Math.floor(W * dpr); canvas.height = Math.floor(H * dpr); canvas.style.height = H + 'px';
    }
    // The tracks are drawn once per event and width into an off-screen canvas: a drag or a
    // selection only copies it and draws the selection over it.
    const key = e + ':' + W + ':' + dpr;
    if (!trackCache || trackCache.key !== key) {
      const off = document.createElement('canvas');
      off.width = canvas.width; off.height = canvas.height;
      drawTracks(off.getContext('2d'), e, W, H, dpr, rowsAt);
      trackCache = { key, canvas: off };
    }
    const ctx = canvas.getContext('2d');
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(trackCache.canvas, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const sel = drag ? snap(Math.min(drag.from, drag.to), Math.max(drag.from, drag.to) + 1) : viewRange();
    if (sel) { ctx.fillStyle = 'rgba(255,196,0,0.25)'; ctx.fillRect(LABEL + sel.a * bw, RULER, (sel.b - sel.a) * bw, H - RULER); }
    drawRange();
  }
  let trackCache = null;
  // The ruler, each track's bars and off-CPU intervals of event `e`.
  function drawTracks(ctx, e, W, H, dpr, rowsAt) {
    const plot = W - LABEL, bw = plot / TL.buckets;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11.5px system-ui, sans-serif'; ctx.textBaseline = 'middle'; ctx.fillStyle = '#5b6570';
    const span = TL.width * TL.buckets;
    for (let k = 0; k <= 4; k++) ctx.fillText(fmtSpan((span * k) / 4), LABEL + (plot * k) / 4 - (k === 4 ? 60 : 0), RULER / 2);
    const isTime = E[e].unit === 'nanoseconds' && e !== TL.offcpu;
    let max = 1;
    if (!isTime) for (const t of TL.threads) for (const x of t.samples[e]) if (x > max) max = x;
    let pid = null;
    TL.threads.forEach((t, i) => {
      const y = rowsAt[i];
      if (t.pid !== pid) {
        pid = t.pid;
        ctx.fillStyle = '#1d232a';
        ctx.fillText(t.tid < 0 ? t.comm : 'process ' + t.pid + ' (' + t.comm + ')', 4, y - GROUP / 2);
        if (TL.states.length && t.tid >= 0) drawParallelism(ctx, t.pid, y - GROUP, bw);
      }
      ctx.fillStyle = i % 2 ? '#fff' : '#f5f7f9'; ctx.fillRect(0, y, W, TRACK);
      ctx.fillStyle = '#5b6570'; ctx.fillText((t.tid < 0 ? '' : t.comm + ' ' + t.tid), 12, y + TRACK / 2);
      ctx.fillStyle = '#3b6fb6';
      for (let b = 0; b < TL.buckets; b++) {
        const f = isTime ? Math.min(1, t.period[e][b] / TL.width) : t.samples[e][b] / max;
        if (f > 0) { const h = Math.max(1, f * (TRACK - 6)); ctx.fillRect(LABEL + b * bw, y + TRACK - 4 - h, Math.max(bw - 0.3, 0.7), h); }
      }
      const st = TL.states[i];
      if (st) for (let b = 0; b < TL.buckets; b++) {
        let y0 = y + 1;
        for (let k = 0; k < st.share.length; k++) {
          const h = (st.share[k][b] / 1000) * BAND;
          if (h > 0) { ctx.fillStyle = STATE_FILL[k]; ctx.fillRect(LABEL + b * bw, y0, Math.max(bw - 0.3, 0.7), h); y0 += h; }
        }
      }
      ctx.fillStyle = '#9aa3ad';
      for (const [s0, s1] of t.offcpu) {
        const x0 = LABEL + ((s0 - TL.start) / span) * plot, x1 = LABEL + ((s1 - TL.start) / span) * plot;
        ctx.fillRect(Math.max(LABEL, x0), y + TRACK - 3, Math.max(1, x1 - Math.max(LABEL, x0)), 3);
      }
    });
  }
  // Parallelism of process `pid` in its label row at `y`: per bucket, how many of its
  // threads ran on average (the sum of their running shares), as bars scaled to the
  // process's peak.
  function drawParallelism(ctx, pid, y, bw) {
    const par = parallelismOf(pid);
    const peak = Math.max(...par);
    if (!(peak > 0)) return;
    ctx.fillStyle = '#6b5b95';
    par.forEach((p, b) => { if (p > 0) { const h = Math.max(1, (p / peak) * (GROUP - 4)); ctx.fillRect(LABEL + b * bw, y + GROUP - 2 - h, Math.max(bw - 0.3, 0.7), h); } });
  }
  // Per bucket: the average number of threads of process `pid` running (from TL.states).
  function parallelismOf(pid) {
    const par = new Array(TL.buckets).fill(0);
    TL.threads.forEach((t, i) => {
      const st = TL.states[i];
      if (t.pid === pid && t.tid >= 0 && st) for (let b = 0; b < TL.buckets; b++) par[b] += st.share[0][b] / 1000;
    });
    return par;
  }
  // The selection's line above the timeline: its span, samples and report --time window.
  function drawRange() {
    const span = TL.width * TL.buckets;
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
    const more = el('p', { class: 'note', id: 'fn-more' });
    // The first FN_PAGE rows of the rows matching the filter; a button adds the rest.
    const fill = (all) => {
      const q = filter.value.toLowerCase();
      const match = q === '' ? rows : rows.filter((i) => ROWS[i].name.toLowerCase().includes(q) || ROWS[i].dso.toLowerCase().includes(q));
      clear(body); clear(more);
      const list = all ? match : match.slice(0, FN_PAGE);
      for (const i of list) body.append(fnRow(i));
      if (list.length < match.length) {
        more.append((match.length - list.length) + ' more functions ',
          el('button', { id: 'fn-show-all', text: 'Show all ' + match.length, onclick: () => fill(true) }));
      }
    };
    filter.addEventListener('input', () => fill(false));
    fill(false);
    const t = el('table', { id: 'functions-table' }, el('thead', {}, head), body);
    v.append(el('div', { class: 'scroll' }, t, more));
    if (D.functions.hidden && !viewRange()) v.append(el('p', { class: 'note', text: D.functions.hidden + ' more functions (below the top rows of every event) are not listed.' }));
  };
  // Rows of the hot functions table drawn at once (the rest on request).
  const FN_PAGE = 200;
  // One row of the hot functions table: ROWS[i].
  function fnRow(i) {
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
    return tr;
  }
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

