//! The [`Crawler`]: the wiring of one crawl — it owns the spider, the engine and the
//! extensions, and builds every component from settings by name through the
//! [`Registry`], the way Scrapy's `load_object` + `from_crawler` does. What components
//! receive is the shared [`CrawlContext`] (settings, signals, stats, clock, reactor, an
//! engine handle); a `Crawler` dereferences to it.
//!
//! Components are named by string (`"trawl.RetryMiddleware"`, or `"scrapy.…"` paths for
//! the built-ins, or any name a user registers) and ordered by the `*_BASE` + user order
//! maps. A factory returning [`NotConfigured`] disables its component with a debug line;
//! any other error stops the crawl before it starts, naming the component.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::{Rc, Weak};

use super::context::CrawlContext;
use super::downloader::handlers::{DataUriHandler, DownloadHandler, FileHandler, HttpHandler};
use super::downloader::middleware::DownloaderMiddleware;
use super::dupefilter::{BaseDupeFilter, DupeFilter, RfpDupeFilter};
use super::engine::ExecutionEngine;
use super::errors::NotConfigured;
use super::pipeline::ItemPipeline;
use super::scheduler::{Scheduler, SchedulerContext};
use super::settings::{Priority, Settings};
use super::spider::Spider;
use super::spidermw::SpiderMiddleware;
use super::stats::{DummyStatsCollector, MemoryStatsCollector, StatsCollector};
use crate::defer::{Deferred, Failure};
use crate::reactor::{Clock, ReactorHandle};

/// Builds a downloader middleware.
pub type DownloaderMwFactory =
    Rc<dyn Fn(&Rc<CrawlContext>) -> Result<Rc<dyn DownloaderMiddleware>, Failure>>;
/// Builds a spider middleware.
pub type SpiderMwFactory =
    Rc<dyn Fn(&Rc<CrawlContext>) -> Result<Rc<dyn SpiderMiddleware>, Failure>>;
/// Builds an item pipeline.
pub type PipelineFactory = Rc<dyn Fn(&Rc<CrawlContext>) -> Result<Rc<dyn ItemPipeline>, Failure>>;
/// Builds an extension (it connects to signals; the crawler keeps it alive).
pub type ExtensionFactory = Rc<dyn Fn(&Rc<CrawlContext>) -> Result<Rc<dyn Any>, Failure>>;
/// Builds the scheduler.
pub type SchedulerFactory =
    Rc<dyn Fn(&Rc<CrawlContext>, SchedulerContext) -> Result<Box<dyn Scheduler>, Failure>>;
/// Builds a dupefilter (`DUPEFILTER_CLASS`).
pub type DupeFilterFactory = Rc<dyn Fn(&Rc<CrawlContext>) -> Result<Box<dyn DupeFilter>, Failure>>;
/// Builds a download handler for a URL scheme.
pub type HandlerFactory = Rc<dyn Fn(&Rc<CrawlContext>) -> Result<Rc<dyn DownloadHandler>, Failure>>;
/// Builds the stats collector (`STATS_CLASS`), before the context exists.
pub type StatsFactory = Rc<dyn Fn(&StatsSetup<'_>) -> Result<Rc<dyn StatsCollector>, Failure>>;

/// What a stats collector factory gets (the context is built around the collector).
#[derive(Debug)]
pub struct StatsSetup<'a> {
    /// The frozen settings.
    pub settings: &'a Settings,
    /// The crawl's clock.
    pub clock: &'a Clock,
    /// The reactor, when the crawl does real I/O.
    pub reactor: Option<&'a ReactorHandle>,
    /// The spider's name.
    pub spider_name: &'a str,
}

/// Component constructors by name.
#[derive(Clone, Default)]
pub struct Registry {
    downloader_mws: HashMap<String, DownloaderMwFactory>,
    spider_mws: HashMap<String, SpiderMwFactory>,
    pipelines: HashMap<String, PipelineFactory>,
    extensions: HashMap<String, ExtensionFactory>,
    schedulers: HashMap<String, SchedulerFactory>,
    dupefilters: HashMap<String, DupeFilterFactory>,
    stats: HashMap<String, StatsFactory>,
    handlers: HashMap<String, HandlerFactory>,
}

