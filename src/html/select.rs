//! CSS selectors over [`ElementRef`] with the `selectors` crate: parsing (through
//! `cssparser`) and matching (the `selectors::Element` implementation).

use std::fmt;

use cssparser::ToCss;
use precomputed_hash::PrecomputedHash;
use selectors::attr::{AttrSelectorOperation, CaseSensitivity, NamespaceConstraint};
use selectors::bloom::BloomFilter;
use selectors::matching::{self, MatchingContext, MatchingMode, SelectorCaches};
use selectors::parser::{self, ParseRelative, SelectorList, SelectorParseErrorKind};
use selectors::{Element, OpaqueElement};

use super::dom::{Document, ElementRef, Kind, NONE};

/// Names in selectors: the text and its [`name_key`](super::name_key).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CssName(String, u64);

impl<'a> From<&'a str> for CssName {
    fn from(s: &'a str) -> Self {
        Self(s.to_owned(), super::name::name_key(s))
    }
}

impl ToCss for CssName {
    fn to_css<W: fmt::Write>(&self, dest: &mut W) -> fmt::Result {
        dest.write_str(&self.0)
    }
}

impl PrecomputedHash for CssName {
    fn precomputed_hash(&self) -> u32 {
        (self.1 ^ self.1 >> 32) as u32
    }
}

/// Attribute values in selectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CssValue(String);

impl<'a> From<&'a str> for CssValue {
    fn from(s: &'a str) -> Self {
        Self(s.to_owned())
    }
}

impl AsRef<str> for CssValue {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl ToCss for CssValue {
    fn to_css<W: fmt::Write>(&self, dest: &mut W) -> fmt::Result {
        cssparser::serialize_string(&self.0, dest)
    }
}

/// The non-tree-structural pseudo-classes cssselect's `HTMLTranslator` (parsel's)
/// translates, matched as its XPath conditions match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PseudoClass {
    /// `:checked`: an `<option>` with `selected`, an `<input>` or `<command>` of type
    /// `checkbox` or `radio` with `checked`.
    Checked,
    /// `:disabled`, HTML's definition (a disabled fieldset disables its controls but
    /// those in its first legend).
    Disabled,
    /// `:enabled`.
    Enabled,
    /// `:link`: `<a>`, `<link>` or `<area>` with `href`.
    Link,
    /// `:lang(x)`: the nearest `lang` (self or ancestor), lower-cased, with `-`
    /// appended, starts with `x-` (`x` lower-cased).
    Lang(String),
    /// `:contains(text)` (cssselect's extension): the element's string value holds it.
    Contains(String),
    /// `:visited`, `:hover`, `:active`, `:focus`, `:target`: never match.
    Never(&'static str),
}

impl parser::NonTSPseudoClass for PseudoClass {
    fn is_active_or_hover(&self) -> bool {
        false
    }

    fn is_user_action_state(&self) -> bool {
        false
    }
}

impl ToCss for PseudoClass {
    fn to_css<W: fmt::Write>(&self, dest: &mut W) -> fmt::Result {
        match self {
            Self::Checked => dest.write_str(":checked"),
            Self::Disabled => dest.write_str(":disabled"),
            Self::Enabled => dest.write_str(":enabled"),
            Self::Link => dest.write_str(":link"),
            Self::Never(name) => write!(dest, ":{name}"),
            Self::Lang(v) => {
                dest.write_str(":lang(")?;
                cssparser::serialize_string(v, dest)?;
                dest.write_str(")")
            }
            Self::Contains(v) => {
                dest.write_str(":contains(")?;
                cssparser::serialize_string(v, dest)?;
                dest.write_str(")")
            }
        }
    }
}

/// cssselect's `HTMLTranslator` rules for the pseudo-classes of [`PseudoClass`].
mod html_states {
    use crate::html::dom::{Child, ElementRef};

    fn has(e: &ElementRef<'_>, attr: &str) -> bool {
        e.attr(attr).is_some()
    }

    fn ancestors<'a>(e: &ElementRef<'a>) -> impl Iterator<Item = ElementRef<'a>> + use<'a> {
        std::iter::successors(e.parent_element(), |p| p.parent_element())
    }

