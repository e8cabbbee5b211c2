//! The subcommands.

use std::sync::Arc;

use url::Url;

use super::args::Args;
use super::fetch::fetch_response;
use super::run::{
    CliError, apply_common, exit_code, log_level_setting, logging, progress_wanted, run_crawl,
};
use crate::crawl::keys;
use crate::crawl::request::Method;
use crate::crawl::{
    CallbackResult, CrawlSpider, Item, LinkExtractor, Output, Priority, Registry, Request,
    Response, Rule, Settings, Spider,
};
use crate::defer::Failure;
use crate::reactor::Reactor;
use crate::testing::spiders::FixtureSpider;
use crate::testing::{FixtureOptions, FixtureServer};
use crate::util::peak_rss;

/// The top-level help.
pub const HELP: &str = "\
trawl — Scrapy's engine on a single-threaded reactor

Usage: trawl <command> [options]

Commands:
  bench     crawl an in-process fixture site at full speed and report pages/min
  crawl     follow links from URLs and write one record per page
  fetch     download one URL through the middlewares and print it
  shell     download a page and try CSS / XPath expressions on it
  new       make a project of your own (a Cargo crate with a spider; then
            `cargo run -- crawl NAME`, `list`, `parse`, `check`)
  serve     run the fixture site server in the foreground
  version   print the version

Common options (crawl, fetch, bench):
  -s NAME=VALUE        set a setting (repeatable)
  -o FILE / -O FILE    append / overwrite a feed (format from the extension, or FILE:FORMAT)
  -L LEVEL, --loglevel LEVEL   DEBUG, INFO, WARNING, ERROR, CRITICAL (default INFO;
                       fetch: CRITICAL, so a failure is the one error line)
  --logfile FILE       write the log there instead of stderr
  --progress           a live progress line on a terminal
  --metrics ADDR       serve the crawl's stats: Prometheus at /metrics, a live status
                       page at / (ADDR: a port on 127.0.0.1, or HOST:PORT written out)
  --metrics-token T    require `Authorization: Bearer T` (or ?token=T) from readers
  -h, --help           help for a command

Ctrl+C once: finish in-flight requests, close the feeds, dump the stats. Twice: stop now.
";

const BENCH_HELP: &str = "\
Usage: trawl bench [--pages N] [--time SECS | --count PAGES] [-s NAME=VALUE]... [-o FILE]

Starts the fixture site server in-process on 127.0.0.1 (its own thread) and crawls it at
full speed with a spider that follows every link and parses every page (one item per
quote block), like `scrapy bench`. Prints pages/min, items/min, peak RSS and the stats.

  --pages N      pages in the generated site (default 100000)
  --time SECS    stop after SECS seconds (default 10; CLOSESPIDER_TIMEOUT)
  --count PAGES  stop after PAGES responses (CLOSESPIDER_PAGECOUNT)
";

const CRAWL_HELP: &str = "\
Usage: trawl crawl URL... [--urls-file FILE] [--allow REGEX]... [--deny REGEX]... [--depth N]
                   [--same-domain] [--broad]
                   [--jobdir DIR [--jobdir-salvage]] [--redis URL [--redis-start-key KEY]]
                   [--name NAME] [-o FILE | -O FILE] [-s NAME=VALUE]...

