#!/usr/bin/env python3
"""Write the hand-made HTML input pages and the corpus manifest.

Usage (from the repository root; any Python 3 works, no third-party modules):

    python3 tests/data/html/make_pages.py

Writes, next to this script:

* pages/custom/*.html -- small pages with nasty markup.  These are *inputs*:
  their bytes are the bytes "as served".  Several are deliberately not UTF-8,
  contain NUL bytes or a BOM, so they are built here from Python literals
  rather than typed into files.
* manifest.json -- for every page (the Scrapy sample pages in pages/scrapy/
  included) the URL it is served from and its Content-Type header (null means
  no Content-Type header at all).

No expected value is written here: gen_links.py records those from Scrapy.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CUSTOM = HERE / "pages" / "custom"

HTML = "text/html"
UTF8 = "text/html; charset=utf-8"


def doc(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html>\n<html><head>{head}</head><body>\n{body}\n</body></html>\n"


# (file name, url, content type, body bytes)
CUSTOM_PAGES: list[tuple[str, str, str | None, bytes]] = []


def page(name: str, url: str, ctype: str | None, body: str | bytes, enc: str = "utf-8") -> None:
    data = body if isinstance(body, bytes) else body.encode(enc)
    CUSTOM_PAGES.append((name, url, ctype, data))


# --- comments ---------------------------------------------------------------
page("comment_empty_short.html", "http://example.com/comments/empty.html", UTF8, doc(
    '<!--><a href="after-short.html">after &lt;!--&gt;</a>\n'
    '<p><!---><a href="after-3dash.html">after &lt;!---&gt;</a></p>\n'
    '<p><!----><a href="after-4dash.html">after &lt;!----&gt;</a></p>\n'
    '<p><!-- a -- b --><a href="after-dashdash.html">after dash-dash</a></p>\n'
    '<p><!-- x --!><a href="after-bang-close.html">after --!&gt;</a></p>\n'
    '<p><!-- <a href="in-comment.html">hidden</a> --><a href="after-normal.html">normal</a></p>'
))
page("comment_unclosed.html", "http://example.com/c/unclosed", HTML, doc(
    '<a href="/before.html">before</a>\n'
    '<!-- never closed <a href="/inside.html">inside</a>\n'
    '<a href="/also-inside.html">also inside</a>'
))
page("comment_bogus.html", "http://example.com/a/b/c/bogus.html", UTF8, doc(
    '<! bogus comment <a href="b1.html">> <a href="b-after1.html">after bogus</a>\n'
    '</ end tag comment <a href="b2.html"> > <a href="b-after2.html">after end-tag comment</a>\n'
    '<? pi-ish <a href="b3.html"> ?> <a href="b-after3.html">after pi-ish</a>'
))

# --- script end tags ----------------------------------------------------------
page("script_end_scripts.html", "http://example.com/js/scripts.html", UTF8, doc(
    '<script>var s = "<a href=\'js-in-1.html\'>in1</a>";</scripts>\n'
    '<a href="js-in-2.html">still script</a>\n'
    'var t = \'<a href="js-in-3.html">\';</script>\n'
    '<a href="js-after.html">after script</a>'
))
page("script_end_space.html", "http://example.com/js/space.html", UTF8, doc(
    '<script>document.write("<a href=\\"js-in.html\\">x</a>");</script >\n'
    '<a href="js-after-space.html">after &lt;/script &gt;</a>\n'
    '<script>var u = "</SCRIPT\t>"; </script><a href="js-after-tab.html">after tab</a>'
))
page("script_end_slash.html", "http://example.com/js/slash/", UTF8, doc(
    '<script>var s = "<a href=\'js-in.html\'>";</script/>\n'
    '<a href="js-after-slash.html">after &lt;/script/&gt;</a>\n'
    '<script type="text/template"><a href="tpl-in-script.html">tpl</a></script>'
))
page("script_escape_state.html", "http://example.com/js/escape.html", UTF8, doc(
    '<script><!-- <script> </script> <a href="js-double-escaped.html">x</a> </script> --></script>\n'
    '<a href="js-after-escape.html">after escaped script</a>'
))

# --- raw text / special containers --------------------------------------------
page("in_textarea.html", "http://example.com/raw/textarea.html", UTF8, doc(
    '<textarea><a href="ta-in.html">in textarea</a></textarea>\n'
    '<a href="ta-after.html">after textarea</a>'
))
page("in_title.html", "http://example.com/raw/title.html", UTF8, doc(
    '<a href="body-link.html">body</a>',
    head='<title>T <a href="title-in.html">in title</a> &amp; more</title>'
))
page("in_title_body.html", "http://example.com/raw/title-body.html", UTF8,
    '<html><head></head><body><title>Body <b>title</b> <a href="t-in.html">x</a></title>'
    '<a href="t-after.html">after</a></body></html>'
)
page("in_noscript.html", "http://example.com/raw/noscript.html", UTF8, doc(
    '<noscript><a href="ns-body.html">noscript body</a></noscript>\n'
    '<a href="ns-after.html">after</a>',
    head='<noscript><a href="ns-head.html">noscript head</a></noscript>'
))
page("in_style.html", "http://example.com/raw/style.html", UTF8, doc(
    '<style>a[href="x"]::after { content: "<a href=\'st-in.html\'>" }</style>\n'
    '<a href="st-after.html">after style</a>',
    head='<style><a href="st-head.html">style head</a></style>'
))
page("in_xmp.html", "http://example.com/raw/xmp.html", UTF8, doc(
    '<xmp><a href="xmp-in.html">in xmp</a></xmp>\n'
    '<a href="xmp-after.html">after xmp</a>'
))
page("in_iframe.html", "http://example.com/raw/iframe.html", UTF8, doc(
    '<iframe src="frame.html"><a href="if-in.html">in iframe</a></iframe>\n'
    '<a href="if-after.html">after iframe</a>'
))
page("in_template.html", "http://example.com/raw/template.html", UTF8, doc(
    '<template><a href="tp-in.html">in template</a><div><a href="tp-deep.html">deep</a></div></template>\n'
    '<a href="tp-after.html">after template</a>'
))
page("in_noembed_noframes_plaintext.html", "http://example.com/raw/misc.html", UTF8, doc(
    '<noembed><a href="ne-in.html">in noembed</a></noembed>\n'
    '<noframes><a href="nf-in.html">in noframes</a></noframes>\n'
    '<a href="before-plaintext.html">before plaintext</a>\n'
    '<plaintext><a href="pt-in.html">in plaintext</a></plaintext><a href="pt-after.html">after</a>'
))
page("in_select_button_svg.html", "http://example.com/raw/forms.html", UTF8, doc(
    '<select><option><a href="opt.html">in option</a></option></select>\n'
    '<button><a href="btn.html">in button</a></button>\n'
    '<svg><a href="svg-href.html"><text>svg href</text></a>'
    '<a xlink:href="svg-xlink.html"><text>svg xlink</text></a></svg>\n'
    '<math><a href="math.html">math</a></math>\n'
    '<object><a href="obj.html">in object</a></object>'
))

# --- self-closing / nesting ----------------------------------------------------
page("selfclose_unquoted.html", "http://example.com/sc/index.html", UTF8, doc(
    '<a href=five.html/>Five</a>\n'
    '<a href=six.html />Six</a>\n'
    '<a href="seven.html"/>Seven</a>'
))
page("selfclose_then_p.html", "http://example.com/sc/p/", UTF8, doc(
    '<a href="/x"/><p>after</p>\n'
    '<div><a href="/y"/></div><span>y sibling</span>'
))
page("nested_a.html", "http://example.com/nest/a.html", UTF8, doc(
    '<a href="outer.html">outer <a href="inner.html">inner</a> tail</a>\n'
    '<a href="o2.html"><b>bold <a href="i2.html">inner2</a> rest</b></a>'
))
page("a_across_blocks.html", "http://example.com/blocks/", UTF8, doc(
    '<a href="x.html"><div>t</div></a>\n'
    '<p><a href="y.html">one</p><p>two</a></p>\n'
    '<a href="z.html"><p>para</p><ul><li>item</li></ul>end</a>\n'
    '<b><a href="w.html">bold<p>in p</b>after b</a></p>'
))
page("a_in_table.html", "http://example.com/t/table.html", UTF8, doc(
    '<table><a href="t-foster.html">foster</a>\n'
    '<tr><td><a href="t-cell.html">cell</a></td></tr>\n'
    '<tr><a href="t-row.html">row</a><td>c</td></tr>\n'
    '<a href="t-open.html"><tr><td>open a across row</td></tr></a>\n'
    '</table>'
))
page("a_unclosed.html", "http://example.com/u/", UTF8,
    '<html><body><a href="u1.html">one<a href="u2.html">two<p>para <a href="u3.html">three <b>bold'
)

# --- entities ------------------------------------------------------------------
page("entities_text.html", "http://example.com/ent/text.html", UTF8, doc(
    '<a href="t1.html">Tom &amp; Jerry</a>\n'
    '<a href="t2.html">&notin; &notit; &not &copy &copy; &COPY; &AMP</a>\n'
    '<a href="t3.html">&#65;&#x42;&#X43; &#128; &#x80; &#x9F; &#150;</a>\n'
    '<a href="t4.html">[&#x0;] [&#0;] [&#xD800;] [&#x110000;] [&#xFFFE;] [&#13;]</a>\n'
    '<a href="t5.html">&nbsp;nbsp&nbsp; &ensp;&emsp;&thinsp; &zwnj;</a>\n'
    '<a href="t6.html">&bogus; &amp &lt&gt &;&#; &#x;</a>'
))
page("entities_href.html", "http://example.com/ent/href/", UTF8, doc(
    '<a href="q?a=1&amp;b=2">amp</a>\n'
    '<a href="q?a=1&b=2&copy=3">copy=</a>\n'
    '<a href="q?x&notin=1">notin</a>\n'
    '<a href="q?x&not=1">not</a>\n'
    '<a href="q?x&copy;=1">copy;</a>\n'
    '<a href="n&#65;&#x42;.html">numeric</a>\n'
    '<a href="z&#x0;z.html">nul ref</a>\n'
    '<a href="c1&#128;&#x9f;.html">C1 refs</a>\n'
    '<a href="q?lt=&lt;&gt;&quot;">lt gt quot</a>\n'
    '<a href=q?unq=1&amp;u=2&reg=3>unquoted</a>\n'
    '<a href="&#x20;/space-ref.html&#x20;">space refs</a>\n'
    '<a href="&#10;/nl-ref.html&#9;">nl tab refs</a>\n'
    '<a href="&nbsp;/nbsp-ref.html">nbsp ref</a>'
))

# --- case, duplicate attributes, quoting, whitespace ---------------------------
page("uppercase.html", "http://example.com/UP/Page.HTML", "TEXT/HTML; CHARSET=UTF-8",
    '<!DOCTYPE HTML>\n<HTML><HEAD><TITLE>Upper</TITLE></HEAD><BODY>\n'
    '<A HREF="up1.html">Up one</A>\n'
    '<A HREF="UP2.HTML" REL="NOFOLLOW">Up two</A>\n'
    '<MAP NAME=m><AREA HREF="area-up.html" SHAPE=rect></MAP>\n'
    '<a HrEf="mixed.html" rEl="NoFollow">mixed</a>\n'
    '</BODY></HTML>\n'
)
page("duplicate_href.html", "http://example.com/dup/", UTF8, doc(
    "<a href='x.html' href='y.html'>x then y</a>\n"
    '<a HREF="X2.html" href="y2.html">upper first</a>\n'
    '<a href="" href="y3.html">empty first</a>\n'
    '<a rel=nofollow rel=follow href=dup4.html>dup rel</a>'
))
page("quoting.html", "http://example.com/q/a/b/", UTF8, doc(
    '<a href=unq.html>unquoted</a>\n'
    "<a href='single.html'>single</a>\n"
    '<a href="dq\'inside.html">dq with single</a>\n'
    "<a href='sq\"inside.html'>sq with double</a>\n"
    '<a href=`bt.html`>backticks</a>\n'
    '<a href = "spaced.html" >spaced =</a>\n'
    '<a href="a"b.html>junk after quote</a>\n'
    '<a href=un"q.html>quote in unquoted</a>\n'
    '<a href=>empty unquoted</a>\n'
    '<a href=gt.html>gt</a><a href=semi;x.html>semi</a>'
))
page("href_whitespace.html", "http://example.com/ws/page.html", UTF8, doc(
    '<a href="\n   /ws-lead-trail.html   \n">lead/trail</a>\n'
    '<a href="/a\tb\nc\rd.html">tab nl cr inside</a>\n'
    '<a href="/a b.html">space inside</a>\n'
    '<a href="\x0c/ff.html\x0c">form feed</a>\n'
    '<a href="\x0b/vt.html">vertical tab</a>\n'
    '<a href="\u00a0/nbsp-lit.html">literal nbsp</a>\n'
    '<a href="\u3000/ideo.html">ideographic space</a>\n'
    '<a href="  ">spaces only</a>\n'
    '<a href="\n">newline only</a>'
))
page("attr_no_value.html", "http://example.com/novalue.html", UTF8, doc(
    '<a href>bare href</a>\n'
    '<a download href=d.html>download first</a>\n'
    '<a>no href</a>\n'
    '<a name="anchor">named</a>\n'
    '<a href=\'x.html\' href=\'y.html\'>two hrefs</a>'
))

# --- base -------------------------------------------------------------------------
page("base_relative.html", "http://example.com/a/b/page.html", UTF8, doc(
    '<a href="rel.html">rel</a><a href="/root.html">root</a><a href="?q=1">query</a><a href="#f">frag</a>',
    head='<base href="sub/dir/">'
))
page("base_absolute.html", "http://example.com/a/page.html", UTF8, doc(
    '<a href="rel.html">rel</a><a href="../up.html">up</a><a href="//cdn.example.net/x">netpath</a>',
    head='<base href="http://other.example.org/base/index.html">'
))
page("base_two.html", "http://example.com/two/page.html", UTF8, doc(
    '<a href="rel.html">rel</a>',
    head='<base href="first/"><base href="http://second.example.org/b/">'
))
page("base_in_body.html", "http://example.com/bb/page.html", UTF8, doc(
    '<a href="before.html">before base</a><base href="http://late.example.org/l/"><a href="after.html">after base</a>'
))
page("base_after_4k.html", "http://example.com/b4k/page.html", UTF8, doc(
    '<a href="rel.html">rel</a>',
    head="<!-- " + "x" * 4200 + " -->" + '<base href="http://far.example.org/f/">'
))
page("base_weird.html", "http://example.com/bw/dir/page.html", UTF8, doc(
    '<a href="rel.html">rel</a>',
    head='<base target="_blank"><base href="  ../../up/  ">'
))
page("base_empty_and_js.html", "http://example.com/be/page.html", UTF8, doc(
    '<a href="rel.html">rel</a>',
    head='<base href=""><base href="javascript:void(0)">'
))
page("base_uppercase_single.html", "http://example.com/bu/page.html", UTF8, doc(
    '<a href="rel.html">rel</a>',
    head="<BASE HREF='HTTP://Other.Example.ORG:80/Base/'>"
))

# --- area, rel, special hrefs ------------------------------------------------------
page("area_map.html", "http://example.com/map/", UTF8, doc(
    '<img src="m.png" usemap="#m"><map name="m">\n'
    '<area href="area1.html" alt="one" shape="rect" coords="0,0,1,1">\n'
    '<area nohref alt="no href">\n'
    '<area href="area2.html" rel="nofollow">\n'
    '<area href="area1.html">dup with text?</area>\n'
    '</map>'
))
page("rel_nofollow.html", "http://example.com/rel.html", UTF8, doc(
    '<a href="r1.html" rel="nofollow">nofollow</a>\n'
    '<a href="r2.html" rel="NOFOLLOW">upper</a>\n'
    '<a href="r3.html" rel="noopener nofollow">two tokens</a>\n'
    '<a href="r4.html" rel="nofollow,noopener">comma</a>\n'
    '<a href="r5.html" rel=" nofollow ">padded</a>\n'
    '<a href="r6.html" rel="external\tnofollow">tab</a>\n'
    '<a href="r7.html" rel="external\nnofollow">newline</a>\n'
    '<a href="r8.html" rel="nofollowx">nofollowx</a>\n'
    '<a href="r9.html" rel="">empty rel</a>\n'
    '<a href="r10.html" rel>bare rel</a>\n'
    '<a href="r11.html" rel="no-follow">no-follow</a>\n'
    '<a href="r12.html" rel="ugc nofollow sponsored">ugc</a>\n'
    '<a href="r13.html" rel="\u00a0nofollow">nbsp</a>'
))
page("special_hrefs.html", "http://example.com/sp/x/page.html?p=1#top", UTF8, doc(
    '<a href="#">hash</a>\n'
    '<a href="">empty</a>\n'
    '<a href="#frag">frag</a>\n'
    '<a href="?">qmark</a>\n'
    '<a href="?q=2">query</a>\n'
    '<a href="javascript:void(0)">js</a>\n'
    '<a href=" JAVASCRIPT:alert(1)">js upper</a>\n'
    '<a href="mailto:someone@example.com">mailto</a>\n'
    '<a href="tel:+1-555-0100">tel</a>\n'
    '<a href="data:text/html,<b>hi</b>">data</a>\n'
    '<a href="ftp://ftp.example.com/pub/file.txt">ftp</a>\n'
    '<a href="//cdn.example.net/p">netpath</a>\n'
    '<a href="../../../../../../up.html">above root</a>\n'
    '<a href="HTTP://EXAMPLE.COM:80/Upper">upper scheme host</a>\n'
    '<a href="https://example.com:443/tls">tls default port</a>\n'
    '<a href="http:relative.html">http: relative</a>\n'
    '<a href="about:blank">about</a>\n'
    '<a href="file:///etc/passwd">file</a>\n'
    '<a href="news:comp.lang.python">news</a>\n'
    '<a href="\\\\server\\share\\f.html">backslashes</a>\n'
    '<a href="/a\\b\\c.html">backslash path</a>'
))
page("dedupe.html", "http://example.com/dd/", UTF8, doc(
    '<a href="p.html#a">frag a</a>\n'
    '<a href="p.html#b">frag b</a>\n'
    '<a href="p.html">no frag</a>\n'
    '<a href="p.html">no frag again</a>\n'
    '<a href="q.html?b=1&a=2">q ba</a>\n'
    '<a href="q.html?a=2&b=1">q ab</a>\n'
    '<a href="r.html?a=%7e">pct lower</a>\n'
    '<a href="r.html?a=~">tilde</a>\n'
    '<a href="s.html?a=">blank value</a>\n'
    '<a href="s.html?a">no value</a>\n'
    '<a href="HTTP://Example.COM/dd/p.html">upper host dup</a>\n'
    '<a href="p.html" rel="nofollow">dup nofollow</a>'
))
page("ignored_extensions.html", "http://example.com/ext/", UTF8, doc(
    '<a href="photo.jpg">jpg</a>\n'
    '<a href="PHOTO.JPG">JPG upper</a>\n'
    '<a href="pic.png?x=1">png with query</a>\n'
    '<a href="doc.pdf">pdf</a>\n'
    '<a href="arch.zip">zip</a>\n'
    '<a href="page.html.jpg">html.jpg</a>\n'
    '<a href="photo.jpg#frag">jpg with frag</a>\n'
    '<a href="photo.jpg?">jpg with empty query</a>\n'
    '<a href="dir.jpeg/">jpeg dir</a>\n'
    '<a href="img?f=x.jpg">jpg in query</a>\n'
    '<a href="file.tar.gz">tar.gz</a>\n'
    '<a href="movie.mp4">mp4</a>\n'
    '<a href="slides.pptx">pptx</a>\n'
    '<a href="page.html">html</a>\n'
    '<a href="noext">noext</a>\n'
    '<a href="a.jpg%20">jpg space</a>'
))
page("link_text_structure.html", "http://example.com/text/", UTF8, doc(
    '<a href="br.html">line1<br/>line2<br>line3</a>\n'
    '<a href="img.html">pre<img src="i.png" alt="ALT">post</a>\n'
    '<a href="cmt.html">a<!-- hidden -->b<script>var s=1;</script>c<style>.x{}</style>d</a>\n'
    '<a href="ws.html">\n\t  spaced   out  \n</a>\n'
    '<a href="deep.html"><span><em>deep</em> <strong>nested</strong></span> text</a>\n'
    '<a href="empty.html"></a>\n'
    '<a href="img-only.html"><img src="only.png" alt="only alt"></a>'
))
page("cdata_pi.html", "http://example.com/cd/page", UTF8,
    '<?xml version="1.0" encoding="utf-8"?>\n'
    '<!DOCTYPE html>\n<html><head><title>CDATA <![CDATA[title]]></title></head><body>\n'
    '<![CDATA[<a href="cdata-in.html">in cdata</a>]]><a href="cdata-after.html">after cdata</a>\n'
    '<?php echo \'<a href="php.html">php</a>\'; ?><a href="pi-after.html">after pi</a>\n'
    '<svg><![CDATA[<a href="svg-cdata.html">x</a>]]><a href="svg-after.html"><text>svg</text></a></svg>\n'
    '</body></html>\n'
)
page("doctype_xhtml.html", "http://example.com/x/xhtml.html", UTF8,
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n'
    '<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en"><head><title>XHTML</title></head>'
    '<body><p><a href="xh1.html">xhtml one</a><br/><a href="xh2.html" rel="nofollow">xhtml two</a></p>'
    '<x:a xmlns:x="http://www.w3.org/1999/xhtml" href="prefixed.html">prefixed</x:a></body></html>\n'
)
page("doctype_weird.html", "http://example.com/x/weird.html", HTML,
    '<!doctype>\n<!DOCTYPE html SYSTEM "about:legacy-compat">\n<html><body>\n'
    '<!DOCTYPE again><a href="dt1.html">after second doctype</a>\n'
    '<!DOCTYPEhtml><a href="dt2.html">after squashed doctype</a>\n'
    '</body></html>\n'
)
page("nul_bytes.html", "http://example.com/nul/", UTF8,
    b'<!DOCTYPE html>\n<html><body>\n'
    b'<a href="/n\x00ul.html">nu\x00l text</a>\n'
    b'<a\x00 href="/tag-nul.html">tag nul</a>\n'
    b'<a href="/after-nul.html">after nul</a>\n'
    b'\x00<a href="/after-lone-nul.html">after lone nul</a>\n'
    b'</body></html>\n'
)
page("lone_lt.html", "http://example.com/lt/", UTF8, doc(
    'a < b <a href="lt1.html">after lone lt</a>\n'
    '< a href="lt-space.html">space after lt</a>\n'
    '<<a href="lt-double.html">double lt</a>\n'
    '<3 <a href="lt-heart.html">heart</a>\n'
    '<a href="lt-in<side.html">lt in href</a>\n'
    '<a href="lt-text.html">x < y</a>\n'
    '</ a><a href="lt-after-bogus-end.html">after &lt;/ a&gt;</a>'
))
page("frameset.html", "http://example.com/fs/", HTML,
    '<html><head><title>frames</title></head><frameset cols="50%,50%">'
    '<frame src="left.html"><frame src="right.html">'
    '<noframes><body><a href="nf.html">noframes link</a></body></noframes>'
    '</frameset></html>\n'
)
page("bad_urls.html", "http://example.com/bad/", UTF8, doc(
    '<a href="http://[::1">unclosed ipv6</a>\n'
    '<a href="http://[fe80::1%25eth0]/zone">ipv6 zone</a>\n'
    '<a href="http://example.com:99999/">big port</a>\n'
    '<a href="http://example.com:abc/">alpha port</a>\n'
    '<a href="http://exa mple.com/">space in host</a>\n'
    '<a href="http://xn--/">bare xn--</a>\n'
    '<a href="http://' + "a" * 70 + '.com/">long label</a>\n'
    '<a href="http://straße.de/päth?q=ä#frag ü">idna + non-ascii</a>\n'
    '<a href="http://例え.jp/">japanese idn</a>\n'
    '<a href="http://☃.net/">snowman</a>\n'
    '<a href="http://a\u200db.com/">zwj host</a>\n'
    '<a href="http://user:p@ss@example.com/">double at</a>\n'
    '<a href="http:///triple.html">triple slash</a>\n'
    '<a href="http:">scheme only</a>\n'
    '<a href="%zz/%41.html">bad pct</a>\n'
    '<a href="/päth/ü?q=ä&r=€#fräg">utf8 path</a>'
))
page("empty.html", "http://example.com/empty.html", UTF8, b"")
page("whitespace_only.html", "http://example.com/ws-only.html", UTF8, b"  \n\t\n")
page("fragment_only.html", "http://example.com/frag", None,
    '<a href="bare.html">bare anchor, no html/body, no content-type header</a>'
)
page("head_links.html", "http://example.com/head/", UTF8, doc(
    '<a href="body.html">body</a>',
    head='<link rel="stylesheet" href="s.css"><link rel="next" href="next.html">'
         '<a href="in-head.html">a in head</a><meta name="robots" content="nofollow">'
))

# --- charsets ---------------------------------------------------------------------
page("charset_latin1_meta.html", "http://example.com/cs/latin1/caf%C3%A9.html", HTML,
    '<!DOCTYPE html>\n<html><head><meta charset="iso-8859-1"><title>Café Ñandú</title></head><body>\n'
    '<a href="café.html">Café</a>\n'
    '<a href="/ñ/search?q=größe&x=£">Größe £</a>\n'
    '<a href="#fragé">fragment é</a>\n'
    '<a href="http://bücher.example/ü">IDN ü</a>\n'
    '</body></html>\n', enc="iso-8859-1")
page("charset_latin1_cp1252_bytes.html", "http://example.com/cs/l1/", "text/html; charset=latin-1",
    b'<!DOCTYPE html>\n<html><head><title>Euro \x80 quote \x93x\x94</title></head><body>\n'
    b'<a href="euro\x80.html">\x80 euro</a>\n'
    b'<a href="q?x=\x93\x94&y=\xe9">\x93quoted\x94 \xe9</a>\n'
    b'<a href="undef\x81\x8d\x8f\x90\x9d.html">undefined cp1252 slots</a>\n'
    b'</body></html>\n')
page("charset_cp1251_meta.html", "http://example.com/cs/ru/a/b/index.html", HTML,
    '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
    '<title>Привет мир</title></head><body>\n'
    '<a href="страница.html">Страница</a>\n'
    '<a href="/поиск?q=кошка&p=№1">Поиск кошка</a>\n'
    '<a href="http://пример.рф/путь">пример.рф</a>\n'
    '</body></html>\n', enc="cp1251")
page("charset_iso8859_15.html", "http://example.com/cs/l9", "text/html; charset=ISO-8859-15",
    '<html><head><title>Œuvre €</title></head><body>\n'
    '<a href="prix?montant=€10&œ=1">Prix € œ Ž</a>\n'
    '<a href="/š/ž.html">š ž</a>\n'
    '</body></html>\n', enc="iso-8859-15")
page("charset_shift_jis.html", "http://example.com/cs/jp/", HTML,
    '<html><head><meta charset="shift_jis"><title>日本語のページ</title></head><body>\n'
    '<a href="ページ.html">ページ</a>\n'
    '<a href="/検索?q=東京&表=ソ">東京 表 ソ</a>\n'
    '<a href="http://例え.テスト/パス">例え.テスト</a>\n'
    '</body></html>\n', enc="shift_jis")
page("charset_bom_utf8.html", "http://example.com/cs/bom8.html", HTML,
    b'\xef\xbb\xbf' + '<html><head><title>BOM ✓ – naïve</title></head><body>\n'
    '<a href="naïve.html">naïve ✓</a>\n'
    '<a href="/q?v=✓&e=€">check euro</a>\n'
    '</body></html>\n'.encode("utf-8"))
page("charset_bom_utf16le.html", "http://example.com/cs/bom16.html", HTML,
    b'\xff\xfe' + '<html><head><title>UTF-16 ü</title></head><body>\n'
    '<a href="utf16ü.html">ü sixteen</a>\n'
    '</body></html>\n'.encode("utf-16-le"))
page("charset_header_vs_meta.html", "http://example.com/cs/conflict.html", "text/html; charset=utf-8",
    '<html><head><meta charset="iso-8859-1"><title>Header says UTF-8, meta says latin-1: é</title></head><body>\n'
    '<a href="é.html">é</a>\n'
    '</body></html>\n', enc="utf-8")
page("charset_undeclared_latin1.html", "http://example.com/cs/none.html", HTML,
    '<html><head><title>No declaration: café</title></head><body>\n'
    '<a href="café.html">café</a>\n'
    '</body></html>\n', enc="iso-8859-1")


# --- Scrapy's own sample pages (files copied from the sdist, see NOTICE.txt) -------
SCRAPY_PAGES: list[tuple[str, str, str | None]] = [
    ("linkextractor.html", "http://example.com/sample1.html", "text/html; charset=utf-8"),
    ("linkextractor_latin1.html", "http://example.com/sample_latin1.html", HTML),
    ("linkextractor_no_href.html", "http://example.com/sample_no_href.html", UTF8),
    ("linkextractor_noenc.html", "http://example.com/sample_noenc.html", HTML),
]


def main() -> None:
    CUSTOM.mkdir(parents=True, exist_ok=True)
    names = [n for n, *_ in CUSTOM_PAGES]
    assert len(names) == len(set(names)), "duplicate page name"
    for old in CUSTOM.glob("*.html"):
        if old.name not in names:
            old.unlink()
    manifest = []
    for name, url, ctype in SCRAPY_PAGES:
        assert (HERE / "pages" / "scrapy" / name).is_file(), name
        manifest.append({"page": f"pages/scrapy/{name}", "url": url, "content_type": ctype})
    for name, url, ctype, data in CUSTOM_PAGES:
        (CUSTOM / name).write_bytes(data)
        manifest.append({"page": f"pages/custom/{name}", "url": url, "content_type": ctype})
    with open(HERE / "manifest.json", "w", encoding="utf-8") as f:
        json.dump({"pages": manifest}, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(CUSTOM_PAGES)} custom pages, manifest with {len(manifest)} entries")


if __name__ == "__main__":
    main()
