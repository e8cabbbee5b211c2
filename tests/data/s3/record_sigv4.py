"""Records AWS Signature Version 4 for S3 requests as botocore signs them
(`botocore.auth.S3SigV4Auth`, the signer boto3's S3 client uses), at a fixed time, so
that trawl's signer is checked against the reference byte for byte.

    python3 -m venv /tmp/s3-venv
    /tmp/s3-venv/bin/pip install botocore==1.44.8
    /tmp/s3-venv/bin/python tests/data/s3/record_sigv4.py > tests/data/s3/sigv4_cases.json

Output (JSON): {"versions", "cases": [...]}, each case:

    name            what it covers
    method, url     the request as sent (the URL's path and query percent-encoded as
                    trawl sends them)
    headers         the headers given before signing ([name, value] pairs)
    body_b64        the body (base64), or null with "payload" "UNSIGNED-PAYLOAD"
    payload         null (the body's SHA-256 is signed) or "UNSIGNED-PAYLOAD"
    access_key, secret_key, session_token, region, timestamp (YYYYMMDDTHHMMSSZ)
    signed          the headers botocore added or set: Authorization, X-Amz-Date,
                    X-Amz-Content-SHA256, X-Amz-Security-Token
    canonical_request, string_to_sign   botocore's intermediate texts
"""

import base64
import datetime
import hashlib
import json
import sys
from unittest import mock

import botocore
import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

WHEN = datetime.datetime(2026, 12, 4, 21, 10, 41)

CASES = [
    # name, method, url, headers, body, payload, token, region
    ("put_simple", "PUT", "http://127.0.0.1:9000/bucket/items.jl", [], b'{"a": 1}\n', None, None, "us-east-1"),
    ("put_empty_body", "PUT", "http://127.0.0.1:9000/bucket/empty.jl", [], b"", None, None, "us-east-1"),
    ("put_virtual_host", "PUT", "https://my-bucket.s3.amazonaws.com/feeds/2026/items.jl", [], b"x" * 100, None, None, "us-east-1"),
    ("put_region", "PUT", "https://my-bucket.s3.eu-west-3.amazonaws.com/items.json", [], b"[]", None, None, "eu-west-3"),
    ("put_key_space_and_unicode", "PUT", "http://127.0.0.1:9000/bucket/a%20b/caf%C3%A9%2B1.jl", [], b"z", None, None, "us-east-1"),
    ("put_key_reserved_chars", "PUT", "http://127.0.0.1:9000/bucket/x%3Ay%40z%21%28%29%2A%27~-_.jl", [], b"z", None, None, "us-east-1"),
    ("put_session_token", "PUT", "http://127.0.0.1:9000/bucket/items.jl", [], b"data", None, "FwoGZXIvYXdzEJr//////////wEaDA+token==", "us-east-1"),
    ("put_acl_and_type", "PUT", "http://127.0.0.1:9000/bucket/items.jl", [["x-amz-acl", "public-read"], ["Content-Type", "application/octet-stream"]], b"data", None, None, "us-east-1"),
    ("put_unsigned_payload", "PUT", "https://my-bucket.s3.amazonaws.com/big.jl", [], None, "UNSIGNED-PAYLOAD", None, "us-east-1"),
    ("create_multipart", "POST", "http://127.0.0.1:9000/bucket/big.jl?uploads", [], b"", None, None, "us-east-1"),
    ("upload_part", "PUT", "http://127.0.0.1:9000/bucket/big.jl?partNumber=2&uploadId=VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA", [], b"p" * 1000, None, None, "us-east-1"),
    ("complete_multipart", "POST", "http://127.0.0.1:9000/bucket/big.jl?uploadId=abc%2Fdef%3D%3D", [["Content-Type", "application/xml"]], b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"e1\"</ETag></Part></CompleteMultipartUpload>", None, None, "us-east-1"),
    ("abort_multipart", "DELETE", "http://127.0.0.1:9000/bucket/big.jl?uploadId=abc", [], b"", None, None, "us-east-1"),
    ("head_object", "HEAD", "http://127.0.0.1:9000/bucket/full/0a1b.jpg", [], b"", None, None, "us-east-1"),
    ("get_with_query_sorting", "GET", "http://127.0.0.1:9000/bucket?prefix=a%20b&list-type=2&max-keys=10", [], b"", None, None, "us-east-1"),
    ("port_in_host", "PUT", "http://localhost:4566/bucket/k", [], b"k", None, None, "us-west-2"),
]


def record(case):
    name, method, url, headers, body, payload, token, region = case
    creds = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    signer = botocore.auth.S3SigV4Auth(creds, "s3", region)
    req = AWSRequest(method=method, url=url, data=body if body is not None else b"")
    for k, v in headers:
        req.headers[k] = v
    if payload == "UNSIGNED-PAYLOAD":
        req.headers["X-Amz-Content-SHA256"] = "UNSIGNED-PAYLOAD"
        req.context["payload_signing_enabled"] = False
    captured = {}
    real_sts = signer.string_to_sign

    def string_to_sign(request, canonical_request):
        # What add_auth signs: its canonical request and string to sign.
        captured["canonical"] = canonical_request
        captured["sts"] = real_sts(request, canonical_request)
        return captured["sts"]

    with mock.patch.object(botocore.auth, "get_current_datetime", return_value=WHEN), \
            mock.patch.object(signer, "string_to_sign", side_effect=string_to_sign):
        if payload == "UNSIGNED-PAYLOAD":
            with mock.patch.object(botocore.auth.S3SigV4Auth, "_should_sha256_sign_payload", return_value=False):
                signer.add_auth(req)
        else:
            signer.add_auth(req)
    canonical, sts = captured["canonical"], captured["sts"]
    signed = {}
    for k in ["Authorization", "X-Amz-Date", "X-Amz-Content-SHA256", "X-Amz-Security-Token"]:
        if k in req.headers:
            signed[k] = req.headers[k]
    return {
        "name": name,
        "method": method,
        "url": url,
        "headers": headers,
        "body_b64": None if body is None else base64.b64encode(body).decode(),
        "payload": payload,
        "access_key": creds.access_key,
        "secret_key": creds.secret_key,
        "session_token": token,
        "region": region,
        "timestamp": WHEN.strftime("%Y%m%dT%H%M%SZ"),
        "signed": signed,
        "canonical_request": canonical,
        "string_to_sign": sts,
    }


def main():
    out = {
        "versions": {"botocore": botocore.__version__, "python": sys.version.split()[0]},
        "cases": [record(c) for c in CASES],
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
