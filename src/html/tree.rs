//! Tree construction: the open-element stack and the rules that close elements, shared
//! by the DOM ([`super::Document`]) and the DOM-free link scanner through [`TreeSink`].
//!
//! # The rules: libxml2's, as Scrapy sees them
//!
//! Scrapy parses with lxml, whose HTML parser is libxml2's. Link texts, `::text` and
//! XPath results depend on how a broken page is repaired, so trawl repairs it the same
//! way (libxml2 2.14, `HTMLparser.c`), not with the HTML5 tree-construction algorithm:
//!
//! * a start tag first pops the current element while the pair (current, new) is in
//!   libxml2's `htmlStartClose` table (`<p>` closes an open `<p>`, `<li>` an `<li>`,
//!   `<a>` an `<a>`... only the current element, not an ancestor);
//! * `html`, `head` and `body` are implied as libxml2 implies them; a misplaced
//!   `<html>`, `<head>` or a second `<body>` is dropped (and, as in libxml2, its `/>`
//!   closes the current element);
//! * `/>` closes any element at once; the void elements are libxml2's 13 (`area`,
//!   `base`, `basefont`, `br`, `col`, `frame`, `hr`, `img`, `input`, `isindex`,
//!   `link`, `meta`, `param`);
//! * an end tag closes the nearest open element of its name unless an element of a
//!   higher end priority (`div` 150, `td`/`th` 160, `tr` 170, table sections 180,
//!   `table` 190, `head` 200) is open above it; an end tag of nothing open is ignored.
//!
//! Deliberate differences (DESIGN.md lists them): `</body>` and `</html>` close nothing,
//! so content after them stays in the body (libxml2 moves it out of the body, and after
//! `</html>` out of the root element that Scrapy's link extractor walks); and the tree
//! is at most [`MAX_DEPTH`] elements deep: deeper start tags become empty elements
//! whose content goes to the deepest open one (libxml2 stops parsing at depth 2,048,
//! dropping the rest of the page; browsers flatten at 512, as trawl does).
//!
//! # Linear time
//!
//! Every operation is O(1) amortised: the nearest open element of a name comes from a
//! map (name → its topmost stack index, each stack entry linking to the one below of
//! the same name; kept lazily, so well-formed markup, which closes the current
//! element, never touches it), the nearest higher-priority element from one stack of
//! positions per priority class, and every element is pushed and popped once.

use super::name::name_key as key;
use super::rules::{
    CLASS_PRIORITY, K_BODY, K_HEAD, K_HTML, class_of, closed_by, is_void_key, priority,
};
use super::tokenizer::{Attrs, Token, Tokenizer};
use crate::util::FxHashMap;

/// The deepest the tree gets (as in Chromium's parser).
pub const MAX_DEPTH: usize = 512;

/// No handle / no stack index.
pub(crate) const NONE: u32 = u32::MAX;

/// What the tree builder drives: a DOM, or something lighter that only needs the
/// structure (the link scanner).
pub(crate) trait TreeSink {
    /// A new element, child of `parent` (`0` is the document). Returns its handle.
    fn element(&mut self, parent: u32, name: &str, key: u64, attrs: Attrs<'_>) -> u32;

    /// Text, child of `parent`; `decode`: character references apply (`false` also
    /// for data text without an `&`, where decoding would copy it as it is).
    fn text(&mut self, parent: u32, text: &str, decode: bool);

    /// The element `node` is complete (popped from the open stack).
    fn close(&mut self, node: u32);

    /// Whether the sink keeps comments ([`comment`](Self::comment) is called); a sink
    /// that does not (the link scanner) has them skipped by the tokenizer.
    const COMMENTS: bool = false;

    /// A comment, child of `parent` (`0` is the document).
    fn comment(&mut self, parent: u32, text: &str) {
        let _ = (parent, text);
    }

    /// The (preprocessed) input, before any other call: the names, texts and values
    /// the sink is given afterwards are mostly slices of it.
    fn source(&mut self, html: &str) {
        let _ = html;
    }

    /// The sink's own work (comparisons, lookups), added to [`ParseStats::steps`].
    fn steps(&self) -> u64 {
        0
    }
}

/// Counters of what the repair did, for stats and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseStats {
    /// Elements opened (implied ones included).
    pub elements: u64,
    /// Start tags flattened at [`MAX_DEPTH`].
    pub depth_limited: u64,
    /// Attributes dropped over the per-tag limit.
    pub dropped_attributes: u64,
    /// Open-stack entries examined or moved (a measure of work: linear in the input).
    pub steps: u64,
}

