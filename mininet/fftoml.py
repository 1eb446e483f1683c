"""TOML for the configs the harness generates: read with the standard library's ``tomllib``,
change as dicts (dotted keys such as ``cp.min_sources``), write with :func:`dumps`.

Python 3.11 reads TOML but cannot write it, and this is all the writing the controller's and
the agent's configs need: strings, booleans, integers, floats, arrays, tables and arrays of
tables, every string escaped as JSON escapes it (a subset of TOML's basic strings).

Do not name this module ``toml``: it would shadow the python3-toml package.
"""

import copy
import json
import math
import re
import tomllib

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(k):
    return k if _BARE_KEY.fullmatch(k) else json.dumps(k)


def _is_table_array(v):
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def value(v):
    """One TOML value (inline tables for dicts inside arrays)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"no TOML value for {type(v).__name__} {v!r}")


def dumps(doc):
    """A TOML document for the dict `doc` (key order kept; tables after the keys they follow)."""
    lines = []

    def table(d, path, header):
        scalars = [(k, v) for k, v in d.items()
                   if not isinstance(v, dict) and not _is_table_array(v)]
        if header:
            lines.extend(["", header] if lines else [header])
        lines.extend(f"{_key(k)} = {value(v)}" for k, v in scalars)
        for k, v in d.items():
            sub = path + [_key(k)]
            if isinstance(v, dict):
                # An empty or keys-only table needs its header; one holding only tables does not.
                only_tables = v and all(isinstance(x, dict) or _is_table_array(x)
                                        for x in v.values())
                table(v, sub, None if only_tables else f"[{'.'.join(sub)}]")
            elif _is_table_array(v):
                for item in v:
                    table(item, sub, f"[[{'.'.join(sub)}]]")

    table(doc, [], None)
    return "\n".join(lines) + "\n"


def set_dotted(doc, dotted, v):
    """Sets `doc[a][b][c] = v` for ``"a.b.c"``, creating tables on the way."""
    *tables, last = dotted.split(".")
    for t in tables:
        doc = doc.setdefault(t, {})
        if not isinstance(doc, dict):
            raise ValueError(f"{dotted}: {t} is not a table")
    doc[last] = v


def get_dotted(doc, dotted, default=None):
    for part in dotted.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return default
        doc = doc[part]
    return doc


def parse_value(text):
    """A TOML value from its text; text that is not one (``cubic``) is a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_sets(text):
    """``"section.key=value,..."`` (FF_AGENT_SET, FF_CONTROLLER_SET) -> {dotted key: value}."""
    out = {}
    for item in filter(None, (x.strip() for x in (text or "").split(","))):
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise ValueError(f"{item!r}: expected key=value")
        out[k.strip()] = parse_value(v.strip())
    return out


def with_sets(doc, sets):
    """A deep copy of `doc` with every dotted key of `sets` set."""
    out = copy.deepcopy(doc)
    for k, v in sets.items():
        set_dotted(out, k, v)
    return out
