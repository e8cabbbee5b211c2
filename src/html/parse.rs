//! The DOM's [`TreeSink`]: builds the arena of [`Document`] from the tree builder's
//! calls. The rules (what closes what) live in `tree.rs`, shared with the link scanner.
//! The document's text buffer starts with a copy of the input; texts, values and names
//! that are slices of the input are spans of that copy, the rest is appended.

use super::dom::{Attr, Document, Kind, NONE, Node, Span};
use super::entities::decode_into;
use super::rules::is_boolean_attr;
use super::tokenizer::Attrs;
use super::tree::{ParseStats, TreeBuilder, TreeSink};
use crate::util::FxHashSet;

/// Above this many attributes on one element, duplicates are found with a set.
const LINEAR_DEDUP: usize = 16;

struct DomSink {
    doc: Document,
    /// Keys of the current element's attributes, when it has many.
    seen: FxHashSet<u64>,
    /// Work done (attribute comparisons, entity lookups).
    steps: u64,
    /// Tag and attribute names already in the text buffer, by [`name_key`], for the
    /// names that are not slices of the input (those are spans of its copy): names
    /// lower-cased from upper-case markup (`<DIV CLASS=...>` all over a page) and
    /// the implied `html`/`head`/`body`. Direct-mapped; only names of up to 8 bytes,
    /// whose key is the bytes themselves (a key and length match is a name match).
    /// (Short texts, the `"\n"` between block elements, shared the same way cost more
    /// than they saved: they evict the names.)
    ///
    /// [`name_key`]: super::dom::name_key
    names: [(u64, Span); NAME_SLOTS],
    /// Address and length of the input the tree builder reads (its first bytes of
    /// `doc.buf` are a copy of it, [`TreeSink::source`]): a text, value or name that
    /// is a slice of it becomes a span of the copy, not a copy of its own — one copy of
    /// the page instead of one per text (~100 per page).
    src: (usize, usize),
}

/// Slots of [`DomSink::names`] (a power of two: the hash's top bits index them).
const NAME_SLOTS: usize = 64;

impl DomSink {
    fn new(len: usize) -> Self {
        let (mut nodes, mut attrs, mut buf) = take_buffers();
        nodes.reserve(len / 16 + 8);
        attrs.reserve(len / 64 + 4);
        // The input's copy, and room for decoded text and names not in the input.
        buf.reserve(len + len / 8 + 64);
        let mut doc = Document {
            nodes,
            attrs,
            buf,
            xml: None,
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
            seen: FxHashSet::default(),
            steps: 0,
            names: [(0, Span::default()); NAME_SLOTS],
            src: (0, 0),
        }
    }

    /// The span of the input's copy that holds `s`, when `s` is a slice of the input.
    #[inline]
    fn in_source(&self, s: &str) -> Option<Span> {
        let offset = (s.as_ptr() as usize).wrapping_sub(self.src.0);
        if offset <= self.src.1 && s.len() <= self.src.1 - offset {
            Some(Span {
                start: u32::try_from(offset).ok()?,
                len: u32::try_from(s.len()).ok()?,
            })
        } else {
            None
        }
    }

    /// `s` as a span: of the input's copy when it is a slice of the input, else of a
    /// copy appended to the buffer.
    #[inline]
    fn span_of(&mut self, s: &str) -> Span {
        match self.in_source(s) {
            Some(span) => span,
            None => self.push_str(s),
        }
    }

