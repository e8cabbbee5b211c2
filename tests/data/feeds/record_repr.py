"""Records CPython's repr() of JSON-shaped values into python_repr.json: what trawl's
CSV feed writes for a list or dict value (Scrapy's CsvItemExporter writes str(value)).

Run with the CPython whose answers are wanted (3.11.7 recorded):
    python3 tests/data/feeds/record_repr.py
"""
import json
import sys
from pathlib import Path

CHARS = (
    ["\0", "\t", "\n", "\r", "\x1f", " ", "~", "\x7f", "\x80", "\x9f", "\xa0", "\xad", "é", "ÿ",
     "\u0600", "\u061c", "\u06dd", "\u070f", "\u0890", "\u08e2", "\u1680", "\u180e", "\u2000",
     "\u200b", "\u200f", "\u2028", "\u2029", "\u202a", "\u202f", "\u205f", "\u2060", "\u2066",
     "\u3000", "\ue000", "\uf8ff", "\ufeff", "\ufff9", "\ufffd", "\U000110bd", "\U00013430",
     "\U0001bca0", "\U0001d173", "\U0001f600", "\U000e0001", "\U000e0041", "\U000f0000",
     "\U0010fffd", "中", "\\", "'", '"']
)
VALUES = (
    [c for c in CHARS]
    + ["it's", 'say "hi"', "both ' and \"", "", "a\\b", "tab\there"]
    + [None, True, False, 0, -7, 2**63, 1.0, 0.1, 1e20, 1e-05, 1.5e16, -0.0, 123456.789]
    + [[], {}, [1, "a", None, [True]], {"k": "v", "n": [1, 2.5], "d": {}}, ["it's", 'q"']]
)

cases = [{"value": v, "repr": repr(v)} for v in VALUES]
out = {
    "description": "repr() of JSON-shaped Python values",
    "generator": "tests/data/feeds/record_repr.py",
    "versions": {"python": sys.version.split()[0]},
    "count": len(cases),
    "cases": cases,
}
Path(__file__).with_name("python_repr.json").write_text(
    json.dumps(out, ensure_ascii=False, indent=1) + "\n"
)
