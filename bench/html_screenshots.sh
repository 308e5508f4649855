#!/usr/bin/env bash
# The screenshots of docs/html.md (not a test): records two small programs, writes their
# `culprit html` pages and photographs each view in headless Chromium (chromedriver's
# WebDriver API, network off) into docs/img/html-VIEW.png.
# - workloads/offcpu pipe, recorded with --off-cpu: the timeline (two threads, off-CPU
#   intervals), with a time range selected;
# - workloads/shares, recorded twice (the second with another argument) for --diff: the
#   summary, hot functions, call tree (with the change column), callers/callees, flame
#   graph, annotate and Why views.
#
# - MANY_PAGE, when given: a page of a long recording (bench/html.sh MANY=...'s many.html,
#   left in its OUT): its timeline with a selection snapped to the cells' buckets, and its
#   call tree (a node with more than 100 children shows a "more" row).
#
#   bench/html_screenshots.sh            # needs chromium, chromedriver, python3, perf access
#   MANY_PAGE=target/bench-export/many.html bench/html_screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET_DIR=${CARGO_TARGET_DIR:-target}
CULPRIT=${CULPRIT:-$TARGET_DIR/debug/culprit}
OUT=${OUT:-$TARGET_DIR/bench-html}
IMG=docs/img
[ -x "$CULPRIT" ] || cargo build -p culprit-cli --bin culprit
mkdir -p "$OUT" "$IMG"
OUT=$(realpath "$OUT")
make -s -C workloads OUT="$PWD/target/workloads" "$PWD/target/workloads/shares" "$PWD/target/workloads/offcpu"

"$CULPRIT" record -q -g --off-cpu -o "$OUT/offcpu.data" -- target/workloads/offcpu pipe 40 > /dev/null
"$CULPRIT" record -q -g -e cpu-clock -F 4000 -o "$OUT/shares.data" -- target/workloads/shares 80 > /dev/null
"$CULPRIT" record -q -g -e cpu-clock -F 4000 -o "$OUT/shares2.data" -- \
  sh -c "target/workloads/shares 40; target/workloads/offcpu sleep 5" > /dev/null
"$CULPRIT" html -i "$OUT/offcpu.data" -o "$OUT/offcpu.html" --summary none
"$CULPRIT" html -i "$OUT/shares.data" --diff "$OUT/shares2.data" -o "$OUT/shares.html" --summary none

python3 - "$OUT" "$IMG" "$(realpath -q "${MANY_PAGE:-}" || true)" <<'PY'
import base64, json, socket, subprocess, sys, time, urllib.request
out, img, many = sys.argv[1], sys.argv[2], sys.argv[3]
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
args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
        "--window-size=1100,640", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]
def session(page):
    sid = call("POST", "/session", {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"args": args}}}})["sessionId"]
    call("POST", f"/session/{sid}/url", {"url": "file://" + page})
    ex = lambda js: call("POST", f"/session/{sid}/execute/sync", {"script": js, "args": []})
    while ex("return document.body && document.body.dataset.ready") != "1":
        time.sleep(0.05)
    return sid, ex
def shot(sid, name):
    time.sleep(0.3)
    png = base64.b64decode(call("GET", f"/session/{sid}/screenshot"))
    open(f"{img}/html-{name}.png", "wb").write(png)
    print(f"{img}/html-{name}.png: {len(png)} bytes")
def timeline_with_selection(page, name):
    sid, ex = session(page)
    ex("document.getElementById('tab-timeline').click()")
    # A time selection: press, move and release over the middle of the tracks.
    el = call("POST", f"/session/{sid}/element", {"using": "css selector", "value": "#timeline"})
    origin = {"element-6066-11e4-a52e-4f735466cecf": list(el.values())[0]}
    call("POST", f"/session/{sid}/actions", {"actions": [{"type": "pointer", "id": "m", "parameters": {"pointerType": "mouse"}, "actions": [
        {"type": "pointerMove", "duration": 0, "origin": origin, "x": -150, "y": 0}, {"type": "pointerDown", "button": 0},
        {"type": "pointerMove", "duration": 50, "origin": origin, "x": 150, "y": 0}, {"type": "pointerUp", "button": 0}]}]})
    ex("document.getElementById('tab-timeline').click()")
    shot(sid, name)
    return sid, ex
try:
    sid, ex = timeline_with_selection(out + "/offcpu.html", "timeline")
    call("DELETE", f"/session/{sid}")
    if many:
        sid, ex = timeline_with_selection(many, "timeline-many")
        # The call tree with the heaviest path open: the "more" row of a wide node.
        ex("document.getElementById('selection-clear').click(); document.getElementById('tab-calltree').click();"
           "const m = document.querySelector('#calltree-table tr.more'); if (m) m.previousSibling.scrollIntoView({ block: 'center' });")
        shot(sid, "calltree-many")
        call("DELETE", f"/session/{sid}")
    sid, ex = session(out + "/shares.html")
    shot(sid, "summary")
    for view, setup in [("functions", ""), ("calltree", ""), ("trees", ""),
                        ("flame", "const s = document.getElementById('flame-search'); s.value = 'light'; s.dispatchEvent(new Event('input'));"),
                        ("annotate", "document.getElementById('ann-hottest').click();"), ("why", "")]:
        ex(f"document.getElementById('tab-{view}').click(); {setup}")
        shot(sid, view)
    call("DELETE", f"/session/{sid}")
finally:
    driver.terminate()
PY
