//! A user's project — its spiders by name, its settings and components — with the
//! commands Scrapy users run in theirs: `crawl NAME -a key=value -o items.jl`, `list`,
//! `parse URL --spider NAME -c CALLBACK`, `check`, and the project-independent
//! `fetch`, `shell`, `bench`, `version`.
//!
//! A project's `main` is a few lines (what `trawl new` writes):
//!
//! ```no_run
//! use trawl::cli::Project;
//! # use trawl::crawl::{CallbackResult, Response, Spider};
//! # struct Quotes;
//! # impl Spider for Quotes {
//! #     fn name(&self) -> &str { "quotes" }
//! #     fn parse(&mut self, _r: &Response) -> CallbackResult { Ok(Vec::new()) }
//! # }
//!
//! fn main() {
//!     Project::new("tutorial")
//!         .spider("quotes", |_args| Ok(Box::new(Quotes)))
//!         .setting("DOWNLOAD_DELAY", 0.25)
//!         .main()
//! }
//! ```
//!
//! Spider arguments (`-a key=value`) reach the spider's constructor as
//! [`SpiderArgs`], as Scrapy passes them to `__init__`. Settings come in Scrapy's
//! order: the defaults, the project's ([`Project::setting`], project priority), the
//! spider's `custom_settings`, then `-s` / `-o` on the command line.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use serde_json::Value;

use super::args::Args;
use super::run::{
    CliError, apply_common, exit_code, log_level_setting, logging, one_line, progress_wanted,
    run_crawl, run_crawls,
};
use crate::crawl::{
    CallbackResult, Contract, Output, Outputs, Priority, Registry, Request, Response, Settings,
    Spider,
};
use crate::defer::Failure;

/// The `-a key=value` arguments of a command, in order (Scrapy's spider arguments).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpiderArgs(pub Vec<(String, String)>);

impl SpiderArgs {
    /// The last value given for `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn parse(args: &Args) -> Result<Self, CliError> {
        let mut out = Vec::new();
        for a in args.all("a") {
            let Some((k, v)) = a.split_once('=') else {
                return Err(CliError::Usage(format!("-a expects NAME=VALUE, got {a:?}")));
            };
            out.push((k.to_owned(), v.to_owned()));
        }
        Ok(Self(out))
    }
}

/// Builds a spider from its arguments; an `Err` is a usage error (a missing or bad
/// argument), shown as one line.
pub type SpiderFactory = Box<dyn Fn(&SpiderArgs) -> Result<Box<dyn Spider>, String>>;

/// Registers a project's components in a crawl's registry.
pub type Components = Box<dyn Fn(&mut Registry)>;

/// A project: spiders by name, settings and components (see the module docs).
#[derive(Default)]
pub struct Project {
    name: String,
    spiders: Vec<(String, SpiderFactory)>,
    settings: Vec<(String, Value)>,
    components: Vec<Components>,
}

