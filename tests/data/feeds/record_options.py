"""Records what Scrapy's FeedExporter does with the FEEDS options beyond the JSON /
CSV bytes of cases.json and csv_cases.json: the XML exporter, store_empty, URI
placeholders, batches, item_export_kwargs, postprocessing plugins, unknown storage
schemes / stdout / the -o command-line option, item filters, and overwrite.

Every case is a real crawl, one per child process (so that logs, stdout and the clock
belong to that case alone): a spider whose `start()` yields the case's items, the
case's settings as the spider's custom_settings (FEEDS among them), run by a
CrawlerProcess in a fresh directory. The files Scrapy wrote there are recorded (name
relative to that directory, and bytes), with the feed-export log lines, the crawl's
feedexport stats and what went to stdout. A few cases run the `scrapy runspider`
command itself (-o / -O / -a).

    python3 -m venv /work/venv-ref
    /work/venv-ref/bin/pip install scrapy==2.19.0
    /work/venv-ref/bin/python tests/data/feeds/record_options.py > tests/data/feeds/options_cases.json

About 240 crawls, one process each (a few minutes). `record_options.py --only
xml,batches` records only the groups named (for checking; not the committed file).

Output (stdout, JSON; keys sorted, except inside `items` and `settings`, which keep
the order given to Scrapy): {"versions", "base_settings" (the CrawlerProcess settings
of every crawl), "case_counts", "time_formats", "cli_params" (what
feed_process_params_from_cli returns for -o / -O values), "groups": {group: [case,
...]}}. Groups: xml, store_empty, uri_placeholders, batches, item_export_kwargs,
postprocessing, unknown_schemes, item_filter, overwrite. A case:

    name        unique within its group
    spider      {"name", "attrs" (class attributes), "kwargs" (spider arguments,
                as process.crawl(spider, **kwargs) / `-a NAME=VALUE` pass them)}
    settings    the spider's custom_settings; in FEEDS keys "{dir}" stands for the
                case's directory (an absolute path; the crawl's cwd is that directory)
    items       yielded in order; {"__item_class__": C, "fields": {...}} is an
                instance of class C defined in this file (scrapy.Item or dataclass)
    clock       (optional) the instants datetime.now() returns inside
                scrapy.extensions.feedexport, in call order (the last one repeats):
                the clock is fixed so %(time)s / %(batch_time)s names are exact;
                only Scrapy's own formatting code turns them into names
    clock_calls (with clock) how many times Scrapy read the clock
    pre_files   (optional) files put in {dir} before the crawl
    files       {name: text} of every file in {dir} after the crawl (UTF-8)
    files_b64   {name: base64} for files that are not UTF-8
    decompressed (postprocessing) {name: text after undoing every plugin}
    gzip_header (gzip cases) the gzip member header fields Python's GzipFile wrote
    logs        "LEVEL logger: message" lines of the crawl: every record of
                scrapy.extensions.feedexport and every WARNING or above (a record
                with an exception gets " | ExcType: message"); {dir} for the path,
                "0x?" for object addresses
    stats       the crawl's feedexport/* stats, item_scraped_count, finish_reason
    feed_exporter_enabled  whether the FeedExporter extension was enabled
    stdout      (when the crawl wrote to stdout) the bytes as text
    notes       what the case shows, where it is not obvious
    time_dependent  (true) the case reads the real clock: the time parts of names
                are replaced by <time> / <batch_time> (name_regex is the real
                name's pattern); gzip MTIME and the compressed bytes are recorded
                as "time-dependent"
    decompress_error, decompressed_partial  (postprocessing) when the file is not
                a complete stream: the decoder's error, and base64 of what a
                streaming decoder gets out of it
    cli         (command-line cases: `scrapy runspider spider.py ARGS` in {dir},
                spider_source being spider.py) {"argv", "extra_argv" (the -s
                options added to every run), "exit_code", "stderr_lines" (the
                WARNING / ERROR and feed-export log lines, argparse's error line)}

How Scrapy computes the placeholders (scrapy/extensions/feedexport.py,
FeedExporter._get_uri_params, Scrapy 2.19.0):

    params = {k: getattr(spider, k) for k in dir(spider)}
    utc_now = datetime.now(tz=timezone.utc)
    params["time"] = utc_now.replace(microsecond=0).isoformat().replace(":", "-")
    params["batch_time"] = utc_now.isoformat().replace(":", "-")
    params["batch_id"] = slot.batch_id + 1 if slot is not None else 1
    ...
    new_params = uripar_function(params, spider)
    return new_params if new_params is not None else params

The `-o` / `-O` mapping is scrapy/utils/conf.py feed_process_params_from_cli: each
value is split with rsplit(":", 1); when the part after the last ":" is a known
format, the URI is the part before it and "-" becomes "stdout:"; otherwise the
whole value is the URI and the format is its file extension (Path(v).suffix),
which must be a known format (UsageError otherwise).
"""

import base64
import bz2
import copy
import dataclasses
import datetime as dt
import gzip
import inspect
import io
import json
import logging
import lzma
import math
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import scrapy
from itemadapter import ItemAdapter
from scrapy.extensions.feedexport import ItemFilter

HERE = Path(__file__).resolve().parent
SELF = "record_options"  # the module name the child processes import this file as

BASE_SETTINGS = {
    "LOG_LEVEL": "INFO",
    "LOG_INSTALL_ROOT_HANDLER": False,
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    "MEMUSAGE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
}


# ---------------------------------------------------------------------------
# Objects the feeds refer to by dotted path ("record_options.<name>")
# ---------------------------------------------------------------------------


class Product(scrapy.Item):
    name = scrapy.Field()
    price = scrapy.Field()


class Offer(scrapy.Item):
    name = scrapy.Field()
    discount = scrapy.Field()


@dataclasses.dataclass
class Review:
    name: str
    stars: int


ITEM_CLASSES = {"Product": Product, "Offer": Offer, "Review": Review}


class HasPriceFilter(ItemFilter):
    """Accepts only items that have a "price" field."""

    def accepts(self, item):
        return "price" in ItemAdapter(item)


class RequiredFieldFilter(ItemFilter):
    """Accepts only items that have the field named by the feed option
    "required_field" (an extra key in the feed's options)."""

    def accepts(self, item):
        return self.feed_options["required_field"] in ItemAdapter(item)


class ClassesAndPriceFilter(ItemFilter):
    """The default check (item_classes) and then a "price" field."""

    def accepts(self, item):
        return super().accepts(item) and "price" in ItemAdapter(item)


class RejectAllFilter(ItemFilter):
    def accepts(self, item):
        return False


def uri_params_add_site(params, spider):
    """Returns a new dict: the params plus "site" and "upper"."""
    return {**params, "site": "example-com", "upper": spider.name.upper()}


def uri_params_mutate(params, spider):
    """Changes params in place and returns None (Scrapy then uses params)."""
    params["site"] = "mutated"


def uri_params_replace(params, spider):
    """Returns a dict without Scrapy's params: only "site" is left."""
    return {"site": "only-site"}


def uri_params_part(params, spider):
    """Derives a name part from the batch id Scrapy passes in params."""
    return {**params, "part": f"part-{params['batch_id']:03d}"}


# ---------------------------------------------------------------------------
# Child process: one crawl
# ---------------------------------------------------------------------------


def build_item(spec):
    spec = copy.deepcopy(spec)
    if isinstance(spec, dict) and "__item_class__" in spec:
        return ITEM_CLASSES[spec["__item_class__"]](**spec["fields"])
    return spec