    pub(super) fn checked(e: &ElementRef<'_>) -> bool {
        (has(e, "selected") && e.name() == "option")
            || (has(e, "checked")
                && matches!(e.name(), "input" | "command")
                && matches!(e.attr("type"), Some("checkbox" | "radio")))
    }

    pub(super) fn link(e: &ElementRef<'_>) -> bool {
        has(e, "href") && matches!(e.name(), "a" | "link" | "area")
    }

    /// `ancestor::fieldset[@disabled] and not(count(ancestor::legend |
    /// ancestor::fieldset[@disabled]/legend[1]) < count(ancestor::legend) +
    /// count(ancestor::fieldset[@disabled]/legend[1]))`: a disabled fieldset above,
    /// and no ancestor legend that is the first legend child of a disabled fieldset
    /// above.
    fn disabled_by_fieldset(e: &ElementRef<'_>) -> bool {
        let disabled: Vec<ElementRef<'_>> = ancestors(e)
            .filter(|a| a.name() == "fieldset" && has(a, "disabled"))
            .collect();
        if disabled.is_empty() {
            return false;
        }
        let first_legends: Vec<_> = disabled
            .iter()
            .filter_map(|f| {
                f.children().find_map(|c| match c {
                    Child::Element(l) if l.name() == "legend" => Some(l.id()),
                    _ => None,
                })
            })
            .collect();
        !ancestors(e).any(|a| a.name() == "legend" && first_legends.contains(&a.id()))
    }

    fn in_disabled_optgroup(e: &ElementRef<'_>) -> bool {
        ancestors(e).any(|a| a.name() == "optgroup" && has(&a, "disabled"))
    }

    pub(super) fn disabled(e: &ElementRef<'_>) -> bool {
        let name = e.name();
        (has(e, "disabled")
            && matches!(
                name,
                "input" | "button" | "select" | "textarea" | "fieldset" | "optgroup" | "option"
            ))
            || (matches!(name, "input" | "button" | "select" | "textarea")
                && disabled_by_fieldset(e))
            || (name == "option" && in_disabled_optgroup(e))
    }

    pub(super) fn enabled(e: &ElementRef<'_>) -> bool {
        let name = e.name();
        (matches!(name, "fieldset" | "optgroup") && !has(e, "disabled"))
            || (matches!(name, "input" | "button" | "select" | "textarea")
                && !has(e, "disabled")
                && !disabled_by_fieldset(e))
            || (name == "option" && !(has(e, "disabled") || in_disabled_optgroup(e)))
    }

    /// `ancestor-or-self::*[@lang][1][starts-with(concat(translate(@lang, A-Z,
    /// a-z), '-'), x)]`, `x` already lower-cased with its `-`.
    pub(super) fn lang(e: &ElementRef<'_>, prefix: &str) -> bool {
        let Some(value) = std::iter::once(*e)
            .chain(ancestors(e))
            .find_map(|a| a.attr("lang"))
        else {
            return false;
        };
        let mut tagged = value.to_ascii_lowercase();
        tagged.push('-');
        tagged.starts_with(prefix)
    }

    /// `contains(., text)`.
    pub(super) fn contains(e: &ElementRef<'_>, text: &str) -> bool {
        e.text_content().contains(text)
    }
}

/// No pseudo-elements (parsel's `::text` and `::attr()` are handled above the engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PseudoElement {}

impl parser::PseudoElement for PseudoElement {}

impl ToCss for PseudoElement {
    fn to_css<W: fmt::Write>(&self, _dest: &mut W) -> fmt::Result {
        Ok(())
    }
}

/// The selector implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Simple;

impl parser::SelectorImpl for Simple {
    type ExtraMatchingData<'a> = ();
    type AttrValue = CssValue;
    type Identifier = CssName;
    type LocalName = CssName;
    type NamespaceUrl = CssName;
    type NamespacePrefix = CssName;
    type BorrowedNamespaceUrl = CssName;
    type BorrowedLocalName = CssName;
    type NonTSPseudoClass = PseudoClass;
    type PseudoElement = PseudoElement;
}

struct SelectorParser;

impl<'i> parser::Parser<'i> for SelectorParser {
    type Impl = Simple;
    type Error = SelectorParseErrorKind;

