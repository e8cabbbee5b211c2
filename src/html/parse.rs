//! The tokenizer and tree builder (see the module docs for the rules).

use super::dom::{Attr, Document, Kind, NONE, Node, Span};
use super::entities::decode_entities;

/// Elements that never have children.
pub(crate) fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
            | "keygen"
            | "basefont"
            | "bgsound"
            | "frame"
    )
}

/// Elements whose content is raw text (no tags, no references).
pub(crate) fn is_raw_text(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "xmp" | "iframe" | "noembed" | "noframes"
    )
}

/// Elements whose content is text with references but no tags.
fn is_rcdata(name: &str) -> bool {
    matches!(name, "textarea" | "title")
}

/// Opening one of these closes an open `<p>`.
fn closes_p(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "center"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "hr"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "section"
            | "table"
            | "ul"
            | "li"
            | "dd"
            | "dt"
    )
}

/// Elements that may appear in `<head>`.
fn is_head_content(name: &str) -> bool {
    matches!(
        name,
        "base" | "link" | "meta" | "title" | "style" | "script" | "noscript" | "template"
    )
}

use super::dom::name_key as key;

const K_HTML: u64 = key("html");
const K_HEAD: u64 = key("head");
const K_BODY: u64 = key("body");
const K_P: u64 = key("p");
const K_LI: u64 = key("li");
const K_DT: u64 = key("dt");
const K_DD: u64 = key("dd");
const K_OPTION: u64 = key("option");
const K_TR: u64 = key("tr");
const K_TD: u64 = key("td");
const K_TH: u64 = key("th");
const K_A: u64 = key("a");
const K_TABLE: u64 = key("table");
const K_BUTTON: u64 = key("button");
const K_UL: u64 = key("ul");
const K_OL: u64 = key("ol");
const K_DL: u64 = key("dl");
const K_TBODY: u64 = key("tbody");
const K_THEAD: u64 = key("thead");
const K_TFOOT: u64 = key("tfoot");

struct Builder {
    doc: Document,
    /// Open elements: node id and name key.
    stack: Vec<(u32, u64)>,
}

impl Builder {
    fn new(len: usize) -> Self {
        let mut doc = Document {
            nodes: Vec::with_capacity(len / 16 + 8),
            attrs: Vec::with_capacity(len / 64 + 4),
            buf: String::with_capacity(len),
        };
        doc.nodes.push(Node {
            parent: NONE,
            first_child: NONE,
            last_child: NONE,
            prev: NONE,
            next: NONE,
            end: 1,
            kind: Kind::Document,
        });
        Self {
            doc,
            stack: Vec::new(),
        }
    }

    fn current(&self) -> u32 {
        self.stack.last().map_or(0, |e| e.0)
    }

    fn current_key(&self) -> u64 {
        self.stack.last().map_or(0, |e| e.1)
    }

    fn is_open(&self, k: u64) -> bool {
        self.stack.iter().any(|e| e.1 == k)
    }

    fn push_str(&mut self, s: &str) -> Span {
        let start = u32::try_from(self.doc.buf.len()).unwrap_or(u32::MAX);
        self.doc.buf.push_str(s);
        Span {
            start,
            len: u32::try_from(s.len()).unwrap_or(0),
        }
    }

    fn append(&mut self, kind: Kind) -> u32 {
        let parent = self.current();
        let id = self.doc.nodes.len() as u32;
        let prev = self.doc.nodes[parent as usize].last_child;
        self.doc.nodes.push(Node {
            parent,
            first_child: NONE,
            last_child: NONE,
            prev,
            next: NONE,
            end: id + 1,
            kind,
        });
        if prev == NONE {
            self.doc.nodes[parent as usize].first_child = id;
        } else {
            self.doc.nodes[prev as usize].next = id;
        }
        self.doc.nodes[parent as usize].last_child = id;
        id
    }

    fn pop(&mut self) {
        if let Some((id, _)) = self.stack.pop() {
            let end = self.doc.nodes.len() as u32;
            self.doc.nodes[id as usize].end = end;
        }
    }

    /// Pops up to and including the nearest open `name` not beyond a `boundary`.
    fn close(&mut self, name: u64, boundaries: &[u64]) -> bool {
        let mut found = None;
        for (i, &(_, k)) in self.stack.iter().enumerate().rev() {
            if k == name {
                found = Some(i);
                break;
            }
            if boundaries.contains(&k) {
                return false;
            }
        }
        let Some(i) = found else { return false };
        while self.stack.len() > i {
            self.pop();
        }
        true
    }

    fn text(&mut self, raw: &str, decode: bool) {
        if raw.is_empty() {
            return;
        }
        if self.stack.is_empty() {
            if raw.trim().is_empty() {
                return;
            }
            self.ensure_root();
        }
        let text = if decode {
            decode_entities(raw, false)
        } else {
            raw.into()
        };
        let span = self.push_str(&text);
        self.append(Kind::Text(span));
    }

