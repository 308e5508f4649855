"""An independent reader of a `culprit export --format parquet` directory (pyarrow), for
crates/cli/tests/parquet.rs: prints one JSON object with what the tests compare against
culprit's own verbs (report, script).

Usage: python3 parquet_read.py DIR [CHAINS]   (CHAINS: samples whose call chains to print
per file, in row order; default 200)

Everything is computed here from the tables alone, with plain Python joins on the ids the
schema documents (docs/fleet.md): samples.leaf_frame_id -> frames.frame_id (depth 0),
samples.stack_id -> stacks.frame_ids -> frames, samples.event_id -> events.event_id, all
scoped by file_id.
"""

import json
import sys
from collections import defaultdict

import pyarrow.dataset as ds
import pyarrow.parquet as pq

TABLES = ["hosts", "events", "frames", "stacks", "samples"]
U64 = 1 << 64
PRECISE = [
    "time",
    "tid",
    "data_addr",
    "phys_addr",
    "weight",
    "data_src",
    "dc_miss",
    "dtlb_miss",
    "branch_taken",
    "branch_mispredicted",
    "ibs_op_latency",
    "ibs_dc_miss_latency",
    "ibs_fetch_latency",
]


def type_name(t):
    """The docs/fleet.md spelling of an Arrow type read back from Parquet."""
    import pyarrow as pa

    if pa.types.is_int64(t):
        return "INT64"
    if pa.types.is_int32(t):
        return "INT32"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "STRING"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_list(t):
        return "LIST<%s>" % type_name(t.value_type)
    return str(t)


def main():
    root = sys.argv[1]
    chains_wanted = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    out = {"schemas": {}, "files": {}, "row_groups": {}, "dictionary": {}}
    tables = {}
    for t in TABLES:
        d = ds.dataset("%s/%s" % (root, t), format="parquet")
        tables[t] = d.to_table()
        out["schemas"][t] = [
            [f.name, type_name(f.type), f.nullable] for f in tables[t].schema
        ]
        # Per column: whether any of the table's files dictionary-encodes it; row groups.
        enc = defaultdict(bool)
        groups = 0
        for frag in d.get_fragments():
            meta = pq.ParquetFile(frag.path).metadata
            groups += meta.num_row_groups
            for g in range(meta.num_row_groups):
                rg = meta.row_group(g)
                for c in range(rg.num_columns):
                    col = rg.column(c)
                    name = col.path_in_schema.split(".")[0]
                    enc[name] |= any("DICT" in e for e in col.encodings)
                    if col.compression != "ZSTD":
                        raise SystemExit("%s.%s: compression %s" % (t, name, col.compression))
        out["row_groups"][t] = groups
        out["dictionary"][t] = dict(enc)

    hosts = tables["hosts"].to_pylist()
    events = tables["events"].to_pylist()
    frames = {(f["file_id"], f["frame_id"]): f for f in tables["frames"].to_pylist()}
    stacks = {(s["file_id"], s["stack_id"]): s["frame_ids"] for s in tables["stacks"].to_pylist()}
    names = {(e["file_id"], e["event_id"]): e["name"] for e in events}

    for h in hosts:
        fid = h["file_id"]
        f = {
            "file_id": fid,
            "host": h,
            "events": {
                e["name"]: [e["samples"], e["period"], e["unit"]]
                for e in events
                if e["file_id"] == fid and e["samples"] > 0
            },
            "counts": {},
            "top": {},
            "chains": [],
            "precise": [],
            "rows": 0,
        }
        out["files"][h["file"]] = f

    by_id = {f["file_id"]: f for f in out["files"].values()}
    for s in tables["samples"].to_pylist():
        f = by_id[s["file_id"]]
        f["rows"] += 1
        event = names[(s["file_id"], s["event_id"])]
        if s["event"] != event:
            raise SystemExit("samples.event %r != events.name %r" % (s["event"], event))
        c = f["counts"].setdefault(event, [0, 0])
        c[0] += 1
        c[1] += s["period"]
        leaf = frames[(s["file_id"], s["leaf_frame_id"])]
        if leaf["inline_depth"] != 0:
            raise SystemExit("leaf frame %d has depth %d" % (leaf["frame_id"], leaf["inline_depth"]))
        if (leaf["dso"], leaf["file_offset"], leaf["build_id"]) != (
            s["leaf_dso"],
            s["leaf_file_offset"],
            s["leaf_build_id"],
        ):
            raise SystemExit("samples.leaf_* disagree with frame %d" % leaf["frame_id"])
        # report --sort sym: a function by its name; code without a symbol by its file
        # offset (the address when no mapping covers it).
        if leaf["function"] is not None:
            key = "sym:" + leaf["function"]
        else:
            off = leaf["file_offset"] if leaf["file_offset"] is not None else leaf["address"]
            key = "unknown:%#x" % (off % U64)
        t = f["top"].setdefault(event, {}).setdefault(key, [0, 0])
        t[0] += 1
        t[1] += s["period"]
        if len(f["chains"]) < chains_wanted:
            chain = []
            for fr_id in stacks[(s["file_id"], s["stack_id"])]:
                fr = frames[(s["file_id"], fr_id)]
                off = fr["file_offset"] if fr["file_offset"] is not None else fr["address"]
                chain.append([fr["function"], fr["dso"], off % U64, fr["inline_depth"]])
            leaf_off = leaf["file_offset"] if leaf["file_offset"] is not None else leaf["address"]
            depth0 = [x for x in chain if x[3] == 0]
            if depth0[0][:3] != [leaf["function"], leaf["dso"], leaf_off % U64]:
                raise SystemExit("stack %d does not start at its leaf frame" % s["stack_id"])
            f["chains"].append(
                {"time": s["time"], "tid": s["tid"], "event": event, "chain": chain}
            )
        if len(f["precise"]) < chains_wanted:
            f["precise"].append({k: s[k] for k in PRECISE})
    for f in out["files"].values():
        f["top"] = {e: sorted([k, v[0], v[1]] for k, v in t.items()) for e, t in f["top"].items()}
        for p in f["precise"]:
            for k in ["data_addr", "phys_addr", "data_src"]:
                if p[k] is not None:
                    p[k] %= U64
    json.dump(out, sys.stdout)


main()
