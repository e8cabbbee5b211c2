"""Records itemloaders' ItemLoader and processors (as Scrapy's ItemLoader uses them)
on scenarios -> itemloaders.json.

Usage (from the repository root, in a venv with scrapy==2.19.0, itemloaders==1.5.0,
parsel==1.12.1, CPython 3.11):

    python tests/data/itemloaders/gen_itemloaders.py

A scenario is data both sides run: an HTML page, a loader description and a list of
operations. Processors are written as JSON: {"MapCompose": [f, ...]},
{"Compose": [f, ...]}, {"TakeFirst": []}, {"Identity": []}, {"Join": sep},
{"SelectJmes": expr}; functions are names from FUNCTIONS below (each a Python
one-liner trawl's test reproduces) or a processor. Operations:
["add_css" | "add_xpath" | "add_value" | "replace_css" | "replace_xpath" |
"replace_value", field, query or value, [processors], re or null],
["get_css" | "get_xpath" | "get_value", query or value, [processors], re or null]
(the result is recorded), ["nested_css" | "nested_xpath", query, [operations]],
["get_collected_values", field], ["get_output_value", field].
The record: each recorded operation's result, and load_item() as a dict; or the
error's type. `processors`: the processors alone on inputs, itemloaders' own
tests/test_processors.py cases (and a few SelectJmes ones of tests/test_select_jmes.py),
each output or the error's type.
"""

import json
import sys

import itemloaders
import parsel
import scrapy
from itemloaders.processors import Compose, Identity, Join, MapCompose, SelectJmes, TakeFirst
from scrapy.http import HtmlResponse
from scrapy.loader import ItemLoader

FUNCTIONS = {
    "strip": lambda x: x.strip(),
    "upper": lambda x: x.upper(),
    "lower": lambda x: x.lower(),
    "int": lambda x: int(x),
    "float": lambda x: float(x),
    "none_if_empty": lambda x: x or None,
    "split": lambda x: x.split(),
    "first": lambda x: x[0],
    "len": lambda x: len(x),
    "reverse": lambda x: x[::-1],
    "double": lambda x: x * 2,
    "drop_digits": lambda x: None if x.isdigit() else x,
    "unique": lambda x: list(dict.fromkeys(x)),
    "sorted": lambda x: sorted(x),
}


def times_n(x, loader_context):
    """A function taking the loader context: the value repeated context["n"] times."""
    return x * loader_context.get("n", 1)


FUNCTIONS["times_n"] = times_n
# From itemloaders' own tests (tests/test_processors.py).
FUNCTIONS["filter_world"] = lambda x: None if x == "world" else x
FUNCTIONS["plus_one"] = lambda x: x + 1
# From its tests/test_base_loader.py.
FUNCTIONS["title"] = lambda v: v.title()
FUNCTIONS["strip_last"] = lambda v: v[:-1]
FUNCTIONS["swapcase"] = lambda v: v.swapcase()
FUNCTIONS["validate_sku"] = lambda v: v if v.isdigit() else None
FUNCTIONS["to_name_map"] = lambda x: {"name": x}

# itemloaders' tests/test_processors.py cases (the processors alone): (processor,
# input); the output is recorded, or the error's type.
PROCESSOR_CASES = [
    ({"TakeFirst": []}, [None, "", "hello", "world"]),
    ({"TakeFirst": []}, [None, "", 0, "hello", "world"]),
    ({"TakeFirst": []}, []),
    ({"Identity": []}, [None, "", "hello", "world"]),
    ({"Join": None}, [None, "", "hello", "world"]),
    ({"Join": None}, ["", "hello", "world"]),
    ({"Join": None}, ["hello", "world"]),
    ({"Join": "<br>"}, ["a", "b"]),
    ({"Compose": ["first", "upper"]}, ["hello", "world"]),
    ({"Compose": ["upper"]}, None),
    ({"Compose": ["upper", "plus_one"]}, "hello"),
    ({"MapCompose": ["filter_world", "upper"]}, ["hello", "world", "this", "is", "scrapy"]),
    ({"MapCompose": ["filter_world", "upper"]}, None),
    ({"MapCompose": ["filter_world", "upper"]}, [1]),
    ({"MapCompose": ["filter_world", "plus_one"]}, "hello"),
    ({"MapCompose": ["split"]}, ["a b", "c"]),
    ({"SelectJmes": "foo"}, {"foo": "bar"}),
    ({"SelectJmes": "foo"}, {"foo": {"bar": "baz"}}),
    ({"SelectJmes": "foo.bar"}, {"foo": {"bar": "baz"}}),
    ({"SelectJmes": "foo[0]"}, {"foo": ["bar", "baz"]}),
    ({"SelectJmes": "foo[-1]"}, {"foo": ["bar", "baz"]}),
    ({"SelectJmes": "foo[:2]"}, {"foo": ["a", "b", "c"]}),
    ({"SelectJmes": "foo.bar"}, {"foo": "bar"}),
    ({"MapCompose": [{"SelectJmes": "name"}]}, [{"name": "a"}, {"name": "b"}, {}]),
]