    fn ensure_root(&mut self) {
        if self.stack.is_empty() {
            let name = self.push_str("html");
            let id = self.append(Kind::Element {
                name,
                key: K_HTML,
                attrs: self.doc.attrs.len() as u32,
                attrs_len: 0,
            });
            self.stack.push((id, K_HTML));
        }
    }

    fn start_tag(&mut self, name: &str, html: &str, attrs: &[RawAttr]) -> u32 {
        let k = key(name);
        if k == K_HTML {
            if self.stack.is_empty() {
                return self.open(name, html, attrs);
            }
            return self.stack[0].0;
        }
        self.ensure_root();
        if self.is_open(K_HEAD) && !is_head_content(name) {
            self.close(K_HEAD, &[]);
        }
        if closes_p(name) {
            self.close(K_P, &[K_BUTTON, K_TABLE, K_TD, K_TH, K_HTML]);
        }
        match name {
            "li" => {
                self.close(K_LI, &[K_UL, K_OL, K_TABLE]);
            }
            "dt" | "dd" if !self.close(K_DT, &[K_DL, K_TABLE]) => {
                self.close(K_DD, &[K_DL, K_TABLE]);
            }
            "option" | "optgroup" if self.current_key() == K_OPTION => {
                self.pop();
            }
            "tr" => {
                self.close(K_TR, &[K_TABLE, K_TBODY, K_THEAD, K_TFOOT]);
            }
            "td" | "th" if !self.close(K_TD, &[K_TR, K_TABLE]) => {
                self.close(K_TH, &[K_TR, K_TABLE]);
            }
            "thead" | "tbody" | "tfoot" => {
                for t in [K_THEAD, K_TBODY, K_TFOOT] {
                    self.close(t, &[K_TABLE]);
                }
            }
            "a" => {
                self.close(K_A, &[K_TABLE, K_TD, K_TH]);
            }
            _ => {}
        }
        self.open(name, html, attrs)
    }

    fn open(&mut self, name: &str, html: &str, attrs: &[RawAttr]) -> u32 {
        let name_span = self.push_str(name);
        let first = self.doc.attrs.len();
        for a in attrs {
            let raw_name = html.get(a.name.0..a.name.1).unwrap_or("");
            let name = lower(raw_name);
            let nk = key(&name);
            let duplicate = self.doc.attrs[first..]
                .iter()
                .any(|x| x.key == nk && self.doc.str(x.name) == name);
            if duplicate {
                continue;
            }
            let k = key(&name);
            let name = self.push_str(&name);
            let raw_value = html.get(a.value.0..a.value.1).unwrap_or("");
            let value = self.push_str(&decode_entities(raw_value, true));
            self.doc.attrs.push(Attr {
                name,
                key: k,
                value,
            });
        }
        let id = self.append(Kind::Element {
            name: name_span,
            key: key(name),
            attrs: first as u32,
            attrs_len: (self.doc.attrs.len() - first) as u32,
        });
        if !is_void(name) {
            self.stack.push((id, key(name)));
        }
        id
    }

    fn end_tag(&mut self, name: &str) {
        let k = key(name);
        // </html>, </body> and void end tags are ignored: content after them still
        // belongs to the document, as browsers and lxml treat it.
        if is_void(name) || k == K_HTML || k == K_BODY {
            return;
        }
        self.close(k, &[]);
    }

    fn finish(mut self) -> Document {
        while !self.stack.is_empty() {
            self.pop();
        }
        let end = self.doc.nodes.len() as u32;
        self.doc.nodes[0].end = end;
        self.doc
    }
}

fn find_ci(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// An attribute as found in the source: byte ranges of its name and value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawAttr {
    name: (usize, usize),
    value: (usize, usize),
}

/// Scans attributes after a tag name up to `>`; returns the position after the tag.
/// Nothing is allocated: names and values stay ranges of `html`.
pub(crate) fn scan_attributes(html: &str, mut pos: usize, out: &mut Vec<RawAttr>) -> usize {
    let bytes = html.as_bytes();
    out.clear();
    loop {
        while pos < bytes.len() && (bytes[pos].is_ascii_whitespace() || bytes[pos] == b'/') {
            pos += 1;
        }
        if pos >= bytes.len() {
            return pos;
        }
        if bytes[pos] == b'>' {
            return pos + 1;
        }
        let start = pos;
        while pos < bytes.len()
            && !bytes[pos].is_ascii_whitespace()
            && !matches!(bytes[pos], b'=' | b'>' | b'/')
        {
            pos += 1;
        }
        if pos == start {
            pos += 1;
            continue;
        }
        let name = (start, pos);
        while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        let value = if pos < bytes.len() && bytes[pos] == b'=' {
            pos += 1;
            while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
                pos += 1;
            }
            if pos < bytes.len() && (bytes[pos] == b'"' || bytes[pos] == b'\'') {
                let q = bytes[pos];
                let vstart = pos + 1;
                let vend = bytes[vstart..]
                    .iter()
                    .position(|&b| b == q)
                    .map_or(bytes.len(), |e| vstart + e);
                pos = (vend + 1).min(bytes.len());
                (vstart, vend)
            } else {
                let vstart = pos;
                while pos < bytes.len() && !bytes[pos].is_ascii_whitespace() && bytes[pos] != b'>' {
                    pos += 1;
                }
                (vstart, pos)
            }
        } else {
            (pos, pos)
        };
        out.push(RawAttr { name, value });
    }
}

