#!/usr/bin/env python3
"""Record Protego's answers (the robots.txt parser Scrapy uses by default).

Every answer in protego_cases.json comes from running Protego here; inputs
come from three places:

(a) ``protego-suite``: Protego's own test suite, taken from its sdist
    (``--sdist DIR``, the unpacked ``protego-X.Y.Z`` folder). The suite is run
    with pytest while Protego.parse / can_fetch / crawl_delay / request_rate /
    visit_time / sitemaps / preferred_host are wrapped to log their inputs
    (robots.txt content, url, user agent, test node id). Only the inputs are
    kept; the suite's assertions are not transcribed. (test_on_fetched_robotstxt
    only parses real-world files without queries, so it yields no case.)
(b) ``google``: the inputs of every case in google_cases.json (written by
    gen_google.py), with Google's answer kept next to Protego's.
(c) ``extra``: the inputs listed in EXTRA_CASES below.

Bodies given as bytes are decoded the way Scrapy's ProtegoRobotParser does
before handing them to Protego: ``scrapy.robotstxt.decode_robotstxt`` ->
``body.decode("utf-8", errors="ignore")``.

For every case the Google library's answer is recorded too (``google_allowed``,
from the upstream robots_main CLI built by gen_google.py), unless
``--no-google`` is given.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import platform
import sys
from importlib.metadata import version
from pathlib import Path

from protego import Protego

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # importing gen_google must not leave __pycache__ here
sys.path.insert(0, str(HERE))

SCRAPY_DECODE = 'body.decode("utf-8", errors="ignore")  # scrapy.robotstxt.decode_robotstxt'


# ---------------------------------------------------------------------------
# (c) extra inputs: (name, robots body bytes, user agent, url or None)
# ---------------------------------------------------------------------------

def _long_line_cases():
    out = []
    # Google keeps at most kMaxLineLen - 1 = 16663 bytes of a line (EOL not
    # counted). Lines "Disallow: /" + "a"*k + "b" of total length L; the URL
    # is "/" + "a"*k, so it is disallowed iff the trailing "b" was dropped.
    for total in (16662, 16663, 16664, 16665, 20000):
        k = total - len("Disallow: /") - 1
        body = b"User-agent: *\nDisallow: /" + b"a" * k + b"b\n"
        out.append((f"long_line_disallow_total_{total}", body, "FooBot",
                    "http://example.com/" + "a" * k))
        out.append((f"long_line_disallow_total_{total}_full_url", body, "FooBot",
                    "http://example.com/" + "a" * k + "b"))
    # A line over the limit does not swallow the next line.
    body = b"User-agent: *\nAllow: /" + b"x" * 20000 + b"\nDisallow: /\n"
    out.append(("long_line_then_next_line", body, "FooBot", "http://example.com/y"))
    out.append(("long_line_then_next_line_match", body, "FooBot",
                "http://example.com/" + "x" * 20000))
    # Over-long user-agent line followed by a rule.
    body = b"User-agent: FooBot" + b"z" * 17000 + b"\nDisallow: /\n"
    out.append(("long_user_agent_line", body, "FooBot", "http://example.com/"))
    return out


def _combos(prefix, bodies, agents, urls):
    out = []
    for bi, body in enumerate(bodies):
        for agent in agents:
            for ui, url in enumerate(urls):
                out.append((f"{prefix}/b{bi}/{agent}/u{ui}", body, agent, url))
    return out


EXTRA_CASES = [
    # --- Request-rate ------------------------------------------------------
    *[
        (f"request_rate/{v}", f"User-agent: *\nRequest-rate: {v}\n".encode(),
         "FooBot", None)
        for v in ["1/5", "3/1m", "1/10s", "10/1h", "100/1d", "1/10s 0600-0845",
                  "1/10s 1820-1940", "1/5 0600-0845", "1/5 9-17", "2/3/4",
                  "1 / 5", "1/5s ", "1.5/5", "0/5", "1/0", "-1/5", "bogus", ""]
    ],
    ("request_rate/case_and_group",
     b"User-agent: FooBot\nREQUEST-RATE: 1/20s\nUser-agent: *\nRequest-rate: 1/5\n",
     "FooBot", None),
    ("request_rate/other_agent",
     b"User-agent: FooBot\nREQUEST-RATE: 1/20s\nUser-agent: *\nRequest-rate: 1/5\n",
     "BarBot", None),
    ("request_rate/no_group", b"Request-rate: 1/5\n", "FooBot", None),
    # --- Crawl-delay -------------------------------------------------------
    *[
        (f"crawl_delay/{v}", f"User-agent: *\nCrawl-delay: {v}\n".encode(),
         "FooBot", None)
        for v in ["5", "0", "0.5", " 10 ", "1e3", "10s", "abc", "-1", "inf", "nan",
                  "1,5", "+3", "0x10", "", "5 # comment"]
    ],
    ("crawl_delay/repeated",
     b"User-agent: *\nCrawl-delay: 5\nCrawl-delay: 7\n", "FooBot", None),
    ("crawl_delay/specific_group", b"User-agent: *\nCrawl-delay: 5\n\n"
     b"User-agent: FooBot\nCrawl-delay: 2\nDisallow: /x\n", "FooBot", None),
    ("crawl_delay/specific_group_other_agent", b"User-agent: *\nCrawl-delay: 5\n\n"
     b"User-agent: FooBot\nCrawl-delay: 2\nDisallow: /x\n", "BarBot", None),
    ("crawl_delay/no_group", b"Crawl-delay: 5\nUser-agent: *\nDisallow: /x\n",
     "FooBot", None),
    ("crawl_delay/directive_case", b"User-agent: *\nCRAWL-DELAY: 4\n", "FooBot", None),
    ("crawl_delay/between_user_agents",
     b"User-agent: FooBot\nCrawl-delay: 5\nUser-agent: *\nDisallow: /\n",
     "FooBot", "http://foo.bar/"),
    ("crawl_delay/between_user_agents_other",
     b"User-agent: FooBot\nCrawl-delay: 5\nUser-agent: *\nDisallow: /\n",
     "BarBot", "http://foo.bar/"),
    # --- Sitemap -----------------------------------------------------------
    ("sitemap/several", b"Sitemap: http://example.com/s1.xml\nUser-agent: *\n"
     b"Disallow: /x\nSitemap: http://example.com/s2.xml\n"
     b"sitemap: http://example.com/s3.xml\nSITEMAP:http://example.com/s4.xml\n",
     "FooBot", "http://example.com/x"),
    ("sitemap/relative_and_comment", b"Sitemap: /sitemap.xml # main\n"
     b"Sitemap:   http://example.com/a.xml   \nSitemap:\n", "FooBot", None),
    ("sitemap/between_user_agents",
     b"User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
     "BarBot", "http://foo.bar/"),
    ("sitemap/duplicates", b"Sitemap: http://e.com/s.xml\nSitemap: http://e.com/s.xml\n",
     "FooBot", None),
    ("sitemap/site-map_typo", b"Site-map: http://e.com/s.xml\n", "FooBot", None),
    # --- user agent without colon / spelling -------------------------------
    *_combos("ua_no_colon", [
        b"User-agent FooBot\nDisallow: /\n",
        b"User-agent FooBot\nDisallow /\n",
        b"user agent: FooBot\nDisallow: /\n",
        b"useragent: FooBot\nDisallow: /\n",
        b"User-agent:FooBot\nDisallow:/\n",
        b"User-agent :FooBot\nDisallow : /\n",
        b"User-agent\tFooBot\nDisallow\t/\n",
    ], ["FooBot", "BarBot"], ["http://example.com/x"]),
    # --- stray non-UTF-8 bytes after a user-agent value ---------------------
    *_combos("ua_non_utf8", [
        b"User-agent: FooBot\xff\xfe\nDisallow: /\n",
        b"User-agent: FooBot \xe9\nDisallow: /\n",
        b"User-agent: Foo\xe9Bot\nDisallow: /\n",
        b"User-agent: \xffFooBot\nDisallow: /\n",
        b"User-agent: FooBot\nDisallow: /a\xff\n",
    ], ["FooBot", "*"], ["http://example.com/", "http://example.com/a%FF"]),
    # --- line length ---------------------------------------------------------
    *_long_line_cases(),
    # --- ~ vs /~ and patterns not starting with / ----------------------------
    *_combos("tilde", [
        b"User-agent: *\nDisallow: ~\n",
        b"User-agent: *\nDisallow: /~\n",
        b"User-agent: *\nDisallow: /%7E\n",
        b"User-agent: *\nDisallow: /%7e\n",
        b"User-agent: *\nDisallow: x\n",
        b"User-agent: *\nDisallow: *~\n",
    ], ["FooBot"], ["http://example.com/~user/", "http://example.com/%7Euser/",
                    "http://example.com/%7euser/", "http://example.com/x",
                    "http://example.com/"]),
    # --- < vs %3C --------------------------------------------------------------
    *_combos("lt", [
        b"User-agent: *\nDisallow: /\nAllow: /a<d.html\n",
        b"User-agent: *\nDisallow: /\nAllow: /a%3Cd.html\n",
        b"User-agent: *\nDisallow: /\nAllow: /a%3cd.html\n",
        b"User-agent: *\nDisallow: /\nAllow: /a<*\n",
    ], ["FooBot"], ["http://example.com/a%3Cd.html", "http://example.com/a%3cd.html",
                    "http://example.com/a<d.html"]),
    # --- index.html -----------------------------------------------------------
    *_combos("index_html", [
        b"User-agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n",
        b"User-agent: *\nAllow: /allowed-slash/index.htm\nDisallow: /\n",
        b"User-agent: *\nDisallow: /allowed-slash/index.html\n",
        b"User-agent: *\nAllow: /index.html\nDisallow: /\n",
    ], ["FooBot"], ["http://foo.com/allowed-slash/", "http://foo.com/allowed-slash/index.html",
                    "http://foo.com/allowed-slash/index.htm", "http://foo.com/allowed-slash",
                    "http://foo.com/allowed-slash/?q=1", "http://foo.com/",
                    "http://foo.com"]),
    # --- unknown lines between user-agent lines ----------------------------------
    *_combos("unknown_between_ua", [
        b"User-agent: FooBot\nInvalid-Unknown-Line: x\nUser-agent: *\nDisallow: /\n",
        b"User-agent: FooBot\nHost: example.com\nUser-agent: *\nDisallow: /\n",
        b"User-agent: FooBot\nRequest-rate: 1/5\nUser-agent: *\nDisallow: /\n",
        b"User-agent: FooBot\nVisit-time: 0600-0845\nUser-agent: *\nDisallow: /\n",
        b"User-agent: FooBot\n# comment\n\nUser-agent: *\nDisallow: /\n",
        b"User-agent: FooBot\nDissallow: /x\nUser-agent: *\nDisallow: /\n",
    ], ["FooBot", "BarBot"], ["http://foo.bar/", "http://foo.bar/x"]),
    # --- BOM -------------------------------------------------------------------------
    *_combos("bom", [
        b"\xef\xbb\xbfUser-agent: *\nDisallow: /\n",
        b"\xef\xbb\xbfUser-agent: FooBot\nDisallow: /\n",
        b"\xef\xbbUser-agent: FooBot\nDisallow: /\n",
        b"\xefUser-agent: FooBot\nDisallow: /\n",
        b"\xef\x11\xbfUser-agent: FooBot\nDisallow: /\n",
        b"User-agent: FooBot\n\xef\xbb\xbfDisallow: /\n",
        b"\xef\xbb\xbf\xef\xbb\xbfUser-agent: FooBot\nDisallow: /\n",
        b"\xef\xbb\xbf\nUser-agent: FooBot\nDisallow: /\n",
    ], ["FooBot"], ["http://example.com/x"]),
    # --- line endings ---------------------------------------------------------------
    *_combos("eol", [
        b"User-agent: FooBot\r\nDisallow: /x\r\nAllow: /x/y\r\n",
        b"User-agent: FooBot\rDisallow: /x\rAllow: /x/y\r",
        b"User-agent: FooBot\nDisallow: /x\r\nAllow: /x/y\r",
        b"User-agent: FooBot\r\n\r\nDisallow: /x\r\n",
        b"User-agent: FooBot\n\rDisallow: /x\n",
        b"User-agent: FooBot\nDisallow: /x",
        b"User-agent: FooBot\x0cDisallow: /x\n",
        b"User-agent: FooBot\x0bDisallow: /x\n",
        b"User-agent: FooBot\nDisallow: /x\xc2\x85y\n",
        b"User-agent: FooBot\nDisallow: /x\xe2\x80\xa8y\n",
    ], ["FooBot"], ["http://example.com/x", "http://example.com/x/y",
                    "http://example.com/x%C2%85y"]),
    # --- $ and * wildcards ----------------------------------------------------------
    *_combos("wildcards", [
        b"User-agent: *\nDisallow: /*.php$\n",
        b"User-agent: *\nDisallow: /fish*\n",
        b"User-agent: *\nDisallow: /*\n",
        b"User-agent: *\nDisallow: /$\n",
        b"User-agent: *\nDisallow: $\n",
        b"User-agent: *\nDisallow: *\n",
        b"User-agent: *\nDisallow: /a$b\n",
        b"User-agent: *\nDisallow: /**/x\n",
        b"User-agent: *\nDisallow: */x\n",
        b"User-agent: *\nDisallow: /x$$\n",
        b"User-agent: *\nDisallow: /x*$\n",
        b"User-agent: *\nDisallow: /\nAllow: /*$\n",
        b"User-agent: *\nDisallow: /\nAllow: /$\n",
    ], ["FooBot"], ["http://example.com/", "http://example.com/a.php",
                    "http://example.com/a.php?x=1", "http://example.com/a.php/",
                    "http://example.com/fishy", "http://example.com/a$b",
                    "http://example.com/a%24b", "http://example.com/y/x",
                    "http://example.com/x", "http://example.com/x$"]),
    # --- empty Disallow / Allow ---------------------------------------------------
    *_combos("empty_rule", [
        b"User-agent: *\nDisallow:\n",
        b"User-agent: *\nDisallow: \n",
        b"User-agent: FooBot\nDisallow:\n\nUser-agent: *\nDisallow: /\n",
        b"User-agent: *\nAllow:\nDisallow: /\n",
        b"User-agent: *\nDisallow: # nothing\n",
    ], ["FooBot", "BarBot"], ["http://example.com/x"]),
    # --- case of directive names and values ------------------------------------------
    *_combos("case", [
        b"USER-AGENT: FooBot\nDISALLOW: /x\nALLOW: /x/y\n",
        b"user-agent: foobot\ndisallow: /x\nallow: /x/y\n",
        b"UsEr-AgEnT: FOOBOT\nDiSaLlOw: /x\nAlLoW: /x/y\n",
        b"User-agent: FooBot\nDisallow: /X\n",
    ], ["FooBot", "foobot", "FOOBOT"], ["http://example.com/x", "http://example.com/x/y",
                                        "http://example.com/X"]),
    # --- percent-encoding both ways ----------------------------------------------------
    *_combos("percent", [
        "User-agent: *\nDisallow: /foo/bar/ツ\n".encode(),
        b"User-agent: *\nDisallow: /foo/bar/%E3%83%84\n",
        b"User-agent: *\nDisallow: /foo/bar/%e3%83%84\n",
        b"User-agent: *\nDisallow: /a%2Fb\n",
        b"User-agent: *\nDisallow: /a/b\n",
        b"User-agent: *\nDisallow: /%41\n",
        b"User-agent: *\nDisallow: /A\n",
        b"User-agent: *\nDisallow: /a%20b\n",
        b"User-agent: *\nDisallow: /a b\n",
        b"User-agent: *\nDisallow: /a+b\n",
        b"User-agent: *\nDisallow: /a%2Bb\n",
        b"User-agent: *\nDisallow: /%\n",
        b"User-agent: *\nDisallow: /%zz\n",
        b"User-agent: *\nDisallow: /caf\xe9\n",
    ], ["FooBot"], ["http://example.com/foo/bar/%E3%83%84",
                    "http://example.com/foo/bar/%e3%83%84",
                    "http://example.com/foo/bar/ツ",
                    "http://example.com/a%2Fb", "http://example.com/a%2fb",
                    "http://example.com/a/b", "http://example.com/A",
                    "http://example.com/%41", "http://example.com/a%20b",
                    "http://example.com/a b", "http://example.com/a+b",
                    "http://example.com/a%2Bb", "http://example.com/%25",
                    "http://example.com/%zz", "http://example.com/caf%E9",
                    "http://example.com/caf%C3%A9"]),
    # --- user-agent matching -------------------------------------------------------------
    *_combos("agent_match", [
        b"User-agent: FooBot\nDisallow: /\n",
        b"User-agent: Foo\nDisallow: /\n",
        b"User-agent: FooBot/1.0\nDisallow: /\n",
        b"User-agent: Foo*\nDisallow: /\n",
        b"User-agent: Scrapy\nDisallow: /\n",
        b"User-agent: *\nAllow: /\nUser-agent: FooBot\nDisallow: /\n",
    ], ["FooBot", "foobot", "FooBot/1.0", "Mozilla/5.0 (compatible; FooBot/1.0)",
        "FooBot-News", "MyFooBot", "Foo", "Scrapy/2.19.0 (+https://scrapy.org)", "*", ""],
       ["http://example.com/x"]),
    # --- /robots.txt itself, queries, fragments, relative urls -------------------------
    *_combos("url_forms", [
        b"User-agent: *\nDisallow: /\n",
        b"User-agent: *\nDisallow: /*?\n",
        b"User-agent: *\nDisallow: /a;\n",
        b"User-agent: *\nDisallow: /a#b\n",
    ], ["FooBot"], ["http://example.com/robots.txt", "http://example.com/robots.txt?x",
                    "http://example.com/a?", "http://example.com/a?b",
                    "http://example.com/a;p", "http://example.com/a#frag",
                    "http://example.com", "http://example.com?q", "/a?b", "a",
                    "//example.com/a", "http://user:pw@example.com:8080/a?b#c",
                    "HTTP://EXAMPLE.COM/a", ""]),
    # --- group structure ------------------------------------------------------------------
    *_combos("groups", [
        b"Disallow: /\n",
        b"User-agent: FooBot\nUser-agent: BarBot\nDisallow: /x\n",
        b"User-agent: FooBot\nDisallow: /x\nUser-agent: FooBot\nDisallow: /y\n",
        b"User-agent: *\nDisallow: /x\nUser-agent: *\nDisallow: /y\n",
        b"User-agent: FooBot\nAllow: /x\n\nDisallow: /\n",
        b"User-agent: FooBot\nDisallow: /x # trailing comment\n",
        b"   User-agent:   FooBot   \n   Disallow:   /x   \n",
        b"User-agent: FooBot BarBot\nDisallow: /x\n",
        b"User-agent: FooBot, BarBot\nDisallow: /x\n",
    ], ["FooBot", "BarBot"], ["http://example.com/x", "http://example.com/y"]),
    # --- Host / Visit-time -------------------------------------------------------------------
    ("host_and_visit_time", b"User-agent: *\nVisit-time: 0600-0845\nHost: example.com\n"
     b"Disallow: /x\n", "FooBot", "http://example.com/x"),
]


# ---------------------------------------------------------------------------
# (a) recording Protego's own test suite
# ---------------------------------------------------------------------------

class _SuiteRecorder:
    """Wraps Protego's public API while its own test suite runs."""

    def __init__(self):
        self.calls = []  # (nodeid, kind, content, agent, url)

    def install(self):
        rec = self
        orig_parse = Protego.parse.__func__

        def parse(cls, content):
            rp = orig_parse(cls, content)
            rp._trawl_content = content
            return rp

        Protego.parse = classmethod(parse)

        def log(rp, kind, agent=None, url=None):
            content = getattr(rp, "_trawl_content", None)
            node = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
            if isinstance(content, str):
                rec.calls.append((node, kind, content, agent, url))

        orig_can_fetch = Protego.can_fetch

        def can_fetch(self, url, user_agent):
            log(self, "can_fetch", user_agent, url)
            return orig_can_fetch(self, url, user_agent)

        Protego.can_fetch = can_fetch
        for name in ("crawl_delay", "request_rate", "visit_time"):
            orig = getattr(Protego, name)

            def agent_query(self, user_agent, _orig=orig):
                log(self, "agent", user_agent)
                return _orig(self, user_agent)

            setattr(Protego, name, agent_query)
        for name in ("sitemaps", "preferred_host"):
            prop = getattr(Protego, name)

            def site_query(self, _fget=prop.fget):
                log(self, "site")
                return _fget(self)

            setattr(Protego, name, property(site_query))

    def uninstall(self, saved):
        for k, v in saved.items():
            setattr(Protego, k, v)


