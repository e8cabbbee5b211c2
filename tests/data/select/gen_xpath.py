#!/usr/bin/env python3
"""Record XPath 1.0 selections from the real Scrapy / parsel / lxml.

What it records: for every case, a *chain* of selection steps applied left to
right, starting from ``scrapy.http.HtmlResponse(url, body=<page bytes>, ...)``:

* ``["xpath", expr]``            -> ``response.xpath(expr)`` / ``SelectorList.xpath(expr)``
* ``["xpath", expr, {var: val}]`` -> the same with XPath variables as keyword
  arguments (values are str, int or float)
* ``["css", query]``             -> ``response.css(query)`` / ``SelectorList.css(query)``

and the final ``SelectorList``: for each Selector its ``.get()`` string plus the
kind of node/value it holds (element, text, attr, string, number, boolean,
comment, other) and where the node sits in the document. The kind is found by
evaluating the same step again with lxml and ``smart_strings=True`` on every
context node, with the namespaces parsel maps; the generator asserts that this
gives the same values as parsel. Steps that raise are recorded as
``{"error": "<ExceptionType>: <message>"}``.

Pages: the hand-written pages in ``xpath_pages/`` (served as UTF-8) and the
Scrapy sample pages in ``../html/pages/scrapy/`` (with the Content-Type of
``../html/manifest.json``), comments included (``xpath_pages/comments.html`` places
them everywhere libxml2 can put them).

Reference versions used for the committed ``xpath.json``: Scrapy 2.19.0,
parsel 1.12.1, lxml 6.1.3 (libxml2 2.14.6), CPython 3.11.7.

Run from the repository root (writes ``tests/data/select/xpath.json``):

    /work/venv-ref/bin/python tests/data/select/gen_xpath.py

The output is deterministic: cases in a fixed order, sorted keys.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import lxml
import parsel
import parsel.selector
import scrapy
from lxml import etree
from scrapy.http import HtmlResponse

HERE = Path(__file__).resolve().parent
DATA = HERE.parent  # tests/data
OWN_DIR = HERE / "xpath_pages"
MANIFEST = DATA / "html" / "manifest.json"
OUT = HERE / "xpath.json"

# The namespaces every parsel Selector maps (parsel.Selector._default_namespaces).
NAMESPACES = {
    "re": "http://exslt.org/regular-expressions",
    "set": "http://exslt.org/sets",
}
assert parsel.Selector._default_namespaces == NAMESPACES, parsel.Selector._default_namespaces


# ---------------------------------------------------------------------------
# Expressions applied to every page
# ---------------------------------------------------------------------------

GENERAL = [
    # document / root / head
    "/html/head/title",
    "/html/head/title/text()",
    "//title",
    "//title/text()",
    "/descendant::title/text()",
    "/child::html/child::head/child::title/child::text()",
    "//head/*",
    "//head/node()",
    "/",
    ".",
    "..",
    "count(.)",
    "count(/)",
    "name(.)",
    "local-name(/*)",
    "name()",
    "namespace-uri()",
    "string-length()",
    "@*",
    "attribute::*",
    "name(/*/*[1])",
    "count(/*/*)",
    "count(/node())",
    "//body/text()",
    "name(//body/*[1])",
    "//title/..",
    "//title/preceding-sibling::*",
    "count(//title/ancestor::*)",
    "//title/following::*[1]",
    "//title/preceding::*",
    "//title/child::node()",
    "//title/descendant-or-self::node()",
    "//title/namespace::*",
    "count(//*/namespace::*)",
    "name(/*/namespace::*)",
    # counting
    "count(//*)",
    "count(//node())",
    "count(//text())",
    "count(//@*)",
    "count(//*[@id])",
    "count(//comment())",
    "count(//text()[not(normalize-space())])",
    # attributes
    "//@id",
    "(//*[@id])[1]/@id",
    "//@class",
    "//@*[name()='href']",
    "name(//@*[1])",
    "namespace-uri(//@*[1])",
    # text
    "//text()[normalize-space()]",
    "//body//text()",
    "//text()[1]",
    "(//text())[1]",
    "(//text())[last()]",
    "//body/node()[1]",
    "//body//*[not(*)][text()]/text()",
    # links
    "//a",
    "//a/@href",
    "//a/text()",
    "//a//text()",
    "//a[1]",
    "(//a)[1]",
    "(//a)[last()]",
    "(//a)[last()-1]/@href",
    "(//a)[position()>2]/@href",
    "//a[2]/@href",
    "//a[@href][2]/@href",
    "(//a[@href])[2]/@href",
    "//a[not(@href)]",
    "//a[@title]/@title",
    "//a/@*",
    "//a/parent::*/@id",
    "//a/ancestor::*/@id",
    "//a/ancestor::*[1]/@class",
    "//a/ancestor-or-self::*[@id][1]/@id",
    "//a/following-sibling::a/@href",
    "//a/preceding-sibling::a[1]/@href",
    "count(//a/following::*)",
    "//a[1]/following::a/@href",
    "//a[last()]/preceding::a/@href",
    "(//a)[1]/following::text()[1]",
    "(//a)[last()]/preceding::text()[1]",
    "//a/child::node()",
    "//a[contains(@href, 'page')]/@href",
    "//a[starts-with(@href, 'http')]/@href",
    "//a[contains(., 'e')]/text()",
    # lists
    "//li/text()",
    "//li[1]/text()",
    "(//li)[1]/text()",
    "//ul/li[last()]/text()",
    "//li/following-sibling::li[1]/text()",
    "count(//li)",
    # paragraphs / divs / headings
    "//p/text()",
    "(//p)[1]",
    "//p//text()",
    "normalize-space(//p[1])",
    "string(//p)",
    "count(//p)",
    "//div/@id",
    "//div[count(p) > 1]/@id",
    "//div[1]/@*",
    "//div[not(@class)]/@id",
    "//div[.//a]/@id",
    "//h1",
    "//h1//text()",
    "normalize-space(//h1)",
    "//*[self::h1 or self::h2]",
    "//b/following::text()[1]",
    # head / meta / misc elements
    "//meta/@*",
    "//base/@href",
    # functions on page data
    "string(//title)",
    "string-length(//title)",
    "normalize-space(//title)",
    "substring(//title, 1, 5)",
    "substring-before(//title, ' ')",
    "substring-after(//title, ' ')",
    "translate(//title, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')",
    "concat(//title, ' | ', count(//a), ' links')",
    "contains(//title, 'e')",
    "boolean(//a)",
    "boolean(//nonexistent)",
    "number(//title)",
    "sum(//li)",
    "sum(//nonexistent)",
    "count(//li) + count(//a)",
    "floor(count(//*) div 3)",
    "ceiling(count(//*) div 3)",
    "count(//a) mod 3",
    "-count(//a)",
    "count(//a) > 2",
    "//a/@href = '/'",
    "//a = //a",
    "//a != //a",
    "//title = 'Links'",
    "//nonexistent = //nonexistent",
    "//nonexistent != ''",
    "local-name(//*[@id][1])",
    "name(//a/@*)",
    "namespace-uri(/*)",
    "string()",
    "id(//@id)/@id",
    "id('')",
    "lang('en')",
    "//*[@lang]/@lang",
    # parsel's has-class()
    "//*[has-class('x', 'y')]",
    "has-class('x')",
    # EXSLT
    r"//a[re:test(@href, '^/')]/@href",
    r"//a[re:test(@href, '^HTTP', 'i')]/@href",
    r"//text()[re:test(., '\d')]",
    r"re:replace(//title, 'e', 'g', 'E')",
    r"re:match(//title, '(\w+)')",
    r"re:match(//title, '\w+', 'g')",
    r"count(//*[re:test(@class, 'a')])",
    "set:distinct(//a/@href)",
    "count(set:difference(//*, //body//*))",
    "set:intersection(//a, //a[@title])/@title",
    "set:leading(//a, //a[3])/@href",
    "set:trailing(//a, //a[3])/@href",
    "set:has-same-node(//a, //a[1])",
    # unions
    "//title | //h1",
    "//h1 | //title",
    "(//title | //a)[1]",
    "//a/@href | //a/@title",
    "//head/title | (//body//a)[1]",
    "count(//a | //a)",
    "(//a | //li)[last()]/text()",
    "//li/text() | //a/text()",
]

# Chains (and variables) applied to every page.
GENERAL_CHAINS = [
    [["xpath", "//div"], ["xpath", "./p"]],
    [["xpath", "//div"], ["xpath", "//p"]],
    [["xpath", "//div"], ["xpath", ".//a/@href"]],
    [["xpath", "//ul"], ["xpath", "./li[1]"]],
    [["css", "ul"], ["xpath", "./li[2]/text()"]],
    [["css", "li"], ["xpath", "position()"]],
    [["css", "li"], ["xpath", "last()"]],
    [["css", "li"], ["xpath", "count(preceding-sibling::li)"]],
    [["css", "a"], ["xpath", "string()"]],
    [["css", "a"], ["xpath", "normalize-space()"]],
    [["css", "a::attr(href)"]],
    [["css", "a::attr(href)"], ["xpath", "."]],
    [["css", "a::attr(href)"], ["xpath", ".."]],
    [["css", "a::attr(href)"], ["xpath", "string()"]],
    [["css", "a::text"]],
    [["css", "title::text"]],
    [["css", "title::text"], ["xpath", "."]],
    [["css", "title::text"], ["xpath", " . "]],
    [["css", "title::text"], ["xpath", "self::node()"]],
    [["xpath", "count(//a)"], ["xpath", "."]],
    [["xpath", "true()"], ["xpath", "."]],
    [["xpath", "string(//title)"], ["xpath", "."]],
    [["xpath", "string(//title)"], ["xpath", "string-length()"]],
    [["xpath", "//title"], ["xpath", "text()"]],
    [["xpath", "//title"], ["xpath", "/html/head/title/text()"]],
    [["xpath", "//title"], ["xpath", ".."], ["xpath", "name()"]],
    [["xpath", "//title/text()"], ["xpath", "."]],
    [["xpath", "//title/text()"], ["xpath", ".."]],
    [["xpath", "//*[@id]"], ["xpath", "name()"]],
    [["xpath", "//body/*"], ["xpath", "name()"]],
    [["xpath", "//a"], ["xpath", "ancestor::*[1]/@id"]],
    [["xpath", "//a"], ["xpath", "(//a)[1]/@href"]],
    [["xpath", "//a"], ["xpath", "$n + count(preceding::a)", {"n": 1}]],
    [["xpath", "//p"], ["xpath", "normalize-space()"]],
    [["css", "div"], ["xpath", "count(*)"]],
    [["css", "head *"]],
    [["css", "body > *"], ["xpath", "name()"]],
    [["css", "*"], ["xpath", "name()"]],
    [["css", "[id]::attr(id)"]],
    [["xpath", "//text()[normalize-space()]"], ["xpath", "."]],
    [["xpath", "//*[@class]"], ["xpath", "has-class('tag')"]],
    [["xpath", "count(//a) > $n", {"n": 2}]],
    [["xpath", "(//a)[$i]/@href", {"i": 2}]],
    [["xpath", "//*[@id=$x]/@id", {"x": "main"}]],
    [["xpath", "//*[name()=$t]/text()", {"t": "title"}]],
    [["xpath", "//a[contains(@href, $s)]/@href", {"s": "html"}]],
]


# ---------------------------------------------------------------------------
# Page-independent expressions (numbers, strings, booleans) on one page
# ---------------------------------------------------------------------------

CONSTANTS = [
    # number literals and parsel's str(float)
    "1", "-1", "0", "-0", "- 0", "1.5", ".5", "5.", "-.5", "00012", "1.50",
    "1 div 0", "-1 div 0", "0 div 0", "1 div -0", "1 div (0 * -1)", "0 div -1",
    "1 div 3", "2 div 3 * 3", "0.1 + 0.2", "100000000000000000000",
    "1e3", "1E3", "2e-3", "1 div 10000000", "123456789012", "12345678901234567890123",
    "0.000001", "1000000 * 1000000", "--1", "- - 1", "3 - -2", "2 -1", "2-1",
    "5 mod 3", "-5 mod 3", "5 mod -3", "5.5 mod 2", "1 mod 0", "0 mod 5",
    "7 div 2", "-7 div 2", "2 * 3 + 4", "2 + 3 * 4", "(2 + 3) * 4", "10 - 2 - 3",
    "12 div 2 div 3", "8 div 2 * 2", "-2 * -2", "3 mod 2 * 2", "3 + 2 * 4 mod 3",
    "1 + '1' + true()", "true() + 1", "'3' + 4", "'abc' + 1", "' 12 ' * 2",
    "-'3'", "-true()", "--'2'",
    # number()
    "number('')", "number(' 12 ')", "number('1e3')", "number('-.5')", "number('+1')",
    "number('abc')", "number('1.')", "number('.')", "number('- 1')", "number('0x10')",
    "number('1,5')", "number(' \t\n 7 \n')", "number(true())", "number(false())",
    "number('Infinity')", "number('NaN')", "number('-0')", "number('007')",
    "number('1.5.2')", "number('12abc')", "number(' -3.25 ')", "number()",
    # number -> string conversion
    "string(1 div 3)", "string(2 div 3)", "string(0.000001)", "string(0.0000001)",
    "string(1 div 10000000)", "string(1000000000000)", "string(123456789012345678)",
    "string(100000000000000000000)", "string(1000000000000000000000)", "string(1e21)",
    "string(-0)", "string(0 div 0)", "string(1 div 0)", "string(-1 div 0)",
    "concat(1 div 3, '')", "string(12345678.9)", "string(3.0)", "string(-3.5)",
    "string(0.5)", "string(.5)", "string(-0.5)", "string(1500)", "string(0.1 + 0.2)",
    "string(1 div 7)", "string(22 div 7 * 1000000)", "string(2 div 3 * 3)",
    "string(123.456)", "string(1.0000000000000002)", "string(9007199254740993)",
    "string(4.35 * 100)", "string(0.1 * 3)", "string(1 - 0.9)", "string(-1 div 3)",
    "string(100 div 3)", "string(1000000 div 3)", "string(0.00001234)",
    "string(1 div 1024)", "string(-0.000001)", "string(99999999999999999999)",
    "string(0.1)", "string(1e-3)", "string(123e2)", "string(5 mod 3)", "string(-5 mod 3)",
    "concat(0 div 0, '|', 1 div 0, '|', -1 div 0, '|', -0, '|', 1 div 3)",
    "string(number('1e3'))", "string(number(' 12 '))",
    # rounding
    "round(2.5)", "round(-2.5)", "round(-0.4)", "round(0.5 div 0)", "round(0 div 0)",
    "round(-0.5)", "round(1.4999)", "round(-1.5)", "round(0.49999999999999994)",
    "string(round(2.5))", "string(round(-2.5))", "string(round(-0.4))", "string(round(0.5 div 0))",
    "1 div round(-0.4)", "1 div round(-0.5)", "1 div ceiling(-0.5)", "1 div floor(-0)",
    "floor(-1.5)", "floor(1.5)", "ceiling(-1.5)", "ceiling(1.5)", "ceiling(-0.5)",
    "string(ceiling(-0.5))", "floor(0 div 0)", "string(floor(-0))", "floor(1 div 0)",
    "round(123456789012.5)",
    # sum/count on empty
    "sum(/nothing)", "count(/nothing)", "string(/nothing)", "boolean(/nothing)",
    # strings
    "'abc'", '"double"', "''", "concat('a', 'b')", "concat('a', 'b', 'c', 'd', 'e')",
    "concat('a', 1, true())", "concat('a')", "concat()",
    "starts-with('abc', '')", "starts-with('', '')", "starts-with('abc', 'abcd')",
    "contains('abc', '')", "contains('', 'a')", "contains('abc', 'bc')",
    "substring-before('1999/04/01', '/')", "substring-after('1999/04/01', '/')",
    "substring-after('1999/04/01', '19')", "substring-before('abc', '')",
    "substring-after('abc', '')", "substring-before('abc', 'x')", "substring-after('abc', 'x')",
    "substring('12345', 2, 3)", "substring('12345', 2)", "substring('12345', 1.5, 2.6)",
    "substring('12345', 0, 3)", "substring('12345', 0 div 0, 3)", "substring('12345', 1, 0 div 0)",
    "substring('12345', -42, 1 div 0)", "substring('12345', -1 div 0, 1 div 0)",
    "substring('12345', 5)", "substring('12345', 6)", "substring('12345', 0)",
    "substring('12345', -1)", "substring('12345', 2.5)", "substring('12345', 2.4999)",
    "substring('12345', 3, -1)", "substring('', 1, 1)", "substring('12345', 1 div 0)",
    "substring('12345', '2', '2')", "substring('ツ😀ж', 2, 1)",
    "string-length('')", "string-length('abc')", "string-length('ツ😀')",
    "string-length('é')", "string-length(concat('a', 'b'))",
    "normalize-space('  a  b\t\nc  ')", "normalize-space('')", "normalize-space(' ')",
    "normalize-space('a\u00a0 b')",
    "translate('bar', 'abc', 'ABC')", "translate('--aaa--', 'abc-', 'ABC')",
    "translate('abc', 'aa', 'xy')", "translate('abc', '', 'x')", "translate('aaa', 'a', '')",
    "translate('abc', 'abc', 'xyzw')", "translate('жук', 'ж', 'Ж')", "translate(12.5, '.', ',')",
    "string(true())", "string(false())", "string('')", "string(12)",
    # booleans
    "boolean('')", "boolean(' ')", "boolean('false')", "boolean('0')", "boolean(0)",
    "boolean(-0)", "boolean(0 div 0)", "boolean(1 div 0)", "boolean(0.1)", "boolean(-1)",
    "not(0)", "not('')", "not(1)", "true()", "false()", "true() and false()",
    "true() or false()", "false() or 0 or ''", "1 and 'x'", "not(true()) = false()",
    "true() = 1", "true() = 2", "false() = 0", "false() = ''", "true() = 'false'",
    "'1' = 1", "'1.0' = 1", "' 1 ' = 1", "'abc' = 'abc'", "'abc' = 'ABC'", "'abc' != 'abc'",
    "'a' < 'b'", "'1' < '2'", "'10' > '9'", "'10' > 9", "true() > false()",
    "true() < 2", "0 div 0 = 0 div 0", "0 div 0 != 0 div 0", "0 div 0 < 1", "1 div 0 = 2 div 0",
    "-0 = 0", "1 div 0 > 100000000000000000000", "'x' = true()", "'' = false()",
    "1 < 2 < 3", "3 > 2 > 1", "1 = 1 = 1", "1 = 1.0", "0.1 + 0.2 = 0.3", "1 = 1 and 2",
    "1 + 2 = 3 and 4 > 3", "1 = 1 or 1 div 0", "1 >= 1", "1 <= 0", "2 != 2",
    # variables
    ["$s", {"s": "hello"}], ["$n", {"n": 1.5}], ["$n", {"n": 3}], ["$n", {"n": -0.0}],
    ["$n + 1", {"n": 41}], ["$n * $m", {"n": 2.5, "m": 4}], ["concat($a, $b)", {"a": "x", "b": 2}],
    ["concat($a, '-', $b)", {"a": "x", "b": 7.25}], ["string($f)", {"f": 0.1}],
    ["string($f)", {"f": 1e21}], ["string($f)", {"f": 123456789}],
    ["$s = 'abc'", {"s": "abc"}], ["$s = 3", {"s": "3.0"}], ["$n = '3.0'", {"n": 3}],
    ["string-length($s)", {"s": "😀ж"}], ["substring($s, 2, 1)", {"s": "aツb"}],
    ["boolean($s)", {"s": ""}], ["boolean($n)", {"n": 0}], ["number($s)", {"s": " 4.5 "}],
    ["$a + $b", {"a": "1", "b": "2"}], ["$a < $b", {"a": "10", "b": 9}],
    ["$undefined_but_other", {"x": 1}],
]


# ---------------------------------------------------------------------------
# Malformed / invalid expressions (on one page)
# ---------------------------------------------------------------------------

ERRORS = [
    "//a[", "//a]", "/@", "count(", "count()", "count(//a, //b)", "foo(//a)", "foo:bar()",
    "//a[@x='unterminated]", '//a[@x="unterminated]', "'unterminated", "$undefined", "$",
    "$1", "1 +", "+ 1", "* 2", "//*[", "///a", "a//", "@", "//a/@*/b", "//a[position()=]",
    "", " ", "re:test(., '(')", "re:test(//a, '[')", "re:match(//a, '*')",
    "re:replace(//a, '(', 'g', 'x')", "//a[)", "()", "(//a", "//a)", "//a[1]]", "//a[[1]]",
    "//a[]", "/ /a", "//a/", "/a/", "//", ".//", "...", ".a", "a.", "..a", "//a::b",
    "child::", "foo::a", "child:a", "//a/@@href", "@*[", "//a[@]", "//a[@href=]", "//a[=1]",
    "//a[1=]", "1 == 1", "1 <> 2", "1 != ", "!1", "1 !", "1 & 2", "1 && 2", "1 || 2",
    "a or", "or", "and and", "div", "div div div", "mod", "1 div", "1 mod", "1 -", "- ",
    "--", "last(1)", "position(1)", "true(1)", "not()", "not(1, 2)", "substring('a')",
    "substring('a', 1, 2, 3)", "translate('a', 'b')", "string(1, 2)", "contains('a')",
    "starts-with()", "id()", "lang()", "name(1)", "local-name('a')", "count('a')", "sum(1)",
    "//a[@href='x' and]", "'a' | 'b'", "1 | //a", "//a | 1", "count(1 | 2)", "{}", "#",
    "//a#b", "a b", "//a //b", "1 2", "'a' 'b'", "1.2.3", "1..2", "1e", "1e+", "%",
    "//a[$]", "//a[@href=$nope]", "//*:a", "//a:*", "xyz:a", "//node(1)", "//text(1)",
    "//comment('x')", "//processing-instruction('x')", "//processing-instruction(1)",
    "//element()", "//a[has-class()]", "//a[has-class(1)]", "has-class()", "has-class(1)",
    "//a[has-class(@href)]", "//a[has-class('x', 2)]", "set:unknown(//a)", "re:unknown(1)",
    "re:test()", "re:test('a')", "re:replace('a', 'b', 'g')", "set:distinct()",
    "set:distinct(1)", "//a[position()=1", "concat('a', 'b'", "concat('a' 'b')",
    "concat(,'a')", "count(//a,)", "//a/ancestor::", "//a/namespace::", "@@",
    "//@a/b", "text()/a", "//a/text()()", "//a()", "a(", "//*[1", "'it''s'", "position()",
    "last()", "//a[last()]/position()", "1 = = 1", "//a[@href = 'x']['", "xml:lang",
    "//@xml:lang", "//@xmlns:xlink", "html:p", "//a[re:test(@href, 'a{2,1}')]",
]


# ---------------------------------------------------------------------------
# Page-specific expressions (entries are expressions or full chains)
# ---------------------------------------------------------------------------

def X(expr, vars=None):
    """One-step chain."""
    return [["xpath", expr] + ([vars] if vars is not None else [])]


PAGE_CASES: dict[str, list] = {}

PAGE_CASES["quotes.html"] = [
    "//div[@class='quote']/span[@class='text']/text()",
    "//div[@class='quote']//small[@class='author']/text()",
    "//div[@class='quote']/div[@class='tags']/a[@class='tag']/text()",
    "//div[@class='quote'][2]//a[@class='tag']/text()",
    "//div[has-class('quote')][last()]/span[has-class('text')]/text()",
    "//li[@class='next']/a/@href",
    "//li[has-class('next')]/a/@href",
    "//li[@class='next']/a/text()",
    "//li[@class='next']//text()",
    "normalize-space(//li[@class='next'])",
    "//a[contains(@href,'page')]/@href",
    "//a[contains(@href,'/tag/')][not(contains(@href, 'page'))]/text()",
    "//meta[@name='description']/@content",
    "//meta[@itemprop='keywords']/@content",
    "//title/text()",
    "normalize-space(//h1)",
    "//h1//text()",
    "//h1/a/@href",
    "//*[@itemprop='author'][. = 'Albert Einstein']/../following-sibling::div[1]/a/text()",
    "//small[@class='author'][.='Albert Einstein']/ancestor::div[@class='quote']/span[@class='text']/text()",
    "count(//div[@class='quote'])",
    "count(//div[@class='quote'][.//small = 'Albert Einstein'])",
    "//div[@class='quote'][contains(., 'choices')]//small/text()",
    "//span[@class='tag-item']/a[1]/@style",
    "//a[@class='tag'][starts-with(@style, 'font-size: 2')]/text()",
    "substring-before(substring-after(//a[@class='tag'][@style][1]/@style, ': '), 'px')",
    "number(substring-before(substring-after((//a[@class='tag'][@style])[last()]/@style, ': '), 'px')) * 2",
    "sum(//a[@class='tag' and @style]/@style)",
    "//div[contains(@class, 'col-md')]/@class",
    "//div[contains(concat(' ', normalize-space(@class), ' '), ' row ')]/@class",
    "count(//div[@class='row'])",
    "//footer//a/@href",
    "//p[@class='copyright']//text()",
    "string(//p[@class='copyright'])",
    "//span[@class='zyte']/text()",
    "//div[@itemscope]/@itemtype",
    "//div[@itemscope][1]/@itemscope",
    "//*[@itemprop]/@itemprop",
    "//div[@class='quote']/span[1]/text()",
    "//div[@class='quote']/span[2]/text()",
    "//div[@class='quote']/span[2]/node()",
    "//div[@class='tags']/text()",
    "//div[@class='tags']/node()[1]",
    "//a[text()='(about)']/@href",
    "//a[.='(about)'][1]/preceding-sibling::small/text()",
    "(//a[@class='tag'])[position() > 3 and position() <= 5]/text()",
    "//a[@class='tag'][position() = last()]/text()",
    "//ul[@class='pager']/li/@class",
    "//li[@class='previous']/a//text()",
    "//span[@aria-hidden='true']/text()",
    "//span[@aria-hidden]/parent::a/@href",
    "set:distinct(//small[@class='author'])/text()",
    "//small[not(. = preceding::small)]/text()",
    "count(//a[@class='tag']) - count(//span[@class='tag-item'])",
    "//div[@class='col-md-4 tags-box']/h2/text()",
    [["css", "div.quote"], ["xpath", "./span[@class='text']/text()"]],
    [["css", "div.quote"], ["xpath", ".//a[@class='tag']/text()"]],
    [["css", "div.quote"], ["xpath", "string(.//small)"]],
    [["css", "li.next a::attr(href)"]],
    [["css", "div.quote"], ["xpath", "count(.//a[@class='tag'])"]],
    [["xpath", "//div[@class='quote']"], ["xpath", "./span/small/text()"]],
    [["css", "div.quote span.text::text"]],
    [["css", "div.tags"], ["xpath", "a/text()"]],
    [["css", "div.quote"], ["xpath", "span[2]/a/@href"]],
    [["css", ".tag-item a"], ["xpath", "concat(., '=', @href)"]],
    [["css", "div.quote"], ["xpath", "following-sibling::div[1]//small/text()"]],
    X("//small[@class='author'][.=$name]/text()", {"name": "Albert Einstein"}),
    X("//div[@class='quote'][$n]//small/text()", {"n": 2}),
    X("//div[@class='quote'][$n]//small/text()", {"n": 2.0}),
    X("//div[@class='quote'][$n]//small/text()", {"n": 1.5}),
    X("//div[@class='quote'][position()=$n]//small/text()", {"n": 2}),
    X("count(//a[@class='tag']) > $n", {"n": 5}),
    X("//a[@class='tag'][contains(@href, $t)]/text()", {"t": "value"}),
]

PAGE_CASES["structure.html"] = [
    "//*[has-class('box')]/@id",
    "//div[has-class('box', 'red')]/@id",
    "//div[has-class('box', 'blue')]/@id",
    "//div[has-class('box', 'box')]/@id",
    "//div[has-class('green')]/@id",
    "//div[has-class('BOX')]/@id",
    "//div[has-class('box-red')]/@id",
    "//div[has-class('red', 'box')]/@id",
    "//div[has-class('box red')]/@id",
    "//div[has-class('box  red')]/@id",
    "//div[has-class('')]/@id",
    "//div[has-class(' box')]/@id",
    "//*[has-class('main')]/@id",
    "//*[has-class('post')][has-class('draft')]/@id",
    "//*[has-class('post') and not(has-class('draft'))]/@id",
    "//section[has-class('section')]/@id",
    "count(//*[has-class('inner')])",
    "//div[has-class('inner')][not(has-class('deepest'))]/@class",
    "has-class('page')",
    "//body[has-class('page')]/@id",
    "//body[has-class('page', 'home')]/@id",
    "//div[has-class(string(@id))]/@id",
    "//div[has-class(concat('b', 'ox'))]/@id",
    "//div[@class='box']/@id",
    "//div[contains(@class, 'box')]/@id",
    "//div[contains(concat(' ', normalize-space(@class), ' '), ' box ')]/@id",
    "//div[@class='']/@id",
    "//div[@class]/@id",
    "//div[not(@class)]/@id",
    "//div[string-length(@class)=0]/@id",
    "//div[@class='box\tred']/@id",
    "id('b1')/p/text()",
    "id('s1 s2')/@class",
    "id('s1\ts2')/@id",
    "id('s1\ns2')/@id",
    "id(' deep ')/span/text()",
    "id('nope')",
    "id('b1 b1')/@id",
    "id('b2 b1')/@id",
    "id(//section/@id)/h2/text()",
    "id('deep')/ancestor::*/@id",
    "id('deep')/ancestor::*[1]/@class",
    "id('deep')/ancestor::div[last()]/@class",
    "id('deep')/ancestor-or-self::*[@id][2]/@id",
    "count(id('deep')/ancestor::*)",
    "id('deep')/ancestor::*[position() > 1 and position() < 4]/@class",
    "(id('deep')/ancestor::*)[1]/@id",
    "id('b3')/p[2]/following-sibling::p/text()",
    "id('b3')/p[3]/preceding-sibling::p[1]/text()",
    "id('b3')/p[3]/preceding-sibling::p[last()]/text()",
    "(id('b3')/p[3]/preceding-sibling::p)[1]/text()",
    "id('b4')/following::*[1]/@id",
    "id('b4')/preceding::*[1]/text()",
    "id('b4')/preceding::div[1]/@id",
    "(id('b4')/preceding::div)[1]/@id",
    "id('b4')/preceding::*[3]/text()",
    "id('a1')/descendant::*/@class",
    "id('a1')/descendant-or-self::*[@id]/@id",
    "id('main')/child::*/@id",
    "id('main')/*/*[1]/text()",
    "id('s2')/following-sibling::*/@id",
    "id('s2')/preceding-sibling::*/@id",
    "id('w2')/parent::*/@id",
    "id('w2')/self::div/@id",
    "id('w2')/self::p",
    "id('masthead')/following::h2/text()",
    "id('foot')/preceding::h2//text()",
    "//*[@id='deep']/ancestor::*[@class][2]/@class",
    "//p[ancestor::section[@lang='fr']]/text()",
    "//*[@lang]/@id",
    "//section[2]/@lang",
    "//section[@id='s1']/div[p][last()]/@id",
    "//section/div[count(p)=3]/@id",
    "//section/div[count(p) > 1]/@id",
    "//section/div[not(p)]/@id",
    "//section/div[p[2]]/@id",
    "//div[p[@class='lead']]/@id",
    "//div[@id][3]/@id",
    "(//div[@id])[3]/@id",
    "//div[@id][position()=3]/@id",
    "//div[@class][@id][2]/@id",
    "//div[@id][@class][2]/@id",
    "//div[2][@id]/@id",
    "//section/*[3]/@id",
    "//section/*[last()]/@id",
    "//h2/following-sibling::*[1]/@id",
    "//h2/text()",
    "//h2//text()",
    "//h2[i]/i/text()",
    "name(id('deep')/..)",
    "//div[@id='b3']/p[. = 'More']/following-sibling::p/text()",
    "//p[.='Box two']/ancestor::div[1]/@id",
    "//section[@id='s1']//p[position() = 1]/text()",
    "(//section[@id='s1']//p)[position() = 1]/text()",
    "//section[@id='s1']/descendant::p[1]/text()",
    "//section[@id='s1']/descendant::p[last()]/text()",
    "//section[@id='s1']/text()",
    "count(//section[@id='s1']/node())",
    "//article[@data-id = 3]/@id",
    "//article[@data-id = '3']/h3/text()",
    "//body/@class",
    "//*[@id and @class][not(self::div)]/@id",
    "//*[contains(@id, '-')]/@id",
    [["xpath", "//section"], ["xpath", "./div/@id"]],
    [["xpath", "//section"], ["xpath", "//h2/text()"]],
    [["xpath", "//section"], ["xpath", ".//h2/text()"]],
    [["xpath", "//div[has-class('inner')]"], ["xpath", "./*[1]/@class"]],
    [["css", "div.box"], ["xpath", "@id"]],
    [["css", "div.box"], ["xpath", "count(p)"]],
    [["css", ".box"], ["xpath", "has-class('red')"]],
    [["xpath", "//section"], ["xpath", "div"], ["xpath", "p[1]/text()"]],
    [["css", "section"], ["xpath", "ancestor::*[1]/@id"]],
    [["xpath", "//article"], ["xpath", "(.//p)[1]//text()"]],
    [["xpath", "//article"], ["xpath", "following-sibling::article[1]/@id"]],
    [["xpath", "//article"], ["xpath", "..//h3/text()"]],
    [["xpath", "//article"], ["xpath", "id('a2')/@id"]],
    [["css", "#deep"], ["xpath", "ancestor::div"], ["xpath", "@class"]],
    X("//*[@id=$x]/@class", {"x": "b1"}),
    X("//div[has-class($c)]/@id", {"c": "box"}),
    X("id($ids)/@id", {"ids": "s1 a2"}),
    X("//section[$n]/@id", {"n": 2}),
    X("//section/div[$n]/@id", {"n": 2.0}),
    X("//section/div[position() > $n]/@id", {"n": 3}),
    X("count(//div) > $n", {"n": 5}),
    X("count(//div) = $n", {"n": 20}),
]

PAGE_CASES["lists.html"] = [
    "//ul[@id='fruits']/li/text()",
    "//ul[@id='fruits']/li[2]/text()",
    "//ul[@id='fruits']/li[last()]/text()",
    "//ul[@id='fruits']/li[last()-1]/text()",
    "//ul[@id='fruits']/li[position()>2]/text()",
    "//ul[@id='fruits']/li[position() mod 2 = 0]/text()",
    "//ul[@id='fruits']/li[position() mod 2 = 1]/text()",
    "//ul[@id='fruits']/li[position() = last() or position() = 1]/text()",
    "//ul[@id='fruits']/li[@class='item odd'][2]/text()",
    "//ul[@id='fruits']/li[has-class('odd')][2]/text()",
    "//ul[@id='fruits']/li[2][has-class('odd')]/text()",
    "//ul[@id='fruits']/li[has-class('odd')][1]/following-sibling::li[1]/text()",
    "count(//ul[@id='fruits']/text())",
    "//ul[@id='fruits']/node()[2]",
    "//ul[@id='fruits']/text()",
    "//ul[@id='fruits']/li[1]/following-sibling::node()[1]",
    "//ol[@id='numbers']/li[. > 5]/text()",
    "//ol[@id='numbers']/li[. < 5]/text()",
    "//ol[@id='numbers']/li[. = 30]/text()",
    "//ol[@id='numbers']/li[. = ' 30 ']/text()",
    "//ol[@id='numbers']/li[number(.) = 30]/text()",
    "//ol[@id='numbers']/li[. >= 4.5]/text()",
    "sum(//ol[@id='numbers']/li)",
    "sum(//ol[@id='numbers']/li/@value)",
    "//ol[@id='numbers']/li[@value]/@value + 1",
    "number(//ol[@id='numbers']/@start) * 2",
    "//ol[@id='numbers']/li = 20",
    "//ol[@id='numbers']/li != 20",
    "//ol[@id='numbers']/li > 29",
    "//ol[@id='numbers']/li < -0.5",
    "//ol[@id='numbers']/li[last()] * -1",
    "//ol[@id='numbers']/li[3] + //ol[@id='numbers']/li[1]",
    "//ol[@id='numbers']/li + 1",
    "floor(//ol[@id='numbers']/li[4])",
    "ceiling(//ol[@id='numbers']/li[4])",
    "round(//ol[@id='numbers']/li[4])",
    "round(//ol[@id='numbers']/li[5] div 2)",
    "//ol[@id='numbers']/li[position() = //ol[@id='numbers']/li[last()] + 3]/text()",
    "//ol[@id='numbers']/li[//ol[@id='numbers']/@start]/text()",
    "//ol[@id='numbers']/li[number(//ol[@id='numbers']/@start)]/text()",
    "//ul[@id='nested']/li/text()",
    "//ul[@id='nested']//li/@id",
    "//ul[@id='nested']/li[1]//li/@id",
    "//li[@id='n1b1']/ancestor::li/@id",
    "//li[@id='n1b1']/ancestor::li[1]/@id",
    "//li[@id='n1b1']/ancestor::li[last()]/@id",
    "(//li[@id='n1b1']/ancestor::li)[1]/@id",
    "//li[@id='n1b1']/ancestor-or-self::li[2]/@id",
    "//li[@id='n1b2']/preceding::li/@id",
    "//li[@id='n1b2']/preceding::li[1]/@id",
    "//li[@id='n1b2']/preceding::li[2]/@id",
    "//li[@id='n1a']/following::li/@id",
    "//li[@id='n1a']/following::li[3]/@id",
    "//li[@id='n2']/preceding-sibling::li/@id",
    "//li[@id='n3a']/preceding::*[1]/@id",
    "//li[ul]/@id",
    "//li[not(ul)][ancestor::ul[@id='nested']]/@id",
    "//li[count(ancestor::li) = 2]/@id",
    "//li[count(ancestor::li) = 1]/@id",
    "count(//ul[@id='nested']//li)",
    "//ul[@id='nested']//li[1]/@id",
    "(//ul[@id='nested']//li)[1]/@id",
    "//ul[@id='nested']/descendant::li[1]/@id",
    "//ul[@id='nested']/descendant::li[4]/@id",
    "//ul[@id='nested']//li[2]/@id",
    "//ul[@id='nested']//text()[normalize-space()]",
    "string(//li[@id='n1'])",
    "normalize-space(//li[@id='n1'])",
    "//li[@id='n1']/text()",
    "//ul[@id='empty']/li",
    "//ul[not(li)]/@id",
    "//ul[@id='mixed']/li[not(node())]",
    "//ul[@id='mixed']/li[not(text())]",
    "//ul[@id='mixed']/li[normalize-space()='']",
    "//ul[@id='mixed']/li[. = '']",
    "//ul[@id='mixed']/li[string-length(.) > 0]//text()",
    "//ul[@id='mixed']/li[3]/node()",
    "string(//ul[@id='mixed']/li[3])",
    "//dt[2]/following-sibling::dd/text()",
    "//dt[1]/following-sibling::dd[1]/text()",
    "//dd[preceding-sibling::dt[1][. = 'term 2']]/text()",
    "//dd[preceding-sibling::dt[1] = 'term 2']/text()",
    "//dd[2]/preceding-sibling::dt[1]/text()",
    "//dl/*[self::dt or self::dd][4]/text()",
    "//ol[@id='letters']/li[. = 'y']/following-sibling::li[1]/text()",
    "//ol[@id='letters']/li[not(. = preceding-sibling::li)]/text()",
    "//ol[@id='letters']/li[. = following-sibling::li]/text()",
    "set:distinct(//ol[@id='letters']/li)/text()",
    "count(set:distinct(//ol[@id='letters']/li))",
    "//li[. = //ol[@id='letters']/li[2]]/text()",
    "(//ol[@id='letters']/li)[. = 'x'][2]",
    "//ol[@id='letters']/li[. = 'x'][last()]/preceding-sibling::li[1]/text()",
    "//ul[@id='fruits']/li[1] | //ol[@id='numbers']/li[1] | //dl/dt[1]",
    "(//ol[@id='letters']/li[3] | //ol[@id='letters']/li[1])/text()",
    "//ol[@id='letters']/li[3] | //ol[@id='letters']/li[1]",
    "(//dt | //dd)/text()",
    "(//dt | //dd)[3]/text()",
    "count(//li | //ul)",
    "set:leading(//ol[@id='letters']/li, //ol[@id='letters']/li[. = 'z'])/text()",
    "set:trailing(//ol[@id='letters']/li, //ol[@id='letters']/li[. = 'z'])/text()",
    "set:trailing(//ol[@id='letters']/li, //nothing)/text()",
    "set:leading(//ol[@id='letters']/li, //ul[@id='fruits']/li[1])/text()",
    "set:difference(//li, //ul[@id='nested']//li)/text()",
    "set:intersection(//li[@id], //ul[@id='nested']/li)/@id",
    "set:has-same-node(//ul[@id='fruits']/li, //li[. = 'date'])",
    "set:has-same-node(//ul[@id='fruits']/li, //ol/li)",
    "count(set:distinct(//li/text()))",
    "set:distinct(//ul[@id='fruits']/li/@class)",
    [["css", "ul"], ["xpath", "./li[2]/text()"]],
    [["css", "ul"], ["xpath", "li[last()]/text()"]],
    [["xpath", "//ul"], ["xpath", "count(li)"]],
    [["xpath", "//ul"], ["xpath", "@id"]],
    [["css", "ol#numbers li"], ["xpath", "number(.) + 1"]],
    [["css", "ol#numbers li::text"], ["xpath", "."]],
    [["css", "ol#numbers li::text"]],
    [["xpath", "//ul[@id='nested']//li"], ["xpath", "./text()"]],
    [["xpath", "//ul[@id='fruits']/li"], ["xpath", "following-sibling::li[1]/text()"]],
    [["xpath", "//ul[@id='fruits']/li"], ["xpath", "(//li)[1]/text()"]],
    [["xpath", "//ul[@id='fruits']/li"], ["xpath", "boolean(following-sibling::li)"]],
    [["css", "#nested li"], ["xpath", "count(ancestor::li)"]],
    [["css", "dt"], ["xpath", "following-sibling::dd[1]/text()"]],
    X("//ul[@id='fruits']/li[position()=$n]/text()", {"n": 3}),
    X("//ul[@id='fruits']/li[$n]/text()", {"n": 3}),
    X("//ul[@id='fruits']/li[$s]/text()", {"s": "3"}),
    X("//ul[@id='fruits']/li[$s]/text()", {"s": ""}),
    X("//ul[@id='fruits']/li[. = $v]/@class", {"v": "date"}),
    X("count(//li) > $n", {"n": 10}),
    X("//ol[@id='numbers']/li[. > $n]/text()", {"n": 5.5}),
    X("//ol[@id='numbers']/li[. = $n]/text()", {"n": 30}),
    X("//ol[@id='numbers']/li[. = $n]/text()", {"n": "30"}),
    X("//li[@id = $id]/text()", {"id": "n2"}),
    X("//li[contains(., $t)]/@id", {"t": "one-b"}),
]

TABLE_OPERANDS = [
    "//tbody/tr/td[2]", "//tbody/tr/td[3]", "//nothing", "3", "'12'", "''", "true()", "false()",
]
TABLE_OPS = ["=", "!=", "<", "<=", ">", ">="]

PAGE_CASES["tables.html"] = [
    "//table[@id='prices']//tr[td]/td[1]/text()",
    "count(//table//tr[td])",
    "//tbody/tr[2]/td/text()",
    "//td[. > 3]/text()",
    "//td[. < 3]/text()",
    "//td[. = 12]/text()",
    "//td[text()='12']",
    "//td[. = '12']/../@class",
    "//td[number(.) = number(.)]/text()",
    "//td[number(.) != number(.)]/text()",
    "//td[string(number(.)) = 'NaN']/text()",
    "sum(//table[@id='grid']//td)",
    "sum(//table[@id='prices']/tbody/tr/td[2])",
    "sum(//table[@id='prices']/tbody/tr/td[3])",
    "count(//td[. > 0])",
    "//td[. >= 3.5]/text()",
    "//td[. = 3.5]/text()",
    "//td[. = ' 7 ']/text()",
    "//td[. = 7]/text()",
    "//td[normalize-space(.) = '7']/text()",
    "//td[. = -2]/text()",
    "//td[. < 0]/text()",
    "//td[. = 1000]/text()",
    "//td[. = 0.5]/text()",
    "//td[. = '']/../td[1]/text()",
    "//td[not(node())]",
    "//tr[td[2] > 5]/td[1]/text()",
    "//tr[td[2] > td[3]]/td[1]/text()",
    "//tr[td[3] > td[2]]/td[1]/text()",
    "//tr[td = 'pear']/td[3]/text()",
    "//th[. = 'Price']/preceding-sibling::th/text()",
    "count(//th[. = 'Price']/preceding-sibling::th) + 1",
    "//tbody/tr/td[count(//th[. = 'Price']/preceding-sibling::th) + 1]/text()",
    "//table[@id='grid']//tr[2]/td[2]/text()",
    "//table[@id='grid']//td[position() = last()]/text()",
    "//table[@id='grid']//tr[last()]/td/text()",
    "//table[@id='grid']//td[. mod 2 = 0]/text()",
    "//table[@id='grid']//td[. * 2 > 10]/text()",
    "//table[@id='grid']//td[(. + 1) div 2 = 4]/text()",
    "//table[@id='grid']//tr/td[1] + //table[@id='grid']//tr/td[2]",
    "//table[@id='grid']//td[. > //table[@id='grid']//tr[2]/td]/text()",
    "//table[@id='grid']//td[. = //table[@id='grid']//tr[2]/td]/text()",
    "//th[@scope='row'][. = 'Rating']/following-sibling::td/text()",
    "//th[. = 'Colour']/following-sibling::td//text()",
    "string(//th[. = 'Colour']/following-sibling::td)",
    "//th[. = 'Weight']/../td/text()",
    "substring-before(//th[.='Weight']/following-sibling::td, ' ')",
    "number(substring-before(//th[.='Weight']/following-sibling::td, ' ')) * 1000",
    "//table[@id='outer']//td/text()",
    "//table[@id='outer']/tbody/tr/td/text()",
    "//table[@id='outer']/tbody/tr/td[1]/table//td/text()",
    "//td[ancestor::table[@id='inner']]/text()",
    "//td[count(ancestor::table) = 2]/text()",
    "//td[ancestor::table[2]]/text()",
    "//td/ancestor::table[1]/@id",
    "//caption/text()",
    "//tfoot//td/@colspan",
    "//tfoot//td/@colspan * 2",
    "//tr[@class='row alt']/td[1]/text()",
    "//tr[has-class('alt')]/td[1]/text()",
    "//tr[contains(@class, 'alt')][2]/td[1]/text()",
    "(//tr[td])[last()]/td[1]/text()",
    "//tbody/tr[position() > 1 and position() < 4]/td[1]/text()",
    "//table//tr[td][1]/td[1]/text()",
    "//td[following-sibling::td[. = '0']]/text()",
    "//td[preceding-sibling::td = 'fig']/following-sibling::td/text()",
    "number(//td[. = 'abc'])",
    "number(//tbody/tr[2]/td[2])",
    "number(//tbody/tr[4]/td[3])",
    "number(//tbody/tr[5]/td[3])",
    "-//tbody/tr[2]/td[3]",
    "//tbody/tr[1]/td[2] div //tbody/tr[2]/td[2]",
    "//tbody/tr[1]/td[2] mod 5",
    "//tbody/tr[1]/td[3] * //tbody/tr[1]/td[2]",
    "//thead//th[2]/text()",
    "//thead/tr/th[last()]/text()",
    "//tr[th][not(ancestor::thead)]/th/text()",
    "//tr/*[1]/text()",
    "//tr/td[last()]/text()",
    "count(//tr/*)",
    [["css", "table#prices tbody tr"], ["xpath", "./td[1]/text()"]],
    [["css", "table#prices tbody tr"], ["xpath", "td[2] > 5"]],
    [["xpath", "//tbody/tr"], ["xpath", "sum(td[position()>1])"]],
    [["xpath", "//table"], ["xpath", ".//tr[1]/*[1]//text()"]],
    [["xpath", "//table"], ["xpath", "count(.//td)"]],
    [["xpath", "//table"], ["xpath", "count(//td)"]],
    [["css", "td::text"], ["xpath", "."]],
    [["xpath", "//tr[td]"], ["xpath", "td[last()]/text()"]],
    [["css", "#grid tr"], ["xpath", "td[2] * 10"]],
    [["css", "#specs th"], ["xpath", "normalize-space(following-sibling::td)"]],
    X("//td[. > $min]/text()", {"min": 3}),
    X("//td[. = $v]/text()", {"v": "12"}),
    X("//td[. = $v]/text()", {"v": 12}),
    X("//td[. = $v]/text()", {"v": 3.5}),
    X("//tbody/tr[$i]/td[$j]/text()", {"i": 2, "j": 3}),
    X("sum(//table[@id='grid']//td) div $n", {"n": 9}),
]
for _a in TABLE_OPERANDS:
    for _op in TABLE_OPS:
        for _b in TABLE_OPERANDS:
            PAGE_CASES["tables.html"].append(f"{_a} {_op} {_b}")

PAGE_CASES["forms.html"] = [
    "//input[@type='hidden']/@name",
    "//input[@type='hidden']/@value",
    "//input[@name='csrf_token']/@value",
    "//form[@id='login']//input/@name",
    "//input[not(@type='hidden')]/@name",
    "//input[@type!='hidden']/@name",
    "//input[@checked]/@name",
    "//input[@type='checkbox'][@checked]/@value",
    "//input[@type='radio'][@checked]/@value",
    "//input/@checked",
    "//input[@checked='checked']/@name",
    "//input[@checked='']/@name",
    "//input[@value='']/@name",
    "//input[@value]/@name",
    "//input[not(@value)]/@name",
    "//select[@name='lang']/option[@selected]/@value",
    "//option[@selected]/@value",
    "//option[@selected]/text()",
    "//option[not(@value)]/text()",
    "//option/@value",
    "//select[@name='lang']/option[last()]/text()",
    "//optgroup/@label",
    "//optgroup[@label='Sizes']/option/text()",
    "//option[@disabled]/@value",
    "//select[@multiple]/@name",
    "//select[@multiple]//option[@selected]/@value",
    "//select[@multiple]/option",
    "//textarea/text()",
    "string(//textarea)",
    "normalize-space(//textarea)",
    "string-length(//textarea)",
    "//textarea/@rows + //textarea/@cols",
    "//button/text()",
    "//button[@type='submit']/@value",
    "//button[not(@type)]/text()",
    "//label/@for",
    "//label[@for='pw']/text()",
    "//input[@id = //label/@for]/@name",
    "//label[@for = //input[@type='checkbox']/@id]/text()",
    "//form/@action",
    "//form[@method='get']/@action",
    "//form[@method='get']//input/@name",
    "//form[1]//input[last()]/@value",
    "(//form//input)[last()]/@value",
    "count(//form[@id='login']//input)",
    "count(//input) - count(//input[@type='hidden'])",
    "//input[@type='number']/@max - //input[@type='number']/@min",
    "//input[@type='number']/@value * 2",
    "//input[@type='search']/@value",
    "substring-after(//input[@type='search']/@value, ' ')",
    "//div[has-class('field')]/label/text()",
    "//div[@class='field'][3]//text()",
    "//div[@class='field'][input[@type='radio']]/text()",
    "//input[@value='free']/following-sibling::text()[1]",
    "//input[@value='free']/following::text()[1]",
    "normalize-space(//input[@value='pro']/following-sibling::text())",
    "//div[@class='actions']/*/@type",
    "//div[@class='actions']/node()",
    "//form//*[@name]/@name",
    "//*[@name='plan'][2]/@value",
    "(//*[@name='plan'])[2]/@value",
    "//form[@id='login']/@*",
    "name(//form[@id='login']/@*[3])",
    "//input[@type='text']",
    "//input[@type='hidden'][last()]",
    "//div[@class='field'][label][1]/input/@id",
    "//form[@id='search']/*[last()]/text()",
    "//form[.//button[. = 'Search']]/@id",
    [["css", "form"], ["xpath", ".//input[@type='hidden']/@name"]],
    [["css", "input[type=hidden]"], ["xpath", "concat(@name, '=', @value)"]],
    [["css", "select"], ["xpath", "./option[@selected]/@value"]],
    [["css", "select"], ["xpath", ".//option[@selected]/@value"]],
    [["css", "option::attr(value)"]],
    [["css", "option::text"]],
    [["css", "form"], ["xpath", "@id"]],
    [["css", "form"], ["xpath", "count(.//input)"]],
    [["css", "input"], ["xpath", "@type"]],
    X("//input[@name=$n]/@value", {"n": "next"}),
    X("//form[@id=$f]//input[@type=$t]/@name", {"f": "login", "t": "hidden"}),
    X("//option[@value=$v]/text()", {"v": "fr"}),
    X("//input[@type='number']/@value > $x", {"x": 9.5}),
    X("//input[@name='page']/@value = $p", {"p": 2}),
]

PAGE_CASES["links.html"] = [
    "//a/@rel",
    "//a[@rel='nofollow']/@href",
    "//a[contains(@rel, 'nofollow')]/@href",
    "//a[contains(concat(' ', @rel, ' '), ' nofollow ')]/@href",
    "//a[contains(translate(@rel, 'NOFLW', 'noflw'), 'nofollow')]/@href",
    "//a[re:test(@rel, 'nofollow', 'i')]/@href",
    "//a[@title = 'Home page']/@href",
    "//a[starts-with(@href, 'https://')]/@href",
    "//a[starts-with(@href, 'mailto:')]/@href",
    "substring-after(//a[starts-with(@href, 'mailto:')]/@href, ':')",
    "//a[starts-with(@href, '#')]/@href",
    "//a[@href = '']/text()",
    "//a[@href][not(normalize-space(@href))]/text()",
    "//a[not(@href)]/text()",
    "//a[@name]/@name",
    "//a[not(@*)]/text()",
    "//a[@href='  spaced.html  ']/text()",
    "//a[normalize-space(@href) = 'spaced.html']/text()",
    "//a[contains(@href,'page')][2]/@href",
    "//a[@class='page'][last()]/text()",
    "//a[has-class('page')]/@href",
    "//a[contains(@href, '?')]/@href",
    "substring-after(//a[contains(@href, '?')]/@href, '?')",
    "//a[contains(@href, '&')]/@href",
    "//a[. = 'Home']/@href",
    "//a[text() = 'Home']/@href",
    "//a[.='the intro docs']/@href",
    "//a[text()='the intro docs']",
    "//a[contains(text(), 'intro')]",
    "//a[contains(., 'intro')]/@href",
    "//p[@class='text']/a/text()",
    "//p[@class='text']/a//text()",
    "//p[@class='text']/text()",
    "string(//p[@class='text'])",
    "normalize-space(//p[@class='text'])",
    "//p[@class='text']/node()",
    "count(//p[@class='text']/node())",
    "//li[@class='next']/a/@href",
    "//li[@class='next']/a/text()",
    "//li[has-class('current')]/span/text() + 1",
    "//ul[@class='pagination']/li[a]/a/@href",
    "//ul[@class='pagination']/li[not(a)]/@class",
    "//a[img]/@href",
    "//a/img/@src",
    "//img[not(ancestor::a)]/@src",
    "//a[@href='/'][@title]/@rel",
    "//a[@href][position() > 10]/@href",
    "count(//a[@href])",
    "count(//a) - count(//a[@href])",
    "//a[string-length(@href) > 20]/@href",
    "//a[translate(@href, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') = 'http://example.com/upper']/text()",
    r"//a[re:test(@href, '^https?://')]/@href",
    r"//a[re:test(@href, '^http', 'i')]/@href",
    r"//a[re:test(@href, '/page/\d+/')]/@href",
    r"//a[re:test(@href, '/page/\d{2,}/')]/@href",
    r"re:replace(//a[@class='page'][1]/@href, '\d+', 'g', 'N')",
    r"re:replace(//a[@class='page'][1]/@href, '/', '', '|')",
    r"re:replace(//a[@class='page'][1]/@href, '/', 'g', '')",
    r"re:match(//a[@class='page'][2]/@href, '/page/(\d+)/')",
    r"re:match(//a[@class='page'][2]/@href, '\d', 'g')",
    r"re:match(//a[@class='page'][2]/@href, '/(\w+)/(\d+)', 'g')",
    r"re:match(//a[@class='page'][2]/@href, 'PAGE', 'i')",
    r"re:match(//a[@class='page'][2]/@href, 'PAGE', 'gi')",
    r"re:match(//a[@class='page'][2]/@href, '(x)?(page)')",
    r"re:match(//a[@class='page'][2]/@href, '(\d+)')/text()",
    r"re:match(//a[@class='page'][2]/@href, '(\d+)')[2]",
    r"string(re:match(//a[@class='page'][2]/@href, '/page/(\d+)/')[2])",
    r"count(re:match(//a[@class='page'][2]/@href, '.', 'g'))",
    r"//a[re:match(@href, '\d+')]/@href",
    r"re:test(//a/@href, '^mailto')",
    r"//a[re:test(@href, '^/page/[0-9]+/$')][re:test(., '\d')]/text()",
    "//a[contains(@href, 'page')][contains(@rel, 'next')]/text()",
    "//a[@href and not(starts-with(@href, 'http')) and not(starts-with(@href, '/'))]/@href",
    "//a[@rel][not(@title)]/@rel",
    "//a[@title][@rel]/@href",
    "//a[@*[. = 'query']]/@href",
    "//*[@href]/@href",
    "//@href[. = '/']/..",
    "//@href[contains(., 'example')]",
    "//a[@href][last()]/preceding-sibling::a[@href][1]/@href",
    [["css", "a"], ["xpath", "@href"]],
    [["css", "div#nav a"], ["xpath", "string-length(@href)"]],
    [["css", "a[rel]"], ["xpath", "@rel"]],
    [["css", "li.next a::attr(href)"]],
    [["css", "a[href^=http]::attr(href)"]],
    [["css", "a[title]"], ["xpath", "concat(@title, ':', .)"]],
    [["css", "div#nav a"], ["xpath", "re:test(@href, '^/')"]],
    [["css", "p.text a"], ["xpath", ".//text()"]],
    X("//a[@href = $h]/text()", {"h": "/page/2/"}),
    X("//a[contains(@href, $s)]/@href", {"s": "page"}),
    X("//a[@rel = $r]/@href", {"r": "next"}),
    X("(//a)[$i]/@href", {"i": 3}),
    X("//a[string-length(@href) > $n]/@href", {"n": 20}),
    X("//a[re:test(@href, $p)]/@href", {"p": "^/page"}),
]

PAGE_CASES["attrs.html"] = [
    "//p[@title='']/@id",
    "//p[@title=' ']/@id",
    "//p[@title='   ']/@id",
    "//p[normalize-space(@title)='']/@id",
    "//p[@title][normalize-space(@title)='']/@id",
    "//p[not(@title)]/@id",
    "//p[@title]/@title",
    "//@title",
    "//p[@title='He said \"hi\"']/@id",
    "//p[@title=\"it's\"]/@id",
    "//p[contains(@title, '\"')]/@id",
    "//p[contains(@title, \"'\")]/@id",
    "//p[@title=concat('\"it', \"'\", 's\"')]/@id",
    "//p[@id='both']/@title",
    "//p[@id='uni']/@title",
    "string-length(//p[@id='uni']/@title)",
    "string-length(//p[@id='uni']/@data-emoji)",
    "substring(//p[@id='uni']/@title, 6, 1)",
    "substring(//p[@id='uni']/@title, 10)",
    "translate(//p[@id='uni']/@title, 'éжツ', 'EZT')",
    "//p[@id='ent']/@title",
    "//p[@id='ent']/@data-raw",
    "//p[@id='nl']/@title",
    "normalize-space(//p[@id='nl']/@title)",
    "//p[@id='nl']/@data-tab",
    "string-length(//p[@id='nl']/@title)",
    "//p[@id='spaces']/@data-pad",
    "normalize-space(//p[@id='spaces']/@data-pad)",
    "//p[@hidden]/@id",
    "//p[@id='bool']/@hidden",
    "//p[@id='bool']/@*",
    "name(//p[@id='bool']/@*[2])",
    "//p[@data-flag = '']/@id",
    "//@data-up",
    "//@DATA-UP",
    "//p[@id='upper']/@*",
    "name(//p[@id='upper']/@*[2])",
    "//@*[name()='data-up']",
    "//p[@title='Mixed']/@id",
    "//p[@id='json']/@data-json",
    "substring-before(substring-after(//p[@id='json']/@data-json, '['), ']')",
    "//p[@id='eq']/@data-q",
    "//p[@id='many']/@*",
    "//p[@id='many']/@*[3]",
    "//p[@id='many']/@*[last()]",
    "//p[@id='many']/attribute::*[position() > 2]",
    "count(//p[@id='many']/@*)",
    "name(//p[@id='many']/@*[4])",
    "local-name(//p[@id='many']/@*[4])",
    "sum(//p[@id='many']/@*[name() != 'id'])",
    "//p[@id='many']/@*[. > 2]",
    "//p[@id='many']/@*[. = 3]/..",
    "//p[@id='many']/@a/parent::*/@id",
    "//p[@id='many']/@a/ancestor::*/@id",
    "//p[@id='many']/@c/following-sibling::node()",
    "//p[@id='many']/@c/following::node()[1]",
    "//p[@id='many']/@c/following::*[1]/@data-n",
    "//p[@id='many']/@c/preceding::*[1]/@id",
    "//p[@id='many']/@c/preceding::node()[1]",
    "//p[@id='many']/@c/preceding-sibling::node()",
    "//p[@id='many']/@c/self::node()",
    "//p[@id='many']/@c/self::*",
    "//p[@id='many']/@c/self::c",
    "count(//p[@id='many']/@c/ancestor-or-self::node())",
    "//p[@id='many']/@c/descendant-or-self::node()",
    "//p[@id='many']/@c/child::node()",
    "//p[@id='many']/@c/attribute::*",
    "//p[@id='many']/@c/text()",
    "string(//p[@id='many']/@c)",
    "//p[@id='many']/@*[2]/following::node()[1]",
    "//p[@id='many']/@* | //p[@id='many']",
    "(//p[@id='many']/@b | //p[@id='many']/@a)",
    "(//p[@id='many']/text() | //p[@id='many']/@e)",
    "//p[@id='many']/@*[. > 2][1]",
    "//li[@data-n > 4]/text()",
    "//li[@data-n < 4]/text()",
    "//li[@data-n = 3]/text()",
    "//li[@data-n = ' 3 ']/text()",
    "//li[number(@data-n) = number(@data-n)]/@data-n",
    "sum(//li/@data-n)",
    "sum(//li[number(@data-n) = number(@data-n)]/@data-n)",
    "//li[not(@data-n)]/text()",
    "//li[@data-n != 5]/text()",
    "//li[not(@data-n = 5)]/text()",
    "//li[@data-n >= -1.5]/text()",
    "//li[@data-n][last()]/@data-n",
    "id(//span[@id='x2']/@data-ref)/text()",
    "id(id('x1')/@data-ref)/@id",
    "id(id(id('x1')/@data-ref)/@data-ref)/@id",
    "id(//span/@data-ref)/@id",
    "id('x3')/@data-ref",
    "id(id('x3')/@data-ref)",
    "id(//span/text())/@data-ref",
    [["css", "p[title]"], ["xpath", "@title"]],
    [["css", "#nums li"], ["xpath", "@data-n * 2"]],
    [["xpath", "//p[@id='many']/@*"], ["xpath", "."]],
    [["xpath", "//p[@id='many']/@*"], ["xpath", "name()"]],
    [["css", "p::attr(title)"]],
    [["css", "span"], ["xpath", "id(@data-ref)/text()"]],
    [["css", "p#many"], ["xpath", "@*[position() > 3]"]],
    X("//p[@title=$t]/@id", {"t": 'He said "hi"'}),
    X("//p[@title=$t]/@id", {"t": "it's"}),
    X("//p[@title=$t]/@id", {"t": "café ж ツ 😀"}),
    X("//p[@title=$t]/@id", {"t": ""}),
    X("//li[@data-n = $n]/text()", {"n": 10}),
    X("//li[@data-n = $n]/text()", {"n": "10"}),
    X("//li[@data-n = $n]/text()", {"n": -1.5}),
    X("//p[@*[name()=$a]]/@id", {"a": "hidden"}),
]

PAGE_CASES["unicode.html"] = [
    "//p/@lang",
    "//*[@lang]/@id",
    "//p[@lang='fr']/text()",
    "//p[starts-with(@lang, 'en')]/@id",
    "//p[starts-with(translate(@lang, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), 'en')]/@id",
    "//p[lang('fr')]/@id",
    "//*[lang('en')]/@id",
    "//*[lang('it')]/@id",
    "//span[ancestor-or-self::*[@lang][1]/@lang = 'en']/text()",
    "//*[ancestor-or-self::*[@lang][1][starts-with(@lang, 'de')]]/@id",
    "//@xml:lang",
    "//p[@*[name() = 'xml:lang']]/@id",
    "//p[@id='xmllang']/@*",
    "name(//p[@id='xmllang']/@*[1])",
    "local-name(//p[@id='xmllang']/@*[1])",
    "namespace-uri(//p[@id='xmllang']/@*[1])",
    "string-length(//title)",
    "//p[@id='ru']/text()",
    "string-length(//p[@id='ru'])",
    "substring(//p[@id='ru'], 1, 4)",
    "substring-before(//p[@id='ru'], ' ')",
    "translate(//p[@id='ru'], 'абвгдежзийклмнопрстуфхцчшщъыьэюя', 'АБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ')",
    "//p[contains(., 'ツ')]/@id",
    "string-length(//p[@id='ja'])",
    "substring(//p[@id='ja'], 2, 3)",
    "//p[@id='nolang']/text()",
    "string-length(//p[@id='nolang'])",
    "substring(//p[@id='nolang'], 8, 1)",
    "substring(//p[@id='nolang'], 10, 3)",
    "substring-after(//p[@id='nolang'], '🎉')",
    "translate(//p[@id='nolang'], '😀🎉', 'xy')",
    "contains(//p[@id='nolang'], '👍')",
    "//li[. = 'éclair']/text()",
    "//li[. = 'Éclair']/text()",
    "//li[translate(., 'É', 'é') = 'éclair']/text()",
    "//li[starts-with(., 'ж')]/text()",
    "//li[re:test(., '^ж', 'i')]/text()",
    r"//li[re:test(., '^\w+$')]/text()",
    "//li[string-length() = 1]/text()",
    "//p[@id='mixed']/text()",
    "string-length(//p[@id='mixed'])",
    "translate(//p[@id='mixed'], 'ß', 's')",
    "normalize-space(//p[@id='zw'])",
    "string-length(//p[@id='zw'])",
    "contains(//p[@id='zw'], '\u00a0')",
    "//p[@id='zw']/text()",
    "//div[@dir='rtl']//text()",
    "normalize-space(//div[@dir='rtl'])",
    "string-length(normalize-space(//div[@dir='rtl']))",
    "re:replace(//p[@id='fr'], '[éèêë]', 'g', 'e')",
    r"re:match(//p[@id='fr'], '(\w+) (\w+)')",
    "//p[re:test(., 'œ')]/@id",
    "concat(//li[3], //li[5], //li[6])",
    "//li[. = '😀']/preceding-sibling::li[1]/text()",
    "//*[@id='dech']//text()",
    "//p[@id='dech']/span/following-sibling::text()",
    "//span[@lang]/following::text()[1]",
    "//li[. > 'a']/text()",
    "//title",
    "//*[@lang][@id]/@lang",
    [["css", "#words li::text"]],
    [["css", "#langs p"], ["xpath", "string-length()"]],
    [["css", "#langs p"], ["xpath", "substring(., 1, 3)"]],
    [["css", "p[lang]"], ["xpath", "@lang"]],
    X("//li[. = $w]/text()", {"w": "жук"}),
    X("//li[. = $w]/text()", {"w": "ツ"}),
    X("//p[@lang = $l]/@id", {"l": "ja"}),
    X("//p[contains(., $s)]/@id", {"s": "😀"}),
]

PAGE_CASES["svg.html"] = [
    "//svg",
    "//svg/circle",
    "//svg/*",
    "//svg/*/@*",
    "//svg//rect",
    "//svg//rect/@x",
    "count(//svg//*)",
    "//*[local-name()='svg']/@class",
    "name(//svg/*[1])",
    "local-name(//svg/*[1])",
    "namespace-uri(//svg)",
    "namespace-uri(//svg/*[1])",
    "//svg/@xmlns",
    "//svg/@*[name()='xmlns']",
    "//svg/@*",
    "//svg/@viewBox",
    "//svg/@viewbox",
    "//@*[local-name()='viewbox']",
    "//svg/namespace::*",
    "count(//svg/namespace::*)",
    "//svg[1]/namespace::*[1]",
    "name(//svg[1]/namespace::*[1])",
    "local-name(//svg/namespace::*)",
    "namespace-uri(//svg/namespace::*)",
    "string(//svg/namespace::*)",
    "//g/rect[2]/@x",
    "//g[@id='grp']/*[last()]",
    "//svg//text/text()",
    "//svg//text()",
    "string(//svg)",
    "//lineargradient/@id",
    "//linearGradient",
    "//*[name()='linearGradient']",
    "//*[name()='lineargradient']/stop/@offset",
    "//use/@*",
    "name(//use/@*)",
    "//use/@*[local-name()='href']",
    "//@*[starts-with(name(), 'xlink:')]",
    "//*[@*[contains(name(), ':')]]",
    "//path/@d",
    "//math/*",
    "//math/@xmlns",
    "//mn + 1",
    "//mi/following-sibling::*/text()",
    "//circle/@r * 2",
    "//circle/@cx + //circle/@cy",
    "sum(//rect/@x)",
    "//rect[@x > 5]",
    "//svg[@width = 24]/@height",
    "//svg[@width]/following::svg/@viewbox",
    "//*[self::svg or self::math]/@xmlns",
    "//svg/ancestor::div/@id",
    "//g/ancestor::svg[1]/@class",
    "//rect/preceding::circle",
    "//rect[1]/following-sibling::rect/@x",
    "//circle/following::*[1]/@id",
    "//circle/following-sibling::*/@id",
    "//svg/descendant-or-self::*[@id]/@id",
    "//*[has-class('svg-icon')]/@width",
    "//*[has-class('layer')]/@id",
    "//svg/*[2]/*",
    "id('grp')/rect[1]",
    "id('lg')/stop",
    "//p/b/text()",
    "//*[namespace-uri() != '']",
    "count(//*[namespace-uri() = ''])",
    "//*[starts-with(local-name(), 'm')]/text()",
    [["css", "svg"], ["xpath", "./*[1]"]],
    [["css", "svg circle"]],
    [["css", "svg"], ["xpath", "count(.//*)"]],
    [["xpath", "//svg"], ["xpath", "@*"]],
    [["css", "svg::attr(viewbox)"]],
    [["xpath", "//svg/*"], ["xpath", "name()"]],
    [["css", "g rect"], ["xpath", "@x + @width"]],
]

PAGE_CASES["xhtml.html"] = [
    "/html/@xmlns",
    "/*/@xmlns",
    "/html/@*",
    "name(/html/@*[1])",
    "namespace-uri(/*)",
    "namespace-uri(//p)",
    "local-name(/*)",
    "name(/*)",
    "//*[local-name()='p']/@class",
    "//p",
    "/html/body/div/p/em/text()",
    "//*[namespace-uri()='http://www.w3.org/1999/xhtml']",
    "count(//*[namespace-uri()=''])",
    "/*/namespace::*",
    "name(/*/namespace::*)",
    "//@*[name()='xml:lang']",
    "//@xml:lang",
    "lang('en')",
    "//*[lang('en')]",
    "//p[2]/node()",
    "//p[2]/text()",
    "//br/following-sibling::text()",
    "//br/following::text()[1]",
    "//p[@class='intro']/node()",
    "string(//p[@class='intro'])",
    "//img/@*",
    "//meta/@http-equiv",
    "//meta/@*[name()='http-equiv']",
    "//meta[@http-equiv='Content-Type']/@content",
    "//div[@id='content']/*[position() > 2]",
    "//ul/li[2]/text()",
    "//em/parent::p/@class",
    "//a/@title",
    "/html/head/meta",
    "//img",
    "//br",
    [["css", "p"], ["xpath", "name()"]],
    [["css", "html"], ["xpath", "@xmlns"]],
    [["css", "p.intro ::text"]],
]

PAGE_CASES["comments.html"] = [
    "//comment()",
    "count(//comment())",
    "/node()",
    "/comment()",
    "count(/node())",
    "//html/comment()",
    "//head/node()",
    "//head/comment()",
    "//body/comment()",
    "//body/node()",
    "//p/comment()",
    "//p[comment()]/@id",
    "//p[not(node())]/@id",
    "//comment()/..",
    "name(//comment()/..)",
    "//comment()/ancestor::*[1]",
    "//comment()/text()",
    "//comment()/node()",
    "//comment()/@*",
    "name(//comment())",
    "local-name(//comment())",
    "string(//comment())",
    "string(//comment()[3])",
    "normalize-space(//comment()[contains(., 'price')])",
    "substring-after(//comment()[contains(., 'price')], ':')",
    "//comment()[. = ' two ']",
    "//comment()[contains(., 'price')]/following-sibling::*[1]",
    "//node()[self::comment()]",
    "//*[comment()]",
    "boolean(//comment())",
    "//p[@id='c1']/node()",
    "//p[@id='c1']/text()",
    "//p[@id='c2']/node()",
    "//p[@id='c2']/text()",
    "//p[@id='c3']/node()",
    "//p[@id='c3']/text()",
    "//p[@id='c4']/node()",
    "//p[@id='c4']/text()",
    "//p[@id='c5']/node()",
    "//p[@id='c5']/text()",
    "//p[@id='c6']/node()",
    "//p[@id='c6']/text()",
    "//p[@id='c7']/node()",
    "//p[@id='c7']/text()",
    "//p[@id='c8']/node()",
    "//p[@id='c8']/text()",
    "//p[@id='c9']/node()",
    "//p[@id='c9']/text()",
    "//p[@id='c10']/node()",
    "//p[@id='c10']/text()",
    "//p[@id='c11']/node()",
    "//p[@id='c11']/text()",
    "//p[@id='c12']/node()",
    "//p[@id='c12']/text()",
    "//p[@id='c13']/node()",
    "//p[@id='c13']/text()",
    "//p[@id='c14']/node()",
    "//p[@id='c14']/text()",
    "//p[@id='c15']/node()",
    "//p[@id='c15']/text()",
    "//p[@id='c16']/node()",
    "//p[@id='c16']/text()",
    "//processing-instruction()",
    "count(//processing-instruction())",
    "//text()[preceding-sibling::comment()]",
    "//text()[following-sibling::node()[1][self::comment()]]",
    "id('c1')/comment()",
    "string(//body)",
    "//span/following-sibling::comment()",
    "//em/preceding-sibling::comment()",
    "//em/preceding-sibling::node()",
    "//div[@id='d1']/node()",
    "//div[@id='d1']/node()[last()]",
    "//div[@id='d1']/comment()[last()]",
    "//div[@id='d1']/text()",
    "//table//comment()",
    "//table//node()",
    "//ul/node()",
    "//li/preceding-sibling::comment()",
    "//li/following-sibling::node()[1]",
    "//select/node()",
    "//textarea/node()",
    "//script/node()",
    "//style/text()",
    [["css", "p:empty"], ["xpath", "@id"]],
    [["css", "#d1 ::text"]],
    [["css", "#d1::text"]],
    [["css", "#c1::text"]],
    [["css", "#d1 > *"]],
    [["css", "li:first-child::text"]],
    [["css", "li:nth-child(2)::text"]],
    [["xpath", "//p"], ["xpath", "comment()"]],
    [["xpath", "//p"], ["xpath", "string()"]],
    [["xpath", "//comment()"], ["xpath", "string()"]],
    [["xpath", "//comment()"], ["xpath", ".."]],
    [["xpath", "//comment()"], ["xpath", "following-sibling::node()[1]"]],
    [["xpath", "//comment()"], ["xpath", "preceding-sibling::node()[1]"]],
]

PAGE_CASES["comments_tail.html"] = [
    "/node()",
    "/comment()",
    "//html/node()",
    "//html/comment()",
    "//body/node()",
    "//comment()",
    "count(//comment())",
    "//comment()/following-sibling::node()",
    "//comment()/preceding-sibling::node()",
]

PAGE_CASES["css.html"] = [
    [["css", ":checked"]],
    [["css", "input:checked"]],
    [["css", "option:checked"]],
    [["css", ":checked::attr(id)"]],
    [["css", ":disabled::attr(id)"]],
    [["css", ":enabled::attr(id)"]],
    [["css", "input:enabled::attr(id)"]],
    [["css", "option:disabled::attr(id)"]],
    [["css", "fieldset:disabled::attr(id)"]],
    [["css", "button:enabled::attr(id)"]],
    [["css", ":link::attr(id)"]],
    [["css", "a:link"]],
    [["css", ":visited"]],
    [["css", "a:hover"]],
    [["css", ":active"]],
    [["css", ":focus"]],
    [["css", ":target"]],
    [["css", ":lang(fr)::attr(id)"]],
    [["css", "span:lang(fr)::attr(id)"]],
    [["css", ":lang(de)::attr(id)"]],
    [["css", ":lang(en)::attr(id)"]],
    [["css", "p:lang(EN)::attr(id)"]],
    [["css", ":lang(en-us)::attr(id)"]],
    [["css", "span:lang(de-AT)"]],
    [["css", "p:contains('12')::attr(id)"]],
    [["css", "p:contains(hello)::attr(id)"]],
    [["css", "li:contains('two')"]],
    [["css", ":contains('Price')::attr(id)"]],
    [["css", "li:contains(\"1\")::text"]],
    [["css", "*::text"]],
    [["css", "#top *::text"]],
    [["css", "#top ::text"]],
    [["css", "#top::text"]],
    [["css", "#top > *::text"]],
    [["css", "div *::text"]],
    [["css", "li *::text"]],
    [["css", "ul *::text"]],
    [["css", "#list *::text"]],
    [["css", "::attr(id)"]],
    [["css", "*::attr(id)"]],
    [["css", "::text"]],
    [["css", " ::text"]],
    [["css", "#list ::attr(class)"]],
    [["css", "li::attr(class)"]],
    [["css", "p:empty::attr(id)"]],
    [["css", "p:not(:empty)::attr(id)"]],
    [["css", "li:first-child::text"]],
    [["css", "li:last-child::text"]],
    [["css", "li:nth-child(2)::text"]],
    [["css", "li:nth-of-type(odd)::text"]],
    [["css", "li:only-child"]],
    [["css", "em:only-of-type::text"]],
    [["css", "li:first-of-type::text"]],
    [["css", "li:last-of-type::text"]],
    [["css", "html:root::attr(lang)"]],
    [["css", ":root"]],
    [["css", "li:nth-last-child(1)::text"]],
    [["css", "li:not(.x)::text"]],
    [["css", "ul:has(> li.x)::attr(id)"]],
    [["css", "li:is(.x, :first-child)::text"]],
    [["css", "li:where(.x)::text"]],
    [["css", "input[type=checkbox]:not(:checked)::attr(id)"]],
    [["css", "form :disabled::attr(id)"]],
    [["css", "a[href"]],
    [["css", "a::text::attr(x)"]],
    [["css", "a::foo"]],
    [["css", "::first-line"]],
    [["css", "a:nth-child("]],
    [["css", "a:unknown-pseudo"]],
    [["css", ":lang()"]],
    [["css", ":contains()"]],
    [["css", ":contains(a, b)"]],
    [["css", "a >"]],
    [["css", "> a"]],
    [["css", "a,,b"]],
    [["css", ""]],
    [["css", "   "]],
    [["css", "#"]],
    [["css", "."]],
    [["css", "a::attr()"]],
    [["css", "a::attr(x y)"]],
    [["css", "a:has()"]],
    [["css", "!a"]],
    [["css", "ul"], ["css", ":scope > li::text"]],
    [["css", "#top"], ["css", ":scope > b::text"]],
    [["css", ":scope > body > div::attr(id)"]],
    [["css", "form"], ["css", ":scope > input::attr(id)"]],
    [["css", "#list"], ["css", "li:first-child::text"]],
    [["xpath", "//ul"], ["css", ":scope li::text"]],
    [["css", "div"], ["css", "::text"]],
    [["css", "p"], ["css", ":scope::attr(id)"]],
]

PAGE_CASES["text.html"] = [
    "//p[@id='p1']/text()",
    "//p[@id='p1']//text()",
    "//p[@id='p1']/node()",
    "string(//p[@id='p1'])",
    "normalize-space(//p[@id='p1'])",
    "//p[@id='p1']/text()[2]",
    "//p[@id='p1']/text()[last()]",
    "//p[@id='p1']/node()[3]",
    "//p[@id='p1']/child::node()[self::text()][2]",
    "//p[@id='p1']/*",
    "//p[@id='p1']/*/text()",
    "//p[@id='p1']//*/text()",
    "//p[@id='p1']/i/node()",
    "//p[@id='p1']/i/span/following-sibling::node()",
    "//p[@id='p1']/i/span/preceding-sibling::node()",
    "//p[@id='p1']/b/following::text()",
    "//p[@id='p1']/b/preceding::text()[1]",
    "//p[@id='p1']/b/preceding::text()",
    "//p[@id='p1']/text()[contains(., 'and')]",
    "//p[@id='p1']/text()[. = ' and ']",
    "//p[@id='p1'][contains(text(), 'end')]/@id",
    "//p[@id='p1'][text()[contains(., 'end')]]/@id",
    "//p[contains(., 'nested')]/@id",
    "//p[contains(text(), 'nested')]/@id",
    "//*[text()='nested']",
    "//*[.='nested']",
    "//text()[. = 'nested']/..",
    "//text()[contains(., 'end')]/parent::*/@id",
    "//text()[contains(., 'end')]/ancestor::*[1]",
    "//p[@id='p2']/text()",
    "normalize-space(//p[@id='p2'])",
    "string-length(//p[@id='p2'])",
    "string-length(normalize-space(//p[@id='p2']))",
    "//p[@id='p3']/text()",
    "normalize-space(//p[@id='p3'])",
    "translate(normalize-space(//p[@id='p3']), ' ', '_')",
    "//p[@id='p4']/text()",
    "//p[@id='p4']/node()",
    "string(//p[@id='p4'])",
    "//p[@id='p5']/text()",
    "//p[@id='p5']/br",
    "//p[@id='p5']/br/following-sibling::text()",
    "//p[@id='p5']/br[1]/following-sibling::text()[1]",
    "//p[@id='p5']/br[2]/preceding-sibling::text()[1]",
    "//p[@id='p5']/text()[preceding-sibling::br]",
    "//p[@id='p6']/text()",
    "string-length(//p[@id='p6'])",
    "contains(//p[@id='p6'], '&')",
    "contains(//p[@id='p6'], '\u00a0')",
    "substring-after(//p[@id='p6'], '\"')",
    "//p[@id='p7']/text()",
    "//p[@id='p7']/node()",
    "string(//p[@id='p7'])",
    "//p[@id='p8']/text()",
    "//p[not(node())]/@id",
    "//p[not(normalize-space())]/@id",
    "//p[normalize-space()][not(*)]/@id",
    "//p[. = '']/@id",
    "//p[@id='p9']/text()",
    "count(//p[@id='p9']//text())",
    "//p[@id='p9'][contains(., 'word word word word')]/@id",
    "//p[@id='p10']/text()",
    r"re:match(//p[@id='p10'], '-?\d+(\.\d+)?', 'g')",
    r"re:match(//p[@id='p10'], '(\d+) (\w+)')",
    r"re:match(//p[@id='p10'], '(\d+) (\w+)', 'g')",
    r"re:replace(//p[@id='p10'], '\d', 'g', '#')",
    r"re:replace(//p[@id='p10'], '\d+', '', 'N')",
    r"re:replace(//p[@id='p10'], '(\d+)', 'g', '<$1>')",
    "re:test(//p[@id='p10'], 'eur', 'i')",
    "re:test(//p[@id='p10'], 'eur')",
    r"re:test(//p[@id='p10'], '^Price: \d+ EUR')",
    r"//p[re:test(., '^\s+\S')]/@id",
    r"//p[re:test(., '\s$')]/@id",
    "//pre/text()",
    "string-length(//pre)",
    "normalize-space(//pre)",
    "//div[@id='ws']/text()",
    "//div[@id='ws']/node()",
    "count(//div[@id='ws']/node())",
    "//div[@id='ws']/span[2]/preceding-sibling::text()[1]",
    "string(//div[@id='ws'])",
    "normalize-space(//div[@id='ws'])",
    "//div[@id='inline']/text()",
    "string(//div[@id='inline'])",
    "//div[@id='inline']/span[. = 'b']/following-sibling::node()[1]",
    "//div[@id='inline']/span[. = 'c']/following-sibling::node()[1]",
    "//h2//text()",
    "//h2/text()",
    "normalize-space(//h2)",
    "//h2/node()[last()]",
    "//blockquote//text()",
    "//q/text()",
    "//q/ancestor::*/@id",
    "//q/ancestor::*[2]/@id",
    "//text()[ancestor::blockquote]",
    "//body//text()[normalize-space()][1]",
    "(//body//text()[normalize-space()])[1]",
    "(//body//text()[normalize-space()])[last()]",
    "(//text())[position() < 4]",
    "count(//text()[normalize-space()])",
    "count(//body//text()[not(normalize-space())])",
    "name(//text()[not(normalize-space())]/..)",
    "//text()[string-length() = 1]",
    "//*[text()][not(*)]/@id",
    "//*[count(text()) > 2]/@id",
    "//*[count(node()) > count(*)]/@id",
    "//text()[. = ' ']/following-sibling::*[1]",
    "//text()[preceding-sibling::b and following-sibling::i]",
    "//p/text()[1]",
    "(//p/text())[1]",
    "//p/text()[last()]",
    "//span/following-sibling::text()",
    "//span/following-sibling::text()[1]",
    [["xpath", "//p"], ["xpath", "./text()"]],
    [["xpath", "//p"], ["xpath", "string-length()"]],
    [["xpath", "//p[@id='p1']//text()"], ["xpath", "."]],
    [["xpath", "//p[@id='p1']//text()"], ["xpath", ".."]],
    [["xpath", "//p[@id='p1']//text()"], ["xpath", "string()"]],
    [["css", "p#p1 ::text"]],
    [["css", "p#p1::text"]],
    [["css", "#ws span::text"]],
    [["css", "#ws::text"]],
    [["xpath", "//p[@id='p1']/*"], ["xpath", "following-sibling::text()[1]"]],
    [["xpath", "//p[@id='p1']/*"], ["xpath", "string()"]],
    [["xpath", "//div[@id='ws']/span"], ["xpath", "preceding-sibling::node()[1]"]],
    [["xpath", "//p"], ["xpath", "re:test(., '\\d')"]],
    [["xpath", "//p"], ["xpath", "re:replace(., '\\s+', 'g', ' ')"]],
    [["xpath", "//p[@id='p10']"], ["xpath", "re:match(., '\\d+', 'g')"]],
    [["xpath", "re:match(//p[@id='p10'], '\\d+', 'g')"], ["xpath", "text()"]],
    [["xpath", "re:match(//p[@id='p10'], '\\d+', 'g')"], ["xpath", "string()"]],
    [["xpath", "re:match(//p[@id='p10'], '\\d+', 'g')"], ["xpath", ".."]],
    [["xpath", "re:match(//p[@id='p10'], '\\d+', 'g')"], ["xpath", "name()"]],
    X("//p[contains(., $w)]/@id", {"w": "word"}),
    X("//p[@id=$i]//text()", {"i": "p1"}),
    X("normalize-space(//p[@id=$i])", {"i": "p3"}),
]

# Page-independent cases run on this page; malformed expressions on that one.
CONSTANTS_PAGE = "select/xpath_pages/text.html"
ERRORS_PAGE = "select/xpath_pages/links.html"


# ---------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------

def load_pages() -> list[dict]:
    pages = []
    for path in sorted(OWN_DIR.glob("*.html")):
        pages.append({
            "page": path.relative_to(DATA).as_posix(),
            "url": f"http://example.com/xpath/{path.name}",
            "encoding": "utf-8",
            "content_type": None,
            "body": path.read_bytes(),
            "specific": PAGE_CASES.get(path.name, []),
        })
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    for entry in manifest["pages"]:
        if not entry["page"].startswith("pages/scrapy/"):
            continue
        path = DATA / "html" / entry["page"]
        body = path.read_bytes()
        pages.append({
            "page": path.relative_to(DATA).as_posix(),
            "url": entry["url"],
            "encoding": None,
            "content_type": entry["content_type"],
            "body": body,
            "specific": [],
        })
    missing = set(PAGE_CASES) - {Path(p["page"]).name for p in pages}
    assert not missing, missing
    return pages


def make_response(page: dict) -> HtmlResponse:
    kwargs = {}
    if page["encoding"] is not None:
        kwargs["encoding"] = page["encoding"]
    if page["content_type"] is not None:
        kwargs["headers"] = {"Content-Type": page["content_type"]}
    return HtmlResponse(url=page["url"], body=page["body"], **kwargs)


def smart_evaluator(query: str, namespaces: dict) -> etree.XPath:
    """The evaluator parsel builds (parsel.selector._get_xpath_evaluator), but
    with smart strings on, so text and attribute results can be told apart."""
    exslt = parsel.selector._EXSLT_NAMESPACES
    nsp = {
        prefix: uri
        for prefix, uri in namespaces.items()
        if uri not in exslt or f"{prefix}:" in query
    }
    return etree.XPath(query, namespaces=nsp, smart_strings=True)


def top_of(el):
    while True:
        parent = el.getparent()
        if parent is None:
            return el
        el = parent


def doc_index(el, docroot):
    """Document-order index of an element among all elements (0 = <html>), or
    None for an element outside the document (e.g. re:match's <match>)."""
    if el is None or top_of(el) is not docroot:
        return None
    return int(el.xpath("count(preceding::*) + count(ancestor::*)"))


def parsel_value(x) -> str:
    """What parsel's Selector.get() returns for an lxml result ``x``."""
    if isinstance(x, etree._Element):
        return etree.tostring(x, method="html", encoding="unicode", with_tail=False)
    if x is True:
        return "1"
    if x is False:
        return "0"
    return str(x)


def classify(x, docroot) -> dict:
    info: dict = {}
    if isinstance(x, bool):
        info["kind"] = "boolean"
    elif isinstance(x, float):
        info["kind"] = "number"
    elif isinstance(x, tuple):
        info["kind"] = "other"
        info["namespace_node"] = [x[0], x[1]]
    elif isinstance(x, etree._Comment):
        info["kind"] = "comment"
        info["parent_index"] = doc_index(x.getparent(), docroot)
    elif isinstance(x, etree._Element) and isinstance(x.tag, str):
        info["kind"] = "element"
        info["tag"] = x.tag
        info["index"] = doc_index(x, docroot)
    elif isinstance(x, str):
        if getattr(x, "is_attribute", False):
            info["kind"] = "attr"
            info["attr_name"] = x.attrname
            info["parent_index"] = doc_index(x.getparent(), docroot)
        elif getattr(x, "is_text", False) or getattr(x, "is_tail", False):
            info["kind"] = "text"
            parent = x.getparent()
            if x.is_tail and parent is not None:
                parent = parent.getparent()
            info["parent_index"] = doc_index(parent, docroot)
        else:
            info["kind"] = "string"
    else:
        info["kind"] = "other"
    info["value"] = parsel_value(x)
    return info


def step_query(response, step) -> str:
    if step[0] == "css":
        return response.selector._css2xpath(step[1])
    return step[1]


def run_case(response, chain) -> dict:
    """Run the chain through parsel; classify every step's results with lxml."""
    docroot = response.selector.root
    # parsel
    try:
        current = None
        for i, step in enumerate(chain):
            target = response if i == 0 else current
            if step[0] == "css":
                current = target.css(step[1])
            else:
                current = target.xpath(step[1], **(step[2] if len(step) > 2 else {}))
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}
    parsel_values = [sel.get() for sel in current]

    # lxml with smart strings, step by step, following parsel's rules for
    # Selectors whose root is not an element (see parsel.Selector.xpath).
    contexts = [(response.selector, None)]
    for step in chain:
        query = step_query(response, step)
        variables = step[2] if len(step) > 2 else {}
        nxt = []
        for sel, info in contexts:
            root = sel.root
            if hasattr(root, "xpath"):
                res = smart_evaluator(query, sel.namespaces)(root, **variables)
                if not isinstance(res, list):
                    res = [res]
                for x in res:
                    nxt.append((parsel.Selector(root=x, type="html"), classify(x, docroot)))
            elif isinstance(root, str) and query.strip() == ".":
                nxt.append((sel, info))
        contexts = nxt
    results = [info for _, info in contexts]
    assert [r["value"] for r in results] == parsel_values, (chain, results, parsel_values)
    return {"results": results}


