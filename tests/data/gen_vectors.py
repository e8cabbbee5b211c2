#!/usr/bin/env python3
"""Generate test vectors from the real Python Scrapy / w3lib.

Usage (from the repository root):

    python3 -m venv /tmp/vec-venv
    /tmp/vec-venv/bin/pip install scrapy w3lib
    /tmp/vec-venv/bin/python tests/data/gen_vectors.py

Writes, next to this script:

* canonicalize_url.json -- w3lib.url.canonicalize_url() input/output pairs
* fingerprints.json     -- scrapy.utils.request.fingerprint() vectors

Output is deterministic: vectors are de-duplicated and sorted, and the JSON is
written with sorted keys.  Each file is an object
``{"generator": ..., "versions": {...}, "vectors": [...]}``.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from importlib.metadata import version
from pathlib import Path

import scrapy
from scrapy.utils.request import fingerprint
from w3lib.url import canonicalize_url

HERE = Path(__file__).resolve().parent

VERSIONS = {
    "scrapy": version("scrapy"),
    "w3lib": version("w3lib"),
    "python": platform.python_version(),
}

# ---------------------------------------------------------------------------
# canonicalize_url
# ---------------------------------------------------------------------------

CANON_INPUTS = [
    # --- basics / empty path / trailing ? and # ------------------------------
    "http://example.com",
    "http://example.com/",
    "http://example.com?",
    "http://example.com/?",
    "http://example.com/#",
    "http://example.com/?#",
    "http://example.com#frag",
    "http://example.com?a=1",
    "http://example.com/path",
    "http://example.com/path/",
    "http://example.com/path?",
    "http://example.com/path#",
    "http://example.com/path#frag",
    "http://example.com/path?a=1#frag",
    "http://example.com/path?a=1#",
    "http://example.com/path#frag?notquery=1",
    "http://example.com/path#frag#again",
    "http://example.com/path#fr ag",
    "http://example.com/path#fr%20ag",
    "http://example.com/path#%7Efoo%2fbar",
    "http://example.com/path#!/hashbang?x=1&a=2",
    "https://example.com/",
    "https://example.com",
    "ftp://ftp.example.com/pub/file.txt",
    "file:///tmp/some%20file.txt",
    "mailto:someone@example.com",
    "about:blank",
    "data:text/plain,hello%20world",
    "http://127.0.0.1:8089/s/000/00001.html",
    "  http://example.com/leading-and-trailing-space  ",
    "http://exa\tmple.com/ta\tb?q=1\n2",
    # --- query argument sorting ---------------------------------------------
    "http://www.example.com/do?c=3&b=5&b=2&a=50",
    "http://example.com/path?b=2&a=1",
    "http://example.com/path?a=1&b=2",
    "http://example.com/?a=2&a=1&a=3",
    "http://example.com/?a=1&a=1",
    "http://example.com/?b=&a=",
    "http://example.com/?a=&b",
    "http://example.com/?a&b",
    "http://example.com/?b&a",
    "http://example.com/?a",
    "http://example.com/?a=",
    "http://example.com/?=x",
    "http://example.com/?=",
    "http://example.com/?&",
    "http://example.com/?&&a=1&&",
    "http://example.com/?a=1&=x&b",
    "http://example.com/?a==b",
    "http://example.com/?a=b=c",
    "http://example.com/?B=1&a=2&A=3&b=4",
    "http://example.com/?a10=1&a2=2&a1=3",
    "http://example.com/?a=10&a=9&a=100",
    "http://example.com/?a=b&a=",
    "http://example.com/?a&a=1&a=",
    "http://example.com/?%61=1&a=2",
    "http://example.com/?a%3D1=2",
    "http://example.com/?a=1%262&b=3",
    "http://example.com/?q=a%26b%3Dc",
    "http://example.com/?a[]=2&a[]=1",
    "http://example.com/?a%5B%5D=2&a%5b%5d=1",
    "http://example.com/?key=value&Key=Value&KEY=VALUE",
    "http://example.com/?z=1&y=2&x=3&w=4&v=5&u=6&t=7&s=8&r=9&q=10",
    # --- ; as query separator / literal &amp; --------------------------------
    "http://example.com/?b=2;a=1",
    "http://example.com/?a=1;b=2&c=3",
    "http://example.com/?a=1&amp;b=2",
    "http://example.com/?b=2&amp;a=1",
    "http://example.com/page?foo=bar&amp;baz=qux&amp;a=1",
    # --- percent-encoding normalisation -------------------------------------
    "http://example.com/a%2fb",
    "http://example.com/a%2Fb",
    "http://example.com/a%2fb?x=%2f",
    "http://example.com/%41%42%43",
    "http://example.com/%7Euser/%7efoo",
    "http://example.com/~user/",
    "http://example.com/%2e%2e/a",
    "http://example.com/a/%2e/b",
    "http://example.com/%61%62c?%61=%62",
    "http://example.com/%3b%3B%3f%3F%23",
    "http://example.com/%25",
    "http://example.com/%2525",
    "http://example.com/%25zz",
    "http://example.com/a%zzb",
    "http://example.com/a%",
    "http://example.com/a%4",
    "http://example.com/a%4g",
    "http://example.com/%%41",
    "http://example.com/%%",
    "http://example.com/?q=%zz",
    "http://example.com/?q=%",
    "http://example.com/?q=%4",
    "http://example.com/?q=%25",
    "http://example.com/?q=%2525",
    "http://example.com/?q=%41%7e%7E%2f%2F",
    "http://example.com/?q=%3d&r=%26",
    "http://example.com/#%zz%",
    "http://example.com/#%41%7e",
    "http://example.com/path%20with%20spaces",
    "http://example.com/%00%01%7F",
    "http://example.com/?q=%00",
    "http://example.com/?%=%",
    # --- spaces and + ---------------------------------------------------------
    "http://example.com/a b/c d",
    "http://example.com/a+b",
    "http://example.com/a%2Bb",
    "http://example.com/?q=a b",
    "http://example.com/?q=a+b",
    "http://example.com/?q=a%20b",
    "http://example.com/?q=a%2Bb",
    "http://example.com/?q=a%2bb+c",
    "http://example.com/?a b=c d",
    "http://example.com/?q=++",
    "http://example.com/?+=+",
    "http://example.com/ ?q= #f ",
    # --- non-ASCII ------------------------------------------------------------
    "http://www.example.com/r\u00e9sum\u00e9",
    "http://www.example.com/r%C3%A9sum%C3%A9",
    "http://www.example.com/r%c3%a9sum%c3%a9",
    "http://example.com/\u65e5\u672c\u8a9e/\u30da\u30fc\u30b8",
    "http://example.com/?q=\u00e9t\u00e9",
    "http://example.com/?\u00e9t\u00e9=summer",
    "http://example.com/?\u043a\u043b\u044e\u0447=\u0437\u043d\u0430\u0447&a=1",
    "http://example.com/#\u00e9t\u00e9",
    "http://example.com/path#r\u00e9sum\u00e9?x",
    "http://example.com/\U0001f600?e=\U0001f600#\U0001f600",
    "http://example.com/caf\u00e9?caf\u00e9=cr\u00e8me#caf\u00e9",
    "http://example.com/\u00a3",
    "http://example.com/\u2028x",
    # --- non-UTF-8 percent bytes ----------------------------------------------
    "http://example.com/%a3",
    "http://example.com/%A3",
    "http://example.com/r%E9sum%E9.xml#r%C3%A9sum%C3%A9",
    "http://example.com/?q=%a3",
    "http://example.com/?q=b%a3&a=%ff",
    "http://example.com/?%a3=1&%a2=2",
    "http://example.com/#%a3",
    "http://example.com/%ff%fe/%c3",
    # --- reserved characters in path -----------------------------------------
    "http://example.com/a;b:c@d!e$f'g(h)i*j,k",
    "http://example.com/!$'()*,;=:@",
    "http://example.com/a:b",
    "http://example.com/@user",
    "http://example.com/a|b",
    "http://example.com/a[b]c",
    "http://example.com/a{b}c",
    "http://example.com/a<b>c\"d`e",
    "http://example.com/a^b",
    "http://example.com/?q='quoted'&r=\"dq\"",
    "http://example.com/?q=<>&r={}|\\^`",
    "http://example.com/?q=a:b@c/d?e",
    "http://example.com/?q=!$'()*,",
    "ftp://example.com/?q='quoted'",
    "foo://example.com/?q='quoted'",
    "http://example.com/#a'b\"c<d>e`f",
    # --- path params ------------------------------------------------------------
    "http://example.com/a;b=c/d",
    "http://example.com/a/b;c=d",
    "http://example.com/a/b;c=d?x=1",
    "http://example.com/a/b;",
    "http://example.com/a/b;c;d",
    "http://example.com/a/b;c=%41%2f",
    "http://example.com/a/b;c=d e",
    "http://example.com/;x",
    "http://example.com/a;jsessionid=ABC123?b=1&a=2",
    "http://example.com/a%3bb",
    "foo://example.com/a;b",
    # --- scheme / host / userinfo / ports ---------------------------------------
    "HTTP://EXAMPLE.COM/PATH?Q=1#FRAG",
    "HtTp://ExAmPlE.cOm/",
    "http://User:PassWord@Example.COM/",
    "http://user@example.com/",
    "http://user:@example.com/",
    "http://:pass@example.com/",
    "http://@example.com/",
    "http://us%65r:p%41ss@example.com/",
    "http://us er:pa ss@example.com/",
    "http://a@b@example.com/",
    "http://user;x=1:pa=ss@example.com/",
    "http://example.com:80/",
    "http://example.com:8080/",
    "https://example.com:443/",
    "https://example.com:80/",
    "http://example.com:443/",
    "http://example.com:/",
    "http://example.com:",
    "http://example.com:0080/",
    "http://example.com:0/",
    "http://example.com:65535/",
    "http://example.com:65536/",
    "http://example.com:99999/",
    "http://example.com:abc/",
    "http://example.com:-1/",
    "http://EXAMPLE.com:8080/A",
    "http://example.com./",
    "http://.example.com/",
    "http://example..com/",
    "http://exa_mple.com/",
    "http://example.com%2fevil.com/",
    # --- IDNA -------------------------------------------------------------------
    "http://www.b\u00fccher.de/",
    "http://www.B\u00dcCHER.de/",
    "http://www.xn--bcher-kva.de/",
    "http://www.XN--BCHER-KVA.DE/",
    "http://\u4f8b\u3048.\u30c6\u30b9\u30c8/",
    "http://\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444/path?q=1",
    "http://user:pass@m\u00fcnchen.de:8080/\u00fc?\u00fc=\u00fc#\u00fc",
    "http://stra\u00dfe.de/",
    "http://\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com/",
    "http://" + "a" * 64 + ".com/",
    "http://" + "\u00fc" * 64 + ".com/",
    # --- IP literals --------------------------------------------------------------
    "http://127.0.0.1/",
    "http://127.0.0.1:8080/path?b=1&a=2",
    "http://192.168.0.1:80/",
    "http://[::1]/",
    "http://[::1]:8080/",
    "http://[::0:1]/a/../b",
    "http://[2001:DB8::1]/",
    "http://[2001:0db8:0000:0000:0000:0000:0000:0001]:443/",
    "http://[::ffff:192.168.0.1]/",
    "http://user@[::1]:80/",
    "http://[fe80::1%25eth0]/",
    "http://[::1/",
    "http://::1]/",
    "http://[127.0.0.1]/",
    "http://[v1.fe]/",
    "http://[not-an-ip]/",
    # --- dot segments / double slashes / backslashes --------------------------
    "http://example.com/a/./b/../c",
    "http://example.com/a/b/..",
    "http://example.com/a/b/.",
    "http://example.com/a/b/../",
    "http://example.com/../a",
    "http://example.com/../../../a",
    "http://example.com/./a",
    "http://example.com/.",
    "http://example.com/..",
    "http://example.com/a/.../b",
    "http://example.com/a/..b/c",
    "http://example.com/a/.b/c",
    "http://example.com/a/%2E%2E/b",
    "http://example.com/a/.%2e/b",
    "http://example.com/a/../b?x=../y#../z",
    "http://example.com//a//b//",
    "http://example.com//",
    "http://example.com///a",
    "http:///example.com/",
    "http://example.com/a\\b\\c",
    "http:\\\\example.com\\a\\b",
    "http://example.com/a?b\\c#d\\e",
    "http://example.com\\@good.com/",
    "mailto:a/../b",
    "foo:/a/../b",
    "foo:a/../b",
    # --- very long query strings -------------------------------------------------
    "http://example.com/search?" + "&".join(f"k{i}=v{i}" for i in range(60, 0, -1)),
    "http://example.com/search?q=" + "x" * 3000,
    "http://example.com/search?" + "&".join(f"a={i}" for i in range(40, 0, -3)),
    "http://example.com/" + "/".join(f"seg{i}" for i in range(50)),
    # --- misc / relative / odd ---------------------------------------------------
    "example.com/path?b=1&a=2",
    "/relative/path?b=2&a=1#f",
    "?b=2&a=1",
    "//example.com/path?b=2&a=1",
    "",
    "http:",
    "http://",
    "http:/example.com/",
    "http:example.com/",
    "HTTPS://Example.COM:443/%7Efoo/./bar/../baz?B=2&a=1&a=&c#Frag",
]

CANON_FLAGS = [(True, False), (True, True), (False, False), (False, True)]


def canon_vectors() -> list[dict]:
    seen = set()
    out = []
    for url in CANON_INPUTS:
        for kbv, kf in CANON_FLAGS:
            key = (url, kbv, kf)
            if key in seen:
                continue
            seen.add(key)
            v: dict = {"input": url, "keep_blank_values": kbv, "keep_fragments": kf}
            try:
                v["output"] = canonicalize_url(
                    url, keep_blank_values=kbv, keep_fragments=kf
                )
            except Exception as exc:  # noqa: BLE001
                v["error"] = type(exc).__name__
            out.append(v)
    out.sort(key=lambda v: (v["input"], v["keep_blank_values"], v["keep_fragments"]))
    return out


# ---------------------------------------------------------------------------
# fingerprints
# ---------------------------------------------------------------------------


def fingerprint_json(request, include_headers=None, keep_fragments=False) -> str:
    """Re-implementation of the JSON that scrapy.utils.request.fingerprint
    hashes (copied from scrapy/utils/request.py, verbatim_url not set)."""
    processed_include_headers = None
    if include_headers:
        processed_include_headers = tuple(
            h.lower().encode() if isinstance(h, str) else h.lower()
            for h in sorted(include_headers)
        )
    headers: dict[str, list[str]] = {}
    if processed_include_headers:
        for header in processed_include_headers:
            if header in request.headers:
                headers[header.hex()] = [
                    value.hex() for value in request.headers.getlist(header)
                ]
    data = {
        "method": request.method,
        "url": canonicalize_url(request.url, keep_fragments=keep_fragments),
        "body": (request.body or b"").hex(),
        "headers": headers,
    }
    return json.dumps(data, sort_keys=True)


# (url, method, body, headers, include_headers, keep_fragments)
FP_CASES: list[tuple] = []


def add(url, method="GET", body=b"", headers=(), include_headers=None, kf=False):
    FP_CASES.append((url, method, body, tuple(headers), include_headers, kf))


# Plain page URLs (like the benchmark site), GET, default arguments.
for d in range(3):
    for n in range(1, 41):
        add(f"http://127.0.0.1:8089/s/{d:03d}/{n:05d}.html")
for i in range(10):
    add(f"http://example.com/page/{i}")
    add(f"https://www.example.org/items?id={i}")

# Query order variants (pairs must give equal fingerprints).
QUERY_VARIANTS = [
    ("http://example.com/path?b=2&a=1", "http://example.com/path?a=1&b=2"),
    ("http://www.example.com/query?id=111&cat=222",
     "http://www.example.com/query?cat=222&id=111"),
    ("http://example.com/?c=3&b=5&b=2&a=50", "http://example.com/?a=50&b=2&b=5&c=3"),
    ("http://example.com/?q=a+b", "http://example.com/?q=a%20b"),
    ("http://example.com/%7Efoo", "http://example.com/~foo"),
    ("http://Example.COM/a", "http://example.com/a"),
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/a#x", "http://example.com/a#y"),
]
for a, b in QUERY_VARIANTS:
    for method in ("GET", "POST"):
        add(a, method)
        add(b, method)

# Methods.
for method in ("GET", "POST", "PUT", "HEAD", "DELETE", "PATCH", "OPTIONS",
               "get", "post", "Put", "head"):
    add("http://example.com/method", method)
    add("http://example.com/method?b=1&a=2", method, b"x=1")

# Bodies.
BODIES = [
    b"",
    b"a=1&b=2",
    b"b=2&a=1",
    b'{"key": "value"}',
    b"\x00\x01\x02\xff\xfe",
    "caf\u00e9 \u00fcber".encode("utf-8"),
    "caf\u00e9".encode("latin-1"),
    b"line1\r\nline2\n",
    b"x" * 1000,
    bytes(range(256)),
]
for body in BODIES:
    for method in ("POST", "PUT"):
        add("http://example.com/submit", method, body)
    add("http://example.com/submit?z=1&y=2", "POST", body,
        [("Content-Type", "application/x-www-form-urlencoded")], ["Content-Type"])
add("http://example.com/get-with-body", "GET", b"payload")
# str bodies are encoded by Request using its encoding (utf-8).
add("http://example.com/submit", "POST", "str body \u00e9\u20ac")

# Fragments.
for url in ("http://example.com/page#section", "http://example.com/page#",
            "http://example.com/page", "http://example.com/page?b=1&a=2#frag",
            "http://example.com/#/spa/route?x=1",
            "http://example.com/page#r\u00e9sum\u00e9"):
    for kf in (False, True):
        add(url, "GET", kf=kf)
        add(url, "POST", b"a=1", kf=kf)

# include_headers.
H_URL = "http://example.com/headers"
add(H_URL, headers=[("Accept", "text/html")])
add(H_URL, headers=[("Accept", "text/html")], include_headers=["Accept"])
add(H_URL, headers=[("Accept", "text/html")], include_headers=["accept"])
add(H_URL, headers=[("Accept", "text/html")], include_headers=["ACCEPT"])
add(H_URL, headers=[("accept", "text/html")], include_headers=["Accept"])
add(H_URL, headers=[("ACCEPT", "text/html")], include_headers=[b"accept"])
add(H_URL, headers=[("Accept", "application/json")], include_headers=["Accept"])
add(H_URL, headers=[], include_headers=["Accept"])
add(H_URL, headers=[("Accept", "text/html")], include_headers=["X-Missing"])
add(H_URL, headers=[("Accept", "text/html")], include_headers=[])
add(H_URL, headers=[("Accept", "text/html"), ("Cookie", "a=1")],
    include_headers=["Accept", "Cookie"])
add(H_URL, headers=[("Accept", "text/html"), ("Cookie", "a=1")],
    include_headers=["Cookie", "Accept"])
add(H_URL, headers=[("Cookie", "a=1"), ("Accept", "text/html")],
    include_headers=["Accept", "Cookie"])
add(H_URL, headers=[("Accept", "text/html"), ("Cookie", "a=1")],
    include_headers=["cookie", "Accept", "X-Missing"])
add(H_URL, headers=[("Accept", "text/html"), ("Cookie", "a=1")],
    include_headers=["Cookie"])
add(H_URL, headers=[("Cookie", "a=1"), ("Cookie", "b=2")], include_headers=["Cookie"])
add(H_URL, headers=[("Cookie", "b=2"), ("Cookie", "a=1")], include_headers=["Cookie"])
add(H_URL, headers=[("Cookie", "a=1"), ("cookie", "b=2")], include_headers=["cookie"])
add(H_URL, headers=[("Cookie", "a=1"), ("Cookie", "b=2")])
add(H_URL, headers=[("X-Custom", "1"), ("x-custom", "2"), ("X-CUSTOM", "3")],
    include_headers=["x-CUSTOM"])
add(H_URL, headers=[("Accept", "text/html")], include_headers=["Accept", "accept"])
add(H_URL, headers=[("X-Empty", "")], include_headers=["X-Empty"])
add(H_URL, headers=[("X-Utf8", "caf\u00e9")], include_headers=["X-Utf8"])
add(H_URL, headers=[("X-Spaces", "  padded value  ")], include_headers=["X-Spaces"])
add(H_URL, headers=[("Accept-Language", "en"), ("Accept", "*/*"), ("A", "1")],
    include_headers=["Accept-Language", "Accept", "A"])
add(H_URL, "POST", b"a=1", [("Content-Type", "text/plain"), ("Authorization", "x")],
    ["Authorization", "Content-Type"])
add(H_URL + "?b=2&a=1#f", "POST", b"a=1", [("Accept", "x")], ["Accept"], True)

# Non-ASCII / odd URLs.
for url in (
    "http://www.example.com/r\u00e9sum\u00e9",
    "http://www.example.com/r%C3%A9sum%C3%A9",
    "http://www.b\u00fccher.de/",
    "http://www.xn--bcher-kva.de/",
    "http://example.com/\u65e5\u672c\u8a9e?q=\u00e9t\u00e9",
    "http://example.com/?q=%a3",
    "http://example.com/%a3",
    "http://example.com/a b?c d=e f",
    "http://example.com:80/",
    "https://example.com:443/x",
    "http://example.com:8080/x",
    "http://[::1]:8080/x",
    "http://[::0:1]/a/../b",
    "http://user:Pass@Example.com/",
    "http://example.com",
    "http://example.com?",
    "http://example.com/?a&b=&c=1",
    "http://example.com/a;b=c/d;e=f?x=1",
    "http://example.com/a%2fb",
    "http://example.com/%zz",
    "http://example.com/?q=1&amp;r=2",
    "data:text/plain,hello",
    "about:blank",
    "HTTP://EXAMPLE.COM/UPPER",
    "file:///tmp/x.txt",
    "ftp://ftp.example.com/f",
    # IDNA fails (label > 63 chars): host stays non-ASCII, so the hashed JSON
    # contains \u escapes (json.dumps default ensure_ascii=True).
    "http://" + "\u00fc" * 64 + ".com/",
):
    add(url)


def fp_vectors() -> list[dict]:
    seen = set()
    out = []
    for url, method, body, headers, include_headers, kf in FP_CASES:
        key = (url, method, body, headers,
               None if include_headers is None else tuple(include_headers), kf)
        if key in seen:
            continue
        seen.add(key)
        request = scrapy.Request(url, method=method, body=body, headers=list(headers))
        fp = fingerprint(request, include_headers=include_headers, keep_fragments=kf)
        fj = fingerprint_json(request, include_headers, kf)
        assert hashlib.sha1(fj.encode()).digest() == fp, (url, fj)  # noqa: S324

        def s(x):
            return x.decode("ascii") if isinstance(x, bytes) else x

        out.append({
            "url": url,
            "request_url": request.url,
            "method": method,
            "request_method": request.method,
            "body_hex": request.body.hex(),
            "headers": [[s(k), s(v)] for k, v in headers],
            "include_headers": None if include_headers is None
            else [s(h) for h in include_headers],
            "keep_fragments": kf,
            "fingerprint": fp.hex(),
            "fingerprint_json": fj,
        })
    out.sort(key=lambda v: json.dumps(v, sort_keys=True))
    return out


def sanity_checks(fps: list[dict]) -> None:
    by_key = {}
    for v in fps:
        if v["headers"] or v["include_headers"]:
            continue
        by_key[(v["url"], v["request_method"], v["body_hex"], v["keep_fragments"])] = (
            v["fingerprint"])
    for a, b in QUERY_VARIANTS:
        for method in ("GET", "POST"):
            assert by_key[(a, method, "", False)] == by_key[(b, method, "", False)], (a, b)


def write(name: str, vectors: list[dict], description: str) -> None:
    doc = {
        "description": description,
        "generator": "tests/data/gen_vectors.py",
        "versions": VERSIONS,
        "count": len(vectors),
        "vectors": vectors,
    }
    text = json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    (HERE / name).write_text(text, encoding="utf-8")
    print(f"wrote {name}: {len(vectors)} vectors", file=sys.stderr)


def main() -> None:
    canon = canon_vectors()
    fps = fp_vectors()
    sanity_checks(fps)
    assert len(canon) >= 250, len(canon)
    assert len(fps) >= 250, len(fps)
    write(
        "canonicalize_url.json",
        canon,
        "w3lib.url.canonicalize_url(input, keep_blank_values=..., "
        "keep_fragments=...) -> output (or error = exception type name)",
    )
    write(
        "fingerprints.json",
        fps,
        "scrapy.utils.request.fingerprint(Request(url, method=method, "
        "body=bytes.fromhex(body_hex), headers=headers), include_headers=..., "
        "keep_fragments=...); fingerprint == sha1(fingerprint_json.encode()).hex()",
    )


if __name__ == "__main__":
    main()
