//! An element as lxml prints it (`etree.tostring(e, method="html")`, what parsel's
//! `.get()` returns): libxml2 2.14's `htmlNodeDumpFormatOutput` without formatting.
//!
//! * Elements: `<name attrs>`, children, `</name>`; libxml2's 13 void elements print
//!   `<name attrs>` alone, an empty `<li>` too (its end tag "need not be saved"), any
//!   other empty element `<name></name>`.
//! * Attributes: libxml2's boolean attributes (`checked`, `selected`...) and attributes
//!   written without a value print their name alone. A value has `<`, `>` and `&`
//!   escaped (but `<!--...-->` and `&{...}` kept as written, HTML 4's server-side
//!   include and script-macro forms); `href`, `action`, `src` and `name` on `<a>` are
//!   then URI-escaped (leading blanks dropped; spaces, controls and non-ASCII bytes as
//!   `%XX`; printable ASCII kept). The value is quoted with `"`, or with `'` when it
//!   holds a `"` and no `'`, else `"` with `&quot;`.
//! * Text: `<`, `>` and `&` escaped, nothing else (no `&nbsp;`, no character
//!   references); inside `<script>` and `<style>` as it is.
//! * Comments: `<!--text-->`.
//!
//! The walk is iterative over the arena (descendants are the ids up to an element's
//! `end`), so no recursion follows the tree's depth.

use super::dom::{Document, ElementRef, Kind, NONE};
use super::rules::is_boolean_attr;

impl ElementRef<'_> {
    /// The element serialized as lxml serializes it (its outer HTML, what parsel's
    /// `.get()` gives).
    pub fn html(&self) -> String {
        let mut out = String::new();
        element_html(self.doc, self.id, &mut out);
        out
    }
}

/// Appends the outer HTML of element `id` to `out` (its XML for an XML document).
pub(crate) fn element_html(doc: &Document, id: u32, out: &mut String) {
    if let Some(xml) = doc.xml.as_deref() {
        element_xml(doc, xml, id, out);
        return;
    }
    let Some(root) = doc.nodes.get(id as usize) else {
        return;
    };
    let end = root.end;
    // The elements whose start tag is written and end tag not yet.
    let mut open: Vec<u32> = Vec::new();
    let mut i = id;
    while i < end {
        // Close the elements this node is not inside.
        while let Some(&top) = open.last() {
            if doc.nodes[top as usize].end > i {
                break;
            }
            open.pop();
            end_tag(doc, top, out);
        }
        let node = &doc.nodes[i as usize];
        match node.kind {
            Kind::Element { .. } => {
                let name = element_name(doc, i);
                start_tag(doc, i, name, out);
                if super::rules::is_void(name) {
                    // Children (there are none from the parser) are not printed.
                    i = node.end;
                    continue;
                }
                if node.first_child == NONE {
                    if name != "li" {
                        out.push_str("</");
                        out.push_str(name);
                        out.push('>');
                    }
                } else {
                    open.push(i);
                }
            }
            Kind::Text(span) => {
                let raw = matches!(element_name(doc, node.parent), "script" | "style");
                let text = doc.str(span);
                if raw {
                    out.push_str(text);
                } else {
                    escape_text(text, out);
                }
            }
            Kind::Comment(span) => {
                out.push_str("<!--");
                out.push_str(doc.str(span));
                out.push_str("-->");
            }
            Kind::Pi(span) => {
                out.push_str("<?");
                out.push_str(doc.str(span));
                out.push_str("?>");
            }
            Kind::Document => {}
        }
        i += 1;
    }
    while let Some(top) = open.pop() {
        end_tag(doc, top, out);
    }
}

fn element_name(doc: &Document, id: u32) -> &str {
    match doc.nodes.get(id as usize).map(|n| n.kind) {
        Some(Kind::Element { name, .. }) => doc.str(name),
        _ => "",
    }
}

fn end_tag(doc: &Document, id: u32, out: &mut String) {
    out.push_str("</");
    out.push_str(element_name(doc, id));
    out.push('>');
}

fn start_tag(doc: &Document, id: u32, name: &str, out: &mut String) {
    out.push('<');
    out.push_str(name);
    let Some(Kind::Element {
        attrs, attrs_len, ..
    }) = doc.nodes.get(id as usize).map(|n| n.kind)
    else {
        return;
    };
    let list = doc
        .attrs
        .get(attrs as usize..(attrs + attrs_len) as usize)
        .unwrap_or(&[]);
    for a in list {
        let attr = doc.str(a.name);
        out.push(' ');
        out.push_str(attr);
        if is_boolean_attr(attr) || a.value.is_valueless() {
            continue;
        }
        let mut value = String::new();
        escape_attr(doc.str(a.value), &mut value);
        out.push('=');
        let uri = matches!(attr, "href" | "action" | "src") || (attr == "name" && name == "a");
        if uri {
            let trimmed = value.trim_start_matches([' ', '\t', '\n', '\r']);
            push_quoted(&uri_escape(trimmed), out);
        } else {
            push_quoted(&value, out);
        }
    }
    out.push('>');
}

