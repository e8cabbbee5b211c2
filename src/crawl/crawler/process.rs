//! Several crawls in one process: Scrapy's [`CrawlerRunner`] (crawls on a reactor the
//! caller owns, each `crawl` a Deferred that fires when that crawl ends; `join`,
//! `stop`) and [`CrawlerProcess`] (owns the reactor, runs until every crawl is done,
//! Ctrl+C as the `trawl` command handles it). The crawls share the thread and nothing
//! else: each [`Crawler`] has its own settings, stats, signals, scheduler, downloader,
//! feeds and logging scope, so one crawl's failure leaves the others running.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;

use super::shutdown::ShutdownSignals;
use super::{Crawler, Registry};
use crate::crawl::base::settings::Settings;
use crate::crawl::spiders::spider::Spider;
use crate::defer::{Deferred, Failure};
use crate::reactor::{Reactor, ReactorHandle};

/// Runs crawls on a reactor the caller runs (Scrapy's `CrawlerRunner`).
///
/// ```no_run
/// # use trawl::crawl::{CrawlerRunner, Settings, Spider};
/// # fn spiders() -> Vec<Box<dyn Spider>> { Vec::new() }
/// let mut reactor = trawl::reactor::Reactor::new().unwrap();
/// let runner = CrawlerRunner::new(&reactor.handle(), Settings::new());
/// for spider in spiders() {
///     runner.crawl(spider); // all at once, on this thread
/// }
/// reactor.run_until(&runner.join()).unwrap();
/// ```
pub struct CrawlerRunner {
    reactor: ReactorHandle,
    settings: Settings,
    registry: Registry,
    /// The crawls running now.
    crawlers: RefCell<Vec<Rc<Crawler>>>,
    /// `join` Deferreds, fired when no crawl is running.
    waiters: RefCell<Vec<Deferred<()>>>,
    bootstrap_failed: Cell<bool>,
    me: std::rc::Weak<CrawlerRunner>,
}

impl CrawlerRunner {
    /// A runner on `reactor` with `settings` for every crawl and the built-in components.
    pub fn new(reactor: &ReactorHandle, settings: Settings) -> Rc<Self> {
        Self::with_registry(reactor, settings, Registry::with_builtins())
    }

    /// A runner whose crawls build their components from `registry` (your middlewares,
    /// pipelines, extensions).
    pub fn with_registry(
        reactor: &ReactorHandle,
        settings: Settings,
        registry: Registry,
    ) -> Rc<Self> {
        Rc::new_cyclic(|me| Self {
            reactor: reactor.clone(),
            settings,
            registry,
            crawlers: RefCell::new(Vec::new()),
            waiters: RefCell::new(Vec::new()),
            bootstrap_failed: Cell::new(false),
            me: me.clone(),
        })
    }

    /// The settings every crawl starts from.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// A crawler for `spider` with the runner's settings, and `extra` over them (each at
    /// its own priority), not started (Scrapy's `create_crawler`).
    ///
    /// # Errors
    ///
    /// An invalid setting or a component that cannot be built.
    pub fn create_crawler(
        &self,
        spider: Box<dyn Spider>,
        extra: Option<&Settings>,
    ) -> Result<Rc<Crawler>, Failure> {
        let mut settings = self.settings.clone();
        if let Some(extra) = extra {
            for (name, value, priority) in extra.iter_sorted() {
                settings.set(name, value.clone(), priority);
            }
        }
        Crawler::new(
            spider,
            settings,
            self.reactor.clock().clone(),
            Some(self.reactor.clone()),
            self.registry.clone(),
        )
    }

    /// Starts a crawl of `spider` with the runner's settings; the Deferred fires with
    /// its crawler (stats, finish reason) when it ends, or fails if it could not start.
    pub fn crawl(&self, spider: Box<dyn Spider>) -> Deferred<Rc<Crawler>> {
        self.crawl_with(spider, None)
    }

    /// [`crawl`](Self::crawl) with settings of this crawl's own over the runner's.
    pub fn crawl_with(
        &self,
        spider: Box<dyn Spider>,
        settings: Option<&Settings>,
    ) -> Deferred<Rc<Crawler>> {
        match self.create_crawler(spider, settings) {
            Ok(crawler) => self.crawl_crawler(&crawler),
            Err(f) => {
                self.bootstrap_failed.set(true);
                crate::defer::fail(f)
            }
        }
    }

    /// Starts a crawler made with [`create_crawler`](Self::create_crawler).
    pub fn crawl_crawler(&self, crawler: &Rc<Crawler>) -> Deferred<Rc<Crawler>> {
        self.crawlers.borrow_mut().push(crawler.clone());
        let me = self.me.clone();
        let c = crawler.clone();
        crawler.crawl().then(move |r| {
            if let Some(runner) = me.upgrade() {
                runner.finished(&c, r.is_err());
            }
            r.map(|()| c)
        })
    }

    fn finished(&self, crawler: &Rc<Crawler>, failed: bool) {
        if failed {
            // The crawl's Deferred fails only when the engine could not be built or
            // the spider not opened.
            self.bootstrap_failed.set(true);
        }
        self.crawlers
            .borrow_mut()
            .retain(|c| !Rc::ptr_eq(c, crawler));
        // Checked on the next turn: a callback on the crawl's Deferred (it runs after
        // this) may start the next crawl, which `join` then waits for too.
        let me = self.me.clone();
        self.reactor.call_later(0.0, move || {
            if let Some(runner) = me.upgrade() {
                runner.release_waiters();
            }
        });
    }

