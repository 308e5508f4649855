// culprit's HTML report: draws the views from the JSON data block (the page model,
// crates/export/src/html/model.rs). Every text from the file goes into the page through
// textContent, text nodes, attribute values or canvas fillText: never parsed as markup.
'use strict';
(function () {
  const T0 = performance.now();
  const D = JSON.parse(document.getElementById('culprit-data').textContent);
  const E = D.events;
  const F = D.flame;
  const N = F.parent.length;
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
  const views = [['summary', 'Summary'], ['functions', 'Hot functions'], ['flame', 'Flame graph'],
    ['trees', 'Callers / callees'], ['annotate', 'Annotate']];
  if (D.topdown) views.push(['topdown', 'Top-Down']);
  if (D.ibs) views.push(['ibs', 'IBS']);
  if (D.diff) views.push(['diff', 'Diff']);
  const tabs = document.getElementById('tabs');
  const shown = {};
  function show(name) {
    for (const s of document.querySelectorAll('section.view')) s.hidden = s.id !== 'v-' + name;
    for (const b of tabs.children) b.classList.toggle('active', b.dataset.view === name);
    if (!shown[name] || name === 'flame') { shown[name] = true; render[name](); }
  }
  for (const [name, label] of views) tabs.append(el('button', { 'data-view': name, id: 'tab-' + name, text: label, onclick: () => show(name) }));
  document.getElementById('title').textContent = D.summary.input + (D.diff ? ' against ' + D.diff.other.file : '');

  // ---- the call tree -------------------------------------------------------------------
  const kids = Array.from({ length: N }, () => []);
  const depth = new Int32Array(N);
  for (let i = 1; i < N; i++) { kids[F.parent[i]].push(i); depth[i] = depth[F.parent[i]] + 1; }
  const fname = (i) => (F.frame[i] < 0 ? 'all' : F.frames[F.frame[i]].name);
  for (const k of kids) k.sort((a, b) => (fname(a) < fname(b) ? -1 : fname(a) > fname(b) ? 1 : 0));
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

  // ---- summary -------------------------------------------------------------------------
  const render = {};
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
    v.append(el('h2', { text: 'Recording' }), t, el('h3', { text: 'Events' }));
    v.append(table([{ label: 'Event', get: (e) => e.name }, { label: 'Samples', num: true, get: (e) => fmtInt(e.samples) },
      { label: 'Total', num: true, get: (e) => fmtValue(e.period, E.indexOf(e)) }], E, { id: 'events-table' }));
    if (s.stopped) v.append(el('p', { class: 'warn', text: 'Reading stopped at byte ' + s.stopped.offset + ': ' + s.stopped.reason + '; the report shows what was read before.' }));
    for (const w of s.warnings) v.append(el('p', { class: 'warn', text: 'warning: ' + w }));
    v.append(el('h3', { text: 'Notes' }));
    const notes = [D.annotate_note, D.topdown_note, D.ibs_note,
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
      el('span', { class: 'note', text: 'Self share of each event\'s total (culprit report --sort sym --no-children). Click a header to sort, a function to annotate it.' })));
    const head = el('tr');
    E.forEach((ev, e) => {
      const th = el('th', { class: 'num sort' + (e === fnSort ? ' on' : ''), text: ev.name, title: 'sort by ' + ev.name });
      th.addEventListener('click', () => { fnSort = e; render.functions(); });
      head.append(th);
    });
    head.append(el('th', { text: 'Function' }), el('th', { text: 'DSO' }));
    const rows = D.functions.rows.map((r, i) => i);
    rows.sort((a, b) => D.functions.rows[b].period[fnSort] - D.functions.rows[a].period[fnSort] || a - b);
    const body = el('tbody');
    for (const i of rows) {
      const r = D.functions.rows[i];
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
        const r = D.functions.rows[Number(tr.dataset.row)];
        tr.hidden = q !== '' && !(r.name.toLowerCase().includes(q) || r.dso.toLowerCase().includes(q));
      }
    });
    v.append(el('div', { class: 'scroll' }, t));
    if (D.functions.hidden) v.append(el('p', { class: 'note', text: D.functions.hidden + ' more functions (below the top rows of every event) are not listed.' }));
  };
  function pickFunction(i) {
    const r = D.functions.rows[i];
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
  let rects = [];
  function hue(s) { let h = 2166136261; for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); } return (h >>> 0) / 4294967296; }
  function color(i) {
    if (F.frame[i] < 0) return 'rgb(200,200,210)';
    const f = F.frames[F.frame[i]];
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
      v.append(el('p', { class: 'note', text: 'Click a frame to zoom, search to highlight; widths are each event\'s period. Colours: kernel orange, the program red-yellow, each library its own hue, JIT green.' }));
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
    const row = D.functions.rows.findIndex((r) => r.frame === f);
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
    let matched = 0;
    for (const [n, x, w] of laid) {
      const y = state.icicle ? depth[n] * ROW : H - (depth[n] + 1) * ROW;
      const m = matches(n);
      if (m && !hasAncestorMatch(n)) matched += v[n];
      ctx.fillStyle = m ? 'rgb(230,0,230)' : color(n);
      ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
      rects.push([x, y, w, n]);
      if (w > 30) {
        const label = F.frame[n] < 0 ? 'all' : F.frames[F.frame[n]].name;
        const fit = Math.floor((w - 6) / 6.2);
        ctx.fillStyle = '#000';
        ctx.fillText(label.length > fit ? label.slice(0, Math.max(fit - 2, 0)) + '..' : label, x + 3, y + ROW / 2);
      }
    }
    // Deep stacks make a tall canvas: show the roots (the bottom of a flame graph).
    canvas.parentElement.scrollTop = state.icicle ? 0 : canvas.parentElement.scrollHeight;
    const status = document.getElementById('flame-status');
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

  // ---- annotate ------------------------------------------------------------------------
  render.annotate = function () {
    const v = clear(document.getElementById('v-annotate'));
    const A = D.annotations;
    const pick = el('select', { id: 'ann-fn' });
    pick.append(el('option', { value: '-1', text: '(choose a function)' }));
    A.forEach((a, i) => pick.append(el('option', { value: String(i), text: a.symbol + ' (' + a.dso + ')' })));
    pick.value = String(state.ann);
    pick.addEventListener('change', () => { state.ann = Number(pick.value); state.missing = null; render.annotate(); });
    v.append(el('div', { class: 'controls' }, pick, el('span', { class: 'note', text: D.annotate_note })));
    if (state.ann < 0) {
      if (state.missing) v.append(el('p', { id: 'ann-missing', class: 'note', text: 'No annotation of ' + state.missing.name + ': only the hottest functions with a symbol are annotated.' }));
      return;
    }
    const a = A[state.ann];
    v.append(el('h2', { id: 'ann-title', text: a.symbol }),
      el('p', { class: 'note', text: a.dso_path + ', ' + a.start + '–' + a.end + '; ' + a.events.map((x) => x.name + ': ' + fmtInt(x.samples) + ' samples' + (x.precise ? ' (precise)' : '')).join(', ') + '. Percentages are of the function\'s samples of each event.' }));
    if (!a.disassembled) v.append(el('p', { class: 'warn', text: 'The code could not be read: only the sampled addresses are listed.' }));
    if (a.insns.some((r) => r.d && r.d.length)) v.append(el('p', { class: 'est', text: 'Columns marked ~ are de-skid estimates: non-precise samples of memory and branch events moved to their most plausible culprit instruction' + (a.deskid_estimate ? ' (estimates, not measurements).' : '.') }));
    const heads = [];
    a.events.forEach((x, k) => {
      heads.push(el('th', { class: 'num', text: x.name }));
      if (x.deskid) heads.push(el('th', { class: 'num est', text: '~' + x.name, title: 'de-skid estimate' }));
    });
    const pctCells = (s, d, k, tr) => {
      const x = a.events[k];
      const c = barCell(share(s[k], x.samples), s[k] ? fmtPct(share(s[k], x.samples)) : '');
      c.title = s[k] + ' samples';
      tr.append(c);
      if (x.deskid) tr.append(el('td', { class: 'num est', text: d && d[k] ? fmtPct(share(d[k], x.samples)) : '' }));
    };
    if (a.lines.length) {
      v.append(el('h3', { text: 'Source' }));
      const t = el('table', { class: 'asm', id: 'ann-source' }, el('thead', {}, el('tr', {}, ...heads.map((h) => h.cloneNode(true)), el('th', { text: 'Line' }), el('th', { text: 'Source' }))));
      const body = el('tbody');
      for (const l of a.lines) {
        const tr = el('tr', { class: l.samples.some((x) => x) ? 'hot' : '' });
        a.events.forEach((x, k) => pctCells(l.samples, null, k, tr));
        tr.append(el('td', { class: 'src', text: l.file.split('/').pop() + ':' + l.line }), el('td', { text: l.text === null ? '' : l.text }));
        body.append(tr);
      }
      t.append(body);
      v.append(el('div', { class: 'scroll' }, t));
    }
    v.append(el('h3', { text: 'Disassembly' }));
    const t = el('table', { class: 'asm', id: 'ann-asm' }, el('thead', {}, el('tr', {}, ...heads, el('th', { text: 'Address' }), el('th', { text: 'Instruction' }), el('th', { text: 'Source' }))));
    const body = el('tbody');
    const ncol = heads.length + 3;
    for (const r of a.insns) {
      if (r.gap) body.append(el('tr', { class: 'gap' }, el('td', { colspan: String(ncol), text: '… instructions far from every sample not shown' })));
      const tr = el('tr', { class: r.s.some((x) => x) ? 'hot' : '', 'data-addr': r.a });
      a.events.forEach((x, k) => pctCells(r.s, r.d, k, tr));
      const line = r.l === null || r.l === undefined ? null : a.lines[r.l];
      tr.append(el('td', { text: r.a }), el('td', { text: r.t }), el('td', { class: 'src', text: line ? line.file.split('/').pop() + ':' + line.line : '' }));
      body.append(tr);
    }
    t.append(body);
    v.append(el('div', { class: 'scroll' }, t));
    if (a.omitted) v.append(el('p', { class: 'note', text: a.omitted + ' instructions far from every sampled one are not shown.' }));
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
