#!/usr/bin/env python3
"""Generates culprit-pmu-events' tables from the kernel's perf pmu-events JSON.

Usage (see ../README.md for where the kernel tree comes from):

    python3 gen/pmu_events_gen.py KERNEL_TREE/tools/perf/pmu-events OUT_DIR

Writes OUT_DIR/tables.txt.zst (the tables: a zstd frame of the mapfile rows and the chunk
index, then one self-contained frame per model, in the line format described in src/blob.rs)
and OUT_DIR/generated.rs (its provenance and the FNV-1a hash of the uncompressed frames,
which a unit test checks). One frame per model lets culprit decompress only the table of the
CPU it runs on (~0.2 ms) instead of every table (~5 ms). The conversion from JSON to perf's event terms follows
perf 6.12's jevents.py rule by rule (the facts, rewritten here): see json_event() below.
Metric expressions go through the tree's own metric.py (ParsePerfJson().Simplify() and
RewriteMetricsInTermsOfOthers), exactly as jevents.py stores them.

Output is deterministic: every directory walk and table is sorted, and zstd runs single-
threaded at a fixed level.
"""
import csv
import json
import os
import subprocess
import sys

FORMAT_LINE = 'culprit-pmu-events 2'
ZSTD_LEVEL = '19'

# jevents.py: MSRIndex (first of a list) -> the term that carries MSRValue.
MSR_TERMS = {0x3F6: 'ldlat=', 0x1A6: 'offcore_rsp=', 0x1A7: 'offcore_rsp=', 0x3F7: 'frontend='}

# jevents.py: events whose encoding perf fixes whatever the JSON says.
FIXED_EVENTS = {
    'inst_retired.any': 'event=0xc0,period=2000003',
    'inst_retired.any_p': 'event=0xc0,period=2000003',
    'cpu_clk_unhalted.ref': 'event=0x0,umask=0x03,period=2000003',
    'cpu_clk_unhalted.thread': 'event=0x3c,period=2000003',
    'cpu_clk_unhalted.core': 'event=0x3c,period=2000003',
    'cpu_clk_unhalted.thread_any': 'event=0x3c,any=1,period=2000003',
}

# jevents.py: JSON "Unit" -> perf PMU name; anything else is uncore_<unit lower-cased>.
UNIT_TO_PMU = {
    'CBO': 'uncore_cbox', 'QPI LL': 'uncore_qpi', 'SBO': 'uncore_sbox', 'iMPH-U': 'uncore_arb',
    'CPU-M-CF': 'cpum_cf', 'CPU-M-SF': 'cpum_sf', 'PAI-CRYPTO': 'pai_crypto', 'PAI-EXT': 'pai_ext',
    'UPI LL': 'uncore_upi', 'hisi_sicl,cpa': 'hisi_sicl,cpa', 'hisi_sccl,ddrc': 'hisi_sccl,ddrc',
    'hisi_sccl,hha': 'hisi_sccl,hha', 'hisi_sccl,l3c': 'hisi_sccl,l3c', 'imx8_ddr': 'imx8_ddr',
    'imx9_ddr': 'imx9_ddr', 'L3PMC': 'amd_l3', 'DFPMC': 'amd_df', 'UMCPMC': 'amd_umc',
    'cpu_core': 'cpu_core', 'cpu_atom': 'cpu_atom', 'ali_drw': 'ali_drw', 'arm_cmn': 'arm_cmn',
}

# jevents.py: JSON field -> term, appended in this order when present and not zero.
EVENT_FIELDS = [
    ('AnyThread', 'any='), ('PortMask', 'ch_mask='), ('CounterMask', 'cmask='),
    ('EdgeDetect', 'edge='), ('FCMask', 'fc_mask='), ('Invert', 'inv='),
    ('SampleAfterValue', 'period='), ('UMask', 'umask='), ('NodeType', 'type='),
    ('RdWrMask', 'rdwrmask='), ('EnAllCores', 'enallcores='), ('EnAllSlices', 'enallslices='),
    ('SliceId', 'sliceid='), ('ThreadMask', 'threadmask='),
]

AGGR_MODES = {'PerChip': '1', 'PerCore': '2'}
METRIC_CONSTRAINTS = {'NO_GROUP_EVENTS': '1', 'NO_GROUP_EVENTS_NMI': '2',
                      'NO_NMI_WATCHDOG': '2', 'NO_GROUP_EVENTS_SMT': '3'}


