"""Records the bytes Scrapy 2.19's feed exporters write (JsonItemExporter,
JsonLinesItemExporter) for a set of items, per FEED_EXPORT_ENCODING and
FEED_EXPORT_INDENT, for tests/feeds_reference.rs.

    /work/venv-ref/bin/python tests/data/feeds/record.py > tests/data/feeds/cases.json
"""

import base64
import io
import json
import sys

import scrapy
from scrapy.exporters import JsonItemExporter, JsonLinesItemExporter

ITEMS = [
    {"name": "plain", "n": 1, "ok": True, "none": None},
    {"name": "caf\u00e9 \u00fcber", "city": "M\u00fcnchen"},
    {"text": "emoji \U0001f600 and CJK \u4e2d\u6587", "quote": 'say "hi" \\ back'},
    {"ctrl": "tab\tnl\ncr\rbell\u0007del\u007f", "empty": ""},
    {"floats": [1.0, 0.1, 1e20, 1.5e-05, -2.5, 123456789.125], "big": 12345678901234567890},
    {"nested": {"a": [1, {"b": []}], "c": {}}, "list": []},
]

CASES = [
    ("jsonlines", None, 0),
    ("jsonlines", "utf-8", 0),
    ("json", None, 0),
    ("json", "utf-8", 0),
    ("json", None, 2),
    ("json", "utf-8", 4),
]


def export(fmt, encoding, indent, items):
    buf = io.BytesIO()
    cls = JsonLinesItemExporter if fmt == "jsonlines" else JsonItemExporter
    exporter = cls(buf, encoding=encoding, indent=indent)
    exporter.start_exporting()
    for item in items:
        exporter.export_item(item)
    exporter.finish_exporting()
    return buf.getvalue()


out = {"scrapy": scrapy.__version__, "items": ITEMS, "cases": []}
for fmt, encoding, indent in CASES:
    for items in (ITEMS, []):
        data = export(fmt, encoding, indent, items)
        out["cases"].append(
            {
                "format": fmt,
                "encoding": encoding,
                "indent": indent,
                "empty": not items,
                "bytes_b64": base64.b64encode(data).decode("ascii"),
            }
        )
json.dump(out, sys.stdout, indent=1)
sys.stdout.write("\n")
