//! The one HTML tokenizer: both the DOM ([`super::Document`]) and the DOM-free link
//! scanner ([`super::scan_links`]) read markup through it, so they cannot disagree on
//! what is a tag, a comment or text.
//!
//! It follows the HTML5 tokenizer's states where they decide what is markup — comments
//! (`<!-->` and `<!--->` are empty comments; `--!>` also ends one), bogus comments,
//! end tags, attribute values, raw text and RCDATA (ended only by `</name` followed by
//! whitespace, `/` or `>`) — and yields borrowed slices, allocating nothing per token.
//!
//! # Linear time
//!
//! Every byte is looked at a bounded number of times: text runs and bogus comments are
//! one forward scan, a comment is two (for `-->` and `--!>`), a raw-text element's end
//! is found by stepping from one `<` to the next. A tag keeps at most
//! [`MAX_ATTRIBUTES`] attributes; the rest are still scanned (so the tag ends where
//! HTML5 says) but not stored.

use std::borrow::Cow;

/// The most attributes one tag keeps; later ones are scanned and dropped.
pub const MAX_ATTRIBUTES: usize = 1024;

/// The value range of an attribute written without `=` (it reads as empty).
pub(crate) const NO_VALUE: (usize, usize) = (usize::MAX, usize::MAX);

/// An attribute as found in the source: byte ranges of its name and value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RawAttr {
    pub(crate) name: (usize, usize),
    pub(crate) value: (usize, usize),
    /// The value holds an `&` (found by the scan for its end).
    pub(crate) refs: bool,
    /// The name has an upper-case ASCII letter (found by the scan for its end).
    pub(crate) upper: bool,
}

/// The attributes of a start tag: raw names (as written) and raw values (references
/// not decoded), in source order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attrs<'a> {
    source: &'a str,
    list: &'a [RawAttr],
}

impl<'a> Attrs<'a> {
    /// No attributes.
    pub(crate) const NONE: Attrs<'static> = Attrs {
        source: "",
        list: &[],
    };

    /// Each attribute's name in lower case (borrowed unless the scan saw an upper-case
    /// letter in it), its raw value, whether it was written with a value, and whether
    /// the value holds an `&` (a character reference to decode, perhaps).
    pub(crate) fn iter_valued(
        &self,
    ) -> impl Iterator<Item = (Cow<'a, str>, &'a str, bool, bool)> + 'a {
        let source = self.source;
        self.list.iter().map(move |a| {
            (
                lower_if(source.get(a.name.0..a.name.1).unwrap_or(""), a.upper),
                source.get(a.value.0..a.value.1).unwrap_or(""),
                a.value != NO_VALUE,
                a.refs,
            )
        })
    }

    /// `(name, value)` pairs as written (the tests' view; the sinks read
    /// [`iter_valued`](Self::iter_valued)).
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let source = self.source;
        self.list.iter().map(move |a| {
            (
                source.get(a.name.0..a.name.1).unwrap_or(""),
                source.get(a.value.0..a.value.1).unwrap_or(""),
            )
        })
    }
}