def child_main(spec_path, result_path):
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    cwd = os.getcwd()
    sys.path.insert(0, str(HERE))
    import record_options  # noqa: F401  (the dotted paths load from it)
    import scrapy.extensions.feedexport as fe
    from scrapy.crawler import CrawlerProcess
    from scrapy.extensions.feedexport import FeedExporter

    clock = spec.get("clock")
    clock_calls = [0]
    if clock:
        real = fe.datetime

        class FixedClock(real):
            @classmethod
            def now(cls, tz=None):
                i = min(clock_calls[0], len(clock) - 1)
                clock_calls[0] += 1
                return real.fromisoformat(clock[i]).astimezone(tz)

        fe.datetime = FixedClock

    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(record)

    root = logging.getLogger()
    root.addHandler(Collect(level=logging.DEBUG))
    root.setLevel(logging.DEBUG)

    settings = copy.deepcopy(spec["settings"])
    if "FEEDS" in settings:
        settings["FEEDS"] = {
            k.replace("{dir}", cwd): v for k, v in settings["FEEDS"].items()
        }
    items = spec["items"]

    async def start(self):
        for item in items:
            # record_options' classes: the ones item_classes / filters load
            yield record_options.build_item(item)

    attrs = dict(spec["spider"].get("attrs", {}))
    attrs.update(name=spec["spider"]["name"], custom_settings=settings, start=start)
    spidercls = type("CaseSpider", (scrapy.Spider,), attrs)

    process = CrawlerProcess(settings=BASE_SETTINGS)
    crawler = process.create_crawler(spidercls)
    t0 = time.time()
    process.crawl(crawler, **spec["spider"].get("kwargs", {}))
    process.start()
    t1 = time.time()

    logs = []
    for r in records:
        if not (
            r.name.startswith("scrapy.extensions.feedexport")
            or r.levelno >= logging.WARNING
        ):
            continue
        line = f"{r.levelname} {r.name}: {r.getMessage()}"
        if r.exc_info and r.exc_info[1] is not None:
            e = r.exc_info[1]
            line += f" | {type(e).__name__}: {e}"
        logs.append(line)
    stats = crawler.stats.get_stats()
    result = {
        "logs": logs,
        "stats": {
            k: v
            for k, v in stats.items()
            if k.startswith("feedexport/")
            or k in ("item_scraped_count", "finish_reason")
        },
        "feed_exporter_enabled": crawler.get_extension(FeedExporter) is not None,
        "clock_calls": clock_calls[0],
        "t0": t0,
        "t1": t1,
    }
    Path(result_path).write_text(json.dumps(result), encoding="utf-8")


# ---------------------------------------------------------------------------
# Item sets
# ---------------------------------------------------------------------------


def csv_item_sets():
    """The item lists of csv_cases.json, by the name of the first case using each."""
    data = json.loads((HERE / "csv_cases.json").read_text(encoding="utf-8"))
    sets = {}
    seen = []
    for case in data["cases"]:
        items = case["items"]
        key = json.dumps(items)
        if key in seen:
            continue
        seen.append(key)
        sets[case["name"]] = items
    return sets


CSV_SETS = csv_item_sets()

NESTED = [
    {
        "name": "nested",
        "dict": {"a": 1, "b": {"c": "d"}, "empty": {}},
        "list_of_dicts": [{"x": 1}, {"y": [1, 2], "z": None}],
        "list_of_lists": [[1, 2], [], ["a"]],
        "empty_list": [],
        "empty_dict": {},
        "list_mixed": ["s", 1, 1.5, True, None, {"k": "v"}],
    },
    {"name": "second", "dict": {"caf\u00e9": "\u4e2d\u6587", "amp": "a&b"}},
]

INVALID_NAMES = [
    {
        "with space": "1",
        "1leading_digit": "2",
        "caf\u00e9": "3",
        "\u4e2d\u6587": "4",
        "ns:local": "5",
        "": "6",
        "a<b": "7",
        "a&b": "8",
        "-dash": "9",
        ".dot": "10",
        "xmlname": "11",
        'quote"key': "12",
        "tab\tkey": "13",
        "nested": {"inner key": "x", "2x": "y"},
    }
]

SPECIAL_VALUES = [
    {
        "lt": "a<b",
        "gt": "a>b",
        "amp": "a&b",
        "entity_like": "&amp; &lt;",
        "cdata_end": "x]]>y",
        "quotes": "\"double\" 'single'",
        "ctrl": "nul\u0000soh\u0001bs\u0008vt\u000bff\u000cesc\u001bdel\u007f",
        "tab_nl_cr": "a\tb\nc\rd\r\ne",
        "none": None,
        "true": True,
        "false": False,
        "zero": 0,
        "neg": -7,
        "big": 18446744073709551615,
        "float_one": 1.0,
        "float_tenth": 0.1,
        "float_small": 1e-05,
        "float_e16": 1e16,
        "float_neg_zero": -0.0,
        "empty": "",
        "spaces": "  padded  ",
        "unicode": "caf\u00e9 \u00fcber",
        "emoji_cjk": "\U0001f600 \u4e2d\u6587",
        "nbsp_ls_bom": "\u00a0\u2028\ufeff",
    }
]

EMPTY_ONLY = [{}, {}]

SIMPLE = [
    {"name": "Widget", "price": "9.99"},
    {"name": "Gadget", "price": "19"},
    {"name": "Doohickey", "price": "0"},
]

TEN = [{"n": i, "name": f"item{i}"} for i in range(1, 11)]

UNICODE_ITEMS = [
    {"name": "caf\u00e9", "emoji": "\U0001f600", "tags": ["a", "b"], "n": 1.5},
    {"name": "plain", "emoji": "", "tags": [], "n": None},
]

MULTI = [
    {"name": "one", "tags": ["a", "b", "c"], "nums": [1, 2]},
    {"name": "two", "tags": ["x"], "nums": []},
]


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------


def case(name, settings, items, spider_name="items", **extra):
    c = {
        "name": name,
        "spider": {"name": spider_name},
        "settings": settings,
        "items": items,
    }
    c.update(extra)
    return c


def feed(uri, **opts):
    return {"FEEDS": {uri: opts}}