def llx(x):
    """printf("%#llx") as jevents.py writes numbers: small ones in decimal."""
    return str(x) if 0 <= x < 10 else hex(x)


def is_zero(val):
    try:
        return int(val, 16) == 0 if val.startswith('0x') else int(val) == 0
    except ValueError:
        return False


def canonical(val):
    try:
        return llx(int(val, 16)) if val.startswith('0x') else str(int(val))
    except ValueError:
        return val


def fixdesc(s):
    """jevents.py drops one trailing '.  ', '. ' or '.' (in that order of tries)."""
    if s is None:
        return None
    for suffix in ('.  ', '. ', '.'):
        if s.endswith(suffix):
            s = s[:-len(suffix)]
    return s


def json_event(jd, arch_std):
    """One JSON object -> a dict of perf's fields (jevents.py's JsonEvent, as data)."""
    eventcode = int(jd['EventCode'].split(',', 1)[0], 0) if 'EventCode' in jd else 0
    if 'ExtSel' in jd:
        eventcode |= int(jd['ExtSel']) << 8
    e = {
        'name': jd['EventName'].lower() if 'EventName' in jd else None,
        'compat': jd.get('Compat'),
        'desc': fixdesc(jd.get('BriefDescription')),
        'long_desc': fixdesc(jd.get('PublicDescription')),
        'pmu': UNIT_TO_PMU.get(jd['Unit'], 'uncore_' + jd['Unit'].lower())
        if jd.get('Unit') else 'default_core',
        'unit': jd.get('ScaleUnit'),
        'perpkg': jd.get('PerPkg'),
        'aggr_mode': AGGR_MODES[jd['AggregationMode']] if jd.get('AggregationMode') else None,
        'deprecated': jd.get('Deprecated'),
        'metric_name': jd.get('MetricName'),
        'metric_group': jd.get('MetricGroup'),
        'metricgroup_no_group': jd.get('MetricgroupNoGroup'),
        'default_metricgroup_name': jd.get('DefaultMetricgroupName'),
        'event_grouping': METRIC_CONSTRAINTS[jd['MetricConstraint']]
        if jd.get('MetricConstraint') else None,
        'metric_expr': jd.get('MetricExpr'),
        'metric_threshold': jd.get('MetricThreshold'),
        'pebs': jd.get('PEBS'),
        'counter': jd.get('Counter'),
    }
    extra = ''
    if 'Data_LA' in jd:
        extra += '  Supports address when precise'
        if 'Errata' in jd:
            extra += '.'
    if 'Errata' in jd:
        extra += '  Spec update: ' + jd['Errata']
    precise = jd.get('PEBS')
    if precise and e['desc'] and '(Precise Event)' not in e['desc']:
        extra += ' (Must be precise)' if precise == '2' else ' (Precise event)'
    if 'ConfigCode' in jd:
        event = 'config=' + llx(int(jd['ConfigCode'], 0))
    elif 'EventidCode' in jd:
        event = 'eventid=' + llx(int(jd['EventidCode'], 0))
    else:
        event = 'event=' + llx(eventcode)
    for key, term in EVENT_FIELDS:
        if key in jd and not is_zero(jd[key]):
            event += ',' + term + canonical(jd[key])
    if jd.get('Filter'):
        event += ',' + jd['Filter']
    if jd.get('MSRIndex'):
        event += ',' + MSR_TERMS[int(jd['MSRIndex'].split(',', 1)[0], 0)] + str(jd.get('MSRValue'))
    if e['desc'] and extra:
        e['desc'] += extra
    if e['long_desc'] and extra:
        e['long_desc'] += extra
    std_name = jd.get('ArchStdEvent')
    if std_name:
        std = arch_std.get(std_name.lower())
        if std is None:
            raise SystemExit(f'cannot find arch std event {std_name}')
        event = std['event']
        for key, value in std.items():
            if key in e and not e[key]:
                e[key] = value
    e['event'] = FIXED_EVENTS.get(e['name'], event) if e['name'] else event
    return e


