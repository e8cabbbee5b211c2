#!/usr/bin/env python3
"""Record what Scrapy 2.19's ``FormRequest.from_response`` builds from HTML forms.

Usage (from the repository root, in the reference venv):

    /work/venv-ref/bin/python tests/data/requests/gen_from_response.py

Writes from_response.json next to this script. Reference: Scrapy 2.19.0 with
lxml 6.1.3 (libxml2 2.14.6), parsel 1.12.1, cssselect 1.6.0, w3lib 2.5.0 on
CPython 3.11 (the exact versions are written into the file). Nothing in the
output is typed by hand: every "result" and "error" comes from running
Scrapy. Running the script twice gives the same bytes.

In Scrapy 2.19 ``FormRequest.from_response()`` is deprecated: every call emits
``ScrapyDeprecationWarning: FormRequest.from_response() is deprecated. Use the
form2request library instead.``  The recorder checks that each call emits
exactly that warning (its text is stored under "deprecation_warning"), and
suppresses it; any *other* warning would be stored in the case as "warnings".

Each case is

    {"name", "url", "body", "encoding", "kwargs", "result"} or {..., "error"}

* body: the HTML page as text. The response is
  ``HtmlResponse(url, body=body.encode(encoding), encoding=encoding)``; those bytes
  are recorded too, as ``body_hex``.
  "encoding" is a *Python codec name* ("utf-8", "latin-1", "cp1251",
  "shift_jis", ...). Note that Scrapy decodes the page with w3lib's resolved
  encoding (latin-1 -> cp1252, shift_jis -> cp932, as a browser would) but
  encodes the form data with the label as given (``req.encoding ==
  encoding``), so a few cases fail with UnicodeEncodeError on purpose.
* kwargs: the keyword arguments given to ``from_response`` with Scrapy's own
  names (formname, formid, formnumber, formxpath, formcss, formdata,
  clickdata, dont_click, method, url). A key that is absent was not passed; a
  key with value null was passed as None (only "method": null, which Scrapy
  treats differently from an absent method).
  - formdata as a JSON object is passed as a dict, *in the key order of the
    file* (sorted: the recorder builds the dict in sorted key order, so
    sort_keys=True does not hide the order Scrapy saw). Values are a string,
    a list of strings, or null (None: removes the field).
  - formdata as a JSON array is passed as a list of (key, value) tuples
    (repeated keys allowed); each [k, v] pair becomes a tuple, other
    elements are passed unchanged. Any other JSON value is passed as is.
  - clickdata is a dict, in sorted key order as well ("nr" is an int).
* result: {"method": req.method, "url": req.url,
  "body": req.body decoded as latin-1 (the urlencoded body is ASCII),
  "content_type": the Content-Type header (latin-1) or null,
  "pairs": [[k, v], ...] parsed from the body when the method is POST, else
  from the query of req.url, with urllib.parse.parse_qsl(...,
  keep_blank_values=True, encoding=req.encoding)}. For a GET form with no
  fields at all Scrapy leaves the action's own query in place, so "pairs"
  then shows that query.
* error: "<ExceptionType>: <message>". In the "Multiple elements found" error
  the lxml element reprs carry id() values; the hex id is replaced by "ID"
  ("<InputElement ID name='x' type='submit'>", "<Element button at 0xID>").

Many cases port the HTML snippets and keyword arguments of Scrapy's own tests
(tests/test_http_request_form.py, names starting "scrapy_"); the expected
values are still those produced by running Scrapy here, not the tests'
asserts.
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import cssselect
import lxml
import lxml.etree
import parsel
import scrapy
import w3lib
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.http import FormRequest, HtmlResponse

HERE = Path(__file__).resolve().parent
URL = "http://www.example.com/this/list.html"
EX = "http://example.com"

CASES: list[dict] = []


def add(name: str, body: str, kw: dict | None = None, *, url: str = URL,
        encoding: str = "utf-8") -> None:
    CASES.append({"name": name, "url": url, "body": body, "encoding": encoding,
                  "kwargs": dict(kw or {})})


def page(inner: str) -> str:
    return f"<html><body>{inner}</body></html>"


# ---------------------------------------------------------------------------
# Ports of Scrapy's tests (tests/test_http_request_form.py)
# ---------------------------------------------------------------------------
HIDDEN3 = """<form action="post.php" method="POST">
            <input type="hidden" name="test" value="val1">
            <input type="hidden" name="test" value="val2">
            <input type="hidden" name="test2" value="xxx">
            </form>"""
add("scrapy_post", HIDDEN3, {"formdata": {"one": ["two", "three"], "six": "seven"}})
add("scrapy_post_nonascii_utf8", """<form action="post.php" method="POST">
            <input type="hidden" name="test \u00a3" value="val1">
            <input type="hidden" name="test \u00a3" value="val2">
            <input type="hidden" name="test2" value="xxx \u00b5">
            </form>""", {"formdata": {"one": ["two", "three"], "six": "seven"}})
add("scrapy_post_nonascii_latin1", """<form action="post.php" method="POST">
            <input type="hidden" name="test \u00a3" value="val1">
            <input type="hidden" name="test \u00a3" value="val2">
            <input type="hidden" name="test2" value="xxx \u00b5">
            </form>""", {"formdata": {"one": ["two", "three"], "six": "seven"}},
    encoding="latin-1")
add("scrapy_duplicate_form_key", "<form></form>",
    {"method": "GET", "formdata": [["foo", "bar"], ["foo", "baz"]]})
TWO_HIDDEN_GETPHP = """<form action="get.php" method="POST">
            <input type="hidden" name="one" value="1">
            <input type="hidden" name="two" value="3">
            </form>"""
add("scrapy_override_duplicate_form_key", TWO_HIDDEN_GETPHP,
    {"formdata": [["two", "2"], ["two", "4"]]}, url=EX)
add("scrapy_get", HIDDEN3.replace('"post.php" method="POST"', '"get.php" method="GET"'),
    {"formdata": {"one": ["two", "three"], "six": "seven"}})
add("scrapy_override_params", TWO_HIDDEN_GETPHP, {"formdata": {"two": "2"}}, url=EX)
add("scrapy_drop_params", TWO_HIDDEN_GETPHP, {"formdata": {"two": None}}, url=EX)
APP = """<html><body>
            <form action="/app"></form>
            </body></html>"""
add("scrapy_override_method_none_given", APP, url=EX)
add("scrapy_override_method_post", APP, {"method": "POST"}, url=EX)
add("scrapy_override_method_explicit_none", APP, {"method": None}, url=EX)
add("scrapy_override_url_absolute", APP, {"url": "http://foo.bar/absolute"}, url=EX)
add("scrapy_override_url_relative", APP, {"url": "/relative"}, url=EX)
add("scrapy_case_insensitive_types", """<form action="get.php" method="GET">
            <input type="SuBmIt" name="clickable1" value="clicked1">
            <input type="iMaGe" name="i1" src="http://my.image.org/1.jpg">
            <input type="submit" name="clickable2" value="clicked2">
            </form>""", url=EX)
CLICK2 = """<form action="get.php" method="GET">
            <input type="submit" name="clickable1" value="clicked1">
            <input type="hidden" name="one" value="1">
            <input type="hidden" name="two" value="3">
            <input type="submit" name="clickable2" value="clicked2">
            </form>"""
add("scrapy_submit_first_clickable", CLICK2, {"formdata": {"two": "2"}}, url=EX)
add("scrapy_submit_not_first_clickable", CLICK2,
    {"formdata": {"two": "2"}, "clickdata": {"name": "clickable2"}}, url=EX)
add("scrapy_dont_submit_image_as_input", """<form>
            <input type="hidden" name="i1" value="i1v">
            <input type="image" name="i2" src="http://my.image.org/1.jpg">
            <input type="submit" name="i3" value="i3v">
            </form>""", {"dont_click": True}, url=EX)
add("scrapy_dont_submit_reset_as_input", """<form>
            <input type="hidden" name="i1" value="i1v">
            <input type="text" name="i2" value="i2v">
            <input type="reset" name="resetme">
            <input type="submit" name="i3" value="i3v">
            </form>""", {"dont_click": True}, url=EX)
add("scrapy_clickdata_does_not_ignore_image", """<form>
            <input type="text" name="i1" value="i1v">
            <input id="image" name="i2" type="image" value="i2v" alt="Login" src="http://my.image.org/1.jpg">
            </form>""", url=EX)
add("scrapy_multiple_clickdata", """<form action="get.php" method="GET">
            <input type="submit" name="clickable" value="clicked1">
            <input type="submit" name="clickable" value="clicked2">
            <input type="hidden" name="one" value="clicked1">
            <input type="hidden" name="two" value="clicked2">
            </form>""", {"clickdata": {"name": "clickable", "value": "clicked2"}}, url=EX)
add("scrapy_unicode_clickdata", """<form action="get.php" method="GET">
            <input type="submit" name="price in \u00a3" value="\u00a3 1000">
            <input type="submit" name="price in \u20ac" value="\u20ac 2000">
            <input type="hidden" name="poundsign" value="\u00a3">
            <input type="hidden" name="eurosign" value="\u20ac">
            </form>""", {"clickdata": {"name": "price in \u00a3"}}, url=EX)
add("scrapy_unicode_clickdata_latin1", """<form action="get.php" method="GET">
            <input type="submit" name="price in \u00a3" value="\u00a3 1000">
            <input type="submit" name="price in \u00a5" value="\u00a5 2000">
            <input type="hidden" name="poundsign" value="\u00a3">
            <input type="hidden" name="yensign" value="\u00a5">
            </form>""", {"clickdata": {"name": "price in \u00a5"}}, url=EX,
    encoding="latin-1")
add("scrapy_multiple_forms_clickdata", """<form name="form1">
            <input type="submit" name="clickable" value="clicked1">
            <input type="hidden" name="field1" value="value1">
            </form>
            <form name="form2">
            <input type="submit" name="clickable" value="clicked2">
            <input type="hidden" name="field2" value="value2">
            </form>
            """, {"formname": "form2", "clickdata": {"name": "clickable"}}, url=EX)
add("scrapy_override_clickable",
    """<form><input type="submit" name="clickme" value="one"> </form>""",
    {"formdata": {"clickme": "two"}, "clickdata": {"name": "clickme"}}, url=EX)
add("scrapy_dont_click", CLICK2, {"dont_click": True}, url=EX)
add("scrapy_ambiguous_clickdata", "\n" + CLICK2, {"clickdata": {"type": "submit"}}, url=EX)
add("scrapy_non_matching_clickdata", """<form>
            <input type="submit" name="clickable" value="clicked">
            </form>""", {"clickdata": {"nonexistent": "notme"}}, url=EX)
add("scrapy_nr_index_clickdata", """<form>
            <input type="submit" name="clickable1" value="clicked1">
            <input type="submit" name="clickable2" value="clicked2">
            </form>
            """, {"clickdata": {"nr": 1}}, url=EX)
add("scrapy_invalid_nr_index_clickdata", """<form>
            <input type="submit" name="clickable" value="clicked">
            </form>
            """, {"clickdata": {"nr": 1}}, url=EX)
add("scrapy_errors_noform", "<html></html>", url=EX)
add("scrapy_invalid_html5", '<!DOCTYPE html><body></html><form>'
    '<input type="text" name="foo" value="xxx">'
    '</form></body></html>', {"formdata": {"bar": "buz"}}, url=EX)
HIDDEN3_GET = HIDDEN3.replace('"post.php" method="POST"', '"get.php" method="GET"')
add("scrapy_errors_formnumber", HIDDEN3_GET, {"formnumber": 1}, url=EX)
add("scrapy_noformname", """<form action="post.php" method="POST">
            <input type="hidden" name="one" value="1">
            <input type="hidden" name="two" value="2">
            </form>""", {"formdata": {"two": "3"}}, url=EX)
TWO_FORMS_NAME = """<form action="post.php" method="POST">
            <input type="hidden" name="one" value="1">
            <input type="hidden" name="two" value="2">
            </form>
            <form name="form2" action="post.php" method="POST">
            <input type="hidden" name="three" value="3">
            <input type="hidden" name="four" value="4">
            </form>"""
add("scrapy_formname_exists", TWO_FORMS_NAME, {"formname": "form2"}, url=EX)
NAMED12 = """<form name="form1" action="post.php" method="POST">
            <input type="hidden" name="one" value="1">
            </form>
            <form name="form2" action="post.php" method="POST">
            <input type="hidden" name="two" value="2">
            </form>"""
add("scrapy_formname_nonexistent", NAMED12, {"formname": "form3"}, url=EX)
add("scrapy_formname_errors_formnumber", NAMED12, {"formname": "form3", "formnumber": 2}, url=EX)
add("scrapy_formid_exists", TWO_FORMS_NAME.replace('name="form2"', 'id="form2"'),
    {"formid": "form2"}, url=EX)
add("scrapy_formname_nonexistent_fallback_formid",
    TWO_FORMS_NAME.replace('name="form2"', 'id="form2" name="form2"'),
    {"formname": "form3", "formid": "form2"}, url=EX)
ID12 = NAMED12.replace('name="form', 'id="form')
add("scrapy_formid_nonexistent", ID12, {"formid": "form3"}, url=EX)
add("scrapy_formid_errors_formnumber", ID12, {"formid": "form3", "formnumber": 2}, url=EX)
add("scrapy_select", """<form>
            <select name="i1">
                <option value="i1v1">option 1</option>
                <option value="i1v2" selected>option 2</option>
            </select>
            <select name="i2">
                <option value="i2v1">option 1</option>
                <option value="i2v2">option 2</option>
            </select>
            <select>
                <option value="i3v1">option 1</option>
                <option value="i3v2">option 2</option>
            </select>
            <select name="i4" multiple>
                <option value="i4v1">option 1</option>
                <option value="i4v2" selected>option 2</option>
                <option value="i4v3" selected>option 3</option>
            </select>
            <select name="i5" multiple>
                <option value="i5v1">option 1</option>
                <option value="i5v2">option 2</option>
            </select>
            <select name="i6"></select>
            <select name="i7"/>
            </form>""", url=EX)
add("scrapy_radio", """<form>
            <input type="radio" name="i1" value="i1v1">
            <input type="radio" name="i1" value="iv2" checked>
            <input type="radio" name="i2" checked>
            <input type="radio" name="i2">
            <input type="radio" name="i3" value="i3v1">
            <input type="radio" name="i3">
            <input type="radio" value="i4v1">
            <input type="radio">
            </form>""", url=EX)
add("scrapy_checkbox", """<form>
            <input type="checkbox" name="i1" value="i1v1">
            <input type="checkbox" name="i1" value="iv2" checked>
            <input type="checkbox" name="i2" checked>
            <input type="checkbox" name="i2">
            <input type="checkbox" name="i3" value="i3v1">
            <input type="checkbox" name="i3">
            <input type="checkbox" value="i4v1">
            <input type="checkbox">
            </form>""", url=EX)
add("scrapy_input_text", """<form>
            <input type="text" name="i1" value="i1v1">
            <input type="text" name="i2">
            <input type="text" value="i3v1">
            <input type="text">
            <input name="i4" value="i4v1">
            </form>""", url=EX)
add("scrapy_input_hidden", """<form>
            <input type="hidden" name="i1" value="i1v1">
            <input type="hidden" name="i2">
            <input type="hidden" value="i3v1">
            <input type="hidden">
            </form>""", url=EX)
add("scrapy_textarea", """<form>
            <textarea name="i1">i1v</textarea>
            <textarea name="i2"></textarea>
            <textarea name="i3"/>
            <textarea>i4v</textarea>
            </form>""", url=EX)
add("scrapy_descendants", """<form>
            <div>
              <fieldset>
                <input type="text" name="i1">
                <select name="i2">
                    <option value="v1" selected>
                </select>
              </fieldset>
              <input type="radio" name="i3" value="i3v2" checked>
              <input type="checkbox" name="i4" value="i4v2" checked>
              <textarea name="i5"></textarea>
              <input type="hidden" name="h1" value="h1v">
              </div>
            <input type="hidden" name="h2" value="h2v">
            </form>""", url=EX)
XP2 = """<form action="post.php" method="POST">
            <input type="hidden" name="one" value="1">
            <input type="hidden" name="two" value="2">
            </form>
            <form action="post2.php" method="POST">
            <input type="hidden" name="three" value="3">
            <input type="hidden" name="four" value="4">
            </form>"""
add("scrapy_xpath_form", XP2, {"formxpath": "//form[@action='post.php']"}, url=EX)
add("scrapy_xpath_inner_input", XP2, {"formxpath": "//form/input[@name='four']"}, url=EX)
add("scrapy_xpath_no_match", XP2, {"formxpath": "//form/input[@name='abc']"}, url=EX)
add("scrapy_unicode_xpath", '<form name="\u044a"></form>',
    {"formxpath": "//form[@name='\u044a']"}, url=EX)
add("scrapy_unicode_xpath_no_match", '<form name="\u044a"></form>',
    {"formxpath": "//form[@name='\u03b1']"}, url=EX)
BTN_PAGE = """<form action="post.php" method="POST">
            <input type="hidden" name="test1" value="val1">
            <input type="hidden" name="test2" value="val2">
            {}
            </form>"""
add("scrapy_button_submit",
    BTN_PAGE.format('<button type="submit" name="button1" value="submit1">Submit</button>'))
add("scrapy_button_notype",
    BTN_PAGE.format('<button name="button1" value="submit1">Submit</button>'))
add("scrapy_submit_novalue",
    BTN_PAGE.format('<input type="submit" name="button1">Submit</button>'))
add("scrapy_button_novalue",
    BTN_PAGE.format('<button type="submit" name="button1">Submit</button>'))
add("scrapy_html_base_form_action", """
            <html>
                <head>
                    <base href=" http://b.com/">
                </head>
                <body>
                    <form action="test_form">
                    </form>
                </body>
            </html>
            """, url="http://a.com/")
add("scrapy_spaces_in_action", '<body><form action=" path\n"></form></body>', url=EX)
add("scrapy_css_form", XP2, {"formcss": "form[action='post.php']"}, url=EX)
add("scrapy_css_inner_input", XP2, {"formcss": "input[name='four']"}, url=EX)
add("scrapy_css_no_match", XP2, {"formcss": "input[name='abc']"}, url=EX)
for m in ("GET", "POST", "UNKNOWN"):
    add(f"scrapy_valid_form_methods_{m.lower()}",
        f'<form action="post.php" method="{m}"><input type="hidden" name="one" value="1"></form>',
        url=EX)
SUBMIT_PAGE = """<html><body>
            <form action="/submit" method="post">
                <input type="text" name="test" value="value">
            </form>
            </body></html>"""
add("scrapy_invalid_formdata_int", SUBMIT_PAGE, {"formdata": 123}, url=EX)
add("scrapy_invalid_formdata_one_element", SUBMIT_PAGE, {"formdata": ["a"]}, url=EX)
add("scrapy_xpath_no_form_parent", """<html><body>
                <div id="outside-form">
                    <p>This paragraph is not inside a form.</p>
                </div>
                <form action="/submit" method="post">
                    <input type="text" name="inside-form" value="">
                </form>
            </body></html>""", {"formxpath": '//div[@id="outside-form"]/p'}, url=EX)

# ---------------------------------------------------------------------------
# Form selection
# ---------------------------------------------------------------------------
THREE = page("""
<div class="top"><form id="search" name="s" action="/search" method="get">
 <input name="q" value="first"><input type="submit" name="go" value="Search"></form></div>