def xml_cases():
    out = []
    sets = dict(CSV_SETS)
    sets.update(
        nested=NESTED,
        invalid_names=INVALID_NAMES,
        special_values=SPECIAL_VALUES,
        empty_only=EMPTY_ONLY,
    )

    def xml(name, items, settings=None, **opts):
        s = feed("{dir}/items.xml", format="xml", overwrite=True, **opts)
        s.update(settings or {})
        out.append(case(name, s, items))

    for set_name, items in sets.items():
        xml(f"default_{set_name}", items)
    for indent in (None, 0, 2, 4):
        for set_name in ("same_keys", "nested", "empty_items", "no_items"):
            xml(
                f"indent_{indent}_{set_name}",
                sets[set_name],
                {"FEED_EXPORT_INDENT": indent},
            )
    for enc in ("utf-8", "latin-1"):
        for set_name in ("text", "invalid_names", "special_values", "no_items"):
            xml(f"encoding_{enc}_{set_name}", sets[set_name], {"FEED_EXPORT_ENCODING": enc})
    xml("encoding_ascii_invalid_names", INVALID_NAMES, {"FEED_EXPORT_ENCODING": "ascii"})
    xml("encoding_ascii_text", sets["text"], {"FEED_EXPORT_ENCODING": "ascii"})
    xml("encoding_UTF-8_same_keys", sets["same_keys"], {"FEED_EXPORT_ENCODING": "UTF-8"})
    xml(
        "encoding_latin-1_indent_2_nested",
        NESTED,
        {"FEED_EXPORT_ENCODING": "latin-1", "FEED_EXPORT_INDENT": 2},
    )
    fields = [
        ("subset_reordered", "same_keys", ["price", "name"]),
        ("missing_name", "same_keys", ["name", "missing", "url"]),
        ("differing_keys", "differing_keys", ["c", "a", "d"]),
        ("string", "same_keys", "price,name"),
        ("dict_rename", "same_keys", {"name": "Name", "price": "Price"}),
        ("nested", "nested", ["list_of_dicts", "name"]),
        ("no_items", "no_items", ["a", "b"]),
        ("empty_list", "same_keys", []),
    ]
    for name, set_name, f in fields:
        xml(f"fields_{name}", sets[set_name], {"FEED_EXPORT_FIELDS": f})
    xml(
        "kwargs_item_root_element",
        sets["same_keys"],
        item_export_kwargs={"item_element": "product", "root_element": "products"},
    )
    xml(
        "kwargs_item_root_element_indent_2",
        sets["same_keys"],
        {"FEED_EXPORT_INDENT": 2},
        item_export_kwargs={"item_element": "product", "root_element": "products"},
    )
    xml(
        "kwargs_item_root_element_no_items",
        [],
        item_export_kwargs={"item_element": "product", "root_element": "products"},
    )
    xml(
        "kwargs_invalid_element_names",
        SIMPLE,
        item_export_kwargs={"item_element": "my item", "root_element": "1root"},
    )
    xml(
        "kwargs_export_empty_fields",
        sets["same_keys"],
        {"FEED_EXPORT_FIELDS": ["name", "missing"]},
        item_export_kwargs={"export_empty_fields": True},
    )
    xml("kwargs_unknown_option", SIMPLE, item_export_kwargs={"foo": 1})
    out[-1]["notes"] = (
        "XmlItemExporter accepts only item_element, root_element and the "
        "BaseItemExporter options: an unknown key raises TypeError when the "
        "exporter is built, at every item (logged by the item_scraped signal "
        "handler; the item is lost) and again when the slot is closed (logged "
        "by asyncio as a task exception never retrieved). The file is opened "
        "before the exporter is built, so it exists and is empty."
    )
    return out


def store_empty_cases():
    out = []
    variants = [
        ("default", {}, {}),
        ("setting_true", {"FEED_STORE_EMPTY": True}, {}),
        ("setting_false", {"FEED_STORE_EMPTY": False}, {}),
        ("feed_true", {}, {"store_empty": True}),
        ("feed_false", {}, {"store_empty": False}),
        ("setting_false_feed_true", {"FEED_STORE_EMPTY": False}, {"store_empty": True}),
        ("setting_true_feed_false", {"FEED_STORE_EMPTY": True}, {"store_empty": False}),
    ]
    ext = {"json": "json", "jsonlines": "jl", "csv": "csv", "xml": "xml"}
    for fmt in ("json", "jsonlines", "csv", "xml"):
        for vname, settings, opts in variants:
            s = feed(f"{{dir}}/items.{ext[fmt]}", format=fmt, overwrite=True, **opts)
            s.update(settings)
            out.append(case(f"{fmt}_{vname}", s, []))
    s = feed("{dir}/items.json", format="json", overwrite=True)
    s["FEED_EXPORT_INDENT"] = None
    out.append(case("json_default_indent_none", s, []))
    s = feed("{dir}/items.json", format="json", overwrite=True)
    s["FEED_EXPORT_INDENT"] = 2
    out.append(case("json_default_indent_2", s, []))
    s = feed("{dir}/sub/dir/items.jl", format="jsonlines", overwrite=True)
    out.append(case("jsonlines_default_missing_dirs", s, []))
    out[-1]["notes"] = "FileFeedStorage creates missing parent directories."
    return out


CLOCK = [
    "2026-12-04T21:10:41.123456+00:00",
    "2026-12-04T21:10:42+00:00",
    "2026-12-04T21:10:43.000500+00:00",
    "2026-12-04T21:10:44.999999+00:00",
    "2026-12-04T21:10:45.500000+00:00",
]


def uri_cases():
    out = []
    jl = dict(format="jsonlines", overwrite=True)
    out.append(case("name", feed("{dir}/%(name)s.jl", **jl), SIMPLE, "books_spider"))
    c = case("spider_attribute", feed("{dir}/%(category)s.jl", **jl), SIMPLE, "shop")
    c["spider"]["attrs"] = {"category": "shoes"}
    out.append(c)
    c = case("spider_argument", feed("{dir}/%(category)s.jl", **jl), SIMPLE, "shop")
    c["spider"]["kwargs"] = {"category": "books"}
    out.append(c)
    c = case(
        "spider_argument_over_attribute",
        feed("{dir}/%(category)s-%(name)s.jl", **jl),
        SIMPLE,
        "shop",
    )
    c["spider"]["attrs"] = {"category": "shoes"}
    c["spider"]["kwargs"] = {"category": "books"}
    c["notes"] = "The argument becomes an instance attribute, which wins."
    out.append(c)
    c = case("time", feed("{dir}/%(name)s-%(time)s.jl", **jl), SIMPLE, clock=CLOCK)
    out.append(c)
    c = case(
        "time_microsecond_zero",
        feed("{dir}/%(time)s--%(batch_time)s.jl", **jl),
        SIMPLE,
        clock=["2026-01-02T03:04:05+00:00"],
    )
    c["notes"] = (
        "isoformat() leaves the fraction out when the microsecond is 0, so "
        "%(batch_time)s then has no '.ffffff' part."
    )
    out.append(c)
    c = case(
        "time_and_batch_time",
        feed("{dir}/%(time)s--%(batch_time)s--%(batch_id)d.jl", **jl),
        SIMPLE,
        clock=CLOCK,
    )
    c["notes"] = "Without batches: one clock read; batch_id is 1."
    out.append(c)
    c = case(
        "time_live",
        feed("{dir}/live-%(time)s--%(batch_time)s.jl", **jl),
        SIMPLE,
    )
    c["notes"] = (
        "The real clock: the name is recorded with the time parts replaced by "
        "<time> and <batch_time>; the recorder checked them against the regexes "
        "in time_formats and that they are UTC within the crawl's run."
    )
    c["time_dependent"] = True
    out.append(c)
    c = case(
        "uri_params_function",
        feed("{dir}/%(site)s-%(upper)s.jl", uri_params=f"{SELF}.uri_params_add_site", **jl),
        SIMPLE,
        "shop",
    )
    c["notes"] = "uri_params_add_site(params, spider) returns {**params, 'site': 'example-com', 'upper': spider.name.upper()}."
    out.append(c)
    c = case(
        "uri_params_returns_none",
        feed("{dir}/%(site)s-%(name)s.jl", uri_params=f"{SELF}.uri_params_mutate", **jl),
        SIMPLE,
        "shop",
    )
    c["notes"] = "uri_params_mutate sets params['site'] = 'mutated' and returns None: Scrapy uses the mutated params."
    out.append(c)
    c = case(
        "uri_params_replaces_params",
        feed("{dir}/%(site)s-%(name)s.jl", uri_params=f"{SELF}.uri_params_replace", **jl),
        SIMPLE,
        "shop",
    )
    c["notes"] = (
        "uri_params_replace returns {'site': 'only-site'}: the returned dict replaces "
        "the params, so %(name)s raises KeyError in open_spider (logged by the "
        "signal handler); no slot is created and nothing is written."
    )
    out.append(c)
    s = feed("{dir}/%(site)s-%(name)s.jl", **jl)
    s["FEED_URI_PARAMS"] = f"{SELF}.uri_params_add_site"
    c = case("uri_params_setting", s, SIMPLE, "shop")
    c["notes"] = "FEED_URI_PARAMS is the default of the per-feed uri_params option."
    out.append(c)
    c = case(
        "missing_placeholder",
        feed("{dir}/%(nosuch)s.jl", **jl),
        SIMPLE,
    )
    c["notes"] = "An unknown placeholder: KeyError in open_spider, nothing written."
    out.append(c)
    out.append(
        case(
            "batch_id_without_batches",
            feed("{dir}/items-%(batch_id)d-%(batch_id)05d.jl", **jl),
            SIMPLE,
        )
    )
    out.append(case("literal_percent_plain_path", feed("{dir}/a%20b 100%.jl", **jl), SIMPLE))
    out[-1]["notes"] = "Percent signs that are not placeholders are kept literally; a plain path is not URL-decoded."
    out.append(case("literal_percent_file_uri", feed("file://{dir}/a%20b.jl", **jl), SIMPLE))
    out[-1]["notes"] = "A file:// URI is decoded to a path (w3lib file_uri_to_path): %20 becomes a space."
    out.append(case("placeholder_in_directory", feed("{dir}/%(name)s/out/items.jl", **jl), SIMPLE, "shop"))
    out.append(case("relative_path", feed("rel/%(name)s.jl", **jl), SIMPLE, "shop"))
    out[-1]["notes"] = "A relative path is relative to the process's working directory ({dir} here)."
    return out


