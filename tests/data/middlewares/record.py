#!/usr/bin/env python3
"""Record the behaviour of three real Scrapy spider middlewares.

Usage (from the repository root; needs Scrapy 2.19 installed in that Python):

    /work/venv-ref/bin/python tests/data/middlewares/record.py

Writes ``cases.json`` next to this script.  Every expected value in it comes from
running Scrapy's own classes:

* ``scrapy.spidermiddlewares.depth.DepthMiddleware``
* ``scrapy.spidermiddlewares.urllength.UrlLengthMiddleware``
* ``scrapy.spidermiddlewares.httperror.HttpErrorMiddleware``

Each case names a middleware, its settings and spider attributes, and a list of
steps run against ONE middleware instance (stats accumulate across steps).  Step
kinds:

* ``output``    -- ``process_spider_output(response, outputs)``; ``response`` may be
  null (Scrapy's "no response", i.e. start requests).
* ``output_async`` -- the same through ``process_spider_output_async``.
* ``start``     -- ``process_start(outputs)`` (the start requests).
* ``input``     -- ``process_spider_input(response)``; when it raises and
  ``call_exception`` is true, ``process_spider_exception(response, exc)`` is called
  with the raised exception and its result recorded.
* ``exception`` -- ``process_spider_exception(response, Exception())``.

After every step the stats written by these middlewares (keys under
``request_depth_``, ``depth/``, ``urllength/``, ``httperror/``) are recorded.

Outputs carry an ``id`` (requests) or an ``_id`` field (items) so that results can
be matched to inputs whatever the URL normalisation.  The output is deterministic:
the JSON is written with sorted keys, so re-running gives identical bytes.
"""

from __future__ import annotations

import asyncio
import json
import platform
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response
from scrapy.spidermiddlewares.depth import DepthMiddleware
from scrapy.spidermiddlewares.httperror import HttpError, HttpErrorMiddleware
from scrapy.spidermiddlewares.urllength import UrlLengthMiddleware
from scrapy.spiders import Spider
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

HERE = Path(__file__).resolve().parent

MIDDLEWARES = {
    "depth": DepthMiddleware,
    "urllength": UrlLengthMiddleware,
    "httperror": HttpErrorMiddleware,
}

STAT_PREFIXES = ("request_depth_", "depth/", "urllength/", "httperror/")


class RefSpider(Spider):
    name = "ref"


# ---------------------------------------------------------------------------
# Case builders (inputs only; expected values are filled in by running Scrapy)
# ---------------------------------------------------------------------------


def resp(url: str, status: int = 200, meta: dict | None = None) -> dict:
    """A response to ``Request(url, meta=meta)``; its meta is the request's meta."""
    return {"url": url, "status": status, "meta": dict(meta or {})}


def req(url: str, meta: dict | None = None, priority: int = 0) -> dict:
    return {"type": "request", "url": url, "meta": dict(meta or {}), "priority": priority}


def item(**fields: Any) -> dict:
    return {"type": "item", "item": dict(fields)}


def out_step(response: dict | None, outputs: list[dict], kind: str = "output") -> dict:
    return {"kind": kind, "response": response, "outputs": outputs}


def start_step(outputs: list[dict]) -> dict:
    return {"kind": "start", "response": None, "outputs": outputs}


def in_step(response: dict, call_exception: bool = True) -> dict:
    return {"kind": "input", "response": response, "call_exception": call_exception}


def exc_step(response: dict) -> dict:
    return {"kind": "exception", "response": response, "exception": "Exception"}


def case(
    name: str,
    middleware: str,
    steps: list[dict],
    settings: dict | None = None,
    spider_attrs: dict | None = None,
    source: str = "edge",
) -> dict:
    return {
        "name": name,
        "source": source,
        "middleware": middleware,
        "settings": dict(settings or {}),
        "spider_attrs": dict(spider_attrs or {}),
        "steps": steps,
    }


DEPTH_T = "tests/test_spidermiddleware_depth.py::"
URLLEN_T = "tests/test_spidermiddleware_urllength.py::"
HTTPERR_T = "tests/test_spidermiddleware_httperror.py::"


