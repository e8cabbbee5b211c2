"""Records Python's logging.Formatter output and Scrapy 2.19's log messages -> logging.json.

Usage (from the repository root, in a venv with scrapy==2.19.0, CPython 3.11):

    python tests/data/logging/gen_logging.py

The script sets TZ=UTC itself (os.environ["TZ"] = "UTC"; time.tzset()), so
%(asctime)s, %Z and %z are rendered in UTC whatever the machine's zone.

Format: {"description", "generator", "versions": {"scrapy", "python"},
"formats": [...], "short_names": [...], "logformatter": [...]}.

- formats: logging.Formatter(fmt, datefmt, style="%").format(record) for a record
  made by logging.LogRecord(name, levelno, pathname="x.py", lineno=1, msg=message,
  args=None, exc_info=None) while time.time() returns `created` (so `msecs` is
  what CPython derives from `created`: int(frac(created) * 1000) + 0.0 in 3.11),
  then process=4242, processName="MainProcess", thread=140000000000001,
  threadName="MainThread", relativeCreated=1234.5678 (fixed). Each vector:
  {"fmt", "datefmt" (string or null), "name", "levelname", "levelno", "message",
  "created", "msecs", "output"}.
- short_names: Scrapy's LOG_SHORT_NAMES: the record.name a handler's
  scrapy.utils.log.TopLevelFormatter(["scrapy"]) filter leaves (the filter
  _get_handler adds when LOG_SHORT_NAMES is true). Each: {"name", "short"}.
- logformatter: scrapy.logformatter.LogFormatter's methods called as Scrapy 2.19
  calls them. Each: {"method", "inputs" (a description of the arguments), "level"
  (level name), "levelno", "msg" (the format string returned), "formatted" (the
  record's getMessage() after scrapy.utils.log.logformatter_adapter, i.e. what
  logging renders for %(message)s), "logger" (the logger Scrapy logs it on),
  "exc_info" (whether Scrapy attaches a traceback to the record), "line" (the
  record formatted with Scrapy's default LOG_FORMAT / LOG_DATEFORMAT at
  created=1764892800.123456, without the traceback)}.
"""

import dataclasses
import json
import logging
import os
import sys
import time
import warnings
from unittest import mock

os.environ["TZ"] = "UTC"
time.tzset()

import scrapy  # noqa: E402
from scrapy import Request, Spider  # noqa: E402
from scrapy.exceptions import DropItem  # noqa: E402
from scrapy.http import HtmlResponse, Response  # noqa: E402
from scrapy.logformatter import LogFormatter  # noqa: E402
from scrapy.settings import default_settings  # noqa: E402
from scrapy.utils.log import TopLevelFormatter, logformatter_adapter  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402
from twisted.python.failure import Failure  # noqa: E402

LOG_FORMAT = default_settings.LOG_FORMAT
LOG_DATEFORMAT = default_settings.LOG_DATEFORMAT
assert LOG_FORMAT == "%(asctime)s [%(name)s] %(levelname)s: %(message)s", LOG_FORMAT
assert LOG_DATEFORMAT == "%Y-%m-%d %H:%M:%S", LOG_DATEFORMAT

# 2025-12-05 00:00:00.123456 UTC; 2023-11-14 22:13:20 UTC; 2000-02-29 00:00:00.999 UTC
TS0 = 1764892800.123456
TS1 = 1700000000.0
TS2 = 951782400.999
TIMESTAMPS = [TS0, TS1, TS2]

LEVELS = [
    ("DEBUG", logging.DEBUG),
    ("INFO", logging.INFO),
    ("WARNING", logging.WARNING),
    ("ERROR", logging.ERROR),
    ("CRITICAL", logging.CRITICAL),
]