/// One token. Names are lower-cased (borrowed when they already are). A text's and a
/// start tag's flags are in the token's kind, not in fields of their own: a token is
/// three words, written and read a word at a time (byte-sized flags were written a
/// byte at a time and read back with a wider load — a store-forwarding stall at every
/// token).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    /// Character data where character references apply (data, RCDATA), holding no
    /// `&` (found by the same scan that found its end): decoding it is a copy.
    Text(&'a str),
    /// Character data where character references apply, holding an `&`.
    TextWithRefs(&'a str),
    /// Raw text (`<script>`, `<style>`...): no references.
    RawText(&'a str),
    /// A start tag; its attributes are [`Tokenizer::attrs`].
    StartTag(Cow<'a, str>),
    /// A start tag ending in `/>`; its attributes are [`Tokenizer::attrs`].
    SelfClosingStartTag(Cow<'a, str>),
    /// An end tag (its attributes, if any, are skipped).
    EndTag(Cow<'a, str>),
    /// A start tag cut by the end of the input: not an element, but libxml2 has
    /// already repaired the tree for it (implied `html`/`body`, closed elements).
    CutStartTag(Cow<'a, str>),
    /// A comment's text (`<!--text-->`, and the bogus comments `<!text>`, `<?text>`,
    /// `</ text>` as HTML5 and libxml2 2.14 make them) — only from a tokenizer made
    /// [`with_comments`](Tokenizer::with_comments).
    Comment(&'a str),
}

impl<'a> Token<'a> {
    /// A text token: `decode` — character references apply; `refs` — it holds an `&`.
    fn text(text: &'a str, decode: bool, refs: bool) -> Self {
        match (decode, refs) {
            (false, _) => Self::RawText(text),
            (true, false) => Self::Text(text),
            (true, true) => Self::TextWithRefs(text),
        }
    }
}

/// What the content after a start tag is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Content {
    /// Ordinary markup.
    Markup,
    /// Text without references, up to the matching end tag.
    RawText,
    /// Text with references, up to the matching end tag.
    RcData,
    /// `<script>`: raw text with HTML5's escape states (`<!--` ... `<script>` inside
    /// it hides a `</script>`).
    Script,
    /// `<plaintext>`: everything to the end is text.
    PlainText,
}

/// Elements whose content is raw text (no tags, no references).
pub(crate) fn is_raw_text(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "xmp" | "iframe" | "noembed" | "noframes" | "plaintext"
    )
}

/// Elements whose content is text with references but no tags.
pub(crate) fn is_rcdata(name: &str) -> bool {
    matches!(name, "textarea" | "title")
}

/// The HTML5 tokenizer's whitespace.
fn is_ws(b: u8) -> bool {
    CLASS[usize::from(b)] & WS != 0
}

/// [`CLASS`] bits: whitespace, and the bytes that end a tag name (with whitespace),
/// an attribute name (with `=` too) and an unquoted value (whitespace and `>`).
const WS: u8 = 1;
const SLASH: u8 = 2;
const GT: u8 = 4;
const EQ: u8 = 8;
const AMP: u8 = 16;
const UPPER: u8 = 32;

/// Each byte's classes: one table load instead of a chain of comparisons in the
/// per-byte loops of tag and attribute scanning.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b' ' as usize] = WS;
    t[b'\t' as usize] = WS;
    t[b'\n' as usize] = WS;
    t[b'\r' as usize] = WS;
    t[0x0c] = WS;
    t[b'/' as usize] = SLASH;
    t[b'>' as usize] = GT;
    t[b'=' as usize] = EQ;
    t[b'&' as usize] = AMP;
    let mut c = b'A';
    while c <= b'Z' {
        t[c as usize] = UPPER;
        c += 1;
    }
    t
};

use memchr::memchr;

/// Counts the bytes the tokenizer examines, so tests can check that no byte is
/// examined more than a bounded number of times.
#[derive(Debug, Default)]
struct Examined(std::cell::Cell<u64>);

impl Examined {
    /// `memchr`, counting the bytes it looked at.
    fn memchr(&self, needle: u8, haystack: &[u8]) -> Option<usize> {
        let found = memchr(needle, haystack);
        self.add(found.map_or(haystack.len(), |i| i + 1));
        found
    }

    fn add(&self, n: usize) {
        self.0.set(self.0.get() + n as u64);
    }
}

/// Tokenizes `html` one token at a time ([`next_token`](Self::next_token)).
pub(crate) struct Tokenizer<'a> {
    html: &'a str,
    pos: usize,
    attrs: Vec<RawAttr>,
    /// Set by a raw-text or RCDATA start tag: the end tag's name and the content kind.
    pending: Option<(&'a str, Content)>,
    /// Attributes dropped over [`MAX_ATTRIBUTES`].
    pub(crate) dropped_attributes: u64,
    examined: Examined,
    /// Comments are tokens ([`Token::Comment`]) rather than skipped.
    comments: bool,
}

thread_local! {
    /// Attribute lists of finished tokenizers, lent to the next one on the thread (a
    /// crawl tokenizes page after page; each grew a new list at its first attribute).
    static ATTRS: std::cell::RefCell<Vec<Vec<RawAttr>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Attribute lists kept per thread, and the largest capacity kept.
const ATTR_LISTS: usize = 2;
const ATTR_LIST_CAPACITY: usize = 256;

impl Drop for Tokenizer<'_> {
    fn drop(&mut self) {
        let mut attrs = std::mem::take(&mut self.attrs);
        if attrs.capacity() <= ATTR_LIST_CAPACITY {
            attrs.clear();
            crate::util::pool_give(&ATTRS, attrs, ATTR_LISTS);
        }
    }
}

impl<'a> Tokenizer<'a> {
    /// A tokenizer at the start of `html`.
    pub(crate) fn new(html: &'a str) -> Self {
        Self {
            html,
            pos: 0,
            attrs: crate::util::pool_take(&ATTRS),
            pending: None,
            dropped_attributes: 0,
            examined: Examined::default(),
            comments: false,
        }
    }

    /// Makes comments tokens (the DOM keeps them; the link scanner skips them).
    pub(crate) fn with_comments(mut self, yes: bool) -> Self {
        self.comments = yes;
        self
    }

    /// Bytes examined so far (each byte a bounded number of times: linear).
    pub(crate) fn examined(&self) -> u64 {
        self.examined.0.get()
    }

    /// The attributes of the last start tag.
    pub(crate) fn attrs(&self) -> Attrs<'_> {
        Attrs {
            source: self.html,
            list: &self.attrs,
        }
    }

    /// The next token; `None` at the end of the input.
    ///
    /// Inlined into the tree builder's loop, its one caller: the token does not go
    /// through a call's return slot (and its kind, which carries its flags, is
    /// dispatched on straight away).
    #[inline(always)]
    pub(crate) fn next_token(&mut self) -> Option<Token<'a>> {
        if let Some((name, content)) = self.pending.take() {
            let start = self.pos;
            let end = match content {
                Content::PlainText => self.html.len(),
                Content::Script => self.script_end(),
                _ => self.raw_text_end(name),
            };
            self.pos = end;
            if end > start {
                let decode = content == Content::RcData;
                let refs = decode
                    && self
                        .examined
                        .memchr(b'&', &self.html.as_bytes()[start..end])
                        .is_some();
                return Some(Token::text(&self.html[start..end], decode, refs));
            }
        }
        let bytes = self.html.as_bytes();
        let mut text_start = self.pos;
        let mut at = self.pos;
        let mut refs = false;
        loop {
            let Some(lt) = self.find_lt(at, &mut refs) else {
                self.pos = bytes.len();
                return (text_start < bytes.len())
                    .then(|| Token::text(&self.html[text_start..], true, refs));
            };
            if !self.starts_markup(lt) {
                // A '<' that starts nothing is text.
                at = lt + 1;
                continue;
            }
            if lt > text_start {
                // The text before the markup first; the markup on the next call.
                self.pos = lt;
                return Some(Token::text(&self.html[text_start..lt], true, refs));
            }
            if let Some(token) = self.markup(lt) {
                return Some(token);
            }
            // A comment, doctype or ignored tag: go on after it (a loop, not a
            // recursion: a million comments in a row must not exhaust the stack).
            if self.pos >= bytes.len() {
                return None;
            }
            text_start = self.pos;
            at = self.pos;
            refs = false;
        }
    }

    /// The next `<` at or after `from`; sets `refs` when an `&` comes before it. One
    /// scan for both until the first `&`, then for `<` alone: each byte is looked at
    /// once, twice at most.
    fn find_lt(&self, from: usize, refs: &mut bool) -> Option<usize> {
        let bytes = self.html.as_bytes();
        let mut from = from;
        if !*refs {
            let rest = &bytes[from..];
            let Some(i) = crate::util::memchr2_near(b'<', b'&', rest) else {
                self.examined.add(rest.len());
                return None;
            };
            self.examined.add(i + 1);
            if rest[i] == b'<' {
                return Some(from + i);
            }
            *refs = true;
            from += i + 1;
        }
        self.examined.memchr(b'<', &bytes[from..]).map(|i| from + i)
    }

    /// Whether the `<` at `lt` starts a tag, an end tag, a comment or a bogus comment.
    fn starts_markup(&self, lt: usize) -> bool {
        match self.html.as_bytes().get(lt + 1) {
            Some(b) if b.is_ascii_alphabetic() => true,
            Some(b'!' | b'?') => true,
            // `</` at the very end is text.
            Some(b'/') => lt + 2 < self.html.len(),
            _ => false,
        }
    }

    /// Consumes the markup at `lt`; `Some` for a start or end tag.
    #[inline(always)]
    fn markup(&mut self, lt: usize) -> Option<Token<'a>> {
        let bytes = self.html.as_bytes();
        let rest = &bytes[lt..];
        if rest.starts_with(b"<!--") {
            let (text_end, end) = self.comment_end(lt + 4);
            self.pos = end;
            return self
                .comments
                .then(|| Token::Comment(&self.html[lt + 4..text_end]));
        }
        if rest[1] == b'!' || rest[1] == b'?' {
            // Doctype, CDATA outside foreign content, processing instruction: a bogus
            // comment up to the first '>' (a doctype makes no node; `<?` is part of the
            // comment's text, `<!` is not).
            let close = self.examined.memchr(b'>', rest).map(|e| lt + e);
            self.pos = close.map_or(bytes.len(), |c| c + 1);
            let doctype = rest.len() >= 9 && rest[2..9].eq_ignore_ascii_case(b"doctype");
            if !self.comments || doctype {
                return None;
            }
            let from = if rest[1] == b'?' { lt + 1 } else { lt + 2 };
            return Some(Token::Comment(
                &self.html[from..close.unwrap_or(bytes.len())],
            ));
        }
        if rest[1] == b'/' {
            return self.end_tag(lt);
        }
        self.start_tag(lt)
    }

    #[inline(always)]
    fn end_tag(&mut self, lt: usize) -> Option<Token<'a>> {
        let bytes = self.html.as_bytes();
        match bytes.get(lt + 2) {
            Some(b) if b.is_ascii_alphabetic() => {}
            Some(b'>') => {
                // `</>` is dropped.
                self.pos = lt + 3;
                return None;
            }
            _ => {
                // `</ x>`, `</3>`, `</` at the end: a bogus comment.
                let close = self.examined.memchr(b'>', &bytes[lt..]).map(|e| lt + e);
                self.pos = close.map_or(bytes.len(), |c| c + 1);
                let from = (lt + 2).min(bytes.len());
                return self
                    .comments
                    .then(|| Token::Comment(&self.html[from..close.unwrap_or(bytes.len())]));
            }
        }
        let (name_end, upper) = tag_name_end(bytes, lt + 2);
        self.examined.add(name_end - lt);
        let name = lower_if(&self.html[lt + 2..name_end], upper);
        // An end tag's attributes are tokenized (a quoted '>' does not end it) and
        // dropped.
        let (end, _, complete) = self.scan_attributes(name_end, false);
        self.pos = end;
        if !complete {
            // Cut by the end of the input: dropped (HTML5 and libxml2 agree).
            return None;
        }
        Some(Token::EndTag(name))
    }

    #[inline(always)]
    fn start_tag(&mut self, lt: usize) -> Option<Token<'a>> {
        let bytes = self.html.as_bytes();
        let (name_end, upper) = tag_name_end(bytes, lt + 1);
        self.examined.add(name_end - lt);
        let name = lower_if(&self.html[lt + 1..name_end], upper);
        let (end, self_closing, complete) = self.scan_attributes(name_end, true);
        self.pos = end;
        if !complete {
            // Cut by the end of the input: no element (HTML5 and libxml2 agree).
            return Some(Token::CutStartTag(name));
        }
        // Raw-text and RCDATA names start with one of these letters.
        let maybe_raw = matches!(
            name.as_bytes().first(),
            Some(b's' | b'x' | b'i' | b'n' | b'p' | b't')
        );
        let content = if !maybe_raw {
            Content::Markup
        } else if name == "script" {
            Content::Script
        } else if name == "plaintext" {
            Content::PlainText
        } else if is_raw_text(&name) {
            Content::RawText
        } else if is_rcdata(&name) {
            Content::RcData
        } else {
            Content::Markup
        };
        // libxml2 honours `/>` everywhere: `<script/>` has no content.
        if content != Content::Markup && !self_closing {
            let raw = &self.html[lt + 1..name_end];
            self.pending = Some((raw, content));
        }
        Some(if self_closing {
            Token::SelfClosingStartTag(name)
        } else {
            Token::StartTag(name)
        })
    }

    /// Where the raw text of element `name` ends: at `</name` followed by whitespace,
    /// `/` or `>` (case-insensitive), else at the end of the input.
    fn raw_text_end(&self, name: &str) -> usize {
        let bytes = self.html.as_bytes();
        let n = name.len();
        let mut at = self.pos;
        while let Some(i) = self.examined.memchr(b'<', &bytes[at..]) {
            let lt = at + i;
            let candidate = &bytes[lt + 1..];
            if candidate.first() == Some(&b'/')
                && candidate.len() > n + 1
                && candidate[1..=n].eq_ignore_ascii_case(name.as_bytes())
                && matches!(candidate[n + 1], b'/' | b'>') | is_ws(candidate[n + 1])
            {
                return lt;
            }
            at = lt + 1;
        }
        bytes.len()
    }

    /// The end of a comment's text and the position after the comment, for a comment
    /// whose text starts at `from` (just after `<!--`).
    fn comment_end(&self, from: usize) -> (usize, usize) {
        let bytes = self.html.as_bytes();
        let rest = &bytes[from..];
        // `<!-->` and `<!--->` are (empty) comments.
        if rest.starts_with(b">") {
            return (from, from + 1);
        }
        if rest.starts_with(b"->") {
            return (from, from + 2);
        }
        // One forward pass for the first `-->` or `--!>` (two searches would each scan
        // to the end of the page when only one of them occurs: quadratic over many
        // comments).
        let mut at = 0;
        while let Some(i) = self.examined.memchr(b'-', &rest[at..]) {
            let p = at + i;
            if rest[p..].starts_with(b"-->") {
                return (from + p, from + p + 3);
            }
            if rest[p..].starts_with(b"--!>") {
                return (from + p, from + p + 4);
            }
            at = p + 1;
        }
        (bytes.len(), bytes.len())
    }

    /// Where a `<script>`'s content ends, through HTML5's script data escaped and
    /// double-escaped states: inside `<!--`, a `<script` start hides the next
    /// `</script>` (which then only leaves the double-escaped state) until `-->`.
    fn script_end(&self) -> usize {
        let bytes = self.html.as_bytes();
        #[derive(PartialEq)]
        enum State {
            Data,
            Escaped,
            DoubleEscaped,
        }
        let mut state = State::Data;
        let mut at = self.pos;
        let is_script_at = |i: usize| {
            bytes.len() > i + 6
                && bytes[i..i + 6].eq_ignore_ascii_case(b"script")
                && (matches!(bytes[i + 6], b'/' | b'>') || is_ws(bytes[i + 6]))
        };
        while at < bytes.len() {
            let Some(i) = memchr::memchr2(b'<', b'-', &bytes[at..]) else {
                self.examined.add(bytes.len() - at);
                break;
            };
            self.examined.add(i + 1);
            let p = at + i;
            if bytes[p] == b'-' {
                if state != State::Data && bytes[p..].starts_with(b"-->") {
                    state = State::Data;
                    at = p + 3;
                } else {
                    at = p + 1;
                }
                continue;
            }
            let rest = &bytes[p + 1..];
            if state == State::Data && rest.starts_with(b"!--") {
                state = State::Escaped;
                // `<!-->` : the dashes may also end the escape at once.
                at = p + 2;
                continue;
            }
            if rest.first() == Some(&b'/') && is_script_at(p + 2) {
                match state {
                    State::DoubleEscaped => state = State::Escaped,
                    _ => return p,
                }
                at = p + 2;
                continue;
            }
            if state == State::Escaped && is_script_at(p + 1) {
                state = State::DoubleEscaped;
            }
            at = p + 1;
        }
        bytes.len()
    }

    /// Scans attributes from `pos` (just after the tag name) to the `>`; returns the
    /// position after the tag, whether it ended with `/>`, and whether it ended at all
    /// (not cut by the end of the input). With `keep`, the first [`MAX_ATTRIBUTES`]
    /// are stored in [`attrs`](Self::attrs).
    #[inline(always)]
    fn scan_attributes(&mut self, pos: usize, keep: bool) -> (usize, bool, bool) {
        if self.html.as_bytes().get(pos) == Some(&b'>') {
            // No attributes (most tags): the loop's call is not made.
            if keep {
                self.attrs.clear();
            }
            self.examined.add(1);
            return (pos + 1, false, true);
        }
        let (end, self_closing, complete) = match self.scan_attributes_inner(pos, keep) {
            Some((end, self_closing)) => (end, self_closing, true),
            None => (self.html.len(), false, false),
        };
        self.examined.add(end - pos);
        (end, self_closing, complete)
    }

    #[inline(always)]
    fn scan_attributes_inner(&mut self, mut pos: usize, keep: bool) -> Option<(usize, bool)> {
        let bytes = self.html.as_bytes();
        if keep {
            self.attrs.clear();
        }
        loop {
            let mut slash = false;
            while pos < bytes.len() && CLASS[usize::from(bytes[pos])] & (WS | SLASH) != 0 {
                slash = bytes[pos] == b'/';
                pos += 1;
            }
            if pos >= bytes.len() {
                return None;
            }
            if bytes[pos] == b'>' {
                return Some((pos + 1, slash));
            }
            // A name: anything up to whitespace, '/', '>' or '=' (an '=' as its first
            // character belongs to it).
            let start = pos;
            let (end, seen) = scan_classes(bytes, pos + 1, WS | SLASH | GT | EQ);
            pos = end;
            let name = (start, pos);
            let upper = (seen | CLASS[usize::from(bytes[start])]) & UPPER != 0;
            let mut after = pos;
            while after < bytes.len() && is_ws(bytes[after]) {
                after += 1;
            }
            let mut refs = false;
            let value = if bytes.get(after) == Some(&b'=') {
                pos = after + 1;
                while pos < bytes.len() && is_ws(bytes[pos]) {
                    pos += 1;
                }
                match bytes.get(pos) {
                    Some(&q @ (b'"' | b'\'')) => {
                        let vstart = pos + 1;
                        // The closing quote, noting an `&` on the way (one scan for
                        // both up to the first `&`, then for the quote alone).
                        let vend = match crate::util::memchr2_near(q, b'&', &bytes[vstart..]) {
                            Some(e) if bytes[vstart + e] == b'&' => {
                                refs = true;
                                let from = vstart + e + 1;
                                memchr(q, &bytes[from..]).map_or(bytes.len(), |e| from + e)
                            }
                            Some(e) => vstart + e,
                            None => bytes.len(),
                        };
                        pos = (vend + 1).min(bytes.len());
                        (vstart, vend)
                    }
                    _ => {
                        let vstart = pos;
                        let (end, seen) = scan_classes(bytes, pos, WS | GT);
                        pos = end;
                        refs = seen & AMP != 0;
                        (vstart, pos)
                    }
                }
            } else {
                NO_VALUE
            };
            if keep {
                if self.attrs.len() < MAX_ATTRIBUTES {
                    self.attrs.push(RawAttr {
                        name,
                        value,
                        refs,
                        upper,
                    });
                } else {
                    self.dropped_attributes += 1;
                }
            }
        }
    }
}

