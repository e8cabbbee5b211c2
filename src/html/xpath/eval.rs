//! Evaluation over the arena DOM: node-sets as sorted vectors of [`XNode`] (document
//! order is id order, an element's attributes between it and its first child), the
//! thirteen axes, predicates with proximity positions, and §3.4's comparison rules —
//! node-set comparisons in linear time (a hash set for `=`, minima and maxima for the
//! relational operators), so no comparison is quadratic in the page.

use std::collections::{HashMap, HashSet};

use super::error::XPathError;
use super::funcs::{Func, number_to_string, string_to_number};
use super::parse::{Arith, Axis, Cmp, Expr, NodeTest, Step};
use crate::html::dom::{Document, Kind, NONE, local_name};

/// `XNode::id` of nodes made by `re:match` (not in the document): `sub` `2k` is the
/// `k`-th `<match>` element, `2k + 1` its text.
pub(crate) const FOREIGN: u32 = u32::MAX;

/// `XNode::sub` of an element's namespace node (libxml2 gives each element one, for
/// the `xml` prefix).
pub(crate) const NAMESPACE: u32 = u32::MAX;

/// The namespace the `xml` prefix is bound to.
pub(crate) const XML_NAMESPACE: &str = "http://www.w3.org/XML/1998/namespace";

/// A node: `sub` 0 is the node `id` itself, `k + 1` its `k`-th attribute; foreign
/// nodes (`re:match` results) have id [`FOREIGN`] and index the evaluator's texts.
/// The derived order is document order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct XNode {
    pub(crate) id: u32,
    pub(crate) sub: u32,
}

impl XNode {
    pub(crate) fn node(id: u32) -> Self {
        Self { id, sub: 0 }
    }
}

/// A value (§1): a node-set, a number, a string or a boolean.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    Nodes(Vec<XNode>),
    Num(f64),
    Str(String),
    Bool(bool),
}

/// A variable's value as the caller gives it.
#[derive(Clone, Debug, PartialEq)]
pub enum XPathVar {
    /// A string.
    String(String),
    /// A number.
    Number(f64),
    /// A boolean.
    Boolean(bool),
}

impl From<&str> for XPathVar {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl From<String> for XPathVar {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}

impl From<f64> for XPathVar {
    fn from(n: f64) -> Self {
        Self::Number(n)
    }
}

impl From<i64> for XPathVar {
    fn from(n: i64) -> Self {
        Self::Number(n as f64)
    }
}

impl From<bool> for XPathVar {
    fn from(b: bool) -> Self {
        Self::Boolean(b)
    }
}

#[derive(Clone, Copy)]
pub(super) struct Ctx {
    pub(super) node: XNode,
    pub(super) pos: usize,
    pub(super) size: usize,
}

/// One evaluation's state.
pub(crate) struct Eval<'d, 'v> {
    pub(crate) doc: &'d Document,
    pub(super) vars: &'v [(&'v str, XPathVar)],
    /// Texts of foreign nodes.
    pub(crate) foreign: Vec<String>,
    pub(super) regexes: HashMap<(String, bool), regex::Regex>,
    pub(super) ids: Option<HashMap<&'d str, u32>>,
}

pub(super) fn rt(msg: impl Into<String>) -> XPathError {
    XPathError::runtime(msg)
}

impl<'d, 'v> Eval<'d, 'v> {
    pub(crate) fn new(doc: &'d Document, vars: &'v [(&'v str, XPathVar)]) -> Self {
        Self {
            doc,
            vars,
            foreign: Vec::new(),
            regexes: HashMap::new(),
            ids: None,
        }
    }

    /// Evaluates `expr` with `node` as the context (position 1 of 1).
    pub(crate) fn run(&mut self, expr: &Expr, node: XNode) -> Result<Val, XPathError> {
        // lxml gives a top-level expression no context position or size:
        // `position()` and `last()` there are errors.
        self.eval(
            expr,
            Ctx {
                node,
                pos: 0,
                size: 0,
            },
        )
    }

    pub(super) fn kind(&self, id: u32) -> Option<Kind> {
        self.doc.nodes.get(id as usize).map(|n| n.kind)
    }

    pub(super) fn elem_name(&self, id: u32) -> Option<&'d str> {
        match self.kind(id)? {
            Kind::Element { name, .. } => Some(self.doc.str(name)),
            _ => None,
        }
    }

    pub(super) fn attrs(&self, id: u32) -> &'d [crate::html::dom::Attr] {
        match self.kind(id) {
            Some(Kind::Element {
                attrs, attrs_len, ..
            }) => self
                .doc
                .attrs
                .get(attrs as usize..(attrs + attrs_len) as usize)
                .unwrap_or(&[]),
            _ => &[],
        }
    }

