#!/usr/bin/env python3
"""Makes a perf.data of many samples from a smaller recording (bench/html.sh's 10 M-sample row).

    bench/html_many_samples.py IN.data OUT.data COPIES

OUT holds IN's records, then COPIES-1 more copies of IN's SAMPLE records, copy k shifted
by k times IN's time span (plus one sampling interval): a recording COPIES times as long
with the same threads, code and stacks. Only file-mode (PERFILE2), uncompressed inputs of
samples that carry TIME; the feature sections are copied behind the longer data section
with their offsets moved.
"""
import struct
import sys

PERF_RECORD_SAMPLE = 9
PERF_RECORD_COMPRESSED = 81
SAMPLE_IDENTIFIER, SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME = 1 << 16, 1 << 0, 1 << 1, 1 << 2


def main():
    src, dst, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
    blob = open(src, "rb").read()
    if blob[:8] != b"PERFILE2":
        sys.exit("html_many_samples: not a file-mode perf.data")
    (_size, attr_size, attrs_off, attrs_size, data_off, data_size) = struct.unpack_from("<6Q", blob, 8)
    features = int.from_bytes(blob[72:104], "little")
    # Every attr must place TIME at the same offset (the first attr's sample_type decides).
    sample_types = {struct.unpack_from("<Q", blob, attrs_off + i + 24)[0] for i in range(0, attrs_size, attr_size)}
    if len(sample_types) != 1:
        sys.exit("html_many_samples: events with different sample_type")
    st = sample_types.pop()
    if not st & SAMPLE_TIME:
        sys.exit("html_many_samples: samples without time")
    time_at = 8 + 8 * bool(st & SAMPLE_IDENTIFIER) + 8 * bool(st & SAMPLE_IP) + 8 * bool(st & SAMPLE_TID)

    data = blob[data_off:data_off + data_size]
    samples, times, pos = [], [], 0
    while pos + 8 <= len(data):
        kind, _misc, size = struct.unpack_from("<IHH", data, pos)
        if size == 0:
            break
        if kind == PERF_RECORD_COMPRESSED:
            sys.exit("html_many_samples: compressed records (record without -z)")
        if kind == PERF_RECORD_SAMPLE:
            samples.append(pos)
            times.append(struct.unpack_from("<Q", data, pos + time_at)[0])
        pos += size
    if not samples:
        sys.exit("html_many_samples: no samples")
    step = max(times) - min(times) + max(1, (max(times) - min(times)) // len(times))

    with open(dst, "wb") as out:
        out.write(blob[:data_off])
        out.write(data)
        extra = 0
        for k in range(1, copies):
            chunk = bytearray()
            for p in samples:
                size = struct.unpack_from("<H", data, p + 6)[0]
                rec = bytearray(data[p:p + size])
                t = struct.unpack_from("<Q", rec, time_at)[0]
                struct.pack_into("<Q", rec, time_at, t + k * step)
                chunk += rec
            out.write(chunk)
            extra += len(chunk)
        # The feature index follows the data: copy it with each section's offset moved.
        index_at = data_off + data_size
        nfeat = bin(features).count("1")
        index = bytearray(blob[index_at:index_at + 16 * nfeat])
        for i in range(nfeat):
            off, size = struct.unpack_from("<QQ", index, 16 * i)
            struct.pack_into("<QQ", index, 16 * i, off + extra, size)
        out.write(index)
        out.write(blob[index_at + 16 * nfeat:])
        out.seek(48)
        out.write(struct.pack("<Q", data_size + extra))
    print(f"{len(samples) * copies} samples")


main()