def batch_cases():
    out = []

    def b(name, uri, fmt, settings=None, items=TEN, clock=None, **opts):
        s = feed(uri, format=fmt, overwrite=True, **opts)
        s.update(settings or {})
        c = case(name, s, items)
        if clock:
            c["clock"] = clock
        out.append(c)
        return c

    ext = {"json": "json", "jsonlines": "jl", "csv": "csv", "xml": "xml"}
    for fmt in ("jsonlines", "json", "csv"):
        e = ext[fmt]
        b(f"{fmt}_feed_count_3_batch_id", f"{{dir}}/items-%(batch_id)d.{e}", fmt, batch_item_count=3)
        b(f"{fmt}_setting_count_3_batch_id_05d", f"{{dir}}/items-%(batch_id)05d.{e}", fmt, {"FEED_EXPORT_BATCH_ITEM_COUNT": 3})
        b(f"{fmt}_feed_count_3_batch_time", f"{{dir}}/items-%(batch_time)s.{e}", fmt, clock=CLOCK, batch_item_count=3)
    b("xml_feed_count_3_batch_id", "{dir}/items-%(batch_id)d.xml", "xml", batch_item_count=3)
    b("jsonlines_count_5_exact", "{dir}/items-%(batch_id)d.jl", "jsonlines", batch_item_count=5)
    out[-1]["notes"] = "10 items in batches of 5: the third slot has no items and batch_id > 1, so it is not stored."
    b("jsonlines_count_20_one_batch", "{dir}/items-%(batch_id)d.jl", "jsonlines", batch_item_count=20)
    b("jsonlines_count_3_no_items", "{dir}/items-%(batch_id)d.jl", "jsonlines", items=[], batch_item_count=3)
    b("jsonlines_count_3_no_items_store_empty_false", "{dir}/items-%(batch_id)d.jl", "jsonlines", items=[], batch_item_count=3, store_empty=False)
    b("jsonlines_count_3_id_and_time", "{dir}/%(batch_id)02d-%(time)s.jl", "jsonlines", clock=CLOCK, batch_item_count=3)
    out[-1]["notes"] = "%(time)s is computed again for every batch."
    b("jsonlines_count_3_uri_params", "{dir}/%(part)s.jl", "jsonlines", batch_item_count=3, uri_params=f"{SELF}.uri_params_part")
    out[-1]["notes"] = (
        "The check for %(batch_id) / %(batch_time)s is a regex on the URI "
        "template: a name made unique by uri_params does not count, the feed "
        "is refused and the FeedExporter disabled (see logs)."
    )
    b("jsonlines_count_3_uri_params_with_id", "{dir}/%(part)s-%(batch_id)d.jl", "jsonlines", batch_item_count=3, uri_params=f"{SELF}.uri_params_part")
    out[-1]["notes"] = (
        "The uri_params function is called once per batch (at open and at each "
        "rollover) with params['batch_id'] already the new batch's id."
    )
    b("jsonlines_feed_count_3_no_placeholder", "{dir}/items.jl", "jsonlines", batch_item_count=3)
    out[-1]["notes"] = (
        "batch_item_count without %(batch_time)s or %(batch_id) in the URI: an "
        "error is logged when the FeedExporter is built, the extension raises "
        "NotConfigured (no feed at all is exported), and the crawl goes on."
    )
    b("jsonlines_setting_count_3_no_placeholder", "{dir}/items.jl", "jsonlines", {"FEED_EXPORT_BATCH_ITEM_COUNT": 3})
    s = {"FEEDS": {
        "{dir}/ok.jl": {"format": "jsonlines", "overwrite": True},
        "{dir}/batched.jl": {"format": "jsonlines", "overwrite": True, "batch_item_count": 3},
    }}
    out.append(case("no_placeholder_disables_other_feeds", s, TEN))
    out[-1]["notes"] = "One feed without a placeholder disables every feed of the crawl."
    b("jsonlines_feed_count_0", "{dir}/items.jl", "jsonlines", batch_item_count=0)
    b("jsonlines_setting_count_0", "{dir}/items.jl", "jsonlines", {"FEED_EXPORT_BATCH_ITEM_COUNT": 0})
    b("jsonlines_feed_count_0_over_setting_3", "{dir}/items-%(batch_id)d.jl", "jsonlines", {"FEED_EXPORT_BATCH_ITEM_COUNT": 3}, batch_item_count=0)
    out[-1]["notes"] = "The feed's batch_item_count 0 overrides the setting: one file, batch_id 1."
    b("jsonlines_feed_count_0_over_setting_3_no_placeholder", "{dir}/items.jl", "jsonlines", {"FEED_EXPORT_BATCH_ITEM_COUNT": 3}, batch_item_count=0)
    return out


