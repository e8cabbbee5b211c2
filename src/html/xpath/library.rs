//! The function library's evaluation: XPath 1.0's core functions, parsel's
//! `has-class`, and the EXSLT `re:` and `set:` functions as lxml implements them.

use std::collections::{HashMap, HashSet};

use super::error::XPathError;
use super::eval::{Ctx, Eval, FOREIGN, Val, XNode, round, rt};
use super::funcs::{Func, python_float_repr, string_to_number};
use super::parse::Expr;

impl<'d> Eval<'d, '_> {
    fn nodes_arg(&mut self, e: &Expr, ctx: Ctx, f: Func) -> Result<Vec<XNode>, XPathError> {
        match self.eval(e, ctx)? {
            Val::Nodes(n) => Ok(n),
            _ => Err(rt(format!("{f:?} needs a node-set argument"))),
        }
    }

    fn string_arg(&mut self, args: &[Expr], i: usize, ctx: Ctx) -> Result<String, XPathError> {
        match args.get(i) {
            Some(e) => {
                let v = self.eval(e, ctx)?;
                Ok(self.to_string(&v))
            }
            None => Ok(self.string_value(ctx.node)),
        }
    }

    fn number_arg(&mut self, e: &Expr, ctx: Ctx) -> Result<f64, XPathError> {
        let v = self.eval(e, ctx)?;
        Ok(self.to_number(&v))
    }

    /// The first node of an optional node-set argument (the context node without one).
    fn node_arg(&mut self, args: &[Expr], ctx: Ctx, f: Func) -> Result<Option<XNode>, XPathError> {
        match args.first() {
            Some(e) => Ok(self.nodes_arg(e, ctx, f)?.first().copied()),
            None => Ok(Some(ctx.node)),
        }
    }

    pub(crate) fn node_name(&self, n: XNode) -> String {
        if n.id == FOREIGN {
            return if n.sub.is_multiple_of(2) { "match" } else { "" }.into();
        }
        if n.sub == super::eval::NAMESPACE {
            return "xml".into();
        }
        if n.sub > 0 {
            return self.attr(n).map(|(k, _)| k.to_owned()).unwrap_or_default();
        }
        if let Some(crate::html::dom::Kind::Pi(span)) = self.kind(n.id) {
            return super::eval::pi_parts(self.doc.str(span)).0.to_owned();
        }
        self.elem_name(n.id).unwrap_or("").to_owned()
    }

    pub(super) fn call(&mut self, f: Func, args: &[Expr], ctx: Ctx) -> Result<Val, XPathError> {
        use Func::*;
        Ok(match f {
            Last if ctx.size == 0 => {
                return Err(rt("invalid context size (last() outside a predicate)"));
            }
            Position if ctx.pos == 0 => {
                return Err(rt(
                    "invalid context position (position() outside a predicate)",
                ));
            }
            Last => Val::Num(ctx.size as f64),
            Position => Val::Num(ctx.pos as f64),
            Count => Val::Num(self.nodes_arg(&args[0], ctx, f)?.len() as f64),
            Id => {
                let v = self.eval(&args[0], ctx)?;
                let text = match &v {
                    Val::Nodes(ns) => ns
                        .iter()
                        .map(|&n| self.string_value(n))
                        .collect::<Vec<_>>()
                        .join(" "),
                    other => self.to_string(other),
                };
                let index = self.id_index();
                let mut out: Vec<XNode> = id_tokens(&text)
                    .filter_map(|t| index.get(t).map(|&id| XNode::node(id)))
                    .collect();
                out.sort_unstable();
                out.dedup();
                Val::Nodes(out)
            }
            LocalName | Name => Val::Str(
                self.node_arg(args, ctx, f)?
                    .map(|n| {
                        let name = self.node_name(n);
                        if f == LocalName && self.doc.xml.is_some() {
                            crate::html::dom::local_name(&name).to_owned()
                        } else {
                            name
                        }
                    })
                    .unwrap_or_default(),
            ),
            NamespaceUri => {
                let uri = match self.node_arg(args, ctx, f)? {
                    Some(n) if n.sub > 0 && n.sub != super::eval::NAMESPACE => self.attr_uri(n),
                    Some(n) if n.sub == 0 && n.id != super::eval::FOREIGN => self.node_uri(n.id),
                    _ => "",
                };
                Val::Str(uri.to_owned())
            }
            String => Val::Str(self.string_arg(args, 0, ctx)?),
            Concat => {
                let mut s = std::string::String::new();
                for i in 0..args.len() {
                    s.push_str(&self.string_arg(args, i, ctx)?);
                }
                Val::Str(s)
            }
            StartsWith | Contains | SubstringBefore | SubstringAfter => {
                let a = self.string_arg(args, 0, ctx)?;
                let b = self.string_arg(args, 1, ctx)?;
                match f {
                    StartsWith => Val::Bool(a.starts_with(&b)),
                    Contains => Val::Bool(a.contains(&b)),
                    SubstringBefore => {
                        Val::Str(a.find(&b).map(|i| a[..i].to_owned()).unwrap_or_default())
                    }
                    _ => Val::Str(
                        a.find(&b)
                            .map(|i| a[i + b.len()..].to_owned())
                            .unwrap_or_default(),
                    ),
                }
            }
            Substring => {
                let s = self.string_arg(args, 0, ctx)?;
                let start = round(self.number_arg(&args[1], ctx)?);
                let end = match args.get(2) {
                    Some(e) => start + round(self.number_arg(e, ctx)?),
                    None => f64::INFINITY,
                };
                Val::Str(
                    s.chars()
                        .enumerate()
                        .filter(|(i, _)| {
                            let p = (*i + 1) as f64;
                            p >= start && p < end
                        })
                        .map(|(_, c)| c)
                        .collect(),
                )
            }
            StringLength => Val::Num(self.string_arg(args, 0, ctx)?.chars().count() as f64),
            NormalizeSpace => {
                let s = self.string_arg(args, 0, ctx)?;
                Val::Str(
                    s.split(super::lex::is_space)
                        .filter(|t| !t.is_empty())
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            }
            Translate => {
                let s = self.string_arg(args, 0, ctx)?;
                let from: Vec<char> = self.string_arg(args, 1, ctx)?.chars().collect();
                let to: Vec<char> = self.string_arg(args, 2, ctx)?.chars().collect();
                Val::Str(
                    s.chars()
                        .filter_map(|c| match from.iter().position(|&x| x == c) {
                            Some(i) => to.get(i).copied(),
                            None => Some(c),
                        })
                        .collect(),
                )
            }
            Boolean => Val::Bool(self.boolean(&args[0], ctx)?),
            Not => Val::Bool(!self.boolean(&args[0], ctx)?),
            True => Val::Bool(true),
            False => Val::Bool(false),
            // libxml2 reads `xml:lang` in the XML namespace, which no HTML
            // attribute is in: always false for an HTML document.
            Lang => {
                self.string_arg(args, 0, ctx)?;
                Val::Bool(false)
            }
            Number => match args.first() {
                Some(e) => Val::Num(self.number_arg(e, ctx)?),
                None => Val::Num(string_to_number(&self.string_value(ctx.node))),
            },
            Sum => {
                let ns = self.nodes_arg(&args[0], ctx, f)?;
                // A fold from +0 (Rust's `sum` starts at -0).
                Val::Num(
                    ns.iter()
                        .map(|&n| string_to_number(&self.string_value(n)))
                        .fold(0.0, |a, b| a + b),
                )
            }
            Floor => Val::Num(self.number_arg(&args[0], ctx)?.floor()),
            Ceiling => Val::Num(self.number_arg(&args[0], ctx)?.ceil()),
            Round => Val::Num(round(self.number_arg(&args[0], ctx)?)),
            HasClass => self.has_class(args, ctx)?,
            ReTest | ReMatch | ReReplace => self.exslt_re(f, args, ctx)?,
            SetDifference | SetIntersection | SetHasSameNode | SetLeading | SetTrailing => {
                let a = self.nodes_arg(&args[0], ctx, f)?;
                let b = self.nodes_arg(&args[1], ctx, f)?;
                set_op(f, a, b)
            }
            SetDistinct => {
                let a = self.nodes_arg(&args[0], ctx, f)?;
                let mut seen = HashSet::new();
                Val::Nodes(
                    a.into_iter()
                        .filter(|&n| seen.insert(self.string_value(n)))
                        .collect(),
                )
            }
        })
    }

    fn id_index(&mut self) -> &HashMap<&'d str, u32> {
        let doc = self.doc;
        self.ids.get_or_insert_with(|| {
            let mut m = HashMap::new();
            for e in doc.elements() {
                if let Some(v) = e.attr("id") {
                    m.entry(v).or_insert(e.id().0);
                }
            }
            m
        })
    }

    /// parsel's `has-class(...)`: every argument (a string) is one of the context
    /// element's classes, its `class` split on HTML5 whitespace.
    fn has_class(&mut self, args: &[Expr], ctx: Ctx) -> Result<Val, XPathError> {
        let class = if ctx.node.sub == 0 && ctx.node.id != FOREIGN {
            self.attrs(ctx.node.id)
                .iter()
                .find(|a| a.key == crate::html::name::name_key("class"))
                .map(|a| self.doc.str(a.value))
        } else {
            None
        };
        // Literal arguments (the usual case) are read in place; others evaluated, and
        // must be strings (parsel checks the types even when there is no class).
        let mut wanted: Vec<std::borrow::Cow<'_, str>> = Vec::with_capacity(args.len());
        for a in args {
            match a {
                Expr::Literal(s) => wanted.push(std::borrow::Cow::Borrowed(s.as_str())),
                other => match self.eval(other, ctx)? {
                    Val::Str(s) => wanted.push(std::borrow::Cow::Owned(s)),
                    _ => return Err(rt("has-class arguments must be strings")),
                },
            }
        }
        let Some(class) = class else {
            return Ok(Val::Bool(false));
        };
        let html5_space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c');
        Ok(Val::Bool(wanted.iter().all(|c| {
            if c.is_empty() {
                // `"  "` is never in parsel's normalised string.
                false
            } else if !c.contains(html5_space) {
                // One class: one of the attribute's whitespace-separated tokens.
                class.split(html5_space).any(|t| t == c.as_ref())
            } else {
                // parsel: `" " + class + " "` with runs of HTML5 whitespace made one
                // space, searched for `" " + c + " "`.
                let mut padded = std::string::String::with_capacity(class.len() + 2);
                for ch in format!(" {class} ").chars() {
                    if html5_space(ch) {
                        if !padded.ends_with(' ') {
                            padded.push(' ');
                        }
                    } else {
                        padded.push(ch);
                    }
                }
                padded.contains(&format!(" {c} "))
            }
        })))
    }

    /// An argument as lxml hands it to a Python extension function and its
    /// `_make_string` turns it into a string: a node-set's first node's text, a
    /// number as Python prints it, `True`/`False`.
    fn py_string(&mut self, e: &Expr, ctx: Ctx) -> Result<String, XPathError> {
        Ok(match self.eval(e, ctx)? {
            Val::Str(s) => s,
            Val::Nodes(ns) => ns
                .first()
                .map(|&n| self.string_value(n))
                .unwrap_or_default(),
            Val::Num(n) => python_float_repr(n),
            Val::Bool(b) => if b { "True" } else { "False" }.to_owned(),
        })
    }

    fn regex(&mut self, pattern: &str, icase: bool) -> Result<regex::Regex, XPathError> {
        let key = (pattern.to_owned(), icase);
        if let Some(r) = self.regexes.get(&key) {
            return Ok(r.clone());
        }
        let r = regex::RegexBuilder::new(pattern)
            .case_insensitive(icase)
            .build()
            .map_err(|e| rt(format!("invalid regular expression {pattern:?}: {e}")))?;
        self.regexes.insert(key, r.clone());
        Ok(r)
    }

    /// EXSLT's `re:test`, `re:match` and `re:replace` as lxml implements them (with
    /// Python's `re` there, the `regex` crate here).
    fn exslt_re(&mut self, f: Func, args: &[Expr], ctx: Ctx) -> Result<Val, XPathError> {
        let s = self.py_string(&args[0], ctx)?;
        let pattern = self.py_string(&args[1], ctx)?;
        let flags = match args.get(2) {
            Some(e) => self.py_string(e, ctx)?,
            None => std::string::String::new(),
        };
        let re = self.regex(&pattern, flags.contains('i'))?;
        let global = flags.contains('g');
        Ok(match f {
            Func::ReTest => Val::Bool(re.is_match(&s)),
            Func::ReMatch => {
                let mut texts: Vec<std::string::String> = Vec::new();
                if global {
                    // Python's `findall`: the whole match without groups, else the
                    // groups (lxml joins them into one element's text).
                    for caps in re.captures_iter(&s) {
                        let text = if caps.len() > 1 {
                            (1..caps.len())
                                .map(|i| caps.get(i).map_or("", |m| m.as_str()))
                                .collect()
                        } else {
                            caps.get(0).map_or("", |m| m.as_str()).to_owned()
                        };
                        texts.push(text);
                    }
                } else if let Some(caps) = re.captures(&s) {
                    for i in 0..caps.len() {
                        texts.push(caps.get(i).map_or("", |m| m.as_str()).to_owned());
                    }
                }
                let first = self.foreign.len() as u32;
                let n = texts.len() as u32;
                self.foreign.extend(texts);
                Val::Nodes(
                    (first..first + n)
                        .map(|k| XNode {
                            id: FOREIGN,
                            sub: 2 * k,
                        })
                        .collect(),
                )
            }
            _ => {
                let template = self.py_string(&args[3], ctx)?;
                let limit = if global { 0 } else { 1 };
                let mut err = None;
                let out = re
                    .replacen(
                        &s,
                        limit,
                        |caps: &regex::Captures<'_>| match expand_python_template(&template, caps) {
                            Ok(t) => t,
                            Err(e) => {
                                err = Some(e);
                                std::string::String::new()
                            }
                        },
                    )
                    .into_owned();
                if let Some(e) = err {
                    return Err(rt(e));
                }
                Val::Str(out)
            }
        })
    }
}

