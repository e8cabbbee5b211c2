//! The import graph of `src/`, read from the source text: which file names which.
//!
//! A file's code is lexed (comments, strings and character literals dropped), its test
//! code (`#[cfg(test)]` items and the files of `#[cfg(test)] mod x;`) left out, and every
//! path that starts at `crate::`, `super::`, `self::` or a child module is resolved to
//! the file of the deepest module it names: `crate::crawl::engine::ExecutionEngine` is
//! an arrow to `crawl/engine/mod.rs`, `crate::crawl::Request` one to `crawl/mod.rs`
//! (which re-exports it). `mod x;` declarations are not arrows.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A token of Rust source, as far as paths need: identifiers and the punctuation that
/// shapes a path or an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// An identifier or keyword (raw identifiers without `r#`).
    Ident(String),
    /// `::`
    PathSep,
    /// Any other punctuation character (`{`, `}`, `;`, `,`, `#`, `[`, `(`, `*`, ...).
    Punct(char),
}

/// One source file: its path under `src/`, its module path and its non-test tokens
/// with their line numbers.
#[derive(Debug)]
pub struct SourceFile {
    /// The path relative to `src/`, with `/` separators (`crawl/engine/mod.rs`).
    pub rel: String,
    /// The module path (`["crawl", "engine"]`; empty for `lib.rs`).
    pub module: Vec<String>,
    /// Non-test tokens and the line each starts on.
    pub tokens: Vec<(Tok, usize)>,
    /// Child modules declared `#[cfg(test)] mod x;` (their files are test code).
    pub test_children: Vec<String>,
}

/// An arrow: `from` names something of `to` through `path` on `line`.
#[derive(Debug, Clone)]
pub struct Edge {
    /// The importing file (relative to `src/`).
    pub from: String,
    /// The imported file.
    pub to: String,
    /// The path as written, resolved to segments (`crate::crawl::Request`).
    pub path: String,
    /// The line it is on.
    pub line: usize,
}

/// Lexes Rust source into path-relevant tokens; comments and literals are dropped.
pub fn lex(src: &str) -> Vec<(Tok, usize)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let count_lines = |s: &[u8]| s.iter().filter(|&&c| c == b'\n').count();
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if let Some(end) = raw_string_end(b, i) {
            line += count_lines(&b[i..end]);
            i = end;
        } else if c == b'"' || (c == b'b' && b.get(i + 1) == Some(&b'"')) {
            i += if c == b'b' { 2 } else { 1 };
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                if i < b.len() && b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == b'\'' || (c == b'b' && b.get(i + 1) == Some(&b'\'')) {
            // A character literal, or a lifetime / label.
            let start = if c == b'b' { i + 1 } else { i };
            if b.get(start + 1) == Some(&b'\\') {
                let mut j = start + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                i = j + 1;
            } else {
                // 'x' is a literal when a quote follows the (UTF-8) character.
                let rest = &src[start + 1..];
                let ch_len = rest.chars().next().map_or(1, char::len_utf8);
                if b.get(start + 1 + ch_len) == Some(&b'\'') {
                    i = start + 2 + ch_len;
                } else {
                    i = start + 1; // a lifetime: its name lexes as an identifier
                }
            }
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            let mut word = &src[start..i];
            if word == "r" && b.get(i) == Some(&b'#') {
                // r#ident
                let s = i + 1;
                let mut j = s;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                word = &src[s..j];
                i = j;
            }
            out.push((Tok::Ident(word.to_owned()), line));
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                if b[i] == b'.' && !b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    break;
                }
                i += 1;
            }
        } else if b[i..].starts_with(b"::") {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c as char), line));
            i += 1;
        }
    }
    out
}

