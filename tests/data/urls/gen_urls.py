#!/usr/bin/env python3
"""Record how Scrapy builds request URLs and resolves links.

Usage (from the repository root):

    python3 -m venv /work/venv-ref
    /work/venv-ref/bin/pip install 'scrapy==2.19.*' 'parsel==1.12.*' lxml w3lib
    /work/venv-ref/bin/python tests/data/urls/gen_urls.py

Writes, next to this script:

* urls.json   -- for each odd URL string ``u``: ``scrapy.Request(u).url``
  (w3lib ``safe_url_string`` plus Scrapy's missing-scheme check) and
  ``scrapy.utils.request.fingerprint(Request(u)).hex()``, or the exception.
* follow.json -- for each odd href on each base page:
  ``response.follow(href).url`` and ``response.urljoin(href)``, or the
  exception.  Base pages are ``HtmlResponse`` objects with small ASCII bodies
  whose encoding comes from the Content-Type header (or from a <base href>).

Exceptions are recorded as ``{"error": "<ExceptionType>: <message>"}``.
Lone surrogates are left out on purpose: they cannot be stored in UTF-8 JSON
and a Rust str cannot hold them.

Output is deterministic: inputs keep the order below (duplicates dropped),
keys are sorted, UTF-8 with ensure_ascii=False.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.request import fingerprint

HERE = Path(__file__).resolve().parent


def versions() -> dict:
    from importlib.metadata import version

    from lxml import etree

    out = {name: version(name) for name in ("scrapy", "parsel", "lxml", "w3lib", "charset-normalizer", "idna")}
    out["libxml2"] = ".".join(map(str, etree.LIBXML_VERSION))
    out["libxml2_compiled"] = ".".join(map(str, etree.LIBXML_COMPILED_VERSION))
    out["python"] = platform.python_version()
    return out


def meta(generator: str) -> dict:
    freeze = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--all"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return {
        "generator": generator,
        "python": platform.python_version(),
        "versions": versions(),
        "pip_freeze": sorted(freeze, key=str.lower),
    }


def err(e: BaseException) -> dict:
    return {"error": f"{type(e).__name__}: {e}"}


def dedup(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for i in items:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


# ---------------------------------------------------------------------------
# (a) Request(u).url
# ---------------------------------------------------------------------------

REQUEST_URLS: list[str] = [
    # --- plain and case --------------------------------------------------------
    "http://example.com",
    "http://example.com/",
    "https://example.com/a/b?c=d#e",
    "HTTP://X/",
    "HTTP://EXAMPLE.COM/Path?Q=V#F",
    "HtTpS://ExAmPlE.CoM/",
    "http://example.com./",
    "http://example.com../",
    "http://.example.com/",
    "http://example..com/",
    "http://exa_mple.com/",
    "http://-example-.com/",
    # --- ports -------------------------------------------------------------------
    "http://h:80/",
    "http://h:80",
    "https://h:443/x",
    "https://h:80/x",
    "http://h:443/",
    "ftp://h:21/",
    "ftp://h:21/file.txt",
    "ws://h:80/",
    "wss://h:443/",
    "http://h:080/",
    "http://h:0080/",
    "http://h:0/",
    "http://h:1/",
    "http://h:65535/",
    "http://h:65536/",
    "http://h:99999/",
    "http://h:-1/",
    "http://h:/",
    "http://h::80/",
    "http://h:8a/",
    "http://h: 80/",
    "http://h:+80/",
    "http://h:٣/",
    "http://h:8080/p",
    "https://h:8443",
    # --- userinfo ----------------------------------------------------------------
    "http://user@h/",
    "http://user:@h/",
    "http://:pass@h/",
    "http://@h/",
    "http://:@h/",
    "http://user:p@ss@h/",
    "http://us@er:pass@h/",
    "http://user:pa:ss@h/",
    "http://user%40x:p%3Ass@h/",
    "http://us er:pa ss@h/",
    "http://usér:pässword@h/",
    "http://user:pass@h:8080/p",
    "http://user:pass@h:80/p",
    "http://a/b@c/",
    "http://a?b@c/",
    "http://a#b@c/",
    "http://user:pass@/p",
    "http://%75ser@h/",
    # --- IPv4 ----------------------------------------------------------------------
    "http://127.0.0.1/",
    "http://0x7f.0.0.1/",
    "http://0x7F000001/",
    "http://2130706433/",
    "http://017700000001/",
    "http://192.168.000.001/",
    "http://0300.0250.0.1/",
    "http://1.2.3/",
    "http://1.2/",
    "http://1/",
    "http://256.1.1.1/",
    "http://1.1.1.256/",
    "http://4294967295/",
    "http://4294967296/",
    "http://1.2.3.4.5/",
    "http://1.2.3.4./",
    "http://0.0.0.0/",
    "http://09.1.1.1/",
    "http://１２７.０.０.１/",
    # --- IPv6 ----------------------------------------------------------------------
    "http://[::1]/",
    "http://[::1]:80/",
    "http://[::1]:8080/p",
    "http://[::1",
    "http://[::1]x/",
    "http://::1/",
    "http://[2001:DB8::1]/",
    "http://[2001:db8:0:0:0:0:0:1]/",
    "http://[::ffff:192.0.2.1]/",
    "http://[::ffff:c000:0201]/",
    "http://[fe80::1%25eth0]/",
    "http://[fe80::1%eth0]/",
    "http://[fe80::1%25]/",
    "http://[v1.fe80::a+en1]/",
    "http://[1:2:3:4:5:6:7:8:9]/",
    "http://[zz::1]/",
    "http://[]/",
    "https://user:pw@[::1]:443/x",
    # --- IDNA ----------------------------------------------------------------------
    "http://straße.de/",
    "http://STRASSE.de/",
    "http://ÄÖÜ.de/",
    "http://äöü.de/",
    "http://Bücher.example/",
    "http://münchen.de/straße?ä=ö#ü",
    "http://😀.example/",
    "http://i❤.ws/",
    "http://☃.net/",
    "http://xn--n3h.net/",
    "http://XN--N3H.NET/",
    "http://xn--/",
    "http://xn--zz/",
    "http://xn--a.com/",
    "http://xn--mnchen-3ya.de/",
    "http://例え.テスト/",
    "http://例え。テスト/",
    "http://пример.рф/",
    "http://ПРИМЕР.РФ/",
    "http://مثال.إختبار/",
    "http://a\u200db.com/",
    "http://a\u200cb.com/",
    "http://a\u00adb.com/",
    "http://ﬁ.com/",
    "http://ｅｘａｍｐｌｅ.com/",
    "http://ex\u0131mple.com/",
    "http://straße.de./",
    "http://a." + "b" * 63 + ".com/",
    "http://a." + "b" * 64 + ".com/",
    "http://" + "ü" * 60 + ".com/",
    "http://" + ".".join(["a" * 63] * 4) + "/",
    "http://" + "a" * 300 + ".com/",
    "http://a..b/",
    "http://\u0663\u0664.example/",
    "http://a\u0301.com/",
    "http://ᄀ.com/",
    "http://\U0001F1FA\U0001F1F8.example/",
    # --- spaces and control characters ---------------------------------------------
    " http://example.com/ ",
    "\thttp://example.com/\n",
    "\x00http://example.com/",
    "http://example.com/\x00",
    "\x01http://example.com/\x1f",
    "\x0bhttp://example.com/\x0c",
    "\u00a0http://example.com/\u00a0",
    "\u3000http://example.com/",
    "http://exa mple.com/",
    "http://example.com/a b",
    "http://example.com/a%20b c",
    "http://example.com/a\tb\nc\rd",
    "http://exa\tmple.com/",
    "http://example.com/?q=a b",
    "http://example.com/?q=a+b",
    "http://example.com/#a b",
    "http://example.com/a\x7fb",
    "http://example.com/a\x00b?c\x00d#e\x00f",
    "http://example.com/a\x80b",
    "http://example.com/\u2028\u2029",
    "http://ex\x00ample.com/",
    "ht\ttp://example.com/",
    # --- backslashes and other ASCII punctuation -----------------------------------
    "http:\\\\example.com\\a\\b",
    "http://example.com\\a\\b",
    "http://example.com/a\\b?c\\d#e\\f",
    "http:/\\example.com/",
    "http://example.com/|pipe|",
    "http://example.com/?|=|",
    "http://example.com/#|",
    "http://example.com/^caret^",
    "http://example.com/?^",
    "http://example.com/{braces}",
    "http://example.com/?a={b}",
    "http://example.com/#{f}",
    "http://example.com/[brackets]",
    "http://example.com/?a[]=1&a[]=2",
    "http://example.com/<lt>gt\"quote",
    "http://example.com/?<>\"",
    "http://example.com/#<>\"",
    "http://example.com/`back`tick",
    "http://example.com/?`",
    "http://example.com/#`",
    "http://example.com/'apos'",
    "http://example.com/?'",
    "http://example.com/!$&'()*+,;=:@",
    "http://example.com/?!$&'()*+,;=:@/?",
    "http://example.com/#!$&'()*+,;=:@/?#",
    "http://example.com/~user/",
    "http://example.com/%7Euser/",
    "http://ex|ample.com/",
    "http://ex^ample.com/",
    "http://ex{am}ple.com/",
    "http://ex<am>ple.com/",
    "http://ex%41mple.com/",
    "http://ex%2Fample.com/",
    "http://ex%zzample.com/",
    "http://ex%C3%BCample.com/",
    # --- non-ASCII in path, query, fragment -------------------------------------------
    "http://example.com/päth",
    "http://example.com/?q=ä",
    "http://example.com/#ä",
    "http://example.com/€?€=€#€",
    "http://example.com/日本?日=本#日本",
    "http://example.com/😀?😀#😀",
    "http://example.com/\ufffd",
    "http://example.com/\ufeffbom",
    "http://example.com/a\u0301",
    "http://example.com/ﬁ",
    # --- percent escapes ------------------------------------------------------------
    "http://example.com/%41%42%43",
    "http://example.com/%7e%7E",
    "http://example.com/%2F%2f",
    "http://example.com/%25",
    "http://example.com/%",
    "http://example.com/%%",
    "http://example.com/%2",
    "http://example.com/%zz",
    "http://example.com/%g0",
    "http://example.com/%0g",
    "http://example.com/?q=%",
    "http://example.com/?q=%zz&r=%2",
    "http://example.com/#%",
    "http://example.com/#%zz",
    "http://example.com/%E2%82%AC",
    "http://example.com/%e2%82%ac",
    "http://example.com/%E2%82",
    "http://example.com/%FF%FE",
    "http://example.com/%C3%A4?%C3%A4=%E4#%C3%A4",
    "http://example.com/%00",
    "http://example.com/%20%09%0A",
    "http://example.com/%2e/%2E%2e/x",
    "http://example.com/a/%2e%2e/b",
    "http://example.com/a/./b/../c",
    "http://example.com/../../a",
    "http://example.com/a/..",
    "http://example.com/a/.",
    "http://example.com/.",
    "http://example.com/..",
    "http://example.com/a//b///c",
    "http://example.com/a/%2e",
    "http://example.com/?a=%2e%2e",
    # --- empty query / fragment ------------------------------------------------------
    "http://example.com?",
    "http://example.com/?",
    "http://example.com#",
    "http://example.com/#",
    "http://example.com/?#",
    "http://example.com/??",
    "http://example.com/##",
    "http://example.com/?#?#",
    "http://example.com/p?&",
    "http://example.com/p?&&a=1&&",
    "http://example.com/p?a=1&a=2&a",
    "http://example.com/p?=",
    "http://example.com/p?a==b",
    "http://example.com/p;params?q",
    "http://example.com/p;a=b;c",
    "http://example.com?a=b",
    "https://example.com#frag",
    # --- odd slashes / schemes -------------------------------------------------------------
    "http:/x",
    "http:x",
    "http:///x",
    "http:////x",
    "http:",
    "http:/",
    "http://",
    "http:///",
    "http://?",
    "http://#",
    "http://:80/",
    "http://@/",
    "https:/x/y",
    "HTTP:/x",
    "file:///etc/passwd",
    "file://localhost/etc/passwd",
    "file:/etc/passwd",
    "file://host/share/f",
    "file:///C:/Windows/x",
    "file:///C|/x",
    "ftp://user:pass@ftp.example.com/pub/",
    "ftp://ftp.example.com/pub/file name.txt",
    "ftps://h/",
    "s3://bucket/key with space",
    "gs://bucket/k",
    "data:text/html,<b>hi</b>",
    "data:,",
    "data:text/plain;base64,SGVsbG8=",
    "DATA:,x",
    "about:blank",
    "about:config",
    "ABOUT:blank",
    "mailto:a@example.com",
    "mailto:a@example.com?subject=hi there",
    "javascript:alert(1)",
    "tel:+1-555-0100",
    "urn:isbn:0451450523",
    "foo://bar/baz",
    "foo://BAR/baz",
    "foo://bär/baz",
    "foo:bar",
    "git+ssh://git@example.com/r.git",
    "a1+.-://h/",
    "1http://h/",
    "-http://h/",
    "h ttp://h/",
    "http ://h/",
    "http:\\\\h\\",
    "view-source:http://h/",
    "blob:http://h/uuid",
    "http://h/p://x",
    "://h/",
    "//h/p",
    "///h/p",
    "/p",
    "p",
    "example.com",
    "example.com/path",
    "www.example.com:80/p",
    "localhost:8080",
    "localhost:8080/p",
    "user@example.com",
    "?q=1",
    "#frag",
    "",
    " ",
    "\t\n",
    ".",
    "..",
]


def record_request(u: str) -> dict:
    out: dict = {"input": u}
    try:
        req = Request(u)
    except Exception as e:  # noqa: BLE001 -- every failure is data here
        out.update(err(e))
        return out
    out["url"] = req.url
    try:
        out["fingerprint"] = fingerprint(req).hex()
    except Exception as e:  # noqa: BLE001
        out["fingerprint"] = err(e)
    return out


# ---------------------------------------------------------------------------
# (b) response.follow(href).url / response.urljoin(href)
# ---------------------------------------------------------------------------

PAGE_URL = "http://example.com/dir/sub/page.html?x=1#top"
PLAIN_BODY = "<html><head><title>base</title></head><body><p>base page</p></body></html>"

BASES: list[dict] = [
    {"name": "utf-8", "url": PAGE_URL, "content_type": "text/html; charset=utf-8", "body": PLAIN_BODY},
    {"name": "latin-1", "url": PAGE_URL, "content_type": "text/html; charset=latin-1", "body": PLAIN_BODY},
    {"name": "cp1251", "url": PAGE_URL, "content_type": "text/html; charset=cp1251", "body": PLAIN_BODY},
    {"name": "iso-8859-15", "url": PAGE_URL, "content_type": "text/html; charset=iso-8859-15", "body": PLAIN_BODY},
    {"name": "shift_jis", "url": PAGE_URL, "content_type": "text/html; charset=shift_jis", "body": PLAIN_BODY},
    {
        "name": "base-href",
        "url": PAGE_URL,
        "content_type": "text/html; charset=utf-8",
        "body": (
            "<html><head><base href=\"http://base.example.org/b/c/index.html?bq=1#bf\">"
            "<title>base</title></head><body><p>page with base href</p></body></html>"
        ),
    },
]

HREFS: list[str] = [
    # --- ordinary relative forms ----------------------------------------------------
    "other.html",
    "./other.html",
    "../other.html",
    "../../other.html",
    "../../../other.html",
    "../../../../../../../x",
    "/abs.html",
    "/../x",
    "/./x",
    "/a/b/../../../c",
    ".",
    "..",
    "./",
    "../",
    "...",
    ".../x",
    "a/./b/../c",
    "sub/",
    "sub/../",
    "%2e%2e/x",
    ".%2E/x",
    # --- empty, ?, # --------------------------------------------------------------------
    "",
    " ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "\x0c",
    "\x0b",
    "\u00a0",
    "?",
    "#",
    "?#",
    "#frag",
    "#top",
    "# frag",
    "#fräg",
    "#%zz",
    "?q=1",
    "?q=1#f",
    "?q=ä",
    "?q=€",
    "?q=Ж",
    "?q=日本",
    "?q=😀",
    "?q=a b",
    "?q=%E4",
    "?q=%C3%A4",
    "?a=1&a=2",
    "?=",
    "??",
    # --- whitespace around / inside ------------------------------------------------------------
    " other.html",
    "other.html ",
    "  other.html  ",
    "\n\tother.html\r\n",
    "\x0cother.html\x0c",
    "\u00a0other.html",
    "\u3000other.html",
    "oth er.html",
    "oth\ter.html",
    "oth\ner.html",
    "oth\x00er.html",
    "other.html?q=a b#f g",
    " http://example.org/x ",
    "\thttp://example.org/\tx",
    "http://exa mple.org/",
    # --- backslashes -----------------------------------------------------------------------
    "\\",
    "\\x",
    "\\\\host\\p",
    "a\\b",
    "..\\x",
    "/a\\b",
    "http:\\\\example.org\\x",
    "?q=a\\b",
    "#a\\b",
    # --- network-path and absolute ------------------------------------------------------------
    "//host/p",
    "//host",
    "///p",
    "////p",
    "//HOST.Example.ORG:80/P",
    "//host:8080/p",
    "//user:pass@host/p",
    "//[::1]/p",
    "//straße.de/p",
    "//例え.テスト/p",
    "http://example.org/x",
    "https://example.org/x",
    "HTTP://EXAMPLE.ORG/X",
    "HTTP:/x",
    "http:/x",
    "http:x",
    "http:",
    "http://",
    "https:x",
    "https:/x",
    "http://example.org:80/",
    "https://example.org:443/",
    "http://example.org:65536/",
    "http://[::1",
    "http://[fe80::1%25eth0]/",
    "ftp://ftp.example.org/pub/",
    "ftp:x",
    "file:///etc/passwd",
    "file:x",
    # --- non-http schemes -------------------------------------------------------------------------
    "javascript:x",
    "javascript:void(0)",
    "JavaScript:alert(1)",
    " javascript:x",
    "mailto:",
    "mailto:a@example.org",
    "mailto:a@example.org?subject=hé llo",
    "tel:",
    "tel:+1 555 0100",
    "data:",
    "data:,x",
    "data:text/html,<a href=x>",
    "about:blank",
    "urn:x:y",
    "foo:bar",
    "foo://bar/baz",
    "irc://irc.example.org/#chan",
    "c:/windows/x",
    "C:\\windows\\x",
    "1:x",
    ":x",
    "a:b:c",
    # --- non-ASCII ----------------------------------------------------------------------------------
    "/päth",
    "päth",
    "/päth?q=ä#ä",
    "/€",
    "/日本/語?日=本",
    "/Ж?Ж=Ж",
    "/😀",
    "/ﬁ",
    "http://bücher.example/ü?ü=ü#ü",
    "http://ÄÖÜ.de/",
    "http://xn--n3h.net/",
    "http://😀.example/",
    "http://пример.рф/путь?q=кошка",
    # --- percent escapes ------------------------------------------------------------------------------
    "%",
    "%zz",
    "%2",
    "%41",
    "%2F",
    "%25",
    "%E2%82%AC",
    "%e2%82%ac",
    "%FF",
    "/a%20b",
    "/a%2fb",
    "?%",
    "#%",
    # --- other punctuation ------------------------------------------------------------------------------
    "|",
    "^",
    "{x}",
    "[x]",
    "<x>",
    "\"x\"",
    "'x'",
    "`x`",
    "~x",
    "a;b",
    ";x",
    "@x",
    "user@host",
    "host:80",
    "localhost:8080/p",
    "example.org",
    "www.example.org/p",
]


def record_follow(base: dict, response, href: str) -> dict:
    out: dict = {"base": base["name"], "href": href}
    try:
        out["follow"] = response.follow(href).url
    except Exception as e:  # noqa: BLE001
        out["follow"] = err(e)
    try:
        out["urljoin"] = response.urljoin(href)
    except Exception as e:  # noqa: BLE001
        out["urljoin"] = err(e)
    return out


def write(name: str, data: dict) -> None:
    with open(HERE / name, "w", encoding="utf-8", newline="\n") as f:
        json.dump(data, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")


def main() -> None:
    urls = dedup(REQUEST_URLS)
    url_cases = [record_request(u) for u in urls]
    write("urls.json", {
        "meta": meta("tests/data/urls/gen_urls.py"),
        "count": len(url_cases),
        "cases": url_cases,
    })

    hrefs = dedup(HREFS)
    bases_out = []
    follow_cases = []
    for base in BASES:
        response = HtmlResponse(
            base["url"],
            body=base["body"].encode("ascii"),
            headers={"Content-Type": base["content_type"]},
        )
        bases_out.append({**base, "encoding": response.encoding})
        for href in hrefs:
            follow_cases.append(record_follow(base, response, href))
    write("follow.json", {
        "meta": meta("tests/data/urls/gen_urls.py"),
        "bases": bases_out,
        "hrefs": len(hrefs),
        "count": len(follow_cases),
        "cases": follow_cases,
    })
    print(f"wrote urls.json ({len(url_cases)} cases), follow.json ({len(follow_cases)} cases)")


if __name__ == "__main__":
    main()