    /// An attribute node's `(name, value)`.
    pub(crate) fn attr(&self, n: XNode) -> Option<(&'d str, &'d str)> {
        let a = self.attrs(n.id).get(n.sub.checked_sub(1)? as usize)?;
        Some((self.doc.str(a.name), self.doc.str(a.value)))
    }

    pub(super) fn parent(&self, n: XNode) -> Option<XNode> {
        if n.id == FOREIGN {
            return (n.sub % 2 == 1).then(|| XNode {
                id: FOREIGN,
                sub: n.sub - 1,
            });
        }
        if n.sub > 0 {
            return Some(XNode::node(n.id));
        }
        let p = self.doc.nodes.get(n.id as usize)?.parent;
        (p != NONE).then(|| XNode::node(p))
    }

    /// The string-value of a node, borrowed when it is one attribute value or text.
    pub(crate) fn str_value(&self, n: XNode) -> std::borrow::Cow<'d, str> {
        if n.id != FOREIGN && n.sub != NAMESPACE {
            if n.sub > 0 {
                return std::borrow::Cow::Borrowed(self.attr(n).map_or("", |(_, v)| v));
            }
            if let Some(Kind::Text(span) | Kind::Comment(span)) = self.kind(n.id) {
                return std::borrow::Cow::Borrowed(self.doc.str(span));
            }
            if let Some(Kind::Pi(span)) = self.kind(n.id) {
                return std::borrow::Cow::Borrowed(pi_parts(self.doc.str(span)).1);
            }
        }
        std::borrow::Cow::Owned(self.string_value(n))
    }

    /// The string-value of a node (§5).
    pub(crate) fn string_value(&self, n: XNode) -> String {
        if n.id == FOREIGN {
            return self
                .foreign
                .get(n.sub as usize / 2)
                .cloned()
                .unwrap_or_default();
        }
        if n.sub == NAMESPACE {
            return XML_NAMESPACE.to_owned();
        }
        if n.sub > 0 {
            return self.attr(n).map(|(_, v)| v.to_owned()).unwrap_or_default();
        }
        match self.kind(n.id) {
            Some(Kind::Text(span) | Kind::Comment(span)) => self.doc.str(span).to_owned(),
            Some(Kind::Pi(span)) => pi_parts(self.doc.str(span)).1.to_owned(),
            Some(_) => {
                let end = self.doc.nodes[n.id as usize].end;
                let mut s = String::new();
                for i in n.id + 1..end {
                    if let Kind::Text(span) = self.doc.nodes[i as usize].kind {
                        s.push_str(self.doc.str(span));
                    }
                }
                s
            }
            None => String::new(),
        }
    }

    pub(super) fn eval(&mut self, expr: &Expr, ctx: Ctx) -> Result<Val, XPathError> {
        Ok(match expr {
            Expr::Or(a, b) => Val::Bool(self.boolean(a, ctx)? || self.boolean(b, ctx)?),
            Expr::And(a, b) => Val::Bool(self.boolean(a, ctx)? && self.boolean(b, ctx)?),
            Expr::Cmp(op, a, b) => {
                // `@class = 'x'`: a node-set against a literal, compared in place.
                let literal = match (&**a, &**b) {
                    (other, Expr::Literal(l)) | (Expr::Literal(l), other)
                        if matches!(op, Cmp::Eq | Cmp::Ne) =>
                    {
                        Some((l, other))
                    }
                    _ => None,
                };
                if let Some((lit, other)) = literal {
                    let v = self.eval(other, ctx)?;
                    let eq = *op == Cmp::Eq;
                    return Ok(Val::Bool(match &v {
                        Val::Nodes(ns) => ns
                            .iter()
                            .any(|&n| (self.str_value(n) == lit.as_str()) == eq),
                        // `=` and `!=` are symmetric: the literal's side does not matter.
                        _ => self.compare(*op, &v, &Val::Str(lit.clone())),
                    }));
                }
                let a = self.eval(a, ctx)?;
                let b = self.eval(b, ctx)?;
                Val::Bool(self.compare(*op, &a, &b))
            }
            Expr::Arith(op, a, b) => {
                let a = self.eval(a, ctx)?;
                let a = self.to_number(&a);
                let b = self.eval(b, ctx)?;
                let b = self.to_number(&b);
                Val::Num(match op {
                    Arith::Add => a + b,
                    Arith::Sub => a - b,
                    Arith::Mul => a * b,
                    Arith::Div => a / b,
                    Arith::Mod => a % b,
                })
            }
            Expr::Neg(a) => {
                let a = self.eval(a, ctx)?;
                Val::Num(-self.to_number(&a))
            }
            Expr::Union(a, b) => {
                let (Val::Nodes(mut a), Val::Nodes(b)) = (self.eval(a, ctx)?, self.eval(b, ctx)?)
                else {
                    return Err(rt("the operands of '|' must be node-sets"));
                };
                a.extend(b);
                a.sort_unstable();
                a.dedup();
                Val::Nodes(a)
            }
            Expr::Path { absolute, steps } => {
                let start = if *absolute { XNode::node(0) } else { ctx.node };
                Val::Nodes(self.steps(vec![start], steps)?)
            }
            Expr::Filter {
                primary,
                preds,
                steps,
            } => {
                let Val::Nodes(mut nodes) = self.eval(primary, ctx)? else {
                    return Err(rt(
                        "a predicate or a step applied to a value that is not a node-set",
                    ));
                };
                for p in preds {
                    nodes = self.filter(nodes, p)?;
                }
                Val::Nodes(self.steps(nodes, steps)?)
            }
            Expr::Literal(s) => Val::Str(s.clone()),
            Expr::Number(n) => Val::Num(*n),
            Expr::Var(name) => match self.vars.iter().find(|(k, _)| k == name) {
                Some((_, XPathVar::String(s))) => Val::Str(s.clone()),
                Some((_, XPathVar::Number(n))) => Val::Num(*n),
                Some((_, XPathVar::Boolean(b))) => Val::Bool(*b),
                None => return Err(rt(format!("undefined variable ${name}"))),
            },
            Expr::Call(f, args) => self.call(*f, args, ctx)?,
        })
    }

    pub(super) fn boolean(&mut self, e: &Expr, ctx: Ctx) -> Result<bool, XPathError> {
        let v = self.eval(e, ctx)?;
        Ok(to_boolean(&v))
    }

    fn steps(&mut self, mut nodes: Vec<XNode>, steps: &[Step]) -> Result<Vec<XNode>, XPathError> {
        let mut i = 0;
        while i < steps.len() {
            let step = &steps[i];
            // `//name[p]` with predicates that do not depend on the position:
            // descendant::name[p], with no per-node sets.
            if step.axis == Axis::DescendantOrSelf
                && step.test == NodeTest::Node
                && step.preds.is_empty()
                && let Some(next) = steps.get(i + 1)
                && next.axis == Axis::Child
                && next.preds.iter().all(position_free)
            {
                let merged = Step {
                    axis: Axis::Descendant,
                    test: next.test.clone(),
                    preds: next.preds.clone(),
                };
                nodes = self.step(&nodes, &merged)?;
                i += 2;
                continue;
            }
            nodes = self.step(&nodes, step)?;
            i += 1;
        }
        Ok(nodes)
    }

    fn step(&mut self, input: &[XNode], step: &Step) -> Result<Vec<XNode>, XPathError> {
        let mut out = Vec::new();
        for &n in input {
            let mut cands = Vec::new();
            self.axis(n, step.axis, &step.test, &mut cands);
            for p in &step.preds {
                cands = self.filter(cands, p)?;
            }
            out.extend(cands);
        }
        if input.len() > 1 || step.axis.is_reverse() {
            out.sort_unstable();
            out.dedup();
        }
        Ok(out)
    }

    /// Keeps the nodes for which the predicate holds; positions are the order given.
    fn filter(&mut self, nodes: Vec<XNode>, pred: &Expr) -> Result<Vec<XNode>, XPathError> {
        if let Expr::Number(k) = pred {
            let k = *k;
            return Ok(
                if k >= 1.0 && k.fract() == 0.0 && (k as usize) <= nodes.len() {
                    vec![nodes[k as usize - 1]]
                } else {
                    Vec::new()
                },
            );
        }
        let size = nodes.len();
        let mut out = Vec::new();
        for (i, &n) in nodes.iter().enumerate() {
            let ctx = Ctx {
                node: n,
                pos: i + 1,
                size,
            };
            let keep = match self.eval(pred, ctx)? {
                Val::Num(k) => k == (i + 1) as f64,
                v => to_boolean(&v),
            };
            if keep {
                out.push(n);
            }
        }
        Ok(out)
    }

    fn test(&self, n: XNode, axis: Axis, test: &NodeTest) -> bool {
        if n.id == FOREIGN {
            return if n.sub.is_multiple_of(2) {
                matches!(test, NodeTest::Node | NodeTest::Any)
                    || matches!(test, NodeTest::Name(name) if name == "match")
            } else {
                matches!(test, NodeTest::Node | NodeTest::Text)
            };
        }
        if n.sub == NAMESPACE {
            return axis == Axis::Namespace
                && match test {
                    NodeTest::Node | NodeTest::Any => true,
                    NodeTest::Name(name) => name == "xml",
                    _ => false,
                };
        }
        if n.sub > 0 {
            // `*` and names select attributes only on the attribute axis (its
            // principal node type); `node()` selects them on any.
            return match test {
                NodeTest::Node => true,
                NodeTest::Any => axis == Axis::Attribute,
                NodeTest::Name(name) => {
                    axis == Axis::Attribute
                        && self.attr_uri(n).is_empty()
                        && self.attr(n).is_some_and(|(k, _)| k == name)
                }
                NodeTest::NsName { uri, local } => {
                    axis == Axis::Attribute
                        && self.attr_uri(n) == uri
                        && local
                            .as_deref()
                            .is_none_or(|l| self.attr(n).is_some_and(|(k, _)| local_name(k) == l))
                }
                _ => false,
            };
        }
        match (test, self.kind(n.id)) {
            (NodeTest::Node, Some(_)) => true,
            (NodeTest::Any, Some(Kind::Element { .. })) => axis != Axis::Attribute,
            (NodeTest::Name(name), Some(Kind::Element { .. })) => {
                axis != Axis::Attribute
                    && self.node_uri(n.id).is_empty()
                    && self.elem_name(n.id) == Some(name.as_str())
            }
            (NodeTest::NsName { uri, local }, Some(Kind::Element { .. })) => {
                axis != Axis::Attribute
                    && self.node_uri(n.id) == uri
                    && local
                        .as_deref()
                        .is_none_or(|l| self.elem_name(n.id).map(local_name) == Some(l))
            }
            (NodeTest::Text, Some(Kind::Text(_))) => true,
            (NodeTest::Comment, Some(Kind::Comment(_))) => true,
            (NodeTest::Pi, Some(Kind::Pi(_))) => true,
            _ => false,
        }
    }

    /// The namespace URI of element `id` ("" in HTML).
    pub(crate) fn node_uri(&self, id: u32) -> &'d str {
        self.doc.xml.as_ref().map_or("", |x| x.node_uri(id))
    }

    /// The namespace URI of attribute node `n` ("" in HTML).
    pub(crate) fn attr_uri(&self, n: XNode) -> &'d str {
        let Some(xml) = self.doc.xml.as_ref() else {
            return "";
        };
        match (self.kind(n.id), n.sub.checked_sub(1)) {
            (Some(Kind::Element { attrs, .. }), Some(i)) => {
                xml.attr_uri(attrs as usize + i as usize)
            }
            _ => "",
        }
    }

    /// Pushes the nodes of `axis` from `n` that pass `test`, in axis order.
    fn axis(&self, n: XNode, axis: Axis, test: &NodeTest, out: &mut Vec<XNode>) {
        let nodes = &self.doc.nodes;
        let push = |m: XNode, out: &mut Vec<XNode>| {
            if self.test(m, axis, test) {
                out.push(m);
            }
        };
        let is_node = n.id != FOREIGN && n.sub == 0;
        // A `<match>` element's one child: its text (if any).
        let match_text = (n.id == FOREIGN
            && n.sub.is_multiple_of(2)
            && self
                .foreign
                .get(n.sub as usize / 2)
                .is_some_and(|t| !t.is_empty()))
        .then(|| XNode {
            id: FOREIGN,
            sub: n.sub + 1,
        });
        match axis {
            Axis::Itself => push(n, out),
            Axis::Child | Axis::Descendant if n.id == FOREIGN => {
                if let Some(t) = match_text {
                    push(t, out);
                }
            }
            Axis::DescendantOrSelf if n.id == FOREIGN => {
                push(n, out);
                if let Some(t) = match_text {
                    push(t, out);
                }
            }
            Axis::Child if is_node => {
                let mut c = nodes[n.id as usize].first_child;
                while c != NONE {
                    push(XNode::node(c), out);
                    c = nodes[c as usize].next;
                }
            }
            Axis::Descendant | Axis::DescendantOrSelf if is_node => {
                let first = if axis == Axis::Descendant {
                    n.id + 1
                } else {
                    n.id
                };
                for id in first..nodes[n.id as usize].end {
                    push(XNode::node(id), out);
                }
            }
            Axis::DescendantOrSelf => push(n, out),
            Axis::Parent => {
                if let Some(p) = self.parent(n) {
                    push(p, out);
                }
            }
            Axis::Ancestor | Axis::AncestorOrSelf => {
                if axis == Axis::AncestorOrSelf {
                    push(n, out);
                }
                let mut p = self.parent(n);
                while let Some(a) = p {
                    push(a, out);
                    p = self.parent(a);
                }
            }
            Axis::FollowingSibling if is_node => {
                let mut c = nodes[n.id as usize].next;
                while c != NONE {
                    push(XNode::node(c), out);
                    c = nodes[c as usize].next;
                }
            }
            Axis::PrecedingSibling if is_node => {
                let mut c = nodes[n.id as usize].prev;
                while c != NONE {
                    push(XNode::node(c), out);
                    c = nodes[c as usize].prev;
                }
            }
            Axis::Following if n.id != FOREIGN => {
                // From an attribute or namespace node: what follows its element.
                let from = nodes[n.id as usize].end;
                for id in from..nodes.len() as u32 {
                    push(XNode::node(id), out);
                }
            }
            Axis::Preceding if n.id != FOREIGN => {
                let mut ancestors = HashSet::new();
                let mut p = Some(XNode::node(n.id));
                while let Some(a) = p {
                    ancestors.insert(a.id);
                    p = self.parent(a);
                }
                for id in (1..n.id).rev() {
                    if !ancestors.contains(&id) {
                        push(XNode::node(id), out);
                    }
                }
            }
            Axis::Namespace if is_node && matches!(self.kind(n.id), Some(Kind::Element { .. })) => {
                push(
                    XNode {
                        id: n.id,
                        sub: NAMESPACE,
                    },
                    out,
                );
            }
            Axis::Attribute if is_node => {
                for k in 0..self.attrs(n.id).len() as u32 {
                    push(
                        XNode {
                            id: n.id,
                            sub: k + 1,
                        },
                        out,
                    );
                }
            }
            _ => {}
        }
    }

    pub(crate) fn to_string(&self, v: &Val) -> String {
        match v {
            Val::Nodes(ns) => ns
                .first()
                .map(|&n| self.string_value(n))
                .unwrap_or_default(),
            Val::Num(n) => number_to_string(*n),
            Val::Str(s) => s.clone(),
            Val::Bool(b) => if *b { "true" } else { "false" }.to_owned(),
        }
    }

    pub(crate) fn to_number(&self, v: &Val) -> f64 {
        match v {
            Val::Num(n) => *n,
            Val::Bool(b) => f64::from(u8::from(*b)),
            Val::Str(s) => string_to_number(s),
            Val::Nodes(_) => string_to_number(&self.to_string(v)),
        }
    }

    fn compare(&self, op: Cmp, a: &Val, b: &Val) -> bool {
        match (a, b) {
            (Val::Nodes(x), Val::Nodes(y)) => {
                let xs: Vec<std::borrow::Cow<'_, str>> =
                    x.iter().map(|&n| self.str_value(n)).collect();
                let ys: Vec<std::borrow::Cow<'_, str>> =
                    y.iter().map(|&n| self.str_value(n)).collect();
                match op {
                    Cmp::Eq => {
                        let set: HashSet<&str> = ys.iter().map(|s| s.as_ref()).collect();
                        xs.iter().any(|s| set.contains(s.as_ref()))
                    }
                    Cmp::Ne => {
                        if xs.is_empty() || ys.is_empty() {
                            return false;
                        }
                        let first = &xs[0];
                        !(xs.iter().all(|s| s == first) && ys.iter().all(|s| s == first))
                    }
                    _ => {
                        let xn: Vec<f64> = xs.iter().map(|s| string_to_number(s)).collect();
                        let yn: Vec<f64> = ys.iter().map(|s| string_to_number(s)).collect();
                        exists_pair(op, &xn, &yn)
                    }
                }
            }
            (Val::Nodes(x), other) => self.compare_nodes(op, x, other, false),
            (other, Val::Nodes(y)) => self.compare_nodes(op, y, other, true),
            _ => match op {
                Cmp::Eq | Cmp::Ne => {
                    let eq = if matches!(a, Val::Bool(_)) || matches!(b, Val::Bool(_)) {
                        to_boolean(a) == to_boolean(b)
                    } else if matches!(a, Val::Num(_)) || matches!(b, Val::Num(_)) {
                        self.to_number(a) == self.to_number(b)
                    } else {
                        self.to_string(a) == self.to_string(b)
                    };
                    eq == (op == Cmp::Eq)
                }
                _ => num_cmp(op, self.to_number(a), self.to_number(b)),
            },
        }
    }

    /// A node-set against a non-node-set; `swapped` when the node-set is on the right.
    fn compare_nodes(&self, op: Cmp, nodes: &[XNode], other: &Val, swapped: bool) -> bool {
        let op = if swapped { flip(op) } else { op };
        match other {
            Val::Bool(b) => {
                let nb = !nodes.is_empty();
                match op {
                    Cmp::Eq => nb == *b,
                    Cmp::Ne => nb != *b,
                    _ => num_cmp(op, f64::from(u8::from(nb)), f64::from(u8::from(*b))),
                }
            }
            Val::Num(k) => nodes
                .iter()
                .any(|&n| num_cmp(op, string_to_number(&self.str_value(n)), *k)),
            Val::Str(s) => match op {
                Cmp::Eq => nodes.iter().any(|&n| self.str_value(n) == s.as_str()),
                Cmp::Ne => nodes.iter().any(|&n| self.str_value(n) != s.as_str()),
                _ => {
                    let k = string_to_number(s);
                    nodes
                        .iter()
                        .any(|&n| num_cmp(op, string_to_number(&self.str_value(n)), k))
                }
            },
            Val::Nodes(_) => false,
        }
    }
}