/// The end of a tag name starting at `from` (whitespace, `/` or `>` ends it), and
/// whether the name has an upper-case ASCII letter.
fn tag_name_end(bytes: &[u8], from: usize) -> (usize, bool) {
    let (end, seen) = scan_classes(bytes, from, WS | SLASH | GT);
    (end, seen & UPPER != 0)
}

/// From `from`, the first byte with a [`CLASS`] bit in `stop` (or the end), and the
/// union of the classes of the bytes before it.
fn scan_classes(bytes: &[u8], from: usize, stop: u8) -> (usize, u8) {
    let mut i = from;
    let mut seen = 0;
    while i < bytes.len() {
        let class = CLASS[usize::from(bytes[i])];
        if class & stop != 0 {
            break;
        }
        seen |= class;
        i += 1;
    }
    (i, seen)
}

/// `name` lower-cased when `upper` says it has an upper-case letter, else borrowed.
fn lower_if(name: &str, upper: bool) -> Cow<'_, str> {
    if upper {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tokens as short strings: `T:text`, `t:raw`, `<name a=v>`, `<name/>`, `</name>`,
    /// `!comment` (with [`tokens_and_comments`]).
    fn tokens(html: &str) -> Vec<String> {
        tokens_with(html, false)
    }

    fn tokens_and_comments(html: &str) -> Vec<String> {
        tokens_with(html, true)
    }

    fn tokens_with(html: &str, comments: bool) -> Vec<String> {
        let mut t = Tokenizer::new(html).with_comments(comments);
        let mut out = Vec::new();
        while let Some(tok) = t.next_token() {
            out.push(match tok {
                Token::Text(text) | Token::TextWithRefs(text) | Token::RawText(text) => {
                    let decode = !matches!(tok, Token::RawText(_));
                    let refs = matches!(tok, Token::TextWithRefs(_));
                    // `refs` is exactly "decoded text holding an `&`".
                    assert_eq!(refs, decode && text.contains('&'), "{text:?}");
                    format!("{}:{text}", if decode { "T" } else { "t" })
                }
                Token::StartTag(ref name) | Token::SelfClosingStartTag(ref name) => {
                    let mut s = format!("<{name}");
                    for (n, v) in t.attrs().iter() {
                        s.push_str(&format!(" {n}={v}"));
                    }
                    let self_closing = matches!(tok, Token::SelfClosingStartTag(_));
                    s.push_str(if self_closing { "/>" } else { ">" });
                    s
                }
                Token::EndTag(name) => format!("</{name}>"),
                Token::CutStartTag(name) => format!("<{name}…"),
                Token::Comment(text) => format!("!{text}"),
            });
        }
        out
    }

    #[test]
    fn a_lent_attribute_list_comes_back_empty() {
        // Tokenizers one after another on this thread share their lists: each sees
        // only its own tags' attributes.
        for _ in 0..3 {
            assert_eq!(tokens("<b>"), ["<b>"]);
            assert_eq!(tokens("<a x=1 y=2 z=3>"), ["<a x=1 y=2 z=3>"]);
            let mut t = Tokenizer::new("<i>");
            assert_eq!(t.attrs().iter().count(), 0, "a stale list before any tag");
            assert!(matches!(t.next_token(), Some(Token::StartTag(_))));
            assert_eq!(t.attrs().iter().count(), 0);
        }
    }

    #[test]
    fn comment_tokens_hold_html5s_comment_data() {
        assert_eq!(
            tokens_and_comments("a<!-->b<!--->c<!-- x --!>d<!-- y -->"),
            ["T:a", "!", "T:b", "!", "T:c", "! x ", "T:d", "! y "]
        );
        // Bogus comments: `<?` stays in the text, `<!` and `</` do not; a doctype
        // makes nothing.
        assert_eq!(
            tokens_and_comments("<?pi x?><!x><![CDATA[c]]></ y><!DOCTYPE html><!doctype>t"),
            ["!?pi x?", "!x", "![CDATA[c]]", "! y", "T:t"]
        );
        assert_eq!(tokens_and_comments("<!-- never closed"), ["! never closed"]);
        assert_eq!(tokens_and_comments("<?never closed"), ["!?never closed"]);
    }

    #[test]
    fn comments_as_html5_ends_them() {
        assert_eq!(tokens("a<!-->b<a>"), ["T:a", "T:b", "<a>"]);
        assert_eq!(tokens("a<!--->b"), ["T:a", "T:b"]);
        assert_eq!(tokens("<!-- x --!>y"), ["T:y"]);
        assert_eq!(tokens("<!---->z"), ["T:z"]);
        assert_eq!(tokens("<!-- <a href=x> -- > -->w"), ["T:w"]);
        assert!(tokens("<!-- never closed <a href=x>").is_empty());
        assert_eq!(tokens("<!DOCTYPE html><?pi x?><![CDATA[c]]>t"), ["T:t"]);
    }

    #[test]
    fn raw_text_ends_only_at_its_own_end_tag() {
        assert_eq!(
            tokens("<script>a</scripts>b</script >c"),
            ["<script>", "t:a</scripts>b", "</script>", "T:c"]
        );
        assert_eq!(
            tokens("<SCRIPT>x</Script/>y"),
            ["<script>", "t:x", "</script>", "T:y"]
        );
        assert_eq!(tokens("<style>a</style"), ["<style>", "t:a</style"]);
        assert_eq!(
            tokens("<title>A &amp; <b>B</b></title>"),
            ["<title>", "T:A &amp; <b>B</b>", "</title>"]
        );
        assert_eq!(
            tokens("<textarea><a href=x>in</a></textarea><a>"),
            ["<textarea>", "T:<a href=x>in</a>", "</textarea>", "<a>"]
        );
    }

    #[test]
    fn tags_and_attributes_as_html5_reads_them() {
        assert_eq!(
            tokens("<a href=five.html/>Five</a>"),
            ["<a href=five.html/>", "T:Five", "</a>"]
        );
        assert_eq!(tokens("<a href=\"/x\"/><p>"), ["<a href=/x/>", "<p>"]);
        assert_eq!(tokens("<A HREF='q' b c=\"1>2\">"), ["<a HREF=q b= c=1>2>"]);
        assert_eq!(tokens("</a title=\">\">t"), ["</a>", "T:t"]);
        assert_eq!(tokens("a < b <3 </>c</ x>d"), ["T:a < b <3 ", "T:c", "T:d"]);
        assert_eq!(tokens("<a =x>"), ["<a =x=>"]);
        assert_eq!(tokens("<div/class=x>"), ["<div class=x>"]);
        assert_eq!(tokens("x<"), ["T:x<"]);
        assert_eq!(tokens("x</"), ["T:x</"]);
        assert_eq!(tokens("a<b c=\"d>"), ["T:a", "<b…"]);
        assert_eq!(tokens("a</b c"), ["T:a"]);
    }

    #[test]
    fn attributes_over_the_limit_are_scanned_and_dropped() {
        let mut html = String::from("<a");
        for i in 0..MAX_ATTRIBUTES + 10 {
            html.push_str(&format!(" a{i}=\">\""));
        }
        html.push_str(">after");
        let mut t = Tokenizer::new(&html);
        assert!(matches!(t.next_token(), Some(Token::StartTag(_))));
        assert_eq!(t.attrs().iter().count(), MAX_ATTRIBUTES);
        assert_eq!(t.dropped_attributes, 10);
        assert_eq!(t.next_token(), Some(Token::Text("after")));
    }
}