def kwargs_cases():
    out = []

    def k(name, fmt, items, settings=None, **opts):
        e = {"json": "json", "jsonlines": "jl", "csv": "csv", "xml": "xml"}[fmt]
        s = feed(f"{{dir}}/items.{e}", format=fmt, overwrite=True, **opts)
        s.update(settings or {})
        out.append(case(name, s, items))
        return out[-1]

    k("csv_include_headers_line_false", "csv", SIMPLE, item_export_kwargs={"include_headers_line": False})
    k("csv_include_headers_line_false_differing_keys", "csv", CSV_SETS["differing_keys"], item_export_kwargs={"include_headers_line": False})
    out[-1]["notes"] = "Without a header line and without fields, each row is that item's own values."
    k("csv_include_headers_line_false_fields", "csv", CSV_SETS["differing_keys"], {"FEED_EXPORT_FIELDS": ["b", "a"]}, item_export_kwargs={"include_headers_line": False})
    k("csv_join_multivalued_pipe", "csv", MULTI, item_export_kwargs={"join_multivalued": "|"})
    k("csv_join_multivalued_pipe_lists_of_strings", "csv", CSV_SETS["lists_of_strings"], item_export_kwargs={"join_multivalued": "|"})
    k("csv_both", "csv", MULTI, item_export_kwargs={"include_headers_line": False, "join_multivalued": "|"})
    k("csv_delimiter", "csv", SIMPLE + [{"name": "a;b", "price": "1"}], item_export_kwargs={"delimiter": ";"})
    out[-1]["notes"] = "Keys other than include_headers_line, join_multivalued and errors go to csv.writer."
    for fmt in ("json", "jsonlines"):
        k(f"{fmt}_ensure_ascii_false", fmt, UNICODE_ITEMS, item_export_kwargs={"ensure_ascii": False})
        k(f"{fmt}_ensure_ascii_true_encoding_utf-8", fmt, UNICODE_ITEMS, {"FEED_EXPORT_ENCODING": "utf-8"}, item_export_kwargs={"ensure_ascii": True})
        k(f"{fmt}_ensure_ascii_false_encoding_latin-1", fmt, UNICODE_ITEMS, {"FEED_EXPORT_ENCODING": "latin-1"}, item_export_kwargs={"ensure_ascii": False})
        out[-1]["notes"] = "The text is encoded strictly: an item with a character outside the encoding raises UnicodeEncodeError and is left out."
        k(f"{fmt}_encoding_latin-1", fmt, UNICODE_ITEMS, {"FEED_EXPORT_ENCODING": "latin-1"})
        out[-1]["notes"] = "With an encoding set, ensure_ascii defaults to False, so the emoji item fails to encode and is left out."
        k(f"{fmt}_indent_kwarg", fmt, SIMPLE, item_export_kwargs={"indent": 2})
        out[-1]["notes"] = (
            "FeedSlot passes indent=<feed indent>, encoding=<feed encoding>, "
            "fields_to_export=<feed fields> and **item_export_kwargs to the "
            "exporter: 'indent' (or 'encoding') in item_export_kwargs is a "
            "duplicate keyword: TypeError at every item (signal handler log) and "
            "at close (asyncio log); the file is opened first, so it exists, empty."
        )
        k(f"{fmt}_encoding_kwarg", fmt, SIMPLE, item_export_kwargs={"encoding": "latin-1"})
        k(f"{fmt}_feed_indent_2_over_setting_4", fmt, SIMPLE, {"FEED_EXPORT_INDENT": 4}, indent=2)
        k(f"{fmt}_feed_encoding_over_setting", fmt, UNICODE_ITEMS, {"FEED_EXPORT_ENCODING": "latin-1"}, encoding="utf-8")
        k(f"{fmt}_feed_fields_over_setting", fmt, SIMPLE, {"FEED_EXPORT_FIELDS": ["name"]}, fields=["price"])
        k(f"{fmt}_sort_keys_separators", fmt, [{"b": 1, "a": [1, 2], "c": {"z": 1, "y": 2}}], item_export_kwargs={"sort_keys": True, "separators": [",", ":"]})
        k(f"{fmt}_export_empty_fields", fmt, SIMPLE, {"FEED_EXPORT_FIELDS": ["name", "missing"]}, item_export_kwargs={"export_empty_fields": True})
    k("jsonlines_feed_indent_4", "jsonlines", NESTED, indent=4)
    out[-1]["notes"] = "JsonLinesItemExporter ignores indent."
    k("json_feed_indent_4_nested", "json", NESTED, indent=4)
    return out


GZ = "scrapy.extensions.postprocessing.GzipPlugin"
XZ = "scrapy.extensions.postprocessing.LZMAPlugin"
BZ = "scrapy.extensions.postprocessing.Bz2Plugin"


def postprocessing_cases():
    out = []

    def p(name, plugins, uri="{dir}/items.jl.gz", fmt="jsonlines", items=SIMPLE, **opts):
        s = feed(uri, format=fmt, overwrite=True, postprocessing=plugins, **opts)
        out.append(case(name, s, items))
        return out[-1]

    p("gzip_default", [GZ])
    out[-1]["notes"] = "gzip_mtime unset: the header's MTIME is the current time (recorded as time-dependent; no bytes recorded)."
    out[-1]["time_dependent"] = True
    p("gzip_mtime_0", [GZ], gzip_mtime=0)
    p("gzip_mtime_fixed_level_1", [GZ], gzip_mtime=1700000000, gzip_compresslevel=1)
    p("gzip_mtime_0_level_0", [GZ], gzip_mtime=0, gzip_compresslevel=0)
    out[-1]["notes"] = "Level 0: stored deflate blocks, so the bytes depend on no compressor."
    p("gzip_mtime_0_level_5", [GZ], gzip_mtime=0, gzip_compresslevel=5)
    p("gzip_filename", [GZ], gzip_mtime=0, gzip_filename="custom-name.jl.gz")
    p("gzip_filename_empty", [GZ], gzip_mtime=0, gzip_filename="")
    p("gzip_uri_without_gz", [GZ], uri="{dir}/items.jl", gzip_mtime=0)
    p("gzip_no_items", [GZ], items=[], gzip_mtime=0)
    p("gzip_json_no_items", [GZ], uri="{dir}/items.json.gz", fmt="json", items=[], gzip_mtime=0)
    p("gzip_csv", [GZ], uri="{dir}/items.csv.gz", fmt="csv", gzip_mtime=0)
    p("gzip_xml", [GZ], uri="{dir}/items.xml.gz", fmt="xml", gzip_mtime=0)
    p("lzma_default", [XZ], uri="{dir}/items.jl.xz")
    for check, cname in ((0, "none"), (1, "crc32"), (4, "crc64"), (10, "sha256")):
        p(f"lzma_check_{cname}", [XZ], uri="{dir}/items.jl.xz", lzma_check=check)
    p("lzma_preset_0", [XZ], uri="{dir}/items.jl.xz", lzma_preset=0)
    p("lzma_preset_9_extreme", [XZ], uri="{dir}/items.jl.xz", lzma_preset=9 | lzma.PRESET_EXTREME)
    p("lzma_format_alone", [XZ], uri="{dir}/items.jl.lzma", lzma_format=lzma.FORMAT_ALONE)
    p(
        "lzma_format_raw_filters",
        [XZ],
        uri="{dir}/items.jl.raw",
        lzma_format=lzma.FORMAT_RAW,
        lzma_filters=[{"id": lzma.FILTER_LZMA2, "preset": 6}],
    )
    p("lzma_format_alone_check_crc32", [XZ], uri="{dir}/items.jl.lzma", lzma_format=lzma.FORMAT_ALONE, lzma_check=1)
    out[-1]["notes"] = "An invalid combination: LZMAFile raises when the exporter's file is built."
    p("bz2_default", [BZ], uri="{dir}/items.jl.bz2")
    p("bz2_compresslevel_1", [BZ], uri="{dir}/items.jl.bz2", bz2_compresslevel=1)
    p("bz2_json", [BZ], uri="{dir}/items.json.bz2", fmt="json")
    chain_note = (
        "Data goes through the plugins in list order (the file would be "
        "{outer}({inner}(feed))), but PostProcessingManager.close() closes only "
        "the first plugin, and the built-in plugins close their own compressor "
        "and never the object they write to: the later plugins never finish "
        "their streams. Scrapy 2.19 writes {result}."
    )
    p("chain_gzip_then_bz2", [GZ, BZ], uri="{dir}/items.jl.gz.bz2", gzip_mtime=0)
    out[-1]["notes"] = chain_note.format(
        outer="bz2", inner="gzip",
        result="an empty file (BZ2File had buffered everything)",
    )
    p("chain_lzma_then_gzip", [XZ, GZ], uri="{dir}/items.jl.xz.gz", gzip_mtime=0)
    out[-1]["notes"] = chain_note.format(
        outer="gzip", inner="xz",
        result="only the gzip header (GzipFile had buffered the xz bytes)",
    )
    p("unknown_plugin", ["nosuch.module.Plugin"])
    out[-1]["notes"] = (
        "Plugins are loaded when the slot starts exporting (first item), after "
        "the file is opened: ModuleNotFoundError at every item and at close, "
        "and an empty file."
    )
    return out