<div class="login"><form id="login" name="login" class="auth main" action="/login" method="post">
 <input name="user" value="u"><input type="password" name="pw" value="p">
 <button name="do" value="in">Log in</button></form></div>
<form name="s" id="third" action="/third" method="post"><input name="t" value="3"></form>
""")
add("sel_default_first", THREE)
add("sel_formname", THREE, {"formname": "login"})
add("sel_formname_duplicate_first_wins", THREE, {"formname": "s"})
add("sel_formid", THREE, {"formid": "third"})
add("sel_formname_beats_formid", THREE, {"formname": "login", "formid": "third"})
add("sel_formname_beats_formnumber", THREE, {"formname": "login", "formnumber": 2})
add("sel_formid_beats_formxpath", THREE, {"formid": "login", "formxpath": "//form[3]"})
add("sel_formname_missing_falls_to_formnumber", THREE, {"formname": "nope", "formnumber": 2})
add("sel_formid_missing_falls_to_formxpath", THREE,
    {"formid": "nope", "formxpath": "//form[@action='/third']"})
add("sel_formid_case_sensitive", THREE, {"formid": "LOGIN"})
add("sel_formnumber_0", THREE, {"formnumber": 0})
add("sel_formnumber_1", THREE, {"formnumber": 1})
add("sel_formnumber_2", THREE, {"formnumber": 2})
add("sel_formnumber_3_out_of_range", THREE, {"formnumber": 3})
add("sel_formnumber_negative_1", THREE, {"formnumber": -1})
add("sel_formnumber_negative_4", THREE, {"formnumber": -4})
add("sel_formxpath_complex", THREE,
    {"formxpath": "//div[@class='login']//form[contains(@action, 'log') and @method='post']"})
add("sel_formxpath_position", THREE, {"formxpath": "(//form)[3]"})
add("sel_formxpath_inside_input", THREE, {"formxpath": "//input[@name='pw']"})
add("sel_formxpath_inside_button", THREE, {"formxpath": "//button[@value='in']"})
add("sel_formxpath_matches_several_first_taken", THREE, {"formxpath": "//input"})
add("sel_formxpath_first_match_outside_form", THREE, {"formxpath": "//div | //input"})
add("sel_formxpath_no_match", THREE, {"formxpath": "//form[@id='zzz']"})
add("sel_formxpath_no_match_ignores_formnumber", THREE,
    {"formxpath": "//form[@id='zzz']", "formnumber": 1})
add("sel_formxpath_attribute_node", THREE, {"formxpath": "(//form)[2]/@action"})
add("sel_formxpath_text_node", THREE, {"formxpath": "//button[@value='in']/text()"})
add("sel_formxpath_number_result", THREE, {"formxpath": "count(//form)"})
add("sel_formxpath_syntax_error", THREE, {"formxpath": "//form[@id='x'"})
add("sel_formcss_id", THREE, {"formcss": "#login"})
add("sel_formcss_class", THREE, {"formcss": "form.main"})
add("sel_formcss_nth", THREE, {"formcss": "body > form"})
add("sel_formcss_inside_input", THREE, {"formcss": "input[name=t]"})
add("sel_formcss_no_match", THREE, {"formcss": "div.nope"})
add("sel_formcss_overrides_formxpath", THREE, {"formcss": "#third", "formxpath": "//form[1]"})
add("sel_formcss_syntax_error", THREE, {"formcss": "form[["})
add("sel_formname_with_quote", THREE, {"formname": 'a"b'})
add("sel_no_form", page("<div><input name='a' value='1'></div>"))
add("sel_no_form_formxpath", page("<p>x</p>"), {"formxpath": "//p"})
add("sel_empty_body", "")
add("sel_uppercase_tags", '<HTML><BODY><FORM ACTION="Up.php" METHOD="POST" NAME="F">'
    '<INPUT TYPE="HIDDEN" NAME="A" VALUE="1"><TEXTAREA NAME="T">x</TEXTAREA>'
    '<SELECT NAME="S"><OPTION VALUE="o">O</OPTION></SELECT></FORM></BODY></HTML>',
    {"formname": "F"})
add("sel_form_in_head", '<html><head><form action="/h"><input name="h" value="1"></form>'
    '</head><body><form action="/b"><input name="b" value="2"></form></body></html>')
add("sel_form_in_noscript", page('<noscript><form action="/ns"><input name="n" value="1">'
                                 '</form></noscript><form action="/real"><input name="r" value="2"></form>'))
add("sel_form_in_comment", page('<!-- <form action="/c"><input name="c" value="1"></form> -->'
                                '<form action="/real"><input name="r" value="2"></form>'))
add("sel_form_in_template", page('<template><form action="/t"><input name="t" value="1">'
                                 '</form></template><form action="/real"><input name="r" value="2"></form>'))

# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------
add("in_types_with_values", page("""<form action="/f" method="post">
<input type="text" name="text" value="t">
<input type="hidden" name="hidden" value="h">
<input type="password" name="password" value="p">
<input type="email" name="email" value="a@b.c">
<input type="number" name="number" value="42">
<input type="search" name="search" value="s">
<input type="tel" name="tel" value="+1 555">
<input type="url" name="url" value="http://x.y/?a=1&amp;b=2">
<input type="date" name="date" value="2024-01-02">
<input type="color" name="color" value="#ff0000">
<input type="range" name="range" value="5">
<input type="datetime-local" name="dt" value="2024-01-02T03:04">
<input type="week" name="week" value="2024-W01">
<input type="whatever" name="unknown" value="u">
</form>"""))
add("in_types_without_values", page("""<form action="/f" method="post">
<input type="text" name="text"><input type="hidden" name="hidden">
<input type="password" name="password"><input type="email" name="email">
<input type="number" name="number"><input name="notype">
<input type="range" name="range"><input type="color" name="color">
</form>"""))
add("in_no_name_or_empty_name", page("""<form method="post">
<input value="noname"><input name="" value="emptyname"><input name="ok" value="1">
<textarea>noname ta</textarea><textarea name="">empty ta</textarea>
<select><option value="x" selected>x</option></select>
<input type="checkbox" checked value="c"><input type="submit" value="Go">
</form>"""))
add("in_disabled_and_readonly", page("""<form method="post">
<input name="dis" value="d" disabled>
<input name="ro" value="r" readonly>
<input type="checkbox" name="cb" value="c" checked disabled>
<select name="sel" disabled><option value="s1">1</option><option value="s2" selected>2</option></select>
<textarea name="ta" disabled>t</textarea>
<fieldset disabled><input name="infs" value="f"></fieldset>
<input type="submit" name="sub" value="S" disabled>
</form>"""))
add("in_checkbox_variants", page("""<form method="post">
<input type="checkbox" name="c1" value="" checked>
<input type="checkbox" name="c2" checked="checked" value="x">
<input type="checkbox" name="c3" checked="false" value="y">
<input type="checkbox" name="c4" CHECKED value="z">
<input type="CHECKBOX" name="c5" value="upper" checked>
<input type="CheckBox" name="c6" value="mixed">
<input type="checkbox" name="c7" value="a" checked><input type="checkbox" name="c7" value="b" checked>
<input type="checkbox" name="c8" value=" sp ace " checked>
</form>"""))
add("in_radio_variants", page("""<form method="post">
<input type="radio" name="r1" value="" checked>
<input type="radio" name="r2" value="a" checked><input type="radio" name="r2" value="b" checked>
<input type="RADIO" name="r3" value="upper" checked>
<input type="Radio" name="r4" value="no">
<input type="radio" name="r5" value="x">
</form>"""))
add("in_select_variants", page("""<form method="post">
<select name="s1"><option value="a">A</option><option value="b" selected>B</option></select>
<select name="s2"><option value="a">A</option><option value="b">B</option></select>
<select name="s3"><option value="a" disabled>A</option><option value="b">B</option></select>
<select name="s4"><option value="a" disabled>A</option><option value="b" disabled>B</option></select>
<select name="s5"><option value="a" selected>A</option><option value="b" selected>B</option></select>
<select name="s6"><option>  Text only  </option><option>Other</option></select>
<select name="s7"><option selected>Sel &amp; text</option></select>
<select name="s8"><option selected><b>bold</b></option></select>
<select name="s9"><option value="" selected>empty</option><option value="z">Z</option></select>
<select name="s10"><optgroup label="g"><option value="g1">G1</option><option value="g2" selected>G2</option></optgroup></select>
<select name="s11"></select>
<select name="s12"><option value="dis" selected disabled>D</option><option value="ok">OK</option></select>
<select name="s13"><option value="a">A</option><option value="b" selected="false">B</option></select>
<select name="s14"><option>first
line</option></select>
</form>"""))
add("in_select_multiple_variants", page("""<form method="post">
<select name="m1" multiple><option value="a" selected>A</option><option value="b">B</option><option value="c" selected>C</option></select>
<select name="m2" multiple><option value="a">A</option><option value="b">B</option></select>
<select name="m3" multiple><option selected> text A </option><option selected>text B</option></select>
<select name="m4" multiple><option value="d" selected disabled>D</option></select>
<select name="m5" multiple="multiple"></select>
<select multiple><option value="x" selected>X</option></select>
</form>"""))
add("in_select_mixed_order", page("""<form method="post">
<input name="a" value="1">
<select name="m" multiple><option value="x" selected>X</option><option value="y" selected>Y</option></select>
<input name="b" value="2">
<select name="s"><option value="z">Z</option></select>
<input name="a" value="3">
</form>"""))
add("in_textarea_variants", page("""<form method="post">
<textarea name="t1">plain</textarea>
<textarea name="t2">a &amp; b &lt;c&gt; &eacute; &#233; &#x263A;</textarea>
<textarea name="t3">
leading newline</textarea>
<textarea name="t4">line1
line2

