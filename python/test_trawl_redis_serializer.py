"""Round-trip tests for trawl_redis_serializer through scrapy-redis' own queue code.

Run with the scrapy-redis venv (pytest is optional):

    /work/venv-redis/bin/python python/test_trawl_redis_serializer.py
    # or: /work/venv-redis/bin/python -m pytest python/test_trawl_redis_serializer.py
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scrapy import FormRequest, Request, Spider  # noqa: E402
from scrapy.http import JsonRequest  # noqa: E402
from scrapy_redis import queue as rqueue  # noqa: E402

import trawl_redis_serializer as ser  # noqa: E402


class DemoSpider(Spider):
    name = "demo"

    def parse(self, response):
        pass

    def parse_item(self, response, **kwargs):
        pass

    def on_error(self, failure):
        pass


SPIDER = DemoSpider()


def make_queue():
    # scrapy_redis.queue.Base validates the serializer (hasattr loads/dumps) and
    # does the request <-> dict <-> wire conversion; no server is touched here.
    return rqueue.FifoQueue(server=None, spider=SPIDER, key="%(spider)s:requests", serializer=ser)


def requests():
    return [
        Request("http://127.0.0.1:8089/"),
        Request(
            "http://example.com/path?b=2&a=1#frag",
            callback=SPIDER.parse_item,
            errback=SPIDER.on_error,
            method="POST",
            headers=[("X-Rep", "1"), ("X-Rep", "2"), ("Accept", "text/html"), ("X-Utf8", "café")],
            body=b"\xff\xfe\x00binary\x80",
            cookies={"session": "abc", "lang": "fr"},
            meta={"depth": 3, "download_latency": 0.125, "redirect_urls": ["http://a/", "http://b/"],
                  "nested": {"k": [1, 2.5, None, True]}, "raw": b"\x00\xff", "unicode": "日本"},
            encoding="utf-8",
            priority=-7,
            dont_filter=True,
            cb_kwargs={"page": 2, "token": b"\x01\x02", "tags": ["a", "b"]},
            flags=["cached", "retry"],
        ),
        Request("http://example.com/café", cookies=[{"name": "c", "value": "v", "domain": "example.com", "path": "/"}],
                priority=100, encoding="latin-1", body="é".encode("latin-1")),
        Request("http://example.com/dict-key-collision", meta={"__bytes_b64__": "not a tag", "x": 1},
                cb_kwargs={"__dict_items__": []}),
        Request("http://example.com/int-keys", meta={"ints": {1: "one", 2: b"two"}, "empty": b""}),
        FormRequest("http://example.com/login", formdata={"user": "u", "pass": "p é"}, callback=SPIDER.parse),
        FormRequest("http://example.com/search", method="GET", formdata={"q": "x y"}),
        JsonRequest("http://example.com/api", data={"a": [1, 2]}, priority=5),
    ]


def test_roundtrip_through_scrapy_redis_queue():
    q = make_queue()
    for req in requests():
        wire = q._encode_request(req)
        assert isinstance(wire, str) and wire.isascii(), wire
        json.loads(wire)  # plain JSON
        # Through bytes, as redis-py returns it.
        back = q._decode_request(wire.encode("ascii"))
        assert type(back) is type(req)
        assert back.to_dict(spider=SPIDER) == req.to_dict(spider=SPIDER), (req, back)
        for attr in ("url", "method", "body", "cookies", "meta", "encoding", "flags", "cb_kwargs",
                     "priority", "dont_filter", "callback", "errback"):
            assert getattr(back, attr) == getattr(req, attr), attr
        assert list(back.headers.items()) == list(req.headers.items())
        # Re-encoding is byte-identical (matters for ZSET members).
        assert q._encode_request(back) == wire


def test_headers_and_bytes_shape():
    req = Request("http://h/", callback=SPIDER.parse, headers={"Accept": "text/html"}, body=b"\xff")
    wire = ser.dumps(req.to_dict(spider=SPIDER))
    expected = (
        '{"url":"http://h/","callback":"parse","errback":null,'
        '"headers":{"__dict_items__":[[{"__bytes_b64__":"QWNjZXB0"},'
        '[{"__bytes_b64__":"dGV4dC9odG1s"}]]]},'
        '"body":{"__bytes_b64__":"/w=="},"cookies":{},"meta":{},'
        '"encoding":"utf-8","flags":[],"cb_kwargs":{},"dont_filter":false,'
        '"method":"GET","priority":0}'
    )
    assert wire == expected, wire
    # The module docstring shows the same text wrapped; keep them in sync.
    doc = "".join(line.strip() for line in ser.__doc__.split("::")[-1].split("(one line")[0].splitlines())
    assert doc == expected, doc


def test_minimal_dict_from_another_writer():
    # A writer (the Rust side) may send only the keys it cares about.
    q = make_queue()
    back = q._decode_request(b'{"url":"http://h/x","callback":"parse","priority":3,'
                             b'"body":{"__bytes_b64__":"AAE="},'
                             b'"headers":{"__dict_items__":[[{"__bytes_b64__":"WC1B"},'
                             b'[{"__bytes_b64__":"MQ=="},{"__bytes_b64__":"Mg=="}]]]}}')
    assert back.url == "http://h/x"
    assert back.callback == SPIDER.parse
    assert back.priority == 3 and back.body == b"\x00\x01"
    assert back.headers.getlist("X-A") == [b"1", b"2"]
    assert back.method == "GET" and back.dont_filter is False
    # Non-ASCII UTF-8 text on the wire is accepted too.
    assert ser.loads('{"a":"é"}'.encode("utf-8")) == {"a": "é"}


def test_rejections():
    for bad in (float("nan"), float("inf"), object(), {1.5j: 1}):
        try:
            ser.dumps({"x": bad})
        except (TypeError, ValueError):
            pass
        else:
            raise AssertionError(f"accepted {bad!r}")
    for bad in ('{"__bytes_b64__":"!!"}', '{"__bytes_b64__":"AA==","x":1}', '{"__dict_items__":[[1]]}',
                '{"x":NaN}', '{"__bytes_b64__":1}'):
        try:
            ser.loads(bad)
        except ValueError:
            pass
        else:
            raise AssertionError(f"accepted {bad}")


def test_all_byte_values_and_tuples():
    blob = bytes(range(256))
    assert ser.loads(ser.dumps({"b": blob, "t": (1, b"x")})) == {"b": blob, "t": [1, b"x"]}


if __name__ == "__main__":
    n = 0
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            n += 1
            print(f"ok {name}")
    print(f"{n} tests passed")
