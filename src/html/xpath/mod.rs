//! XPath 1.0 over the arena DOM, as Scrapy users write it with parsel: the whole
//! XPath 1.0 recommendation (thirteen axes, predicates, unions, variables, the 27 core
//! functions), parsel's `has-class(...)`, and the EXSLT regular-expression (`re:test`,
//! `re:match`, `re:replace`) and set (`set:difference` …) functions that parsel's
//! default `re` and `set` prefixes reach in lxml.
//!
//! Where lxml (libxml2) goes beyond or against the recommendation, this follows lxml:
//! number literals and strings may have an exponent (`1e3`), numbers print as libxml2
//! prints them, and an attribute's `following` axis starts at its element's children.
//! Comments are nodes (`comment()`, `node()`, their `string()` is their text); the
//! HTML parser makes no processing instructions (libxml2 2.14 turns `<?...>` into a
//! comment), so `processing-instruction()` selects nothing; HTML nodes have no
//! namespace (`namespace-uri()` is empty, a prefixed name test matches nothing).
//!
//! An expression compiles once ([`XPath::compile`]; a syntax error names the character
//! position) and evaluates against any element ([`XPath::evaluate`]). Nesting is
//! bounded at compile time, so no expression overflows the stack; comparisons between
//! node-sets are linear in their sizes.

mod error;
mod eval;
mod funcs;
mod lex;
mod library;
mod parse;

pub use error::XPathError;
pub use eval::XPathVar;

use crate::html::dom::{Document, ElementRef, Kind};
use eval::{Eval, FOREIGN, Val, XNode};

/// The namespace prefixes every expression may use: parsel's two, and `xml`, which
/// is always bound.
const PREFIXES: &[&str] = &["re", "set", "xml"];

/// One node of a node-set result.
#[derive(Clone, Debug)]
pub enum XPathItem<'d> {
    /// The root node (`/`).
    Root,
    /// An element.
    Element(ElementRef<'d>),
    /// A text node.
    Text(&'d str),
    /// An attribute.
    Attribute {
        /// The element that has it.
        element: ElementRef<'d>,
        /// Its name.
        name: &'d str,
        /// Its value.
        value: &'d str,
    },
    /// A comment (its text).
    Comment(&'d str),
    /// A processing instruction of an XML document (`target data`).
    ProcessingInstruction(&'d str),
    /// A `<match>` element made by `re:match` (its text).
    Match(String),
    /// The text inside a `<match>` element.
    MatchText(String),
    /// A namespace node (libxml2 gives every element the `xml` one).
    Namespace {
        /// The prefix.
        prefix: &'static str,
        /// The namespace URI.
        uri: &'static str,
    },
}

/// An expression's value.
#[derive(Clone, Debug)]
pub enum XPathValue<'d> {
    /// A node-set, in document order.
    Nodes(Vec<XPathItem<'d>>),
    /// A number.
    Number(f64),
    /// A string.
    String(String),
    /// A boolean.
    Boolean(bool),
}

/// A compiled XPath expression.
///
/// # Examples
///
/// ```
/// use trawl::html::{Document, XPath, XPathValue};
///
/// let doc = Document::parse("<ul><li class='a b'>1</li><li>2</li><li class=b>3</li></ul>");
/// let root = doc.root_element().unwrap();
/// let count = XPath::compile("count(//li[has-class('b')])").unwrap();
/// assert!(matches!(count.evaluate(root, &[]).unwrap(), XPathValue::Number(n) if n == 2.0));
/// let err = XPath::compile("//li[").unwrap_err();
/// assert_eq!(err.position(), Some(5));
/// ```
#[derive(Clone, Debug)]
pub struct XPath {
    expr: parse::Expr,
    source: Box<str>,
}

impl XPath {
    /// Compiles an expression.
    ///
    /// # Errors
    ///
    /// The expression is malformed, calls an unknown function, uses an undeclared
    /// prefix, or nests too deeply (32 levels of parentheses, or 256 chained
    /// operators).
    pub fn compile(expr: &str) -> Result<Self, XPathError> {
        Self::compile_ns(expr, &[])
    }

    /// Compiles an expression whose name tests may use the prefixes of `namespaces`
    /// (parsel's `xpath(query, namespaces={...})` and registered namespaces).
    ///
    /// # Errors
    ///
    /// As [`compile`](Self::compile).
    pub fn compile_ns(expr: &str, namespaces: &[(&str, &str)]) -> Result<Self, XPathError> {
        Ok(Self {
            expr: parse::parse(expr, PREFIXES, namespaces)?,
            source: expr.into(),
        })
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates with `context` as the context node; `vars` binds `$name`s.
    ///
    /// # Errors
    ///
    /// An undefined variable, an argument of the wrong type, an invalid regular
    /// expression.
    pub fn evaluate<'d>(
        &self,
        context: ElementRef<'d>,
        vars: &[(&str, XPathVar)],
    ) -> Result<XPathValue<'d>, XPathError> {
        self.run(context.doc, XNode::node(context.id), vars)
    }

    /// Evaluates with the document's root node as the context node.
    ///
    /// # Errors
    ///
    /// As [`evaluate`](Self::evaluate).
    pub fn evaluate_document<'d>(
        &self,
        doc: &'d Document,
        vars: &[(&str, XPathVar)],
    ) -> Result<XPathValue<'d>, XPathError> {
        self.run(doc, XNode::node(0), vars)
    }

    /// Evaluates with a `<match>` element (an `re:match` result, holding `text`) as
    /// the context node, as parsel does when a selection of them is queried again.
    ///
    /// # Errors
    ///
    /// As [`evaluate`](Self::evaluate).
    pub fn evaluate_match<'d>(
        &self,
        doc: &'d Document,
        text: &str,
        vars: &[(&str, XPathVar)],
    ) -> Result<XPathValue<'d>, XPathError> {
        let mut ev = Eval::new(doc, vars);
        ev.foreign.push(text.to_owned());
        let value = ev.run(
            &self.expr,
            XNode {
                id: FOREIGN,
                sub: 0,
            },
        )?;
        Ok(convert(&ev, value))
    }

    fn run<'d>(
        &self,
        doc: &'d Document,
        node: XNode,
        vars: &[(&str, XPathVar)],
    ) -> Result<XPathValue<'d>, XPathError> {
        let mut ev = Eval::new(doc, vars);
        let value = ev.run(&self.expr, node)?;
        Ok(convert(&ev, value))
    }
}

