"""Records the bytes Scrapy's CSV feed (`FEEDS` with `"format": "csv"`, i.e.
scrapy.exporters.CsvItemExporter as the FeedExporter builds it) writes for a set of
item lists, per FEED_EXPORT_FIELDS and FEED_EXPORT_ENCODING, for
tests/feeds_reference.rs (`csv_feeds_match_scrapys_csv_exporter_byte_for_byte`).

Each case is run through a real crawl: a spider whose `start()` yields the items, with
FEEDS = {<file>: {"format": "csv", "overwrite": True}} and the case's settings, all
cases as concurrent crawlers of one CrawlerProcess. The bytes of the written file are
recorded, and checked against CsvItemExporter called directly with the arguments the
FeedExporter passes (fields_to_export, encoding, indent).

Output (stdout, JSON): {"scrapy", "versions", "cases": [...]}, a case being
    name      a short label
    items     the items, in order (JSON objects; key order is the item's order)
    fields    the FEED_EXPORT_FIELDS setting: null (unset), a list, or a string
    encoding  the FEED_EXPORT_ENCODING setting (null: Scrapy's default)
    output    the file's bytes, decoded as UTF-8 (every case here is UTF-8;
              a case that is not would be written as "output_b64" instead)
    export_errors  (only when Scrapy raised) [item index, exception type] for each
              item whose export_item raised; the FeedExporter logs the error and
              goes on, so that item is missing from the file

    python3 -m venv /work/venv-ref
    /work/venv-ref/bin/pip install scrapy==2.19.0
    /work/venv-ref/bin/python tests/data/feeds/record_csv.py > tests/data/feeds/csv_cases.json
"""

import base64
import io
import json
import logging
import math
import platform
import sys
import tempfile
from pathlib import Path

import itemadapter
import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.exporters import CsvItemExporter
from scrapy.settings import Settings
from scrapy.utils.conf import feed_complete_default_values_from_settings

SAME_KEYS = [
    {"name": "Widget", "price": "9.99", "url": "http://example.com/1"},
    {"name": "Gadget", "price": "19", "url": "http://example.com/2"},
    {"name": "Doohickey", "price": "0", "url": "http://example.com/3"},
]

KEY_ORDER = [
    {"a": "a1", "b": "b1", "c": "c1"},
    {"c": "c2", "a": "a2", "b": "b2"},
    {"b": "b3", "c": "c3", "a": "a3"},
]

DIFFERING_KEYS = [
    {"a": "a1", "b": "b1"},
    {"b": "b2", "c": "c2"},
    {"c": "c3"},
    {"a": "a4", "b": "b4", "c": "c4", "d": "d4"},
]

EMPTY_ITEMS = [{"a": "1", "b": "2"}, {}, {"a": "3"}, {}]

FIRST_ITEM_EMPTY = [{}, {"a": "1", "b": "2"}, {}]

SINGLE_COLUMN = [{"only": "x"}, {"only": ""}, {"only": None}, {}, {"other": "y"}]

TEXT = [
    {
        "plain": "hello world",
        "unicode": "caf\u00e9 \u00fcber M\u00fcnchen",
        "emoji_cjk": "emoji \U0001f600 and CJK \u4e2d\u6587",
        "comma": "a,b",
        "quote": 'say "hi"',
        "apostrophe": "it's",
        "backslash": "back\\slash",
        "newline": "line1\nline2",
        "cr": "a\rb",
        "crlf": "a\r\nb",
        "tab": "a\tb",
        "spaces": "  padded  ",
        "empty": "",
        "ctrl": "bell\u0007del\u007f",
        "semicolon": "a;b",
        "mixed": 'x, "y"\nz',
    },
    {
        "plain": '"',
        "unicode": "\u00a0nbsp\u2028ls",
        "emoji_cjk": "\U0001f600",
        "comma": ",",
        "quote": '""',
        "apostrophe": "'",
        "backslash": "\\",
        "newline": "\n",
        "cr": "\r",
        "crlf": "\r\n",
        "tab": "\t",
        "spaces": " ",
        "empty": "",
        "ctrl": "\u001b[0m",
        "semicolon": ";",
        "mixed": '"a,b"',
    },
]

HEADER_QUOTING = [
    {"a,b": "1", 'say "x"': "2", "multi\nline": "3", "caf\u00e9": "4", " sp ": "5"},
    {"a,b": "6", 'say "x"': "7", "multi\nline": "8", "caf\u00e9": "9", " sp ": "10"},
]

