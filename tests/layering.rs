//! The layers as tests: a lower layer never names a higher one — between the crate's
//! modules, between the rooms of `crawl/`, and between the files of `html/`, `cli/` and
//! `testing/` — and no files import each other in a circle anywhere in `src/`.
//!
//! The arrows are read from the code by `layering/imports.rs`: every path a file's
//! non-test code writes from `crate::`, `super::`, `self::` or a child module, resolved
//! to the file of the module it names. Layers, bottom up (DESIGN.md §1, `src/lib.rs`):
//! util → reactor → defer, task → proto (sans-IO, beside them) → net → client → html
//! (independent of the I/O layers) → crawl → distributed → testing → cli.

use std::collections::BTreeMap;
use std::path::Path;

#[path = "layering/imports.rs"]
mod imports;

use imports::{Edge, SourceFile, Tok};

/// Each top-level module and the modules it may use besides itself.
const CRATE_LAYERS: &[(&str, &[&str])] = &[
    ("util", &[]),
    ("reactor", &["util"]),
    ("defer", &["reactor", "util"]),
    ("task", &["reactor", "defer", "util"]),
    ("proto", &["util"]),
    ("net", &["reactor", "defer", "task", "proto", "util"]),
    (
        "client",
        &["reactor", "defer", "task", "proto", "net", "util"],
    ),
    ("html", &["util"]),
    (
        "crawl",
        &[
            "reactor", "defer", "task", "proto", "net", "client", "html", "util",
        ],
    ),
    (
        "distributed",
        &[
            "reactor", "defer", "task", "proto", "net", "client", "html", "crawl", "util",
        ],
    ),
    (
        "testing",
        &[
            "reactor",
            "defer",
            "task",
            "proto",
            "net",
            "client",
            "html",
            "crawl",
            "distributed",
            "util",
        ],
    ),
    (
        "cli",
        &[
            "reactor",
            "defer",
            "task",
            "proto",
            "net",
            "client",
            "html",
            "crawl",
            "distributed",
            "testing",
            "util",
        ],
    ),
];

/// The rooms of `crawl/`, bottom up (`crawl/mod.rs` has the table of what each holds).
const CRAWL_ROOMS: &[(&str, u32)] = &[
    ("util", 0),
    ("http", 1),
    ("linkextract", 2),
    ("base", 3),
    ("loader", 4),
    ("jobdir", 4),
    ("context", 5),
    ("spiders", 6),
    ("core", 7),
    ("spidermiddlewares", 8),
    ("downloadermiddlewares", 9),
    ("extensions", 10),
    ("pipelines", 11),
    ("crawler", 12),
];

/// The files of `html/`, bottom up (the folder `xpath/` is one room here).
const HTML_FILES: &[(&str, u32)] = &[
    ("name", 0),
    ("entities", 0),
    ("tokenizer", 1),
    ("rules", 1),
    ("tree", 2),
    ("dom", 3),
    ("links", 3),
    ("parse", 4),
    ("select", 4),
    ("serialize", 4),
    ("xml", 4),
    ("xpath", 5),
];

/// The files of `html/xpath/`, bottom up.
const XPATH_FILES: &[(&str, u32)] = &[
    ("error", 0),
    ("lex", 1),
    ("funcs", 2),
    ("parse", 3),
    ("eval", 4),
    ("library", 5),
];

/// The files of `cli/`, bottom up.
const CLI_FILES: &[(&str, u32)] = &[
    ("args", 0),
    ("run", 1),
    ("fetch", 2),
    ("new", 2),
    ("shell", 3),
    ("commands", 4),
    ("project", 5),
];

/// The files of `testing/`, bottom up.
const TESTING_FILES: &[(&str, u32)] = &[
    ("site", 0),
    ("tempdir", 0),
    ("reply", 0),
    ("broad", 1),
    ("fixture", 2),
    ("hostile", 2),
    ("login", 2),
    ("media", 2),
    ("spiders", 2),
    ("routes", 3),
    ("redis_server", 3),
    ("redis_cluster", 4),
];

/// The files that make up the engine, the downloader, the scraper, the middlewares and
/// the extensions: they hold a `CrawlContext` and never name the wiring.
const NOT_THE_WIRING: &[&str] = &[
    "crawl/core/engine/",
    "crawl/core/downloader/",
    "crawl/core/scraper.rs",
    "crawl/downloadermiddlewares/",
    "crawl/spidermiddlewares/",
    "crawl/extensions/",
];

