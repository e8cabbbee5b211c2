"""Records how Scrapy 2.19 / w3lib 2.5 choose a response's encoding -> encoding.json.

Usage (from the repository root, in a venv with scrapy==2.19.0, w3lib==2.5.0,
CPython 3.11):

    python tests/data/encoding/gen_encoding.py

Format: {"versions", "headers": [{"content_type", "encoding"}],
"bodies": [{"body_hex", "encoding"}], "responses": [{"content_type", "body_hex",
"encoding", "guessed"}]}.
- headers: w3lib.encoding.http_content_type_encoding(content_type) (a Python codec
  name, or null).
- bodies: w3lib.encoding.html_body_declared_encoding(body).
- responses: TextResponse(url, body=body, headers={"Content-Type": ...}).encoding;
  "guessed" is true when nothing was declared and the body is neither ASCII nor UTF-8
  (Scrapy's answer is then charset-normalizer's statistical guess).
"""

import itertools
import json
import os
import sys

import scrapy
import w3lib
from scrapy.http import TextResponse
from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding

CONTENT_TYPES = [
    "text/html",
    "text/html; charset=utf-8",
    "text/html;charset=UTF-8",
    "text/html; charset=\"utf-8\"",
    "text/html; charset='utf-8'",
    "text/html; CHARSET=iso-8859-1",
    "text/html; charset=latin-1",
    "text/html; charset=latin1",
    "text/html; charset=ascii",
    "text/html; charset=us-ascii",
    "text/html; charset=windows-1251",
    "text/html; charset=cp1251",
    "text/html; charset=koi8-r",
    "text/html; charset=shift_jis",
    "text/html; charset=Shift-JIS",
    "text/html; charset=euc-jp",
    "text/html; charset=gb2312",
    "text/html; charset=gbk",
    "text/html; charset=big5",
    "text/html; charset=euc-kr",
    "text/html; charset=iso-8859-15",
    "text/html; charset=utf8",
    "text/html; charset=UTF_8",
    "text/html; charset=",
    "text/html; charset=bogus-charset",
    "text/html; charset = utf-8",
    "text/html; charset=utf-8;",
    "text/html; charset=utf-8, text/html; charset=latin-1",
    "text/html; charset=utf-8 ; format=flowed",
    "text/html; foo=\"a;charset=latin-1\"; charset=utf-8",
    "text/html; foo=\"bar\"; charset=koi8-r",
    "text/html; foo=\"a\\\"b\"; charset=cp1251",
    "text/html; foo=\"unterminated; charset=cp1251",
    "text/html; charset=\"utf-8",
    "text/html; charset=utf-8\"",
    "text/html;\tcharset=cp1252",
    "charset=utf-8",
    ";charset=koi8-r",
    "text/html; xcharset=koi8-r",
    "text/html; charset=utf-16",
    "text/html; charset=utf-16le",
    "application/json",
    "application/xhtml+xml; charset=iso-8859-2",
    "text/html; charset=x-user-defined",
    "text/html; charset=\u00e9t\u00e9",
    "",
]