/// The end of a raw string literal starting at `i` (`r"…"`, `r#"…"#`, `br#"…"#`).
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while b.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    if b.get(j) != Some(&b'"') {
        return None;
    }
    j += 1;
    loop {
        if j >= b.len() {
            return Some(j);
        }
        if b[j] == b'"'
            && b[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == b'#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
}

fn is_ident(t: Option<&(Tok, usize)>, word: &str) -> bool {
    matches!(t, Some((Tok::Ident(w), _)) if w == word)
}

fn is_punct(t: Option<&(Tok, usize)>, ch: char) -> bool {
    matches!(t, Some((Tok::Punct(p), _)) if *p == ch)
}

/// The index just past the attribute `#[...]` or `#![...]` starting at `i`.
fn skip_attribute(toks: &[(Tok, usize)], i: usize) -> usize {
    let mut j = i + 1;
    if is_punct(toks.get(j), '!') {
        j += 1;
    }
    let mut depth = 0;
    while j < toks.len() {
        match &toks[j].0 {
            Tok::Punct('[') => depth += 1,
            Tok::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// Whether the attribute starting at `i` is exactly `#[cfg(test)]`.
fn is_cfg_test(toks: &[(Tok, usize)], i: usize) -> bool {
    is_punct(toks.get(i), '#')
        && is_punct(toks.get(i + 1), '[')
        && is_ident(toks.get(i + 2), "cfg")
        && is_punct(toks.get(i + 3), '(')
        && is_ident(toks.get(i + 4), "test")
        && is_punct(toks.get(i + 5), ')')
        && is_punct(toks.get(i + 6), ']')
}

/// Drops `#[cfg(test)]` items; returns the kept tokens and the names of test-only
/// child modules declared out of line.
fn strip_test_code(toks: Vec<(Tok, usize)>) -> (Vec<(Tok, usize)>, Vec<String>) {
    let mut out = Vec::with_capacity(toks.len());
    let mut test_children = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if !is_cfg_test(&toks, i) {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        i = skip_attribute(&toks, i);
        while is_punct(toks.get(i), '#') {
            i = skip_attribute(&toks, i);
        }
        // `mod name;` out of line: its file is test code.
        let mut k = i;
        while matches!(toks.get(k), Some((Tok::Ident(w), _)) if w == "pub" ) {
            k += 1;
        }
        if is_ident(toks.get(k), "mod")
            && let Some((Tok::Ident(name), _)) = toks.get(k + 1)
            && is_punct(toks.get(k + 2), ';')
        {
            test_children.push(name.clone());
            i = k + 3;
            continue;
        }
        // Otherwise skip the item: up to a `;` at depth 0 or the end of its first block.
        let mut depth = 0i32;
        while i < toks.len() {
            match &toks[i].0 {
                Tok::Punct('{') | Tok::Punct('(') | Tok::Punct('[') => depth += 1,
                Tok::Punct('}') | Tok::Punct(')') | Tok::Punct(']') => {
                    depth -= 1;
                    if depth == 0 && matches!(toks[i].0, Tok::Punct('}')) {
                        i += 1;
                        break;
                    }
                }
                Tok::Punct(';') if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
    }
    (out, test_children)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The library's source files (`src/bin/` is another crate and left out), test files
/// excluded.
pub fn library_files(src: &Path) -> Vec<SourceFile> {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    paths.sort();
    let mut files: Vec<SourceFile> = Vec::new();
    for path in paths {
        let rel = path
            .strip_prefix(src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("bin/") {
            continue;
        }
        let mut module: Vec<String> = rel
            .trim_end_matches(".rs")
            .split('/')
            .map(str::to_owned)
            .collect();
        if module.last().is_some_and(|m| m == "mod" || m == "lib") {
            module.pop();
        }
        let text = fs::read_to_string(&path).expect("readable source");
        let (tokens, test_children) = strip_test_code(lex(&text));
        files.push(SourceFile {
            rel,
            module,
            tokens,
            test_children,
        });
    }
    // Leave out the files of test-only modules (and everything below them).
    let test_modules: Vec<Vec<String>> = files
        .iter()
        .flat_map(|f| {
            f.test_children.iter().map(|c| {
                let mut m = f.module.clone();
                m.push(c.clone());
                m
            })
        })
        .collect();
    files.retain(|f| !test_modules.iter().any(|t| f.module.starts_with(t)));
    files
}

/// Every arrow between library files.
pub fn edges(files: &[SourceFile]) -> Vec<Edge> {
    let modules: BTreeMap<Vec<String>, &str> = files
        .iter()
        .map(|f| (f.module.clone(), f.rel.as_str()))
        .collect();
    let mut out = Vec::new();
    for f in files {
        let children: BTreeSet<&str> = modules
            .keys()
            .filter(|m| m.len() == f.module.len() + 1 && m.starts_with(&f.module))
            .map(|m| m[m.len() - 1].as_str())
            .collect();
        let mut paths: Vec<(Vec<String>, usize)> = Vec::new();
        let toks = &f.tokens;
        let mut i = 0;
        while i < toks.len() {
            if is_ident(toks.get(i), "use") {
                let (end, leaves) = use_tree(toks, i + 1, Vec::new());
                for leaf in leaves {
                    paths.push((leaf, toks[i].1));
                }
                i = end;
                continue;
            }
            let starts_path = matches!(&toks[i].0, Tok::Ident(w)
                if w == "crate" || w == "super" || w == "self" || children.contains(w.as_str()))
                && matches!(toks.get(i + 1), Some((Tok::PathSep, _)))
                && !matches!(
                    i.checked_sub(1).and_then(|p| toks.get(p)),
                    Some((Tok::PathSep, _)) | Some((Tok::Punct('.'), _))
                )
                && !is_ident(i.checked_sub(1).and_then(|p| toks.get(p)), "in");
            if starts_path {
                let line = toks[i].1;
                let mut segs = Vec::new();
                let mut j = i;
                while let Some((Tok::Ident(w), _)) = toks.get(j) {
                    segs.push(w.clone());
                    if matches!(toks.get(j + 1), Some((Tok::PathSep, _))) {
                        j += 2;
                    } else {
                        j += 1;
                        break;
                    }
                }
                paths.push((segs, line));
                i = j.max(i + 1);
                continue;
            }
            i += 1;
        }
        for (segs, line) in paths {
            if let Some(to) = resolve(&f.module, &segs, &children, &modules)
                && to != f.rel
            {
                out.push(Edge {
                    from: f.rel.clone(),
                    to: to.to_owned(),
                    path: segs.join("::"),
                    line,
                });
            }
        }
    }
    out
}

/// The leaf paths of the use tree starting at `i` (after `use`), and the index past
/// it.
fn use_tree(toks: &[(Tok, usize)], mut i: usize, prefix: Vec<String>) -> (usize, Vec<Vec<String>>) {
    let mut leaves = Vec::new();
    let mut path = prefix;
    if matches!(toks.get(i), Some((Tok::PathSep, _))) {
        i += 1; // `use ::std::...`
    }
    loop {
        match toks.get(i) {
            Some((Tok::Ident(w), _)) if w == "as" => {
                i += 2; // `as name`
            }
            Some((Tok::Ident(w), _)) => {
                if w != "self" || path.is_empty() {
                    path.push(w.clone());
                }
                i += 1;
                if matches!(toks.get(i), Some((Tok::PathSep, _))) {
                    i += 1;
                    continue;
                }
            }
            Some((Tok::Punct('*'), _)) => {
                i += 1;
            }
            Some((Tok::Punct('{'), _)) => {
                i += 1;
                loop {
                    if is_punct(toks.get(i), '}') {
                        i += 1;
                        break;
                    }
                    let (end, inner) = use_tree(toks, i, path.clone());
                    leaves.extend(inner);
                    i = end;
                    if is_punct(toks.get(i), ',') {
                        i += 1;
                    }
                    if i >= toks.len() {
                        break;
                    }
                }
                // A group: its leaves are the paths.
                if is_punct(toks.get(i), ';') {
                    i += 1;
                }
                return (i, leaves);
            }
            _ => {}
        }
        if matches!(toks.get(i), Some((Tok::Ident(w), _)) if w == "as") {
            continue;
        }
        break;
    }
    if !path.is_empty() {
        leaves.push(path);
    }
    if is_punct(toks.get(i), ';') {
        i += 1;
    }
    (i, leaves)
}

/// The file of the deepest library module `segs` names from `module`, if the path is a
/// library path at all.
fn resolve<'a>(
    module: &[String],
    segs: &[String],
    children: &BTreeSet<&str>,
    modules: &BTreeMap<Vec<String>, &'a str>,
) -> Option<&'a str> {
    let mut cur: Vec<String>;
    let mut rest = segs;
    match segs.first().map(String::as_str) {
        Some("crate") => {
            cur = Vec::new();
            rest = &segs[1..];
        }
        Some("self") => {
            cur = module.to_vec();
            rest = &segs[1..];
        }
        Some("super") => {
            cur = module.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                cur.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) if children.contains(first) => {
            cur = module.to_vec();
        }
        _ => return None,
    }
    for s in rest {
        let mut next = cur.clone();
        next.push(s.clone());
        if modules.contains_key(&next) {
            cur = next;
        } else {
            break;
        }
    }
    modules.get(&cur).copied()
}

/// Strongly connected components of two or more files (Tarjan), each sorted.
pub fn circles(files: &[SourceFile], edges: &[Edge]) -> Vec<Vec<String>> {
    let names: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
    let index: BTreeMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut adj = vec![BTreeSet::new(); names.len()];
    for e in edges {
        if let (Some(&a), Some(&b)) = (index.get(e.from.as_str()), index.get(e.to.as_str())) {
            adj[a].insert(b);
        }
    }
    struct State {
        next: usize,
        idx: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        out: Vec<Vec<usize>>,
    }
    fn visit(v: usize, adj: &[BTreeSet<usize>], s: &mut State) {
        s.idx[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on[v] = true;
        for &w in &adj[v] {
            match s.idx[w] {
                None => {
                    visit(w, adj, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.idx[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        next: 0,
        idx: vec![None; names.len()],
        low: vec![0; names.len()],
        on: vec![false; names.len()],
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in 0..names.len() {
        if s.idx[v].is_none() {
            visit(v, &adj, &mut s);
        }
    }
    let mut out: Vec<Vec<String>> = s
        .out
        .into_iter()
        .map(|c| {
            let mut c: Vec<String> = c.into_iter().map(|i| names[i].to_owned()).collect();
            c.sort();
            c
        })
        .collect();
    out.sort();
    out
}

/// The arrows inside one circle, one line each, for a failure message.
pub fn describe_circle(circle: &[String], edges: &[Edge]) -> String {
    let set: BTreeSet<&str> = circle.iter().map(String::as_str).collect();
    let mut lines: BTreeSet<String> = BTreeSet::new();
    for e in edges {
        if set.contains(e.from.as_str()) && set.contains(e.to.as_str()) {
            lines.insert(format!(
                "    src/{}:{} -> src/{} ({})",
                e.from, e.line, e.to, e.path
            ));
        }
    }
    format!(
        "  circle of {} files:\n{}",
        circle.len(),
        lines.into_iter().collect::<Vec<_>>().join("\n")
    )
}