Follows links from the URLs (a CrawlSpider with one LinkExtractor rule) and writes one
record per page: url, status, title, depth, links_out, referer. The feed format comes
from the file's extension (.jl/.jsonl, .json, .csv) or FILE:FORMAT. robots.txt is
obeyed (-s ROBOTSTXT_OBEY=false to ignore it).

  --allow REGEX   follow only URLs matching (repeatable)
  --deny REGEX    never follow URLs matching (repeatable)
  --depth N       DEPTH_LIMIT (0: unlimited)
  --urls-file FILE  start URLs from FILE too, one per line (# comments)
  --broad         the settings Scrapy's Broad Crawls guide recommends: breadth-first
                  (DEPTH_PRIORITY 1, FIFO queues), DownloaderAwarePriorityQueue,
                  CONCURRENT_REQUESTS 100, REACTOR_THREADPOOL_MAXSIZE 20, no cookies,
                  retries or redirects, DOWNLOAD_TIMEOUT 15; and TLS sessions of 10,000
                  hosts (TLS_SESSION_CACHE_SIZE). Each can be overridden with -s
  --same-domain   stay on the start URLs' hosts (and their subdomains; with the
                  start URL's port, as Scrapy's allow_domains compares host:port)
  --jobdir DIR    JOBDIR: the crawl's state lives in DIR; run the same command again
                  to resume after Ctrl+C, a crash or kill -9 (nothing lost or doubled)
  --jobdir-salvage  resume past damaged journal records (JOBDIR_SALVAGE)
  --redis URL     share the crawl through Redis (redis://[:pass@]host:port/db, rediss://):
                  sets SCHEDULER, DUPEFILTER_CLASS, STATS_CLASS and the items pipeline to
                  the Redis ones (each can still be overridden with -s). Start any number
                  of `trawl crawl --redis ...` processes, on any machines: they make one
                  crawl. The URLs given are pushed once to the start key; workers read
                  start requests from it (a Redis-fed spider). They stop after being idle
                  MAX_IDLE_TIME_BEFORE_CLOSE seconds (-s; default 0: never).
  --redis-start-key KEY  the start-URL key (default NAME:start_urls); URLs are optional
  --name NAME     the spider's name (default \"crawl\"): it prefixes the Redis keys
";

const FETCH_HELP: &str = "\
Usage: trawl fetch URL [--headers] [--no-redirect] [-H 'Name: value']... [-X METHOD] [-d BODY]
                   [-s NAME=VALUE]...

Downloads one URL through the whole middleware stack and prints the body (with
--headers: the request and response headers instead). Headers, method and body given
here belong to this request only: a redirect to another host drops Authorization, and
-H 'Cookie: a=1' goes through the cookie jar as request cookies, so it is sent to this
host only. A failed download prints the error and exits 1.
";

const SERVE_HELP: &str = "\
Usage: trawl serve [--pages N] [--port P] [--tls]
       trawl serve --hosts N [--pages-per-host K] [--names] [--port P] [--tls]
                   [--urls-file FILE] [--hosts-file FILE]

Runs the fixture site server in the foreground on 127.0.0.1 (pages, quotes section,
robots.txt, sitemaps and the behaviour routes the tests use). Ctrl+C stops it.

With --hosts, the broad fixture instead: N sites on N loopback addresses (127.1.0.1,
127.1.0.2, ...; one port for all), each with its own robots.txt (disallowing /private/)
and K pages of one quote block each, linking within and across hosts. A polite crawl of
the start URLs fetches N x K pages.

  --pages N            generated pages (default 2000)
  --port P             port (default 0: any free port; the URL is printed)
  --tls                HTTPS with the embedded test certificate (localhost, 127.0.0.1,
                       *.fixture.test); with --hosts-file, the test CA is written beside
                       it as ca.pem (for -s DOWNLOAD_TLS_CA_FILE=...)
  --hosts N            serve the broad fixture with N sites (at most 65534)
  --pages-per-host K   pages per site, the root included (default 10)
  --names              links name hosts hNNNNN.fixture.test (resolve them with
                       -s DNS_RESOLVE=HOSTS_FILE); needed to verify certificates with --tls
  --urls-file FILE     write the start URLs (every host's root) there, one per line
  --hosts-file FILE    write the hosts' names and addresses there (/etc/hosts format)
";

/// Dispatches a parsed command line.
pub(super) fn run(args: Args) -> Result<i32, CliError> {
    if args.flag("help") {
        print!(
            "{}",
            match args.command.as_str() {
                "bench" => BENCH_HELP,
                "crawl" => CRAWL_HELP,
                "fetch" => FETCH_HELP,
                "serve" => SERVE_HELP,
                "shell" => super::shell::HELP,
                "new" => super::new::HELP,
                _ => HELP,
            }
        );
        return Ok(0);
    }
    match args.command.as_str() {
        "help" => {
            print!("{HELP}");
            Ok(0)
        }
        "version" => {
            println!("trawl {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        "bench" => bench(&args),
        "crawl" => crawl(&args),
        "fetch" => fetch(&args),
        "serve" => serve(&args),
        "shell" => super::shell::shell(&args),
        "new" => super::new::new_project(&args),
        "list" | "parse" | "check" => Err(CliError::Usage(format!(
            "`{}` works on a project's spiders: run it with your project's binary \
             (`trawl new NAME` makes one; then `cargo run -- {}`)",
            args.command, args.command
        ))),
        other => Err(CliError::Usage(format!("unknown command {other:?}"))),
    }
}

fn no_positional(args: &Args) -> Result<(), CliError> {
    match args.positional.first() {
        Some(p) => Err(CliError::Usage(format!(
            "trawl {} takes no argument {p:?}",
            args.command
        ))),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------- bench

fn bench(args: &Args) -> Result<i32, CliError> {
    no_positional(args)?;
    let pages: usize = args.number("pages")?.unwrap_or(100_000);
    let time: Option<f64> = args.number("time")?;
    let count: Option<u64> = args.number("count")?;
    if pages == 0 {
        return Err(CliError::Usage("--pages must be at least 1".into()));
    }
    logging(args, "INFO")?;
    let server = FixtureServer::start(FixtureOptions {
        pages,
        ..FixtureOptions::default()
    })
    .map_err(|e| CliError::Failed(format!("fixture server: {e}")))?;
    let start = server.url("/index.html");
    log::info!(
        "trawl bench: fixture site of {pages} pages at {}",
        server.base()
    );
    let mut settings = Settings::new();
    settings.set("LOGSTATS_INTERVAL", 1.0, Priority::Command);
    log_level_setting(args, "INFO", &mut settings);
    match (time, count) {
        (_, Some(n)) => {
            settings.set("CLOSESPIDER_PAGECOUNT", n, Priority::Command);
            settings.set(
                "CLOSESPIDER_TIMEOUT",
                time.unwrap_or(0.0),
                Priority::Command,
            );
        }
        (t, None) => settings.set("CLOSESPIDER_TIMEOUT", t.unwrap_or(10.0), Priority::Command),
    }
    apply_common(args, &mut settings)?;
    let crawler = run_crawl(
        Box::new(FixtureSpider::new(&start)),
        settings,
        Registry::with_builtins(),
        progress_wanted(args),
    )?;
    let stats = &crawler.stats;
    let pages_done = stats.get_int("response_received_count");
    let items = stats.get_int("item_scraped_count");
    let secs = stats
        .get_value("elapsed_time_seconds")
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0)
        .max(1e-9);
    let rss = peak_rss().map_or("unknown".to_owned(), |b| {
        format!("{:.1} MB", b as f64 / (1024.0 * 1024.0))
    });
    println!(
        "trawl bench: {pages_done} pages and {items} items in {secs:.2} s — {:.0} pages/min ({:.0} pages/s), {:.0} items/min, peak RSS {rss}",
        pages_done as f64 * 60.0 / secs,
        pages_done as f64 / secs,
        items as f64 * 60.0 / secs,
    );
    drop(server);
    Ok(0)
}

// ---------------------------------------------------------------- crawl

/// The generic page recorder behind `trawl crawl`.
struct Pages {
    name: String,
    start: Vec<String>,
    allowed: Vec<String>,
    links: LinkExtractor,
}

impl Pages {
    fn record(&self, response: &Response) -> CallbackResult {
        let title = response
            .css("title::text")
            .get()
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "));
        let links_out = if response.is_html() {
            self.links.extract_links(response).len()
        } else {
            0
        };
        let request = response.request();
        Ok(vec![Output::Item(
            Item::new()
                .with("url", response.url().as_str())
                .with("status", response.status())
                .with("title", title)
                .with("depth", request.meta().get_i64("depth").unwrap_or(0))
                .with("links_out", links_out)
                .with(
                    "referer",
                    request.headers().get_str("Referer").map(str::to_owned),
                ),
        )])
    }
}

impl Spider for Pages {
    fn name(&self) -> &str {
        &self.name
    }
    fn allowed_domains(&self) -> Vec<String> {
        self.allowed.clone()
    }
    fn start_urls(&self) -> Vec<String> {
        self.start.clone()
    }
    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        match name {
            "page" | "parse_start_url" | "parse" => self.record(response),
            other => Err(Failure::new(crate::crawl::spiders::UnknownCallback(
                other.to_owned(),
            ))),
        }
    }
}

fn crawl(args: &Args) -> Result<i32, CliError> {
    if args.flag("a") {
        return Err(CliError::Usage(
            "-a passes arguments to a project's spider: `trawl crawl` takes URLs".into(),
        ));
    }
    let redis = args.value("redis");
    if args.value("redis-start-key").is_some() && redis.is_none() {
        return Err(CliError::Usage(
            "--redis-start-key needs --redis URL".into(),
        ));
    }
    let mut start = args.positional.clone();
    if let Some(path) = args.value("urls-file") {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::Usage(format!("--urls-file {path}: {e}")))?;
        start.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_owned),
        );
    }
    if start.is_empty() && args.value("redis-start-key").is_none() {
        return Err(CliError::Usage("trawl crawl needs at least one URL".into()));
    }
    let same_domain = args.flag("same-domain");
    let mut hosts = Vec::new();
    let mut netlocs = Vec::new();
    for u in &start {
        let url = Url::parse(u).map_err(|e| CliError::Usage(format!("invalid URL {u:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(CliError::Usage(format!("not an http(s) URL: {u}")));
        }
        // The domains are kept only when they are used (10,000 start URLs of a broad
        // crawl would otherwise be copied twice more).
        if let Some(h) = url.host_str().filter(|_| same_domain) {
            hosts.push(h.to_owned());
            // Scrapy's `allow_domains` compares the netloc, port included.
            netlocs.push(h.to_owned());
            if let Some(port) = url.port() {
                netlocs.push(format!("{h}:{port}"));
            }
        }
    }
    let allow: Vec<&str> = args.all("allow").iter().map(String::as_str).collect();
    let deny: Vec<&str> = args.all("deny").iter().map(String::as_str).collect();
    let mut links = LinkExtractor::new()
        .allow(&allow)
        .map_err(|e| CliError::Usage(format!("--allow: {e}")))?
        .deny(&deny)
        .map_err(|e| CliError::Usage(format!("--deny: {e}")))?;
    if same_domain {
        links = links.allow_domains(netlocs);
    }
    let depth: Option<u32> = args.number("depth")?;
    logging(args, "INFO")?;
    let mut settings = Settings::new();
    log_level_setting(args, "INFO", &mut settings);
    // Every page gets a record, whatever its status.
    settings.set("HTTPERROR_ALLOW_ALL", true, Priority::Command);
    if let Some(d) = depth {
        settings.set("DEPTH_LIMIT", d, Priority::Cmdline);
    }
    if args.flag("broad") {
        for (name, value) in broad_crawl_settings() {
            settings.set(name, value, Priority::Command);
        }
    }
    if let Some(dir) = args.value("jobdir") {
        settings.set("JOBDIR", dir, Priority::Cmdline);
    }
    if args.flag("jobdir-salvage") {
        settings.set("JOBDIR_SALVAGE", true, Priority::Cmdline);
    }
    if let Some(url) = redis {
        crate::client::redis::RedisConfig::from_url(url)
            .map_err(|e| CliError::Usage(format!("--redis: {e}")))?;
        for (name, value) in crate::distributed::redis_settings(url) {
            settings.set(name, value, Priority::Command);
        }
        settings.set(
            "ITEM_PIPELINES",
            serde_json::json!({"trawl.RedisPipeline": 300}),
            Priority::Command,
        );
    }
    apply_common(args, &mut settings)?;
    let seeds = if redis.is_some() {
        start.clone()
    } else {
        Vec::new()
    };
    let pages = Pages {
        name: args.value("name").unwrap_or("crawl").to_owned(),
        start,
        allowed: if same_domain { hosts } else { Vec::new() },
        links: links.clone(),
    };
    let spider = CrawlSpider::new(pages, vec![Rule::new(links).callback("page").follow(true)]);
    let spider: Box<dyn crate::crawl::Spider> = if redis.is_some() {
        let mut s = crate::distributed::RedisSpider::new(Box::new(spider)).with_seeds(seeds);
        if let Some(k) = args.value("redis-start-key") {
            s = s.with_key(k);
        }
        Box::new(s)
    } else {
        Box::new(spider)
    };
    let mut registry = Registry::with_builtins();
    crate::distributed::register(&mut registry);
    let crawler = run_crawl(spider, settings, registry, progress_wanted(args))?;
    Ok(exit_code(&crawler))
}

/// `trawl crawl --broad`: the settings Scrapy's "Broad Crawls" guide recommends (at
/// command priority: `-s` still overrides each). Breadth-first order (`DEPTH_PRIORITY`
/// 1 with FIFO queues), the least busy download slot first, 100 requests at once, 20
/// DNS threads, no cookies, retries or redirects, a 15 s timeout; and (trawl's own) the
/// TLS sessions of 10,000 hosts.
pub fn broad_crawl_settings() -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    vec![
        (
            "SCHEDULER_PRIORITY_QUEUE",
            json!("trawl.DownloaderAwarePriorityQueue"),
        ),
        ("CONCURRENT_REQUESTS", json!(100)),
        ("REACTOR_THREADPOOL_MAXSIZE", json!(20)),
        ("COOKIES_ENABLED", json!(false)),
        ("RETRY_ENABLED", json!(false)),
        ("DOWNLOAD_TIMEOUT", json!(15)),
        ("REDIRECT_ENABLED", json!(false)),
        ("DEPTH_PRIORITY", json!(1)),
        ("SCHEDULER_DISK_QUEUE", json!("trawl.FifoDiskQueue")),
        ("SCHEDULER_MEMORY_QUEUE", json!("trawl.FifoMemoryQueue")),
        // trawl's own: the TLS sessions of as many hosts as the DNS cache holds names.
        ("TLS_SESSION_CACHE_SIZE", json!(10_000)),
        // trawl's own: a broad crawl revisits a host after its connection went idle
        // long ago, so idle connections are rarely reused; 1,024 idle TLS connections
        // held ~10 MB of buffers for ~2% of the pages at 10,000 hosts.
        ("DOWNLOAD_MAX_IDLE_CONNECTIONS", json!(256)),
    ]
}

// ---------------------------------------------------------------- fetch

fn fetch(args: &Args) -> Result<i32, CliError> {
    let url = match args.positional.as_slice() {
        [u] => u,
        [] => return Err(CliError::Usage("trawl fetch needs a URL".into())),
        _ => return Err(CliError::Usage("trawl fetch takes one URL".into())),
    };
    let mut request =
        Request::get(url).map_err(|e| CliError::Usage(format!("invalid URL {url:?}: {e}")))?;
    for h in args.all("H") {
        let Some((name, value)) = h.split_once(':') else {
            return Err(CliError::Usage(format!(
                "-H expects 'Name: value', got {h:?}"
            )));
        };
        if name.trim().eq_ignore_ascii_case("cookie") {
            // Through the cookie jar, so the cookies go to this host only (a redirect
            // elsewhere does not carry them), as request cookies do.
            for pair in value.split(';') {
                if let Some((n, v)) = pair.split_once('=') {
                    request = request.with_cookie(n.trim(), v.trim());
                }
            }
        } else {
            request = request.with_header(name.trim(), value.trim());
        }
    }
    if let Some(body) = args.value("d") {
        request = request
            .with_method("POST")
            .with_body(body.as_bytes().to_vec());
        if !request.headers().contains("Content-Type") {
            request = request.with_header("Content-Type", "application/x-www-form-urlencoded");
        }
    }
    if let Some(m) = args.value("X") {
        if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(CliError::Usage(format!(
                "-X expects a method name, got {m:?}"
            )));
        }
        request.set_method(Method::new(m));
    }
    request = request.with_dont_filter(true).with_errback("fetch_failed");
    // As `scrapy fetch`: every status is printed, except that 3xx are followed unless
    // --no-redirect (Scrapy: handle_httpstatus_list = SequenceExclude(range(300, 400))).
    if args.flag("no-redirect") {
        request = request
            .with_meta(keys::HANDLE_HTTPSTATUS_ALL, true)
            .with_meta(keys::DONT_REDIRECT, true);
    } else {
        let all_but_3xx: Vec<u16> = (100..600).filter(|c| !(300..400).contains(c)).collect();
        request = request.with_meta(keys::HANDLE_HTTPSTATUS_LIST, all_but_3xx);
    }
    logging(args, "CRITICAL")?;
    match fetch_response(args, request, "CRITICAL")? {
        Some(Ok(resp)) => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let written = if args.flag("headers") {
                let req = resp.request();
                let mut text = String::new();
                text.push_str(&format!("> {} {}\n", req.method().as_str(), req.url()));
                for (n, v) in req.headers().iter() {
                    text.push_str(&format!(
                        "> {}: {}\n",
                        String::from_utf8_lossy(n),
                        String::from_utf8_lossy(v)
                    ));
                }
                text.push_str(">\n");
                text.push_str(&format!(
                    "< {} {}\n",
                    resp.status(),
                    crate::proto::http1::reason_phrase(resp.status()).unwrap_or("")
                ));
                for (n, v) in resp.headers().iter() {
                    text.push_str(&format!(
                        "< {}: {}\n",
                        String::from_utf8_lossy(n),
                        String::from_utf8_lossy(v)
                    ));
                }
                out.write_all(text.as_bytes())
            } else {
                out.write_all(resp.body())
            };
            written
                .and_then(|()| out.flush())
                .map_err(|e| CliError::Failed(format!("writing the output: {e}")))?;
            Ok(0)
        }
        Some(Err(msg)) => Err(CliError::Failed(format!("fetch {url} failed: {msg}"))),
        None => Err(CliError::Failed(format!(
            "fetch {url} failed: the request was dropped (offsite, robots.txt, or a filter)"
        ))),
    }
}

