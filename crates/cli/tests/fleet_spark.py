#!/usr/bin/env python3
"""Top functions by self period per event, computed by Apache Spark (pyspark, local mode)
from culprit Parquet exports (`culprit export --format parquet -o DIR`).

    python3 fleet_spark.py [--limit N] [--precise] [--timing] DIR [DIR ...]

Prints one JSON object: {"rows": [{"event", "function", "dso", "sym_addr", "samples",
"period"}, ...], "seconds": query time}; with --precise also "precise": every sample's
precise fields (IBS/PEBS) with its file, time, tid and event. The query is the Spark SQL of docs/fleet.md
("Spark"): the numbers of `culprit report --sort sym --no-children` and of
`culprit sql --top-functions` (tests/sql.rs checks all three are equal; bench/fleet.sh times
it). Written against the Parquet schema only: no culprit code is involved.
"""

import argparse
import json
import os
import sys
import time

# The Spark SQL of docs/fleet.md: samples summed per (recording, event, leaf frame) first,
# then joined with the event names and the frames; an address without a symbol is its own
# row (function NULL: by file offset, or by address outside any mapping), as culprit report
# keeps one row per unresolved address.
TOP_FUNCTIONS = """
WITH leaf AS (
  SELECT file_id, event_id, leaf_frame_id, COUNT(*) AS samples, SUM(period) AS period
  FROM samples
  GROUP BY file_id, event_id, leaf_frame_id
),
keyed AS (
  SELECT e.name AS event, f.function, f.dso,
         CASE WHEN f.function IS NULL THEN NULL ELSE f.dso END AS dso_key,
         CASE WHEN f.function IS NULL THEN COALESCE(f.file_offset, f.address) END AS addr,
         l.samples, l.period
  FROM leaf l
  JOIN events e ON e.file_id = l.file_id AND e.event_id = l.event_id
  JOIN frames f ON f.file_id = l.file_id AND f.frame_id = l.leaf_frame_id
),
per_function AS (
  SELECT event, function, dso_key, addr, MIN(dso) AS dso,
         SUM(samples) AS samples, SUM(period) AS period
  FROM keyed
  GROUP BY event, function, dso_key, addr
),
ranked AS (
  SELECT event, COALESCE(function, '[unknown]') AS function, dso,
         CASE WHEN addr IS NOT NULL THEN concat('0x', lower(hex(addr))) END AS sym_addr,
         samples, period,
         ROW_NUMBER() OVER (PARTITION BY event ORDER BY period DESC, function, dso, addr) AS rank
  FROM per_function
)
SELECT event, rank, function, dso, sym_addr, samples, period
FROM ranked
{limit}
ORDER BY event, rank
"""

# The precise columns of every sample with its file (PRECISE_SQL in tests/sql.rs).
PRECISE = """
SELECT h.file, s.time, s.tid, s.event, s.data_addr, s.phys_addr,
       s.weight, s.data_src, s.dc_miss, s.dtlb_miss, s.branch_taken, s.branch_mispredicted,
       s.ibs_op_latency, s.ibs_dc_miss_latency, s.ibs_fetch_latency
FROM samples s JOIN hosts h ON h.file_id = s.file_id
ORDER BY h.file, s.time, s.tid, s.event
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", help="culprit Parquet export directories")
    ap.add_argument("--limit", type=int, help="at most N functions per event")
    ap.add_argument("--precise", action="store_true", help="also print every sample's precise fields (\"precise\": rows)")
    ap.add_argument("--timing", action="store_true", help="also run the query a second time, warm, and report that time")
    args = ap.parse_args()
    for d in args.dirs:
        if not os.path.isdir(os.path.join(d, "samples")):
            sys.exit(f"{d}: not a culprit Parquet export (no samples/ directory)")

    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[*]")
        .appName("culprit-fleet")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("SPARK_DRIVER_MEMORY", "3g"))
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    # Each table: the union of the directories' files (mergeSchema: exports of different
    # schema versions read together, missing columns as NULL).
    for table in ["hosts", "events", "frames", "stacks", "samples"]:
        paths = [os.path.join(d, table) for d in args.dirs]
        spark.read.option("mergeSchema", "true").parquet(*paths).createOrReplaceTempView(table)

    limit = f"WHERE rank <= {args.limit}" if args.limit else ""
    query = TOP_FUNCTIONS.format(limit=limit)
    start = time.monotonic()
    rows = spark.sql(query).collect()
    seconds = time.monotonic() - start
    if args.timing:
        start = time.monotonic()
        rows = spark.sql(query).collect()
        warm = time.monotonic() - start
    out = {
        "rows": [
            {
                "event": r["event"],
                "rank": r["rank"],
                "function": r["function"],
                "dso": r["dso"],
                "sym_addr": r["sym_addr"],
                "samples": int(r["samples"]),
                "period": int(r["period"]),
            }
            for r in rows
        ],
        "seconds": seconds,
    }
    if args.timing:
        out["warm_seconds"] = warm
    if args.precise:
        out["precise"] = [r.asDict() for r in spark.sql(PRECISE).collect()]
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    spark.stop()


if __name__ == "__main__":
    main()