    fn parse_is_and_where(&self) -> bool {
        true
    }

    fn parse_has(&self) -> bool {
        true
    }

    fn parse_non_ts_pseudo_class(
        &self,
        name: cssparser::CowRcStr<'i>,
    ) -> Result<PseudoClass, cssparser::ParseError<SelectorParseErrorKind>> {
        cssparser::match_ignore_ascii_case! { &name,
            "checked" => return Ok(PseudoClass::Checked),
            "disabled" => return Ok(PseudoClass::Disabled),
            "enabled" => return Ok(PseudoClass::Enabled),
            "link" => return Ok(PseudoClass::Link),
            "visited" => return Ok(PseudoClass::Never("visited")),
            "hover" => return Ok(PseudoClass::Never("hover")),
            "active" => return Ok(PseudoClass::Never("active")),
            "focus" => return Ok(PseudoClass::Never("focus")),
            "target" => return Ok(PseudoClass::Never("target")),
            _ => {}
        }
        Err(cssparser::ParseError::custom(
            SelectorParseErrorKind::UnsupportedPseudoClassOrElement,
        ))
    }

    fn parse_non_ts_functional_pseudo_class(
        &self,
        name: cssparser::CowRcStr<'i>,
        arguments: &mut cssparser::Parser<'i>,
        _after_part: bool,
    ) -> Result<PseudoClass, cssparser::ParseError<SelectorParseErrorKind>> {
        // cssselect: exactly one string or identifier.
        let lang = name.eq_ignore_ascii_case("lang");
        if lang || name.eq_ignore_ascii_case("contains") {
            let value = arguments.expect_ident_or_string()?.as_ref().to_owned();
            arguments.expect_exhausted()?;
            return Ok(if lang {
                let mut prefix = value.to_lowercase();
                prefix.push('-');
                PseudoClass::Lang(prefix)
            } else {
                PseudoClass::Contains(value)
            });
        }
        Err(cssparser::ParseError::custom(
            SelectorParseErrorKind::UnsupportedPseudoClassOrElement,
        ))
    }
}

/// A selector could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError {
    /// The selector text.
    pub selector: String,
    /// The parser's message.
    pub reason: String,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid CSS selector {:?}: {}",
            self.selector, self.reason
        )
    }
}

impl std::error::Error for SelectorError {}

/// A parsed CSS selector list.
#[derive(Clone)]
pub struct Selector {
    list: SelectorList<Simple>,
    /// Name keys ([`super::name_key`]) one of which an element must have to match:
    /// every selector of the list names its subject's type (`div.quote`, `a, area`);
    /// `None` when one does not (`.quote`, `*`, `:is(a, b)`).
    subjects: Option<Vec<u64>>,
    /// The list when it is one compound of a type and classes (`div.quote`,
    /// `span.text`, `a`): matched by its two tests, not through `selectors`' matching
    /// context (~300 instructions a call), as `selectors` would match it.
    compound: Option<Compound>,
}

/// One type selector and any class selectors, nothing else.
#[derive(Clone)]
struct Compound {
    /// The lower-case name (`selectors` matches `lower_name` in an HTML document).
    name: CssName,
    classes: Vec<CssName>,
}

/// [`Compound`] of `list`, when it is one.
fn compound_of(list: &SelectorList<Simple>) -> Option<Compound> {
    let [selector] = list.slice() else {
        return None;
    };
    let (mut name, mut classes) = (None, Vec::new());
    for component in selector.iter_raw_match_order() {
        match component {
            parser::Component::LocalName(l) if name.is_none() => {
                name = Some(l.lower_name.clone());
            }
            parser::Component::Class(c) => classes.push(c.clone()),
            _ => return None,
        }
    }
    Some(Compound {
        name: name?,
        classes,
    })
}

/// Matching caches (`:nth-child` and friends), made on the first match that goes
/// through `selectors` (a selector of one type-and-classes compound never does, and
/// a walk making and dropping the caches' maps cost more than its matches).
#[derive(Default)]
pub(crate) struct MatchCache(Option<SelectorCaches>, Option<OpaqueElement>);