INTS = [
    {
        "zero": 0,
        "one": 1,
        "neg": -42,
        "big": 12345678901234567890,
        "i64_min": -9223372036854775808,
    },
    {"zero": 7, "one": -1, "neg": 0, "big": 18446744073709551615, "i64_min": 1},
]

FLOATS_PLAIN = [
    {
        "one": 1.0,
        "tenth": 0.1,
        "neg": -2.5,
        "frac": 123456789.125,
        "zero": 0.0,
        "neg_zero": -0.0,
        "e15": 1e15,
        "small": 0.0001,
        "third": 1 / 3,
    },
]

# repr() switches to exponent notation at 1e16; the exponent has a sign and at
# least two digits.
FLOATS_EXPONENT = [
    {
        "e16": 1e16,
        "e20": 1e20,
        "neg_e22": -2.5e22,
        "e100": 1e100,
        "max": 1.7976931348623157e308,
        "e_10": 1e-10,
        "e_300": 1.5e-300,
        "tiny": 5e-324,
    },
]

# Below 1e-4 repr() uses exponent notation (1e-05), with a two-digit exponent.
FLOATS_SMALL_EXPONENT = [
    {
        "e_5": 1e-05,
        "small": 1.5e-05,
        "e_7": -1e-07,
        "e_9": 3.25e-09,
    },
]

BOOLEANS = [{"t": True, "f": False}, {"t": False, "f": True}]

NONE = [{"a": None, "b": "x", "c": None}, {"a": "y", "b": None, "c": None}]

LISTS_OF_STRINGS = [
    {
        "two": ["a", "b"],
        "one": ["x"],
        "empty": [],
        "commas": ["a,b", 'c"d'],
        "unicode": ["caf\u00e9", "\u4e2d\u6587"],
        "newline": ["l1\nl2", "z"],
        "blank": ["", ""],
    },
]

LISTS_MIXED = [
    {
        "ints": [1, 2],
        "floats": [1.0, 0.1, 1e20],
        "mixed": ["a", 1],
        "none": [None],
        "with_none": ["a", None],
        "bools": [True, False],
        "nested": [["a", "b"]],
        "dicts": [{"a": 1}],
        "unicode": ["caf\u00e9", 1],
    },
]

DICTS = [
    {
        "simple": {"a": 1},
        "empty": {},
        "nested": {"a": [1, {"b": []}], "c": {}},
        "strings": {"k": "v", "q": "it's", "u": "caf\u00e9"},
        "scalars": {"t": True, "n": None, "f": 1.5},
    },
]

# (name, items, FEED_EXPORT_FIELDS (None: unset), FEED_EXPORT_ENCODING)
CASES = [
    ("same_keys", SAME_KEYS, None, None),
    ("same_keys", SAME_KEYS, None, "utf-8"),
    ("key_order", KEY_ORDER, None, None),
    ("differing_keys", DIFFERING_KEYS, None, None),
    ("empty_items", EMPTY_ITEMS, None, None),
    ("first_item_empty", FIRST_ITEM_EMPTY, None, None),
    ("single_column", SINGLE_COLUMN, None, None),
    ("text", TEXT, None, None),
    ("text", TEXT, None, "utf-8"),
    ("header_quoting", HEADER_QUOTING, None, None),
    ("header_quoting", HEADER_QUOTING, None, "utf-8"),
    ("ints", INTS, None, None),
    ("floats_plain", FLOATS_PLAIN, None, None),
    ("floats_exponent", FLOATS_EXPONENT, None, None),
    ("floats_small_exponent", FLOATS_SMALL_EXPONENT, None, None),
    ("booleans", BOOLEANS, None, None),
    ("none", NONE, None, None),
    ("lists_of_strings", LISTS_OF_STRINGS, None, None),
    ("lists_mixed", LISTS_MIXED, None, None),
    ("dicts", DICTS, None, None),
    ("no_items", [], None, None),
    ("no_items", [], None, "utf-8"),
    ("no_items_fields", [], ["a", "b"], None),
    ("fields_subset_reordered", SAME_KEYS, ["price", "name"], None),
    ("fields_missing_name", SAME_KEYS, ["name", "missing", "url"], None),
    ("fields_differing_keys", DIFFERING_KEYS, ["c", "a", "d"], None),
    ("fields_key_order", KEY_ORDER, ["c", "b", "a"], None),
    ("fields_text", TEXT, ["unicode", "comma", "newline"], "utf-8"),
    ("fields_header_quoting", HEADER_QUOTING, ["caf\u00e9", "a,b"], None),
    ("fields_single_column", SINGLE_COLUMN, ["only"], None),
    ("fields_first_item_empty", FIRST_ITEM_EMPTY, ["a", "b"], None),
    ("fields_empty_list", SAME_KEYS, [], None),
    ("fields_string", SAME_KEYS, "price,name", None),
    ("fields_string_spaces", SAME_KEYS, "price, name", None),
    ("fields_json_string", SAME_KEYS, '["url", "name"]', None),
]