def versions() -> dict:
    return {
        "parsel": parsel.__version__,
        "lxml": ".".join(map(str, etree.LXML_VERSION)),
        "libxml2": ".".join(map(str, etree.LIBXML_VERSION)),
        "scrapy": scrapy.__version__,
        "python": ".".join(map(str, sys.version_info[:3])),
    }


def as_chain(item) -> list:
    if isinstance(item, str):
        return [["xpath", item]]
    if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], dict):
        return [["xpath", item[0], item[1]]]
    return item


def main() -> None:
    pages = load_pages()
    cases = []
    seen = set()
    page_info = {}
    for page in pages:
        response = make_response(page)
        docroot = response.selector.root
        page_info[page["page"]] = {
            "url": page["url"],
            "encoding": page["encoding"],
            "content_type": page["content_type"],
            "response_encoding": response.encoding,
            "elements": int(docroot.xpath("count(//*)")),
        }
        items = list(GENERAL) + list(GENERAL_CHAINS) + list(page["specific"])
        if page["page"] == CONSTANTS_PAGE:
            items += CONSTANTS
        if page["page"] == ERRORS_PAGE:
            items += ERRORS
        for item in items:
            chain = as_chain(item)
            key = (page["page"], json.dumps(chain, sort_keys=True))
            if key in seen:
                continue
            seen.add(key)
            case = {
                "page": page["page"],
                "url": page["url"],
                "encoding": page["encoding"],
                "content_type": page["content_type"],
                "chain": chain,
            }
            if chain[0][0] == "css":
                try:
                    case["css_as_xpath"] = step_query(response, chain[0])
                except Exception:  # noqa: BLE001 - run_case records the error
                    pass
            case.update(run_case(response, chain))
            cases.append(case)

    out = {
        "description": (
            "XPath 1.0 selections recorded from parsel/Scrapy: each case applies "
            "`chain` (xpath/css steps) to scrapy.http.HtmlResponse(url, body, "
            "encoding/headers) and records the final SelectorList (value = "
            "Selector.get(), kind, document-order indexes) or the error."
        ),
        "generator": "tests/data/select/gen_xpath.py",
        "versions": versions(),
        "pages": page_info,
        "count": len(cases),
        "cases": cases,
    }
    text = json.dumps(out, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    OUT.write_text(text, encoding="utf-8", newline="\n")

    # Summary.
    kinds = collections.Counter()
    errors = 0
    empty = 0
    per_page = collections.Counter()
    for case in cases:
        per_page[case["page"]] += 1
        if "error" in case:
            errors += 1
            continue
        if not case["results"]:
            empty += 1
        for res in case["results"]:
            kinds[res["kind"]] += 1
    print(f"wrote {OUT.relative_to(DATA.parent.parent)}: {len(text.encode())} bytes")
    print(f"cases: {len(cases)}  errors: {errors}  empty results: {empty}")
    print("results per kind:", dict(sorted(kinds.items())))
    for page, n in per_page.items():
        print(f"  {page}: {n}")


if __name__ == "__main__":
    main()
