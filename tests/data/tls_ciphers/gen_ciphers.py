"""Records what OpenSSL (through pyOpenSSL, as Scrapy's DOWNLOADER_CLIENT_TLS_CIPHERS
reaches it: Twisted's AcceptableCiphers.fromOpenSSLCipherString -> set_cipher_list)
makes of cipher strings: the TLS 1.2 suites a client offers, in order, or "error".

    /work/venv-ref/bin/python tests/data/tls_ciphers/gen_ciphers.py > tests/data/tls_ciphers/ciphers.json

TLS 1.3 suites are configured apart in OpenSSL (set_cipher_list never changes them), so
only the TLS 1.2 names are recorded.
"""
import json
import sys

import OpenSSL
from OpenSSL import SSL

STRINGS = [
    "DEFAULT",
    "DEFAULT:!DH",
    "DEFAULT:!ECDSA",
    "DEFAULT:-AES256:AES256",
    "ALL",
    "HIGH",
    "HIGH:!aNULL:!MD5",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305,ECDHE-RSA-AES256-GCM-SHA384",
    "AES128:AES256",
    "AES256:AES128",
    "CHACHA20",
    "AESGCM",
    "ECDHE+AESGCM",
    "ECDHE+AES128",
    "aECDSA",
    "aRSA",
    "ECDSA:RSA",
    "kECDHE",
    "EECDH",
    "SHA256",
    "SHA384",
    "TLSv1.2",
    "AES128:!ECDSA",
    "AES:-AES128",
    "AES:!AES128:AES128",
    "AES:-AES128:AES128",
    "DEFAULT:+AES128",
    "DEFAULT:+ECDSA",
    "CHACHA20:AES:@STRENGTH",
    "AES128:CHACHA20:@STRENGTH",
    "DEFAULT:@SECLEVEL=1",
    "AES256-SHA",
    "DEFAULT:NOSUCHCIPHER",
    "NOSUCHCIPHER",
    "!ALL",
    "DH",
    "RC4:DES",
    "eNULL",
    "aNULL",
    "CAMELLIA",
    "PSK",
    "MEDIUM",
    "LOW",
    "ECDHE-RSA-AES128-GCM-SHA256:!aRSA",
    "!aRSA:ECDHE-RSA-AES128-GCM-SHA256:AES",
    "kRSA",
    "",
]


def tls12_suites(cipher_string):
    ctx = SSL.Context(SSL.TLS_METHOD)
    try:
        ctx.set_cipher_list(cipher_string.encode())
    except SSL.Error:
        return "error"
    names = SSL.Connection(ctx, None).get_cipher_list()
    return [n for n in names if not n.startswith("TLS_")]


cases = [{"string": s, "tls12": tls12_suites(s)} for s in STRINGS]
json.dump(
    {
        "openssl": OpenSSL.SSL.OpenSSL_version(OpenSSL.SSL.OPENSSL_VERSION).decode(),
        "pyopenssl": OpenSSL.__version__,
        "cases": cases,
    },
    sys.stdout,
    indent=1,
)
print()