def read_json(path, topic, arch_std, metric_mod):
    with open(path, encoding='utf-8') as f:
        events = [json_event(jd, arch_std) for jd in json.load(f)]
    metrics = []
    for e in events:
        e['topic'] = topic
        if e['metric_expr'] is not None:
            e['metric_expr'] = metric_mod.ParsePerfJson(e['metric_expr']).Simplify()
            if e['metric_name'] and '-' not in e['metric_name']:
                metrics.append((e['pmu'], e['metric_name'], e['metric_expr']))
    updates = metric_mod.RewriteMetricsInTermsOfOthers(metrics)
    for e in events:
        if e['metric_name'] in updates:
            e['metric_expr'] = updates[e['metric_name']]
        if e['metric_expr'] is not None:
            e['metric_expr'] = e['metric_expr'].ToPerfJson()
    return events


def topic_of(file_name):
    if file_name.endswith('metrics.json'):
        return 'metrics'
    return file_name[:-len('.json')].replace('-', ' ')


def arch_std_events(arch_dir, metric_mod, into):
    """The arch's top-level JSON files (arm64's common/recommended events): ArchStdEvent targets."""
    for name in sorted(os.listdir(arch_dir)):
        path = os.path.join(arch_dir, name)
        if os.path.isfile(path) and name.endswith('.json'):
            for e in read_json(path, '', into, metric_mod):
                if e['name']:
                    into[e['name'].lower()] = e
                if e['metric_name']:
                    into[e['metric_name'].lower()] = e


def model_dirs(arch_dir):
    """Every model directory (a leaf, ignoring `sys`) as its path relative to the arch dir."""
    out = []
    for root, dirs, _files in os.walk(arch_dir):
        dirs.sort()
        rel = os.path.relpath(root, arch_dir)
        if rel == '.' or os.path.basename(root) == 'sys' or rel.count(os.sep) > 3:
            continue
        if all(d == 'sys' for d in dirs):
            out.append(rel.replace(os.sep, '/'))
    return sorted(out)


class Pool:
    """Deduplicated strings; index 0 is the empty string (absent fields)."""

    def __init__(self):
        self.index = {'': 0}
        self.strings = ['']

    def id(self, s):
        s = '' if s is None else str(s)
        if s not in self.index:
            self.index[s] = len(self.strings)
            self.strings.append(s)
        return str(self.index[s])


def escape(s):
    return s.replace('\\', '\\\\').replace('\n', '\\n').replace('\t', '\\t').replace('\r', '\\r')


def event_flags(e):
    flags = ''
    if e['deprecated'] == '1':
        flags += 'd'
    if e['perpkg'] == '1':
        flags += 'k'
    if e['pebs'] and e['pebs'] != '0':
        flags += 'p' + e['pebs']
    return flags


def metric_flags(e):
    return '{}{}{}'.format(e['aggr_mode'] or '0', e['event_grouping'] or '0',
                          '1' if e['metricgroup_no_group'] else '0')


def generate(events_dir):
    """(header text, [(model, chunk text)]): the rows and the chunk index, and each model's
    table with a string pool of its own."""
    sys.path.insert(0, events_dir)
    import metric as metric_mod  # the tree's own metric.py, for perf's exact expressions
    arch_root = os.path.join(events_dir, 'arch')
    rows, chunks = [], []
    arch_std = {}
    for arch in sorted(os.listdir(arch_root)):
        arch_dir = os.path.join(arch_root, arch)
        if arch == 'test' or not os.path.isdir(arch_dir):
            continue
        arch_std_events(arch_dir, metric_mod, arch_std)
        have_tables = set()
        for model in model_dirs(arch_dir):
            pool = Pool()
            lines = model_lines(arch_dir, model, arch_std, metric_mod, pool)
            if lines:
                have_tables.add(model)
                text = [f'P\t{len(pool.strings)}']
                text.extend(escape(s) for s in pool.strings)
                chunks.append((f'{arch}/{model}', '\n'.join(text + lines) + '\n'))
        mapfile = os.path.join(arch_dir, 'mapfile.csv')
        if not os.path.exists(mapfile):
            continue
        with open(mapfile, encoding='utf-8') as f:
            for i, row in enumerate(csv.reader(f)):
                # jevents.py skips the first row and '#' comments; rows without tables too.
                if i == 0 or not row or row[0].startswith('#') or row[2] not in have_tables:
                    continue
                rows.append('\t'.join(['R', arch, escape(row[0]), row[1], arch + '/' + row[2],
                                       row[3] if len(row) > 3 else '']))
    return rows, chunks