def depth_cases() -> list[dict]:
    verbose1 = {"DEPTH_LIMIT": 1, "DEPTH_STATS_VERBOSE": True}
    cases = [
        # --- ports of Scrapy's tests -------------------------------------------
        case(
            "depth_process_spider_output",
            "depth",
            [
                out_step(resp("http://scrapytest.org"), [req("http://scrapytest.org")]),
                out_step(
                    resp("http://scrapytest.org", meta={"depth": 1}),
                    [req("http://scrapytest.org")],
                ),
            ],
            verbose1,
            source=DEPTH_T + "test_process_spider_output",
        ),
        case(
            "depth_reset",
            "depth",
            [
                out_step(
                    resp("https://example.com", meta={"depth": 5}),
                    [req("https://example.com", meta={"depth_reset": True})],
                )
            ],
            verbose1,
            source=DEPTH_T + "test_depth_reset",
        ),
        case(
            "depth_no_response",
            "depth",
            [out_step(None, [req("https://example.com")])],
            verbose1,
            source=DEPTH_T + "test_process_spider_output_no_response",
        ),
        case(
            "depth_async_no_response",
            "depth",
            [out_step(None, [req("https://example.com")], kind="output_async")],
            verbose1,
            source=DEPTH_T + "test_process_spider_output_async_no_response",
        ),
        case(
            "depth_ignored_logged_once",
            "depth",
            [
                out_step(
                    resp("http://example.com", meta={"depth": 1}),
                    [req(f"http://example.com/{i}") for i in range(3)],
                )
            ],
            verbose1,
            source=DEPTH_T + "test_ignored_logged_once",
        ),
        case(
            "depth_priority_and_non_verbose_stats",
            "depth",
            [
                out_step(
                    resp("http://toscrape.com", meta={"depth": 2}),
                    [req("http://toscrape.com")],
                )
            ],
            {"DEPTH_LIMIT": 0, "DEPTH_STATS_VERBOSE": False, "DEPTH_PRIORITY": 10},
            source=DEPTH_T + "test_priority_and_non_verbose_stats",
        ),
    ]
    # --- edge cases --------------------------------------------------------------
    mixed = [
        req("http://example.com/a", priority=5),
        item(_id="i1", title="x"),
        req("http://example.com/b", priority=-2),
        req("http://example.com/c", meta={"depth": 42, "other": "kept"}),
    ]
    for prio in (-3, -1, 1, 3):
        cases.append(
            case(
                f"depth_priority_{'neg' if prio < 0 else 'pos'}{abs(prio)}",
                "depth",
                [
                    out_step(resp("http://example.com/p", meta={"depth": 1}), mixed),
                    out_step(resp("http://example.com/q"), mixed),
                ],
                {"DEPTH_PRIORITY": prio, "DEPTH_STATS_VERBOSE": True},
            )
        )
    cases.append(
        case(
            "depth_priority_with_limit_drops",
            "depth",
            [out_step(resp("http://example.com/p", meta={"depth": 2}), mixed)],
            {"DEPTH_PRIORITY": 2, "DEPTH_LIMIT": 2, "DEPTH_STATS_VERBOSE": True},
        )
    )
    cases.append(
        case(
            "depth_limit_0_unlimited",
            "depth",
            [
                out_step(resp("http://example.com/", meta={"depth": d}), [req("http://example.com/x")])
                for d in (0, 5, 100)
            ],
            {"DEPTH_LIMIT": 0, "DEPTH_STATS_VERBOSE": True},
        )
    )
    cases.append(
        case(
            "depth_limit_2_chain",
            "depth",
            [
                out_step(
                    resp("http://example.com/", meta={"depth": d}) if d is not None else resp("http://example.com/"),
                    [req("http://example.com/x"), req("http://example.com/y")],
                )
                for d in (None, 0, 1, 2, 3)
            ],
            {"DEPTH_LIMIT": 2, "DEPTH_STATS_VERBOSE": True},
        )
    )
    cases.append(
        case(
            "depth_limit_negative",
            "depth",
            [out_step(resp("http://example.com/"), [req("http://example.com/x")])],
            {"DEPTH_LIMIT": -1, "DEPTH_STATS_VERBOSE": True},
        )
    )
    for verbose in (True, False):
        v = "verbose" if verbose else "quiet"
        cases.append(
            case(
                f"depth_response_without_depth_{v}",
                "depth",
                [
                    out_step(
                        resp("http://example.com/", meta={"other": 1}),
                        [req("http://example.com/1"), req("http://example.com/2"), item(_id="i")],
                    ),
                    out_step(resp("http://example.com/"), []),
                    out_step(resp("http://example.com/"), [item(_id="only")]),
                ],
                {"DEPTH_STATS_VERBOSE": verbose},
            )
        )
    cases.append(
        case(
            "depth_defaults_stats",
            "depth",
            [
                out_step(resp("http://example.com/", meta={"depth": 3}), [req("http://example.com/a")]),
                out_step(resp("http://example.com/", meta={"depth": 1}), [req("http://example.com/b")]),
            ],
        )
    )
    cases.append(
        case(
            "depth_reset_with_limit",
            "depth",
            [
                out_step(
                    resp("http://example.com/", meta={"depth": 5}),
                    [
                        req("http://example.com/kept", meta={"depth_reset": True}, priority=1),
                        req("http://example.com/dropped"),
                        req("http://example.com/false", meta={"depth_reset": False}),
                    ],
                )
            ],
            {"DEPTH_LIMIT": 1, "DEPTH_PRIORITY": 1, "DEPTH_STATS_VERBOSE": True},
        )
    )
    cases.append(
        case(
            "depth_start_requests_unchanged",
            "depth",
            [
                start_step(
                    [
                        req("http://example.com/s1", priority=3),
                        req("http://example.com/s2", meta={"depth": 7}),
                        item(_id="s-item"),
                    ]
                )
            ],
            {"DEPTH_LIMIT": 1, "DEPTH_PRIORITY": 1, "DEPTH_STATS_VERBOSE": True},
        )
    )
    cases.append(
        case(
            "depth_start_request_depth_reset_popped",
            "depth",
            [start_step([req("http://example.com/s", meta={"depth_reset": True})])],
            {"DEPTH_STATS_VERBOSE": True},
        )
    )
    return cases


