//! `trawl new NAME [DIR]` — Scrapy's `startproject` + `genspider` in one: a Cargo
//! project with one spider (quotes, laid out as quotes.toscrape.com and the fixture
//! site's tutorial section), an item pipeline, settings, a test of the spider against
//! a saved page, and a README. It depends on trawl by path (`--trawl-path`, default
//! the source tree this binary was built from) and starts from trawl's own
//! `Cargo.lock`, so it builds offline with the crates trawl's build already fetched.

use std::path::{Path, PathBuf};

use super::args::Args;
use super::run::CliError;

/// `trawl new --help`.
pub(super) const HELP: &str = "\
Usage: trawl new NAME [DIR] [--trawl-path PATH]

Writes a Cargo project NAME in DIR (default ./NAME): src/main.rs (the project: spiders
and settings, with the commands crawl/list/parse/check/shell/fetch), src/spiders.rs (a
quotes spider), src/pipelines.rs (an item pipeline), tests/spider.rs (the spider
against the saved page tests/pages/quotes.html) and a README. Then:

  cd NAME && cargo test && cargo run -- list
  cargo run -- crawl quotes -a start=URL -o quotes.jl

  --trawl-path PATH   trawl's source tree (default: the one this binary was built from)
";

/// trawl's lockfile: the project starts from the versions trawl was built with.
const LOCKFILE: &str = include_str!("../../Cargo.lock");

fn cargo_toml(name: &str, trawl: &Path) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
         [dependencies]\ntrawl = {{ path = {:?} }}\nserde_json = \"1\"\n\n\
         # A project of its own, even when made inside another workspace.\n[workspace]\n",
        trawl.display().to_string()
    )
}

fn main_rs(name: &str, krate: &str) -> String {
    format!(
        r#"//! The {name} project: its spiders, settings and components, with trawl's commands
//! for them — `cargo run -- crawl quotes -o quotes.jl`, `list`, `parse URL`, `check`,
//! `shell URL`, `fetch URL` (Scrapy's `scrapy crawl`, `list`, `parse`, `check`, `shell`).

use {krate}::{{pipelines, spiders}};

fn main() {{
    trawl::cli::Project::new("{name}")
        // `cargo run -- crawl quotes -a start=URL`: `-a` reaches the constructor.
        .spider("quotes", |args| Ok(Box::new(spiders::Quotes::from_args(args)?)))
        // settings.py: project priority (a spider's custom_settings and -s win).
        .setting("CONCURRENT_REQUESTS_PER_DOMAIN", 8)
        .setting("ITEM_PIPELINES", serde_json::json!({{"{name}.StripText": 300}}))
        .components(pipelines::register)
        .main()
}}
"#
    )
}

fn lib_rs(name: &str) -> String {
    format!(
        "//! The {name} project's spiders and components (a library, so tests can use them).\n\n\
         pub mod pipelines;\npub mod spiders;\n"
    )
}

const SPIDERS_RS: &str = r#"//! The project's spiders.

use trawl::cli::SpiderArgs;
use trawl::crawl::{CallbackResult, Contract, Item, Output, Response, Spider};

/// Quotes from a site laid out as quotes.toscrape.com (so is the fixture site's
/// tutorial section: `trawl serve`, then `-a start=http://127.0.0.1:PORT/page/1/`).
pub struct Quotes {
    start: String,
}

impl Quotes {
    /// `-a start=URL` sets the first page.
    pub fn from_args(args: &SpiderArgs) -> Result<Self, String> {
        let start = args.get("start").unwrap_or("http://quotes.toscrape.com/");
        if !(start.starts_with("http://") || start.starts_with("https://")) {
            return Err(format!("-a start=URL expects an http(s) URL, got {start:?}"));
        }
        Ok(Self {
            start: start.to_owned(),
        })
    }
}

impl Spider for Quotes {
    fn name(&self) -> &str {
        "quotes"
    }