def model_lines(arch_dir, model, arch_std, metric_mod, pool):
    """E (event), M (metric) and G (metric group) lines of one model, sorted as perf sorts."""
    model_dir = os.path.join(arch_dir, model)
    events, metrics, groups = [], [], []
    for name in sorted(os.listdir(model_dir)):
        path = os.path.join(model_dir, name)
        if not os.path.isfile(path) or not name.endswith('.json'):
            continue
        if name == 'metricgroups.json':
            with open(path, encoding='utf-8') as f:
                for group, desc in sorted(json.load(f).items()):
                    groups.append(f'G\t{pool.id(group)}\t{pool.id(desc)}')
            continue
        for e in read_json(path, topic_of(name), arch_std, metric_mod):
            if e['name']:
                events.append(e)
            if e['metric_name']:
                metrics.append(e)
    events.sort(key=lambda e: (e['pmu'], e['name'], e['topic']))
    metrics.sort(key=lambda e: (e['pmu'], e['metric_name'], e['topic']))
    lines = []
    for e in events:
        fields = [e['name'], e['topic'], e['pmu'], e['event'], e['desc'], e['long_desc'],
                  e['unit'], e['compat'], e['counter']]
        lines.append('E\t' + '\t'.join(pool.id(x) for x in fields) + '\t' + event_flags(e))
    for e in metrics:
        fields = [e['metric_name'], e['metric_group'], e['metric_expr'], e['metric_threshold'],
                  e['desc'], e['long_desc'], e['unit'], e['pmu'], e['compat'],
                  e['default_metricgroup_name']]
        lines.append('M\t' + '\t'.join(pool.id(x) for x in fields) + '\t' + metric_flags(e))
    return lines + groups


def fnv1a64(data):
    """FNV-1a, 64-bit: a checksum the Rust side recomputes without a hashing crate."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def zstd(data):
    return subprocess.run(['zstd', '-' + ZSTD_LEVEL, '-T1', '-q', '-c', '--no-check'],
                          input=data, check=True, capture_output=True).stdout


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    events_dir, out_dir = sys.argv[1], sys.argv[2]
    rows, chunks = generate(os.path.abspath(events_dir))
    frames = [(model, text.encode('utf-8')) for model, text in chunks]
    compressed = [zstd(data) for _, data in frames]
    # C lines: model, compressed length, uncompressed length, in frame order.
    index = [f'C\t{model}\t{len(z)}\t{len(data)}'
             for (model, data), z in zip(frames, compressed)]
    header = ('\n'.join([FORMAT_LINE] + rows + index) + '\n').encode('utf-8')
    header_z = zstd(header)
    blob = header_z + b''.join(compressed)
    with open(os.path.join(out_dir, 'tables.txt.zst'), 'wb') as f:
        f.write(blob)
    text = header + b''.join(data for _, data in frames)
    digest = fnv1a64(text)
    source = os.environ.get('PMU_EVENTS_SOURCE', 'unknown')
    with open(os.path.join(out_dir, 'generated.rs'), 'w', encoding='utf-8') as f:
        f.write(f'// @generated by crates/pmu-events/gen/pmu_events_gen.py from {source}\n'
                '//! Provenance of `tables.txt.zst`; regenerate both with the generator.\n\n'
                '/// The kernel source the tables were generated from.\n'
                f'pub const SOURCE: &str = "{source}";\n'
                '/// FNV-1a (64-bit) of the uncompressed tables (checked by a unit test).\n'
                f'pub const TABLES_FNV1A64: u64 = {digest:#018x};\n'
                '/// Length of the uncompressed tables in bytes.\n'
                f'pub const TABLES_LEN: usize = {len(text)};\n'
                '/// Length of the first zstd frame (the rows and the chunk index).\n'
                f'pub const HEADER_ZST_LEN: usize = {len(header_z)};\n'
                '/// Length of the first frame uncompressed.\n'
                f'pub const HEADER_LEN: usize = {len(header)};\n'
                '/// The zstd-compressed tables: the header frame, then one frame per model.\n'
                'pub static TABLES_ZST: &[u8] = include_bytes!("tables.txt.zst");\n')
    print(f'{len(text)} bytes of tables, {len(blob)} compressed', file=sys.stderr)


if __name__ == '__main__':
    main()
