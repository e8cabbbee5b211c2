#!/usr/bin/env python3
"""Record scrapy-redis 0.9.1 dupefilter fingerprints from the real library.

Usage (from the repository root; see python/README.md for the venv):

    python3 -m venv /work/venv-redis
    /work/venv-redis/bin/pip install scrapy-redis==0.9.1
    /work/venv-redis/bin/python tests/data/redis/gen_fingerprints.py

Writes fingerprints.json next to this script.

Every fingerprint is produced by ``scrapy_redis.dupefilter.RFPDupeFilter``
itself: the filter is built with a recording stand-in for the Redis client and
``request_seen(request)`` is called, so the recorded ``fingerprint`` is exactly
the member the filter passes to ``SADD <key> <member>``.  The string that the
filter hashes (``fingerprint_json``) is captured by wrapping the ``hashlib``
module the dupefilter imported, i.e. it is the real input of its ``sha1``.

For contrast each vector also carries ``scrapy_fingerprint``: Scrapy's own
``scrapy.utils.request.fingerprint(request).hex()`` (which hashes an extra
``"headers": {}`` key, so it differs from the scrapy-redis one).

Each vector:
  url               the URL string given to ``scrapy.Request``
  request_url       ``Request(url).url`` (after Scrapy's safe_url_string)
  method            the method given to ``Request``
  request_method    ``Request.method`` (upper-cased by Scrapy)
  headers           ``[[name, value], ...]`` in the order given to Request
                    (repeated names allowed; fingerprints ignore headers)
  body_hex          the request body, hex
  sadd_key          the key the filter SADDs into (``<spider>:dupefilter``)
  fingerprint       the 40-hex string SADDed
  fingerprint_json  the exact text whose UTF-8 bytes are SHA-1 hashed
  scrapy_fingerprint  Scrapy's default fingerprint, hex (for contrast)

Output is deterministic (vectors sorted, JSON written with sorted keys).
"""

from __future__ import annotations

import hashlib
import json
import platform
from importlib.metadata import version
from pathlib import Path

import scrapy_redis.dupefilter as rdf
from scrapy import Request, Spider
from scrapy.utils.request import fingerprint as scrapy_fingerprint

HERE = Path(__file__).resolve().parent

META = {
    "scrapy-redis": version("scrapy-redis"),
    "scrapy": version("scrapy"),
    "w3lib": version("w3lib"),
    "redis-py": version("redis"),
    "python": platform.python_version(),
}


class RecordingServer:
    """Stands in for redis.StrictRedis: records SADD calls, emulates a set."""

    def __init__(self):
        self.sets: dict[str, set] = {}
        self.calls: list[tuple] = []

    def sadd(self, key, *members):
        self.calls.append(("SADD", key, *members))
        s = self.sets.setdefault(key, set())
        added = sum(1 for m in members if m not in s)
        s.update(members)
        return added

    def delete(self, key):
        self.sets.pop(key, None)


class _HashlibSpy:
    """Wraps the hashlib module seen by scrapy_redis.dupefilter."""

    def __init__(self):
        self.last_input: bytes | None = None

    def sha1(self, data=b""):
        self.last_input = data
        return hashlib.sha1(data)

    def __getattr__(self, name):
        return getattr(hashlib, name)


SPY = _HashlibSpy()
rdf.hashlib = SPY  # the dupefilter calls hashlib.sha1(...) through this name


class DemoSpider(Spider):
    name = "fpdemo"


# ---------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------

CASES: list[tuple] = []


def add(url, method="GET", body=b"", headers=()):
    CASES.append((url, method, body, tuple(tuple(h) for h in headers)))


URLS = [
    # host / scheme / port / empty path
    "http://example.com",
    "http://example.com/",
    "http://EXAMPLE.COM/",
    "HTTP://Example.Com/Path",
    "http://example.com:80/",
    "http://example.com:8080/",
    "https://example.com:443/",
    "https://example.com:8443/a",
    "http://127.0.0.1:8089/s/001/00035.html",
    "http://[::1]:8080/x",
    "http://user:pass@example.com/private",
    # query ordering, blanks, repeats
    "http://example.com/path?b=2&a=1",
    "http://example.com/path?a=1&b=2",
    "http://example.com/path?a=2&a=1",
    "http://example.com/path?a=1&a=2",
    "http://example.com/path?a=",
    "http://example.com/path?a",
    "http://example.com/path?",
    "http://example.com/path?&&a=1&&",
    "http://example.com/path?q=a+b",
    "http://example.com/path?q=a%20b",
    "http://example.com/path?q=a b",
    "http://example.com/path?q=%2f",
    "http://example.com/path?q=%2F",
    "http://example.com/path?q=%7e",
    "http://example.com/path?z=1&y=2&x=3&w=4",
    # fragments (dropped by canonicalize_url's default keep_fragments=False)
    "http://example.com/#",
    "http://example.com/path#frag",
    "http://example.com/path?a=1#frag",
    "http://example.com/path#!hashbang/x",
    # path forms
    "http://example.com/a/../b",
    "http://example.com/./a",
    "http://example.com/a//b",
    "http://example.com/a%2fb",
    "http://example.com/a%2Fb",
    "http://example.com/%7Euser",
    "http://example.com/~user",
    "http://example.com/path;params?x=1",
    "http://example.com/path/",
    # non-ASCII
    "http://example.com/café",
    "http://example.com/caf%C3%A9",
    "http://example.com/caf%c3%a9",
    "http://example.com/search?q=café",
    "http://example.com/search?q=caf%C3%A9",
    "http://example.com/%E4%BD%A0%E5%A5%BD",
    "http://example.com/你好?q=世界",
    "http://bücher.de/",
    "http://xn--bcher-kva.de/",
    "http://example.com/emoji/😀",
    "http://example.com/%ff",
]

