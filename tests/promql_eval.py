"""A small evaluator of the PromQL that the shipped alerting rules use
(docker/prometheus-rules.yml), over scrapes of a /metrics page that a test
takes itself, so that a test can say whether a rule's expression fires on
a real sidecar's metrics without a Prometheus (the project ships none, nor
promtool).

It implements what the rules need, as Prometheus defines it, and refuses
the rest (ValueError naming the construct), so that a rule rewritten with
something new breaks the test instead of being misread:

- numbers; instant selectors `name` and `name{label="v",...}` (=, !=, =~,
  !~), read from the last scrape (the evaluation time); range selectors
  `name[6h]` over the scrapes within the range;
- rate() and increase(): over a range's scrapes, the sum of the increases
  between consecutive scrapes (a drop is a counter reset: the new value is
  the increase), divided by the time between the first and the last for
  rate(). Prometheus extrapolates to the range's edges; here nothing is
  extrapolated, which leaves the ratio of two rates of series scraped
  together unchanged and makes an increase a lower bound of Prometheus';
- time(); sum, max, min, avg and count, with `by (...)` or
  `without (...)` before or after the argument;
- the binary operators * / + - (arithmetic, dropping the metric name),
  the comparisons > < >= <= == != (filters: the left side's samples for
  which it holds), and, unless and or, with PromQL's precedence; vectors
  match one-to-one on all their labels but the name, or on (...) /
  ignoring (...) the labels listed.

The result is {labels: value} for a vector (labels a frozenset of (name,
value) pairs), or a float for a scalar; an alert's expression fires when
its vector is not empty.
"""

import math
import operator
import re

_TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<range>\[[0-9]+[smhdwy]\])
  | (?P<number>[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<op>==|!=|>=|<=|=~|!~|[-+*/%^<>(){},=])
""", re.VERBOSE)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_ARITH = {"*": operator.mul, "/": lambda a, b: a / b if b else math.copysign(math.inf, a) if a else math.nan,
          "+": operator.add, "-": operator.sub}
_COMPARE = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne}
_AGGREGATE = {"sum": sum, "max": max, "min": min, "avg": lambda v: sum(v) / len(v), "count": len}
# Lowest to highest precedence, each level left-associative.
_LEVELS = [("or",), ("and", "unless"), tuple(_COMPARE), ("+", "-"), ("*", "/")]


def _tokens(text):
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"promql: cannot read {text[pos:pos + 20]!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group()))
    return out


class _Parser:
    def __init__(self, text):
        self.toks, self.i = _tokens(text), 0

    def peek(self):
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def kind(self):
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def take(self, want=None):
        if self.i >= len(self.toks):
            raise ValueError(f"promql: unexpected end, want {want or 'more'}")
        tok = self.toks[self.i][1]
        if want is not None and tok != want:
            raise ValueError(f"promql: {tok!r} where {want!r} was expected")
        self.i += 1
        return tok

    def parse(self):
        node = self.binary(0)
        if self.i != len(self.toks):
            raise ValueError(f"promql: unexpected {self.peek()!r}")
        return node

    def binary(self, level):
        if level == len(_LEVELS):
            return self.primary()
        left = self.binary(level + 1)
        while self.peek() in _LEVELS[level]:
            op = self.take()
            if self.peek() == "bool":
                raise ValueError("promql: the bool modifier is not supported")
            match = None
            if self.peek() in ("on", "ignoring"):
                match = (self.take(), self.labels())
            if self.peek() in ("group_left", "group_right"):
                raise ValueError(f"promql: {self.peek()} is not supported")
            left = ("binary", op, match, left, self.binary(level + 1))
        return left

    def labels(self):
        self.take("(")
        names = []
        while self.peek() != ")":
            names.append(self.take())
            if self.peek() == ",":
                self.take()
        self.take(")")
        return tuple(names)

    def primary(self):
        kind, tok = self.kind(), self.peek()
        if kind == "number":
            self.take()
            return ("scalar", float(tok))
        if tok == "(":
            self.take()
            node = self.binary(0)
            self.take(")")
            return node
        if kind != "ident":
            raise ValueError(f"promql: unexpected {tok!r}")
        self.take()
        if tok in _AGGREGATE:
            grouping = None
            if self.peek() in ("by", "without"):
                grouping = (self.take(), self.labels())
            self.take("(")
            arg = self.binary(0)
            self.take(")")
            if self.peek() in ("by", "without"):
                grouping = (self.take(), self.labels())
            return ("aggregate", tok, grouping, arg)
        if self.peek() == "(":
            self.take()
            if tok == "time":
                self.take(")")
                return ("time",)
            if tok not in ("rate", "increase"):
                raise ValueError(f"promql: function {tok}() is not supported")
            arg = self.primary()
            self.take(")")
            if arg[0] != "range":
                raise ValueError(f"promql: {tok}() wants a range selector")
            return ("counter", tok, arg)
        matchers = []
        if self.peek() == "{":
            self.take()
            while self.peek() != "}":
                name, op, value = self.take(), self.take(), self.take()
                if op not in ("=", "!=", "=~", "!~") or not value.startswith('"'):
                    raise ValueError(f"promql: matcher {name}{op}{value}")
                matchers.append((name, op, bytes(value[1:-1], "utf-8").decode("unicode_escape")))
                if self.peek() == ",":
                    self.take()
            self.take("}")
        node = ("selector", tok, tuple(matchers))
        if self.kind() == "range":
            rng = self.take()
            return ("range", node, int(rng[1:-2]) * _UNITS[rng[-2]])
        return node


def _matches(name, labels, sel):
    _, want, matchers = sel
    if name != want:
        return False
    for label, op, value in matchers:
        have = labels.get(label, "")
        ok = {"=": have == value, "!=": have != value,
              "=~": re.fullmatch(value, have) is not None, "!~": re.fullmatch(value, have) is None}[op]
        if not ok:
            return False
    return True


def _key(labels, drop_name=True):
    return frozenset((k, v) for k, v in labels.items() if not (drop_name and k == "__name__"))


def _signature(key, match):
    if match is None:
        return frozenset(kv for kv in key if kv[0] != "__name__")
    how, names = match
    if how == "on":
        return frozenset(kv for kv in key if kv[0] in names)
    return frozenset(kv for kv in key if kv[0] not in names and kv[0] != "__name__")


class Evaluator:
    """Evaluates expressions at the time of the last of scrapes, a list of
    (unix time, samples) in time order, samples as
    sidecar_helpers.scrape returns them: [(name, {label: value}, value)]."""

    def __init__(self, scrapes):
        if not scrapes:
            raise ValueError("promql: no scrape")
        self.scrapes = sorted(scrapes, key=lambda s: s[0])
        self.now = self.scrapes[-1][0]

    def eval(self, text):
        return self._eval(_Parser(text).parse())

    def _eval(self, node):
        kind = node[0]
        if kind == "scalar":
            return node[1]
        if kind == "time":
            return float(self.now)
        if kind == "selector":
            return {_key({**labels, "__name__": name}, drop_name=False): v
                    for name, labels, v in self.scrapes[-1][1] if _matches(name, labels, node)}
        if kind == "range":
            raise ValueError("promql: a range selector outside rate() or increase()")
        if kind == "counter":
            return self._counter(node[1], node[2])
        if kind == "aggregate":
            return self._aggregate(node[1], node[2], self._eval(node[3]))
        return self._binary(node[1], node[2], self._eval(node[3]), self._eval(node[4]))

    def _counter(self, fn, rng):
        _, sel, seconds = rng
        points = {}
        for t, samples in self.scrapes:
            if t <= self.now - seconds:
                continue
            for name, labels, v in samples:
                if _matches(name, labels, sel):
                    points.setdefault(_key(labels), []).append((t, v))
        out = {}
        for key, pts in points.items():
            if len(pts) < 2:
                continue  # Prometheus needs two samples in the range
            inc = sum(b - a if b >= a else b for (_, a), (_, b) in zip(pts, pts[1:]))
            out[key] = inc / (pts[-1][0] - pts[0][0]) if fn == "rate" else inc
        return out

    @staticmethod
    def _aggregate(fn, grouping, vector):
        if not isinstance(vector, dict):
            raise ValueError(f"promql: {fn}() of a scalar")
        groups = {}
        for key, v in vector.items():
            if grouping is None:
                g = frozenset()
            elif grouping[0] == "by":
                g = frozenset(kv for kv in key if kv[0] in grouping[1])
            else:
                g = frozenset(kv for kv in key if kv[0] not in grouping[1] and kv[0] != "__name__")
            groups.setdefault(g, []).append(v)
        return {g: float(_AGGREGATE[fn](vs)) for g, vs in groups.items()}

    @staticmethod
    def _binary(op, match, left, right):
        lvec, rvec = isinstance(left, dict), isinstance(right, dict)
        if op in ("and", "unless", "or"):
            if not (lvec and rvec):
                raise ValueError(f"promql: {op} between a scalar and a vector")
            rsigs = {_signature(k, match) for k in right}
            if op == "and":
                return {k: v for k, v in left.items() if _signature(k, match) in rsigs}
            if op == "unless":
                return {k: v for k, v in left.items() if _signature(k, match) not in rsigs}
            lsigs = {_signature(k, match) for k in left}
            return {**left, **{k: v for k, v in right.items() if _signature(k, match) not in lsigs}}
        compare = op in _COMPARE
        fn = _COMPARE[op] if compare else _ARITH[op]
        if not lvec and not rvec:
            if compare:
                raise ValueError("promql: a comparison of two scalars needs bool")
            return fn(left, right)

        def out_key(k):  # arithmetic drops the metric name, a filter keeps the sample as it is
            return k if compare else frozenset(kv for kv in k if kv[0] != "__name__")

        if lvec and not rvec:
            return {out_key(k): (v if compare else fn(v, right)) for k, v in left.items() if not compare or fn(v, right)}
        if rvec and not lvec:
            return {out_key(k): (v if compare else fn(left, v)) for k, v in right.items() if not compare or fn(left, v)}
        by_sig = {}
        for k, v in right.items():
            sig = _signature(k, match)
            if sig in by_sig:
                raise ValueError("promql: many-to-one matching (two right-hand samples for one signature)")
            by_sig[sig] = v
        out = {}
        for k, v in left.items():
            sig = _signature(k, match)
            if sig not in by_sig:
                continue
            if compare:
                if fn(v, by_sig[sig]):
                    out[k] = v
            else:  # one-to-one: the labels matched on (all but the name by default)
                out[sig] = fn(v, by_sig[sig])
        return out


def alert_expr(rules_text, alert):
    """The expression of the named alert in a Prometheus rule file's text,
    read as YAML would (a plain scalar, or a | or > block scalar), without a
    YAML library: the venv has none."""
    lines = rules_text.splitlines()
    for i, line in enumerate(lines):
        if re.fullmatch(rf"\s*- alert:\s*{re.escape(alert)}\s*", line):
            indent = len(line) - len(line.lstrip()) + 2
            for j in range(i + 1, len(lines)):
                m = re.fullmatch(r"(\s*)expr:\s*(.*)", lines[j])
                if m and len(m.group(1)) == indent:
                    head = m.group(2).strip()
                    if head not in ("|", ">", "|-", ">-"):
                        return head
                    body = []
                    for k in range(j + 1, len(lines)):
                        if lines[k].strip() and len(lines[k]) - len(lines[k].lstrip()) <= indent:
                            break
                        body.append(lines[k].strip())
                    return "\n".join(body).strip()
                if lines[j].strip().startswith("- ") and len(lines[j]) - len(lines[j].lstrip()) < indent:
                    break
    raise ValueError(f"no alert {alert} with an expr in the rules")