/// Whether a predicate's value cannot depend on the context position or size: it is
/// a boolean (a comparison, `and`/`or`, a boolean function) or a node-set (a path),
/// with no `position()` or `last()` outside nested predicates. Such a predicate
/// filters `//x` the same as `descendant::x`.
fn position_free(pred: &Expr) -> bool {
    fn no_position(e: &Expr) -> bool {
        match e {
            Expr::Call(Func::Position | Func::Last, _) => false,
            Expr::Call(_, args) => args.iter().all(no_position),
            Expr::Or(a, b)
            | Expr::And(a, b)
            | Expr::Cmp(_, a, b)
            | Expr::Arith(_, a, b)
            | Expr::Union(a, b) => no_position(a) && no_position(b),
            Expr::Neg(a) => no_position(a),
            // Predicates inside a path or filter have their own positions.
            Expr::Filter { primary, .. } => no_position(primary),
            Expr::Path { .. } | Expr::Literal(_) | Expr::Number(_) | Expr::Var(_) => true,
        }
    }
    let boolean_or_nodes = match pred {
        Expr::Or(..) | Expr::And(..) | Expr::Cmp(..) | Expr::Path { .. } | Expr::Union(..) => true,
        Expr::Call(f, _) => matches!(
            f,
            Func::Boolean
                | Func::Not
                | Func::True
                | Func::False
                | Func::Lang
                | Func::StartsWith
                | Func::Contains
                | Func::HasClass
                | Func::ReTest
                | Func::SetHasSameNode
                | Func::Id
        ),
        _ => false,
    };
    boolean_or_nodes && no_position(pred)
}