    fn release_waiters(&self) {
        if !self.crawlers.borrow().is_empty() {
            return;
        }
        let waiters = std::mem::take(&mut *self.waiters.borrow_mut());
        for w in waiters {
            let _ = w.callback(());
        }
    }

    /// The crawls running now.
    pub fn crawlers(&self) -> Vec<Rc<Crawler>> {
        self.crawlers.borrow().clone()
    }

    /// Fires when no crawl is running — crawls started meanwhile included (Scrapy's
    /// `join`).
    pub fn join(&self) -> Deferred<()> {
        if self.crawlers.borrow().is_empty() {
            return crate::defer::succeed(());
        }
        let d = Deferred::new();
        self.waiters.borrow_mut().push(d.clone());
        d
    }

    /// Stops every running crawl gracefully (each closes with `shutdown`); fires when
    /// they have all ended.
    pub fn stop(&self) -> Deferred<()> {
        for crawler in self.crawlers() {
            crawler.stop();
        }
        self.join()
    }

    /// Whether a crawl failed to start (Scrapy's `bootstrap_failed`).
    pub fn bootstrap_failed(&self) -> bool {
        self.bootstrap_failed.get()
    }

    /// The reactor the crawls run on.
    pub fn reactor(&self) -> &ReactorHandle {
        &self.reactor
    }

    /// Ctrl+C for these crawls (the `trawl` command's): the first SIGINT/SIGTERM stops
    /// them all gracefully, the second flushes and closes their feeds and exits. Held
    /// while they run; dropping it uninstalls it.
    pub fn install_shutdown_signals(self: &Rc<Self>) -> ShutdownSignals {
        let (graceful, forced) = (Rc::downgrade(self), Rc::downgrade(self));
        ShutdownSignals::install(
            &self.reactor,
            move || {
                if let Some(r) = graceful.upgrade() {
                    log::info!("Received SIGINT, shutting down gracefully. Send again to force");
                    let _ = r.stop();
                }
            },
            move || {
                // In-flight requests are abandoned; what was scraped is kept.
                if let Some(r) = forced.upgrade() {
                    for c in r.crawlers() {
                        c.force_close_feeds();
                    }
                }
            },
        )
    }
}

impl fmt::Debug for CrawlerRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrawlerRunner")
            .field("running", &self.crawlers.borrow().len())
            .finish_non_exhaustive()
    }
}

/// Owns a reactor and runs crawls on it until every one is done (Scrapy's
/// `CrawlerProcess`).
///
/// ```no_run
/// # use trawl::crawl::{CrawlerProcess, Settings};
/// # use trawl::testing::spiders::FixtureSpider;
/// let mut process = CrawlerProcess::new(Settings::new()).unwrap();
/// process.crawl(Box::new(FixtureSpider::new("http://books.example/")));
/// process.crawl(Box::new(FixtureSpider::new("http://quotes.example/")));
/// process.start().unwrap(); // both at once; returns when both have closed
/// ```
pub struct CrawlerProcess {
    reactor: Reactor,
    runner: Rc<CrawlerRunner>,
    install_signal_handlers: bool,
}

impl CrawlerProcess {
    /// A process with its own reactor, `settings` for every crawl and the built-in
    /// components.
    ///
    /// # Errors
    ///
    /// The reactor could not be created.
    pub fn new(settings: Settings) -> Result<Self, Failure> {
        Self::with_registry(settings, Registry::with_builtins())
    }

    /// [`new`](Self::new) with components of your own.
    ///
    /// # Errors
    ///
    /// The reactor could not be created.
    pub fn with_registry(settings: Settings, registry: Registry) -> Result<Self, Failure> {
        let reactor = Reactor::new().map_err(Failure::new)?;
        let runner = CrawlerRunner::with_registry(&reactor.handle(), settings, registry);
        Ok(Self {
            reactor,
            runner,
            install_signal_handlers: true,
        })
    }

    /// Whether [`start`](Self::start) handles SIGINT/SIGTERM (default: yes): the first
    /// stops every crawl gracefully, the second flushes the feeds and exits, as the
    /// `trawl` command does.
    pub fn install_signal_handlers(&mut self, yes: bool) -> &mut Self {
        self.install_signal_handlers = yes;
        self
    }

    /// The runner (its crawls, `join`, `stop`).
    pub fn runner(&self) -> &Rc<CrawlerRunner> {
        &self.runner
    }

    /// The reactor's handle (to schedule your own work beside the crawls).
    pub fn handle(&self) -> ReactorHandle {
        self.reactor.handle()
    }

    /// Starts a crawl (it runs once [`start`](Self::start) runs the reactor).
    pub fn crawl(&self, spider: Box<dyn Spider>) -> Deferred<Rc<Crawler>> {
        self.runner.crawl(spider)
    }

    /// [`crawl`](Self::crawl) with settings of this crawl's own.
    pub fn crawl_with(
        &self,
        spider: Box<dyn Spider>,
        settings: Option<&Settings>,
    ) -> Deferred<Rc<Crawler>> {
        self.runner.crawl_with(spider, settings)
    }

    /// Runs the reactor until every crawl — those started before and while it runs —
    /// has ended.
    ///
    /// # Errors
    ///
    /// The reactor failed.
    pub fn start(&mut self) -> Result<(), Failure> {
        let _signals = self
            .install_signal_handlers
            .then(|| self.runner.install_shutdown_signals());
        let done = self.runner.join();
        self.reactor.run_until(&done).map_err(Failure::new)?;
        Ok(())
    }
}

impl fmt::Debug for CrawlerProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrawlerProcess")
            .field("runner", &self.runner)
            .finish_non_exhaustive()
    }
}