def check_json_roundtrip(items):
    """The Rust test reads the items back from JSON: they must survive it unchanged
    (same values, same int/float types, same key order)."""

    def same(a, b):
        if type(a) is not type(b):
            return False
        if isinstance(a, dict):
            return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, float):
            return a == b and math.copysign(1, a) == math.copysign(1, b)
        return a == b

    back = json.loads(json.dumps(items))
    assert same(items, back), items


def direct(items, fields, encoding):
    """CsvItemExporter with the arguments FeedExporter gives it for these settings."""
    settings = Settings()
    if fields is not None:
        settings.set("FEED_EXPORT_FIELDS", fields)
    if encoding is not None:
        settings.set("FEED_EXPORT_ENCODING", encoding)
    opts = feed_complete_default_values_from_settings(
        {"format": "csv"}, settings
    )
    buf = io.BytesIO()
    exporter = CsvItemExporter(
        buf,
        fields_to_export=opts["fields"],
        encoding=opts["encoding"],
        indent=opts["indent"],
        **opts["item_export_kwargs"],
    )
    errors = []
    exporter.start_exporting()
    for i, item in enumerate(items):
        # FeedExporter.item_scraped runs in a signal handler: an exception is logged
        # and the crawl goes on with the next item.
        try:
            exporter.export_item(dict(item))
        except Exception as e:  # noqa: BLE001
            errors.append([i, type(e).__name__])
    exporter.finish_exporting()
    return buf.getvalue(), errors


def spider_for(index, items, fields, encoding, path):
    custom = {
        "FEEDS": {path.as_uri(): {"format": "csv", "overwrite": True}},
    }
    if fields is not None:
        custom["FEED_EXPORT_FIELDS"] = fields
    if encoding is not None:
        custom["FEED_EXPORT_ENCODING"] = encoding

    class CaseSpider(scrapy.Spider):
        name = f"csv_case_{index}"
        custom_settings = custom

        async def start(self):
            for item in items:
                # A fresh dict per run: the exporter keeps a live view of the
                # first item's keys.
                yield dict(item)

    return CaseSpider


def main():
    for _, items, _, _ in CASES:
        check_json_roundtrip(items)
    tmp = Path(tempfile.mkdtemp(prefix="trawl-csv-feeds-"))
    process = CrawlerProcess(
        settings={
            "LOG_LEVEL": "ERROR",
            "LOG_INSTALL_ROOT_HANDLER": False,
            "TELNETCONSOLE_ENABLED": False,
            "ROBOTSTXT_OBEY": False,
        },
    )
    logging.getLogger("scrapy").setLevel(logging.ERROR)
    paths = []
    for i, (_, items, fields, encoding) in enumerate(CASES):
        path = tmp / f"case{i}.csv"
        paths.append(path)
        process.crawl(spider_for(i, items, fields, encoding, path))
    process.start()

    out = {
        "scrapy": scrapy.__version__,
        "versions": {
            "scrapy": scrapy.__version__,
            "itemadapter": itemadapter.__version__,
            "python": platform.python_version(),
        },
        "cases": [],
    }
    for (name, items, fields, encoding), path in zip(CASES, paths):
        data = path.read_bytes()
        want, errors = direct(items, fields, encoding)
        assert data == want, (name, data, want)
        case = {
            "name": name,
            "items": items,
            "fields": fields,
            "encoding": encoding,
        }
        if errors:
            case["export_errors"] = errors
        try:
            case["output"] = data.decode("utf-8")
        except UnicodeDecodeError:
            case["output_b64"] = base64.b64encode(data).decode("ascii")
        out["cases"].append(case)
        path.unlink()
    tmp.rmdir()
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