def processor(spec):
    if isinstance(spec, str):
        return FUNCTIONS[spec]
    (kind, arg), = spec.items()
    if kind == "MapCompose":
        return MapCompose(*[processor(a) for a in arg])
    if kind == "Compose":
        return Compose(*[processor(a) for a in arg])
    if kind == "MapComposeWith":
        functions, defaults = arg
        return MapCompose(*[processor(a) for a in functions], **defaults)
    if kind == "ComposeWith":
        functions, defaults = arg
        return Compose(*[processor(a) for a in functions], **defaults)
    if kind == "TakeFirst":
        return TakeFirst()
    if kind == "Identity":
        return Identity()
    if kind == "Join":
        return Join(arg) if arg is not None else Join()
    if kind == "SelectJmes":
        return SelectJmes(arg)
    raise ValueError(spec)


PAGE = """<html><body>
<div class="product" id="p1"><h1> Widget  </h1><span class="price">12.50</span>
<span class="price">13</span><ul><li>red</li><li> blue </li><li></li><li>red</li></ul>
<p class="desc">A <b>fine</b> widget.</p><a href="/w">more</a></div>
<div class="product" id="p2"><h1>Gadget</h1><span class="price">7</span><ul><li>green</li></ul></div>
<script type="application/json">{"sku": "W-1", "tags": ["a", "b"], "stock": {"n": 3}}</script>
</body></html>"""


def scenario(name, ops, loader=None):
    return {"name": name, "loader": loader or {}, "ops": ops}


