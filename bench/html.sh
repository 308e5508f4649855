#!/usr/bin/env bash
# Benchmark (not a test): `culprit html` on ~1M-sample `-g` recordings: the time and peak RSS
# to write the page, its size, and how long headless Chromium takes to load and draw it
# (navigation to the load event; the page script's own time to parse the data and draw the
# first view; then each view's draw on its tab's click, up to the next frame).
# Goals (issue 19): the page under 5 MB, loaded and drawn in under 2 s.
#
# Two recordings, both `culprit record -g -e cpu-clock -F $FREQ`:
# - shares: bench/export.sh's (two copies of workloads/shares: a small call tree);
# - compile: gcc compiling the workloads in a loop (cc1: thousands of functions, and call
#   chains broken by code without frame pointers: many distinct stacks, the pruning's case).
#
#   bench/html.sh                        # record (once; shares is shared with bench/export.sh)
#   SAMPLES_S=60 FREQ=20000 bench/html.sh
#   EXTRA="a.data b.data" bench/html.sh  # rows for other recordings too
#   ONLY_EXTRA=1 EXTRA=big.data CULPRIT=target/debug/culprit bench/html.sh   # only those
#   MANY=10000000 bench/html.sh          # plus a row of a synthetic recording of ~10 M samples:
#                                        # compile.data's samples repeated later in time
#                                        # (bench/html_many_samples.py), deleted afterwards
#
# Needs: GNU time (/usr/bin/time), chromium and chromedriver (Debian chromium,
# chromium-driver), python3, gcc, a release build of culprit (built here if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/bench-export}
FREQ=${FREQ:-20000}              # cpu-clock sampling frequency per thread
SAMPLES_S=${SAMPLES_S:-50}       # seconds of CPU to record: FREQ * SAMPLES_S samples
RUNS=${RUNS:-3}                  # browser loads per page (the median is printed)
TARGET_DIR=${CARGO_TARGET_DIR:-target}
CULPRIT=${CULPRIT:-$TARGET_DIR/release/culprit}
TIME=/usr/bin/time

[ -x "$TIME" ] || { echo "bench: GNU time missing: apt-get install time" >&2; exit 2; }
command -v chromedriver >/dev/null && command -v chromium >/dev/null ||
  { echo "bench: chromium and chromedriver missing: apt-get install chromium chromium-driver" >&2; exit 2; }
[ -x "$CULPRIT" ] || cargo build --release -p culprit-cli
mkdir -p "$OUT"
OUT=$(realpath "$OUT")

if [ -z "${ONLY_EXTRA:-}" ] && [ ! -s "$OUT/bench.data" ]; then
  make -s -C workloads OUT="$PWD/target/workloads" "$PWD/target/workloads/shares"
  units=$((SAMPLES_S * 126 / 2))   # one unit is ~8 ms of CPU; two copies
  echo "bench: recording 2 x shares $units at $FREQ Hz with -g" >&2
  "$CULPRIT" record -q -g -e cpu-clock -F "$FREQ" -o "$OUT/bench.data" -- \
    sh -c "target/workloads/shares $units & target/workloads/shares $units; wait" > /dev/null
fi
if [ -z "${ONLY_EXTRA:-}" ] && [ ! -s "$OUT/compile.data" ]; then
  # Two compile loops, each until it has used SAMPLES_S/2 seconds of CPU (bash's `times`).
  cat > "$OUT/compile-loop.sh" <<'SH'