impl Registry {
    /// The built-in components.
    pub fn with_builtins() -> Self {
        let mut r = Self::default();
        super::middlewares::register(&mut r);
        super::extensions::register(&mut r);
        r.register_scheduler("trawl.Scheduler", |c, ctx| {
            Ok(
                Box::new(super::scheduler::DefaultScheduler::from_context(c, ctx)?)
                    as Box<dyn Scheduler>,
            )
        });
        r.register_dupefilter("trawl.RFPDupeFilter", |c| {
            Ok(
                Box::new(RfpDupeFilter::from_settings(&c.settings)?.with_job(c.job().cloned()))
                    as Box<dyn DupeFilter>,
            )
        });
        r.register_dupefilter("trawl.BloomDupeFilter", |c| {
            Ok(
                Box::new(super::dupefilter::BloomDupeFilter::from_context(c)?)
                    as Box<dyn DupeFilter>,
            )
        });
        r.register_dupefilter("trawl.BaseDupeFilter", |_| {
            Ok(Box::new(BaseDupeFilter) as Box<dyn DupeFilter>)
        });
        r.register_stats("trawl.MemoryStatsCollector", |_| {
            Ok(Rc::new(MemoryStatsCollector::new()) as Rc<dyn StatsCollector>)
        });
        r.register_stats("trawl.DummyStatsCollector", |_| {
            Ok(Rc::new(DummyStatsCollector) as Rc<dyn StatsCollector>)
        });
        r.register_handler("trawl.HTTPDownloadHandler", |c| {
            Ok(Rc::new(HttpHandler::from_crawler(c)?) as Rc<dyn DownloadHandler>)
        });
        r.register_handler("trawl.DataURIDownloadHandler", |_| {
            Ok(Rc::new(DataUriHandler) as Rc<dyn DownloadHandler>)
        });
        r.register_handler("trawl.FileDownloadHandler", |_| {
            Ok(Rc::new(FileHandler) as Rc<dyn DownloadHandler>)
        });
        r
    }

    /// Registers a downloader middleware under `name`.
    pub fn register_downloader_middleware<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&Rc<CrawlContext>) -> Result<Rc<dyn DownloaderMiddleware>, Failure> + 'static,
    {
        self.downloader_mws.insert(name.to_owned(), Rc::new(f));
    }

    /// Registers a spider middleware under `name`.
    pub fn register_spider_middleware<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&Rc<CrawlContext>) -> Result<Rc<dyn SpiderMiddleware>, Failure> + 'static,
    {
        self.spider_mws.insert(name.to_owned(), Rc::new(f));
    }

    /// Registers an item pipeline under `name`.
    pub fn register_pipeline<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&Rc<CrawlContext>) -> Result<Rc<dyn ItemPipeline>, Failure> + 'static,
    {
        self.pipelines.insert(name.to_owned(), Rc::new(f));
    }

    /// Registers an extension under `name`.
    pub fn register_extension<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&Rc<CrawlContext>) -> Result<Rc<dyn Any>, Failure> + 'static,
    {
        self.extensions.insert(name.to_owned(), Rc::new(f));
    }

    /// Registers a scheduler under `name` (select it with `SCHEDULER`).
    pub fn register_scheduler<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&Rc<CrawlContext>, SchedulerContext) -> Result<Box<dyn Scheduler>, Failure> + 'static,
    {
        self.schedulers.insert(name.to_owned(), Rc::new(f));
    }

    /// Registers a dupefilter under `name` (select it with `DUPEFILTER_CLASS`).
    pub fn register_dupefilter<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&Rc<CrawlContext>) -> Result<Box<dyn DupeFilter>, Failure> + 'static,
    {
        self.dupefilters.insert(name.to_owned(), Rc::new(f));
    }

    /// Registers a stats collector under `name` (select it with `STATS_CLASS`).
    pub fn register_stats<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&StatsSetup<'_>) -> Result<Rc<dyn StatsCollector>, Failure> + 'static,
    {
        self.stats.insert(name.to_owned(), Rc::new(f));
    }

    /// Registers a download handler under `name` (map schemes to it with
    /// `DOWNLOAD_HANDLERS`).
    pub fn register_handler<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&Rc<CrawlContext>) -> Result<Rc<dyn DownloadHandler>, Failure> + 'static,
    {
        self.handlers.insert(name.to_owned(), Rc::new(f));
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("downloader_mws", &self.downloader_mws.len())
            .field("spider_mws", &self.spider_mws.len())
            .field("pipelines", &self.pipelines.len())
            .field("extensions", &self.extensions.len())
            .finish()
    }
}

/// A component could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentError {
    /// The component's name.
    pub name: String,
    /// Why.
    pub reason: String,
}

impl fmt::Display for ComponentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot build component {}: {}", self.name, self.reason)
    }
}

impl std::error::Error for ComponentError {}

/// The spider, shared by the engine and the scraper.
pub type SpiderCell = Rc<RefCell<Box<dyn Spider>>>;

