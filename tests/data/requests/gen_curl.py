"""Records Scrapy's ``Request.from_curl`` on curl command lines -> curl.json.

Usage (from the repository root, in a venv with scrapy==2.19.0, CPython 3.11):

    python tests/data/requests/gen_curl.py

Each case is one command line, run with ``ignore_unknown_options`` True and False.
A case records either the request Scrapy builds (``method``, ``url``, ``headers`` as
Scrapy's Headers hold them — title-cased names, each with its list of values —
``body`` as UTF-8 text, ``cookies`` as ``[name, value]`` pairs, and ``warning``: the
"Unrecognized options" warning text or null) or ``error``: the exception's type name
and ``message``. Cookies and headers keep the order of Scrapy's dicts.
"""

import json
import os
import sys
import warnings

import scrapy
from scrapy import Request

UA_CHROME = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36"
)

CASES = [
    # The basics.
    "curl http://example.com/",
    "curl 'http://example.com/a b?q=1 2'",
    "curl example.com/path",
    "curl www.example.com:8080/x",
    "curl localhost:8000/api",
    "curl //example.com/x",
    "curl https://example.com/caf\u00e9?q=\u00e9",
    "curl 'https://example.com/?a=1&b=2#frag'",
    "curl http://[::1]:8080/",
    "curl ftp://example.com/file.txt",
    "curl",
    "wget http://example.com/",
    "curl http://example.com/ http://example.org/",
    # Methods.
    "curl -X POST http://example.com/",
    "curl -X delete http://example.com/",
    "curl -XPUT http://example.com/",
    "curl --request PATCH http://example.com/",
    "curl --request=OPTIONS http://example.com/",
    "curl --req HEAD http://example.com/",
    "curl -X '' -d a=1 http://example.com/",
    "curl -X GET -d a=1 http://example.com/",
    "curl -X POST -X PUT http://example.com/",
    "curl -sXPOST http://example.com/",
    # Headers.
    "curl -H 'Accept: text/html' http://example.com/",
    "curl -H 'accept:text/html' http://example.com/",
    "curl -H 'x-custom-header:  spaced value  ' http://example.com/",
    "curl -H 'X-Empty:' http://example.com/",
    "curl -H 'X-Empty;' http://example.com/",
    "curl -H 'NoColon' http://example.com/",
    "curl -H 'A: 1' -H 'a: 2' http://example.com/",
    "curl -H 'A: 1' -H 'B: 2' -H 'A: 3' http://example.com/",
    "curl -H 'X-Url: http://a:b@c/' http://example.com/",
    "curl --header 'Referer: http://example.com/' http://example.com/x",
    "curl --header='Referer: http://example.com/' http://example.com/x",
    "curl --head 'X-A: b' http://example.com/",
    "curl --head http://example.com/",
    "curl -H'X-Attached: yes' http://example.com/",
    "curl -H=X-Eq:1 http://example.com/",
    "curl -H 'sec-ch-ua-mobile: ?0' -H 'x_under_score: 1' http://example.com/",
    "curl -H 'ACCEPT-LANGUAGE: en' http://example.com/",
    "curl -H 'X-Unicode: caf\u00e9' http://example.com/",
    "curl -H 'Content-Type: application/json' -d '{\"a\": 1}' http://example.com/",
    # Cookies.
    "curl -H 'Cookie: a=1; b=2' http://example.com/",
    "curl -H 'cookie: a=1' -H 'Cookie: b=2' http://example.com/",
    "curl -H 'Cookie: a=\"quoted value\"; b=\\\"x' http://example.com/",
    "curl -H 'Cookie: a=1; path=/; b=2' http://example.com/",
    "curl -H 'Cookie: path=/; a=1' http://example.com/",
    "curl -H 'Cookie: a=1; $Path=/; b=2' http://example.com/",
    "curl -H 'Cookie: $Version=1; a=1' http://example.com/",
    "curl -H 'Cookie: a=1; $Foo=x' http://example.com/",
    "curl -H 'Cookie: a=1; secure; b=2' http://example.com/",
    "curl -H 'Cookie: a=1; flag; b=2' http://example.com/",
    "curl -H 'Cookie: a=1;b=2;c=3' http://example.com/",
    "curl -H 'Cookie: a=1, b=2' http://example.com/",
    "curl -H 'Cookie: a=x=y; b=' http://example.com/",
    "curl -H 'Cookie: a=[1]; b={2}' http://example.com/",
    "curl -H 'Cookie: a=1; b=\u00e9; c=3' http://example.com/",
    "curl -H 'Cookie: a=\"\\\\101\\\\\"x\"' http://example.com/",
    "curl -H 'Cookie: a=1; a=2' http://example.com/",
    "curl -H 'Cookie: expires=Wed, 09 Jun 2021 10:18:14 GMT' http://example.com/",
    "curl -H 'Cookie: a=1; expires=Wed, 09 Jun 2021 10:18:14 GMT; b=2' http://example.com/",
    "curl -H 'Cookie: ' http://example.com/",
    "curl -H 'Cookie: x/y=1' http://example.com/",
    "curl -H 'Cookie: a=1; {b}=2' http://example.com/",
    "curl -H 'Cookie: a=1; $Path; b=2' http://example.com/",
    "curl -H 'Cookie: a=1;;b=2' http://example.com/",
    "curl -H 'Cookie:a=1 b=2' http://example.com/",
    "curl -H 'Cookie: a = 1 ; b= 2' http://example.com/",
    "curl -H 'Cookie: a=\"x;y\"; b=2' http://example.com/",
    "curl -H 'Cookie: a=1; Max-Age=5; HttpOnly; b=2' http://example.com/",
    "curl -b 'a=1; b=2' http://example.com/",
    "curl -b a=1 -b b=2 http://example.com/",
    "curl -b cookies.txt http://example.com/",
    "curl --cookie 'session=abc' -H 'Cookie: session=def' http://example.com/",
    "curl -b 'x y=1' http://example.com/",
    # Bodies.
    "curl -d a=1 http://example.com/",
    "curl -d a=1 -d b=2 http://example.com/",
    "curl --data a=1 --data-raw b=2 -d c=3 http://example.com/",
    "curl --data-raw '$hello' http://example.com/",
    "curl --data-raw $'{\"a\":\"b\\\\n\"}' http://example.com/",
    "curl -d '' http://example.com/",
    "curl -d '' -d x http://example.com/",
    "curl -d @file.json http://example.com/",
    "curl -d=eq http://example.com/",
    "curl --data=eq http://example.com/",
    "curl -da=1 http://example.com/",
    "curl --data-binary 'a=1' http://example.com/",
    "curl --data-binary 'a=1' -X POST http://example.com/",
    "curl http://example.com/ --data-binary 'a=1'",
    "curl --data-urlencode 'q=a b' http://example.com/",
    "curl -d 'caf\u00e9=\u00e9' http://example.com/",
    "curl --data-r x http://example.com/",
    "curl --d x http://example.com/",
    "curl --dat x http://example.com/",
    # Auth.
    "curl -u user:pass http://example.com/",
    "curl --user 'user:p:a:ss' http://example.com/",
    "curl -u user: http://example.com/",
    "curl -u :pass http://example.com/",
    "curl -u user http://example.com/",
    "curl -u 'us\u00e9r:p\u00e4ss' http://example.com/",
    "curl -u 'u:\u20ac' http://example.com/",
    "curl -u a:b -H 'Authorization: Bearer x' http://example.com/",
    # Ignored and unknown options.
    "curl --compressed http://example.com/",
    "curl -s -v -# --progress-bar --silent --verbose http://example.com/",
    "curl -sv http://example.com/",
    "curl -vvv http://example.com/",
    "curl -svH 'X: 1' http://example.com/",
    "curl -sx http://example.com/",
    "curl --comp http://example.com/",
    "curl --co x http://example.com/",
    "curl --compressed=yes http://example.com/",
    "curl -L http://example.com/",
    "curl -k -L -i http://example.com/",
    "curl --location --insecure http://example.com/",
    "curl --max-time 10 http://example.com/",
    "curl http://example.com/ --max-time 10",
    "curl --max-time=10 http://example.com/",
    "curl -o out.html http://example.com/",
    "curl -A 'agent x' http://example.com/",
    "curl --user-agent 'agent' http://example.com/",
    "curl -compressed http://example.com/",
    "curl -1 http://example.com/",
    "curl -- http://example.com/",
    "curl -H 'X: 1' -- http://example.com/",
    "curl - http://example.com/",
    "curl '' http://example.com/",
    "curl -h",
    "curl --he x http://example.com/",
    "curl -H",
    "curl http://example.com/ -H",
    "curl -H -X http://example.com/",
    "curl -X",
    "curl --url http://example.com/",
    # Quoting.
    "curl \"http://example.com/?q=\\\"a\\\"\"",
    "curl \"http://example.com/\\$x\\`y\\z\"",
    "curl http://example.com/\\ x",
    "curl 'http://example.com/'\"x\"y",
    "curl 'unterminated",
    "curl \"unterminated",
    "curl http://example.com/ \\",
    "curl 'http://example.com/' \\\n  -H 'A: 1' \\\n  --compressed",
    "curl\thttp://example.com/\t-H\t'A:\t1'",
    "curl http://example.com/ # a comment",
    "  curl   http://example.com/  ",
    # Copied from browsers (Chrome and Firefox "Copy as cURL").
    "curl 'https://www.example.com/api/search?q=shoes&page=2' \\\n"
    "  -H 'accept: application/json, text/plain, */*' \\\n"
    "  -H 'accept-language: en-US,en;q=0.9' \\\n"
    "  -b 'session_id=abc123; _ga=GA1.2.3.4; consent=true' \\\n"
    "  -H 'priority: u=1, i' \\\n"
    "  -H 'referer: https://www.example.com/search' \\\n"
    "  -H 'sec-ch-ua: \"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\"' \\\n"
    "  -H 'sec-ch-ua-mobile: ?0' \\\n"
    "  -H 'sec-ch-ua-platform: \"Linux\"' \\\n"
    "  -H 'sec-fetch-dest: empty' \\\n"
    "  -H 'sec-fetch-mode: cors' \\\n"
    "  -H 'sec-fetch-site: same-origin' \\\n"
    f"  -H 'user-agent: {UA_CHROME}'",
    "curl 'https://www.example.com/graphql' \\\n"
    "  -H 'accept: */*' \\\n"
    "  -H 'content-type: application/json' \\\n"
    "  -H 'origin: https://www.example.com' \\\n"
    f"  -H 'user-agent: {UA_CHROME}' \\\n"
    "  --data-raw '{\"operationName\":\"Products\",\"variables\":{\"first\":24,\"after\":null},"
    "\"query\":\"query Products { products { id } }\"}'",
    "curl 'https://www.example.com/login' \\\n"
    "  -H 'content-type: application/x-www-form-urlencoded' \\\n"
    "  -H 'cookie: csrftoken=xyz; sessionid=' \\\n"
    "  --data-raw 'username=a%40b.com&password=p%26w&csrfmiddlewaretoken=xyz'",
    "curl 'https://www.example.com/it' \\\n"
    "  --data-raw $'{\"text\":\"it\\'s\\\\n\\u00e9\"}'",
    "curl 'https://www.example.com/api' -X 'PUT' -H 'Accept: */*' --data-raw 'x=1' --compressed",
    "curl 'https://www.example.com/' --compressed "
    "-H 'User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0' "
    "-H 'Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' "
    "-H 'Accept-Language: en-US,en;q=0.5' -H 'Accept-Encoding: gzip, deflate, br, zstd' "
    "-H 'Connection: keep-alive' -H 'Cookie: a=1; b=2' -H 'Upgrade-Insecure-Requests: 1' "
    "-H 'Sec-Fetch-Dest: document' -H 'Sec-Fetch-Mode: navigate' -H 'Sec-Fetch-Site: none' "
    "-H 'Sec-Fetch-User: ?1' -H 'Priority: u=0, i' -H 'TE: trailers'",
    "curl 'https://www.example.com/api/items' -X POST "
    "-H 'User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0' "
    "-H 'Content-Type: application/json' -H 'Origin: https://www.example.com' "
    "--data-raw '{\"ids\":[1,2,3]}'",
    "curl \"https://www.example.com/?q=1\" ^\n  -H \"accept: */*\" ^\n  --compressed",
    "curl 'https://api.example.com/v1/things?limit=100' "
    "-H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc' -H 'Accept: application/json'",
]