def collect_suite(sdist: Path) -> tuple[list, dict]:
    import pytest

    names = ["parse", "can_fetch", "crawl_delay", "request_rate", "visit_time",
             "sitemaps", "preferred_host"]
    saved = {n: Protego.__dict__[n] for n in names}
    rec = _SuiteRecorder()
    rec.install()
    cwd = os.getcwd()
    os.chdir(sdist)
    try:
        class Counter:
            passed = failed = 0

            def pytest_runtest_logreport(self, report):
                if report.when == "call":
                    if report.passed:
                        Counter.passed += 1
                    elif report.failed:
                        Counter.failed += 1

        rc = pytest.main(["-q", "-p", "no:cacheprovider", "tests"], plugins=[Counter()])
    finally:
        os.chdir(cwd)
        rec.uninstall(saved)
    assert rc == 0, f"Protego's own test suite failed (pytest exit {rc})"
    summary = {"pytest_exit": int(rc), "passed": Counter.passed, "failed": Counter.failed,
               "pytest": version("pytest")}

    # Unique (content, agent, url) combinations, in first-seen order.
    # can_fetch calls give (content, agent, url); agent-only queries not already
    # covered by a can_fetch on the same (content, agent) give url=None; a body
    # only queried for sitemaps/preferred_host gives agent=None, url=None.
    seen, with_agent, with_any = set(), set(), set()
    fetch_calls = [c for c in rec.calls if c[1] == "can_fetch"]
    for _, _, content, agent, _ in fetch_calls:
        with_agent.add((content, agent))
        with_any.add(content)
    inputs = []
    per_test: dict[str, int] = {}

    def add(node, content, agent, url):
        key = (content, agent, url)
        if key in seen:
            return
        seen.add(key)
        short = node.split("tests/", 1)[-1]
        n = per_test[short] = per_test.get(short, 0) + 1
        inputs.append((f"protego:{short}#{n}", content, agent, url))

    for node, kind, content, agent, url in rec.calls:
        if kind == "can_fetch":
            add(node, content, agent, url)
        elif kind == "agent":
            with_any.add(content)
            if (content, agent) not in with_agent:
                add(node, content, agent, None)
    for node, kind, content, agent, url in rec.calls:
        if kind == "site" and content not in with_any:
            add(node, content, None, None)
    return inputs, summary