def urllength_cases() -> list[dict]:
    base = "http://scrapytest.org"
    scrapy_reqs = [req("http://scrapytest.org/"), req("http://scrapytest.org/this_is_a_long_url")]
    cases = [
        case(
            "urllength_middleware_works",
            "urllength",
            [out_step(resp(base), scrapy_reqs)],
            {"URLLENGTH_LIMIT": 25},
            source=URLLEN_T + "test_middleware_works",
        ),
        case(
            "urllength_not_configured_without_limit",
            "urllength",
            [],
            {"URLLENGTH_LIMIT": 0},
            source=URLLEN_T + "test_not_configured_without_limit",
        ),
        case(
            "urllength_logging",
            "urllength",
            [out_step(resp(base), scrapy_reqs)],
            {"URLLENGTH_LIMIT": 25},
            source=URLLEN_T + "test_logging",
        ),
    ]

    def url_of_len(n: int) -> str:
        prefix = "http://example.com/"
        return prefix + "a" * (n - len(prefix))

    cases.append(
        case(
            "urllength_exact_limit_and_one_over",
            "urllength",
            [
                out_step(
                    resp("http://example.com/"),
                    [
                        req(url_of_len(39)),
                        req(url_of_len(40)),
                        req(url_of_len(41)),
                        item(_id="i", url=url_of_len(100)),
                        req(url_of_len(60)),
                    ],
                )
            ],
            {"URLLENGTH_LIMIT": 40},
        )
    )
    cases.append(
        case(
            "urllength_default_limit_2083",
            "urllength",
            [out_step(resp("http://example.com/"), [req(url_of_len(2083)), req(url_of_len(2084))])],
        )
    )
    # The length counted is that of the escaped URL ("a b/ü" -> "a%20b/%C3%BC").
    cases.append(
        case(
            "urllength_counts_escaped_url",
            "urllength",
            [
                out_step(
                    resp("http://example.com/"),
                    [req("http://example.com/a b/\u00fc"), req("http://example.com/ab/u")],
                )
            ],
            {"URLLENGTH_LIMIT": 29},
        )
    )
    cases.append(
        case(
            "urllength_start_requests",
            "urllength",
            [start_step([req(url_of_len(30)), req(url_of_len(31)), item(_id="s")])],
            {"URLLENGTH_LIMIT": 30},
        )
    )
    cases.append(
        case(
            "urllength_accumulates_stats",
            "urllength",
            [
                out_step(resp("http://example.com/"), [req(url_of_len(31)), req(url_of_len(32))]),
                out_step(resp("http://example.com/"), [req(url_of_len(33)), req(url_of_len(20))]),
            ],
            {"URLLENGTH_LIMIT": 30},
        )
    )
    return cases