    /// A span holding `name` (whose key is `k`): the one already in the buffer when a
    /// short name was seen before, else a new one.
    #[inline(always)]
    fn push_name(&mut self, name: &str, k: u64) -> Span {
        // A name as written (already lower-case) is a slice of the input.
        if let Some(span) = self.in_source(name) {
            return span;
        }
        if name.len() > 8 || name.is_empty() {
            return self.push_str(name);
        }
        // Fibonacci hashing of the key: the top bits pick the slot.
        let slot =
            (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - NAME_SLOTS.trailing_zeros())) as usize;
        match self.names[slot] {
            // The length too: "a" and "a\0" have one key.
            (key, span) if key == k && span.len as usize == name.len() => span,
            _ => {
                let span = self.push_str(name);
                self.names[slot] = (k, span);
                span
            }
        }
    }

    #[inline]
    fn push_str(&mut self, s: &str) -> Span {
        let start = u32::try_from(self.doc.buf.len()).unwrap_or(u32::MAX);
        self.doc.buf.push_str(s);
        Span {
            start,
            len: u32::try_from(s.len()).unwrap_or(0),
        }
    }

    /// Appends `s` with its character references decoded straight into the text
    /// buffer (no intermediate string); for text the tokenizer saw an `&` in (the
    /// rest is copied as it is).
    fn push_decoded(&mut self, s: &str, in_attribute: bool) -> Span {
        let start = u32::try_from(self.doc.buf.len()).unwrap_or(u32::MAX);
        self.steps += decode_into(s, in_attribute, &mut self.doc.buf);
        let end = u32::try_from(self.doc.buf.len()).unwrap_or(u32::MAX);
        Span {
            start,
            len: end.saturating_sub(start),
        }
    }

    #[inline]
    fn append(&mut self, parent: u32, kind: Kind) -> u32 {
        self.doc.append_child(parent, kind)
    }

    /// Whether an attribute named `name` (key `k`) is already on the element whose
    /// attributes start at `first`.
    fn duplicate(&mut self, first: usize, name: &str, k: u64) -> bool {
        let kept = self.doc.attrs.len() - first;
        if kept < LINEAR_DEDUP {
            self.steps += kept as u64;
            return self.doc.attrs[first..]
                .iter()
                .any(|x| x.key == k && self.doc.str(x.name) == name);
        }
        self.steps += 1;
        if kept == LINEAR_DEDUP {
            self.steps += kept as u64;
            self.seen.clear();
            self.seen
                .extend(self.doc.attrs[first..].iter().map(|x| x.key));
        }
        // Keys of long names are hashes: on a key match, compare the names.
        !self.seen.insert(k)
            && self.doc.attrs[first..]
                .iter()
                .any(|x| x.key == k && self.doc.str(x.name) == name)
    }
}

impl TreeSink for DomSink {
    #[inline(always)]
    fn element(&mut self, parent: u32, name: &str, k: u64, attrs: Attrs<'_>) -> u32 {
        let name_span = self.push_name(name, k);
        let first = self.doc.attrs.len();
        for (name, raw_value, valued, refs) in attrs.iter_valued() {
            let nk = super::name::name_key(&name);
            if self.duplicate(first, &name, nk) {
                continue;
            }
            let name_span = self.push_name(&name, nk);
            // libxml2 gives its boolean attributes written without a value their own
            // name as value (`<input checked>`: `@checked` is "checked").
            let value = if !valued && is_boolean_attr(&name) {
                name_span
            } else if !valued {
                Span::VALUELESS
            } else if refs {
                self.push_decoded(raw_value, true)
            } else {
                self.span_of(raw_value)
            };
            let name = name_span;
            self.doc.attrs.push(Attr {
                name,
                key: nk,
                value,
            });
        }
        self.append(
            parent,
            Kind::Element {
                name: name_span,
                key: k,
                attrs: first as u32,
                attrs_len: (self.doc.attrs.len() - first) as u32,
            },
        )
    }

    #[inline(always)]
    fn text(&mut self, parent: u32, text: &str, decode: bool) {
        if text.is_empty() {
            return;
        }
        // Text right after text (markup between them made no node: a doctype, a
        // dropped tag) is one node, as libxml2 merges it: the earlier text is moved to
        // the end of the buffer once, and what follows is appended to it.
        let last = self.doc.nodes[parent as usize].last_child;
        if last != NONE
            && let Kind::Text(prev) = self.doc.nodes[last as usize].kind
        {
            let at_end = (prev.start + prev.len) as usize == self.doc.buf.len();
            let start = if at_end {
                prev.start
            } else {
                let (a, b) = (prev.start as usize, (prev.start + prev.len) as usize);
                let start = self.doc.buf.len();
                self.doc.buf.extend_from_within(a..b);
                u32::try_from(start).unwrap_or(u32::MAX)
            };
            if decode {
                self.push_decoded(text, false);
            } else {
                self.push_str(text);
            }
            let len = u32::try_from(self.doc.buf.len()).unwrap_or(u32::MAX) - start;
            self.doc.nodes[last as usize].kind = Kind::Text(Span { start, len });
            return;
        }
        let span = if decode {
            // The tokenizer found an `&` in it (else `decode` is false).
            self.push_decoded(text, false)
        } else {
            self.span_of(text)
        };
        if span.len > 0 {
            self.append(parent, Kind::Text(span));
        }
    }

    const COMMENTS: bool = true;

    fn comment(&mut self, parent: u32, text: &str) {
        let span = self.span_of(text);
        self.append(parent, Kind::Comment(span));
    }

    fn steps(&self) -> u64 {
        self.steps
    }

    fn source(&mut self, html: &str) {
        // Before anything else is written: the input's copy starts at offset 0.
        if self.doc.buf.is_empty() && u32::try_from(html.len()).is_ok() {
            self.doc.buf.push_str(html);
            self.src = (html.as_ptr() as usize, html.len());
        }
    }

    fn close(&mut self, node: u32) {
        let end = self.doc.nodes.len() as u32;
        if let Some(n) = self.doc.nodes.get_mut(node as usize) {
            n.end = end;
        }
    }
}

