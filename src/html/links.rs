//! [`scan_links`]: the links of a page without building a DOM — the same tokenizer and
//! the same tree-repair rules as [`super::Document`], driving a sink that keeps only
//! the link elements and the text inside them. So a link's text is what the DOM's
//! `text_content()` of its element would be, whether or not a DOM was built.

use super::entities::{decode_entities, decode_into};
use super::tokenizer::Attrs;
use super::tree::{NONE, ParseStats, TreeBuilder, TreeSink};

/// A link as found in the HTML, before it is resolved against the base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLink {
    /// The attribute value, character references decoded.
    pub href: String,
    /// The element's text (every text inside it, in order).
    pub text: String,
    /// Whether `rel` contains `nofollow`.
    pub nofollow: bool,
}

/// Whether a `rel` value has the `nofollow` type, as Scrapy decides it
/// (`"nofollow" in rel.lower().replace(",", " ").split()`: case-insensitive, commas
/// and any Unicode whitespace separate).
pub fn rel_has_nofollow(rel: &str) -> bool {
    rel.split(|c: char| c == ',' || c.is_whitespace())
        .any(|t| t.to_lowercase() == "nofollow")
}

/// How much link text one page may produce in all.
///
/// A link's text is every text inside its element, so nested link elements repeat the
/// same text: up to [`super::MAX_DEPTH`] times. The budget bounds the total at 8 × the
/// page's length + 64 KiB (no real page comes near it); once spent, later links get
/// their text cut at a character boundary (empty at worst). The DOM path
/// (`LinkExtractor` on a parsed page) spends the same budget in the same order.
#[derive(Debug, Clone, Copy)]
pub struct TextBudget(usize);

impl TextBudget {
    /// The budget of a page of `len` bytes.
    pub fn for_page(len: usize) -> Self {
        Self(len.saturating_mul(8).saturating_add(64 * 1024))
    }

    /// The part of `text` the budget allows (spending it).
    pub fn take<'a>(&mut self, text: &'a str) -> &'a str {
        let mut n = text.len().min(self.0);
        while !text.is_char_boundary(n) {
            n -= 1;
        }
        self.0 -= n;
        &text[..n]
    }
}

/// A link element still open: its links wait for the element's text.
struct Pending {
    links: Vec<RawLink>,
    /// Where its text starts in the sink's text buffer, and ends once closed.
    text_start: usize,
    text_end: Option<usize>,
}

struct LinkSink<'t, F> {
    tags: &'t [(u64, String)],
    attrs: &'t [String],
    with_text: bool,
    found: F,
    /// Link elements in document order, from the first not yet reported.
    pending: std::collections::VecDeque<Pending>,
    /// The index (in all link elements seen) of `pending[0]`.
    first_index: u32,
    /// How many pending elements are open (text is kept only then).
    open: usize,
    /// Text seen since the oldest open link element started.
    text: String,
    budget: TextBudget,
    steps: u64,
}

const OTHER: u32 = 1;

impl<F: FnMut(RawLink)> LinkSink<'_, F> {
    /// Reports the complete link elements at the front, in document order.
    fn flush(&mut self) {
        while let Some(end) = self.pending.front().and_then(|p| p.text_end) {
            if let Some(p) = self.pending.pop_front() {
                self.first_index += 1;
                let text = if self.with_text {
                    self.budget
                        .take(self.text.get(p.text_start..end).unwrap_or(""))
                } else {
                    ""
                };
                for mut l in p.links {
                    l.text.push_str(text);
                    (self.found)(l);
                }
            }
        }
        if self.open == 0 {
            self.text.clear();
        }
    }
}

impl<F: FnMut(RawLink)> TreeSink for LinkSink<'_, F> {
    fn element(&mut self, _parent: u32, name: &str, k: u64, attrs: Attrs<'_>) -> u32 {
        if !self.tags.iter().any(|(tk, t)| *tk == k && t == name) {
            return OTHER;
        }
        let mut nofollow = false;
        let mut links: Vec<RawLink> = Vec::new();
        // The first attribute of a name wins; only names that matter are remembered.
        let mut taken: Vec<std::borrow::Cow<'_, str>> = Vec::new();
        for (attr, raw_value, _, _) in attrs.iter_valued() {
            self.steps += 1 + taken.len() as u64;
            let is_rel = attr == "rel";
            let is_link = self.attrs.iter().any(|a| *a == *attr);
            if !(is_rel || is_link) || taken.contains(&attr) {
                continue;
            }
            if is_rel {
                nofollow = rel_has_nofollow(&decode_entities(raw_value, true));
            }
            if is_link {
                let mut href = String::with_capacity(raw_value.len());
                self.steps += decode_into(raw_value, true, &mut href);
                links.push(RawLink {
                    href,
                    text: String::new(),
                    nofollow: false,
                });
            }
            taken.push(attr);
        }
        if links.is_empty() {
            return OTHER;
        }
        for l in &mut links {
            l.nofollow = nofollow;
        }
        let index = self.first_index + self.pending.len() as u32;
        self.pending.push_back(Pending {
            links,
            text_start: self.text.len(),
            text_end: None,
        });
        self.open += 1;
        // Handles: 0 is the document, 1 any element that is not a link element, `2 + i`
        // the `i`-th link element.
        2 + index
    }

    fn text(&mut self, _parent: u32, text: &str, decode: bool) {
        if self.open == 0 || !self.with_text {
            return;
        }
        if decode {
            self.steps += decode_into(text, false, &mut self.text);
        } else {
            self.text.push_str(text);
        }
    }

    fn steps(&self) -> u64 {
        self.steps
    }

    fn close(&mut self, node: u32) {
        if node < 2 || node == NONE {
            return;
        }
        let Some(i) = (node - 2).checked_sub(self.first_index) else {
            return;
        };
        let Some(p) = self.pending.get_mut(i as usize) else {
            return;
        };
        if p.text_end.is_some() {
            return;
        }
        p.text_end = Some(self.text.len());
        self.open -= 1;
        self.flush();
    }
}

/// Scans `html` for the elements named in `tags` carrying an attribute named in
/// `attrs` (both lower case), calling `found` for each value in document order, with
/// the element's text when `with_text`. No tree is built; the links and texts are the
/// ones the DOM would give.
///
/// Returns what the tree repair did ([`ParseStats`]), as [`super::Document::parse_with_stats`].
pub fn scan_links(
    html: &str,
    tags: &[String],
    attrs: &[String],
    with_text: bool,
    found: impl FnMut(RawLink),
) -> ParseStats {
    let tags: Vec<(u64, String)> = tags
        .iter()
        .map(|t| {
            let t = t.to_ascii_lowercase();
            (super::name::name_key(&t), t)
        })
        .collect();
    let attrs: Vec<String> = attrs.iter().map(|a| a.to_ascii_lowercase()).collect();
    let sink = LinkSink {
        tags: &tags,
        attrs: &attrs,
        with_text,
        found,
        pending: std::collections::VecDeque::new(),
        first_index: 0,
        open: 0,
        text: String::new(),
        budget: TextBudget::for_page(html.len()),
        steps: 0,
    };
    let (mut sink, stats) = TreeBuilder::new(sink).run(html);
    sink.flush();
    stats
}
