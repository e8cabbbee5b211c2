"""JSON serializer for scrapy-redis request queues, shared with trawl (Rust).

Use it as scrapy-redis' ``SCHEDULER_SERIALIZER``::

    SCHEDULER_SERIALIZER = "trawl_redis_serializer"

scrapy-redis 0.9.1 imports that *module* (``scheduler.py`` calls
``importlib.import_module``) and its queue ``Base.__init__`` (``queue.py``)
only requires module-level ``loads`` and ``dumps`` functions, like its default
``picklecompat``.  ``queue.Base._encode_request`` calls
``dumps(request.to_dict(spider=spider))``; ``_decode_request`` calls
``request_from_dict(loads(data), spider=spider)``.  No pickle is used here.

Wire format
===========

``dumps(obj)`` returns a ``str``: compact JSON (separators ``,`` and ``:``),
ASCII only (``ensure_ascii``), keys in the dict's insertion order, no NaN or
infinities.  redis-py stores it as those ASCII bytes.  ``loads`` accepts
``bytes`` (decoded as UTF-8) or ``str``.

Python values map to JSON like this (``enc`` is applied recursively):

* ``None``, ``bool``, ``int``, ``float`` (finite), ``str``: as themselves.
* ``bytes`` / ``bytearray``: ``{"__bytes_b64__": "<base64>"}`` -- standard
  alphabet (RFC 4648 section 4, ``+`` and ``/``) with ``=`` padding; the empty
  byte string is ``{"__bytes_b64__": ""}``.
* ``list`` / ``tuple``: a JSON array (tuples come back as lists).
* ``dict`` whose keys are all ``str`` and none of them is a tag name
  (``__bytes_b64__``, ``__dict_items__``): a JSON object ``{key: enc(value)}``.
* any other ``dict`` (for example request headers, whose keys are bytes):
  ``{"__dict_items__": [[enc(key), enc(value)], ...]}`` in insertion order.
* anything else raises ``TypeError`` (e.g. a non-JSON object in ``meta``).

On ``loads``, a JSON object with exactly one member whose name is a tag is
decoded as that tag; an object holding a tag name next to other members is
rejected with ``ValueError``; every other object is a ``dict``.

The request dict (Scrapy 2.19 ``Request.to_dict``)
---------------------------------------------------

Keys, in this order: ``url`` (str), ``callback`` (spider method name or null),
``errback`` (name or null), ``headers`` (bytes name -> list of bytes values,
so a ``__dict_items__`` object), ``body`` (bytes), ``cookies`` (dict or list of
dicts), ``meta`` (dict), ``encoding`` (str), ``flags`` (list of str),
``cb_kwargs`` (dict), ``dont_filter`` (bool), ``method`` (str), ``priority``
(int), and ``_class`` (dotted class path) only for Request subclasses, e.g.
``"scrapy.http.request.form.FormRequest"``.  ``request_from_dict`` keeps only
keys in ``Request.attributes`` (plus ``_class``), so a writer may omit any key
but ``url``.  Example, ``Request("http://h/", callback=spider.parse,
headers={"Accept": "text/html"}, body=b"\\xff")``::

    {"url":"http://h/","callback":"parse","errback":null,
     "headers":{"__dict_items__":[[{"__bytes_b64__":"QWNjZXB0"},
                                    [{"__bytes_b64__":"dGV4dC9odG1s"}]]]},
     "body":{"__bytes_b64__":"/w=="},"cookies":{},"meta":{},
     "encoding":"utf-8","flags":[],"cb_kwargs":{},"dont_filter":false,
     "method":"GET","priority":0}

(one line on the wire; wrapped here).
"""

from __future__ import annotations

import base64
import binascii
import json
import math

__all__ = ["dumps", "loads", "encode_value", "decode_value"]

BYTES_TAG = "__bytes_b64__"
DICT_ITEMS_TAG = "__dict_items__"
_TAGS = frozenset((BYTES_TAG, DICT_ITEMS_TAG))


def encode_value(value):
    """Python value -> JSON-compatible value (see the module docstring)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite float cannot be serialized: {value!r}")
        return value
    if isinstance(value, (bytes, bytearray)):
        return {BYTES_TAG: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not (_TAGS & value.keys()):
            return {k: encode_value(v) for k, v in value.items()}
        return {DICT_ITEMS_TAG: [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    raise TypeError(f"cannot serialize {type(value).__name__} value: {value!r}")


def _hashable(value):
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        raise ValueError("a dict cannot be a dict key")
    return value


def decode_value(value):
    """JSON value (as parsed by ``json.loads``) -> Python value."""
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    if isinstance(value, dict):
        tags = _TAGS & value.keys()
        if not tags:
            return {k: decode_value(v) for k, v in value.items()}
        if len(value) != 1:
            raise ValueError(f"tag {sorted(tags)} must be the only member of its object")
        (tag, payload), = value.items()
        if tag == BYTES_TAG:
            if not isinstance(payload, str):
                raise ValueError(f"{BYTES_TAG} needs a string")
            try:
                return base64.b64decode(payload.encode("ascii"), validate=True)
            except (binascii.Error, UnicodeEncodeError) as e:
                raise ValueError(f"bad base64 in {BYTES_TAG}: {e}") from None
        if not isinstance(payload, list):
            raise ValueError(f"{DICT_ITEMS_TAG} needs a list of pairs")
        out = {}
        for pair in payload:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ValueError(f"{DICT_ITEMS_TAG} entries must be [key, value]")
            out[_hashable(decode_value(pair[0]))] = decode_value(pair[1])
        return out
    return value


def dumps(obj) -> str:
    """Serialize (a scrapy-redis request dict) to compact ASCII JSON text."""
    return json.dumps(
        encode_value(obj), separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def loads(data):
    """Inverse of :func:`dumps`; ``data`` is ``bytes`` (UTF-8) or ``str``."""
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8")
    return decode_value(json.loads(data, parse_constant=_reject_constant))


def _reject_constant(name):
    raise ValueError(f"JSON constant {name} is not allowed")