for u in URLS:
    add(u)

# methods (on a handful of URLs)
METHOD_URLS = [
    "http://example.com/",
    "http://example.com/path?b=2&a=1",
    "http://example.com/café#x",
    "https://example.com:443/api",
]
for u in METHOD_URLS:
    for m in ("GET", "get", "POST", "post", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"):
        add(u, method=m)

# bodies
BODIES = [
    b"",
    b"a=1",
    b"a=1&b=2",
    b"b=2&a=1",
    b'{"json": true}',
    "é✓".encode("utf-8"),
    "é".encode("latin-1"),
    b"\x00\x01\x02\xff\xfe",
    b"x" * 1000,
    b" ",
    b"\r\n",
]
for u in ("http://example.com/form", "http://example.com/form?x=1#f"):
    for m in ("POST", "PUT", "GET"):
        for b in BODIES:
            add(u, method=m, body=b)

# headers: they never affect the scrapy-redis fingerprint
HEADER_SETS = [
    (),
    (("Accept", "text/html"),),
    (("accept", "text/html"),),
    (("Accept", "application/json"),),
    (("X-Rep", "1"), ("X-Rep", "2")),
    (("X-Rep", "2"), ("X-Rep", "1")),
    (("Cookie", "session=abc"),),
    (("Cookie", "session=xyz"),),
    (("User-Agent", "trawl/1.0"), ("Accept-Language", "fr")),
    (("Content-Type", "application/x-www-form-urlencoded"),),
    (("X-Utf8", "café"),),
]
for u in ("http://example.com/h", "http://example.com/h?b=1&a=2"):
    for hs in HEADER_SETS:
        add(u, headers=hs)
        add(u, method="POST", body=b"k=v", headers=hs)

# links shaped like trawl's fixture site
for i in range(1, 21):
    add(f"http://127.0.0.1:8089/page/{i}/")
    add(f"http://127.0.0.1:8089/tag/t{i}/page/1/?ref=nav&lang=en")


# ---------------------------------------------------------------------------
# generation
# ---------------------------------------------------------------------------


def make_vector(df: rdf.RFPDupeFilter, server: RecordingServer, case) -> dict:
    url, method, body, headers = case
    # Headers as a list of pairs keeps repeated names and order.
    req = Request(url, method=method, body=body, headers=list(headers))
    server.calls.clear()
    server.sets.clear()  # every vector is a first sighting
    SPY.last_input = None
    seen = df.request_seen(req)
    assert seen is False
    assert len(server.calls) == 1, server.calls
    op, key, member = server.calls[0]
    assert op == "SADD"
    hashed = SPY.last_input
    assert hashed is not None
    # Second sighting must be reported as a duplicate.
    assert df.request_seen(req) is True
    fp = member
    assert isinstance(fp, str) and len(fp) == 40
    assert fp == df.request_fingerprint(req)
    assert hashlib.sha1(hashed).hexdigest() == fp
    return {
        "url": url,
        "request_url": req.url,
        "method": method,
        "request_method": req.method,
        "headers": [list(h) for h in headers],
        "body_hex": body.hex(),
        "sadd_key": key,
        "fingerprint": fp,
        "fingerprint_json": hashed.decode("utf-8"),
        "scrapy_fingerprint": scrapy_fingerprint(req).hex(),
    }


def main() -> None:
    server = RecordingServer()
    spider = DemoSpider()

    class _Settings(dict):
        def get(self, k, d=None):
            return super().get(k, d)

        def getbool(self, k, d=False):
            return bool(super().get(k, d))

    # Build the filter the way scrapy_redis.scheduler.Scheduler.open does
    # (RFPDupeFilter.from_spider), but with the recording server.
    spider.settings = _Settings()
    orig = rdf.get_redis_from_settings
    rdf.get_redis_from_settings = lambda settings: server
    try:
        df = rdf.RFPDupeFilter.from_spider(spider)
    finally:
        rdf.get_redis_from_settings = orig
    assert df.key == "fpdemo:dupefilter"

    vectors = {}
    for case in CASES:
        v = make_vector(df, server, case)
        k = json.dumps(v, sort_keys=True)
        vectors[k] = v
    out = sorted(vectors.values(), key=lambda v: (v["url"], v["method"], v["body_hex"], json.dumps(v["headers"])))

    # Sanity: headers never matter; scrapy-redis != scrapy default.
    by_req = {}
    for v in out:
        by_req.setdefault((v["request_url"], v["request_method"], v["body_hex"]), set()).add(v["fingerprint"])
    assert all(len(s) == 1 for s in by_req.values())
    assert all(v["fingerprint"] != v["scrapy_fingerprint"] for v in out)

    doc = {
        "description": (
            "scrapy_redis.dupefilter.RFPDupeFilter.request_seen(Request(url, method, body, headers)):"
            " 'fingerprint' is the member SADDed into 'sadd_key'; it is"
            " sha1(fingerprint_json.encode()).hexdigest() where fingerprint_json is"
            " json.dumps({'method','url': canonicalize_url(request.url),'body': body.hex()}, sort_keys=True)."
            " Headers are not part of it."
        ),
        "generator": "tests/data/redis/gen_fingerprints.py",
        "meta": META,
        "count": len(out),
        "vectors": out,
    }
    path = HERE / "fingerprints.json"
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path} ({len(out)} vectors)")


if __name__ == "__main__":
    main()