impl Selector {
    /// Parses a selector list (`div.quote > span.text, a[href]`).
    ///
    /// # Errors
    ///
    /// The text is not a valid selector list.
    pub fn parse(css: &str) -> Result<Self, SelectorError> {
        let mut parser = cssparser::Parser::new(css);
        SelectorList::parse(&SelectorParser, &mut parser, ParseRelative::No)
            .map(|list| {
                let subjects = subject_keys(&list);
                let compound = compound_of(&list);
                Self {
                    list,
                    subjects,
                    compound,
                }
            })
            .map_err(|e| SelectorError {
                selector: css.to_owned(),
                reason: format!("{:?}", e.kind),
            })
    }

    /// `false` when `element` cannot match, by its name alone; `true` means "maybe".
    /// (HTML only: an XML element is tested by [`matches_with`](Self::matches_with).)
    pub(crate) fn may_match(&self, element: &ElementRef<'_>) -> bool {
        self.subjects
            .as_ref()
            .is_none_or(|keys| keys.contains(&element.name_key()))
    }

    pub(crate) fn matches_with(&self, element: &ElementRef<'_>, cache: &mut MatchCache) -> bool {
        if element.doc.is_xml() {
            return self.matches_generally(element, cache);
        }
        self.matches_html(element, cache)
    }

    /// [`matches_with`](Self::matches_with) for an element of an HTML document.
    fn matches_html(&self, element: &ElementRef<'_>, cache: &mut MatchCache) -> bool {
        if let Some(c) = &self.compound {
            // What `selectors` does for these two components: the local name (lower
            // case: an HTML element in an HTML document), the classes case-sensitively
            // (no quirks mode).
            return element.name_key() == c.name.1
                && (c.name.0.len() <= 8 || element.name() == c.name.0)
                && c.classes
                    .iter()
                    .all(|class| element.has_class(class, CaseSensitivity::CaseSensitive));
        }
        self.matches_generally(element, cache)
    }

    /// Whether `element`, one of the elements a walk over `doc` meets, matches: the
    /// document's kind asked once per walk (`xml`), not per element.
    #[inline]
    pub(crate) fn matches_in(
        &self,
        xml: bool,
        element: &ElementRef<'_>,
        cache: &mut MatchCache,
    ) -> bool {
        if xml {
            self.matches_generally(element, cache)
        } else {
            self.may_match(element) && self.matches_html(element, cache)
        }
    }

    /// [`matches_with`](Self::matches_with) through `selectors`' matching context.
    fn matches_generally(&self, element: &ElementRef<'_>, cache: &mut MatchCache) -> bool {
        let scope = cache.1;
        let mut context = MatchingContext::new(
            MatchingMode::Normal,
            None,
            cache.0.get_or_insert_with(SelectorCaches::default),
            selectors::context::QuirksMode::NoQuirks,
            selectors::matching::NeedsSelectorFlags::No,
            selectors::matching::MatchingForInvalidation::No,
        );
        // `:scope` is the element a selection is made in (parsel's `:scope > div` on
        // a selected element: its children), else the root.
        context.scope_element = scope;
        matching::matches_selector_list(&self.list, element, &mut context)
    }
}

/// The type names of the subjects of `list` (the rightmost compound of each
/// selector), as name keys, or `None` if some subject has none. `has_local_name`
/// compares these keys first, so an element with neither key cannot match.
fn subject_keys(list: &SelectorList<Simple>) -> Option<Vec<u64>> {
    let mut keys = Vec::new();
    for selector in list.slice() {
        let mut named = false;
        for component in selector.iter() {
            if let parser::Component::LocalName(l) = component {
                keys.push(l.name.1);
                keys.push(l.lower_name.1);
                named = true;
            }
        }
        if !named {
            return None;
        }
    }
    Some(keys)
}

impl fmt::Debug for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Selector({})", self.list.to_css_string())
    }
}

impl fmt::Debug for MatchCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MatchCache")
    }
}

const HTML_NS: &str = "http://www.w3.org/1999/xhtml";

