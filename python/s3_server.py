"""An S3-compatible server for trawl's storage tests: moto's server on 127.0.0.1 with
request signing enforced (Signature Version 4 is checked), one IAM user allowed s3:*
and the buckets given on the command line (`--open`: signatures are not checked, so
a client may hold its credentials before the server starts). Prints one JSON line (port, access key,
secret key) and runs until its standard input closes.

    python s3_server.py [--port N] [--open] BUCKET...
    python s3_server.py dump ENDPOINT ACCESS_KEY SECRET_KEY BUCKET

`dump` prints one JSON object: each key of the bucket with its size, ETag and body
(base64), read with boto3.
"""

import base64
import json
import os
import sys

# The first four requests are the set-up below; every later one must be signed by a
# known key.
OPEN = "--open" in sys.argv
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "1000000000" if OPEN else "4"
os.environ.setdefault("AWS_ACCESS_KEY_ID", "setup")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "setup")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

import boto3  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402


def dump(endpoint, access_key, secret_key, bucket):
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
    )
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
            out[obj["Key"]] = {
                "size": obj["Size"],
                "etag": obj["ETag"],
                "body": base64.b64encode(body).decode(),
            }
    print(json.dumps(out))


def main():
    args = [a for a in sys.argv[1:] if a != "--open"]
    if args[:1] == ["dump"]:
        dump(*args[1:5])
        return
    port = 0
    if args[:1] == ["--port"]:
        port = int(args[1])
        args = args[2:]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    iam = boto3.client("iam", endpoint_url=endpoint)
    iam.create_user(UserName="trawl")
    iam.put_user_policy(
        UserName="trawl",
        PolicyName="s3",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
            }
        ),
    )
    key = iam.create_access_key(UserName="trawl")["AccessKey"]
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
    )
    for bucket in args:
        s3.create_bucket(Bucket=bucket)
    print(
        json.dumps(
            {
                "port": port,
                "access_key": key["AccessKeyId"],
                "secret_key": key["SecretAccessKey"],
            }
        ),
        flush=True,
    )
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
