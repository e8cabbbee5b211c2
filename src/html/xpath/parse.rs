//! The XPath 1.0 grammar (§2–§3) as a recursive-descent parser into [`Expr`], with
//! function names resolved and arities checked at compile time, and nesting bounded
//! so a hostile expression is an error rather than a stack overflow.

use super::error::XPathError;
use super::funcs::Func;
use super::lex::{Tok, tokenize};

/// The nesting budget: parentheses, predicates and function calls (each
/// [`NEST_COST`]) and the length of operator chains (`a|b|c`, `1+2+3`, which build
/// left-deep trees; 1 per operator) together, along any path of the tree.
pub(crate) const MAX_NESTING: usize = 256;

/// What one level of parenthesised nesting (a sub-expression: parentheses, a
/// predicate, a function argument) costs of [`MAX_NESTING`]: the parser recurses
/// through ten functions per level, an operator chain only one per operator. So 32
/// levels of parentheses, or a chain of 256 operators (evaluation recurses once per
/// operator: 256 fit a debug build's 2 MiB test-thread stack).
const NEST_COST: usize = 8;

/// The thirteen axes (§2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Axis {
    Ancestor,
    AncestorOrSelf,
    Attribute,
    Child,
    Descendant,
    DescendantOrSelf,
    Following,
    FollowingSibling,
    Namespace,
    Parent,
    Preceding,
    PrecedingSibling,
    Itself,
}

impl Axis {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "ancestor" => Self::Ancestor,
            "ancestor-or-self" => Self::AncestorOrSelf,
            "attribute" => Self::Attribute,
            "child" => Self::Child,
            "descendant" => Self::Descendant,
            "descendant-or-self" => Self::DescendantOrSelf,
            "following" => Self::Following,
            "following-sibling" => Self::FollowingSibling,
            "namespace" => Self::Namespace,
            "parent" => Self::Parent,
            "preceding" => Self::Preceding,
            "preceding-sibling" => Self::PrecedingSibling,
            "self" => Self::Itself,
            _ => return None,
        })
    }

    /// Reverse axes count proximity positions backwards (§2.4).
    pub(crate) fn is_reverse(self) -> bool {
        matches!(
            self,
            Self::Ancestor | Self::AncestorOrSelf | Self::Preceding | Self::PrecedingSibling
        )
    }
}

/// A node test (§2.3).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum NodeTest {
    /// `*`: any node of the axis's principal type.
    Any,
    /// A name without prefix.
    Name(String),
    /// `prefix:name` or `prefix:*` (`local` `None`) with a declared prefix: the
    /// nodes of that namespace (HTML nodes have none).
    NsName {
        /// The namespace the prefix stands for.
        uri: String,
        /// The local name, or `None` for `prefix:*`.
        local: Option<String>,
    },
    /// `node()`
    Node,
    /// `text()`
    Text,
    /// `comment()`
    Comment,
    /// `processing-instruction()`
    Pi,
}

/// One location step.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub(crate) axis: Axis,
    pub(crate) test: NodeTest,
    pub(crate) preds: Vec<Expr>,
}