impl<'a> ElementRef<'a> {
    fn sibling(&self, forward: bool) -> Option<Self> {
        let mut id = if forward {
            self.node().next
        } else {
            self.node().prev
        };
        while id != NONE {
            if let Some(e) = ElementRef::new(self.doc, id) {
                return Some(e);
            }
            let n = &self.doc.nodes[id as usize];
            id = if forward { n.next } else { n.prev };
        }
        None
    }
}

impl Element for ElementRef<'_> {
    type Impl = Simple;

    fn opaque(&self) -> OpaqueElement {
        OpaqueElement::new(self.node())
    }

    fn parent_element(&self) -> Option<Self> {
        ElementRef::parent_element(self)
    }

    fn parent_node_is_shadow_root(&self) -> bool {
        false
    }

    fn containing_shadow_host(&self) -> Option<Self> {
        None
    }

    fn is_pseudo_element(&self) -> bool {
        false
    }

    fn prev_sibling_element(&self) -> Option<Self> {
        self.sibling(false)
    }

    fn next_sibling_element(&self) -> Option<Self> {
        self.sibling(true)
    }

    fn first_element_child(&self) -> Option<Self> {
        let mut id = self.node().first_child;
        while id != NONE {
            if let Some(e) = ElementRef::new(self.doc, id) {
                return Some(e);
            }
            id = self.doc.nodes[id as usize].next;
        }
        None
    }

    fn is_html_element_in_html_document(&self) -> bool {
        !self.doc.is_xml()
    }

    fn has_local_name(&self, name: &CssName) -> bool {
        if let Some(xml) = self.doc.xml.as_deref() {
            // cssselect's type selector is an XPath name test: no namespace, the name
            // as written (case-sensitive).
            return xml.node_uri(self.id).is_empty() && self.name() == name.0;
        }
        self.name_key() == name.1 && (name.0.len() <= 8 || self.name() == name.0)
    }

    fn has_namespace(&self, ns: &CssName) -> bool {
        ns.0 == HTML_NS
    }

    fn is_same_type(&self, other: &Self) -> bool {
        self.name_key() == other.name_key() && self.name() == other.name()
    }

    fn attr_matches(
        &self,
        ns: &NamespaceConstraint<&CssName>,
        local_name: &CssName,
        operation: &AttrSelectorOperation<&CssValue>,
    ) -> bool {
        if let NamespaceConstraint::Specific(url) = ns
            && !url.0.is_empty()
        {
            return false;
        }
        match self.attr(&local_name.0) {
            Some(v) => operation.eval_str(v),
            None => false,
        }
    }

    fn match_non_ts_pseudo_class(
        &self,
        pc: &PseudoClass,
        _context: &mut MatchingContext<'_, Simple>,
    ) -> bool {
        match pc {
            PseudoClass::Checked => html_states::checked(self),
            PseudoClass::Disabled => html_states::disabled(self),
            PseudoClass::Enabled => html_states::enabled(self),
            PseudoClass::Link => html_states::link(self),
            PseudoClass::Lang(prefix) => html_states::lang(self, prefix),
            PseudoClass::Contains(text) => html_states::contains(self, text),
            PseudoClass::Never(_) => false,
        }
    }

    fn match_pseudo_element(
        &self,
        pe: &PseudoElement,
        _context: &mut MatchingContext<'_, Simple>,
    ) -> bool {
        match *pe {}
    }

    fn apply_selector_flags(&self, _flags: matching::ElementSelectorFlags) {}

    fn is_link(&self) -> bool {
        matches!(self.name(), "a" | "area" | "link") && self.attr("href").is_some()
    }

    fn is_html_slot_element(&self) -> bool {
        false
    }

    fn has_id(&self, id: &CssName, case_sensitivity: CaseSensitivity) -> bool {
        self.attr("id")
            .is_some_and(|v| case_sensitivity.eq(v.as_bytes(), id.0.as_bytes()))
    }

    fn has_class(&self, name: &CssName, case_sensitivity: CaseSensitivity) -> bool {
        self.attr("class").is_some_and(|v| {
            v.split_ascii_whitespace()
                .any(|c| case_sensitivity.eq(c.as_bytes(), name.0.as_bytes()))
        })
    }

    fn has_custom_state(&self, _name: &CssName) -> bool {
        false
    }

    fn imported_part(&self, _name: &CssName) -> Option<CssName> {
        None
    }

    fn is_part(&self, _name: &CssName) -> bool {
        false
    }

    fn is_empty(&self) -> bool {
        let mut id = self.node().first_child;
        while id != NONE {
            let n = &self.doc.nodes[id as usize];
            match n.kind {
                Kind::Element { .. } => return false,
                Kind::Text(span) if span.len > 0 => return false,
                _ => {}
            }
            id = n.next;
        }
        true
    }

    fn is_root(&self) -> bool {
        self.node().parent == 0
    }

    fn add_element_unique_hashes(&self, _filter: &mut BloomFilter) -> bool {
        false
    }
}