def httperror_cases() -> list[dict]:
    u = "http://scrapytest.org"
    cases = [
        case(
            "httperror_process_spider_input",
            "httperror",
            [in_step(resp(u, 200)), in_step(resp(u, 404))],
            source=HTTPERR_T + "TestHttpErrorMiddleware::test_process_spider_input",
        ),
        case(
            "httperror_process_spider_exception",
            "httperror",
            [
                {"kind": "exception", "response": resp(u, 404), "exception": "HttpError"},
                exc_step(resp(u, 404)),
            ],
            source=HTTPERR_T + "TestHttpErrorMiddleware::test_process_spider_exception",
        ),
        case(
            "httperror_handle_httpstatus_list_meta",
            "httperror",
            [in_step(resp(u, 404, {"handle_httpstatus_list": [404]}))],
            source=HTTPERR_T + "TestHttpErrorMiddleware::test_handle_httpstatus_list",
        ),
        case(
            "httperror_handle_httpstatus_list_spider_attr",
            "httperror",
            [in_step(resp(u, 404))],
            spider_attrs={"handle_httpstatus_list": [404]},
            source=HTTPERR_T + "TestHttpErrorMiddleware::test_handle_httpstatus_list",
        ),
        case(
            "httperror_settings_process_spider_input",
            "httperror",
            [in_step(resp(u, 200)), in_step(resp(u, 404)), in_step(resp(u, 402))],
            {"HTTPERROR_ALLOWED_CODES": [402]},
            source=HTTPERR_T + "TestHttpErrorMiddlewareSettings::test_process_spider_input",
        ),
        case(
            "httperror_settings_meta_overrides_settings",
            "httperror",
            [
                in_step(resp(u, 404, {"handle_httpstatus_list": [404]})),
                in_step(resp(u, 402, {"handle_httpstatus_list": [404]})),
            ],
            {"HTTPERROR_ALLOWED_CODES": [402]},
            source=HTTPERR_T + "TestHttpErrorMiddlewareSettings::test_meta_overrides_settings",
        ),
        case(
            "httperror_settings_spider_override_settings",
            "httperror",
            [in_step(resp(u, 404)), in_step(resp(u, 402))],
            {"HTTPERROR_ALLOWED_CODES": [402]},
            spider_attrs={"handle_httpstatus_list": [404]},
            source=HTTPERR_T + "TestHttpErrorMiddlewareSettings::test_spider_override_settings",
        ),
        case(
            "httperror_allow_all_process_spider_input",
            "httperror",
            [in_step(resp(u, 200)), in_step(resp(u, 404))],
            {"HTTPERROR_ALLOW_ALL": True},
            source=HTTPERR_T + "TestHttpErrorMiddlewareHandleAll::test_process_spider_input",
        ),
        case(
            "httperror_allow_all_meta_overrides_settings",
            "httperror",
            [
                in_step(resp(u, 404, {"handle_httpstatus_list": [404]})),
                in_step(resp(u, 402, {"handle_httpstatus_list": [404]})),
            ],
            {"HTTPERROR_ALLOW_ALL": True},
            source=HTTPERR_T + "TestHttpErrorMiddlewareHandleAll::test_meta_overrides_settings",
        ),
        case(
            "httperror_allow_all_false_meta",
            "httperror",
            [
                in_step(resp(u, 404, {"handle_httpstatus_all": False})),
                in_step(resp(u, 402, {"handle_httpstatus_all": True})),
            ],
            source=HTTPERR_T + "TestHttpErrorMiddlewareHandleAll::test_httperror_allow_all_false",
        ),
    ]
    # The integration tests, at the middleware level: each start URL's response goes
    # through process_spider_input and, when it raises and the errback does not handle
    # it, process_spider_exception.
    mock = "http://127.0.0.1:8998/status?n="
    for name in ("test_middleware_works", "test_logging_level"):
        cases.append(
            case(
                f"httperror_integrational_{name[5:]}",
                "httperror",
                [in_step(resp(mock + str(s), s)) for s in (200, 404, 402, 500)],
                source=HTTPERR_T + "TestHttpErrorMiddlewareIntegrational::" + name,
            )
        )
    # test_logging: the errback bypasses 402 (handles the HttpError itself), so
    # process_spider_exception never sees it.
    cases.append(
        case(
            "httperror_integrational_logging",
            "httperror",
            [
                in_step(resp(mock + str(s), s), call_exception=(s != 402))
                for s in (200, 404, 402, 500)
            ],
            source=HTTPERR_T + "TestHttpErrorMiddlewareIntegrational::test_logging",
        )
    )

    # --- every status under every combination of settings / spider attribute / meta
    statuses = (200, 206, 301, 402, 404, 500)
    combos: list[tuple[str, dict, dict, dict]] = [
        ("defaults", {}, {}, {}),
        ("allowed_402", {"HTTPERROR_ALLOWED_CODES": [402]}, {}, {}),
        ("allowed_301_404_500", {"HTTPERROR_ALLOWED_CODES": [301, 404, 500]}, {}, {}),
        ("allow_all", {"HTTPERROR_ALLOW_ALL": True}, {}, {}),
        ("allow_all_false", {"HTTPERROR_ALLOW_ALL": False}, {}, {}),
        ("meta_list_404", {}, {}, {"handle_httpstatus_list": [404]}),
        ("meta_list_404_over_allowed_402", {"HTTPERROR_ALLOWED_CODES": [402]}, {}, {"handle_httpstatus_list": [404]}),
        ("meta_list_404_over_allow_all", {"HTTPERROR_ALLOW_ALL": True}, {}, {"handle_httpstatus_list": [404]}),
        ("meta_list_empty_over_allow_all", {"HTTPERROR_ALLOW_ALL": True}, {}, {"handle_httpstatus_list": []}),
        ("meta_list_empty_over_allowed_404", {"HTTPERROR_ALLOWED_CODES": [404]}, {}, {"handle_httpstatus_list": []}),
        ("meta_list_301_500", {}, {}, {"handle_httpstatus_list": [301, 500]}),
        ("meta_all_true", {}, {}, {"handle_httpstatus_all": True}),
        ("meta_all_false", {}, {}, {"handle_httpstatus_all": False}),
        ("meta_all_false_with_allow_all", {"HTTPERROR_ALLOW_ALL": True}, {}, {"handle_httpstatus_all": False}),
        ("meta_all_false_with_allowed_404", {"HTTPERROR_ALLOWED_CODES": [404]}, {}, {"handle_httpstatus_all": False}),
        ("meta_all_true_with_meta_list_404", {}, {}, {"handle_httpstatus_all": True, "handle_httpstatus_list": [404]}),
        ("meta_all_false_with_meta_list_404", {"HTTPERROR_ALLOW_ALL": True}, {}, {"handle_httpstatus_all": False, "handle_httpstatus_list": [404]}),
        ("spider_list_404", {}, {"handle_httpstatus_list": [404]}, {}),
        ("spider_list_404_over_allowed_402", {"HTTPERROR_ALLOWED_CODES": [402]}, {"handle_httpstatus_list": [404]}, {}),
        ("spider_list_404_with_allow_all", {"HTTPERROR_ALLOW_ALL": True}, {"handle_httpstatus_list": [404]}, {}),
        ("spider_list_empty_over_allowed_404", {"HTTPERROR_ALLOWED_CODES": [404]}, {"handle_httpstatus_list": []}, {}),
        ("meta_list_402_over_spider_list_404", {}, {"handle_httpstatus_list": [404]}, {"handle_httpstatus_list": [402]}),
        ("meta_all_true_over_spider_list_404", {}, {"handle_httpstatus_list": [404]}, {"handle_httpstatus_all": True}),
        ("meta_all_false_with_spider_list_404", {}, {"handle_httpstatus_list": [404]}, {"handle_httpstatus_all": False}),
    ]
    for label, settings, attrs, meta in combos:
        steps = [in_step(resp(f"http://example.com/{s}", s, meta)) for s in statuses]
        steps.append(exc_step(resp("http://example.com/x", 500, meta)))
        cases.append(case(f"httperror_matrix_{label}", "httperror", steps, settings, attrs))
    return cases