/// Builds a binary operator's node from its operands.
type Build = fn(Box<Expr>, Box<Expr>) -> Expr;

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// An expression.
#[derive(Clone, Debug)]
pub(crate) enum Expr {
    Or(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Cmp(Cmp, Box<Expr>, Box<Expr>),
    Arith(Arith, Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
    Union(Box<Expr>, Box<Expr>),
    /// A location path: from the root (`absolute`) or the context node.
    Path {
        absolute: bool,
        steps: Vec<Step>,
    },
    /// A primary expression with predicates, then optional steps.
    Filter {
        primary: Box<Expr>,
        preds: Vec<Expr>,
        steps: Vec<Step>,
    },
    Literal(String),
    Number(f64),
    Var(String),
    Call(Func, Vec<Expr>),
}

/// Compiles an expression; `prefixes` are the namespace prefixes always in scope
/// (for functions), `namespaces` the (prefix, URI) pairs of name tests.
pub(crate) fn parse(
    expr: &str,
    prefixes: &[&str],
    namespaces: &[(&str, &str)],
) -> Result<Expr, XPathError> {
    let toks = tokenize(expr)?;
    let mut p = Parser {
        toks,
        i: 0,
        depth: 0,
        end: expr.chars().count(),
        prefixes,
        namespaces,
    };
    if p.toks.is_empty() {
        return Err(XPathError::new(0, "empty expression"));
    }
    let e = p.expr()?;
    if p.i < p.toks.len() {
        return Err(p.error("unexpected token"));
    }
    Ok(e)
}

struct Parser<'p> {
    toks: Vec<(Tok, usize)>,
    i: usize,
    depth: usize,
    end: usize,
    prefixes: &'p [&'p str],
    namespaces: &'p [(&'p str, &'p str)],
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|(t, _)| t)
    }

    fn peek_at(&self, n: usize) -> Option<&Tok> {
        self.toks.get(self.i + n).map(|(t, _)| t)
    }

    fn pos(&self) -> usize {
        self.toks.get(self.i).map_or(self.end, |(_, p)| *p)
    }

    fn error(&self, what: &str) -> XPathError {
        match self.peek() {
            Some(t) => XPathError::new(self.pos(), format!("{what} ({t:?})")),
            None => XPathError::new(self.end, format!("{what} (end of expression)")),
        }
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, t: &Tok, what: &str) -> Result<(), XPathError> {
        if self.eat(t) {
            Ok(())
        } else {
            Err(self.error(&format!("expected {what}")))
        }
    }

    fn nest(&mut self) -> Result<(), XPathError> {
        self.nest_by(1)
    }

    fn nest_by(&mut self, cost: usize) -> Result<(), XPathError> {
        self.depth += cost;
        if self.depth > MAX_NESTING {
            return Err(XPathError::new(
                self.pos(),
                format!("expression nested deeper than {MAX_NESTING}"),
            ));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Expr, XPathError> {
        self.nest_by(NEST_COST)?;
        let e = self.chain(Self::and, |t| match t {
            Tok::OpName("or") => Some(Expr::Or),
            _ => None,
        })?;
        self.depth -= NEST_COST;
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, XPathError> {
        self.chain(Self::equality, |t| match t {
            Tok::OpName("and") => Some(Expr::And),
            _ => None,
        })
    }

    /// A left-associative chain `operand (op operand)*`, each operator spending one
    /// unit of the nesting budget (the tree it builds is left-deep).
    fn chain(
        &mut self,
        operand: fn(&mut Self) -> Result<Expr, XPathError>,
        operator: fn(&Tok) -> Option<Build>,
    ) -> Result<Expr, XPathError> {
        let base = self.depth;
        let mut left = operand(self)?;
        while let Some(build) = self.peek().and_then(operator) {
            self.i += 1;
            self.nest()?;
            left = build(Box::new(left), Box::new(operand(self)?));
        }
        self.depth = base;
        Ok(left)
    }

    fn equality(&mut self) -> Result<Expr, XPathError> {
        self.chain(Self::relational, |t| match t {
            Tok::Eq => Some(|a, b| Expr::Cmp(Cmp::Eq, a, b)),
            Tok::Ne => Some(|a, b| Expr::Cmp(Cmp::Ne, a, b)),
            _ => None,
        })
    }

    fn relational(&mut self) -> Result<Expr, XPathError> {
        self.chain(Self::additive, |t| match t {
            Tok::Lt => Some(|a, b| Expr::Cmp(Cmp::Lt, a, b)),
            Tok::Le => Some(|a, b| Expr::Cmp(Cmp::Le, a, b)),
            Tok::Gt => Some(|a, b| Expr::Cmp(Cmp::Gt, a, b)),
            Tok::Ge => Some(|a, b| Expr::Cmp(Cmp::Ge, a, b)),
            _ => None,
        })
    }

    fn additive(&mut self) -> Result<Expr, XPathError> {
        self.chain(Self::multiplicative, |t| match t {
            Tok::Plus => Some(|a, b| Expr::Arith(Arith::Add, a, b)),
            Tok::Minus => Some(|a, b| Expr::Arith(Arith::Sub, a, b)),
            _ => None,
        })
    }

    fn multiplicative(&mut self) -> Result<Expr, XPathError> {
        self.chain(Self::unary, |t| match t {
            Tok::Mul => Some(|a, b| Expr::Arith(Arith::Mul, a, b)),
            Tok::OpName("div") => Some(|a, b| Expr::Arith(Arith::Div, a, b)),
            Tok::OpName("mod") => Some(|a, b| Expr::Arith(Arith::Mod, a, b)),
            _ => None,
        })
    }

    fn unary(&mut self) -> Result<Expr, XPathError> {
        let base = self.depth;
        let mut negations = 0usize;
        while self.eat(&Tok::Minus) {
            self.nest()?;
            negations += 1;
        }
        let mut e = self.union()?;
        for _ in 0..negations {
            e = Expr::Neg(Box::new(e));
        }
        self.depth = base;
        Ok(e)
    }

    fn union(&mut self) -> Result<Expr, XPathError> {
        self.chain(Self::path, |t| match t {
            Tok::Pipe => Some(Expr::Union),
            _ => None,
        })
    }

    /// PathExpr: a location path, or a filter expression with optional steps.
    fn path(&mut self) -> Result<Expr, XPathError> {
        let starts_filter = match self.peek() {
            Some(Tok::LParen | Tok::Literal(_) | Tok::Number(_) | Tok::Var(_)) => true,
            Some(Tok::Name(_, name)) => {
                self.peek_at(1) == Some(&Tok::LParen)
                    && !matches!(
                        name.as_str(),
                        "node" | "text" | "comment" | "processing-instruction"
                    )
            }
            _ => false,
        };
        if !starts_filter {
            return self.location_path();
        }
        let primary = self.primary()?;
        let preds = self.predicates()?;
        let mut steps = Vec::new();
        loop {
            if self.eat(&Tok::Slash) {
                self.eat_stray_slashes();
                steps.push(self.step()?);
            } else if self.eat(&Tok::SlashSlash) {
                self.eat_stray_slashes();
                steps.push(descendant_or_self());
                steps.push(self.step()?);
            } else {
                break;
            }
        }
        if preds.is_empty() && steps.is_empty() {
            return Ok(primary);
        }
        Ok(Expr::Filter {
            primary: Box::new(primary),
            preds,
            steps,
        })
    }

    fn primary(&mut self) -> Result<Expr, XPathError> {
        let pos = self.pos();
        let Some(tok) = self.peek().cloned() else {
            return Err(self.error("expected an expression"));
        };
        self.i += 1;
        match tok {
            Tok::LParen => {
                let e = self.expr()?;
                self.expect(&Tok::RParen, "')'")?;
                Ok(e)
            }
            Tok::Literal(s) => Ok(Expr::Literal(s)),
            Tok::Number(n) => Ok(Expr::Number(n)),
            Tok::Var(v) => Ok(Expr::Var(v)),
            Tok::Name(prefix, name) => {
                let func = Func::resolve(prefix.as_deref(), &name, self.prefixes)
                    .map_err(|m| XPathError::new(pos, m))?;
                self.expect(&Tok::LParen, "'('")?;
                self.nest()?;
                let mut args = Vec::new();
                if !self.eat(&Tok::RParen) {
                    loop {
                        args.push(self.expr()?);
                        if self.eat(&Tok::RParen) {
                            break;
                        }
                        self.expect(&Tok::Comma, "',' or ')'")?;
                    }
                }
                self.depth -= 1;
                func.check_arity(args.len())
                    .map_err(|m| XPathError::new(pos, m))?;
                Ok(Expr::Call(func, args))
            }
            _ => {
                self.i -= 1;
                Err(self.error("expected an expression"))
            }
        }
    }

    fn predicates(&mut self) -> Result<Vec<Expr>, XPathError> {
        let mut preds = Vec::new();
        while self.eat(&Tok::LBracket) {
            self.nest()?;
            preds.push(self.expr()?);
            self.expect(&Tok::RBracket, "']'")?;
            self.depth -= 1;
        }
        Ok(preds)
    }

    fn location_path(&mut self) -> Result<Expr, XPathError> {
        let mut steps = Vec::new();
        let absolute = match self.peek() {
            Some(Tok::Slash) => {
                self.i += 1;
                self.eat_stray_slashes();
                if !self.starts_step() {
                    return Ok(Expr::Path {
                        absolute: true,
                        steps,
                    });
                }
                true
            }
            Some(Tok::SlashSlash) => {
                self.i += 1;
                self.eat_stray_slashes();
                steps.push(descendant_or_self());
                true
            }
            _ => false,
        };
        steps.push(self.step()?);
        loop {
            if self.eat(&Tok::Slash) {
                self.eat_stray_slashes();
                steps.push(self.step()?);
            } else if self.eat(&Tok::SlashSlash) {
                self.eat_stray_slashes();
                steps.push(descendant_or_self());
                steps.push(self.step()?);
            } else {
                break;
            }
        }
        Ok(Expr::Path { absolute, steps })
    }

    /// libxml2 accepts a `/` right after `/` or `//` (`///a` is `//a`, `/ /a` is
    /// `/a`).
    fn eat_stray_slashes(&mut self) {
        while self.eat(&Tok::Slash) {}
    }

    fn starts_step(&self) -> bool {
        matches!(
            self.peek(),
            Some(Tok::Dot | Tok::DotDot | Tok::At | Tok::Star | Tok::PrefixStar(_) | Tok::Name(..))
        )
    }

    fn step(&mut self) -> Result<Step, XPathError> {
        match self.peek() {
            Some(Tok::Dot) => {
                self.i += 1;
                return Ok(Step {
                    axis: Axis::Itself,
                    test: NodeTest::Node,
                    preds: Vec::new(),
                });
            }
            Some(Tok::DotDot) => {
                self.i += 1;
                return Ok(Step {
                    axis: Axis::Parent,
                    test: NodeTest::Node,
                    preds: Vec::new(),
                });
            }
            _ => {}
        }
        let mut axis = Axis::Child;
        if self.eat(&Tok::At) {
            axis = Axis::Attribute;
        } else if let Some(Tok::Name(None, name)) = self.peek()
            && self.peek_at(1) == Some(&Tok::ColonColon)
        {
            let pos = self.pos();
            axis = Axis::from_name(name)
                .ok_or_else(|| XPathError::new(pos, format!("unknown axis '{name}'")))?;
            self.i += 2;
        }
        let test = self.node_test()?;
        let preds = self.predicates()?;
        Ok(Step { axis, test, preds })
    }

    fn node_test(&mut self) -> Result<NodeTest, XPathError> {
        let pos = self.pos();
        let Some(tok) = self.peek().cloned() else {
            return Err(self.error("expected a node test"));
        };
        match tok {
            Tok::Star => {
                self.i += 1;
                Ok(NodeTest::Any)
            }
            Tok::PrefixStar(prefix) => {
                self.i += 1;
                let uri = self.namespace(&prefix, pos)?;
                Ok(NodeTest::NsName { uri, local: None })
            }
            Tok::Name(prefix, name) => {
                self.i += 1;
                if prefix.is_none() && self.peek() == Some(&Tok::LParen) {
                    let test = match name.as_str() {
                        "node" => NodeTest::Node,
                        "text" => NodeTest::Text,
                        "comment" => NodeTest::Comment,
                        "processing-instruction" => {
                            self.i += 1;
                            if let Some(Tok::Literal(_)) = self.peek() {
                                self.i += 1;
                            }
                            self.expect(&Tok::RParen, "')'")?;
                            return Ok(NodeTest::Pi);
                        }
                        _ => {
                            return Err(XPathError::new(
                                pos,
                                format!("'{name}' is not a node type"),
                            ));
                        }
                    };
                    self.i += 1;
                    self.expect(&Tok::RParen, "')'")?;
                    return Ok(test);
                }
                match prefix {
                    Some(p) => {
                        let uri = self.namespace(&p, pos)?;
                        Ok(NodeTest::NsName {
                            uri,
                            local: Some(name),
                        })
                    }
                    None => Ok(NodeTest::Name(name)),
                }
            }
            _ => Err(self.error("expected a node test")),
        }
    }

    /// The namespace a name test's prefix stands for: one given, `xml`'s, or (for
    /// parsel's `re` and `set`) the EXSLT one, which no node has.
    fn namespace(&self, prefix: &str, pos: usize) -> Result<String, XPathError> {
        if let Some((_, uri)) = self.namespaces.iter().rev().find(|(p, _)| *p == prefix) {
            return Ok((*uri).to_owned());
        }
        self.check_prefix(prefix, pos)?;
        Ok(match prefix {
            "xml" => crate::html::xml::XML_NAMESPACE.to_owned(),
            "re" => "http://exslt.org/regular-expressions".to_owned(),
            "set" => "http://exslt.org/sets".to_owned(),
            other => other.to_owned(),
        })
    }

    fn check_prefix(&self, prefix: &str, pos: usize) -> Result<(), XPathError> {
        if self.prefixes.contains(&prefix) {
            Ok(())
        } else {
            Err(XPathError::new(
                pos,
                format!("undefined namespace prefix '{prefix}'"),
            ))
        }
    }
}

/// `descendant-or-self::node()`, what `//` abbreviates.
fn descendant_or_self() -> Step {
    Step {
        axis: Axis::DescendantOrSelf,
        test: NodeTest::Node,
        preds: Vec::new(),
    }
}