impl Document {
    /// Every element matching `selector`, in document order.
    pub fn select(&self, selector: &Selector) -> Vec<ElementRef<'_>> {
        let mut out = Vec::new();
        let mut cache = MatchCache::default();
        let xml = self.is_xml();
        for id in 1..self.nodes.len() as u32 {
            if let Some(e) = ElementRef::new(self, id)
                && selector.matches_in(xml, &e, &mut cache)
            {
                out.push(e);
            }
        }
        out
    }
}

impl<'a> ElementRef<'a> {
    /// Descendant elements matching `selector`, in document order.
    pub fn select(&self, selector: &Selector) -> Vec<ElementRef<'a>> {
        let mut out = Vec::new();
        self.select_into(selector, &mut out);
        out
    }
    /// [`select`](Self::select), appending to `out`.
    pub fn select_into(&self, selector: &Selector, out: &mut Vec<ElementRef<'a>>) {
        self.select_each(selector, |e| out.push(e));
    }
    /// [`select`](Self::select), handing each match to `found` in document order.
    pub fn select_each(&self, selector: &Selector, mut found: impl FnMut(ElementRef<'a>)) {
        let mut cache = MatchCache(None, Some(self.opaque()));
        let xml = self.doc.is_xml();
        for id in self.id + 1..self.node().end {
            if let Some(e) = ElementRef::new(self.doc, id)
                && selector.matches_in(xml, &e, &mut cache)
            {
                found(e);
            }
        }
    }
    /// Whether this element matches `selector`.
    pub fn matches(&self, selector: &Selector) -> bool {
        selector.matches_with(self, &mut MatchCache::default())
    }

    /// Whether this element matches `selector` with itself as `:scope` (a query made
    /// in it, which parsel's `descendant-or-self::` lets it match).
    pub fn matches_in_scope(&self, selector: &Selector) -> bool {
        selector.matches_with(self, &mut MatchCache(None, Some(self.opaque())))
    }
}

#[cfg(test)]
mod tests {
    use crate::html::{Document, Selector};

    fn sel(doc: &Document, css: &str) -> Vec<String> {
        doc.select(&Selector::parse(css).unwrap())
            .iter()
            .map(|e| e.html())
            .collect()
    }

    #[test]
    fn the_name_prefilter_skips_only_what_cannot_match() {
        let html = r#"<html><body><div class="quote"><span class="text">a</span>
            <small class="author">b</small><a href="/x">x</a><area href="/y"></div>
            <svg><foreignObject><p>in</p></foreignObject><rect/></svg>
            <DIV id=d2><SPAN>c</SPAN></DIV><customelementwithalongname/></body></html>"#;
        let doc = Document::parse(html);
        let queries = [
            "div.quote",
            "span.text",
            "small.author",
            "a, area",
            "DIV",
            "Span",
            "div span",
            "div > span",
            "*",
            ".quote",
            ":is(a, area)",
            "div, .text",
            "a[href]",
            "foreignObject",
            "foreignobject",
            "rect",
            "p",
            "customelementwithalongname",
            "CustomElementWithALongName",
            ":not(div)",
            "body > *",
            "svg *",
        ];
        for q in queries {
            let s = Selector::parse(q).unwrap();
            let mut cache = super::MatchCache::default();
            let brute: Vec<String> = doc
                .elements()
                .filter(|e| s.matches_with(e, &mut cache))
                .map(|e| e.html())
                .collect();
            assert_eq!(sel(&doc, q), brute, "{q}");
        }
        assert!(Selector::parse("div.quote").unwrap().subjects.is_some());
        assert!(Selector::parse("a, area").unwrap().subjects.is_some());
        assert!(Selector::parse("div, .text").unwrap().subjects.is_none());
        assert!(Selector::parse(":is(a, area)").unwrap().subjects.is_none());
    }