// ---------------------------------------------------------------- serve

fn serve(args: &Args) -> Result<i32, CliError> {
    no_positional(args)?;
    if args.value("hosts").is_some() {
        return serve_broad(args);
    }
    for broad_only in ["pages-per-host", "names", "urls-file", "hosts-file"] {
        if args.flag(broad_only) || args.value(broad_only).is_some() {
            return Err(CliError::Usage(format!("--{broad_only} needs --hosts")));
        }
    }
    let pages: usize = args.number("pages")?.unwrap_or(2000);
    let port: u16 = args.number("port")?.unwrap_or(0);
    logging(args, "INFO")?;
    let reactor = Reactor::new().map_err(|e| CliError::Failed(e.to_string()))?;
    let handle = reactor.handle();
    let options = FixtureOptions {
        pages,
        tls: args.flag("tls"),
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        ..FixtureOptions::default()
    };
    let served = crate::testing::fixture::serve(&handle, &options, Arc::default())
        .map_err(|e| CliError::Failed(format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
    let scheme = if options.tls { "https" } else { "http" };
    println!(
        "trawl serve: {scheme}://{}/index.html ({pages} pages); Ctrl+C stops",
        served.local_addr()
    );
    serve_until_stopped(reactor, &served)
}

/// Runs `reactor` until Ctrl+C (or SIGTERM), then closes what it served.
fn serve_until_stopped(
    mut reactor: Reactor,
    served: &crate::testing::fixture::Served,
) -> Result<i32, CliError> {
    let handle = reactor.handle();
    let h = handle.clone();
    let _signals = crate::crawl::ShutdownSignals::install(
        &handle,
        move || {
            log::info!("Received SIGINT, stopping the server");
            h.stop();
        },
        || {},
    );
    let r = reactor.run();
    served.close();
    r.map_err(|e| CliError::Failed(e.to_string()))?;
    Ok(0)
}

/// `trawl serve --hosts N`: the broad fixture in the foreground.
fn serve_broad(args: &Args) -> Result<i32, CliError> {
    use crate::testing::broad::{BroadOptions, MAX_HOSTS};
    let hosts: usize = args.number("hosts")?.unwrap_or(1000);
    if hosts == 0 || hosts > MAX_HOSTS {
        return Err(CliError::Usage(format!(
            "--hosts must be 1 to {MAX_HOSTS}, not {hosts}"
        )));
    }
    let options = BroadOptions {
        hosts,
        pages_per_host: args.number("pages-per-host")?.unwrap_or(10).max(1),
        tls: args.flag("tls"),
        names: args.flag("names"),
        port: args.number("port")?.unwrap_or(0),
    };
    logging(args, "INFO")?;
    let reactor = Reactor::new().map_err(|e| CliError::Failed(e.to_string()))?;
    let handle = reactor.handle();
    let served = crate::testing::fixture::serve_broad(&handle, &options, Arc::default())
        .map_err(|e| CliError::Failed(format!("the broad fixture: {e}")))?;
    let Some(site) = served.broad_site() else {
        return Err(CliError::Failed("the broad fixture has no site".into()));
    };
    let write = |flag: &str, text: String| -> Result<(), CliError> {
        if let Some(path) = args.value(flag) {
            std::fs::write(path, text)
                .map_err(|e| CliError::Failed(format!("--{flag} {path}: {e}")))?;
        }
        Ok(())
    };
    write("urls-file", site.start_urls())?;
    write("hosts-file", site.hosts_file())?;
    if options.tls
        && let Some(path) = args.value("hosts-file")
    {
        let ca = std::path::Path::new(path).with_file_name("ca.pem");
        std::fs::write(&ca, crate::testing::fixture::TEST_CA_PEM)
            .map_err(|e| CliError::Failed(format!("{}: {e}", ca.display())))?;
    }
    println!(
        "trawl serve: {} hosts x {} pages, {} ... {}; Ctrl+C stops",
        site.hosts(),
        site.pages_per_host(),
        site.page_url(0, 0),
        site.page_url(site.hosts() - 1, 0)
    );
    serve_until_stopped(reactor, &served)
}