    fn start_urls(&self) -> Vec<String> {
        vec![self.start.clone()]
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        let mut out = Vec::new();
        for quote in response.css("div.quote") {
            out.push(Output::Item(
                Item::new()
                    .with("text", quote.css("span.text::text").get())
                    .with("author", quote.xpath(".//small[@class='author']/text()").get())
                    .with("tags", quote.css("a.tag::text").getall()),
            ));
        }
        if let Some(next) = response.css("li.next a::attr(href)").get()
            && let Ok(request) = response.follow(&next)
        {
            out.push(Output::Request(request));
        }
        Ok(out)
    }

    // `cargo run -- check`: Scrapy's @url / @returns / @scrapes contracts.
    fn contracts(&self) -> Vec<Contract> {
        vec![
            Contract::new("parse", &self.start)
                .returns_items(1, None)
                .returns_requests(0, Some(1))
                .scrapes(&["text", "author", "tags"]),
        ]
    }
}
"#;

fn pipelines_rs(name: &str) -> String {
    format!(
        r#"//! The project's item pipelines, registered under the names its settings use.

use std::rc::Rc;

use trawl::crawl::pipeline::{{ItemOutcome, ItemPipeline}};
use trawl::crawl::{{Item, Registry, Response}};
use trawl::defer::Failure;

/// Strips the curly quotes and whitespace around a quote's text.
pub struct StripText;

impl ItemPipeline for StripText {{
    fn process_item(&self, mut item: Item, _response: Option<&Response>) -> Result<ItemOutcome, Failure> {{
        if let Some(serde_json::Value::String(text)) = item.0.get_mut("text") {{
            *text = text.trim().trim_matches(['\u{{201c}}', '\u{{201d}}']).to_owned();
        }}
        Ok(ItemOutcome::Item(item))
    }}
}}

/// Registers the pipelines (`Project::components`).
pub fn register(registry: &mut Registry) {{
    registry.register_pipeline("{name}.StripText", |_ctx| Ok(Rc::new(StripText)));
}}
"#
    )
}

fn test_rs(krate: &str) -> String {
    format!(
        r#"//! The spider against a saved page: no network, no server.

use trawl::cli::SpiderArgs;
use trawl::crawl::{{Output, Request, Response, Spider}};
use trawl::proto::Headers;
use {krate}::spiders::Quotes;

#[test]
fn parses_the_saved_page() {{
    let request = Request::get("http://quotes.toscrape.com/").expect("URL");
    let page = include_str!("pages/quotes.html");
    let response = Response::new(request, 200, Headers::new(), page);
    let mut spider = Quotes::from_args(&SpiderArgs::default()).expect("spider");
    let out = spider.parse(&response).expect("parse");
    let items: Vec<_> = out
        .iter()
        .filter_map(|o| match o {{
            Output::Item(i) => Some(i),
            _ => None,
        }})
        .collect();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].0["author"], "Albert Einstein");
    assert_eq!(items[1].0["tags"], serde_json::json!(["humor", "life"]));
    let next: Vec<&str> = out
        .iter()
        .filter_map(|o| match o {{
            Output::Request(r) => Some(r.url_str()),
            _ => None,
        }})
        .collect();
    assert_eq!(next, ["http://quotes.toscrape.com/page/2/"]);
}}

#[test]
fn a_bad_start_argument_is_refused() {{
    let args = SpiderArgs(vec![("start".into(), "ftp://x".into())]);
    assert!(Quotes::from_args(&args).is_err());
}}
"#
    )
}

const SAVED_PAGE: &str = r#"<!DOCTYPE html>
<html lang="en">
<head><meta charset="UTF-8"><title>Quotes to Scrape</title></head>
<body>
<div class="container">
<div class="quote"><span class="text">“The world as we have created it is a process of our thinking.”</span>
<span>by <small class="author">Albert Einstein</small> <a href="/author/Albert-Einstein">(about)</a></span>
<div class="tags">Tags: <a class="tag" href="/tag/change/page/1/">change</a> <a class="tag" href="/tag/thinking/page/1/">thinking</a></div></div>
<div class="quote"><span class="text">“A day without sunshine is like, you know, night.”</span>
<span>by <small class="author">Steve Martin</small> <a href="/author/Steve-Martin">(about)</a></span>
<div class="tags">Tags: <a class="tag" href="/tag/humor/page/1/">humor</a> <a class="tag" href="/tag/life/page/1/">life</a></div></div>
<nav><ul class="pager"><li class="next"><a href="/page/2/">Next <span aria-hidden="true">&rarr;</span></a></li></ul></nav>
</div>
</body>
</html>
"#;

