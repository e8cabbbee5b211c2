#!/usr/bin/env python3
"""Record Scrapy 2.19's JsonRequest, FormRequest and TextResponse.json() answers.

Usage (from the repository root, in the reference venv of tests/data/urls/gen_urls.py):

    /work/venv-ref/bin/python tests/data/requests/gen_kinds.py

Writes kinds.json next to this script:

* json:  JsonRequest(url, data=..., method=...) -> url, method, body, Content-Type,
  Accept (the same data and method are given to trawl's `JsonRequest`)
* form:  FormRequest(url, formdata=[(k, v or [v...]), ...], method=..., encoding=...)
  -> url, method, body, Content-Type
* loads: TextResponse(body=...).json(), written back with json.dumps(sort_keys=True),
  or the error

An exception is recorded as {"error": "<ExceptionType>: <message>"}.
"""

from __future__ import annotations

import json
from pathlib import Path

from scrapy.http import FormRequest, JsonRequest, TextResponse

HERE = Path(__file__).resolve().parent

JSON_CASES = [
    {"url": "http://example.com/api", "data": {"b": 1, "a": [1, 2.5, None, True]}},
    {"url": "http://example.com/api", "data": {"z": {"y": 1, "x": "é"}, "a": "ツ😀"}},
    {"url": "http://example.com/api", "data": [3, "x", {"k": 1e100, "j": -0.0}]},
    {"url": "http://example.com/api", "data": "just a string \u0001\n\"q\""},
    {"url": "http://example.com/api", "data": 0},
    {"url": "http://example.com/api", "data": {}},
    {"url": "http://example.com/api", "data": {"q": 1}, "method": "PUT"},
    {"url": "http://example.com/api", "data": {"q": 1}, "method": "GET"},
    {"url": "http://example.com/api?x=1"},
    {"url": "http://example.com/api", "method": "POST"},
    {"url": "http://example.com/api", "data": {"big": 12345678901234567890, "f": 0.1}},
]

FORM_CASES = [
    {"url": "http://example.com/post", "formdata": [["name", "John Doe"], ["age", "27"]]},
    {"url": "http://example.com/post", "formdata": [["a", ["1", "2"]], ["b", "x&y=z"]]},
    {"url": "http://example.com/post", "formdata": [["q", "é ツ+%/?#~"]]},
    {"url": "http://example.com/post", "formdata": [["q", "é"]], "encoding": "latin-1"},
    {"url": "http://example.com/post", "formdata": [["q", "ж"]], "encoding": "cp1251"},
    {"url": "http://example.com/s", "formdata": [["q", "kw"], ["page", "1"]], "method": "GET"},
    {"url": "http://example.com/s?old=1#frag", "formdata": [["q", "a b"]], "method": "GET"},
    {"url": "http://example.com/s?old=1", "formdata": [["q", "a"]], "method": "PUT"},
    {"url": "http://example.com/s", "formdata": [["", ""], ["k", ""]]},
    {"url": "http://example.com/s", "formdata": []},
    {"url": "http://example.com/s", "formdata": [["q", "1"]], "method": "POST"},
    {"url": "http://example.com/s", "formdata": [["q", "é"]], "method": "GET", "encoding": "latin-1"},
    {"url": "http://example.com/s", "formdata": [["q", "ツ"]], "encoding": "latin-1"},
]

LOADS_CASES = [
    '{"a": 1, "b": [true, false, null], "c": "é"}',
    "[1, 2.5, -0.0, 1e400]",
    '"\\ud83d\\ude00"',
    "\ufeff{\"bom\": 1}",
    "  {\"ws\": 1}  \n",
    "NaN",
    "[Infinity, -Infinity]",
    "{\"a\": 1,}",
    "",
    "{\"dup\": 1, \"dup\": 2}",
    "12345678901234567890123",
]


def err(e: BaseException) -> dict:
    return {"error": f"{type(e).__name__}: {e}"}


def header(r, name: str):
    v = r.headers.get(name)
    return v.decode("latin-1") if v is not None else None


def record_request(r) -> dict:
    return {
        "url": r.url,
        "method": r.method,
        "body": r.body.decode("latin-1"),
        "content_type": header(r, "Content-Type"),
        "accept": header(r, "Accept"),
    }


def main() -> None:
    out = {"json": [], "form": [], "loads": []}
    for case in JSON_CASES:
        kwargs = {k: v for k, v in case.items() if k != "url"}
        try:
            got = record_request(JsonRequest(case["url"], **kwargs))
        except Exception as e:  # noqa: BLE001
            got = err(e)
        out["json"].append({"case": case, "request": got})
    for case in FORM_CASES:
        kwargs = {k: v for k, v in case.items() if k != "url"}
        kwargs["formdata"] = [(k, v) for k, v in kwargs["formdata"]]
        try:
            got = record_request(FormRequest(case["url"], **kwargs))
        except Exception as e:  # noqa: BLE001
            got = err(e)
        out["form"].append({"case": case, "request": got})
    for text in LOADS_CASES:
        response = TextResponse(
            "http://example.com/", body=text.encode("utf-8"), encoding="utf-8"
        )
        try:
            value = response.json()
            got = {"dumped": json.dumps(value, sort_keys=True)}
        except Exception as e:  # noqa: BLE001
            got = err(e)
        out["loads"].append({"text": text, "result": got})
    with open(HERE / "kinds.json", "w", encoding="utf-8", newline="\n") as f:
        json.dump(out, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote kinds.json:", {k: len(v) for k, v in out.items()})


if __name__ == "__main__":
    main()