/// One open element.
#[derive(Clone, Copy, Debug)]
struct Open {
    node: u32,
    key: u64,
    /// The stack index of the next open element below with the same key (valid
    /// once the entry is in the key index: below [`TreeBuilder::synced`]).
    prev_same: u32,
    /// The end priority class (see [`class_of`]), or `NO_CLASS`.
    class: u8,
}

/// HTML5's input preprocessing, plus libxml2's NUL rule: CR LF and lone CR become LF,
/// NUL characters are dropped. Borrowed when there is nothing to change.
fn preprocess(html: &str) -> std::borrow::Cow<'_, str> {
    if memchr::memchr2(b'\r', 0, html.as_bytes()).is_none() {
        return std::borrow::Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut chars = html.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\0' => {}
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The tree builder: feed it tokens, it drives a [`TreeSink`].
/// The builder's working sets — the open-element stack, the topmost stack index per
/// key, the class stacks — lent to the next parse on this thread when a parse ends: a
/// crawl parses page after page, and each parse allocated and grew them again (about
/// five allocations a page). Each holds at most [`MAX_DEPTH`] entries (the stack's
/// bound), so a kept set is a few KiB at most.
#[derive(Default)]
struct Scratch {
    stack: Vec<Open>,
    top_of: FxHashMap<u64, u32>,
    classes: [Vec<u32>; 7],
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<Scratch>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Scratch sets kept per thread.
const SCRATCH_SETS: usize = 2;

impl Scratch {
    /// Gives the sets back for the next parse, emptied.
    fn recycle(mut self) {
        self.stack.clear();
        self.top_of.clear();
        for c in &mut self.classes {
            c.clear();
        }
        crate::util::pool_give(&SCRATCH, self, SCRATCH_SETS);
    }
}

pub(crate) struct TreeBuilder<S> {
    pub(crate) sink: S,
    stack: Vec<Open>,
    /// Key → stack index of its topmost open element, for the entries below
    /// [`synced`](Self::synced). Kept lazily: well-formed markup closes the current
    /// element and never asks which element of a name is open, so a push or pop above
    /// `synced` does not touch the map; a query first adds the entries pushed since
    /// the last one ([`sync`](Self::sync)). Each entry is added at most once and
    /// removed at most once: linear.
    top_of: FxHashMap<u64, u32>,
    /// Stack entries `[0, synced)` are in [`top_of`](Self::top_of).
    synced: usize,
    /// Stack indices of the open elements of each priority class.
    classes: [Vec<u32>; 7],
    /// libxml2's `ctxt->html`: 1 once a `head` was pushed, 2 once a `body` was.
    inserted: u8,
    /// Misplaced `html`/`head`/`body` start tags dropped (their end tags are too).
    discarded: u32,
    /// `</body>` or `</html>` was seen: whitespace-only text directly in the body
    /// goes where libxml2, having closed the body, puts it — into `after_body` until
    /// `</html>` (`html_ended`), nowhere after.
    body_ended: bool,
    html_ended: bool,
    /// Whitespace and comments between `</body>` and `</html>`, appended to `<html>`
    /// at the end (a comment as `(true, text)`).
    after_body: Vec<(bool, String)>,
    /// Comments after `</html>`, appended to the document at the end.
    after_html: Vec<String>,
    pub(crate) stats: ParseStats,
}

impl<S: TreeSink> TreeBuilder<S> {
    pub(crate) fn new(sink: S) -> Self {
        let Scratch {
            mut stack,
            top_of,
            classes,
        } = crate::util::pool_take(&SCRATCH);
        stack.reserve(32);
        Self {
            sink,
            stack,
            top_of,
            synced: 0,
            classes,
            inserted: 0,
            body_ended: false,
            html_ended: false,
            after_body: Vec::new(),
            after_html: Vec::new(),
            discarded: 0,
            stats: ParseStats::default(),
        }
    }

    /// Runs the whole input through the tokenizer and this builder.
    ///
    /// The per-token path (the tokenizer's `next_token` and `markup`, this builder's
    /// `start_tag`, `end_tag`, `text`, the sink's `element` and `text`) is
    /// `#[inline(always)]` into this loop: one function, as a profile-guided build
    /// lays it out (fewer instructions per parse than calls: benches/RESULTS.md).
    pub(crate) fn run(mut self, html: &str) -> (S, ParseStats) {
        let html = preprocess(html);
        self.sink.source(&html);
        let mut tokenizer = Tokenizer::new(&html).with_comments(S::COMMENTS);
        while let Some(token) = tokenizer.next_token() {
            self.stats.steps += 1;
            match token {
                Token::Text(text) => self.text(text, true, false),
                Token::TextWithRefs(text) => self.text(text, true, true),
                Token::RawText(text) => self.text(text, false, false),
                Token::StartTag(name) => self.start_tag(&name, false, tokenizer.attrs()),
                Token::SelfClosingStartTag(name) => {
                    self.start_tag(&name, true, tokenizer.attrs());
                }
                Token::EndTag(name) => self.end_tag(&name),
                Token::CutStartTag(name) => {
                    let k = key(&name);
                    self.auto_close(k);
                    self.check_implied(&name, k);
                }
                Token::Comment(text) => self.comment(text),
            }
        }
        if !self.after_body.is_empty() && self.stack.first().is_some_and(|o| o.key == K_HTML) {
            while self.stack.len() > 1 {
                self.pop();
            }
            let html_node = self.current();
            for (comment, text) in std::mem::take(&mut self.after_body) {
                if comment {
                    self.sink.comment(html_node, &text);
                } else {
                    self.sink.text(html_node, &text, false);
                }
            }
        }
        while !self.stack.is_empty() {
            self.pop();
        }
        for text in std::mem::take(&mut self.after_html) {
            self.sink.comment(0, &text);
        }
        self.stats.dropped_attributes = tokenizer.dropped_attributes;
        self.stats.steps += self.sink.steps() + tokenizer.examined();
        Scratch {
            stack: self.stack,
            top_of: self.top_of,
            classes: self.classes,
        }
        .recycle();
        (self.sink, self.stats)
    }

    fn current(&self) -> u32 {
        self.stack.last().map_or(0, |o| o.node)
    }

    fn current_key(&self) -> u64 {
        self.stack.last().map_or(0, |o| o.key)
    }

    fn is_open(&mut self, k: u64) -> bool {
        self.topmost(k).is_some()
    }

    /// The stack index of the topmost open element with key `k`.
    fn topmost(&mut self, k: u64) -> Option<u32> {
        self.sync();
        let found = self.top_of.get(&k).copied();
        // The unit tests check the lazy index against a scan of the stack.
        #[cfg(test)]
        assert_eq!(
            found,
            self.stack
                .iter()
                .rposition(|o| o.key == k)
                .map(|i| i as u32),
            "the key index disagrees with the stack"
        );
        found
    }

    /// Adds the stack entries pushed since the last query to the key index.
    fn sync(&mut self) {
        let from = self.synced;
        for (i, o) in self.stack.iter_mut().enumerate().skip(from) {
            o.prev_same = self.top_of.insert(o.key, i as u32).unwrap_or(NONE);
        }
        self.stats.steps += (self.stack.len() - from) as u64;
        self.synced = self.stack.len();
    }

    #[inline(always)]
    fn push(&mut self, node: u32, k: u64) {
        let idx = self.stack.len() as u32;
        let class = class_of(k);
        if let Some(c) = self.classes.get_mut(class as usize) {
            c.push(idx);
        }
        if k == K_HEAD {
            self.inserted = self.inserted.max(1);
        } else if k == K_BODY {
            self.inserted = 2;
        }
        self.stack.push(Open {
            node,
            key: k,
            prev_same: NONE,
            class,
        });
    }

    fn pop(&mut self) {
        let Some(o) = self.stack.pop() else { return };
        self.stats.steps += 1;
        if self.stack.len() < self.synced {
            self.synced = self.stack.len();
            if o.prev_same == NONE {
                self.top_of.remove(&o.key);
            } else {
                self.top_of.insert(o.key, o.prev_same);
            }
        }
        if let Some(c) = self.classes.get_mut(o.class as usize) {
            c.pop();
        }
        self.sink.close(o.node);
    }

    /// Opens an element the markup did not name (`html`, `head`, `body`).
    fn push_implied(&mut self, name: &str) {
        let k = key(name);
        let node = self.sink.element(self.current(), name, k, Attrs::NONE);
        self.stats.elements += 1;
        self.push(node, k);
    }

    /// libxml2's `htmlCheckImplied`.
    #[inline(always)]
    fn check_implied(&mut self, name: &str, k: u64) {
        // Once a body is open it stays open (`</body>` and `</html>` are ignored, and
        // no other end tag outranks it), so nothing is implied any more.
        if k == K_HTML || (self.inserted == 2 && !self.stack.is_empty()) {
            return;
        }
        if self.stack.is_empty() {
            self.push_implied("html");
        }
        if k == K_BODY || k == K_HEAD {
            return;
        }
        if self.stack.len() <= 1
            && matches!(
                name,
                "script" | "style" | "meta" | "link" | "title" | "base"
            )
        {
            if self.inserted < 1 {
                self.push_implied("head");
            }
        } else if self.inserted < 2
            && !matches!(name, "noframes" | "frame" | "frameset")
            && !self.is_open(K_BODY)
            && !self.is_open(K_HEAD)
        {
            self.push_implied("body");
        }
    }

    /// Pops the current element while `new` (a key) closes it.
    #[inline(always)]
    fn auto_close(&mut self, new: u64) {
        let closes = closed_by(new);
        if closes.is_empty() {
            return;
        }
        while let Some(top) = self.stack.last() {
            if !closes.contains(&top.key) {
                break;
            }
            self.pop();
        }
    }

    #[inline(always)]
    fn start_tag(&mut self, name: &str, self_closing: bool, attrs: Attrs<'_>) {
        let k = key(name);
        self.auto_close(k);
        self.check_implied(name, k);
        let misplaced = (k == K_HTML && !self.stack.is_empty())
            || (k == K_HEAD && self.stack.len() != 1)
            || (k == K_BODY && self.is_open(K_BODY));
        if misplaced {
            self.discarded += 1;
            // libxml2 quirk, kept for identical trees: the `/>` of a dropped tag
            // closes the current element instead.
            if self_closing {
                self.pop();
            }
            return;
        }
        let node = self.sink.element(self.current(), name, k, attrs);
        self.stats.elements += 1;
        // libxml2 notes a head or body when it is pushed, even if `/>` pops it.
        if k == K_HEAD {
            self.inserted = self.inserted.max(1);
        } else if k == K_BODY {
            self.inserted = 2;
        }
        if self_closing || is_void_key(k) {
            self.sink.close(node);
            return;
        }
        if self.stack.len() >= MAX_DEPTH {
            self.stats.depth_limited += 1;
            self.sink.close(node);
            return;
        }
        self.push(node, k);
    }

    #[inline(always)]
    fn end_tag(&mut self, name: &str) {
        let k = key(name);
        if self.discarded > 0 && (k == K_HTML || k == K_BODY || k == K_HEAD) {
            self.discarded -= 1;
            return;
        }
        // Deliberate: content after </body> or </html> stays in the body — but, as in
        // libxml2, whitespace-only text after them is dropped.
        if k == K_HTML || k == K_BODY {
            self.body_ended = true;
            self.html_ended |= k == K_HTML;
            return;
        }
        // Well-formed markup closes the current element: nothing above can block it
        // (and the current element is the topmost of its name: no lookup needed).
        if self.stack.last().is_some_and(|o| o.key == k) {
            self.pop();
            return;
        }
        let Some(idx) = self.topmost(k) else {
            return;
        };
        let p = priority(class_of(k));
        self.stats.steps += CLASS_PRIORITY.len() as u64;
        let blocked = self
            .classes
            .iter()
            .enumerate()
            .filter(|(c, _)| CLASS_PRIORITY[*c] > p)
            .filter_map(|(_, positions)| positions.last())
            .any(|&pos| pos > idx);
        if blocked {
            return;
        }
        while self.stack.len() > idx as usize {
            self.pop();
        }
    }

    /// Text; `decode`: data or RCDATA (not raw text); `refs`: it holds an `&` (the
    /// sink decodes only then).
    #[inline(always)]
    fn text(&mut self, text: &str, decode: bool, refs: bool) {
        if decode && matches!(self.current_key(), 0 | K_HTML | K_HEAD) {
            // libxml2's htmlCharDataSAXCallback: leading whitespace stays where it is;
            // the rest implies a body (closing the head).
            let ws = text
                .bytes()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c'))
                .count();
            if ws > 0 && !self.stack.is_empty() {
                self.sink.text(self.current(), &text[..ws], false);
            }
            let rest = &text[ws..];
            if rest.is_empty() {
                return;
            }
            if self.current_key() == K_HEAD {
                self.auto_close(key("p"));
            }
            self.check_implied("p", key("p"));
            self.sink.text(self.current(), rest, refs);
            return;
        }
        if self.stack.is_empty() {
            return;
        }
        if self.body_ended
            && self.current_key() == K_BODY
            && decode
            && text
                .bytes()
                .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c'))
        {
            // libxml2 puts whitespace between `</body>` and `</html>` after the body,
            // in `<html>`, and drops it after `</html>`.
            if !self.html_ended {
                match self.after_body.last_mut() {
                    Some((false, ws)) => ws.push_str(text),
                    _ => self.after_body.push((false, text.to_owned())),
                }
            }
            return;
        }
        self.sink.text(self.current(), text, decode && refs);
    }

    /// A comment goes into the current element, or the document before `<html>`; after
    /// `</body>` (the body still current) it goes after the body as libxml2 puts it, in
    /// `<html>`, and after `</html>` after the root element.
    fn comment(&mut self, text: &str) {
        if self.body_ended && self.current_key() == K_BODY {
            if self.html_ended {
                self.after_html.push(text.to_owned());
            } else {
                self.after_body.push((true, text.to_owned()));
            }
            return;
        }
        self.sink.comment(self.current(), text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::Document;

    fn kept() -> usize {
        SCRATCH.with(|s| s.borrow().len())
    }

    #[test]
    fn a_parse_lends_its_working_sets_to_the_next_and_bounds_them() {
        SCRATCH.with(|s| s.borrow_mut().clear());
        let pages = [
            "<ul><li>a<li>b</ul><table><tr><td>x<td>y</table><p>one<p>two",
            "<div><span><b>deep</b></span></div><select><option>o</select>",
        ];
        let html = |d: Document| d.root_element().map(|e| e.html()).unwrap_or_default();
        let fresh: Vec<String> = pages.iter().map(|p| html(Document::parse(p))).collect();
        assert_eq!(kept(), 1, "the sets went back after each parse");
        // Parsed again on the reused sets, page after page: the same trees.
        for _ in 0..3 {
            for (page, want) in pages.iter().zip(&fresh) {
                assert_eq!(&html(Document::parse(page)), want);
                assert_eq!(kept(), 1);
            }
        }
        // After a page at the depth limit, the sets it grew are kept (bounded by
        // MAX_DEPTH) and the next page parses as on fresh ones.
        let deep = "<div>".repeat(MAX_DEPTH + 100);
        let _ = Document::parse(&deep);
        assert_eq!(kept(), 1);
        SCRATCH.with(|s| {
            let s = s.borrow();
            assert!(s.iter().all(|x| x.stack.capacity() <= 2 * MAX_DEPTH));
        });
        assert_eq!(html(Document::parse(pages[0])), fresh[0]);
    }

    /// The key index is kept lazily (entries added when a query comes, removed when
    /// popped below the synced mark): tag soup that interleaves pushes, pops,
    /// misnested end tags and implied elements, checked at every query against a scan
    /// of the stack (the assertion in `topmost`, under `cfg(test)`).
    #[test]
    fn the_lazy_key_index_answers_as_a_scan_of_the_stack() {
        let names = [
            "b", "i", "div", "p", "td", "tr", "table", "span", "a", "li", "body",
        ];
        let mut rng = crate::util::xorshift(0x2545_f491_4f6c_dd1d);
        let mut next = |n: usize| (rng() % n as u64) as usize;
        for _ in 0..300 {
            let mut page = String::new();
            for _ in 0..60 {
                let name = names[next(names.len())];
                match next(5) {
                    0 | 1 => page.push_str(&format!("<{name}>")),
                    2 | 3 => page.push_str(&format!("</{name}>")),
                    _ => page.push('x'),
                }
            }
            let first = Document::parse(&page).root_element().map(|e| e.html());
            // The same page again on the lent (reused) sets: the same tree.
            let again = Document::parse(&page).root_element().map(|e| e.html());
            assert_eq!(first, again, "{page}");
        }
    }
}