# ---------------------------------------------------------------------------
# Running Scrapy
# ---------------------------------------------------------------------------


def build_request(spec: dict, ident: int) -> Request:
    return Request(spec["url"], meta=dict(spec["meta"]), priority=spec["priority"])


def build_response(spec: dict) -> Response:
    request = Request(spec["url"], meta=dict(spec["meta"]))
    return Response(spec["url"], status=spec["status"], request=request)


def build_outputs(specs: list[dict]) -> tuple[list[Any], dict[int, int]]:
    objs: list[Any] = []
    ids: dict[int, int] = {}
    for i, spec in enumerate(specs):
        spec["id"] = i
        if spec["type"] == "request":
            o: Any = build_request(spec, i)
            spec["scrapy_url"] = o.url  # after Scrapy's safe_url_string
        else:
            o = dict(spec["item"])
        ids[id(o)] = i
        objs.append(o)
    return objs, ids


def describe_outputs(result: list[Any], ids: dict[int, int]) -> list[dict]:
    out = []
    for o in result:
        ident = ids[id(o)]  # KeyError: a middleware returned a new object
        if isinstance(o, Request):
            out.append(
                {
                    "type": "request",
                    "id": ident,
                    "url": o.url,
                    "url_len": len(o.url),
                    "meta": dict(o.meta),
                    "priority": o.priority,
                }
            )
        else:
            out.append({"type": "item", "id": ident, "item": dict(o)})
    return out


