"""Records the Proxy-Authorization header Scrapy 2.19's HttpProxyMiddleware sets for
proxy URLs with credentials, under each HTTPPROXY_AUTH_ENCODING, for
tests/proxy_auth_reference.rs.

    /work/venv-ref/bin/python tests/data/proxy_auth/record.py > tests/data/proxy_auth/cases.json
"""

import json
import sys

import scrapy
from scrapy import Request
from scrapy.downloadermiddlewares.httpproxy import HttpProxyMiddleware
from scrapy.utils.test import get_crawler

PROXIES = [
    "http://user:pass@proxy.test:3128",
    "http://us%C3%A9r:p%C3%A4ss@proxy.test:3128",
    "http://caf\u00e9:na\u00efve@proxy.test:3128",
    "http://%E2%82%AC:x@proxy.test:3128",
    "http://only-user@proxy.test:3128",
    "http://:only-pass@proxy.test:3128",
    "http://a%3Ab:c%40d@proxy.test:3128",
]

cases = []
for encoding in ["latin-1", "utf-8"]:
    crawler = get_crawler(settings_dict={"HTTPPROXY_AUTH_ENCODING": encoding})
    mw = HttpProxyMiddleware.from_crawler(crawler)
    for proxy in PROXIES:
        request = Request("http://example.test/", meta={"proxy": proxy})
        try:
            mw.process_request(request)
            header = request.headers.get("Proxy-Authorization")
            outcome = {"header": header.decode("ascii") if header else None}
        except Exception as e:  # noqa: BLE001 - recorded, compared by the test
            outcome = {"error": type(e).__name__}
        cases.append({"encoding": encoding, "proxy": proxy, **outcome})

json.dump({"scrapy": scrapy.__version__, "cases": cases}, sys.stdout, indent=1, ensure_ascii=False)
sys.stdout.write("\n")
