//! The layer rule as a test: a lower layer never names a higher one.
//!
//! Layers, bottom up (see DESIGN.md): reactor → defer, task → proto (sans-IO codecs) →
//! net, client → crawl → distributed → cli. `testing` may use everything below `cli`.

use std::fs;
use std::path::Path;

/// Each module and the modules it must never mention as `crate::<name>`.
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "reactor",
        &[
            "defer",
            "task",
            "proto",
            "net",
            "client",
            "crawl",
            "distributed",
            "cli",
            "testing",
        ],
    ),
    (
        "defer",
        &[
            "task",
            "proto",
            "net",
            "client",
            "crawl",
            "distributed",
            "cli",
            "testing",
        ],
    ),
    (
        "task",
        &[
            "proto",
            "net",
            "client",
            "crawl",
            "distributed",
            "cli",
            "testing",
        ],
    ),
    (
        "proto",
        &[
            "reactor",
            "defer",
            "task",
            "net",
            "client",
            "crawl",
            "distributed",
            "cli",
            "testing",
        ],
    ),
    ("net", &["client", "crawl", "distributed", "cli", "testing"]),
    (
        "html",
        &[
            "reactor",
            "defer",
            "task",
            "proto",
            "net",
            "client",
            "crawl",
            "distributed",
            "cli",
            "testing",
        ],
    ),
    ("client", &["crawl", "distributed", "cli", "testing"]),
    ("crawl", &["distributed", "cli"]),
    (
        "util",
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
            "cli",
            "testing",
        ],
    ),
    ("distributed", &["cli"]),
    ("testing", &["cli"]),
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
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

#[test]
fn lower_layers_never_import_higher_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations = Vec::new();
    for (module, forbidden) in FORBIDDEN {
        let mut files = Vec::new();
        rust_files(&src.join(module), &mut files);
        let single = src.join(format!("{module}.rs"));
        if single.exists() {
            files.push(single);
        }
        for file in files {
            let text = fs::read_to_string(&file).unwrap();
            for (lineno, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for higher in *forbidden {
                    for pattern in [
                        format!("crate::{higher}::"),
                        format!("crate::{higher}}}"),
                        format!("crate::{higher};"),
                    ] {
                        if code.contains(&pattern) {
                            violations.push(format!(
                                "{}:{}: `{module}` mentions `crate::{higher}`",
                                file.display(),
                                lineno + 1
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
}

/// Inside `crawl/`: components (middlewares, extensions, schedulers, dupefilters,
/// stats, pipelines, spider middlewares) see the `CrawlContext`, never the `Crawler`
/// (the wiring) nor the engine; the downloader and the scraper, which the engine
/// drives, never name the engine.
#[test]
fn components_see_the_context_not_the_crawler_or_the_engine() {
    let crawl = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/crawl");
    let components = [
        "downloadermiddlewares",
        "spidermiddlewares",
        "extensions",
        "core/scheduler",
        "core/dupefilter.rs",
        "base/stats.rs",
        "core/pipeline.rs",
        "core/spidermw.rs",
        "context.rs",
    ];
    let engine_users = ["core/downloader", "core/scraper.rs"];
    let mut violations = Vec::new();
    let mut check = |path: &Path, patterns: &[&str]| {
        let mut files = Vec::new();
        if path.is_dir() {
            rust_files(path, &mut files);
        } else {
            files.push(path.to_path_buf());
        }
        for file in files {
            let text = fs::read_to_string(&file).unwrap();
            for (lineno, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for p in patterns {
                    if code.contains(p) {
                        violations.push(format!(
                            "{}:{}: mentions `{p}`",
                            file.display(),
                            lineno + 1
                        ));
                    }
                }
            }
        }
    };
    for c in components {
        check(
            &crawl.join(c),
            &[
                "crawler::Crawler",
                "Rc<Crawler>",
                "&Crawler",
                "engine::",
                "ExecutionEngine",
            ],
        );
    }
    for c in engine_users {
        check(
            &crawl.join(c),
            &[
                "engine::",
                "ExecutionEngine",
                "crawler::Crawler",
                "Rc<Crawler>",
                "&Crawler",
            ],
        );
    }
    assert!(
        violations.is_empty(),
        "crawl/ layering violations:\n{}",
        violations.join("\n")
    );
}