def scheme_cases():
    out = []
    jl = dict(format="jsonlines")
    out.append(case("unknown_scheme", feed("nosuch://x/y.jl", **jl), SIMPLE))
    s = {"FEEDS": {"{dir}/ok.jl": dict(jl), "nosuch://x/y.jl": dict(jl)}}
    out.append(case("unknown_scheme_with_file_feed", s, SIMPLE))
    out[-1]["notes"] = "The unknown scheme disables the whole FeedExporter: ok.jl is not written either."
    out.append(case("s3_without_boto3", feed("s3://bucket/key.jl", **jl), SIMPLE))
    out.append(case("format_from_extension_jl", feed("{dir}/items.jl", overwrite=True), SIMPLE))
    out.append(case("format_from_extension_xml", feed("{dir}/items.xml", overwrite=True), SIMPLE))
    out.append(case("format_unknown_extension", feed("{dir}/items.txt", overwrite=True), SIMPLE))
    out.append(case("format_no_extension", feed("{dir}/items", overwrite=True), SIMPLE))
    out.append(case("format_unknown_given", feed("{dir}/items.jl", format="yaml"), SIMPLE))
    for fmt in ("jsonlines", "json", "csv", "xml"):
        out.append(case(f"stdout_{fmt}", feed("stdout:", format=fmt), SIMPLE))
    out.append(case("stdout_overwrite_true", feed("stdout:", format="jsonlines", overwrite=True), SIMPLE))
    out[-1]["notes"] = (
        "The warning comes from StdoutFeedStorage.__init__, and the storage is "
        "built twice (once to validate the feed, once for the slot)."
    )
    out.append(case("stdout_no_items", feed("stdout:", format="json"), []))
    out.append(case("stdout_json_indent_2_utf8", feed("stdout:", format="json"), UNICODE_ITEMS))
    out[-1]["settings"].update(FEED_EXPORT_INDENT=2, FEED_EXPORT_ENCODING="utf-8")
    return out


CLI_SPIDER = '''import scrapy


class CliSpider(scrapy.Spider):
    name = "cli"

    async def start(self):
        for i in range(1, 4):
            yield {"n": i, "category": getattr(self, "category", None)}
'''

CLI_RUNS = [
    ("o_dash_jsonlines", ["-o", "-:jsonlines"]),
    ("o_dash_json", ["-o", "-:json"]),
    ("o_dash", ["-o", "-"]),
    ("o_file_jl", ["-o", "out.jl"]),
    ("o_file_format_suffix", ["-o", "out.data:csv"]),
    ("o_unknown_scheme", ["-o", "nosuch://x/y.jl"]),
    ("O_file_json", ["-O", "out.json"]),
    ("o_and_O", ["-o", "a.jl", "-O", "b.jl"]),
    ("a_argument_in_uri", ["-a", "category=books", "-o", "%(category)s-%(name)s.jl"]),
    ("a_invalid", ["-a", "category", "-o", "out.jl"]),
]

CLI_PARAMS = [
    ["-"],
    ["-:json"],
    ["-:jsonlines"],
    ["-:jl"],
    ["-:xml"],
    ["-:nosuch"],
    ["out.json"],
    ["out.jl"],
    ["out.jsonl"],
    ["out.csv:xml"],
    ["out.json:nosuch"],
    ["out"],
    ["out.txt"],
    ["out:json"],
    ["s3://bucket/key.json"],
    ["s3://bucket/key:json"],
    ["stdout:"],
    ["stdout::json"],
    ["file:///tmp/x.json"],
    ["a.json", "b.csv"],
    ["a.json", "a.json:csv"],
]


def item_filter_cases():
    out = []
    mixed = [
        {"name": "with price", "price": "1"},
        {"name": "without price"},
        {"name": "price none", "price": None},
        {"price": "2"},
    ]
    typed = [
        {"__item_class__": "Product", "fields": {"name": "p1", "price": "10"}},
        {"__item_class__": "Offer", "fields": {"name": "o1", "discount": "5%"}},
        {"name": "dict", "price": "3"},
        {"__item_class__": "Review", "fields": {"name": "r1", "stars": 4}},
        {"__item_class__": "Product", "fields": {"name": "p2"}},
    ]
    jl = dict(format="jsonlines", overwrite=True)
    out.append(case("item_filter_has_price", feed("{dir}/items.jl", item_filter=f"{SELF}.HasPriceFilter", **jl), mixed))
    out[-1]["notes"] = "HasPriceFilter.accepts(item) returns 'price' in ItemAdapter(item)."
    out.append(case("item_filter_feed_option", feed("{dir}/items.jl", item_filter=f"{SELF}.RequiredFieldFilter", required_field="name", **jl), mixed))
    out[-1]["notes"] = "RequiredFieldFilter reads the extra feed option 'required_field' from self.feed_options."
    out.append(case("item_classes_product", feed("{dir}/items.jl", item_classes=[f"{SELF}.Product"], **jl), typed))
    out.append(case("item_classes_product_review", feed("{dir}/items.jl", item_classes=[f"{SELF}.Product", f"{SELF}.Review"], **jl), typed))
    out.append(case("item_classes_dict", feed("{dir}/items.jl", item_classes=["builtins.dict"], **jl), typed))
    out.append(case("item_classes_empty_list", feed("{dir}/items.jl", item_classes=[], **jl), typed))
    out[-1]["notes"] = "An empty item_classes accepts every item."
    out.append(case("item_filter_and_classes", feed("{dir}/items.jl", item_filter=f"{SELF}.ClassesAndPriceFilter", item_classes=[f"{SELF}.Product"], **jl), typed))
    out[-1]["notes"] = "ClassesAndPriceFilter: super().accepts(item) (item_classes) and 'price' in ItemAdapter(item)."
    s = {"FEEDS": {
        "{dir}/all.jl": dict(jl),
        "{dir}/priced.jl": dict(jl, item_filter=f"{SELF}.HasPriceFilter"),
        "{dir}/products.csv": dict(format="csv", overwrite=True, item_classes=[f"{SELF}.Product"]),
    }}
    out.append(case("three_feeds", s, mixed + typed))
    out.append(case("reject_all_store_empty_default", feed("{dir}/items.json", format="json", overwrite=True, item_filter=f"{SELF}.RejectAllFilter"), mixed))
    out.append(case("reject_all_store_empty_false", feed("{dir}/items.json", format="json", overwrite=True, store_empty=False, item_filter=f"{SELF}.RejectAllFilter"), mixed))
    out.append(case("item_filter_batches", feed("{dir}/items-%(batch_id)d.jl", item_filter=f"{SELF}.HasPriceFilter", batch_item_count=2, **jl), mixed + mixed))
    out[-1]["notes"] = "Only accepted items count towards batch_item_count."
    return out