# ---------------------------------------------------------------------------
# running Protego
# ---------------------------------------------------------------------------

def _finite(x):
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x):
        return repr(x)  # JSON has no inf/nan; kept visible if it ever happens
    return x


def _hhmm(t):
    return None if t is None else t.strftime("%H:%M")


def protego_answers(content: str, agent, url) -> dict:
    out = {}
    try:
        rp = Protego.parse(content)
    except Exception as e:  # recorded, not hidden
        return {"error": f"parse: {type(e).__name__}: {e}"}

    def attempt(key, fn):
        try:
            out[key] = fn()
        except Exception as e:
            out[key] = None
            out.setdefault("errors", {})[key] = f"{type(e).__name__}: {e}"

    attempt("allowed", lambda: None if url is None or agent is None
            else bool(rp.can_fetch(url, agent)))
    attempt("crawl_delay", lambda: None if agent is None else _finite(rp.crawl_delay(agent)))

    def rr():
        if agent is None:
            return None
        r = rp.request_rate(agent)
        return None if r is None else [r.requests, r.seconds]

    def rr_window():
        if agent is None:
            return None
        r = rp.request_rate(agent)
        if r is None or (r.start_time is None and r.end_time is None):
            return None
        return [_hhmm(r.start_time), _hhmm(r.end_time)]

    def vt():
        if agent is None:
            return None
        v = rp.visit_time(agent)
        return None if v is None else [_hhmm(v.start_time), _hhmm(v.end_time)]

    attempt("request_rate", rr)
    attempt("request_rate_window", rr_window)
    attempt("visit_time", vt)
    attempt("sitemaps", lambda: list(rp.sitemaps))
    attempt("preferred_host", lambda: rp.preferred_host)
    return out


