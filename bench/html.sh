#!/usr/bin/env bash
# Benchmark (not a test): `culprit html` on a ~1M-sample `-g` recording of the workloads: the
# time and peak RSS to write the page, its size, and how long headless Chromium takes to load
# and draw it (navigation to the load event, the page script's own time to parse the data and
# draw the first view, then each view's draw on its tab's click, up to the next frame).
# Goals (issue 19): the page under 5 MB, drawn in under 2 s.
#
#   bench/html.sh                        # record (once, shared with bench/export.sh) and measure
#   SAMPLES_S=60 FREQ=20000 bench/html.sh
#   DATA=some.data bench/html.sh         # any other recording
#
# Needs: GNU time (/usr/bin/time), chromium and chromedriver (Debian chromium,
# chromium-driver), python3, a release build of culprit (built here if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/bench-export}
FREQ=${FREQ:-20000}              # cpu-clock sampling frequency per thread
SAMPLES_S=${SAMPLES_S:-50}       # seconds of CPU to record: FREQ * SAMPLES_S samples
RUNS=${RUNS:-3}                  # browser loads (the median is printed)
TARGET_DIR=${CARGO_TARGET_DIR:-target}
CULPRIT=${CULPRIT:-$TARGET_DIR/release/culprit}
TIME=/usr/bin/time

[ -x "$TIME" ] || { echo "bench: GNU time missing: apt-get install time" >&2; exit 2; }
command -v chromedriver >/dev/null && command -v chromium >/dev/null ||
  { echo "bench: chromium and chromedriver missing: apt-get install chromium chromium-driver" >&2; exit 2; }
[ -x "$CULPRIT" ] || cargo build --release -p culprit-cli
mkdir -p "$OUT"

# The recording of bench/export.sh: `culprit record -g` (frame pointers) of two copies of the
# shares workload, SAMPLES_S seconds of CPU at FREQ Hz: ~FREQ * SAMPLES_S samples.
DATA=${DATA:-$OUT/bench.data}
if [ ! -s "$DATA" ]; then
  make -s -C workloads OUT="$PWD/target/workloads" "$PWD/target/workloads/shares"
  units=$((SAMPLES_S * 126 / 2))
  echo "bench: recording 2 x shares $units at $FREQ Hz with -g" >&2
  "$CULPRIT" record -q -g -e cpu-clock -F "$FREQ" -o "$DATA" -- \
    sh -c "target/workloads/shares $units & target/workloads/shares $units; wait" > /dev/null
fi

PAGE=$OUT/report.html
"$CULPRIT" html -i "$DATA" -o "$PAGE" --summary none   # warm the page cache and symbols
"$TIME" -f '%e %M' -o "$OUT/html.time" "$CULPRIT" html -i "$DATA" -o "$PAGE" --summary json > "$OUT/html.json"
read -r wall rss < "$OUT/html.time"
samples=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$OUT/html.json")
nodes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tree_nodes"])' "$OUT/html.json")
bytes=$(stat -c %s "$PAGE")

# The browser: chromedriver's WebDriver API from python3's standard library.
browser=$(python3 - "$PAGE" "$RUNS" <<'PY'
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
results = {"load": [], "script": [], "functions": [], "flame": [], "trees": [], "annotate": []}
try:
    for _ in range(runs):
        sid = call("POST", "/session", {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"args": args}}}})["sessionId"]
        try:
            call("POST", f"/session/{sid}/url", {"url": "file://" + page})
            ex = lambda js, a=[]: call("POST", f"/session/{sid}/execute/sync", {"script": js, "args": a})
            while ex("return document.body && document.body.dataset.ready") != "1":
                time.sleep(0.05)
            nav = ex("const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime")
            results["load"].append(nav)
            results["script"].append(float(ex("return document.body.dataset.renderMs")))
            for view in ["functions", "flame", "trees", "annotate"]:
                results[view].append(call("POST", f"/session/{sid}/execute/async", {"script": DRAW, "args": [view]}))
        finally:
            call("DELETE", f"/session/{sid}")
finally:
    driver.terminate()
print(" ".join(f"{statistics.median(v):.0f}" for v in results.values()))
PY
)
read -r load script functions flame trees annotate <<< "$browser"

echo "File: $(basename "$DATA"), $samples samples ($(du -h "$DATA" | cut -f1)); culprit $("$CULPRIT" --version | awk '{print $2}'); $(chromium --version 2>/dev/null | head -1)"
echo
echo "| page | call-tree nodes | culprit html (wall) | culprit html (peak RSS) | load (navigation to load event) | page script (parse + first view) | hot functions | flame graph | call trees | annotate |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
awk -v b="$bytes" -v n="$nodes" -v w="$wall" -v r="$rss" -v l="$load" -v s="$script" -v f="$functions" \
    -v fl="$flame" -v t="$trees" -v a="$annotate" \
  'BEGIN { printf "| %.2f MB | %d | %.2f s | %.0f MB | %d ms | %d ms | %d ms | %d ms | %d ms | %d ms |\n", b / 1e6, n, w, r / 1024, l, s, f, fl, t, a }'
echo
echo "Goals: page < 5 MB: $(awk -v b="$bytes" 'BEGIN { print (b < 5e6 ? "met" : "NOT met") }'); load + draw < 2 s: $(awk -v l="$load" 'BEGIN { print (l < 2000 ? "met" : "NOT met") }') (browser times: median of $RUNS loads)"