pub(crate) fn to_boolean(v: &Val) -> bool {
    match v {
        Val::Nodes(n) => !n.is_empty(),
        Val::Num(n) => *n != 0.0 && !n.is_nan(),
        Val::Str(s) => !s.is_empty(),
        Val::Bool(b) => *b,
    }
}

/// XPath's `round()` as libxml2 computes it: halves up, NaN, infinities and zeros as
/// they are, -0.5 … -0 to -0.
pub(super) fn round(x: f64) -> f64 {
    if x.is_nan() || x.is_infinite() || x == 0.0 {
        return x;
    }
    if (-0.5..0.0).contains(&x) {
        return -0.0;
    }
    // libxml2's floor(x + 0.5): 0.49999999999999994 rounds to 1.
    (x + 0.5).floor()
}

fn flip(op: Cmp) -> Cmp {
    match op {
        Cmp::Lt => Cmp::Gt,
        Cmp::Le => Cmp::Ge,
        Cmp::Gt => Cmp::Lt,
        Cmp::Ge => Cmp::Le,
        o => o,
    }
}

fn num_cmp(op: Cmp, a: f64, b: f64) -> bool {
    match op {
        Cmp::Eq => a == b,
        Cmp::Ne => a != b,
        Cmp::Lt => a < b,
        Cmp::Le => a <= b,
        Cmp::Gt => a > b,
        Cmp::Ge => a >= b,
    }
}

/// Whether some `a` in `xs` and `b` in `ys` have `a op b` (relational operators): the
/// smallest against the largest, NaNs never comparing.
fn exists_pair(op: Cmp, xs: &[f64], ys: &[f64]) -> bool {
    let min = |v: &[f64]| v.iter().copied().filter(|n| !n.is_nan()).reduce(f64::min);
    let max = |v: &[f64]| v.iter().copied().filter(|n| !n.is_nan()).reduce(f64::max);
    match op {
        Cmp::Lt | Cmp::Le => match (min(xs), max(ys)) {
            (Some(a), Some(b)) => num_cmp(op, a, b),
            _ => false,
        },
        Cmp::Gt | Cmp::Ge => match (max(xs), min(ys)) {
            (Some(a), Some(b)) => num_cmp(op, a, b),
            _ => false,
        },
        _ => false,
    }
}

/// A processing instruction's target and data (`target data...`).
pub(crate) fn pi_parts(text: &str) -> (&str, &str) {
    match text.split_once(|c: char| c.is_ascii_whitespace()) {
        Some((target, data)) => (target, data.trim_start()),
        None => (text, ""),
    }
}