fn convert<'d>(ev: &Eval<'d, '_>, value: Val) -> XPathValue<'d> {
    match value {
        Val::Nodes(ns) => XPathValue::Nodes(ns.into_iter().map(|n| item(ev, n)).collect()),
        Val::Num(n) => XPathValue::Number(n),
        Val::Str(s) => XPathValue::String(s),
        Val::Bool(b) => XPathValue::Boolean(b),
    }
}

fn item<'d>(ev: &Eval<'d, '_>, n: XNode) -> XPathItem<'d> {
    let doc = ev.doc;
    if n.id == FOREIGN {
        let text = ev.string_value(n);
        return if n.sub.is_multiple_of(2) {
            XPathItem::Match(text)
        } else {
            XPathItem::MatchText(text)
        };
    }
    if n.sub == eval::NAMESPACE {
        return XPathItem::Namespace {
            prefix: "xml",
            uri: eval::XML_NAMESPACE,
        };
    }
    if n.sub > 0 {
        let (name, value) = ev.attr(n).unwrap_or(("", ""));
        return match ElementRef::new(doc, n.id) {
            Some(element) => XPathItem::Attribute {
                element,
                name,
                value,
            },
            None => XPathItem::Root,
        };
    }
    match doc.nodes.get(n.id as usize).map(|x| x.kind) {
        Some(Kind::Text(span)) => XPathItem::Text(doc.str(span)),
        Some(Kind::Comment(span)) => XPathItem::Comment(doc.str(span)),
        Some(Kind::Pi(span)) => XPathItem::ProcessingInstruction(doc.str(span)),
        Some(Kind::Element { .. }) => match ElementRef::new(doc, n.id) {
            Some(e) => XPathItem::Element(e),
            None => XPathItem::Root,
        },
        _ => XPathItem::Root,
    }
}

/// A number as Python's `str(float)` prints it — what parsel's `.get()` returns for
/// a number result (`count(//a)` gives `"3.0"`).
pub fn python_float_str(n: f64) -> String {
    funcs::python_float_repr(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(html: &str, expr: &str) -> Result<String, XPathError> {
        let doc = Document::parse(html);
        let root = doc
            .root_element()
            .ok_or_else(|| XPathError::runtime("no root"))?;
        Ok(match XPath::compile(expr)?.evaluate(root, &[])? {
            XPathValue::Nodes(n) => format!("{} nodes", n.len()),
            XPathValue::Number(n) => python_float_str(n),
            XPathValue::String(s) => s,
            XPathValue::Boolean(b) => b.to_string(),
        })
    }

    #[test]
    fn hostile_expressions_are_errors_not_stack_overflows() {
        for expr in [
            format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000)),
            vec!["1"; 100_000].join("+"),
            vec!["a"; 100_000].join("|"),
            format!("{}1", "-".repeat(100_000)),
            format!("{}1{}", "count(".repeat(100_000), ")".repeat(100_000)),
        ] {
            let err = XPath::compile(&expr).expect_err("too deep");
            assert!(err.message().contains("nested deeper"), "{err}");
        }
        // Long but flat expressions are fine.
        assert!(XPath::compile(&vec!["a"; 200].join("|")).is_ok());
        assert!(XPath::compile(&format!("//a{}", "[1]".repeat(100_000))).is_ok());
        let deep = format!("{}1{}", "(".repeat(30), ")".repeat(30));
        assert_eq!(eval("<p>", &deep).unwrap(), "1.0");
        let chain = vec!["1"; 240].join("+");
        assert_eq!(eval("<p>", &chain).unwrap(), "240.0");
    }

    #[test]
    fn errors_name_positions() {
        let e = XPath::compile("//a[@x='y]").unwrap_err();
        assert_eq!(e.position(), Some(7));
        let e = XPath::compile("//a[1]]").unwrap_err();
        assert_eq!(e.position(), Some(6));
        assert!(XPath::compile("foo(1)").is_err());
        assert!(XPath::compile("//svg:rect").is_err(), "undeclared prefix");
        assert!(XPath::compile("//xml:lang").is_ok());
    }

    #[test]
    fn node_set_comparisons_are_linear_and_right() {
        let html = "<ul><li>1</li><li>2</li><li>x</li></ul><p>2</p><p>3</p>";
        assert_eq!(eval(html, "//li = //p").unwrap(), "true");
        assert_eq!(eval(html, "//li < //p").unwrap(), "true");
        assert_eq!(eval(html, "//li > //p").unwrap(), "false");
        assert_eq!(eval(html, "//li != 'x'").unwrap(), "true");
        assert_eq!(eval(html, "2 > //li").unwrap(), "true");
        assert_eq!(eval(html, "//nothing != //li").unwrap(), "false");
        // 20,000 × 20,000 string comparisons would be 4e8: a set makes it linear.
        let big = format!("<div>{}</div>", "<b>q</b><i>r</i>".repeat(20_000));
        assert_eq!(eval(&big, "//b = //i").unwrap(), "false");
    }
}