fn readme(name: &str) -> String {
    format!(
        "# {name}\n\nA trawl project (made by `trawl new`).\n\n```sh\n\
         cargo test                                   # the spider against tests/pages/quotes.html\n\
         cargo run -- list                            # the spiders\n\
         cargo run -- crawl quotes -o quotes.jl       # scrapy crawl quotes -o quotes.jl\n\
         cargo run -- crawl quotes -a start=http://127.0.0.1:8000/page/1/   # against `trawl serve --port 8000`\n\
         cargo run -- parse http://127.0.0.1:8000/page/1/    # scrapy parse: one callback, its items and requests\n\
         cargo run -- check -a start=http://127.0.0.1:8000/page/1/   # scrapy check: the spider's contracts\n\
         cargo run -- shell http://127.0.0.1:8000/page/1/    # try CSS / XPath expressions on a page\n\
         ```\n\n\
         | file | Scrapy's |\n|---|---|\n\
         | `src/main.rs` | `settings.py` and the `scrapy` command |\n\
         | `src/spiders.rs` | `spiders/quotes.py` |\n\
         | `src/pipelines.rs` | `pipelines.py` |\n\
         | `tests/spider.rs` | a test of the spider on a saved page |\n"
    )
}

/// A crate name: a letter, then letters, digits, `_` or `-`.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Writes the project; returns the files written.
pub fn write_project(name: &str, dir: &Path, trawl: &Path) -> Result<Vec<PathBuf>, String> {
    if !valid_name(name) {
        return Err(format!(
            "{name:?} is not a crate name (a letter, then letters, digits, _ or -)"
        ));
    }
    if dir.exists()
        && std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .next()
            .is_some()
    {
        return Err(format!("{} exists and is not empty", dir.display()));
    }
    let krate = name.replace('-', "_");
    let files: Vec<(&str, String)> = vec![
        ("Cargo.toml", cargo_toml(name, trawl)),
        ("Cargo.lock", LOCKFILE.to_owned()),
        ("README.md", readme(name)),
        ("src/main.rs", main_rs(name, &krate)),
        ("src/lib.rs", lib_rs(name)),
        ("src/spiders.rs", SPIDERS_RS.to_owned()),
        ("src/pipelines.rs", pipelines_rs(name)),
        ("tests/spider.rs", test_rs(&krate)),
        ("tests/pages/quotes.html", SAVED_PAGE.to_owned()),
        (".gitignore", "/target\n".to_owned()),
    ];
    let mut written = Vec::new();
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// `trawl new NAME [DIR]`.
pub(super) fn new_project(args: &Args) -> Result<i32, CliError> {
    let (name, dir) = match args.positional.as_slice() {
        [name] => (name.as_str(), PathBuf::from(name)),
        [name, dir] => (name.as_str(), PathBuf::from(dir)),
        [] => return Err(CliError::Usage("new needs a project name".into())),
        more => {
            return Err(CliError::Usage(format!(
                "new takes NAME [DIR], got {more:?}"
            )));
        }
    };
    let trawl = match args.value("trawl-path") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    };
    if !trawl.join("Cargo.toml").is_file() {
        return Err(CliError::Usage(format!(
            "no trawl source tree at {} (give --trawl-path PATH)",
            trawl.display()
        )));
    }
    let trawl = trawl.canonicalize().unwrap_or(trawl);
    let written = write_project(name, &dir, &trawl).map_err(CliError::Usage)?;
    println!(
        "New trawl project {name:?} in {} ({} files). Next:\n\n    cd {}\n    cargo test\n    cargo run -- list\n    cargo run -- crawl quotes -o quotes.jl",
        dir.display(),
        written.len(),
        dir.display()
    );
    Ok(0)
}