/// `xmlEscapeText` for HTML text: `<`, `>`, `&`.
fn escape_text(s: &str, out: &mut String) {
    let mut rest = s;
    while let Some(i) = rest.find(['<', '>', '&']) {
        out.push_str(&rest[..i]);
        out.push_str(match rest.as_bytes()[i] {
            b'<' => "&lt;",
            b'>' => "&gt;",
            _ => "&amp;",
        });
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
}

/// `xmlEscapeText` for an HTML attribute value: `<`, `>`, `&`, except that a
/// `<!--...-->` and a `&{...}` are written as they are.
fn escape_attr(s: &str, out: &mut String) {
    let mut rest = s;
    while let Some(i) = rest.find(['<', '>', '&']) {
        out.push_str(&rest[..i]);
        let at = &rest[i..];
        if at.starts_with("<!--")
            && let Some(e) = at.find("-->")
        {
            out.push_str(&at[..e + 3]);
            rest = &at[e + 3..];
            continue;
        }
        if at.starts_with("&{")
            && let Some(e) = at.find('}')
        {
            out.push_str(&at[..=e]);
            rest = &at[e + 1..];
            continue;
        }
        out.push_str(match at.as_bytes()[0] {
            b'<' => "&lt;",
            b'>' => "&gt;",
            _ => "&amp;",
        });
        rest = &at[1..];
    }
    out.push_str(rest);
}

/// `xmlURIEscapeStr(value, "\"#$%&+,/:;<=>?@[\\]^`{|}")`: every byte but the
/// unreserved ones and that list as `%XX`.
fn uri_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        let keep = b.is_ascii_alphanumeric()
            || b"-_.!~*'()".contains(&b)
            || b"\"#$%&+,/:;<=>?@[\\]^`{|}".contains(&b);
        if keep {
            out.push(char::from(b));
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
    out
}

/// `xmlOutputBufferWriteQuotedString`.
fn push_quoted(value: &str, out: &mut String) {
    if value.contains('"') {
        if value.contains('\'') {
            out.push('"');
            out.push_str(&value.replace('"', "&quot;"));
            out.push('"');
        } else {
            out.push('\'');
            out.push_str(value);
            out.push('\'');
        }
    } else {
        out.push('"');
        out.push_str(value);
        out.push('"');
    }
}

/// An XML element as lxml prints it (`tostring(e, method="xml")`): `<name/>` when
/// empty; the namespace declarations written on each element before its attributes,
/// and on the printed element those in scope too — its own namespace's first, then
/// the others from the nearest declaration outwards; `<`, `>`, `&` escaped in text, and
/// `"`, tab and line breaks too in attribute values.
fn element_xml(doc: &Document, xml: &super::dom::XmlInfo, id: u32, out: &mut String) {
    let Some(root) = doc.nodes.get(id as usize) else {
        return;
    };
    let end = root.end;
    let mut open: Vec<u32> = Vec::new();
    let mut i = id;
    while i < end {
        while let Some(&top) = open.last() {
            if doc.nodes[top as usize].end > i {
                break;
            }
            open.pop();
            end_tag(doc, top, out);
        }
        let node = &doc.nodes[i as usize];
        match node.kind {
            Kind::Element { .. } => {
                let name = element_name(doc, i);
                out.push('<');
                out.push_str(name);
                let mut decls: Vec<(&str, &str)> = Vec::new();
                if i == id {
                    let uri = xml.node_uri(i);
                    if !uri.is_empty() {
                        let prefix = name.rsplit_once(':').map_or("", |(p, _)| p);
                        decls.push((prefix, uri));
                    }
                    let mut at = i;
                    while at != NONE && at != 0 {
                        for (p, u) in xml.decls_of(at) {
                            if !decls.iter().any(|(q, _)| *q == p) {
                                decls.push((p, u));
                            }
                        }
                        at = doc.nodes[at as usize].parent;
                    }
                } else {
                    decls.extend(xml.decls_of(i));
                }
                for (p, u) in decls {
                    out.push_str(if p.is_empty() { " xmlns" } else { " xmlns:" });
                    out.push_str(p);
                    out.push_str("=\"");
                    escape_xml(u, true, out);
                    out.push('"');
                }
                if let Kind::Element {
                    attrs, attrs_len, ..
                } = node.kind
                {
                    for a in doc
                        .attrs
                        .get(attrs as usize..(attrs + attrs_len) as usize)
                        .unwrap_or(&[])
                    {
                        out.push(' ');
                        out.push_str(doc.str(a.name));
                        out.push_str("=\"");
                        escape_xml(doc.str(a.value), true, out);
                        out.push('"');
                    }
                }
                if node.first_child == NONE {
                    out.push_str("/>");
                } else {
                    out.push('>');
                    open.push(i);
                }
            }
            Kind::Text(span) => escape_xml(doc.str(span), false, out),
            Kind::Comment(span) => {
                out.push_str("<!--");
                out.push_str(doc.str(span));
                out.push_str("-->");
            }
            Kind::Pi(span) => {
                out.push_str("<?");
                out.push_str(doc.str(span));
                out.push_str("?>");
            }
            Kind::Document => {}
        }
        i += 1;
    }
    while let Some(top) = open.pop() {
        end_tag(doc, top, out);
    }
}

/// libxml2's XML escaping: `<`, `>`, `&` (and `\r`) in text; in attribute values also
/// `"` and the tab and line breaks, as character references.
fn escape_xml(s: &str, attr: bool, out: &mut String) {
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\r' => out.push_str("&#13;"),
            '"' if attr => out.push_str("&quot;"),
            '\n' if attr => out.push_str("&#10;"),
            '\t' if attr => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
}