def body_fields(body: bytes) -> dict:
    try:
        return {"robots": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {
            "robots_b64": base64.b64encode(body).decode("ascii"),
            # What Protego was given (Scrapy's decoding, see meta.protego_input).
            "protego_content": body.decode("utf-8", errors="ignore"),
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sdist", required=True,
                    help="unpacked Protego sdist folder (protego-X.Y.Z)")
    ap.add_argument("--google-build", default="/work/venv-robots/google-build",
                    help="build dir of gen_google.py (holds the robots_main binary)")
    ap.add_argument("--no-google", action="store_true",
                    help="do not record google_allowed for non-Google cases")
    args = ap.parse_args()

    sdist = Path(args.sdist).resolve()
    sdist_version = sdist.name.split("-", 1)[-1]
    assert sdist_version == version("protego"), (sdist_version, version("protego"))

    cli = None
    if not args.no_google:
        from gen_google import Cli
        cli = Cli(Path(args.google_build))

    google = json.loads((HERE / "google_cases.json").read_text())

    suite_inputs, suite_summary = collect_suite(sdist)

    cases = []

    def emit(source, name, body: bytes, agent, url, google_expected=None):
        case = {"name": name, "source": source}
        case.update(body_fields(body))
        case["agent"] = agent
        case["url"] = url
        case.update(protego_answers(body.decode("utf-8", errors="ignore"), agent, url))
        if google_expected is not None:
            case["google_expected"] = google_expected
        if cli is not None and agent is not None and url is not None:
            g = cli.allowed(body, agent.encode("utf-8"), url.encode("utf-8"))
            if google_expected is not None:
                assert g == google_expected, name
            case["google_allowed"] = g
        if case.get("allowed") is not None and case.get("google_allowed") is not None:
            case["agree"] = case["allowed"] == case["google_allowed"]
        cases.append(case)

    for name, content, agent, url in suite_inputs:
        emit("protego-suite", name, content.encode("utf-8"), agent, url)
    for g in google["cases"]:
        body = (g["robots"].encode("utf-8") if "robots" in g
                else base64.b64decode(g["robots_b64"]))
        emit("google", "google:" + g["name"], body, g["agent"], g["url"],
             google_expected=g["allowed"])
    names = set()
    for name, body, agent, url in EXTRA_CASES:
        assert name not in names, name
        names.add(name)
        emit("extra", "extra:" + name, body, agent, url)

    disagreements = [c["name"] for c in cases if c.get("agree") is False]
    out = {
        "meta": {
            "protego_version": version("protego"),
            "protego_sdist": f"protego-{sdist_version}.tar.gz (pip download protego --no-binary :all: --no-deps)",
            "python_version": platform.python_version(),
            "python_implementation": platform.python_implementation(),
            "generator": "tests/data/robots/gen_protego.py",
            "protego_input": SCRAPY_DECODE,
            "semantics": {
                "allowed": "Protego.parse(content).can_fetch(url, agent); null when url or agent is null",
                "crawl_delay": "crawl_delay(agent) as a float, or null",
                "request_rate": "[requests, seconds] of request_rate(agent), or null",
                "request_rate_window": "[start, end] 'HH:MM' of request_rate(agent), or null",
                "visit_time": "[start, end] 'HH:MM' of visit_time(agent), or null",
                "sitemaps": "list(sitemaps)",
                "preferred_host": "preferred_host",
                "google_expected": "source=google only: the answer from google_cases.json (google/robotstxt's own test expectation and library answer)",
                "google_allowed": "google/robotstxt robots_main <robots> <agent> <url> (built by gen_google.py); absent when url or agent is null",
                "agree": "allowed == google_allowed",
            },
            "google_commit": google["meta"]["commit"],
            "protego_suite_run": suite_summary,
            "counts": {
                "total": len(cases),
                "protego-suite": sum(c["source"] == "protego-suite" for c in cases),
                "google": sum(c["source"] == "google" for c in cases),
                "extra": sum(c["source"] == "extra" for c in cases),
                "disagreements": len(disagreements),
                "google_case_disagreements": sum(
                    c["source"] == "google" and c.get("agree") is False for c in cases),
            },
        },
        "cases": cases,
    }
    (HERE / "protego_cases.json").write_text(
        json.dumps(out, indent=1, ensure_ascii=True, allow_nan=False) + "\n")
    print(json.dumps(out["meta"]["counts"]), file=sys.stderr)


if __name__ == "__main__":
    main()