def make_record(name, levelno, message, created, args=None):
    """A LogRecord built as if logging had made it at time `created`."""
    ns = int(round(created * 1e9))
    with mock.patch("time.time", return_value=created), mock.patch(
        "time.time_ns", return_value=ns
    ):
        rec = logging.LogRecord(
            name, levelno, pathname="x.py", lineno=1, msg=message, args=args, exc_info=None
        )
    assert rec.created == created, (rec.created, created)
    rec.relativeCreated = 1234.5678
    rec.process = 4242
    rec.processName = "MainProcess"
    rec.thread = 140000000000001
    rec.threadName = "MainThread"
    return rec


def format_vector(fmt, datefmt, name, levelno, message, created):
    rec = make_record(name, levelno, message, created)
    out = logging.Formatter(fmt, datefmt, style="%").format(rec)
    return {
        "fmt": fmt,
        "datefmt": datefmt,
        "name": name,
        "levelname": logging.getLevelName(levelno),
        "levelno": levelno,
        "message": message,
        "created": created,
        "msecs": rec.msecs,
        "output": out,
    }


def formats():
    vs = []
    eng = "scrapy.core.engine"
    msg = "Spider opened"
    # Scrapy's defaults, with LOG_DATEFORMAT and with Python's default asctime.
    for ts in TIMESTAMPS:
        for datefmt in (LOG_DATEFORMAT, None):
            vs.append(format_vector(LOG_FORMAT, datefmt, eng, logging.INFO, msg, ts))
    # All five levels under Scrapy's defaults.
    for _, lvl in LEVELS:
        if lvl == logging.INFO:
            continue  # recorded above
        vs.append(format_vector(LOG_FORMAT, LOG_DATEFORMAT, eng, lvl, "Something happened", TS1))
    # Fields, widths and flags.
    field_fmts = [
        "%(asctime)s",
        "%(name)s",
        "%(levelname)s",
        "%(levelno)s",
        "%(levelno)d",
        "%(levelno)03d",
        "%(message)s",
        "%(message)r",
        "%(msecs)03d",
        "%(msecs)d",
        "%(msecs)s",
        "%(msecs)f",
        "%(created)f",
        "%(created).3f",
        "%(created)d",
        "%(created)s",
        "%(relativeCreated)d",
        "%(process)d",
        "%(processName)s",
        "%(thread)d",
        "%(threadName)s",
        "%(filename)s",
        "%(module)s",
        "%(pathname)s",
        "%(lineno)d",
        "%(funcName)s",
        "%(levelname)-8s|",
        "%(levelname)8s|",
        "%(levelname).1s",
        "%(name).5s",
        "[%(name)-20s]",
        "[%(name)20s]",
        "100%% %(message)s",
        "%(asctime)s.%(msecs)03d %(levelname)s %(message)s",
        "%(asctime)s,%(msecs)d %(name)s %(levelname)s %(message)s",
        "%(levelname)s:%(name)s:%(message)s",
        "%(name)s - %(levelname)s - %(message)s [pid %(process)d]",
    ]
    for f in field_fmts:
        vs.append(format_vector(f, LOG_DATEFORMAT, eng, logging.WARNING, msg, TS0))
    # msecs / created formats at the other two instants (leap day: 0.999 -> msecs 998).
    for ts in (TS1, TS2):
        for f in ("%(msecs)03d", "%(created)f", "%(asctime)s"):
            vs.append(format_vector(f, None, "scrapy", logging.INFO, msg, ts))
    # datefmt strftime directives (portable, C-locale).
    datefmts = [
        "%Y",
        "%m",
        "%d",
        "%H",
        "%M",
        "%S",
        "%y",
        "%b",
        "%B",
        "%a",
        "%A",
        "%j",
        "%p",
        "%I",
        "%w",
        "%Z",
        "%z",
        "%%",
        "%d/%b/%Y:%H:%M:%S %z",
        "%a, %d %b %Y %H:%M:%S",
        "%I:%M %p",
        "date: %Y.%m.%d time: %H-%M-%S",
        "%Y-%m-%dT%H:%M:%S%z",
        "no directives",
        "",
    ]
    for df in datefmts:
        # One directive: at 22:13:20 (PM) and on the leap day (AM, day 060, year 00).
        # Several directives, literal text, none, or "" (falsy: Python's default): all three.
        single = len(df) == 2 and df.startswith("%")
        for ts in (TS1, TS2) if single else (TS0, TS1, TS2):
            vs.append(format_vector("%(asctime)s", df, "scrapy", logging.INFO, msg, ts))
    # Odd messages.
    odd = [
        "line one\nline two\nline three",
        "trailing newline\n",
        "caf\u00e9 \u2014 na\u00efve \u65e5\u672c\u8a9e \U0001f600",
        "100% done",
        "%(name)s is not interpolated",
        "",
        "tab\there",
    ]
    for m in odd:
        vs.append(format_vector(LOG_FORMAT, LOG_DATEFORMAT, "quotes", logging.INFO, m, TS0))
    vs.append(format_vector("%(message)r", None, "quotes", logging.INFO, odd[0], TS0))
    vs.append(format_vector("%(message)r", None, "quotes", logging.INFO, odd[2], TS0))
    # Non-ASCII logger name and a long name under a precision.
    vs.append(format_vector(LOG_FORMAT, LOG_DATEFORMAT, "caf\u00e9.spider", logging.ERROR, msg, TS0))
    vs.append(format_vector("%(name).5s|%(levelname)-10s|", None, "caf\u00e9.spider", logging.ERROR, msg, TS0))
    return vs