async def _collect(agen: Any) -> list[Any]:
    return [o async for o in agen]


async def _agen(items: list[Any]) -> Any:
    for o in items:
        yield o


def our_stats(crawler: Any) -> dict:
    return {
        k: v
        for k, v in sorted(crawler.stats.get_stats().items())
        if k.startswith(STAT_PREFIXES)
    }


def run_case(c: dict) -> None:
    crawler = get_crawler(RefSpider, dict(c["settings"]))
    crawler.spider = crawler._create_spider()
    for k, v in c["spider_attrs"].items():
        setattr(crawler.spider, k, v)
    crawler.stats.open_spider()
    try:
        mw = build_from_crawler(MIDDLEWARES[c["middleware"]], crawler)
    except NotConfigured:
        c["from_crawler"] = "NotConfigured"
        assert not c["steps"], c["name"]
        return
    c["from_crawler"] = "ok"
    for step in c["steps"]:
        kind = step["kind"]
        response = build_response(step["response"]) if step["response"] else None
        expected: dict[str, Any] = {}
        if kind in ("output", "output_async", "start"):
            objs, ids = build_outputs(step["outputs"])
            if kind == "output":
                result = list(mw.process_spider_output(response, objs))
            elif kind == "output_async":
                result = asyncio.run(
                    _collect(mw.process_spider_output_async(response, _agen(objs)))
                )
            else:
                result = asyncio.run(_collect(mw.process_start(_agen(objs))))
            expected["outputs"] = describe_outputs(result, ids)
        elif kind == "input":
            try:
                mw.process_spider_input(response)
            except HttpError as e:
                expected["raises"] = "HttpError"
                if step["call_exception"]:
                    r = mw.process_spider_exception(response, e)
                    expected["exception_result"] = None if r is None else list(r)
                else:
                    expected["exception_result"] = None
            else:
                expected["raises"] = None
                expected["exception_result"] = None
        elif kind == "exception":
            exc = HttpError(response) if step["exception"] == "HttpError" else Exception()
            r = mw.process_spider_exception(response, exc)
            expected["result"] = None if r is None else list(r)
        else:
            raise ValueError(kind)
        expected["stats"] = our_stats(crawler)
        step["expected"] = expected
    crawler.stats.close_spider()