SCENARIOS = [
    scenario("defaults keep every value", [
        ["add_css", "name", "h1::text", [], None],
        ["add_css", "colors", "li::text", [], None],
    ]),
    scenario("take first out", [
        ["add_css", "name", "h1::text", [], None],
        ["add_css", "price", "span.price::text", [], None],
    ], {"default_output": {"TakeFirst": []}}),
    scenario("map compose in, take first out", [
        ["add_css", "name", "h1::text", [], None],
        ["add_css", "colors", "li::text", [], None],
    ], {"default_input": {"MapCompose": ["strip", "none_if_empty"]},
        "default_output": {"TakeFirst": []}}),
    scenario("per field processors", [
        ["add_css", "name", "#p1 h1::text", [], None],
        ["add_css", "price", "span.price::text", [], None],
        ["add_css", "colors", "#p1 li::text", [], None],
        ["add_xpath", "desc", "//p[@class='desc']//text()", [], None],
    ], {"fields": {
        "name": {"in": {"MapCompose": ["strip", "upper"]}, "out": {"TakeFirst": []}},
        "price": {"in": {"MapCompose": ["float"]}, "out": {"Identity": []}},
        "colors": {"in": {"MapCompose": ["strip", "none_if_empty"]}, "out": {"Compose": ["unique", "sorted"]}},
        "desc": {"out": {"Join": ""}},
    }}),
    scenario("join default separator", [
        ["add_xpath", "desc", "//p[@class='desc']//text()", [], None],
    ], {"default_output": {"Join": None}}),
    scenario("add_value scalars, lists and None", [
        ["add_value", "a", "x", [], None],
        ["add_value", "a", ["y", "z"], [], None],
        ["add_value", "b", None, [], None],
        ["add_value", "c", [], [], None],
        ["add_value", "d", 3, [], None],
        ["add_value", "e", "", [], None],
    ]),
    scenario("extra processors and re", [
        ["add_css", "price", "span.price::text", [{"MapCompose": ["float"]}], None],
        ["add_css", "cents", "span.price::text", [], "\\.(\\d+)"],
        ["add_value", "code", "SKU-123 / LOT-9", [], "(\\d+)"],
        ["add_value", "upper", ["a", "b"], ["first", "upper"], None],
    ]),
    scenario("replace and get", [
        ["add_css", "name", "h1::text", [], None],
        ["replace_css", "name", "#p2 h1::text", [], None],
        ["add_value", "v", "old", [], None],
        ["replace_value", "v", "new", [], None],
        ["get_css", "li::text", [{"MapCompose": ["strip"]}], None],
        ["get_xpath", "//span[@class='price']/text()", [{"TakeFirst": []}], None],
        ["get_value", " text ", ["strip", "upper"], None],
        ["get_collected_values", "name"],
        ["get_output_value", "v"],
    ], {"default_output": {"TakeFirst": []}}),
    scenario("nested loaders share the item", [
        ["nested_css", "#p2", [
            ["add_css", "name", "h1::text", [], None],
            ["add_xpath", "price", ".//span/text()", [], None],
            ["nested_xpath", ".//ul", [["add_css", "colors", "li::text", [], None]]],
        ]],
        ["add_css", "all_names", "h1::text", [], None],
    ], {"default_output": {"Identity": []}}),
    scenario("map compose drops None and flattens lists", [
        ["add_css", "words", "p.desc ::text", [], None],
    ], {"default_input": {"MapCompose": ["split", "drop_digits"]}}),
    scenario("compose stops on None", [
        ["add_value", "x", ["a", "b"], [], None],
        ["add_value", "y", [], [], None],
    ], {"fields": {"x": {"out": {"Compose": ["first", "upper", "double"]}},
                   "y": {"out": {"Compose": ["first", "upper"]}}}}),
    scenario("take first skips None and empty", [
        ["add_value", "x", ["", None, "a", "b"], [], None],
        ["add_value", "y", [None, ""], [], None],
    ], {"default_output": {"TakeFirst": []}}),
    scenario("select jmes", [
        ["add_css", "data", "script::text", [], None],
        ["get_value", {"a": {"b": [1, 2, 3]}}, [{"SelectJmes": "a.b[1]"}], None],
        ["get_value", [{"a": 1}, {"a": 2}], [{"MapCompose": [{"SelectJmes": "a"}]}], None],
    ]),
    scenario("numbers and lengths", [
        ["add_css", "lens", "li::text", [{"MapCompose": ["len"]}], None],
        ["add_css", "ints", "span.price::text", [], "^(\\d+)"],
    ], {"fields": {"ints": {"in": {"MapCompose": ["int"]}}}}),
    scenario("an error in a processor", [
        ["add_css", "n", "h1::text", [{"MapCompose": ["int"]}], None],
    ]),
    scenario("output of a field never added", [
        ["get_output_value", "missing"],
        ["get_collected_values", "missing"],
    ], {"default_output": {"TakeFirst": []}}),
    scenario("loader context reaches context functions", [
        ["add_value", "a", ["x", "y"], [{"MapCompose": ["times_n"]}], None],
        ["add_value", "b", ["x"], [], None],
        ["get_value", "z", [{"Compose": ["times_n"]}], None],
    ], {"context": {"n": 3}, "fields": {"b": {"in": {"MapCompose": ["times_n"]}}}}),
    scenario("processor defaults under the loader context", [
        ["add_value", "a", ["x"], [{"MapComposeWith": [["times_n"], {"n": 2}]}], None],
        ["add_value", "b", "x", [{"ComposeWith": [["times_n"], {"n": 4}]}], None],
    ]),
    scenario("the loader context overrides processor defaults", [
        ["add_value", "a", ["x"], [{"MapComposeWith": [["times_n"], {"n": 2}]}], None],
    ], {"context": {"n": 5}}),
    scenario("nested loaders inherit the context", [
        ["add_value", "outer", "x", [{"MapCompose": ["times_n"]}], None],
        ["nested_css", "#p2", [["add_css", "inner", "h1::text", [{"MapCompose": ["times_n"]}], None]]],
    ], {"context": {"n": 2}}),
    scenario("add_value without a field", [
        ["add_value", None, {"a": "x", "b": ["y", "z"], "c": None}, [], None],
    ], {"default_input": {"MapCompose": ["upper"]}}),
    # itemloaders' own tests/test_base_loader.py cases, transcribed.
    scenario("test_load_item_using_default_loader", [
        ["add_value", "name", "marta", [], None],
    ], {"item": {"summary": "lala"}}),
    scenario("test_load_item_using_custom_loader", [
        ["add_value", "name", "marta", [], None],
    ], {"fields": {"name": {"in": {"MapCompose": ["title"]}}}}),
    scenario("test_load_item_ignore_none_field_values", [
        ["add_value", "sku", ["SKU: not available"], [], "SKU: (.+)"],
        ["add_value", "name", "", [], None],
        ["add_value", "price", ["0"], [], None],
        ["get_output_value", "sku"],
        ["replace_value", "sku", ["SKU: 1234"], [], "SKU: (.+)"],
        ["get_output_value", "sku"],
    ], {"fields": {"name": {"out": {"Compose": ["first"]}},
                   "price": {"out": {"Compose": [{"TakeFirst": []}, "float"]}},
                   "sku": {"out": {"Compose": [{"TakeFirst": []}, "validate_sku"]}}}}),
    scenario("test_add_value", [
        ["add_value", "name", "marta", [], None],
        ["get_collected_values", "name"],
        ["get_output_value", "name"],
        ["add_value", "name", "pepe", [], None],
        ["get_collected_values", "name"],
        ["add_value", "summary", {"key": 1}, [], None],
        ["get_collected_values", "summary"],
        ["add_value", None, "Jim", ["to_name_map"], None],
        ["get_collected_values", "name"],
    ], {"fields": {"name": {"in": {"MapCompose": ["title"]}}}}),
    scenario("test_add_zero_and_none", [
        ["add_value", "name", 0, [], None],
        ["add_value", "other", None, [], None],
        ["get_collected_values", "name"],
        ["get_collected_values", "other"],
    ]),
    scenario("test_replace_value", [
        ["replace_value", "name", "marta", [], None],
        ["get_collected_values", "name"],
        ["replace_value", "name", "pepe", [], None],
        ["get_collected_values", "name"],
        ["replace_value", None, "Jim", ["to_name_map"], None],
        ["get_collected_values", "name"],
        ["replace_value", "name", None, [], None],
        ["get_collected_values", "name"],
    ], {"fields": {"name": {"in": {"MapCompose": ["title"]}}}}),
    scenario("test_get_value", [
        ["get_value", ["foo", "bar"], [{"TakeFirst": []}, "upper"], None],
        ["get_value", ["name:foo", "name:bar"], [], "name:(.*)$"],
        ["get_value", ["name:foo", "name:bar"], [{"TakeFirst": []}], "name:(.*)$"],
        ["get_value", ["foo", "bar"], [{"TakeFirst": []}], "name:(.*)$"],
        ["get_value", None, [{"TakeFirst": []}], None],
        ["add_value", "name", ["name:foo", "name:bar"], [{"TakeFirst": []}], "name:(.*)$"],
        ["get_collected_values", "name"],
        ["replace_value", "name", "name:bar", [], "name:(.*)$"],
        ["get_collected_values", "name"],
    ]),
    scenario("test_iter_on_input_processor_input", [
        ["add_value", "name", "marta", [], None],
        ["add_value", "name", ["jose", "pedro"], [], None],
        ["get_collected_values", "name"],
        ["replace_value", "other", ["marta", "jose"], [], None],
        ["get_collected_values", "other"],
    ], {"fields": {"name": {"in": {"TakeFirst": []}}, "other": {"in": {"TakeFirst": []}}}}),
    scenario("test_map_compose_filter_multil", [
        ["add_value", "name", "marta", [], None],
        ["get_output_value", "name"],
    ], {"fields": {"name": {"in": {"MapCompose": ["title", "strip_last"]}}}}),
    scenario("test_default_input_processor", [
        ["add_value", "name", "marta", [], None],
        ["get_output_value", "name"],
    ], {"default_input": {"MapCompose": ["strip_last"]}}),
    scenario("test_empty_map_compose and identity over a default", [
        ["add_value", "name", "marta", [], None],
        ["add_value", "other", "marta", [], None],
        ["add_value", "third", "marta", [], None],
    ], {"default_input": {"MapCompose": ["strip_last"]},
        "fields": {"name": {"in": {"MapCompose": []}}, "other": {"in": {"Identity": []}}}}),
    scenario("test_extend_custom_input_processors", [
        ["add_value", "name", "marta", [], None],
        ["add_value", "lower", "marta", [], None],
    ], {"fields": {"name": {"in": {"MapCompose": [{"MapCompose": ["title"]}, "swapcase"]}},
                   "lower": {"in": {"MapCompose": [{"MapCompose": ["strip_last"]}, "swapcase"]}}}}),
    scenario("test_output_processor_join", [
        ["add_value", "name", ["mar", "ta"], [], None],
        ["get_output_value", "name"],
    ], {"fields": {"name": {"out": {"Join": ""}}}}),
    scenario("css and xpath lists of queries", [
        ["add_css", "h", ["#p1 h1::text", "#p2 h1::text"], [], None],
        ["add_xpath", "p", ["//span[1]/text()", "//a/@href"], [], None],
    ]),
]