/// Buffers of dropped documents, reused by the next parse on this thread: a crawl
/// parses one page after another, and each page's three vectors (a few KiB to tens of
/// KiB) would otherwise be allocated and freed again (large blocks: the allocator's
/// slow path). Bounded in count and in what one set may hold.
type Buffers = (Vec<Node>, Vec<Attr>, String);

thread_local! {
    static POOL: std::cell::RefCell<Vec<Buffers>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Sets of buffers kept.
const POOL_SETS: usize = 4;
/// Bytes one kept set may hold (a larger page's buffers are freed).
const POOL_SET_BYTES: usize = 256 << 10;

/// Empty buffers, reused when the pool has some.
fn take_buffers() -> Buffers {
    crate::util::pool_take(&POOL)
}

/// Hands a dropped document's buffers back to the pool (emptied), if they are not
/// too large and the pool is not full.
pub(crate) fn recycle(mut nodes: Vec<Node>, mut attrs: Vec<Attr>, mut buf: String) {
    let bytes = nodes.capacity() * std::mem::size_of::<Node>()
        + attrs.capacity() * std::mem::size_of::<Attr>()
        + buf.capacity();
    if bytes == 0 || bytes > POOL_SET_BYTES {
        return;
    }
    nodes.clear();
    attrs.clear();
    buf.clear();
    crate::util::pool_give(&POOL, (nodes, attrs, buf), POOL_SETS);
}

/// Parses `html` into a document.
pub(crate) fn parse(html: &str) -> (Document, ParseStats) {
    let (sink, stats) = TreeBuilder::new(DomSink::new(html.len())).run(html);
    let mut doc = sink.doc;
    let end = doc.nodes.len() as u32;
    doc.nodes[0].end = end;
    // The capacities above are guesses from the input's size (generous, so an ordinary
    // page never regrows); give back what a large page did not use, so a document costs
    // what it holds (a 50 MB text run once kept 4.9× its size reserved).
    shrink(&mut doc.nodes);
    shrink(&mut doc.attrs);
    // The text buffer's reserve (an eighth, for decoded text) is given back whenever it
    // is more than the slack: it is left unused by most large pages.
    if doc.buf.capacity() - doc.buf.len() > SHRINK_SLACK {
        doc.buf.shrink_to_fit();
    }
    (doc, stats)
}

/// Unused capacity (bytes) below which a document's vectors are left as they are.
const SHRINK_SLACK: usize = 64 << 10;

/// More than 64 KiB and more than an eighth of the allocation unused.
fn worth_shrinking(unused_bytes: usize, capacity_bytes: usize) -> bool {
    unused_bytes > SHRINK_SLACK && unused_bytes * 8 > capacity_bytes
}

fn shrink<T>(v: &mut Vec<T>) {
    let size = std::mem::size_of::<T>();
    if worth_shrinking((v.capacity() - v.len()) * size, v.capacity() * size) {
        v.shrink_to_fit();
    }
}

impl Drop for Document {
    fn drop(&mut self) {
        recycle(
            std::mem::take(&mut self.nodes),
            std::mem::take(&mut self.attrs),
            std::mem::take(&mut self.buf),
        );
    }
}

impl Document {
    /// Parses an HTML document.
    ///
    /// # Examples
    ///
    /// ```
    /// use trawl::html::{Document, Selector};
    ///
    /// let doc = Document::parse("<div class=q><span>One</span></div><div class=q>Two</div>");
    /// let sel = Selector::parse("div.q").unwrap();
    /// let texts: Vec<String> = doc.select(&sel).iter().map(|e| e.text_content()).collect();
    /// assert_eq!(texts, ["One", "Two"]);
    /// ```
    pub fn parse(html: &str) -> Self {
        parse(html).0
    }
    /// Parses, and says what the repair did (elements, depth-limited start tags,
    /// dropped attributes, and the builder's work, linear in the input).
    pub fn parse_with_stats(html: &str) -> (Self, ParseStats) {
        parse(html)
    }
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
    fn dropped_documents_lend_their_buffers_to_the_next_parse() {
        let pooled = || POOL.with(|p| p.borrow().len());
        POOL.with(|p| p.borrow_mut().clear());
        let first = Document::parse("<div><p class=a>one &amp; two</p><a href=x>l</a></div>");
        let first_html = names(&first, "p");
        drop(first);
        assert_eq!(pooled(), 1, "a dropped document's buffers are kept");
        // A document built on reused buffers is the one a fresh parse builds.
        let page = "<ul><li>a<li>b</ul><p title='t'>x</p>";
        let reused = Document::parse(page);
        assert_eq!(pooled(), 0, "the next parse took them");
        POOL.with(|p| p.borrow_mut().clear());
        let fresh = Document::parse(page);
        for css in ["li", "p", "ul > li", "[title]"] {
            assert_eq!(names(&reused, css), names(&fresh, css), "{css}");
        }
        assert_eq!(first_html, ["<p class=\"a\">one &amp; two</p>"]);
        drop((reused, fresh));
        assert_eq!(pooled(), 2);
        // At most POOL_SETS sets; a large page's buffers are not kept.
        let docs: Vec<Document> = (0..POOL_SETS + 3).map(|_| Document::parse(page)).collect();
        drop(docs);
        assert_eq!(pooled(), POOL_SETS);
        POOL.with(|p| p.borrow_mut().clear());
        drop(Document::parse(&"<p>x</p>".repeat(100_000)));
        assert_eq!(pooled(), 0, "a large page's buffers are freed");
    }

    /// Names shared through the name cache stay each element's own: 300 distinct
    /// short names (far more than the cache's slots, so they evict one another), each
    /// used again later, with long names and attributes between them.
    #[test]
    fn reused_names_are_each_elements_own() {
        let names: Vec<String> = (0..300).map(|i| format!("t{i}")).collect();
        let mut page = String::new();
        for round in 0..2 {
            for (i, n) in names.iter().enumerate() {
                page.push_str(&format!(
                    "<{n} a{i}=v{round} data-long-name-{i}=w><blockquote{i} x{i}>.</blockquote{i}></{n}>"
                ));
            }
        }
        let doc = Document::parse(&page);
        let mut seen = Vec::new();
        for e in doc.elements() {
            let attrs: Vec<String> = e.attrs().map(|(k, v)| format!("{k}={v}")).collect();
            seen.push(format!("{} {}", e.name(), attrs.join(" ")));
        }
        let mut expected = vec!["html ".to_owned(), "body ".to_owned()];
        for round in 0..2 {
            for (i, n) in names.iter().enumerate() {
                expected.push(format!("{n} a{i}=v{round} data-long-name-{i}=w"));
                expected.push(format!("blockquote{i} x{i}="));
            }
        }
        assert_eq!(seen, expected);
    }

    /// Names of one key but different lengths ("a" and "a\0": the key pads with
    /// zeros) are not shared, whatever the input's preprocessing allows.
    #[test]
    fn a_shared_name_matches_in_length_too() {
        let mut sink = DomSink::new(16);
        let key = crate::html::name_key;
        let a = sink.push_name("a", key("a"));
        let a0 = sink.push_name("a\0", key("a\0"));
        let again = sink.push_name("a", key("a"));
        assert_eq!(key("a"), key("a\0"));
        assert_eq!(sink.doc.str(a), "a");
        assert_eq!(sink.doc.str(a0), "a\0");
        assert_eq!(sink.doc.str(again), "a");
    }

    /// Texts, values and names that are slices of the input point into the buffer's
    /// copy of it; what is not (decoded text, lower-cased names, names of implied
    /// elements, text the builder moved) is appended after it.
    #[test]
    fn slices_of_the_input_share_its_copy() {
        let page = "<P CLASS=Big id='q&amp;1'>x &amp; y</P>\r\n<div title=t>plain text</div>";
        let doc = Document::parse(page);
        let root = doc.root_element().expect("a root");
        assert_eq!(root.name(), "html");
        let p = doc.select(&Selector::parse("p").unwrap())[0];
        assert_eq!(
            (p.name(), p.attr("class"), p.attr("id")),
            ("p", Some("Big"), Some("q&1"))
        );
        assert_eq!(p.text_content(), "x & y");
        let div = doc.select(&Selector::parse("div").unwrap())[0];
        assert_eq!(
            (div.attr("title"), div.text_content()),
            (Some("t"), "plain text".into())
        );
        // The copy of the (preprocessed: CR LF → LF) input, then only what is not in
        // it: "html", "body", "p", "class", "q&1", "x & y" — not the texts, the values
        // or the names written in lower case.
        let copy = page.len() - 1;
        assert_eq!(&doc.buf[..copy], page.replace("\r\n", "\n"));
        assert_eq!(
            doc.buf.len() - copy,
            "htmlbodypclassq&1x & y".len(),
            "{:?}",
            &doc.buf[copy..]
        );
    }

    #[test]
    fn builds_a_tree_with_implied_closes() {
        let doc = Document::parse(
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
        let doc = Document::parse(
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
        let doc = Document::parse("<div><span>x</b></span></i><div>y");
        assert_eq!(names(&doc, "div > span"), ["<span>x</span>"]);
        assert_eq!(names(&doc, "div div"), ["<div>y</div>"]);
        let doc = Document::parse("");
        assert!(doc.root_element().is_none());
        let doc = Document::parse("<<<>>> < p > &amp; </ >");
        assert!(doc.root_element().is_some());
    }
}