/// One crawl's wiring: Scrapy's `Crawler`. It dereferences to its [`CrawlContext`].
pub struct Crawler {
    ctx: Rc<CrawlContext>,
    registry: Registry,
    spider: SpiderCell,
    engine: RefCell<Option<Rc<ExecutionEngine>>>,
    extensions: RefCell<Vec<(String, Rc<dyn Any>)>>,
    me: Weak<Crawler>,
}

impl std::ops::Deref for Crawler {
    type Target = CrawlContext;

    fn deref(&self) -> &CrawlContext {
        &self.ctx
    }
}

impl Crawler {
    /// Sets up a crawl of `spider`: its `custom_settings` are applied at spider
    /// priority, the settings frozen, the stats collector and the extensions built, the
    /// spider given the context. `reactor` is needed by the HTTP handler; tests with a
    /// scripted handler pass `None` and a manual clock.
    ///
    /// # Errors
    ///
    /// A setting is invalid or a component cannot be built.
    pub fn new(
        spider: Box<dyn Spider>,
        mut settings: Settings,
        clock: Clock,
        reactor: Option<ReactorHandle>,
        registry: Registry,
    ) -> Result<Rc<Self>, Failure> {
        for (name, value) in spider.custom_settings() {
            settings.set(&name, value, Priority::Spider);
        }
        settings.freeze();
        // LOG_LEVEL / LOG_ENABLED (spider's custom_settings and -s included) take effect
        // when trawl manages the logger (the `trawl` command).
        super::logging::apply_settings(&settings).map_err(Failure::new)?;
        log::info!(
            "trawl {} started (bot: {})",
            env!("CARGO_PKG_VERSION"),
            settings.get_str("BOT_NAME")?.unwrap_or_default()
        );
        let overridden = settings.overridden();
        if !overridden.is_empty() {
            let lines: Vec<String> = overridden
                .iter()
                .map(|(name, value)| format!("{name}: {value}"))
                .collect();
            log::info!("Overridden settings:\n{}", lines.join("\n"));
        }
        let mut spider = spider;
        spider.settings_ready(&settings);
        let spider_name = spider.name().to_owned();
        let allowed_domains = spider.allowed_domains();
        let stats_name = settings.get_str("STATS_CLASS")?.unwrap_or_default();
        let stats_factory = registry
            .stats
            .get(&super::settings::normalize_component(&stats_name))
            .cloned()
            .ok_or_else(|| {
                Failure::new(ComponentError {
                    name: stats_name.clone(),
                    reason: "no stats collector is registered under this name".into(),
                })
            })?;
        let stats = stats_factory(&StatsSetup {
            settings: &settings,
            clock: &clock,
            reactor: reactor.as_ref(),
            spider_name: &spider_name,
        })?;
        let job = super::jobdir::Job::from_settings(&settings, &spider_name, stats.clone())?;
        let ctx = Rc::new(CrawlContext::new(
            settings,
            stats,
            clock,
            reactor,
            spider_name,
            allowed_domains,
            job,
        ));
        ctx.set_spider_handle_httpstatus_list(spider.handle_httpstatus_list());
        spider.set_context(&ctx);
        let crawler = Rc::new_cyclic(|me| Self {
            ctx,
            registry,
            spider: Rc::new(RefCell::new(spider)),
            engine: RefCell::new(None),
            extensions: RefCell::new(Vec::new()),
            me: me.clone(),
        });
        let mut extensions = Vec::new();
        for (name, _order) in crawler.settings.component_list("EXTENSIONS")? {
            let Some(factory) = crawler.registry.extensions.get(&name).cloned() else {
                return Err(Failure::new(ComponentError {
                    name,
                    reason: "no extension is registered under this name".into(),
                }));
            };
            match factory(&crawler.ctx) {
                Ok(ext) => extensions.push((name, ext)),
                Err(f) if f.check::<NotConfigured>() => {
                    log::debug!("Extension {name} not configured: {f}")
                }
                Err(f) => {
                    return Err(Failure::new(ComponentError {
                        name,
                        reason: f.to_string(),
                    }));
                }
            }
        }
        log::info!(
            "Enabled extensions:\n{}",
            extensions
                .iter()
                .map(|(n, _)| format!("  {n}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        *crawler.extensions.borrow_mut() = extensions;
        Ok(crawler)
    }

    /// This crawler as an `Rc`.
    pub fn rc(&self) -> Option<Rc<Crawler>> {
        self.me.upgrade()
    }

    /// The context components share.
    pub fn context(&self) -> &Rc<CrawlContext> {
        &self.ctx
    }

    /// The spider.
    pub fn spider(&self) -> &SpiderCell {
        &self.spider
    }

    /// The engine, once created.
    pub fn engine(&self) -> Option<Rc<ExecutionEngine>> {
        self.engine.borrow().clone()
    }

    /// The component registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// A built extension by name (to inspect it in tests).
    pub fn extension(&self, name: &str) -> Option<Rc<dyn Any>> {
        self.extensions
            .borrow()
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.clone())
    }

    /// Builds the components named in an order map with `lookup`.
    pub(crate) fn build_components<T: ?Sized>(
        self: &Rc<Self>,
        setting: &str,
        kind: &str,
        lookup: impl Fn(
            &Registry,
            &str,
        ) -> Option<Rc<dyn Fn(&Rc<CrawlContext>) -> Result<Rc<T>, Failure>>>,
    ) -> Result<Vec<(String, Rc<T>)>, Failure> {
        let mut out = Vec::new();
        for (name, _order) in self.settings.component_list(setting)? {
            let Some(factory) = lookup(&self.registry, &name) else {
                return Err(Failure::new(ComponentError {
                    name,
                    reason: format!("no {kind} is registered under this name"),
                }));
            };
            match factory(&self.ctx) {
                Ok(c) => out.push((name, c)),
                Err(f) if f.check::<NotConfigured>() => {
                    log::debug!("{kind} {name} not configured: {f}")
                }
                Err(f) => {
                    return Err(Failure::new(ComponentError {
                        name,
                        reason: f.to_string(),
                    }));
                }
            }
        }
        log::info!(
            "Enabled {kind}s:\n{}",
            out.iter()
                .map(|(n, _)| format!("  {n}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        Ok(out)
    }

    pub(crate) fn downloader_mw_factory(r: &Registry, name: &str) -> Option<DownloaderMwFactory> {
        r.downloader_mws.get(name).cloned()
    }

    pub(crate) fn spider_mw_factory(r: &Registry, name: &str) -> Option<SpiderMwFactory> {
        r.spider_mws.get(name).cloned()
    }

    pub(crate) fn pipeline_factory(r: &Registry, name: &str) -> Option<PipelineFactory> {
        r.pipelines.get(name).cloned()
    }

    pub(crate) fn handler_factory(&self, name: &str) -> Option<HandlerFactory> {
        self.registry
            .handlers
            .get(&super::settings::normalize_component(name))
            .cloned()
    }

    pub(crate) fn scheduler_factory(&self, name: &str) -> Option<SchedulerFactory> {
        self.registry
            .schedulers
            .get(&super::settings::normalize_component(name))
            .cloned()
    }

    /// Builds the dupefilter named by `DUPEFILTER_CLASS`.
    ///
    /// # Errors
    ///
    /// No dupefilter of that name, or it cannot be built.
    pub fn build_dupefilter(&self) -> Result<Box<dyn DupeFilter>, Failure> {
        let name = self
            .settings
            .get_str("DUPEFILTER_CLASS")?
            .unwrap_or_default();
        let factory = self
            .registry
            .dupefilters
            .get(&super::settings::normalize_component(&name))
            .cloned()
            .ok_or_else(|| {
                Failure::new(ComponentError {
                    name: name.clone(),
                    reason: "no dupefilter is registered under this name".into(),
                })
            })?;
        factory(&self.ctx)
    }

    /// Runs the crawl: builds the engine, opens the spider and starts. The Deferred
    /// fires when the engine has stopped (the spider closed).
    pub fn crawl(self: &Rc<Self>) -> Deferred<()> {
        let engine = match ExecutionEngine::new(self) {
            Ok(e) => e,
            Err(f) => return crate::defer::fail(f),
        };
        *self.engine.borrow_mut() = Some(engine.clone());
        let me = self.clone();
        let e = engine.clone();
        let done: Deferred<()> = engine.open_spider(true).then(move |r| match r {
            Ok(()) => crate::defer::Step::Wait(e.start()),
            Err(f) => crate::defer::Step::Done(Err(f)),
        });
        done.add_both(move |r| {
            // Break the crawler <-> engine cycle.
            me.engine.borrow_mut().take();
            me.ctx.engine_handle().set(None);
            r
        });
        done
    }

    /// Stops the crawl gracefully (first Ctrl+C): closes the spider with `shutdown`,
    /// finishing what is in progress.
    pub fn stop(&self) {
        if let Some(engine) = self.engine() {
            engine.stop();
        }
    }
}

impl fmt::Debug for Crawler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Crawler")
            .field("spider", &self.spider_name())
            .field("settings", &self.settings)
            .finish()
    }
}