line4</textarea>
<textarea name="t5"><b>not bold</b> <!-- c --></textarea>
<textarea name="t6">   spaced   </textarea>
<textarea name="t7"></textarea>
</form>"""))
add("in_textarea_crlf", page('<form method="post"><textarea name="t">a\r\nb\rc\n</textarea>'
                             '<input name="v" value="x\r\ny"></form>'))
add("in_file_image_reset_button_types", page("""<form method="post">
<input type="file" name="f1" value="c:\\fake.txt">
<input type="file" name="f2">
<input type="image" name="img" value="iv" src="/i.png">
<input type="reset" name="rst" value="Reset">
<input type="button" name="btn" value="Button">
<input type="button" name="btn2">
<button type="button" name="b1" value="bv1">B1</button>
<button type="reset" name="b2" value="bv2">B2</button>
</form>"""), {"dont_click": True})
add("in_type_odd_spellings", page("""<form method="post">
<input type="HIDDEN" name="h" value="1">
<input type="Text" name="t" value="2">
<input type="" name="empty" value="3">
<input type=" submit" name="spsub" value="4">
<input type="submit " name="subsp" value="5">
<input type="RESET" name="rs" value="6">
<input type="IMAGE" name="im" value="7">
</form>"""), {"dont_click": True})
add("in_duplicate_names_order", page("""<form method="post">
<input name="a" value="1"><input type="hidden" name="b" value="2">
<textarea name="a">3</textarea><input type="checkbox" name="a" value="4" checked>
<select name="a"><option value="5">5</option></select><input name="b" value="6">
</form>"""))
add("in_unicode_names_values", page("""<form method="post">
<input name="имя" value="значение"><input name="名前" value="値 ツ">
<input name="emoji" value="😀 &#128512;"><input name="é" value="&eacute;&nbsp;x">
</form>"""))
add("in_value_entities_and_specials", page("""<form method="post">
<input name="amp" value="a&amp;b"><input name="raw" value="a&b=c">
<input name="lt" value="&lt;tag&gt;"><input name="quot" value="say &quot;hi&quot;">
<input name="plus" value="1+1=2"><input name="pct" value="100%"><input name="hash" value="#x?y/z">
<input name="sp" value="  two  spaces  "><input name="nl" value="a
b"><input name="tab" value="a&#9;b">
<input name='single' value='s q'><input name=unq value=unquoted>
<input name="bare-amp" value="&ampx &copy &copy; &#0; &#xD800;">
</form>"""))
add("in_non_field_elements", page("""<form method="post">
<output name="out">o</output><keygen name="kg"><object name="obj"></object>
<fieldset name="fs"><legend>L</legend><input name="in" value="1"></fieldset>
<datalist id="dl"><option value="d1"></datalist><progress name="pg" value="1"></progress>
<meter name="mt" value="1"></meter><label><input name="lab" value="2"></label>
</form>"""))
add("in_form_attribute_outside", page("""
<input name="before" value="b" form="f1">
<form id="f1" method="post"><input name="inside" value="i"></form>
<input name="after" value="a" form="f1"><button form="f1" name="ob" value="v">B</button>
<textarea name="ta" form="f1">t</textarea>"""))
add("in_form_attribute_inside_other", page("""
<form id="f1" method="post"><input name="a" value="1"></form>
<form id="f2" method="post"><input name="b" value="2" form="f1"></form>"""))

# ---------------------------------------------------------------------------
# Clicking
# ---------------------------------------------------------------------------
CLICKS = page("""<form action="/c" method="post">
<input type="hidden" name="h" value="1">
<input type="submit" name="s1" value="Go">
<input type="text" name="t" value="tv">
<button name="b1" value="bv">Button one</button>
<input type="image" name="img" value="iv" src="/x.png">
<button type="submit" name="b2">No value</button>
<input type="submit" value="Anon">
<input type="submit" name="s2" value="Go" class="btn primary" id="go2">
<select name="sel"><option value="o">O</option></select>
<button type="button" name="b3" value="nope">Plain</button>
<button type="reset" name="b4" value="nope">Reset</button>
</form>""")
add("click_default_first_submit", CLICKS)
add("click_dont_click", CLICKS, {"dont_click": True})
add("click_dont_click_ignores_clickdata", CLICKS,
    {"dont_click": True, "clickdata": {"name": "nothing"}})
add("click_by_name_button", CLICKS, {"clickdata": {"name": "b1"}})
add("click_by_name_image", CLICKS, {"clickdata": {"name": "img"}})
add("click_by_name_button_no_value", CLICKS, {"clickdata": {"name": "b2"}})
add("click_by_value_unique", CLICKS, {"clickdata": {"value": "Anon"}})
add("click_by_value_ambiguous", CLICKS, {"clickdata": {"value": "Go"}})
add("click_by_value_and_name", CLICKS, {"clickdata": {"value": "Go", "name": "s2"}})
add("click_by_type_and_name", CLICKS, {"clickdata": {"type": "submit", "name": "b2"}})
add("click_by_id", CLICKS, {"clickdata": {"id": "go2"}})
add("click_by_class_exact", CLICKS, {"clickdata": {"class": "btn primary"}})
add("click_by_class_partial_no_match", CLICKS, {"clickdata": {"class": "btn"}})
add("click_by_name_hidden_input", CLICKS, {"clickdata": {"name": "h"}})
add("click_by_name_text_input", CLICKS, {"clickdata": {"name": "t"}})
add("click_by_name_type_button", CLICKS, {"clickdata": {"name": "b3"}})
add("click_by_name_no_match", CLICKS, {"clickdata": {"name": "zzz"}})
add("click_by_value_ambiguous_buttons", CLICKS, {"clickdata": {"value": "nope"}})
for nr in (0, 1, 2, 3, 5, 6, 7, 9):
    add(f"click_nr_{nr}", CLICKS, {"clickdata": {"nr": nr}})
add("click_nr_negative", CLICKS, {"clickdata": {"nr": -1}})
add("click_nr_with_name_found", CLICKS, {"clickdata": {"nr": 1, "name": "zzz"}})
add("click_nr_out_of_range_with_name", CLICKS, {"clickdata": {"nr": 50, "name": "s2"}})
add("click_nr_as_string", CLICKS, {"clickdata": {"nr": "1"}})
add("click_empty_clickdata", CLICKS, {"clickdata": {}})
add("click_value_with_quote", CLICKS, {"clickdata": {"value": 'a"b'}})
add("click_clickdata_matches_non_input", page(
    '<form method="post"><div class="wrap"><input type="submit" name="s" value="S"></div></form>'),
    {"clickdata": {"class": "wrap"}})
add("click_clickdata_matches_outside_form", page(
    '<input type="submit" name="out" value="O"><form method="post">'
    '<input type="submit" name="in" value="I"></form>'), {"clickdata": {"name": "out"}})
add("click_first_is_button_without_type", page(
    '<form method="post"><button name="first" value="1">1</button>'
    '<input type="submit" name="second" value="2"></form>'))
add("click_first_is_image", page(
    '<form method="post"><input type="image" name="pic" src="/p.png">'
    '<input type="submit" name="second" value="2"></form>'))
add("click_first_is_image_without_name", page(
    '<form method="post"><input type="image" src="/p.png">'
    '<input type="submit" name="second" value="2"></form>'))
add("click_first_submit_without_name", page(
    '<form method="post"><input type="submit" value="anon">'
    '<input type="submit" name="second" value="2"></form>'))
add("click_button_type_button_skipped", page(
    '<form method="post"><button type="button" name="b" value="x">x</button>'
    '<button type="Submit" name="real" value="y">y</button></form>'))
add("click_button_type_reset_and_menu_skipped", page(
    '<form method="post"><button type="reset" name="r" value="x">x</button>'
    '<button type="menu" name="m" value="m">m</button>'
    '<button type="" name="e" value="e">e</button><button name="last" value="l">l</button></form>'))
add("click_button_value_not_text", page(
    '<form method="post"><button name="b">Button text</button></form>'))
add("click_no_clickables", page('<form method="post"><input name="a" value="1"></form>'))
add("click_no_clickables_with_clickdata", page('<form method="post"><input name="a" value="1"></form>'),
    {"clickdata": {"name": "a"}})
add("click_submit_value_entities", page(
    '<form method="post"><input type="submit" name="go &amp; see" value="Caf&eacute; &amp; &#x2603;"></form>'))
add("click_formaction_formmethod_ignored", page(
    '<form action="/default" method="get"><input name="q" value="1">'
    '<button name="b" value="x" formaction="/other" formmethod="post" formenctype="multipart/form-data">B</button>'
    '</form>'))
add("click_formaction_on_clickdata_ignored", page(
    '<form action="/default" method="post"><input name="q" value="1">'
    '<input type="submit" name="a" value="A">'
    '<input type="submit" name="b" value="B" formaction="/b-action" formmethod="get"></form>'),
    {"clickdata": {"name": "b"}})
add("click_enctype_multipart_ignored", page(
    '<form action="/up" method="post" enctype="multipart/form-data" accept-charset="iso-8859-1">'
    '<input name="q" value="é"><input type="file" name="f"></form>'))
add("click_name_in_formdata_dict", CLICKS, {"formdata": {"s1": "over"}})
add("click_name_in_formdata_list", CLICKS, {"formdata": [["s1", "over"]]})
add("click_name_in_formdata_none", CLICKS, {"formdata": {"s1": None}})
add("click_clickdata_name_in_formdata_list", CLICKS,
    {"formdata": [["b1", "over"]], "clickdata": {"name": "b1"}})
add("click_disabled_submit", page(
    '<form method="post"><input type="submit" name="d" value="D" disabled>'
    '<input type="submit" name="e" value="E"></form>'))
add("click_unicode_clickdata_cp1251", page(
    '<form method="post"><input type="submit" name="кнопка" value="Найти">'
    '<input type="submit" name="другая" value="Нет"></form>'),
    {"clickdata": {"value": "Найти"}}, encoding="cp1251")

# ---------------------------------------------------------------------------
# formdata
# ---------------------------------------------------------------------------
FD = page("""<form action="/fd" method="post">
<input name="a" value="1"><input name="b" value="2"><input name="c" value="3">
<input type="checkbox" name="m" value="x" checked><input type="checkbox" name="m" value="y" checked>
<input type="submit" name="go" value="Go">
</form>""")
add("fd_none_given", FD)
add("fd_empty_dict", FD, {"formdata": {}})
add("fd_empty_list", FD, {"formdata": []})
add("fd_override_first_moves_to_end", FD, {"formdata": {"a": "A"}})
add("fd_add_new", FD, {"formdata": {"new": "n", "z": "last"}})
add("fd_list_value", FD, {"formdata": {"b": ["x", "y", "z"]}})
add("fd_list_value_override_multi", FD, {"formdata": {"m": ["only"]}})
add("fd_empty_list_value_removes", FD, {"formdata": {"m": []}})
add("fd_empty_string_value", FD, {"formdata": {"a": ""}})
add("fd_none_removes", FD, {"formdata": {"a": None, "c": None}})
add("fd_none_for_unknown_key", FD, {"formdata": {"zz": None}})
add("fd_pairs_repeated_keys", FD, {"formdata": [["k", "1"], ["k", "2"], ["a", "x"], ["k", "3"]]})
add("fd_pairs_override_then_list", FD, {"formdata": [["b", ["p", "q"]], ["b", "r"]]})
add("fd_pairs_none_value", FD, {"formdata": [["a", None], ["d", "4"], ["d", None]]})
add("fd_pairs_three_elements_error", FD, {"formdata": [["a", "1", "x"]]})
add("fd_special_chars", FD, {"formdata": {"a b": "c d", "e&f": "g=h", "i+j": "k/l?m#n", "pct%": "50%", "tilde~": "*.-_"}})
add("fd_unicode_utf8", FD, {"formdata": {"ключ": "значение", "a": "é ツ 😀"}})
add("fd_int_value_error", FD, {"formdata": {"a": 5}})
add("fd_on_empty_form_get", page('<form action="/e"></form>'), {"formdata": {"q": "x"}})
add("fd_dont_click_with_formdata", FD, {"formdata": {"go": "manual"}, "dont_click": True})
add("fd_clickdata_and_formdata", FD, {"formdata": {"a": "A"}, "clickdata": {"name": "go"}})

# ---------------------------------------------------------------------------
# method and action
# ---------------------------------------------------------------------------
def mform(method_attr: str | None, action_attr: str | None = "/act", fields: str =
          '<input name="f" value="v">') -> str:
    attrs = ""
    if action_attr is not None:
        attrs += f' action="{action_attr}"'
    if method_attr is not None:
        attrs += f' method="{method_attr}"'
    return page(f"<form{attrs}>{fields}</form>")


for label, m in [("missing", None), ("post_lower", "post"), ("post_upper", "POST"),
                 ("post_mixed", "Post"), ("get_lower", "get"), ("put", "put"),
                 ("delete", "DELETE"), ("dialog", "dialog"), ("empty", ""),
                 ("post_spaces", " post "), ("head", "head")]:
    add(f"method_attr_{label}", mform(m))
for label, m in [("post_lower", "post"), ("get_on_post_form", "GET"), ("put", "PUT"),
                 ("patch_lower", "patch"), ("empty", "")]:
    add(f"method_kwarg_{label}", mform("post" if label != "post_lower" else "get"), {"method": m})
add("method_kwarg_none_with_fields", mform("post"), {"method": None})
add("method_kwarg_none_no_fields", mform("post", fields=""), {"method": None})

add("get_action_with_query_and_fields", mform("get", "/s?old=1&keep=2"))
add("get_action_with_query_no_fields", mform("get", "/s?old=1&keep=2", fields=""))
add("get_action_with_fragment", mform("get", "/s?old=1#frag"))
add("get_no_action_page_query_fragment", mform("get", None),
    url="http://www.example.com/p?x=1&y=2#top")
add("get_no_action_page_query_no_fields", mform("get", None, fields=""),
    url="http://www.example.com/p?x=1#top")
add("post_action_with_query_fragment", mform("post", "/s?old=1#frag"))
add("post_no_fields_content_type", mform("post", "/s", fields=""))
add("get_fields_with_specials", mform("get", "/s", '<input name="q" value="a b&c=d/é">'
                                      '<input name="e" value="">'))

for label, action in [
    ("empty", ""), ("relative", "next.php"), ("dot_dot", "../up/x.php"),
    ("absolute_path", "/root.php"), ("absolute_url", "https://other.example.org/x?y=1"),
    ("protocol_relative", "//cdn.example.net/p"), ("query_only", "?q=1"),
    ("fragment_only", "#frag"), ("dot", "."), ("whitespace_around", " \t\n/ws.php \n"),
    ("inner_space", "/a b/c d.php?e f=g h"), ("nbsp", "\u00a0/nb.php"),
    ("unicode_path", "/поиск/ツ?q=é"), ("percent_encoded", "/a%20b?c=%41"),
    ("entity_amp", "/x?a=1&amp;b=2"), ("javascript", "javascript:void(0)"),
    ("mailto", "mailto:someone@example.com"), ("other_scheme_ftp", "ftp://ftp.example.com/f"),
    ("backslash", "\\back\\slash"), ("userinfo", "http://user:pw@example.com:8080/p"),
    ("idn_host", "http://bücher.example/p"), ("uppercase_scheme", "HTTP://EXAMPLE.COM/P"),
]:
    add(f"action_{label}", mform("post", action))
add("action_missing_post", mform("post", None))
add("action_missing_url_with_fragment", mform("post", None), url="http://www.example.com/p#top")
add("action_relative_on_dir_url", mform("post", "x.php"), url="http://www.example.com/dir/")
add("action_relative_on_root_url", mform("post", "x.php"), url="http://www.example.com")

BASE = '<html><head>{}</head><body><form action="{}" method="post"><input name="f" value="v"></form></body></html>'
add("base_absolute", BASE.format('<base href="http://base.example.org/b/c/">', "x.php"))
add("base_absolute_action_absolute_path", BASE.format('<base href="http://base.example.org/b/c/">', "/x.php"))
add("base_relative", BASE.format('<base href="/sub/dir/">', "x.php"))
add("base_relative_no_slash", BASE.format('<base href="sub">', "x.php"))
add("base_with_spaces", BASE.format('<base href="  http://base.example.org/sp/  ">', "x.php"))
add("base_empty_href", BASE.format('<base href="">', "x.php"))
add("base_no_href", BASE.format('<base target="_blank">', "x.php"))
add("base_two_tags_first_wins", BASE.format(
    '<base href="http://first.example/"><base href="http://second.example/">', "x.php"))
add("base_in_comment_ignored", BASE.format('<!-- <base href="http://comment.example/"> -->', "x.php"))
add("base_in_body", '<html><body><base href="http://body.example/b/">'
    '<form action="x.php" method="post"><input name="f" value="v"></form></body></html>')
add("base_after_4096_chars", '<html><head><!--' + "x" * 4200 + '--><base href="http://late.example/">'
    '</head><body><form action="x.php" method="post"><input name="f" value="v"></form></body></html>')
add("base_no_action", BASE.replace(' action="{}"', "").format('<base href="http://base.example.org/b/">'))
add("base_empty_action", BASE.format('<base href="http://base.example.org/b/">', ""))
add("base_with_url_kwarg_relative", BASE.format('<base href="http://base.example.org/b/">', "x.php"),
    {"url": "y.php"})
add("base_with_url_kwarg_absolute", BASE.format('<base href="http://base.example.org/b/">', "x.php"),
    {"url": "https://abs.example/z"})
add("base_non_ascii_cp1251", BASE.format('<base href="http://base.example.org/папка/?q=ж">', "файл.php"),
    encoding="cp1251")
add("url_kwarg_empty", mform("post", "/act"), {"url": ""})
add("url_kwarg_query_get", mform("get", "/act"), {"url": "/other?x=1"})
add("url_kwarg_unicode", mform("post", "/act"), {"url": "/путь?ключ=значение"})

# ---------------------------------------------------------------------------
# Page structure (libxml2's repaired tree decides what is inside a form)
# ---------------------------------------------------------------------------
NESTED = page("""<form id="outer" action="/outer" method="post">
<input name="o1" value="1">
<form id="inner" action="/inner" method="post"><input name="i1" value="2"></form>
<input name="o2" value="3">
</form>
<form id="last" action="/last"><input name="l" value="4"></form>""")
add("struct_nested_default", NESTED)
add("struct_nested_formnumber_1", NESTED, {"formnumber": 1})
add("struct_nested_formid_inner", NESTED, {"formid": "inner"})
add("struct_nested_formnumber_2", NESTED, {"formnumber": 2})
UNCLOSED = page("""<form action="/one" method="post"><input name="a" value="1">
<form action="/two" method="post"><input name="b" value="2">
<p><input name="c" value="3"></p>""")
add("struct_unclosed_default", UNCLOSED)
add("struct_unclosed_formnumber_1", UNCLOSED, {"formnumber": 1})
add("struct_form_closed_by_div", page(
    '<div><form action="/d" method="post"><input name="in" value="1"></div>'
    '<input name="after" value="2"></form>'))
add("struct_form_end_tag_early", page(
    '<form action="/e" method="post"><div><input name="a" value="1"></form>'
    '<input name="b" value="2"></div>'))
TABLE1 = page("""<table><form action="/t1" method="post">
<tr><td><input name="a" value="1"></td><td><input type="submit" name="go" value="Go"></td></tr>
</form></table>""")
add("struct_table_form_around_rows", TABLE1)
add("struct_table_form_around_rows_dont_click", TABLE1, {"dont_click": True})
add("struct_table_form_in_tr", page("""<table><tr><form action="/t2" method="post">
<td><input name="a" value="1"></td></form></tr>
<tr><td><input name="b" value="2"></td></tr></table>"""))
add("struct_table_form_between_rows", page("""<table>
<tr><td><input name="x" value="0"></td></tr>
<form action="/t3" method="post"><tr><td><input name="a" value="1"></td></tr>
<tr><td><select name="s"><option value="o" selected>o</option></select></td></tr></form>
</table>"""))
add("struct_table_form_in_td", page("""<table><tr><td><form action="/t4" method="post">
<input name="a" value="1"></td><td><input name="b" value="2"></form></td></tr></table>"""))
add("struct_form_around_table", page("""<form action="/t5" method="post"><table>
<tr><td><input name="a" value="1"></td></tr><tr><td><textarea name="t">x</textarea></td></tr>
</table></form>"""))
add("struct_two_tables_forms", page("""<table><form name="f1" action="/f1"><tr><td><input name="a" value="1"></td></tr></form></table>
<table><form name="f2" action="/f2"><tr><td><input name="b" value="2"></td></tr></form></table>"""),
    {"formname": "f2"})
add("struct_inputs_after_html_end", '<html><body><form action="/late" method="post">'
    '<input name="a" value="1"></body></html><input name="b" value="2"></form>')
add("struct_form_in_svg", page('<svg><form action="/svg"><input name="s" value="1"></form></svg>'
                               '<form action="/real"><input name="r" value="2"></form>'))
add("struct_select_unclosed_options", page(
    '<form method="post"><select name="s"><option value="a">A<option value="b" selected>B'
    '<option value="c">C</select><input name="after" value="x"></form>'))
add("struct_input_in_select", page(
    '<form method="post"><select name="s"><option value="a">A</option>'
    '<input name="inside" value="i"></select></form>'))
add("struct_textarea_unclosed", page(
    '<form method="post"><textarea name="t">text <input name="x" value="1"></form>'))
add("struct_xhtml_namespace",
    '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body>'
    '<form action="/x" method="post"><input name="a" value="1"/></form></body></html>')

# ---------------------------------------------------------------------------
# Encodings
# ---------------------------------------------------------------------------
LATIN = page("""<form action="/caf\u00e9?k=\u00e9" method="post">
<input name="nom" value="Andr\u00e9"><input name="\u00e9t\u00e9" value="\u00bd &amp; \u00be">
<textarea name="t">na\u00efve</textarea>
<select name="s"><option value="\u00c5">\u00c5</option></select>
<input type="submit" name="go" value="Envoy\u00e9">
</form>""")
add("enc_latin1_post", LATIN, encoding="latin-1")
add("enc_latin1_formdata", LATIN, {"formdata": {"nom": "Fran\u00e7ois", "x": ["\u00df", "\u00f8"]}},
    encoding="latin-1")
add("enc_latin1_get", LATIN.replace('method="post"', 'method="get"'), encoding="latin-1")
add("enc_latin1_formdata_unencodable", LATIN, {"formdata": {"nom": "\u30c4"}}, encoding="latin-1")
add("enc_latin1_entity_unencodable", page('<form method="post"><input name="a" value="&#12484;"></form>'),
    encoding="latin-1")
add("enc_latin1_c1_byte_is_cp1252_euro", page('<form method="post"><input name="a" value="\u0080 5"></form>'),
    encoding="latin-1")
add("enc_cp1252_euro", page('<form method="post"><input name="a" value="\u20ac 5 \u2019"></form>'),
    encoding="cp1252")
add("enc_latin1_clickdata", LATIN, {"clickdata": {"value": "Envoy\u00e9"}}, encoding="latin-1")
add("enc_latin1_url_kwarg", LATIN, {"url": "/\u00fcber?\u00e4=\u00f6"}, encoding="latin-1")
CYR = page("""<form action="/поиск?раздел=все" method="post">
<input name="запрос" value="привет мир"><input type="hidden" name="кодировка" value="Ё">
<textarea name="текст">строка</textarea>
<select name="город"><option value="Москва">М</option><option selected>Санкт-Петербург</option></select>
<input type="submit" name="искать" value="Найти">
</form>""")
add("enc_cp1251_post", CYR, encoding="cp1251")
add("enc_cp1251_get", CYR.replace('method="post"', 'method="get"'), encoding="cp1251")
add("enc_cp1251_formdata", CYR, {"formdata": {"запрос": "новый", "ещё": ["а", "б"]}}, encoding="cp1251")
add("enc_cp1251_formdata_unencodable", CYR, {"formdata": {"запрос": "ツ"}}, encoding="cp1251")
add("enc_cp1251_formdata_none_removes", CYR, {"formdata": {"кодировка": None}}, encoding="cp1251")
add("enc_cp1251_formname", page('<form name="первая" action="/1"><input name="a" value="1"></form>'
                                '<form name="вторая" action="/2"><input name="b" value="б"></form>'),
    {"formname": "вторая"}, encoding="cp1251")
SJIS = page("""<form action="/検索" method="post">
<input name="名前" value="山田太郎"><input name="kana" value="ｶﾀｶﾅ">
<textarea name="本文">日本語テキスト</textarea>
<input type="submit" name="送信" value="送信する">
</form>""")
add("enc_shift_jis_post", SJIS, encoding="shift_jis")
add("enc_shift_jis_get", SJIS.replace('method="post"', 'method="get"'), encoding="shift_jis")
add("enc_shift_jis_formdata", SJIS, {"formdata": {"名前": "鈴木", "追加": "ツ"}}, encoding="shift_jis")
add("enc_shift_jis_wave_dash_cp932_decoding",
    page('<form method="post"><input name="a" value="1\u301c2"></form>'), encoding="shift_jis")
add("enc_shift_jis_formdata_cp932_only_char", SJIS, {"formdata": {"追加": "\u2460"}}, encoding="shift_jis")
add("enc_gb18030_post", page('<form action="/搜索" method="post"><input name="关键词" value="中文"></form>'),
    {"formdata": {"附加": "值"}}, encoding="gb18030")
add("enc_utf8_emoji_entities", page(
    '<form method="post"><input name="e" value="&#x1F600;&#128512;&#xFFFD;"></form>'))
add("enc_utf8_meta_charset_ignored_when_given", '<html><head><meta charset="windows-1251"></head>'
    '<body><form method="post"><input name="a" value="é"></form></body></html>')

# ---------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------
DEPRECATION = ("FormRequest.from_response() is deprecated. "
               "Use the form2request library instead.")


def to_python_kwargs(kw: dict) -> dict:
    out = dict(kw)
    fd = out.get("formdata", ...)
    if isinstance(fd, dict):
        out["formdata"] = dict(sorted(fd.items()))
    elif isinstance(fd, list):
        out["formdata"] = [tuple(p) if isinstance(p, list) else p for p in fd]
    if isinstance(out.get("clickdata"), dict):
        out["clickdata"] = dict(sorted(out["clickdata"].items()))
    return out


def normalise(msg: str) -> str:
    msg = re.sub(r"(<\w+Element) [0-9a-f]+ name=", r"\1 ID name=", msg)
    return re.sub(r" at 0x[0-9a-f]+>", " at 0xID>", msg)


def header(r, name: str):
    v = r.headers.get(name)
    return v.decode("latin-1") if v is not None else None


def record(case: dict) -> dict:
    enc = case["encoding"]
    raw = case["body"].encode(enc)
    assert raw.decode(enc) == case["body"], case["name"]
    response = HtmlResponse(url=case["url"], body=raw, encoding=enc)
    out = dict(case)
    out["body_hex"] = raw.hex()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            req = FormRequest.from_response(response, **to_python_kwargs(case["kwargs"]))
        except Exception as e:  # noqa: BLE001
            out["error"] = normalise(f"{type(e).__name__}: {e}")
            req = None
    deprecations = [w for w in caught if issubclass(w.category, ScrapyDeprecationWarning)
                    and str(w.message) == DEPRECATION]
    assert len(deprecations) == 1, (case["name"], [str(w.message) for w in caught])
    others = [f"{w.category.__name__}: {w.message}" for w in caught if w not in deprecations]
    if others:
        out["warnings"] = others
    if req is not None:
        assert req.encoding == enc, (case["name"], req.encoding)
        if req.method == "POST":
            qs = req.body.decode("latin-1")
        else:
            qs = urlsplit(req.url).query
        out["result"] = {
            "method": req.method,
            "url": req.url,
            "body": req.body.decode("latin-1"),
            "content_type": header(req, "Content-Type"),
            "pairs": [list(p) for p in parse_qsl(qs, keep_blank_values=True, encoding=enc)],
        }
    return out


def main() -> None:
    names = [c["name"] for c in CASES]
    dupes = sorted({n for n in names if names.count(n) > 1})
    assert not dupes, dupes
    cases = [record(c) for c in CASES]
    n_err = sum(1 for c in cases if "error" in c)
    doc = {
        "description": (
            "scrapy.http.FormRequest.from_response(HtmlResponse(url, body=body.encode(encoding), "
            "encoding=encoding), **kwargs) as recorded from the real Scrapy: the request's method, "
            "url, body (latin-1 text), Content-Type and the parsed form pairs, or the error "
            "'<ExceptionType>: <message>'. See the generator's docstring for the kwargs encoding."
        ),
        "generator": "tests/data/requests/gen_from_response.py",
        "versions": {
            "scrapy": scrapy.__version__,
            "lxml": lxml.__version__,
            "libxml2": ".".join(map(str, lxml.etree.LIBXML_VERSION)),
            "parsel": parsel.__version__,
            "cssselect": cssselect.__version__,
            "w3lib": w3lib.__version__,
            "python": ".".join(map(str, sys.version_info[:3])),
        },
        "deprecation_warning": f"ScrapyDeprecationWarning: {DEPRECATION}",
        "count": len(cases),
        "errors": n_err,
        "cases": cases,
    }
    with open(HERE / "from_response.json", "w", encoding="utf-8", newline="\n") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote from_response.json: {len(cases)} cases, {n_err} errors")


if __name__ == "__main__":
    main()
