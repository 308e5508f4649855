#!/usr/bin/env python3
"""An independent evaluator of perf's metric expressions (the pmu-events tables' stored form),
written from perf's tools/perf/util/expr.l and expr.y, used by metric_oracle.rs to check
culprit's evaluator on the same counts.

Input (stdin, JSON): {"arch", "facts": {...}, "metrics": [{"pmu","name","expr"}],
"cases": [{"counts": {name: value}, "results": {"pmu/name": value | "nan" | "error"}}]}.
Prints one line per disagreement and a summary; exits 1 on any disagreement.
"""

import json
import math
import re
import sys

NAN = float("nan")
KEYWORDS = ["d_ratio", "max", "min", "if", "else", "source_count", "has_event",
            "strcmp_cpuid_str", "NaN"]
NUMBER = re.compile(r"([0-9]+\.?[0-9]*|[0-9]*\.?[0-9]+)(e-?[0-9]+)?")
SYMBOL = re.compile(r"(\\[-,=]|[0-9a-zA-Z_.:@?])+")
LITERAL = re.compile(r"#[0-9a-zA-Z_.\-]+")


class Fail(Exception):
    """perf's parser gives up: the metric has no value."""


def unescape(text):
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 < len(text):
                out.append(text[i + 1])
            i += 2
            continue
        out.append("0" if c == "?" else c)
        i += 1
    return "".join(out)


def tokens(text):
    """flex: at each point the longest match, ties to the earliest rule."""
    i, out = 0, []
    while i < len(text):
        candidates = []  # (length, -rule order, kind, text)
        for order, k in enumerate(KEYWORDS):
            if text.startswith(k, i):
                candidates.append((len(k), -order, "kw", k))
        m = LITERAL.match(text, i)
        if m:
            candidates.append((len(m.group(0)), -20, "lit", m.group(0)))
        m = NUMBER.match(text, i)
        if m and m.group(0):
            candidates.append((len(m.group(0)), -21, "num", m.group(0)))
        m = SYMBOL.match(text, i)
        if m:
            candidates.append((len(m.group(0)), -22, "id", m.group(0)))
        if candidates:
            n, _, kind, tok = max(candidates)
            if kind == "kw" and tok == "NaN":
                out.append(("num", NAN))
            elif kind == "num":
                out.append(("num", float(tok)))
            elif kind == "id":
                out.append(("id", unescape(unescape(tok))))
            else:
                out.append((kind, tok))
            i += n
        else:
            if text[i] in "|^&<>-+*/%(),":
                out.append(("op", text[i]))
            i += 1
    return out


BINARY = {"|": 1, "^": 2, "&": 3, "<": 4, ">": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}


def finite(v):
    return not (math.isnan(v) or math.isinf(v))


def apply(op, a, b):
    if op == "|":
        if finite(a) and finite(b):
            return 0.0 if a == 0 and b == 0 else 1.0
        if finite(a):
            return b if a == 0 else 1.0
        if finite(b):
            return a if b == 0 else 1.0
        return NAN
    if op == "&":
        if finite(a) and finite(b):
            return 1.0 if a != 0 and b != 0 else 0.0
        if finite(a):
            return b if a != 0 else 0.0
        if finite(b):
            return a if b != 0 else 0.0
        return NAN
    if op == "^":
        if finite(a) and finite(b):
            return 1.0 if (a == 0) != (b == 0) else 0.0
        return NAN
    if op == "/":
        if b == 0:
            return NAN
        return a / b
    if op == "%":
        if b == 0:
            raise Fail("remainder by zero")
        x, y = int(a), int(b)
        if y == 0:
            raise Fail("remainder by zero")
        return float(int(math.fmod(x, y)))
    if math.isnan(a) or math.isnan(b):
        return NAN
    if op == "<":
        return 1.0 if a < b else 0.0
    if op == ">":
        return 1.0 if a > b else 0.0
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    return a * b


