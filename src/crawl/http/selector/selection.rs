//! [`Selection`]: parsel's `SelectorList` — CSS with `::text` / `::attr(name)`, XPath 1.0
//! with parsel's extensions (`has-class`, EXSLT `re:` and `set:`, `$variables`),
//! chained in any order, and `.get()` / `.getall()` / `.attrib` / `.re()` giving the
//! strings parsel gives (outer HTML for elements, `str(float)` for numbers, `"1"` /
//! `"0"` for booleans).
//!
//! Compiled selectors and expressions are cached per thread (a spider repeats the same
//! few on every page).

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use crate::html::{
    Document, ElementRef, SelectorError, XPath, XPathError, XPathItem, XPathValue, XPathVar,
};
use crate::util::FxHashMap;

/// A selection's items.
type Items<'a> = smallvec::SmallVec<[Node<'a>; 1]>;

/// One selected thing.
#[derive(Clone)]
enum Node<'a> {
    Element(ElementRef<'a>),
    Text(&'a str),
    Attr(&'a str),
    /// A comment (its text).
    Comment(&'a str),
    /// A string result (or the text of a `re:match` element).
    Str(Rc<str>),
    /// A number, boolean or namespace result, as parsel's `.get()` prints it.
    Scalar(Rc<str>),
    /// A `<match>` element made by `re:match`: its text, and the document of the
    /// expression that made it.
    Match(Rc<str>, &'a Document),
    /// A JMESPath result that is not a string (printed as JSON).
    Json(Rc<serde_json::Value>),
}

/// What follows `::` in a query; `descendants` when whitespace (a descendant
/// combinator) precedes it: `div ::text` is every text inside the div, as in parsel.
#[derive(Clone, Debug, PartialEq)]
enum Pseudo {
    Text { descendants: bool },
    Attr { name: String, descendants: bool },
}

thread_local! {
    static SELECTORS: RefCell<FxHashMap<String, Result<Rc<crate::html::Selector>, SelectorError>>> = RefCell::new(FxHashMap::default());
    static XPATHS: RefCell<FxHashMap<String, Result<Rc<XPath>, XPathError>>> = RefCell::new(FxHashMap::default());
}

/// Compiles (once per distinct expression) and caches an XPath expression.
fn xpath(expr: &str, namespaces: &[(String, String)]) -> Result<Rc<XPath>, XPathError> {
    // The namespaces are part of what the expression means: part of the key.
    let key: std::borrow::Cow<'_, str> = if namespaces.is_empty() {
        std::borrow::Cow::Borrowed(expr)
    } else {
        let mut k = expr.to_owned();
        for (p, u) in namespaces {
            k.push('\0');
            k.push_str(p);
            k.push('\0');
            k.push_str(u);
        }
        std::borrow::Cow::Owned(k)
    };
    XPATHS.with(|cache| {
        if let Some(x) = cache.borrow().get(key.as_ref()) {
            return x.clone();
        }
        let pairs: Vec<(&str, &str)> = namespaces
            .iter()
            .map(|(p, u)| (p.as_str(), u.as_str()))
            .collect();
        let compiled = XPath::compile_ns(expr, &pairs).map(Rc::new);
        let mut cache = cache.borrow_mut();
        if cache.len() > 1024 {
            cache.clear();
        }
        cache.insert(key.into_owned(), compiled.clone());
        compiled
    })
}

/// Parses (once per distinct query) and caches a selector.
fn selector(css: &str) -> Result<Rc<crate::html::Selector>, SelectorError> {
    SELECTORS.with(|cache| {
        if let Some(s) = cache.borrow().get(css) {
            return s.clone();
        }
        let parsed = match unclosed(css) {
            // CSS closes open blocks and strings at the end of the input; cssselect
            // does not.
            Some(open) => Err(SelectorError {
                selector: css.to_owned(),
                reason: format!("{open:?} not closed at the end of the selector"),
            }),
            None => crate::html::Selector::parse(css).map(Rc::new),
        };
        let mut cache = cache.borrow_mut();
        if cache.len() > 1024 {
            cache.clear();
        }
        cache.insert(css.to_owned(), parsed.clone());
        parsed
    })
}

/// The first `[`, `(` or quote a selector leaves open at its end, if any.
fn unclosed(css: &str) -> Option<char> {
    let mut open: Vec<char> = Vec::new();
    let mut chars = css.chars();
    while let Some(c) = chars.next() {
        match (open.last(), c) {
            (_, '\\') => {
                chars.next();
            }
            (Some(&q @ ('"' | '\'')), c) if c == q => {
                open.pop();
            }
            (Some('"' | '\''), _) => {}
            (_, '"' | '\'' | '[' | '(') => open.push(c),
            (Some('['), ']') | (Some('('), ')') => {
                open.pop();
            }
            _ => {}
        }
    }
    open.first().copied()
}

/// What a CSS query selects, parsel's pseudo-elements taken off: the selector text
/// for the `selectors` crate (`None`: the context elements themselves, for `::text`,
/// `*::text`, `::attr(x)`), and the pseudo-element. As parsel's translation does,
/// `X *::text` and `X ::text` are the texts of X and everything inside it (the
/// `descendants` form), `X::text` and `X > *::text` those directly in the matches.
fn split_pseudo(query: &str) -> Result<(Option<Cow<'_, str>>, Option<Pseudo>), SelectorError> {
    let error = |reason: String| SelectorError {
        selector: query.to_owned(),
        reason,
    };
    let trimmed = query.trim();
    if trimmed.is_empty() {
        return Err(error("Expected selector, got <EOF>".into()));
    }
    let (css, pseudo) = if let Some(css) = trimmed.strip_suffix("::text") {
        (css, Some(Pseudo::Text { descendants: false }))
    } else if let Some(pos) = trimmed.rfind("::attr(")
        && let Some(arg) = trimmed[pos + 7..].strip_suffix(')')
    {
        // cssselect: exactly one identifier or string.
        let arg = arg.trim();
        let name = match arg.as_bytes().first() {
            Some(b'"' | b'\'') if arg.len() >= 2 && arg.ends_with(&arg[..1]) => {
                arg[1..arg.len() - 1].to_owned()
            }
            Some(_) if !arg.contains(|c: char| c.is_whitespace() || c == ',') => arg.to_owned(),
            _ => {
                return Err(error(format!(
                    "Expected a single string or ident for ::attr(), got {arg:?}"
                )));
            }
        };
        (
            &trimmed[..pos],
            Some(Pseudo::Attr {
                name,
                descendants: false,
            }),
        )
    } else {
        return Ok((Some(Cow::Borrowed(trimmed)), None));
    };
    let mut pseudo = pseudo;
    let set_descendants = |p: &mut Option<Pseudo>| match p {
        Some(Pseudo::Text { descendants } | Pseudo::Attr { descendants, .. }) => {
            *descendants = true
        }
        None => {}
    };
    let body = css.trim_end();
    let combinator_end = |s: &str| s.ends_with(['>', '+', '~', ',']);
    if body.is_empty() || body == "*" {
        set_descendants(&mut pseudo);
        return Ok((None, pseudo));
    }
    if combinator_end(body) {
        // `X > ::text` is `X > *::text`.
        return Ok((Some(Cow::Owned(format!("{body} *"))), pseudo));
    }
    if body.len() < css.len() {
        // `X ::text`: X, then the descendant form.
        set_descendants(&mut pseudo);
        return Ok((Some(Cow::Borrowed(body)), pseudo));
    }
    if let Some(before) = body.strip_suffix('*')
        && before.ends_with(char::is_whitespace)
        && !combinator_end(before.trim_end())
    {
        // `X *::text`: the same.
        set_descendants(&mut pseudo);
        return Ok((Some(Cow::Borrowed(before.trim_end())), pseudo));
    }
    Ok((Some(Cow::Borrowed(body)), pseudo))
}

/// A list of selected elements, texts or attribute values (parsel's `SelectorList`).
#[derive(Clone)]
pub struct Selection<'a> {
    /// Inline when there is one (a sub-selection's single text or element, each item
    /// of a list as its own selection): no allocation for the commonest case.
    items: Items<'a>,
    /// Namespace prefixes for XPath name tests (parsel's registered namespaces),
    /// passed on to sub-selections.
    namespaces: Option<Rc<[(String, String)]>>,
}

impl<'a> Selection<'a> {
    /// The whole document: its root element, which a CSS query may itself match, as
    /// the context of an XPath expression (parsel's `Selector(text=...)`).
    pub fn of_document(doc: &'a Document) -> Self {
        Selection {
            items: doc.root_element().map(Node::Element).into_iter().collect(),
            namespaces: None,
        }
    }

    /// Registers namespace prefixes for XPath name tests in this selection and those
    /// made from it (parsel's `register_namespace`; `namespaces=` of one query is
    /// [`xpath_ns`](Self::xpath_ns)).
    pub fn with_namespaces<P: AsRef<str>, U: AsRef<str>>(
        mut self,
        namespaces: impl IntoIterator<Item = (P, U)>,
    ) -> Self {
        let mut all: Vec<(String, String)> = self.namespaces.as_deref().unwrap_or(&[]).to_vec();
        all.extend(
            namespaces
                .into_iter()
                .map(|(p, u)| (p.as_ref().to_owned(), u.as_ref().to_owned())),
        );
        self.namespaces = (!all.is_empty()).then(|| all.into());
        self
    }

    /// Nothing selected.
    pub fn empty() -> Self {
        Selection {
            items: Items::new(),
            namespaces: None,
        }
    }

    /// A JSON document (parsel's `Selector(type="json")`), for [`jmespath`](Self::jmespath).
    pub fn of_json(data: serde_json::Value) -> Self {
        Selection {
            items: smallvec::smallvec![Node::Json(Rc::new(data))],
            namespaces: None,
        }
    }

    /// Selects within each element of this selection, with parsel's `::text` and
    /// `::attr(name)`; cssselect's pseudo-classes (`:checked`, `:disabled`,
    /// `:enabled`, `:link`, `:lang()`, `:contains()`...). A malformed selector logs an
    /// error and selects nothing; [`try_css`](Self::try_css) returns the error.
    pub fn css(&self, query: &str) -> Selection<'a> {
        self.try_css(query).unwrap_or_else(|e| {
            log::error!("{e}");
            Selection::empty()
        })
    }

    /// [`css`](Self::css), returning a malformed selector as an error, as parsel raises.
    ///
    /// # Errors
    ///
    /// The selector does not parse, or uses a pseudo-element or pseudo-class that
    /// cssselect does not know.
    pub fn try_css(&self, query: &str) -> Result<Selection<'a>, SelectorError> {
        let (css, pseudo) = split_pseudo(query)?;
        let sel = css.as_deref().map(selector).transpose()?;
        let mut items: Items<'a> = Items::new();
        let whole_list = matches!(
            pseudo,
            Some(
                Pseudo::Text { descendants: true }
                    | Pseudo::Attr {
                        descendants: true,
                        ..
                    }
            )
        );
        // The matches of one context element, for the descendant forms (nested
        // matches count once) and for own texts out of document order.
        let mut matched: smallvec::SmallVec<[ElementRef<'a>; 8]> = smallvec::SmallVec::new();
        for node in &self.items {
            let Node::Element(e) = node else {
                continue;
            };
            let mut found = |m: ElementRef<'a>| match &pseudo {
                _ if whole_list => matched.push(m),
                None => {
                    // Past the one inline item, room for eight at once: a list of
                    // matches (`div.quote`, the rows of a table) grew 2, 4, 8.
                    if items.len() == 1 && !items.spilled() {
                        items.reserve(7);
                    }
                    items.push(Node::Element(m));
                }
                Some(Pseudo::Text { .. }) => matched.push(m),
                Some(Pseudo::Attr { name, .. }) => items.extend(m.attr(name).map(Node::Attr)),
            };
            match &sel {
                // `::text`, `*::text`, `::attr(x)`: the context element itself.
                None => found(*e),
                Some(sel) => {
                    // parsel's CSS is `descendant-or-self::`: the element the query is
                    // made in may match itself (`:scope` is that element).
                    if e.matches_in_scope(sel) {
                        found(*e);
                    }
                    e.select_each(sel, &mut found);
                }
            }
            match &pseudo {
                Some(Pseudo::Text { descendants: true }) => {
                    items.extend(outermost(&matched).flat_map(|m| m.texts().map(Node::Text)));
                }
                Some(Pseudo::Attr {
                    name,
                    descendants: true,
                }) => {
                    items.extend(
                        outermost(&matched)
                            .flat_map(|m| std::iter::once(m).chain(m.descendant_elements()))
                            .filter_map(|m| m.attr(name).map(Node::Attr)),
                    );
                }
                Some(Pseudo::Text { descendants: false }) => {
                    // Each match's own texts, in document order (a match inside
                    // another interleaves with it, as an XPath node-set does).
                    let nested = matched.windows(2).any(|w| w[1].id().0 < w[0].end_id());
                    if nested {
                        let mut texts: Vec<(u32, &'a str)> =
                            matched.iter().flat_map(|m| m.child_text_nodes()).collect();
                        texts.sort_by_key(|t| t.0);
                        items.extend(texts.into_iter().map(|(_, t)| Node::Text(t)));
                    } else {
                        items.extend(matched.iter().flat_map(|m| m.child_texts().map(Node::Text)));
                    }
                }
                _ => {}
            }
            matched.clear();
        }
        Ok(Selection {
            items,
            namespaces: self.namespaces.clone(),
        })
    }

    /// The first result, if it is an element.
    pub fn element(&self) -> Option<ElementRef<'a>> {
        match self.items.first() {
            Some(Node::Element(e)) => Some(*e),
            _ => None,
        }
    }

    /// Selects with an XPath 1.0 expression from each element of this selection (texts,
    /// attribute values and other values select nothing, as in parsel), results
    /// concatenated in order. An invalid expression logs an error and selects nothing;
    /// [`try_xpath`](Self::try_xpath) returns the error instead.
    pub fn xpath(&self, query: &str) -> Selection<'a> {
        self.xpath_with(query, &[])
    }

    /// [`xpath`](Self::xpath) with `$variables` bound (parsel's keyword arguments).
    pub fn xpath_with(&self, query: &str, vars: &[(&str, XPathVar)]) -> Selection<'a> {
        self.try_xpath(query, vars).unwrap_or_else(|e| {
            log::error!("{e} in {query:?}");
            Selection::empty()
        })
    }

    /// [`xpath_with`](Self::xpath_with), returning a malformed expression or an
    /// evaluation error (parsel's `ValueError`).
    ///
    /// # Errors
    ///
    /// The expression does not compile (the error names the position), or its
    /// evaluation fails (undefined variable, wrong argument type, invalid regex).
    pub fn try_xpath(
        &self,
        query: &str,
        vars: &[(&str, XPathVar)],
    ) -> Result<Selection<'a>, XPathError> {
        self.try_xpath_ns(query, &[], vars)
    }

    /// parsel's `xpath(query, namespaces={...})`: the prefixes given (over the
    /// registered ones) for this query; the results keep the registered ones only.
    pub fn xpath_ns(&self, query: &str, namespaces: &[(&str, &str)]) -> Selection<'a> {
        self.try_xpath_ns(query, namespaces, &[])
            .unwrap_or_else(|e| {
                log::error!("{e} in {query:?}");
                Selection::empty()
            })
    }

    /// [`xpath_ns`](Self::xpath_ns) with variables, returning the error.
    ///
    /// # Errors
    ///
    /// As [`try_xpath`](Self::try_xpath); an undefined prefix too.
    pub fn try_xpath_ns(
        &self,
        query: &str,
        namespaces: &[(&str, &str)],
        vars: &[(&str, XPathVar)],
    ) -> Result<Selection<'a>, XPathError> {
        let x = if namespaces.is_empty() {
            xpath(query, self.namespaces.as_deref().unwrap_or(&[]))?
        } else {
            let mut all: Vec<(String, String)> = self.namespaces.as_deref().unwrap_or(&[]).to_vec();
            all.extend(
                namespaces
                    .iter()
                    .map(|(p, u)| ((*p).to_owned(), (*u).to_owned())),
            );
            xpath(query, &all)?
        };
        let mut items = Items::new();
        let itself = query.trim() == ".";
        for item in &self.items {
            let doc = match item {
                Node::Element(e) => e.document(),
                Node::Match(_, doc) => doc,
                Node::Comment(_) => {
                    // lxml evaluates XPath on elements and documents only.
                    return Err(XPathError::runtime(
                        "Input object is not an XML element: HtmlComment",
                    ));
                }
                _ => {
                    if itself && !matches!(item, Node::Scalar(_)) {
                        items.push(item.clone());
                    }
                    continue;
                }
            };
            let value = match item {
                Node::Match(text, doc) => x.evaluate_match(doc, text, vars)?,
                Node::Element(e) => x.evaluate(*e, vars)?,
                _ => continue,
            };
            match value {
                // lxml hands back no document node: `/` and `..` from the root
                // element select nothing.
                XPathValue::Nodes(nodes) => items.extend(nodes.into_iter().filter_map(|n| {
                    Some(match n {
                        XPathItem::Element(e) => Node::Element(e),
                        XPathItem::Text(t) => Node::Text(t),
                        XPathItem::Comment(t) => Node::Comment(t),
                        XPathItem::ProcessingInstruction(t) => Node::Str(format!("<?{t}?>").into()),
                        XPathItem::Attribute { value, .. } => Node::Attr(value),
                        XPathItem::Match(t) => Node::Match(t.into(), doc),
                        XPathItem::MatchText(t) => Node::Str(t.into()),
                        XPathItem::Namespace { prefix, uri } => {
                            Node::Scalar(format!("('{prefix}', '{uri}')").into())
                        }
                        XPathItem::Root => return None,
                    })
                })),
                XPathValue::Number(n) => {
                    items.push(Node::Scalar(crate::html::python_float_str(n).into()));
                }
                XPathValue::String(s) => items.push(Node::Str(s.into())),
                XPathValue::Boolean(b) => {
                    items.push(Node::Scalar(if b { "1" } else { "0" }.into()));
                }
            }
        }
        Ok(Selection {
            items,
            namespaces: self.namespaces.clone(),
        })
    }

    /// parsel's `.jmespath(query)`: each result's text parsed as JSON (an element's
    /// own leading text, as lxml's `.text`; a JSON result as it is), the query applied,
    /// a list result flattened into one item per element, `null` dropped. Strings are
    /// text results; other JSON values print as JSON in `get()` and are returned as
    /// values by [`json_values`](Self::json_values).
    ///
    /// # Errors
    ///
    /// The query does not compile (JMESPath syntax).
    pub fn jmespath(&self, query: &str) -> Result<Selection<'a>, String> {
        let expr = jmespath::compile(query).map_err(|e| e.to_string())?;
        let mut items = Items::new();
        for item in &self.items {
            let data: serde_json::Value = match item {
                Node::Json(v) => (**v).clone(),
                Node::Text(t) | Node::Attr(t) | Node::Comment(t) => {
                    serde_json::from_str(t).unwrap_or_default()
                }
                Node::Str(t) => serde_json::from_str(t).unwrap_or_default(),
                Node::Element(e) => match e.children().next() {
                    Some(crate::html::Child::Text(t)) => {
                        serde_json::from_str(t).unwrap_or_default()
                    }
                    _ => serde_json::Value::Null,
                },
                Node::Scalar(_) | Node::Match(..) => serde_json::Value::Null,
            };
            items.extend(jmespath_search(&expr, &data)?);
        }
        Ok(Selection {
            items,
            namespaces: self.namespaces.clone(),
        })
    }

    /// The results as JSON values (strings for texts and attributes).
    pub fn json_values(&self) -> Vec<serde_json::Value> {
        self.items
            .iter()
            .map(|n| match n {
                Node::Json(v) => (**v).clone(),
                other => serde_json::Value::String(node_string(other)),
            })
            .collect()
    }

    /// The first result as text: an element's outer HTML, a text node, an attribute.
    pub fn get(&self) -> Option<String> {
        self.items.first().map(node_string)
    }

    /// Every result as text.
    pub fn getall(&self) -> Vec<String> {
        self.items.iter().map(node_string).collect()
    }

    /// The first result borrowed when it is a text node or attribute value.
    pub fn get_str(&self) -> Option<&'a str> {
        self.items.iter().find_map(|n| match n {
            Node::Text(t) | Node::Attr(t) => Some(*t),
            _ => None,
        })
    }

    /// An attribute of the first selected element.
    pub fn attrib(&self, name: &str) -> Option<&'a str> {
        self.items.iter().find_map(|n| match n {
            Node::Element(e) => e.attr(name),
            _ => None,
        })
    }

    /// All text inside the first selected element, concatenated.
    pub fn text_content(&self) -> Option<String> {
        self.items.first().map(|n| match n {
            Node::Element(e) => e.text_content(),
            Node::Text(t) | Node::Attr(t) | Node::Comment(t) => (*t).to_owned(),
            Node::Str(v) | Node::Scalar(v) | Node::Match(v, _) => v.to_string(),
            Node::Json(v) => v.to_string(),
        })
    }

    /// parsel's `.re(regex)`: the regex applied to each result's text (an element's
    /// outer HTML, a text, an attribute value), the matches flattened — a named group
    /// `extract`, else every numbered group, else the whole match — with character
    /// references replaced as w3lib does (all but `&lt;` and `&amp;`).
    ///
    /// # Errors
    ///
    /// The pattern does not compile (Rust `regex` syntax).
    pub fn re(&self, regex: &str) -> Result<Vec<String>, regex::Error> {
        let regex = regex::Regex::new(regex)?;
        Ok(self.re_with(&regex, true))
    }

    /// parsel's `.re_first(regex)`: the first result of [`re`](Self::re).
    ///
    /// # Errors
    ///
    /// The pattern does not compile.
    pub fn re_first(&self, regex: &str) -> Result<Option<String>, regex::Error> {
        let regex = regex::Regex::new(regex)?;
        Ok(self.items.iter().find_map(|n| {
            super::re::extract_regex(&regex, &node_string(n), true)
                .into_iter()
                .next()
        }))
    }

    /// `.re(regex, replace_entities=...)` with a compiled pattern.
    pub fn re_with(&self, regex: &regex::Regex, replace_entities: bool) -> Vec<String> {
        self.items
            .iter()
            .flat_map(|n| super::re::extract_regex(regex, &node_string(n), replace_entities))
            .collect()
    }

    /// The URL Scrapy's `response.follow(selector)` takes from this one-result
    /// selection (its `_url_from_selector`): an `<a>` or `<link>` element's `href`, or
    /// a text, attribute or string result itself, without HTML5 whitespace around it.
    ///
    /// # Errors
    ///
    /// Scrapy's messages: a selection of several results or none ("SelectorList is
    /// not supported"), another element ("Only <a> and <link> elements are
    /// supported; got <div>"), an `<a>` without `href`, a number or boolean
    /// ("Unsupported selector: 3.0").
    pub fn follow_href(&self) -> Result<std::borrow::Cow<'a, str>, String> {
        use std::borrow::Cow;
        let [node] = self.items.as_slice() else {
            return Err("SelectorList is not supported".into());
        };
        let strip = crate::util::strip_html5_whitespace;
        match node {
            Node::Text(t) | Node::Attr(t) => Ok(Cow::Borrowed(strip(t))),
            Node::Str(v) => Ok(Cow::Owned(strip(v).to_owned())),
            Node::Element(e) => {
                let name = e.name();
                if !name.eq_ignore_ascii_case("a") && !name.eq_ignore_ascii_case("link") {
                    return Err(format!(
                        "Only <a> and <link> elements are supported; got <{name}>"
                    ));
                }
                match e.attr("href") {
                    Some(href) => Ok(Cow::Borrowed(strip(href))),
                    None => Err(format!(
                        "<{name}> element has no href attribute: {}",
                        e.html()
                    )),
                }
            }
            Node::Match(..) => {
                Err("Only <a> and <link> elements are supported; got <match>".into())
            }
            Node::Comment(t) => Err(format!(
                "Only <a> and <link> elements are supported; got a comment: <!--{t}-->"
            )),
            Node::Scalar(v) => Err(format!("Unsupported selector: {v}")),
            Node::Json(v) => Err(format!("Unsupported selector: {v}")),
        }
    }

    /// The number of results.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing was selected.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