BODIES = [
    b"<html><head><meta charset=\"utf-8\"></head><body>x</body></html>",
    b"<html><head><meta charset='utf-8'></head><body>x</body></html>",
    b"<html><head><meta charset=utf-8></head><body>x</body></html>",
    b"<html><head><meta charset = \"koi8-r\" ></head><body>x</body></html>",
    b"<html><head><META CHARSET=\"ISO-8859-1\"></head></html>",
    b"<meta charset=\"  windows-1251\">",
    b"<meta charset=\"\">",
    b"<meta charset>",
    b"<meta charset=\"bogus\"><meta charset=\"utf-8\">",
    b"<meta name=\"x\"><meta charset=\"cp1251\">",
    b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-15\">",
    b"<meta content=\"text/html; charset=iso-8859-15\" http-equiv=\"Content-Type\">",
    b"<meta content=\"text/html; charset=iso-8859-15\">",
    b"<meta http-equiv=\"refresh\" content=\"text/html; charset=iso-8859-15\">",
    b"<meta httpequiv=\"ContentType\" content=\"text/html;charset=koi8-r\">",
    b"<meta http_equiv=\"content_type\" content=\"charset = 'euc-jp'\">",
    b"<meta http-equiv=content-type content=text/html;charset=gb2312>",
    b"<meta http-equiv=\"content type\" content=\"text/html; charset=big5\">",
    b"<meta http-equiv=\"Content-Type\" content=\"text/html\"><meta charset=\"koi8-r\">",
    b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\" charset=\"koi8-r\">",
    b"<meta charset=\"koi8-r\" http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">",
    b"<meta\tcharset=\"cp1252\">",
    b"<meta/charset=\"cp1252\">",
    b"< meta charset=\"cp1252\">",
    b"<metacharset=\"cp1252\">",
    b"<meta data-x=\">\" charset=\"cp1251\">",
    b"<meta data-x='<' charset=\"cp1251\">",
    b"<meta data-x=\"<!--\" charset=\"cp1251\">",
    b"<!-- <meta charset=\"cp1251\"> --><meta charset=\"koi8-r\">",
    b"<!-- unterminated <meta charset=\"cp1251\">",
    b"<!--><meta charset=\"cp1251\">-->",
    b"<html><body><meta charset=\"cp1251\"></body></html>",
    b"<html>< body><meta charset=\"cp1251\">",
    b"<html><bodyx><meta charset=\"cp1251\">",
    b"<!-- <body> --><meta charset=\"cp1251\">",
    b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><root/>",
    b"<?xml version='1.0' encoding='koi8-r'?>",
    b"<?XML version=\"1.0\" encoding=\"koi8-r\"?>",
    b"<?xml version=\"1.0\"?><meta charset=\"cp1251\">",
    b"<?xml\tencoding=\"cp1251\"?>",
    b"<?xmlencoding=\"cp1251\"?>",
    b"<meta charset=\"utf-16\">",
    b"<meta charset=\"UTF-16LE\">",
    b"<meta charset=\"x-user-defined\">",
    b"<meta charset=\"latin-1\">",
    b"<meta charset=\"shift_jis\">",
    b"<meta charset=\"\xe9t\xe9\">",
    b"<meta charset=\"utf-8\xe9\">",
    b"<meta name=\"description\" content=\"charset=cp1251\">",
    b"<meta charset=\"koi8-r\"" + b" " * 5000,
    b" " * 4090 + b"<meta charset=\"koi8-r\">",
    b"<meta x=\"unclosed charset=\"koi8-r\">",
    b"<meta charset=koi8-r/>",
    b"<meta charset=\"koi8-r",
    b"<p>no declaration at all</p>",
    b"",
]

RESPONSE_BODIES = [
    b"<p>plain ascii</p>",
    b"",
    "<p>caf\u00e9</p>".encode("utf-8"),
    "<p>caf\u00e9</p>".encode("latin-1"),
    b"\xef\xbb\xbf<p>bom</p>",
    b"<meta charset='koi8-r'><p>ascii</p>",
    b"<meta charset=\"utf-8\"><p>ascii</p>",
    "<meta charset='koi8-r'><p>\u0436</p>".encode("koi8-r"),
]
RESPONSE_TYPES = [
    "text/html",
    "text/html; charset=utf-8",
    "text/html; charset=cp1251",
    "application/json",
    "text/html; charset=bogus",
]


def ascii_or_utf8(body):
    try:
        body.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def main():
    out = {
        "versions": {
            "scrapy": scrapy.__version__,
            "w3lib": w3lib.__version__,
            "python": sys.version.split()[0],
        },
        "headers": [
            {"content_type": ct, "encoding": http_content_type_encoding(ct)}
            for ct in CONTENT_TYPES
        ],
        "bodies": [
            {"body_hex": b.hex(), "encoding": html_body_declared_encoding(b)} for b in BODIES
        ],
        "responses": [],
    }
    for ct, body in itertools.product(RESPONSE_TYPES, RESPONSE_BODIES):
        r = TextResponse("http://example.com/", body=body, headers={"Content-Type": ct})
        declared = r._declared_encoding()
        out["responses"].append(
            {
                "content_type": ct,
                "body_hex": body.hex(),
                "encoding": r.encoding,
                "guessed": declared is None and not ascii_or_utf8(body),
            }
        )
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "encoding.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    print(
        f"{len(out['headers'])} headers, {len(out['bodies'])} bodies, "
        f"{len(out['responses'])} responses -> {path}"
    )


if __name__ == "__main__":
    main()
