  // page_views.js: the second half of the report's script (page.rs concatenates page.js and
  // this file into one script, inside page.js's function): the flame graph, trees,
  // annotate, Why, Top-Down, IBS and diff views.
  // ---- change against the other file (--diff) -----------------------------------------
  // D.diff_flame is the other file's call tree; a node's change is its share there minus
  // its share here (points), nodes matched by their path of frame names and DSOs.
  const O = D.diff_flame;
  const otherName = D.diff ? D.diff.other.file : '';
  const frameKey = (fr) => fr.name + '\u0002' + fr.dso + '\u0002' + fr.kind;
  let deltaCache = null;
  function otherByPath() {
    if (!O) return null;
    if (deltaCache && deltaCache.parent === F.parent && deltaCache.value === F.value) return deltaCache.other;
    const okey = new Array(O.parent.length).fill('');
    const byKey = new Map();
    for (let i = 1; i < O.parent.length; i++) {
      okey[i] = okey[O.parent[i]] + '\u0001' + frameKey(O.frames[O.frame[i]]);
      byKey.set(okey[i], i);
    }
    const key = new Array(N).fill('');
    const other = E.map(() => new Array(N).fill(0));
    for (let i = 0; i < N; i++) {
      if (i > 0) key[i] = key[F.parent[i]] + '\u0001' + frameKey(F.frames[F.frame[i]]);
      const j = i === 0 ? 0 : byKey.get(key[i]);
      if (j !== undefined) E.forEach((ev, e) => { other[e][i] = O.value[e] ? O.value[e][j] : 0; });
    }
    deltaCache = { parent: F.parent, value: F.value, other };
    return other;
  }
  // The change of node n's share of event e, in points (null without --diff).
  function delta(e, n) {
    const other = otherByPath();
    if (!other) return null;
    return share(other[e][n], other[e][0]) - share(F.value[e][n], F.value[e][0]);
  }
  // The change of a function's total share (each stack once), in points.
  function frameDelta(f, e) {
    if (!O || !O.value[e]) return null;
    const k = frameKey(F.frames[f]);
    let total = 0;
    for (let i = 1; i < O.parent.length; i++) {
      if (frameKey(O.frames[O.frame[i]]) !== k) continue;
      let nested = false;
      for (let p = O.parent[i]; p > 0; p = O.parent[p]) if (O.frame[p] === O.frame[i]) { nested = true; break; }
      if (!nested) total += O.value[e][i];
    }
    return share(total, O.value[e][0]) - share(frameTotals(f, e).total, F.value[e][0]);
  }
  const fmtDelta = (d) => { const r = Math.abs(d) < 0.005 ? 0 : d; return (r >= 0 ? '+' : '') + r.toFixed(2) + '%'; };
  function deltaColor(d, max) {
    const x = Math.min(1, Math.abs(d) / (max || 1));
    return d >= 0 ? `rgb(255,${Math.round(235 - 185 * x)},${Math.round(225 - 185 * x)})` : `rgb(${Math.round(225 - 205 * x)},${Math.round(245 - 95 * x)},${Math.round(240 - 100 * x)})`;
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
      const deltaBox = el('input', { type: 'checkbox', id: 'flame-delta' });
      deltaBox.addEventListener('change', () => { state.byDelta = deltaBox.checked; drawFlame(); });
      const icicle = el('input', { type: 'checkbox', id: 'flame-icicle' });
      icicle.addEventListener('change', () => { state.icicle = icicle.checked; drawFlame(); });
      v.append(el('div', { class: 'controls' }, eventSelect((e) => { state.ev = e; state.zoom = 0; shown.trees = false; drawFlame(); }),
        el('label', {}, icicle, ' icicle'), O ? el('label', {}, deltaBox, ' colour by change in ' + otherName) : null, search,
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
    const d = delta(state.ev, n);
    return label + ' — ' + fmtValue(F.value[state.ev][n], state.ev) + ', ' + fmtPct(share(F.value[state.ev][n], t)) + (d === null ? '' : ', change ' + fmtDelta(d) + ' in ' + otherName);
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
    let maxDelta = 0;
    if (state.byDelta && O) for (const [n] of laid) maxDelta = Math.max(maxDelta, Math.abs(delta(e, n)));
    for (const [n, x, w] of laid) {
      const y = state.icicle ? depth[n] * ROW : H - (depth[n] + 1) * ROW;
      const m = matches(n);
      ctx.fillStyle = m ? SEARCH : state.byDelta && O ? deltaColor(delta(e, n), maxDelta) : color(n);
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
      el('p', { class: 'note', text: 'total ' + fmtPct(share(t.total, total)) + ', self ' + fmtPct(share(t.self, total)) + ' of ' + E[e].name + ' (shares of the event\'s total, from the call tree)' +
        (O ? '; change of its total in ' + otherName + ': ' + fmtDelta(frameDelta(f, e)) : '') }));
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
  // Children shown per opened call-tree row before a "more" row.
  const KIDS_SHOWN = 100;
  render.calltree = function () {
    const v = clear(document.getElementById('v-calltree'));
    if (noSamples(v)) return;
    const inv = el('input', { type: 'checkbox', id: 'calltree-inverted' });
    inv.checked = !!state.inverted;
    inv.addEventListener('change', () => { state.inverted = inv.checked; render.calltree(); });
    v.append(el('div', { class: 'controls' }, el('label', {}, inv, ' inverted (from the sampled functions out to their callers)'),
      el('span', { class: 'note', text: state.inverted ? 'Inverted: a top row\'s total is the function\'s self time (culprit report --no-children); below it, the callers that led there.' : 'Top-down: from each command down to the functions it calls; total includes callees, self does not' + (O ? '; change: the share in ' + otherName + ' minus here (points).' : '.') })));
    const actions = el('div', { id: 'calltree-actions', class: 'controls' }, el('span', { class: 'note', text: 'Click a row to open it and to transform the tree from its function.' }));
    if (SEL) actions.append(...transformButtons(-1, null));
    v.append(actions);
    const T = state.inverted ? invertedTree() : topDownTree();
    const grand = E.map((ev, e) => F.value[e][0]);
    const head = el('tr');
    const withDelta = O && !state.inverted;
    E.forEach((ev) => {
      head.append(el('th', { class: 'num', text: ev.name + ' total' }), el('th', { class: 'num', text: 'self' }));
      if (withDelta) head.append(el('th', { class: 'num', text: 'change', title: 'share of the total in ' + otherName + ' minus here (points)' }));
    });
    head.append(el('th', { text: 'Function' }));
    const body = el('tbody');
    const order = (n) => T.kids(n).filter((c) => E.some((ev, e) => T.total(e, c))).sort((a, b) => T.total(state.ev, b) - T.total(state.ev, a));
    function row(n, depth) {
      const tr = el('tr', { class: 'pick', 'data-node': String(n), 'data-depth': String(depth) });
      E.forEach((ev, e) => {
        tr.append(barCell(share(T.total(e, n), grand[e]), fmtPct(share(T.total(e, n), grand[e]))),
          el('td', { class: 'num', text: fmtPct(share(T.self(e, n), grand[e])) }));
        if (withDelta) { const d = delta(e, n); tr.append(el('td', { class: 'num ' + (d > 0.005 ? 'up' : d < -0.005 ? 'down' : ''), text: fmtDelta(d) })); }
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
      appendKids(tr, n, depth + 1, 0);
      tr.dataset.open = '1';
      tr.querySelector('.tog').textContent = '▾';
    }
    // Rows of node `n`'s children from the `from`-th (heaviest first) after row `after`
    // (none: at the end of the table), at most KIDS_SHOWN, then a row that shows the next
    // ones: a node with thousands of callees (a broken call chain's [unknown]) stays fast.
    function appendKids(after, n, depth, from) {
      const all = order(n), end = Math.min(all.length, from + KIDS_SHOWN);
      const put = (r) => { if (after) after.after(r); else body.append(r); after = r; };
      for (let k = from; k < end; k++) put(row(all[k], depth));
      if (end === all.length) return;
      const more = el('tr', { class: 'pick more', 'data-depth': String(depth) },
        el('td', { colspan: String(head.children.length), text: '… ' + (all.length - end) + ' more (click to show)' }));
      more.addEventListener('click', () => { const prev = more.previousSibling; more.remove(); appendKids(prev, n, depth, end); });
      put(more);
    }
    appendKids(null, T.root, 0, 0);
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
    if (!D.ibs && !D.topdown && !D.why_deskid && !D.why_memory && !D.why_latency) {
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
    if (D.why_memory) {
      // Where the loads were served, per function (report --sort sym,mem).
      const M = D.why_memory;
      const cols = [{ label: 'Function', get: (r) => r.name }, { label: 'Served from', get: (r) => r.level }];
      M.events.forEach((name, i) => {
        cols.push({ label: name + ' samples', num: true, get: (r) => fmtInt(r.samples[i]) });
        cols.push({ label: name + ' weight', num: true, get: (r) => fmtInt(r.weight[i]) });
        cols.push({ label: name + ' weight %', num: true, get: (r) => fmtPct(share(r.weight[i], M.total_weight[i])) });
      });
      v.append(el('h3', { text: 'Miss sources: where each function\'s sampled loads were served' }),
        table(cols, M.rows, { id: 'why-mem' }),
        el('p', { class: 'note', text: 'Weight: the load latency when recorded (else 1 per sample), as perf --mem-mode. Same numbers as `culprit report --sort sym,mem`.' }));
    }
    if (D.why_latency) {
      // Per function, its samples' latencies in power-of-two ranges of cycles (the
      // `latency` of `culprit script`); every row's bars share one range of buckets.
      const L = D.why_latency;
      const last = L.rows.length ? L.rows[0].buckets.length - 1 : 0;
      const range = (b) => (b === 0 ? '0' : b === last ? '≥ ' + fmtInt(2 ** (b - 1)) : fmtInt(2 ** (b - 1)) + '–' + fmtInt(2 ** b - 1));
      let lo = last, hi = 0;
      for (const r of L.rows) r.buckets.forEach((n, b) => { if (n) { lo = Math.min(lo, b); hi = Math.max(hi, b); } });
      const cols = [{ label: 'Function', get: (r) => r.name }, { label: 'Shared object', get: (r) => r.dso },
        { label: 'samples', num: true, get: (r) => fmtInt(r.samples) },
        { label: 'avg latency (cycles)', num: true, get: (r) => (r.total / r.samples).toFixed(1) },
        { label: 'samples per latency range: ' + range(lo) + ' … ' + range(hi) + ' cycles', get: () => '' }];
      const t = table(cols, L.rows, { id: 'why-lat' });
      t.querySelectorAll('tbody tr').forEach((tr, i) => {
        const r = L.rows[i], cell = tr.lastChild, max = Math.max(...r.buckets);
        cell.className = 'lat-hist';
        cell.dataset.buckets = JSON.stringify(r.buckets);
        for (let b = lo; b <= hi; b++) {
          const bar = el('span', { class: 'lat-bar', title: range(b) + ' cycles: ' + fmtInt(r.buckets[b]) + ' samples' });
          bar.style.height = (r.buckets[b] ? 2 + Math.round((16 * r.buckets[b]) / max) : 0) + 'px';
          cell.append(bar);
        }
      });
      v.append(el('h3', { text: 'Latency per function: its samples per range of cycles' }), t,
        el('p', { class: 'note', text: 'From each sample\'s latency (PEBS load latency, Arm SPE total latency, IBS DcMissLat of a missing load) in ranges that double (64–127, 128–255 … cycles); hover a bar for its range and count. Same numbers as the `latency` of `culprit script --format json`.' }));
    }
    if (D.why_deskid) {
      // Raw self samples beside the de-skid estimate (report --sort sym --deskid).
      const W = D.why_deskid;
      const cols = [];
      W.events.forEach((name, i) => {
        cols.push({ label: name, num: true, get: (r) => fmtInt(r.samples[i]) });
        cols.push({ label: '~' + name, num: true, get: (r) => fmtInt(r.deskid[i]) });
      });
      cols.push({ label: 'Function', get: (r) => r.name });
      v.append(el('h3', { text: 'Skid: where the samples landed and where they most likely belong' }),
        table(cols, W.rows, { id: 'why-deskid' }),
        el('p', { class: 'note est', text: '~ columns are estimates: non-precise samples of memory and branch events moved to their plausible culprit instruction (docs/skid.md); the others are as sampled. Same numbers as `culprit report --sort sym --no-children --deskid`.' }));
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
  // From the navigation start (the time origin) to the first view drawn: the first paint.
  document.body.dataset.firstViewMs = String(Math.round(performance.now()));
  document.body.dataset.ready = '1';
})();