fn src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn graph() -> (Vec<SourceFile>, Vec<Edge>) {
    let files = imports::library_files(&src());
    let edges = imports::edges(&files);
    (files, edges)
}

fn report(what: &str, violations: Vec<String>) {
    assert!(violations.is_empty(), "{what}:\n{}", violations.join("\n"));
}

/// The module a file belongs to, one level below `prefix` (`crawl/core/engine/open.rs`
/// under `crawl/` is `core`; `crawl/context.rs` is `context`).
fn room_of<'a>(rel: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = rel.strip_prefix(prefix)?;
    let first = rest.split('/').next()?;
    Some(first.strip_suffix(".rs").unwrap_or(first))
}

fn edge_line(e: &Edge, why: &str) -> String {
    format!("src/{}:{}: {} ({why})", e.from, e.line, e.path)
}

/// Checks every arrow between two files under `prefix` against `table`: the target's
/// room must be the source's own or a lower one. `mod.rs` of the folder is its face:
/// nothing under the folder may import it.
fn check_rooms(prefix: &str, table: &[(&str, u32)], edges: &[Edge]) -> Vec<String> {
    let layer: BTreeMap<&str, u32> = table.iter().copied().collect();
    let face = format!("{prefix}mod.rs");
    let mut out = Vec::new();
    for e in edges {
        if !e.from.starts_with(prefix) || e.from == face || !e.to.starts_with(prefix) {
            continue;
        }
        if e.to == face {
            out.push(edge_line(
                e,
                &format!("imports through {face}, not from the module that defines it"),
            ));
            continue;
        }
        let (Some(a), Some(b)) = (room_of(&e.from, prefix), room_of(&e.to, prefix)) else {
            continue;
        };
        match (layer.get(a), layer.get(b)) {
            (Some(la), Some(lb)) if lb <= la => {}
            (Some(_), Some(_)) => out.push(edge_line(
                e,
                &format!("`{a}` may not name the higher `{b}`"),
            )),
            _ => out.push(edge_line(
                e,
                &format!("`{a}` or `{b}` is missing from the layer table of {prefix}"),
            )),
        }
    }
    out
}

#[test]
fn lower_layers_never_import_higher_ones() {
    let (_, edges) = graph();
    let allowed: BTreeMap<&str, &[&str]> = CRATE_LAYERS.iter().copied().collect();
    let mut out = Vec::new();
    for e in &edges {
        let top = |rel: &str| -> String {
            let first = rel.split('/').next().unwrap_or("");
            first.strip_suffix(".rs").unwrap_or(first).to_owned()
        };
        let (a, b) = (top(&e.from), top(&e.to));
        if a == b || b == "lib" || a == "lib" {
            continue;
        }
        match allowed.get(a.as_str()) {
            Some(ok) if ok.contains(&b.as_str()) => {}
            Some(_) => out.push(edge_line(e, &format!("`{a}` may not name `{b}`"))),
            None => out.push(edge_line(e, &format!("`{a}` is missing from CRATE_LAYERS"))),
        }
    }
    report("layering violations between the crate's modules", out);
}

#[test]
fn crawl_rooms_point_one_way() {
    let (_, edges) = graph();
    report(
        "crawl/ layering violations",
        check_rooms("crawl/", CRAWL_ROOMS, &edges),
    );
}

#[test]
fn html_cli_and_testing_files_point_one_way() {
    let (_, edges) = graph();
    let mut out = check_rooms("html/", HTML_FILES, &edges);
    out.extend(check_rooms("html/xpath/", XPATH_FILES, &edges));
    out.extend(check_rooms("cli/", CLI_FILES, &edges));
    out.extend(check_rooms("testing/", TESTING_FILES, &edges));
    report("html/, cli/ or testing/ layering violations", out);
}

/// Inside `crawl/`, an item is imported from the module that defines it: a path
/// through `crate::crawl::{..}` (the public face) is an arrow into the top.
#[test]
fn crawl_files_never_import_through_the_face() {
    let (files, _) = graph();
    let rooms: Vec<&str> = CRAWL_ROOMS.iter().map(|(r, _)| *r).collect();
    let mut out = Vec::new();
    for f in files
        .iter()
        .filter(|f| f.rel.starts_with("crawl/") && f.rel != "crawl/mod.rs")
    {
        let t = &f.tokens;
        for i in 0..t.len() {
            let word = |k: usize, w: &str| matches!(t.get(k), Some((Tok::Ident(x), _)) if x == w);
            let sep = |k: usize| matches!(t.get(k), Some((Tok::PathSep, _)));
            if !(word(i, "crate") && sep(i + 1) && word(i + 2, "crawl") && sep(i + 3)) {
                continue;
            }
            let line = t[i].1;
            match t.get(i + 4) {
                Some((Tok::Ident(room), _)) if rooms.contains(&room.as_str()) => {}
                Some((Tok::Ident(other), _)) => out.push(format!(
                    "src/{}:{line}: crate::crawl::{other} is not a room of crawl/",
                    f.rel
                )),
                _ => out.push(format!("src/{}:{line}: crate::crawl::{{..}}", f.rel)),
            }
        }
    }
    report("paths through crawl/mod.rs inside crawl/", out);
}