SHORT_NAME_INPUTS = [
    "scrapy",
    "scrapy.core.engine",
    "scrapy.core.scraper",
    "scrapy.extensions.logstats",
    "scrapy.utils.log",
    "scrapy.",
    "scrapy..x",
    "Scrapy.core.engine",
    "scrapyx.core",
    "scrapy_redis.scheduler",
    "myproject.pipelines",
    "myproject.spiders.quotes",
    "quotes",
    "root",
    "py.warnings",
    "stdout",
    "twisted",
    "asyncio",
    "",
]


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.names = []

    def emit(self, record):
        self.names.append(record.name)


def short_names():
    h = _Collect()
    h.addFilter(TopLevelFormatter(["scrapy"]))
    out = []
    for name in SHORT_NAME_INPUTS:
        rec = make_record(name, logging.INFO, "x", TS0)
        h.handle(rec)  # applies the handler's filters, as logging does
        out.append({"name": name, "short": h.names[-1]})
    return out


class QuotesSpider(Spider):
    name = "quotes"


# As if the spider lived in a project module (global_object_name reads it).
QuotesSpider.__module__ = "myproject.spiders.quotes"


class BookItem(scrapy.Item):
    title = scrapy.Field()
    price = scrapy.Field()
    tags = scrapy.Field()
    author = scrapy.Field()


@dataclasses.dataclass
class DataItem:
    title: str
    n: int


URL = "https://quotes.toscrape.com/page/2/"


def describe_item(item):
    if isinstance(item, dict):
        kind = "dict"
        data = item
    elif isinstance(item, scrapy.Item):
        kind = "scrapy.Item (" + type(item).__name__ + ")"
        data = dict(item)
    else:
        kind = "dataclass (" + type(item).__name__ + ")"
        data = dataclasses.asdict(item)
    # Lists of (key, value) pairs keep the insertion order the item has.
    return {"item_type": kind, "item": [[k, v] for k, v in data.items()]}


def describe_request(req):
    d = {"method": req.method, "url": req.url}
    if req.flags:
        d["request_flags"] = list(req.flags)
    ref = req.headers.get("Referer")
    if ref is not None:
        d["referer_hex"] = ref.hex()
    return d