    /// The compound fast path answers as `selectors`' general matching, on every
    /// element of pages with upper-case names, classes in odd whitespace and case,
    /// long names, foreign elements; and only plain compounds take it.
    #[test]
    fn compounds_match_as_the_general_matcher() {
        let pages = [
            r#"<div class="quote"><span class="text">a</span><small class="author x">b</small>
               <DIV CLASS="Quote quote"><SPAN class=" text\ttext\n">c</SPAN></DIV>
               <div class="quotes quote-"><p class="a b c">p</p><p class="a\x0cb">q</p></div>
               <customelementwithalongname class=q/><svg><foreignObject class=f/></svg>
               <span class>e</span><span class="">f</span><span>g</span></div>"#,
            "<ul><li class=x>1<li class='x y'>2<li class=X>3</ul><table><tr><td class=c>4</table>",
        ];
        let queries = [
            "div.quote",
            "span.text",
            "small.author",
            "small.author.x",
            "DIV.Quote",
            "div.Quote",
            "p.a.b",
            "p.b",
            "p.a.c.b",
            "li.x",
            "li.X",
            "li.x.y",
            "td.c",
            "span",
            "SPAN",
            "customelementwithalongname.q",
            "CustomElementWithALongName",
            "foreignObject.f",
            "foreignobject",
            "div",
        ];
        for page in pages {
            let doc = Document::parse(page);
            for q in queries {
                let s = Selector::parse(q).unwrap();
                assert!(s.compound.is_some(), "{q} is a plain compound");
                let mut cache = super::MatchCache::default();
                for e in doc.elements() {
                    assert_eq!(
                        s.matches_with(&e, &mut cache),
                        s.matches_generally(&e, &mut cache),
                        "{q} on {}",
                        e.html()
                    );
                }
            }
        }
        for q in [
            ".quote",
            "*",
            "div span",
            "div > p",
            "a, area",
            "p:first-child",
            "a[href]",
            "#main",
            "div.x#y",
            "*.x",
        ] {
            assert!(Selector::parse(q).unwrap().compound.is_none(), "{q}");
        }
    }

    #[test]
    fn selector_features() {
        let doc = Document::parse(
            r#"<html><body><div id=main class="a b"><p class=x>1</p><p>2</p><span lang="en-US">3</span></div>
               <ul><li>a</li><li class=last>b</li></ul><a href="/x">x</a><a name=y>y</a></body></html>"#,
        );
        assert_eq!(sel(&doc, "#main > p.x"), ["<p class=\"x\">1</p>"]);
        assert_eq!(sel(&doc, "div.a.b p:nth-child(2)"), ["<p>2</p>"]);
        assert_eq!(sel(&doc, "[lang|=en]"), ["<span lang=\"en-US\">3</span>"]);
        assert_eq!(sel(&doc, "li:last-child"), ["<li class=\"last\">b</li>"]);
        assert_eq!(sel(&doc, "p + span").len(), 1);
        assert_eq!(sel(&doc, "a[href^='/']").len(), 1);
        assert_eq!(sel(&doc, "div:has(span)").len(), 1);
        assert_eq!(sel(&doc, ":root").len(), 1);
        assert_eq!(sel(&doc, "ul li:not(.last)"), ["<li>a</li>"]);
        // The selector text is checked for unclosed blocks above this engine
        // (`Selection::try_css`), as cssselect refuses them.
        assert!(Selector::parse("div[x=").is_err());
        // cssselect's dynamic pseudo-classes parse and never match.
        assert!(sel(&doc, "a:hover").is_empty());
        assert_eq!(sel(&doc, "a:link").len(), 1);
        assert_eq!(sel(&doc, "span:lang(en)").len(), 1);
        assert_eq!(sel(&doc, "p:contains('2')"), ["<p>2</p>"]);
        assert!(Selector::parse("p:no-such-class").is_err());
        assert!(Selector::parse("p:lang(a, b)").is_err());
    }
}