def overwrite_cases():
    out = []
    pre = {"items.jl": "OLD\n"}
    for name, opts in (("unset", {}), ("true", {"overwrite": True}), ("false", {"overwrite": False})):
        c = case(f"jsonlines_overwrite_{name}", feed("{dir}/items.jl", format="jsonlines", **opts), SIMPLE)
        c["pre_files"] = dict(pre)
        out.append(c)
    c = case("json_overwrite_unset", feed("{dir}/items.jl", format="json"), SIMPLE)
    c["pre_files"] = dict(pre)
    c["notes"] = "File storage appends by default: a second JSON array after the old bytes."
    out.append(c)
    c = case("no_items_store_empty_false", feed("{dir}/items.jl", format="jsonlines", overwrite=True, store_empty=False), [])
    c["pre_files"] = dict(pre)
    c["notes"] = "Nothing is opened: the old file is left as it was."
    out.append(c)
    c = case("no_items_store_empty_default_overwrite_true", feed("{dir}/items.jl", format="jsonlines", overwrite=True), [])
    c["pre_files"] = dict(pre)
    out.append(c)
    c = case("no_items_store_empty_default_append", feed("{dir}/items.jl", format="jsonlines"), [])
    c["pre_files"] = dict(pre)
    out.append(c)
    return out


GROUPS = [
    ("xml", xml_cases),
    ("store_empty", store_empty_cases),
    ("uri_placeholders", uri_cases),
    ("batches", batch_cases),
    ("item_export_kwargs", kwargs_cases),
    ("postprocessing", postprocessing_cases),
    ("unknown_schemes", scheme_cases),
    ("item_filter", item_filter_cases),
    ("overwrite", overwrite_cases),
]


# ---------------------------------------------------------------------------
# Running and recording
# ---------------------------------------------------------------------------

TIME_RE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\+00-00"
BATCH_TIME_RE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d{6})?\+00-00"


def check_json_roundtrip(items):
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


SITE_PACKAGES = str(Path(scrapy.__file__).resolve().parent.parent)


def sanitize(text, d):
    text = text.replace(str(d), "{dir}").replace(SITE_PACKAGES, "<site-packages>")
    text = re.sub(r"Task-\d+", "Task-?", text)
    return re.sub(r"0x[0-9a-fA-F]+", "0x?", text)


def read_files(d):
    files = {}
    for p in sorted(d.rglob("*")):
        if p.is_file() and not p.name.startswith(".rec-"):
            files[p.relative_to(d).as_posix()] = p.read_bytes()
    return files


def gzip_header(data):
    assert data[:3] == b"\x1f\x8b\x08", data[:3]
    flags = data[3]
    mtime = struct.unpack("<I", data[4:8])[0]
    h = {"flags": flags, "mtime": mtime, "xfl": data[8], "os": data[9], "fname": None}
    if flags & 8:
        end = data.index(b"\x00", 10)
        h["fname"] = data[10:end].decode("latin-1")
    return h


def undo_plugins(data, feed_opts):
    """The feed's bytes with every plugin undone (last plugin first)."""
    for plugin in reversed(feed_opts["postprocessing"]):
        if plugin == GZ:
            data = gzip.decompress(data)
        elif plugin == BZ:
            data = bz2.decompress(data)
        elif plugin == XZ:
            fmt = feed_opts.get("lzma_format") or lzma.FORMAT_AUTO
            filters = feed_opts.get("lzma_filters") if fmt == lzma.FORMAT_RAW else None
            data = lzma.decompress(data, format=fmt, filters=filters)
        else:
            raise ValueError(plugin)
    return data


def partial_undo(data, feed_opts):
    """Like undo_plugins for a stream cut short: each layer decoded as far as its
    bytes go (base64 of the innermost result)."""
    for plugin in reversed(feed_opts["postprocessing"]):
        if plugin == GZ:
            data = zlib.decompressobj(31).decompress(data)
        elif plugin == BZ:
            data = bz2.BZ2Decompressor().decompress(data) if data else b""
        elif plugin == XZ:
            data = lzma.LZMADecompressor().decompress(data) if data else b""
    return base64.b64encode(data).decode("ascii")


def xml_direct(c):
    """XmlItemExporter called directly with what the FeedExporter passes."""
    from scrapy.exporters import XmlItemExporter
    from scrapy.settings import Settings
    from scrapy.utils.conf import feed_complete_default_values_from_settings

    settings = Settings()
    opts = None
    for k, v in c["settings"].items():
        if k == "FEEDS":
            (opts,) = v.values()
        else:
            settings.set(k, v)
    opts = feed_complete_default_values_from_settings(dict(opts), settings)
    buf = io.BytesIO()
    exporter = XmlItemExporter(
        buf,
        fields_to_export=opts["fields"],
        encoding=opts["encoding"],
        indent=opts["indent"],
        **opts["item_export_kwargs"],
    )
    exporter.start_exporting()
    for item in c["items"]:
        exporter.export_item(copy.deepcopy(item))
    exporter.finish_exporting()
    return buf.getvalue()


def run_case(group, c, root, index):
    d = root / f"{index:03d}"
    d.mkdir()
    for name, text in c.get("pre_files", {}).items():
        (d / name).write_text(text, encoding="utf-8")
    spec_path = root / f"{index:03d}.spec.json"
    result_path = root / f"{index:03d}.result.json"
    spec_path.write_text(json.dumps(c), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(spec_path), str(result_path)],
        cwd=d,
        capture_output=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0 or not result_path.exists():
        sys.stderr.write(proc.stderr.decode("utf-8", "replace"))
        raise SystemExit(f"{group}/{c['name']}: child failed ({proc.returncode})")
    res = json.loads(result_path.read_text(encoding="utf-8"))
    files = read_files(d)
    rec = dict(c)
    rec["logs"] = [sanitize(line, d) for line in res["logs"]]
    rec["stats"] = res["stats"]
    rec["feed_exporter_enabled"] = res["feed_exporter_enabled"]
    if c.get("clock"):
        rec["clock_calls"] = res["clock_calls"]
    if proc.stdout:
        rec["stdout"] = proc.stdout.decode("utf-8")
    if c.get("time_dependent") and group == "uri_placeholders":
        # Check the live names and record them as patterns.
        renamed = {}
        for name, data in files.items():
            m = re.fullmatch(rf"live-({TIME_RE})--({BATCH_TIME_RE})\.jl", name)
            assert m, name
            t, bt = m.group(1), m.group(2)
            tt = dt.datetime.strptime(t, "%Y-%m-%dT%H-%M-%S+00-00").replace(tzinfo=dt.timezone.utc)
            assert res["t0"] - 1 <= tt.timestamp() <= res["t1"], (t, res["t0"], res["t1"])
            assert bt.startswith(t[:-6]), (t, bt)
            renamed["live-<time>--<batch_time>.jl"] = data
            rec["logs"] = [
                re.sub(rf"live-{TIME_RE}--{BATCH_TIME_RE}\.jl", "live-<time>--<batch_time>.jl", line)
                for line in rec["logs"]
            ]
        files = renamed
        rec["name_regex"] = rf"live-{TIME_RE}--{BATCH_TIME_RE}\.jl"
    text_files, b64_files = {}, {}
    for name, data in files.items():
        try:
            text_files[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            b64_files[name] = base64.b64encode(data).decode("ascii")
    if group == "postprocessing":
        (uri, opts), = c["settings"]["FEEDS"].items()
        name = uri.replace("{dir}/", "")
        dec = {}
        if name in files and files[name]:
            data = files[name]
            try:
                dec[name] = undo_plugins(data, opts).decode("utf-8")
            except (EOFError, OSError, lzma.LZMAError) as e:
                # An unfinished stream: what a streaming decoder gets out of it.
                rec["decompress_error"] = f"{type(e).__name__}: {e}"
                rec["decompressed_partial"] = {name: partial_undo(data, opts)}
            first = opts["postprocessing"][-1]
            if first == GZ:
                h = gzip_header(data)
                if c.get("time_dependent"):
                    assert res["t0"] - 2 <= h["mtime"] <= res["t1"] + 1, h
                    h["mtime"] = "time-dependent"
                rec["gzip_header"] = h
        rec["decompressed"] = dec
        if c.get("time_dependent"):
            b64_files = {k: "time-dependent" for k in b64_files}
    rec["files"] = text_files
    if b64_files:
        rec["files_b64"] = b64_files
    if group == "xml" and "unknown_option" not in c["name"]:
        want = xml_direct(c)
        assert files["items.xml"] == want, (c["name"], files["items.xml"], want)
    shutil.rmtree(d)
    spec_path.unlink()
    result_path.unlink()
    return rec


STDERR_LINE = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL) ([\w.]+): ")