def describe_response(resp):
    if resp is None:
        return {"response": None}
    if isinstance(resp, Failure):
        return {"response": "Failure", "response_error": repr(resp.value)}
    d = {"response_status": resp.status, "response_url": resp.url}
    if resp.flags:
        d["response_flags"] = list(resp.flags)
    return d


def render(method, inputs, logkws, logger_name, exc_info):
    adapted = logformatter_adapter(logkws)
    level, msg, args = adapted[0], adapted[1], tuple(adapted[2:])
    rec = make_record(logger_name, level, msg, TS0, args=args)
    formatted = rec.getMessage()
    assert formatted == msg % logkws["args"], (formatted, msg % logkws["args"])
    line = logging.Formatter(LOG_FORMAT, LOG_DATEFORMAT).format(rec)
    return {
        "method": method,
        "inputs": inputs,
        "level": logging.getLevelName(level),
        "levelno": level,
        "msg": msg,
        "formatted": formatted,
        "logger": logger_name,
        "exc_info": exc_info,
        "line": line,
    }


def failure_of(exc):
    try:
        raise exc
    except BaseException:
        return Failure()


def logformatter_cases():
    crawler = get_crawler(QuotesSpider)
    spider = QuotesSpider.from_crawler(crawler)
    lf = LogFormatter.from_crawler(crawler)
    ENGINE = "scrapy.core.engine"
    SCRAPER = "scrapy.core.scraper"
    out = []

    def resp(status=200, flags=None, url=URL, request=None):
        return HtmlResponse(url, status=status, body=b"<html></html>", flags=flags, request=request)

    # crawled(request, response, spider)
    crawled_reqs = [
        Request(URL),
        Request(URL, headers={"Referer": "https://quotes.toscrape.com/"}),
        Request(URL, flags=["cached"]),
        Request(URL),
        Request(URL, method="POST", body=b"a=1"),
        Request(URL, flags=["cached", "retry"], headers={"Referer": "https://quotes.toscrape.com/"}),
        Request(URL, headers={"Referer": b"https://quotes.toscrape.com/caf\xe9"}),
        Request("https://quotes.toscrape.com/caf\u00e9?q=\u00e9"),
    ]
    crawled_resps = [
        dict(),
        dict(),
        dict(flags=["cached"]),
        dict(status=404),
        dict(status=302),
        dict(flags=["cached"]),
        dict(),
        dict(),
    ]
    for req, rk in zip(crawled_reqs, crawled_resps):
        r = resp(request=req, url=req.url, **rk)
        inputs = {**describe_request(req), **describe_response(r)}
        out.append(render("crawled", inputs, lf.crawled(req, r, spider), ENGINE, False))

    # scraped(item, response, spider)
    item = {"title": "A", "n": 1}
    req = Request(URL)
    r200 = resp(request=req)
    book = BookItem(title="A Light in the Attic", price=51.77, tags=["poetry", "classic"])
    long_book = BookItem(
        title="The Very Long Title Of A Book That Goes On And On",
        price=13.99,
        tags=["fiction", "mystery", "thriller", "bestseller", "award-winning"],
        author="Somebody With A Long Name",
    )
    scraped_cases = [
        (item, r200),
        (item, None),
        (item, failure_of(ValueError("callback failed"))),
        ({"text": "caf\u00e9 \u201cquoted\u201d", "tags": ["a", "b"], "x": None, "ok": True, "f": 1.5}, r200),
        ({}, r200),
        (book, r200),
        (long_book, r200),
        (DataItem("A", 1), r200),
    ]
    for it, rsp in scraped_cases:
        inputs = {**describe_item(it), **describe_response(rsp)}
        out.append(render("scraped", inputs, lf.scraped(it, rsp, spider), SCRAPER, False))

    # dropped(item, exception, response, spider); level from exception.log_level,
    # else the DEFAULT_DROPITEM_LOG_LEVEL setting.
    drop_cases = [
        (DropItem("bad price"), None),
        (DropItem("x", log_level="INFO"), None),
        (DropItem("x", log_level="DEBUG"), None),
        (DropItem("x", log_level="ERROR"), None),
        (DropItem("bad price"), "INFO"),
        (DropItem("bad price"), logging.ERROR),
        (DropItem("x", log_level="WARNING"), "DEBUG"),
        (DropItem(""), None),
        (DropItem("Duplicate item found: %s" % "A"), None),
    ]
    for exc, setting in drop_cases:
        if setting is None:
            sp = spider
        else:
            c = get_crawler(QuotesSpider, {"DEFAULT_DROPITEM_LOG_LEVEL": setting})
            sp = QuotesSpider.from_crawler(c)
        inputs = {
            **describe_item(item),
            **describe_response(r200),
            "exception_type": type(exc).__name__,
            "exception": str(exc),
            "exception_log_level": exc.log_level,
            "DEFAULT_DROPITEM_LOG_LEVEL": setting
            if setting is not None
            else crawler.settings["DEFAULT_DROPITEM_LOG_LEVEL"],
        }
        out.append(render("dropped", inputs, lf.dropped(item, exc, r200, sp), SCRAPER, False))

    # item_error(item, exception, response, spider)
    for it, exc in [
        (item, ValueError("bad value")),
        (book, KeyError("price")),
    ]:
        inputs = {
            **describe_item(it),
            **describe_response(r200),
            "exception_type": type(exc).__name__,
            "exception": str(exc),
        }
        out.append(render("item_error", inputs, lf.item_error(it, exc, r200, spider), SCRAPER, True))

    # spider_error(failure, request, response, spider)
    f = failure_of(ZeroDivisionError("division by zero"))
    for rq in [
        Request(URL),
        Request(URL, headers={"Referer": "https://quotes.toscrape.com/"}),
        Request(URL, method="POST", flags=["cached"]),
    ]:
        rsp = resp(request=rq)
        inputs = {
            **describe_request(rq),
            **describe_response(rsp),
            "failure": repr(f.value),
        }
        out.append(render("spider_error", inputs, lf.spider_error(f, rq, rsp, spider), SCRAPER, True))

    # download_error(failure, request, spider, errmsg=None)
    from twisted.internet.error import DNSLookupError

    fd = failure_of(DNSLookupError("no such host"))
    for rq, errmsg in [
        (Request("https://nosuchhost.invalid/"), None),
        (Request("https://nosuchhost.invalid/"), ""),
        (Request("https://nosuchhost.invalid/"), "DNS lookup failed"),
        (Request(URL, headers={"Referer": "https://quotes.toscrape.com/"}), "Connection was refused by other side"),
    ]:
        inputs = {**describe_request(rq), "failure": repr(fd.value), "errmsg": errmsg}
        if errmsg is None:
            logkws = lf.download_error(fd, rq, spider)
        else:
            logkws = lf.download_error(fd, rq, spider, errmsg)
        out.append(render("download_error", inputs, logkws, SCRAPER, True))
    return out


def main():
    warnings.simplefilter("error")  # a deprecation warning would mean a wrong call
    out = {
        "description": (
            "Python logging.Formatter output for fixed LogRecords (TZ=UTC), Scrapy's "
            "LOG_SHORT_NAMES filter (TopLevelFormatter) and scrapy.logformatter."
            "LogFormatter's default messages. Recorded from the real libraries."
        ),
        "generator": "tests/data/logging/gen_logging.py",
        "versions": {
            "scrapy": scrapy.__version__,
            "python": "%d.%d.%d" % sys.version_info[:3],
        },
        "formats": formats(),
        "short_names": short_names(),
        "logformatter": logformatter_cases(),
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "logging.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    print(
        f"{len(out['formats'])} formats, {len(out['short_names'])} short names, "
        f"{len(out['logformatter'])} logformatter cases -> {path}"
    )


if __name__ == "__main__":
    main()