fn node_string(n: &Node<'_>) -> String {
    match n {
        Node::Element(e) => e.html(),
        Node::Comment(t) => format!("<!--{t}-->"),
        Node::Text(t) | Node::Attr(t) => (*t).to_owned(),
        Node::Str(v) | Node::Scalar(v) => v.to_string(),
        Node::Match(t, _) => match_html(t),
        Node::Json(v) => v.to_string(),
    }
}

/// The elements not inside an earlier one of `elements` (in document order).
fn outermost<'e, 'a>(elements: &'e [ElementRef<'a>]) -> impl Iterator<Item = ElementRef<'a>> + 'e {
    let mut end = 0;
    elements.iter().copied().filter(move |e| {
        if e.id().0 < end {
            return false;
        }
        end = e.end_id();
        true
    })
}

/// Applies a compiled JMESPath expression to `data`, as parsel shapes the result.
fn jmespath_search<'a>(
    expr: &jmespath::Expression<'_>,
    data: &serde_json::Value,
) -> Result<Vec<Node<'a>>, String> {
    let var = jmespath::Variable::from_serializable(data).map_err(|e| e.to_string())?;
    let found = expr.search(var).map_err(|e| e.to_string())?;
    let found = serde_json::to_value(&*found).map_err(|e| e.to_string())?;
    let node = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => Node::Str(s.into()),
        other => Node::Json(Rc::new(other)),
    };
    Ok(match found {
        serde_json::Value::Null => Vec::new(),
        serde_json::Value::Array(list) => list.into_iter().map(node).collect(),
        other => vec![node(other)],
    })
}

/// A `re:match` result element as lxml serializes it.
fn match_html(text: &str) -> String {
    let mut out = String::from("<match>");
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out.push_str("</match>");
    out
}

impl<'a> IntoIterator for Selection<'a> {
    type Item = Selection<'a>;
    type IntoIter = std::vec::IntoIter<Selection<'a>>;

    fn into_iter(self) -> Self::IntoIter {
        let namespaces = self.namespaces;
        self.items
            .into_iter()
            .map(|n| Selection {
                items: smallvec::smallvec![n],
                namespaces: namespaces.clone(),
            })
            .collect::<Vec<_>>()
            .into_iter()
    }
}

impl fmt::Debug for Selection<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.getall()).finish()
    }
}