class _Loader(ItemLoader):
    pass


def make_loader(response, spec):
    attrs = {}
    if "default_input" in spec:
        attrs["default_input_processor"] = processor(spec["default_input"])
    if "default_output" in spec:
        attrs["default_output_processor"] = processor(spec["default_output"])
    for field, procs in spec.get("fields", {}).items():
        if "in" in procs:
            attrs[f"{field}_in"] = processor(procs["in"])
        if "out" in procs:
            attrs[f"{field}_out"] = processor(procs["out"])
    cls = type("L", (_Loader,), attrs)
    return cls(item=dict(spec.get("item", {})), response=response, **spec.get("context", {}))


def jsonable(v):
    return json.loads(json.dumps(v, default=repr))


def run_ops(loader, ops, results):
    for op in ops:
        kind = op[0]
        if kind in ("add_css", "add_xpath", "add_value", "replace_css", "replace_xpath", "replace_value"):
            _, field, arg, procs, regex = op
            getattr(loader, kind)(field, arg, *[processor(p) for p in procs], re=regex)
        elif kind in ("get_css", "get_xpath", "get_value"):
            _, arg, procs, regex = op
            results.append(jsonable(getattr(loader, kind)(arg, *[processor(p) for p in procs], re=regex)))
        elif kind in ("nested_css", "nested_xpath"):
            _, query, inner = op
            run_ops(getattr(loader, kind)(query), inner, results)
        elif kind == "get_collected_values":
            results.append(jsonable(loader.get_collected_values(op[1])))
        elif kind == "get_output_value":
            results.append(jsonable(loader.get_output_value(op[1])))
        else:
            raise ValueError(op)