/// A tag or attribute name, lower-cased without allocating when it already is.
fn lower(name: &str) -> std::borrow::Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(name.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// Parses `html` into a document.
pub(crate) fn parse(html: &str) -> Document {
    let bytes = html.as_bytes();
    let mut b = Builder::new(html.len());
    let mut attrs = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let Some(lt) = bytes[pos..].iter().position(|&c| c == b'<') else {
            b.text(&html[pos..], true);
            break;
        };
        let start = pos + lt;
        b.text(&html[pos..start], true);
        let rest = &bytes[start..];
        if rest.starts_with(b"<!--") {
            pos = find(&bytes[start + 4..], b"-->").map_or(bytes.len(), |e| start + 4 + e + 3);
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"<?") {
            pos = rest
                .iter()
                .position(|&c| c == b'>')
                .map_or(bytes.len(), |e| start + e + 1);
            continue;
        }
        if let Some(after) = rest.strip_prefix(b"</") {
            let len = after
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
            if len == 0 {
                pos = rest
                    .iter()
                    .position(|&c| c == b'>')
                    .map_or(bytes.len(), |e| start + e + 1);
                continue;
            }
            let name = lower(&html[start + 2..start + 2 + len]);
            b.end_tag(&name);
            pos = rest
                .iter()
                .position(|&c| c == b'>')
                .map_or(bytes.len(), |e| start + e + 1);
            continue;
        }
        let len = rest[1..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-' || **c == b':')
            .count();
        if len == 0 || !rest[1].is_ascii_alphabetic() {
            b.text("<", false);
            pos = start + 1;
            continue;
        }
        let name = lower(&html[start + 1..start + 1 + len]);
        pos = scan_attributes(html, start + 1 + len, &mut attrs);
        b.start_tag(&name, html, &attrs);
        if is_raw_text(&name) || is_rcdata(&name) {
            let closing = format!("</{name}");
            let end = find_ci(&bytes[pos..], closing.as_bytes()).map_or(bytes.len(), |e| pos + e);
            b.text(&html[pos..end], is_rcdata(&name));
            b.close(key(&name), &[]);
            pos = bytes[end..]
                .iter()
                .position(|&c| c == b'>')
                .map_or(bytes.len(), |e| end + e + 1);
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::{ElementRef, Selector};

    fn names(doc: &Document, css: &str) -> Vec<String> {
        doc.select(&Selector::parse(css).unwrap())
            .iter()
            .map(|e| e.html())
            .collect()
    }

    #[test]
    fn builds_a_tree_with_implied_closes() {
        let doc = parse(
            "<p>one<p>two<div>block</div><ul><li>a<li>b</ul><table><tr><td>1<td>2<tr><td>3</table>",
        );
        assert_eq!(names(&doc, "p"), ["<p>one</p>", "<p>two</p>"]);
        assert_eq!(names(&doc, "li"), ["<li>a</li>", "<li>b</li>"]);
        assert_eq!(names(&doc, "tr").len(), 2);
        assert_eq!(
            names(&doc, "td"),
            ["<td>1</td>", "<td>2</td>", "<td>3</td>"]
        );
        assert_eq!(doc.root_element().unwrap().name(), "html", "root supplied");
    }

    #[test]
    fn raw_text_comments_and_void_elements() {
        let doc = parse(
            "<head><title>A &amp; B</title><script>if (a < b) { x = '</div>'; }</script></head><body><!-- <p>no</p> --><br><img src=x>after</body>",
        );
        assert_eq!(names(&doc, "title"), ["<title>A &amp; B</title>"]);
        assert_eq!(
            doc.select(&Selector::parse("script").unwrap())[0].text_content(),
            "if (a < b) { x = '</div>'; }"
        );
        assert!(names(&doc, "p").is_empty());
        let body = doc.select(&Selector::parse("body").unwrap());
        assert_eq!(body[0].text_content(), "after");
        let img: Vec<ElementRef<'_>> = doc.select(&Selector::parse("img[src=x]").unwrap());
        assert_eq!(img.len(), 1);
    }

    #[test]
    fn stray_end_tags_and_unclosed_elements() {
        let doc = parse("<div><span>x</b></span></i><div>y");
        assert_eq!(names(&doc, "div > span"), ["<span>x</span>"]);
        assert_eq!(names(&doc, "div div"), ["<div>y</div>"]);
        let doc = parse("");
        assert!(doc.root_element().is_none());
        let doc = parse("<<<>>> < p > &amp; </ >");
        assert!(doc.root_element().is_some());
    }
}