impl std::fmt::Debug for Project {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Project")
            .field("name", &self.name)
            .field("spiders", &self.spider_names())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The help of a project's command.
fn help(project: &str) -> String {
    format!(
        "{project} — a trawl project

Usage: {project} <command> [options]

Commands:
  crawl NAME    run a spider (-a NAME=VALUE for spider arguments, -o FILE for a feed)
  list          list the spiders
  parse URL     run one callback on one page and print its items and requests
                (--spider NAME, -c/--callback NAME, -a NAME=VALUE)
  check [NAME]  run the spiders' contracts
  fetch URL     download one URL through the middlewares and print it
  shell URL     download a page and try CSS / XPath expressions on it
  bench         crawl an in-process fixture site at full speed
  version       print trawl's version

Common options: -s NAME=VALUE, -o FILE / -O FILE, -L LEVEL, --logfile FILE, -h
"
    )
}

impl Project {
    /// A project named `name` (shown in help and logs).
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            ..Self::default()
        }
    }

    /// Registers a spider under `name`.
    pub fn spider<F>(mut self, name: &str, factory: F) -> Self
    where
        F: Fn(&SpiderArgs) -> Result<Box<dyn Spider>, String> + 'static,
    {
        self.spiders.push((name.to_owned(), Box::new(factory)));
        self
    }

    /// A project setting (Scrapy's `settings.py`), at project priority.
    pub fn setting(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.settings.push((name.to_owned(), value.into()));
        self
    }

    /// Registers the project's own components (middlewares, pipelines, extensions)
    /// in each crawl's [`Registry`], by the names its settings use.
    pub fn components(mut self, register: impl Fn(&mut Registry) + 'static) -> Self {
        self.components.push(Box::new(register));
        self
    }

    /// The spiders' names, sorted.
    pub fn spider_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.spiders.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        names
    }

    /// Runs the command line of the process and exits with its code.
    pub fn main(self) -> ! {
        let code = self.run(std::env::args().skip(1).collect());
        crate::crawl::logoutput::end_stdout_redirect();
        std::process::exit(code)
    }

    /// Runs a command line (without the program name); returns the exit code: 0
    /// success, 1 a failed crawl or check, 2 a usage error.
    pub fn run(&self, argv: Vec<String>) -> i32 {
        // The components register (and declare the settings they read) before any
        // setting is checked.
        drop(self.registry());
        let args = match Args::parse(argv) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{}: error: {} (see --help)", self.name, e.0);
                return 2;
            }
        };
        let result = if args.flag("help") && matches!(args.command.as_str(), "list" | "check") {
            print!("{}", help(&self.name));
            Ok(0)
        } else {
            match args.command.as_str() {
                "help" => {
                    print!("{}", help(&self.name));
                    Ok(0)
                }
                "list" => {
                    for name in self.spider_names() {
                        println!("{name}");
                    }
                    Ok(0)
                }
                "crawl" if !args.flag("help") => self.crawl(&args),
                "parse" if !args.flag("help") => self.parse(&args),
                "check" => self.check(&args),
                "new" => Err(CliError::Usage(
                    "`new` makes a project: run it with the trawl command".into(),
                )),
                _ => super::commands::run(args),
            }
        };
        match result {
            Ok(code) => code,
            Err(CliError::Usage(e)) => {
                eprintln!("{}: error: {} (see --help)", self.name, one_line(&e));
                2
            }
            Err(CliError::Failed(msg)) => {
                eprintln!("{}: {}", self.name, one_line(&msg));
                1
            }
        }
    }

    fn factory(&self, name: &str) -> Result<&SpiderFactory, CliError> {
        self.spiders
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f)
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "no spider {name:?} (the spiders: {})",
                    self.spider_names().join(", ")
                ))
            })
    }

    fn build(&self, name: &str, args: &SpiderArgs) -> Result<Box<dyn Spider>, CliError> {
        (self.factory(name)?)(args).map_err(|e| CliError::Usage(format!("spider {name}: {e}")))
    }

    fn settings(&self, args: &Args, default_level: &str) -> Result<Settings, CliError> {
        logging(args, default_level)?;
        let mut settings = Settings::new();
        log_level_setting(args, default_level, &mut settings);
        for (k, v) in &self.settings {
            settings.set(k, v.clone(), Priority::Project);
        }
        apply_common(args, &mut settings)?;
        Ok(settings)
    }

    fn registry(&self) -> Registry {
        let mut registry = Registry::with_builtins();
        crate::distributed::register(&mut registry);
        for register in &self.components {
            register(&mut registry);
        }
        registry
    }

    /// `crawl NAME [NAME...]`: one spider, or several at once in this process (each
    /// with the project's settings and the same `-a` arguments, on one reactor).
    fn crawl(&self, args: &Args) -> Result<i32, CliError> {
        let names = args.positional.as_slice();
        if names.is_empty() {
            return Err(CliError::Usage(format!(
                "crawl needs a spider name (the spiders: {})",
                self.spider_names().join(", ")
            )));
        }
        let spider_args = SpiderArgs::parse(args)?;
        let mut crawls = Vec::new();
        for name in names {
            let spider = self.build(name, &spider_args)?;
            let settings = self.settings(args, "INFO")?;
            if names.len() > 1 {
                shared_feed_check(&settings)?;
            }
            let mut registry = self.registry();
            registry.set_spider_arguments(spider_args.0.clone());
            crawls.push((spider, settings, registry));
        }
        let mut code = 0;
        for (name, result) in names.iter().zip(run_crawls(crawls, progress_wanted(args))?) {
            match result {
                Ok(crawler) => code = code.max(exit_code(&crawler)),
                Err(e) => {
                    log::error!("Spider {name} could not run: {e}");
                    code = 1;
                }
            }
        }
        Ok(code)
    }

    /// Downloads `url` through the project's settings and middlewares, and runs
    /// `callback` of the spider on the response (nothing else is crawled).
    fn probe(
        &self,
        spider: Box<dyn Spider>,
        url: &str,
        callback: &str,
        settings: Settings,
    ) -> Result<ProbeOutcome, CliError> {
        let request = Request::get(url)
            .map_err(|e| CliError::Usage(format!("invalid URL {url:?}: {e}")))?
            .with_callback(PROBE)
            .with_errback(PROBE)
            .with_dont_filter(true);
        let result: Rc<RefCell<Option<ProbeOutcome>>> = Rc::default();
        let probe = Probe {
            inner: spider,
            request: Some(request),
            callback: callback.to_owned(),
            result: result.clone(),
        };
        run_crawl(Box::new(probe), settings, self.registry(), false)?;
        let outcome = result.borrow_mut().take();
        outcome.ok_or_else(|| {
            CliError::Failed(format!(
                "{url}: no response (offsite, robots.txt, or a filter dropped the request)"
            ))
        })
    }

    fn parse(&self, args: &Args) -> Result<i32, CliError> {
        let url = match args.positional.as_slice() {
            [u] => u,
            [] => return Err(CliError::Usage("parse needs a URL".into())),
            more => {
                return Err(CliError::Usage(format!(
                    "parse takes one URL, got {more:?}"
                )));
            }
        };
        let spider_args = SpiderArgs::parse(args)?;
        let name = match args.value("spider") {
            Some(n) => n.to_owned(),
            None => self.spider_for(url, &spider_args)?,
        };
        let spider = self.build(&name, &spider_args)?;
        let callback = args.value("callback").unwrap_or("parse");
        let settings = self.settings(args, "INFO")?;
        let outcome = self.probe(spider, url, callback, settings)?;
        let outputs = match outcome {
            ProbeOutcome::Outputs { outputs, .. } => outputs,
            ProbeOutcome::Failed(msg) => {
                return Err(CliError::Failed(format!("{url}: {msg}")));
            }
        };
        let (items, requests): (Vec<&Output>, Vec<&Output>) =
            outputs.iter().partition(|o| matches!(o, Output::Item(_)));
        let mut text = String::from(">>> STATUS DEPTH LEVEL 1 <<<\n");
        text.push_str(
            "# Scraped Items  ------------------------------------------------------------\n",
        );
        let items: Vec<Value> = items
            .iter()
            .filter_map(|o| match o {
                Output::Item(i) => Some(Value::Object(i.0.clone())),
                Output::Request(_) | Output::Later(_) => None,
            })
            .collect();
        text.push_str(&serde_json::to_string_pretty(&items).unwrap_or_default());
        text.push_str(
            "\n\n# Requests  -----------------------------------------------------------------\n",
        );
        let requests: Vec<String> = requests
            .iter()
            .filter_map(|o| match o {
                Output::Request(r) => Some(format!("<{} {}>", r.method().as_str(), r.url_str())),
                Output::Item(_) | Output::Later(_) => None,
            })
            .collect();
        text.push_str(&format!("[{}]\n", requests.join(",\n ")));
        print!("{text}");
        Ok(0)
    }

    /// The spider for a URL when `--spider` is not given: the only one, or the one
    /// whose `allowed_domains` cover the URL's host (Scrapy's `spidercls_for_request`).
    fn spider_for(&self, url: &str, args: &SpiderArgs) -> Result<String, CliError> {
        if let [(only, _)] = self.spiders.as_slice() {
            return Ok(only.clone());
        }
        let host = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        let mut found = Vec::new();
        for (name, factory) in &self.spiders {
            if let Ok(s) = factory(args)
                && s.allowed_domains()
                    .iter()
                    .any(|d| host == *d || host.ends_with(&format!(".{d}")))
            {
                found.push(name.clone());
            }
        }
        match found.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(CliError::Usage(format!(
                "cannot tell which spider handles {url}: give --spider (one of {})",
                self.spider_names().join(", ")
            ))),
        }
    }

    fn check(&self, args: &Args) -> Result<i32, CliError> {
        let names: Vec<String> = if args.positional.is_empty() {
            self.spider_names()
                .iter()
                .map(|n| (*n).to_owned())
                .collect()
        } else {
            for n in &args.positional {
                self.factory(n)?;
            }
            args.positional.clone()
        };
        let spider_args = SpiderArgs::parse(args)?;
        let started = Instant::now();
        let mut ran = 0;
        let mut failures = Vec::new();
        for name in &names {
            let contracts = self.build(name, &spider_args)?.contracts();
            for contract in contracts {
                ran += 1;
                let spider = self.build(name, &spider_args)?;
                let settings = self.settings(args, "WARNING")?;
                let label = format!("[{name}] {}", contract.callback);
                match self.probe(spider, &contract.url, &contract.callback, settings) {
                    Ok(ProbeOutcome::Outputs { outputs, error }) => {
                        if let Some(e) = error {
                            failures.push((format!("ERROR: {label}"), e));
                        }
                        for (hook, msg) in contract.verify(&outputs) {
                            failures.push((
                                format!("FAIL: {label} ({hook} post-hook)"),
                                format!("ContractFail: {msg}"),
                            ));
                        }
                    }
                    Ok(ProbeOutcome::Failed(msg)) | Err(CliError::Failed(msg)) => {
                        failures.push((format!("ERROR: {label}"), msg));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        let mut text = String::new();
        for (title, detail) in &failures {
            text.push_str(&format!(
                "======================================================================\n{title}\n\
                 ----------------------------------------------------------------------\n{detail}\n\n"
            ));
        }
        text.push_str(&format!(
            "----------------------------------------------------------------------\n\
             Ran {ran} contract{} in {:.3}s\n\n",
            if ran == 1 { "" } else { "s" },
            started.elapsed().as_secs_f64()
        ));
        if failures.is_empty() {
            text.push_str("OK\n");
        } else {
            text.push_str(&format!("FAILED (failures={})\n", failures.len()));
        }
        print!("{text}");
        Ok(if failures.is_empty() { 0 } else { 1 })
    }
}

/// The probe's callback and errback name.
const PROBE: &str = "__trawl_probe";

enum ProbeOutcome {
    /// What the callback returned (outputs before an error mid-iteration, and it).
    Outputs {
        outputs: Vec<Output>,
        error: Option<String>,
    },
    /// The download failed.
    Failed(String),
}

/// The user's spider, with one request and one callback run on its response.
struct Probe {
    inner: Box<dyn Spider>,
    request: Option<Request>,
    callback: String,
    result: Rc<RefCell<Option<ProbeOutcome>>>,
}

/// Several spiders writing one feed file would overwrite each other: each feed URI
/// must name the spider (`%(name)s`), unless it is stdout.
fn shared_feed_check(settings: &Settings) -> Result<(), CliError> {
    let feeds = settings.get("FEEDS").cloned().unwrap_or(Value::Null);
    let uris: Vec<String> = match &feeds {
        Value::Object(map) => map.keys().cloned().collect(),
        _ => Vec::new(),
    };
    for uri in uris {
        if !uri.contains("%(name)s") && uri != "-" && !uri.starts_with("stdout:") {
            return Err(CliError::Usage(format!(
                "several spiders would all write {uri}: put %(name)s in the feed URI (-o %(name)s.jl)"
            )));
        }
    }
    Ok(())
}

/// Records a callback's outputs into the probe's result instead of processing them;
/// waits (`Output::Later`) still go to the scraper, so their outputs are recorded when
/// they come.
fn record(iter: Outputs, result: Rc<RefCell<Option<ProbeOutcome>>>) -> Outputs {
    let mut iter = iter;
    Box::new(std::iter::from_fn(move || {
        loop {
            let next = iter.next()?;
            let mut slot = result.borrow_mut();
            let Some(ProbeOutcome::Outputs { outputs, error }) = &mut *slot else {
                return None;
            };
            match next {
                Ok(Output::Later(later)) => {
                    drop(slot);
                    let result = result.clone();
                    return Some(Ok(Output::later_lazy(later.0.then(move |r| match r {
                        Ok(outs) => Ok(record(outs, result)),
                        Err(f) => {
                            if let Some(ProbeOutcome::Outputs { error, .. }) =
                                &mut *result.borrow_mut()
                            {
                                *error = Some(f.to_string());
                            }
                            Ok(crate::crawl::outputs(Vec::new()))
                        }
                    }))));
                }
                Ok(o) => outputs.push(o),
                Err(f) => {
                    *error = Some(f.to_string());
                    return None;
                }
            }
        }
    }))
}

impl Spider for Probe {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn allowed_domains(&self) -> Vec<String> {
        self.inner.allowed_domains()
    }
    fn custom_settings(&self) -> Vec<(String, Value)> {
        self.inner.custom_settings()
    }
    fn handle_httpstatus_list(&self) -> Option<Vec<u16>> {
        self.inner.handle_httpstatus_list()
    }
    fn start(&mut self) -> Outputs {
        crate::crawl::outputs(self.request.take().map(Output::Request))
    }
    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        self.callback_outputs(name, response)?.collect()
    }
    fn callback_outputs(&mut self, name: &str, response: &Response) -> Result<Outputs, Failure> {
        if name != PROBE {
            return Ok(crate::crawl::outputs(Vec::new()));
        }
        *self.result.borrow_mut() = Some(ProbeOutcome::Outputs {
            outputs: Vec::new(),
            error: None,
        });
        match self.inner.callback_outputs(&self.callback, response) {
            Ok(iter) => Ok(record(iter, self.result.clone())),
            Err(f) => {
                if let Some(ProbeOutcome::Outputs { error, .. }) = &mut *self.result.borrow_mut() {
                    *error = Some(f.to_string());
                }
                Ok(crate::crawl::outputs(Vec::new()))
            }
        }
    }
    fn errback(&mut self, _name: &str, failure: &Failure, _request: &Request) -> CallbackResult {
        *self.result.borrow_mut() = Some(ProbeOutcome::Failed(failure.to_string()));
        Ok(Vec::new())
    }
    fn settings_ready(&mut self, settings: &Settings) {
        self.inner.settings_ready(settings);
    }
    fn set_context(&mut self, ctx: &Rc<crate::crawl::context::CrawlContext>) {
        self.inner.set_context(ctx);
    }
    fn opened(&mut self) {
        self.inner.opened();
    }
    fn closed(&mut self, reason: &str) {
        self.inner.closed(reason);
    }
    fn contracts(&self) -> Vec<Contract> {
        self.inner.contracts()
    }
}
