"""Records Scrapy's csviter (what CSVFeedSpider.parse_rows iterates) -> csviter.json.

Usage (from the repository root, in a venv with scrapy==2.19.0, CPython 3.11):

    python tests/data/feeds_spiders/gen_csviter.py

Each case: a CSV text, the delimiter / quotechar / headers given (null: the csv
module's defaults, the first row), and the rows csviter yields as [header, value]
pairs, plus the numbers of the rows it skipped for their length (its warnings), or the
error (csv.Error's message) with the rows yielded before it.
"""

import json
import logging
import os
import sys

import scrapy
from scrapy.http import TextResponse
from scrapy.utils.iterators import csviter

CASES = [
    ("id,name,price\n1,Widget,12.50\n2,Gadget,7\n", None, None, None),
    ("id,name\r\n1,a\r\n2,b\r\n", None, None, None),
    ("id,name\n1,a\n2,b", None, None, None),
    ("id,name\n\n1,a\n\n\n2,b\n", None, None, None),
    ("id,name\n1\n2,b,extra\n3,c\n", None, None, None),
    ('id,text\n1,"quoted, with comma"\n2,"with ""double"" quotes"\n', None, None, None),
    ('id,text\n1,"multi\nline"\n2,"cr\r\nlf"\n', None, None, None),
    ('id,text\n1,"unterminated\n', None, None, None),
    ('id,text\n1,"closed"tail\n2,mid"quote\n', None, None, None),
    ("id,text\n1, leading space\n2,trailing space \n", None, None, None),
    ("a;b;c\n1;2;3\n", ";", None, None),
    ("a\tb\n1\t2\n", "\t", None, None),
    ("a,b\n'x,y',z\n", None, "'", None),
    ("1,Widget\n2,Gadget\n", None, None, ["id", "name"]),
    ("k,k,v\n1,2,3\n", None, None, None),
    ("", None, None, None),
    ("only,headers\n", None, None, None),
    ("id,name\n1,a\rb\n", None, None, None),
    ("id,name\n1,a\r\n", None, None, None),
    ("id,name\n1,\"\"\n2,\n", None, None, None),
    ("id,name\n\"1\",\"caf\u00e9\"\n", None, None, None),
    ("h1,h2\n,\n,,\n", None, None, None),
    ('id,text\n1,"a""\n', None, None, None),
    ("id,name\r1,a\r2,b\r", None, None, None),
]


class Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record.args["csvlnum"] if isinstance(record.args, dict) else None)


def main():
    handler = Collect()
    logging.getLogger("scrapy.utils.iterators").addHandler(handler)
    logging.getLogger("scrapy.utils.iterators").setLevel(logging.WARNING)
    cases = []
    for text, delimiter, quotechar, headers in CASES:
        handler.records.clear()
        response = TextResponse(
            "http://example.com/feed.csv",
            body=text.encode("utf-8"),
            headers={"Content-Type": "text/csv; charset=utf-8"},
        )
        rows = []
        case = {"csv": text, "delimiter": delimiter, "quotechar": quotechar, "headers": headers}
        try:
            for row in csviter(response, delimiter, headers, quotechar=quotechar):
                rows.append([[k, v] for k, v in row.items()])
        except Exception as exc:  # noqa: BLE001 - a recorded answer
            case["error"] = f"{type(exc).__name__}: {exc}"
        case["rows"] = rows
        case["skipped_lines"] = list(handler.records)
        cases.append(case)
    out = {
        "versions": {"scrapy": scrapy.__version__, "python": sys.version.split()[0]},
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csviter.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    print(f"{len(cases)} cases -> {path}")


if __name__ == "__main__":
    main()