def check_against_scrapy_tests(cases: list[dict]) -> None:
    """The assertions of Scrapy's own tests, on the recorded ports."""
    by = {c["name"]: c for c in cases}

    def st(name: str, i: int = -1) -> dict:
        return by[name]["steps"][i]["expected"]

    e = by["depth_process_spider_output"]["steps"]
    assert len(e[0]["expected"]["outputs"]) == 1
    assert e[0]["expected"]["stats"]["request_depth_count/1"] == 1
    assert e[1]["expected"]["outputs"] == []
    assert e[1]["expected"]["stats"]["request_depth_max"] == 1
    o = st("depth_reset")["outputs"][0]
    assert o["meta"] == {"depth": 0}
    assert st("depth_reset")["stats"]["request_depth_count/0"] == 1
    for n in ("depth_no_response", "depth_async_no_response"):
        assert "depth" not in st(n)["outputs"][0]["meta"]
        assert "request_depth_count/0" not in st(n)["stats"]
    assert st("depth_ignored_logged_once")["outputs"] == []
    assert st("depth_ignored_logged_once")["stats"]["depth/request_ignored_count"] == 3
    e2 = st("depth_priority_and_non_verbose_stats")
    assert [(o["priority"], o["meta"]["depth"]) for o in e2["outputs"]] == [(-30, 3)]
    assert "request_depth_count/3" not in e2["stats"]
    assert e2["stats"]["request_depth_max"] == 3
    for n in ("urllength_middleware_works", "urllength_logging"):
        assert [o["id"] for o in st(n)["outputs"]] == [0]
        assert st(n)["stats"]["urllength/request_ignored_count"] == 1
    assert by["urllength_not_configured_without_limit"]["from_crawler"] == "NotConfigured"
    raises = {
        n: [s["expected"].get("raises") for s in by[n]["steps"]]
        for n in by
        if n.startswith("httperror_") and "matrix" not in n
    }
    assert raises["httperror_process_spider_input"] == [None, "HttpError"]
    assert [s["expected"]["result"] for s in by["httperror_process_spider_exception"]["steps"]] == [[], None]
    assert raises["httperror_handle_httpstatus_list_meta"] == [None]
    assert raises["httperror_handle_httpstatus_list_spider_attr"] == [None]
    assert raises["httperror_settings_process_spider_input"] == [None, "HttpError", None]
    assert raises["httperror_settings_meta_overrides_settings"] == [None, "HttpError"]
    assert raises["httperror_settings_spider_override_settings"] == [None, "HttpError"]
    assert raises["httperror_allow_all_process_spider_input"] == [None, None]
    assert raises["httperror_allow_all_meta_overrides_settings"] == [None, "HttpError"]
    assert raises["httperror_allow_all_false_meta"] == ["HttpError", None]
    for n in ("httperror_integrational_middleware_works", "httperror_integrational_logging_level"):
        assert st(n)["stats"] == {
            "httperror/response_ignored_count": 3,
            "httperror/response_ignored_status_count/402": 1,
            "httperror/response_ignored_status_count/404": 1,
            "httperror/response_ignored_status_count/500": 1,
        }
    assert "httperror/response_ignored_status_count/402" not in st("httperror_integrational_logging")["stats"]


def main() -> None:
    warnings.simplefilter("error")  # no deprecated API use slips in
    cases = depth_cases() + urllength_cases() + httperror_cases()
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    for c in cases:
        run_case(c)
    check_against_scrapy_tests(cases)
    data = {
        "description": "Reference behaviour of Scrapy's DepthMiddleware, "
        "UrlLengthMiddleware and HttpErrorMiddleware, recorded by running them.",
        "generator": "tests/data/middlewares/record.py",
        "versions": {
            "scrapy": version("scrapy"),
            "python": platform.python_version(),
        },
        "count": len(cases),
        "cases": cases,
    }
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    (HERE / "cases.json").write_text(text, encoding="utf-8")
    print(f"wrote {len(cases)} cases to {HERE / 'cases.json'}")


if __name__ == "__main__":
    main()