class Evaluator:
    """Parses and evaluates in one pass (perf's bison actions compute values as they reduce)."""

    def __init__(self, text, env):
        self.toks = tokens(text)
        self.i = 0
        self.env = env

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, kind, value=None):
        k, v = self.peek()
        if k != kind or (value is not None and v != value):
            raise Fail("expected %s %s, got %s %s" % (kind, value, k, v))
        self.i += 1
        return v

    def run(self):
        v = self.if_expr()
        if self.i != len(self.toks):
            raise Fail("trailing tokens")
        return v

    def if_expr(self):
        then = self.binary(0)
        if self.peek() == ("kw", "if"):
            self.i += 1
            cond = self.binary(0)
            self.take("kw", "else")
            other = self.if_expr()
            return other if cond == 0 else then
        return then

    def binary(self, floor):
        lhs = self.unary()
        while True:
            k, v = self.peek()
            if k != "op" or v not in BINARY or BINARY[v] <= floor:
                return lhs
            self.i += 1
            rhs = self.binary(BINARY[v])
            lhs = apply(v, lhs, rhs)

    def unary(self):
        if self.peek() == ("op", "-"):
            self.i += 1
            return -self.unary()
        return self.primary()

    def pair(self):
        self.take("op", "(")
        a = self.binary(0)
        self.take("op", ",")
        b = self.binary(0)
        self.take("op", ")")
        return a, b

    def name_arg(self):
        self.take("op", "(")
        name = self.take("id")
        self.take("op", ")")
        return name

    def primary(self):
        k, v = self.peek()
        self.i += 1
        if k == "num":
            return v
        if k == "id":
            return self.env.value(v)
        if k == "lit":
            return self.env.literal(v)
        if (k, v) == ("op", "("):
            inner = self.if_expr()
            self.take("op", ")")
            return inner
        if k == "kw" and v == "d_ratio":
            a, b = self.pair()
            return 0.0 if b == 0 else a / b
        if k == "kw" and v == "min":
            a, b = self.pair()
            return a if a < b else b
        if k == "kw" and v == "max":
            a, b = self.pair()
            return a if a > b else b
        if k == "kw" and v == "source_count":
            return self.env.source_count(self.name_arg())
        if k == "kw" and v == "has_event":
            return 1.0 if self.name_arg() in self.env.counts else 0.0
        if k == "kw" and v == "strcmp_cpuid_str":
            return 1.0 if self.env.cpuid_matches(self.name_arg()) else 0.0
        raise Fail("unexpected %s %s" % (k, v))


def x86_cpuid_matches(pattern, cpuid):
    # perf's x86 strcmp_cpuid_str: a regex over the id; a pattern without a stepping
    # ignores the id's stepping.
    if pattern.count("-") < 3 and cpuid.count("-") >= 3:
        cpuid = cpuid[: cpuid.rfind("-")]
    return re.fullmatch(pattern, cpuid) is not None


class Env:
    def __init__(self, doc, pmu, counts):
        self.facts = doc["facts"]
        self.arch = doc["arch"]
        self.counts = counts
        self.metrics = {m["name"].lower(): m["expr"] for m in doc["metrics"] if m["pmu"] == pmu}
        self.cache = {}
        self.active = set()

    def literal(self, name):
        f = self.facts
        low = name.lower()
        if low == "#smt_on":
            return 1.0 if f["smt_on"] else 0.0
        if low == "#system_tsc_freq":
            return float(f["system_tsc_freq"])
        table = {"#num_cpus": f["num_cpus"], "#num_cpus_online": f["num_cpus_online"],
                 "#num_cores": f["num_cores"], "#num_dies": f["num_dies"],
                 "#num_packages": f["num_packages"], "#slots": f["slots"],
                 "#core_wide": 1.0 if f["core_wide"] else 0.0,
                 "#has_pmem": 1.0 if f["has_pmem"] else 0.0}
        if name not in table:
            raise Fail("unknown literal " + name)
        return float(table[name])

    def value(self, name):
        key = name.lower()
        if key in self.metrics:
            if key in self.cache:
                return self.cache[key]
            if key in self.active:
                return NAN
            self.active.add(key)
            try:
                v = Evaluator(self.metrics[key], self).run()
            except Fail:
                v = NAN
            self.active.discard(key)
            self.cache[key] = v
            return v
        return float(self.counts.get(name, NAN))

    def source_count(self, name):
        return 1.0 if name in self.counts else NAN

    def cpuid_matches(self, pattern):
        if self.arch != "x86":
            return pattern == self.facts["cpuid"]
        return x86_cpuid_matches(pattern, self.facts["cpuid"])


def same(expected, got):
    if expected == "error" or got == "error":
        return expected == got
    if isinstance(expected, str) or isinstance(got, str):
        return str(expected) == str(got)
    if math.isinf(expected) or math.isinf(got):
        return expected == got
    return abs(expected - got) <= 1e-9 * max(1.0, abs(expected), abs(got))


def main():
    doc = json.load(sys.stdin)
    compared, bad = 0, 0
    for case in doc["cases"]:
        counts = case["counts"]
        for m in doc["metrics"]:
            key = m["pmu"] + "/" + m["name"]
            if key not in case["results"]:
                continue
            env = Env(doc, m["pmu"], counts)
            env.active.add(m["name"].lower())
            try:
                v = Evaluator(m["expr"], env).run()
                got = "nan" if math.isnan(v) else v
            except Fail:
                got = "error"
            expected = case["results"][key]
            compared += 1
            if not same(expected, got):
                bad += 1
                print("DIFFER %s: culprit %r, python %r; expr %s" % (key, expected, got, m["expr"]))
    print("compared %d, differ %d" % (compared, bad))
    sys.exit(1 if bad or compared == 0 else 0)


if __name__ == "__main__":
    main()