def main():
    response = HtmlResponse("http://example.com/p", body=PAGE.encode(), encoding="utf-8")
    out = {
        "versions": {
            "itemloaders": itemloaders.__version__ if hasattr(itemloaders, "__version__") else "1.5.0",
            "scrapy": scrapy.__version__,
            "parsel": parsel.__version__,
            "python": sys.version.split()[0],
        },
        "functions": sorted(FUNCTIONS),
        "page": PAGE,
        "scenarios": [],
    }
    for sc in SCENARIOS:
        record = dict(sc)
        results = []
        try:
            loader = make_loader(response, sc["loader"])
            run_ops(loader, sc["ops"], results)
            record["item"] = jsonable(dict(loader.load_item()))
            record["results"] = results
        except Exception as exc:  # noqa: BLE001 - a recorded answer
            record["error"] = type(exc).__name__
        out["scenarios"].append(record)
    out["processors"] = []
    for spec, value in PROCESSOR_CASES:
        case = {"processor": spec, "input": value}
        try:
            case["output"] = jsonable(processor(spec)(value))
        except Exception as exc:  # noqa: BLE001 - a recorded answer
            case["error"] = type(exc).__name__
        out["processors"].append(case)
    path = __file__.rsplit("/", 1)[0] + "/itemloaders.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    print(f"{len(SCENARIOS)} scenarios -> {path}")


if __name__ == "__main__":
    main()