def run_cli(name, args, root, index):
    d = root / f"cli{index:02d}"
    d.mkdir()
    (d / "spider.py").write_text(CLI_SPIDER, encoding="utf-8")
    argv = ["scrapy", "runspider", "spider.py", *args]
    scrapy_bin = Path(sys.executable).with_name("scrapy")  # the venv's console script
    settings = [
        "-s", "TELNETCONSOLE_ENABLED=False",
        "-s", "REMOTE_CONTROL_ENABLED=False",
        "-s", "MEMUSAGE_ENABLED=False",
        "-s", "LOG_FORMAT=%(levelname)s %(name)s: %(message)s",
    ]
    proc = subprocess.run(
        [str(scrapy_bin), "runspider", "spider.py", *args, *settings],
        cwd=d,
        capture_output=True,
        timeout=300,
        check=False,
    )
    lines = []
    for line in proc.stderr.decode("utf-8", "replace").splitlines():
        m = STDERR_LINE.match(line)
        if m:
            if m.group(1) in ("WARNING", "ERROR", "CRITICAL") or m.group(2).startswith(
                "scrapy.extensions.feedexport"
            ):
                lines.append(sanitize(line, d))
        elif ": error: " in line:
            lines.append(sanitize(line, d))
    files = read_files(d)
    files.pop("spider.py")
    rec = {
        "name": name,
        "cli": {
            "argv": argv,
            "extra_argv": settings,
            "exit_code": proc.returncode,
            "stderr_lines": lines,
        },
        "spider_source": CLI_SPIDER,
        "files": {k: v.decode("utf-8") for k, v in files.items()},
    }
    if proc.stdout:
        rec["stdout"] = proc.stdout.decode("utf-8")
    shutil.rmtree(d)
    return rec


def cli_params_table():
    from scrapy.exceptions import UsageError
    from scrapy.settings import Settings
    from scrapy.utils.conf import feed_process_params_from_cli

    rows = []
    for output in CLI_PARAMS:
        for flag in ("-o", "-O"):
            row = {"flag": flag, "values": output}
            try:
                if flag == "-o":
                    row["feeds"] = feed_process_params_from_cli(Settings(), list(output))
                else:
                    row["feeds"] = feed_process_params_from_cli(
                        Settings(), [], overwrite_output=list(output)
                    )
            except UsageError as e:
                row["usage_error"] = str(e)
            rows.append(row)
    row = {"flag": "-o and -O", "values": [["a.jl"], ["b.jl"]]}
    try:
        feed_process_params_from_cli(Settings(), ["a.jl"], overwrite_output=["b.jl"])
    except UsageError as e:
        row["usage_error"] = str(e)
    rows.append(row)
    s = Settings({"FEEDS": {"out.json": {"format": "jsonlines", "indent": 2}}})
    rows.append({
        "flag": "-o",
        "values": ["out.json"],
        "settings_FEEDS": {"out.json": {"format": "jsonlines", "indent": 2}},
        "feeds": feed_process_params_from_cli(s, ["out.json"]),
        "note": "FEEDS from settings replaces a -o entry with the same URI",
    })
    return rows


def get_uri_params_source():
    from scrapy.extensions.feedexport import FeedExporter

    src = inspect.getsource(FeedExporter._get_uri_params)
    return [line.strip() for line in src.splitlines() if "params[" in line or "utc_now =" in line]


class Ordered:
    """A value whose dict keys keep their order in the output."""

    def __init__(self, value):
        self.value = value


def dump(obj, indent=0, keep=False):
    pad = " " * (indent + 1)
    if isinstance(obj, Ordered):
        return dump(obj.value, indent, True)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        keys = list(obj) if keep else sorted(obj)
        parts = [f"{pad}{json.dumps(k)}: {dump(obj[k], indent + 1, keep)}" for k in keys]
        return "{\n" + ",\n".join(parts) + "\n" + " " * indent + "}"
    if isinstance(obj, (list, tuple)):
        if not obj:
            return "[]"
        parts = [f"{pad}{dump(v, indent + 1, keep)}" for v in obj]
        return "[\n" + ",\n".join(parts) + "\n" + " " * indent + "]"
    return json.dumps(obj)


def main(only=None):
    import itemadapter

    root = Path(tempfile.mkdtemp(prefix="trawl-feed-options-"))
    groups = {}
    index = 0
    counts = {}
    for group, make in GROUPS:
        if only and group not in only:
            continue
        recs = []
        for c in make():
            check_json_roundtrip(c["items"])
            rec = run_case(group, c, root, index)
            index += 1
            rec["items"] = Ordered(rec["items"])
            rec["settings"] = Ordered(rec["settings"])
            recs.append(rec)
        if group == "unknown_schemes":
            for i, (name, args) in enumerate(CLI_RUNS):
                recs.append(run_cli(name, args, root, i))
        names = [r["name"] for r in recs]
        assert len(names) == len(set(names)), group
        groups[group] = recs
        counts[group] = len(recs)
        print(f"{group}: {len(recs)}", file=sys.stderr)
    root.rmdir()

    # %(time)s / %(batch_time)s from the fixed instant, by Scrapy's own code.
    from unittest import mock

    import scrapy.extensions.feedexport as fe

    examples = {}
    for instant in ("2026-12-04T21:10:41.123456+00:00", "2026-12-04T21:10:41+00:00"):
        class At(dt.datetime):
            @classmethod
            def now(cls, tz=None, _i=instant):
                return dt.datetime.fromisoformat(_i).astimezone(tz)

        spider = scrapy.Spider(name="x")
        with mock.patch.object(fe, "datetime", At):
            params = fe.FeedExporter._get_uri_params(None, spider, None)
        examples[instant] = {"time": params["time"], "batch_time": params["batch_time"]}
        assert re.fullmatch(TIME_RE, params["time"])
        assert re.fullmatch(BATCH_TIME_RE, params["batch_time"])

    out = {
        "versions": {
            "scrapy": scrapy.__version__,
            "itemadapter": itemadapter.__version__,
            "python": platform.python_version(),
            "zlib": zlib.ZLIB_RUNTIME_VERSION,
        },
        "base_settings": BASE_SETTINGS,
        "case_counts": counts,
        "time_formats": {
            "scrapy_code": get_uri_params_source(),
            "time_regex": TIME_RE,
            "batch_time_regex": BATCH_TIME_RE,
            "examples": examples,
        },
        "cli_params": cli_params_table(),
        "groups": groups,
    }
    sys.stdout.write(dump(out))
    sys.stdout.write("\n")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child_main(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "--only":
        main(sys.argv[2].split(","))  # a partial run, for checking a group
    else:
        main()
