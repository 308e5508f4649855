#!/usr/bin/env python3
"""CLI-level mutation run (not a test): mutates perf.data seeds (bit flips, boundary values in
header/attr/size fields, truncations, duplicated, deleted and spliced chunks) and runs culprit's
reading verbs on each mutant, from the file and from stdin. Prints, per verb: executions,
crashes (a signal, or Rust's panic status 101), hangs (over --timeout), the largest output and
the largest peak RSS of one run. Crashing and hanging inputs are kept in --out.

    python3 bench/cli-mutate.py [--seconds 60] [--seed 1] [--timeout 20] [SEED_FILES...]

Default seeds: the committed fixtures under 256 KB (crates/decode/tests/fixtures, with the
real-perf-data corpus). Needs a release build (target/release/culprit; built if missing).
"""
import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERBS = {
    "report": ["report", "--sort", "comm,dso,sym"],
    "report-g-json": ["report", "-g", "caller", "--format", "json"],
    "report-branch": ["report", "--branch"],
    "script": ["script"],
    "script-json": ["script", "--format", "json"],
    "annotate": ["annotate"],
    "ibs": ["ibs"],
    "trace": ["trace", "-q", "-e", "pmc:::cpu-clock { @[sym] = count(); }"],
    "report-offenders": ["report", "--offenders"],
    "report-children-csv": ["report", "--children", "--format", "csv"],
    "html": ["html", "-o", "{out}/report.html"],
    "flamegraph": ["flamegraph", "-o", "{out}/flame.svg"],
    "export-folded": ["export", "--format", "folded"],
    "export-pprof": ["export", "--format", "pprof", "-o", "{out}/out.pb.gz"],
    "export-firefox": ["export", "--format", "firefox"],
    "export-speedscope": ["export", "--format", "speedscope"],
    "export-chrome": ["export", "--format", "chrome"],
    "export-parquet": ["export", "--format", "parquet", "-o", "{out}/parquet"],
    "sched-latency": ["sched", "latency"],
    "sched-timehist": ["sched", "timehist"],
    "lock-contention": ["lock", "contention"],
    # diff reads files (positional), not -i: the mutant against itself.
    "diff": ["diff"],
}


def mutate(data: bytes, seeds: list, rng: random.Random) -> bytes:
    b = bytearray(data)
    if not b:
        return bytes(b)
    kind = rng.randrange(6)
    if kind == 0:  # bit flips
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # boundary values in a u16/u32/u64 field (headers, attrs, sizes)
        width = rng.choice([2, 4, 8])
        lim = min(len(b) - width, 4096 if rng.random() < 0.7 else len(b) - width)
        if lim > 0:
            i = rng.randrange(lim) & ~(width - 1)
            v = rng.choice([0, 1, 7, 8, 0xFF, 0xFFFF, 2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1])
            fmt = {2: "<H", 4: "<I", 8: "<Q"}[width]
            b[i:i + width] = struct.pack(fmt, v & ((1 << (8 * width)) - 1))
    elif kind == 2:  # truncation
        b = b[: rng.randrange(len(b))]
    elif kind == 3:  # duplicated chunk
        i = rng.randrange(len(b))
        n = rng.randint(1, min(4096, len(b) - i))
        b[i:i] = b[i:i + n]
    elif kind == 4:  # deleted chunk
        i = rng.randrange(len(b))
        del b[i:i + rng.randint(1, 4096)]
    else:  # spliced from another seed
        other = rng.choice(seeds)
        if other:
            i = rng.randrange(len(b))
            j = rng.randrange(len(other))
            b = b[:i] + other[j:j + rng.randint(1, 8192)]
    return bytes(b)


def run_one(cmd, stdin_path, timeout):
    """Runs cmd; returns (status or None for a hang, output bytes, peak RSS KiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        p = subprocess.Popen(cmd, stdin=stdin, stdout=out, stderr=err)
        hung = []
        timer = threading.Timer(timeout, lambda: (hung.append(1), p.kill()))
        timer.start()
        _, status, usage = os.wait4(p.pid, 0)
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        if stdin_path:
            stdin.close()
        out.seek(0, os.SEEK_END)
        return (None if hung else p.returncode), out.tell(), usage.ru_maxrss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--out", default=str(ROOT / "target/cli-mutate"))
    ap.add_argument("--culprit", help="the binary to run (default: target/release/culprit)")
    ap.add_argument("seeds", nargs="*")
    a = ap.parse_args()
    culprit = Path(a.culprit) if a.culprit else ROOT / "target/release/culprit"
    if not culprit.exists():
        subprocess.run(["cargo", "build", "-q", "--release", "-p", "culprit-cli"], cwd=ROOT, check=True)
    paths = [Path(s) for s in a.seeds] or sorted(
        p for p in (ROOT / "crates/decode/tests/fixtures").rglob("*")
        if p.is_file() and p.suffix not in (".md", ".json") and p.stat().st_size < 256 * 1024
    )
    seeds = [p.read_bytes() for p in paths]
    rng = random.Random(a.seed)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stats = {v: [0, 0, 0, 0, 0] for v in VERBS}  # runs, crashes, hangs, max out, max rss
    end = time.time() + a.seconds
    work = Path(tempfile.mkdtemp(prefix="cli-mutate-"))
    n = 0
    try:
        while time.time() < end:
            n += 1
            data = mutate(rng.choice(seeds), seeds, rng)
            f = work / "mutant.data"
            f.write_bytes(data)
            verb = rng.choice(list(VERBS))
            from_stdin = rng.random() < 0.3
            scratch = work / "out"
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            args = [a.replace("{out}", str(scratch)) for a in VERBS[verb]]
            if verb == "diff":
                from_stdin = False
                cmd = [str(culprit)] + args + [str(f), str(f)]
            else:
                cmd = [str(culprit)] + args + ["-i", "-" if from_stdin else str(f)]
            status, nbytes, rss = run_one(cmd, f if from_stdin else None, a.timeout)
            s = stats[verb]
            s[0] += 1
            s[3] = max(s[3], nbytes)
            s[4] = max(s[4], rss)
            bad = None
            if status is None:
                s[2] += 1
                bad = "hang"
            elif status < 0 or status == 101 or status > 2:
                s[1] += 1
                bad = f"crash{status}"
            if bad:
                keep = out / f"{bad}-{verb}-{'stdin' if from_stdin else 'file'}-{n}.data"
                shutil.copy(f, keep)
                print(f"cli-mutate: {bad}: {' '.join(cmd[1:-2])} {keep}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"| verb | executions | crashes | hangs | largest output | largest peak RSS |")
    print(f"| --- | ---: | ---: | ---: | ---: | ---: |")
    total = [0, 0, 0]
    for v, (runs, crashes, hangs, nbytes, rss) in stats.items():
        total[0] += runs
        total[1] += crashes
        total[2] += hangs
        print(f"| {v} | {runs} | {crashes} | {hangs} | {nbytes / 1e6:.2f} MB | {rss / 1024:.0f} MB |")
    print(f"cli-mutate: {total[0]} executions on {len(seeds)} seeds, {total[1]} crashes, {total[2]} hangs")
    sys.exit(1 if total[1] or total[2] else 0)


if __name__ == "__main__":
    main()