def record(cmd, ignore):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            request = Request.from_curl(cmd, ignore_unknown_options=ignore)
        except SystemExit as exc:
            return {"error": "SystemExit", "message": str(exc.code)}
        except Exception as exc:  # noqa: BLE001 - every failure is a recorded answer
            return {"error": type(exc).__name__, "message": str(exc)}
    texts = [str(w.message) for w in caught if "Unrecognized options" in str(w.message)]
    return {
        "method": request.method,
        "url": request.url,
        "headers": [
            [name.decode(), [v.decode() for v in values]]
            for name, values in request.headers.items()
        ],
        "body": request.body.decode(),
        "cookies": [[k, v] for k, v in (request.cookies or {}).items()],
        "warning": texts[0] if texts else None,
    }


def main():
    cases = []
    for cmd in CASES:
        for ignore in (True, False):
            case = {"curl": cmd, "ignore_unknown_options": ignore}
            # SystemExit from argparse's -h prints help: keep it out of the output.
            stdout = sys.stdout
            sys.stdout = open(os.devnull, "w")
            try:
                case.update(record(cmd, ignore))
            finally:
                sys.stdout.close()
                sys.stdout = stdout
            cases.append(case)
    out = {
        "description": "Request.from_curl(curl, ignore_unknown_options=...)",
        "generator": "tests/data/requests/gen_curl.py",
        "versions": {"scrapy": scrapy.__version__, "python": sys.version.split()[0]},
        "count": len(cases),
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "curl.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(cases)} cases -> {path}")


if __name__ == "__main__":
    main()