times_file=$(mktemp)
while :; do
  for f in workloads/*.c examples/*.c; do gcc -O2 -g -w -c "$f" -o /dev/null; done
  times > "$times_file"   # line 2: the CPU time of this shell's children
  cpu=$(awk 'NR == 2 { split($1, u, "m"); print int(u[1] * 60 + u[2]) }' "$times_file")
  [ "$cpu" -ge "$1" ] && break
done
rm -f "$times_file"
SH
  echo "bench: recording 2 gcc loops of $((SAMPLES_S / 2)) s of CPU each at $FREQ Hz with -g" >&2
  "$CULPRIT" record -q -g -e cpu-clock -F "$FREQ" -o "$OUT/compile.data" -- \
    bash -c "bash $OUT/compile-loop.sh $((SAMPLES_S / 2)) & bash $OUT/compile-loop.sh $((SAMPLES_S / 2)); wait" > /dev/null
fi

# The browser: chromedriver's WebDriver API from python3's standard library. Prints the
# medians (ms): load, page script, then each view's draw.
browser() {
python3 - "$1" "$RUNS" <<'PY'
import json, socket, statistics, subprocess, sys, time, urllib.request
page, runs = sys.argv[1], int(sys.argv[2])
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
driver = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return json.loads(r.read())["value"]
    except urllib.error.HTTPError as e:
        return json.loads(e.read())["value"]
for _ in range(300):
    try:
        call("GET", "/status"); break
    except OSError:
        time.sleep(0.1)
args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--window-size=1400,1000", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]
# Draws a view by clicking its tab and waits for the next frame: the time, in ms.
DRAW = """const done = arguments[arguments.length - 1]; const t0 = performance.now();
document.getElementById('tab-' + arguments[0]).click();
requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));"""
VIEWS = ["timeline", "functions", "flame", "calltree", "trees", "annotate", "why"]
# Interactions (after the views are drawn), each timed from the event to the next frame:
# a time selection dragged over the middle half of the timeline, the inverted call tree,
# a merge transform of the hottest function, its undo, a flame graph search.
ACT = """const done = arguments[arguments.length - 1]; const what = arguments[0];
const $ = (id) => document.getElementById(id); const tab = (v) => $('tab-' + v).click();
let t0 = 0;
if (what === 'select') {
  tab('timeline'); const c = $('timeline'); const r = c.getBoundingClientRect();
  const at = (type, f) => c.dispatchEvent(new MouseEvent(type, { bubbles: true, clientX: r.left + 200 + f * (r.width - 200), clientY: r.top + 30 }));
  t0 = performance.now(); at('mousedown', 0.25); at('mousemove', 0.75); at('mouseup', 0.75);
} else if (what === 'inverted') {
  tab('calltree'); t0 = performance.now(); $('calltree-inverted').click();
} else if (what === 'merge') {
  tab('calltree'); if ($('calltree-inverted').checked) $('calltree-inverted').click();
  document.querySelector('#calltree-table tbody tr:nth-child(3)').click();
  t0 = performance.now(); document.querySelector('#calltree-actions button[data-kind=merge]').click();
} else if (what === 'undo') {
  t0 = performance.now(); $('transform-undo').click();
} else if (what === 'search') {
  tab('flame'); const s = $('flame-search'); t0 = performance.now(); s.value = 'heavy'; s.dispatchEvent(new Event('input'));
}
requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));"""
ACTS = ["select", "inverted", "merge", "undo", "search"]
results = {k: [] for k in ["load", "script", "first"] + VIEWS + ACTS}
try:
    for _ in range(runs):
        sid = call("POST", "/session", {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"args": args}}}})["sessionId"]
        try:
            call("POST", f"/session/{sid}/url", {"url": "file://" + page})
            ex = lambda js, a=[]: call("POST", f"/session/{sid}/execute/sync", {"script": js, "args": a})
            start = time.time()
            while ex("return document.body && document.body.dataset.ready") != "1":
                if time.time() - start > 300:
                    sys.exit("bench: the page did not load")
                time.sleep(0.05)
            nav = ex("const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime")
            results["load"].append(nav)
            results["script"].append(float(ex("return document.body.dataset.renderMs")))
            results["first"].append(float(ex("return document.body.dataset.firstViewMs")))
            for view in VIEWS:
                results[view].append(call("POST", f"/session/{sid}/execute/async", {"script": DRAW, "args": [view]}))
            for act in ACTS:
                results[act].append(call("POST", f"/session/{sid}/execute/async", {"script": ACT, "args": [act]}))
        finally:
            call("DELETE", f"/session/{sid}")
finally:
    driver.terminate()
print(" ".join(f"{statistics.median(v):.0f}" for v in results.values()))
PY
}

# One recording's row: culprit html's time and RSS, the page, Chromium's times.
row() {
  local name=$1 data=$2 page=$OUT/$1.html
  "$CULPRIT" html -i "$data" -o "$page" --summary none   # warm the page cache and symbols
  "$TIME" -f '%e %M' -o "$OUT/$name.time" "$CULPRIT" html -i "$data" -o "$page" --summary json > "$OUT/$name.json"
  local wall rss samples nodes pruned bytes
  read -r wall rss < "$OUT/$name.time"
  read -r samples nodes pruned < <(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["samples"], j["tree_nodes"], j["pruned_nodes"])' "$OUT/$name.json")
  bytes=$(stat -c %s "$page")
  local times
  times=$(browser "$page")
  awk -v n="$name" -v sa="$samples" -v b="$bytes" -v no="$nodes" -v pr="$pruned" -v w="$wall" -v r="$rss" -v t="$times" \
    'BEGIN { printf "| %s | %d | %.2f MB | %d (%d pruned) | %.2f s | %.0f MB |", n, sa, b / 1e6, no, pr, w, r / 1024;
             k = split(t, ms, " "); for (i = 1; i <= k; i++) printf " %d ms |", ms[i]; printf "\n" }'
}

echo "culprit $("$CULPRIT" --version | awk '{print $2}'); $(chromium --version 2>/dev/null | head -1); browser times: median of $RUNS loads"
echo
echo "| recording | samples | page | call-tree nodes | culprit html (wall) | culprit html (peak RSS) | load (to load event) | page script (parse + first view) | first view drawn (from navigation) | timeline | hot functions | flame graph | call tree | callers/callees | annotate | why | select a time range | inverted tree | merge | undo | flame search |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
[ -n "${ONLY_EXTRA:-}" ] || row shares "$OUT/bench.data"
[ -n "${ONLY_EXTRA:-}" ] || row compile "$OUT/compile.data"
for extra in ${EXTRA:-}; do row "$(basename "$extra" .data)" "$extra"; done
if [ -n "${MANY:-}" ]; then
  # compile.data's samples, repeated later in time until there are MANY.
  have=$(python3 bench/html_many_samples.py "$OUT/compile.data" "$OUT/many.data" 1)
  copies=$(( (MANY + ${have% samples} - 1) / ${have% samples} ))
  python3 bench/html_many_samples.py "$OUT/compile.data" "$OUT/many.data" "$copies" > /dev/null
  row many "$OUT/many.data"
  rm -f "$OUT/many.data"
fi
echo
echo "Goals (issue 31): page <= 5 MB and first paint <= 1 s at 10 M samples; each interaction <= 100 ms."