/// `super::` reaches only the files of the importing file's own folder.
#[test]
fn super_stays_within_a_folder() {
    let (_, edges) = graph();
    let dir = |rel: &str| rel.rsplit_once('/').map_or("", |(d, _)| d).to_owned();
    let out: Vec<String> = edges
        .iter()
        .filter(|e| e.path.starts_with("super::") && dir(&e.from) != dir(&e.to))
        .map(|e| edge_line(e, &format!("leaves {}/", dir(&e.from))))
        .collect();
    report("super:: paths that leave their folder", out);
}

/// The engine, the downloader, the scraper, the middlewares and the extensions hold a
/// `CrawlContext`: they never name the `Crawler`, the `crawler` module or the
/// `Registry`.
#[test]
fn components_never_name_the_wiring() {
    let (files, _) = graph();
    let mut out = Vec::new();
    for f in files
        .iter()
        .filter(|f| NOT_THE_WIRING.iter().any(|p| f.rel.starts_with(p)))
    {
        let t = &f.tokens;
        for (i, (tok, line)) in t.iter().enumerate() {
            let Tok::Ident(w) = tok else { continue };
            let named = match w.as_str() {
                "Crawler" | "Registry" => true,
                "crawler" => matches!(t.get(i + 1), Some((Tok::PathSep, _))),
                _ => false,
            };
            if named {
                out.push(format!("src/{}:{line}: names `{w}`", f.rel));
            }
        }
    }
    report("components that name the wiring", out);
}

#[test]
fn no_import_circles_in_src() {
    let (files, edges) = graph();
    let circles = imports::circles(&files, &edges);
    let text: Vec<String> = circles
        .iter()
        .map(|c| imports::describe_circle(c, &edges))
        .collect();
    assert!(
        circles.is_empty(),
        "import circles in src/:\n{}",
        text.join("\n")
    );
}

/// The reader itself: paths in use trees, in code, from `super::`, `self::` and child
/// modules resolve to the right files, and test code, comments and strings are left
/// out.
#[test]
fn the_import_reader_reads_what_rustc_reads() {
    let dir = std::env::temp_dir().join(format!("trawl-layering-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(p, text).expect("write");
    };
    write("lib.rs", "pub mod a;\npub mod b;\n");
    write("a/mod.rs", "mod x;\nmod y;\npub use x::X;\n");
    write(
        "a/x.rs",
        "use super::y::{Y, self as why};\n// use crate::b::Gone;\nconst S: &str = \"crate::b::InString\";\npub struct X;\n",
    );
    write(
        "a/y.rs",
        "pub struct Y;\nfn f() { let _ = crate::b::c::make(); }\n#[cfg(test)]\nmod tests {\n    use crate::a::X;\n}\n",
    );
    write("b/mod.rs", "pub mod c;\n");
    write(
        "b/c.rs",
        "pub fn make() {}\nfn g() -> usize { let r#type = 1; r#type }\n",
    );
    let files = imports::library_files(&dir);
    let edges = imports::edges(&files);
    let mut arrows: Vec<(String, String)> = edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone()))
        .collect();
    arrows.sort();
    arrows.dedup();
    let want: Vec<(String, String)> = [
        ("a/mod.rs", "a/x.rs"),
        ("a/x.rs", "a/y.rs"),
        ("a/y.rs", "b/c.rs"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(arrows, want);
    assert!(imports::circles(&files, &edges).is_empty());
    // One arrow back closes a circle, and the check names it.
    write("b/c.rs", "use crate::a::x::X;\npub fn make() {}\n");
    write("a/x.rs", "use crate::b::c::make;\npub struct X;\n");
    let files = imports::library_files(&dir);
    let edges = imports::edges(&files);
    let circles = imports::circles(&files, &edges);
    assert_eq!(
        circles,
        vec![vec!["a/x.rs".to_owned(), "b/c.rs".to_owned()]]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