/// The ids of `id()`'s argument as libxml2 splits them: on blanks, except that the
/// first id keeps the blanks before it (libxml2 skips them without moving the start
/// of the token), so `id(' x')` finds nothing.
fn id_tokens(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let blank = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let mut start = 0;
    let mut cur = 0;
    while cur < b.len() && blank(b[cur]) {
        cur += 1;
    }
    std::iter::from_fn(move || {
        if cur >= b.len() {
            return None;
        }
        while cur < b.len() && !blank(b[cur]) {
            cur += 1;
        }
        let token = &text[start..cur];
        while cur < b.len() && blank(b[cur]) {
            cur += 1;
        }
        start = cur;
        Some(token)
    })
}

/// Python `re.sub`'s replacement template: `\1`, `\g<1>`, `\g<name>`, `\n`-style
/// escapes and `\\`.
fn expand_python_template(t: &str, caps: &regex::Captures<'_>) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = t.chars().peekable();
    let group = |g: &str| -> Result<String, String> {
        let m = match g.parse::<usize>() {
            Ok(i) if i < caps.len() => caps.get(i),
            Ok(i) => return Err(format!("invalid group reference {i}")),
            Err(_) => caps.name(g),
        };
        Ok(m.map_or("", |m| m.as_str()).to_owned())
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(d) if d.is_ascii_digit() => {
                let mut num = d.to_string();
                if let Some(&e) = chars.peek()
                    && e.is_ascii_digit()
                {
                    num.push(e);
                    chars.next();
                }
                out.push_str(&group(&num)?);
            }
            Some('g') => {
                if chars.next() != Some('<') {
                    return Err("missing '<' after \\g".into());
                }
                let name: String = chars.by_ref().take_while(|&c| c != '>').collect();
                out.push_str(&group(&name)?);
            }
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('v') => out.push('\x0b'),
            Some('a') => out.push('\x07'),
            Some('b') => out.push('\x08'),
            Some('\\') => out.push('\\'),
            Some(o) if o.is_ascii_alphabetic() => return Err(format!("bad escape \\{o}")),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => return Err("bad escape (end of pattern)".into()),
        }
    }
    Ok(out)
}

fn set_op(f: Func, a: Vec<XNode>, b: Vec<XNode>) -> Val {
    let bs: HashSet<XNode> = b.iter().copied().collect();
    match f {
        Func::SetDifference => Val::Nodes(a.into_iter().filter(|n| !bs.contains(n)).collect()),
        Func::SetIntersection => Val::Nodes(a.into_iter().filter(|n| bs.contains(n)).collect()),
        Func::SetHasSameNode => Val::Bool(a.iter().any(|n| bs.contains(n))),
        _ => {
            let Some(&first) = b.first() else {
                return Val::Nodes(a);
            };
            if !a.contains(&first) {
                return Val::Nodes(Vec::new());
            }
            Val::Nodes(if f == Func::SetLeading {
                a.into_iter().filter(|&n| n < first).collect()
            } else {
                a.into_iter().filter(|&n| n > first).collect()
            })
        }
    }
}
