//! The [`Registry`]: component constructors by name, and the building of the
//! components a crawl's settings name, the way Scrapy's `load_object` +
//! `build_from_crawler` does.
//!
//! Components are named by string (`"trawl.RetryMiddleware"`, or `"scrapy.…"` paths for
//! the built-ins, or any name a user registers) and ordered by the `*_BASE` + user order
//! maps. A factory returning [`NotConfigured`] disables its component with a debug line;
//! any other error stops the crawl before it starts, naming the component.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use serde_json::Value;

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::logformatter::LogFormatter;
use crate::crawl::base::settings::{Settings, normalize_component};
use crate::crawl::base::stats::StatsCollector;
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::handlers::DownloadHandler;
use crate::crawl::core::downloader::middleware::DownloaderMiddleware;
use crate::crawl::core::dupefilter::DupeFilter;
use crate::crawl::core::pipeline::ItemPipeline;
use crate::crawl::core::scheduler::{Scheduler, SchedulerContext};
use crate::crawl::core::spidermw::SpiderMiddleware;
use crate::crawl::extensions::feedexport::FeedPlugins;
use crate::crawl::http::fingerprint::RequestFingerprinter;
use crate::defer::Failure;
use crate::reactor::{Clock, ReactorHandle};
use crate::util::SeededMap;

/// Built components with their names, in their order.
pub type Named<T> = Vec<(String, Rc<T>)>;

/// Builds a component from the crawl's context.
pub type Factory<T> = Rc<dyn Fn(&Rc<CrawlContext>) -> Result<Rc<T>, Failure>>;
/// Builds a downloader middleware.
pub type DownloaderMwFactory = Factory<dyn DownloaderMiddleware>;
/// Builds a spider middleware.
pub type SpiderMwFactory = Factory<dyn SpiderMiddleware>;
/// Builds an item pipeline.
pub type PipelineFactory = Factory<dyn ItemPipeline>;
/// Builds an extension (it connects to signals; the crawler keeps it alive).
pub type ExtensionFactory = Factory<dyn Any>;
/// Builds the crawl's `LogFormatter` (`LOG_FORMATTER`) from its settings.
pub type LogFormatterFactory =
    Rc<dyn Fn(&crate::crawl::base::settings::Settings) -> Result<Rc<dyn LogFormatter>, Failure>>;
/// Builds the crawl's request fingerprinter (`REQUEST_FINGERPRINTER_CLASS`).
pub type FingerprinterFactory =
    Rc<dyn Fn(&Settings) -> Result<Rc<dyn RequestFingerprinter>, Failure>>;
/// Builds a download handler for a URL scheme.
pub type HandlerFactory = Factory<dyn DownloadHandler>;
/// Builds the scheduler.
pub type SchedulerFactory =
    Rc<dyn Fn(&Rc<CrawlContext>, SchedulerContext) -> Result<Box<dyn Scheduler>, Failure>>;
/// Builds a dupefilter (`DUPEFILTER_CLASS`).
pub type DupeFilterFactory = Rc<dyn Fn(&Rc<CrawlContext>) -> Result<Box<dyn DupeFilter>, Failure>>;
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

impl ComponentError {
    fn unregistered(name: &str, kind: &str) -> Failure {
        Failure::new(Self {
            name: name.to_owned(),
            reason: format!("no {kind} is registered under this name"),
        })
    }
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
    log_formatters: HashMap<String, LogFormatterFactory>,
    fingerprinters: HashMap<String, FingerprinterFactory>,
    feeds: FeedPlugins,
    spider_arguments: Vec<(String, String)>,
}

impl Registry {
    /// The feed exporters, storages, `uri_params` functions and item filters by name
    /// (`FEED_EXPORTERS`, `FEED_STORAGES`, the `FEEDS` options that name them).
    pub fn feed_plugins(&self) -> &FeedPlugins {
        &self.feeds
    }

    /// Registers feed exporters, storages, `uri_params` functions or item filters.
    pub fn feed_plugins_mut(&mut self) -> &mut FeedPlugins {
        &mut self.feeds
    }

    /// Declares settings a component of yours reads, so setting them draws no
    /// "unknown setting" warning (process-wide: any crawl may read them).
    pub fn declare_settings(&mut self, names: &[&str]) {
        crate::crawl::base::settings::declare_known(names.iter().copied());
    }

    /// The spider arguments (`-a NAME=VALUE`) the spider was built with: the crawl
    /// adds them to the spider's attributes (a feed URI's `%(NAME)s`).
    pub fn set_spider_arguments(&mut self, args: Vec<(String, String)>) {
        self.spider_arguments = args;
    }

    /// The spider arguments given with [`set_spider_arguments`](Self::set_spider_arguments).
    pub fn spider_arguments(&self) -> &[(String, String)] {
        &self.spider_arguments
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

    /// Registers a log formatter under `name` (select it with `LOG_FORMATTER`).
    pub fn register_log_formatter<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&crate::crawl::base::settings::Settings) -> Result<Rc<dyn LogFormatter>, Failure>
            + 'static,
    {
        self.log_formatters.insert(name.to_owned(), Rc::new(f));
    }

    /// The log formatter `LOG_FORMATTER` names.
    ///
    /// # Errors
    ///
    /// An unregistered name, or a formatter that fails to build.
    pub fn log_formatter(
        &self,
        settings: &crate::crawl::base::settings::Settings,
    ) -> Result<Rc<dyn LogFormatter>, Failure> {
        let name = settings.get_str("LOG_FORMATTER")?.unwrap_or_default();
        let factory = self
            .log_formatters
            .get(&normalize_component(&name))
            .ok_or_else(|| ComponentError::unregistered(&name, "log formatter"))?;
        factory(settings)
    }

    /// Registers a request fingerprinter under `name` (select it with
    /// `REQUEST_FINGERPRINTER_CLASS`).
    pub fn register_fingerprinter<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&Settings) -> Result<Rc<dyn RequestFingerprinter>, Failure> + 'static,
    {
        self.fingerprinters.insert(name.to_owned(), Rc::new(f));
    }

    /// The request fingerprinter `REQUEST_FINGERPRINTER_CLASS` names, with its
    /// normalised name (what a JOBDIR or a Redis crawl records).
    ///
    /// # Errors
    ///
    /// An unregistered name, or a fingerprinter that fails to build.
    pub fn request_fingerprinter(
        &self,
        settings: &Settings,
    ) -> Result<(String, Rc<dyn RequestFingerprinter>), Failure> {
        let name = crate::crawl::base::settings::fingerprinter_name(settings)?;
        let factory = self
            .fingerprinters
            .get(&name)
            .ok_or_else(|| ComponentError::unregistered(&name, "request fingerprinter"))?;
        Ok((name, factory(settings)?))
    }

    /// The downloader middlewares `DOWNLOADER_MIDDLEWARES` (+ `_BASE`) names, in order.
    ///
    /// # Errors
    ///
    /// An unregistered name, or a middleware that fails to build (other than with
    /// [`NotConfigured`]).
    pub fn downloader_middlewares(
        &self,
        ctx: &Rc<CrawlContext>,
    ) -> Result<Named<dyn DownloaderMiddleware>, Failure> {
        build_list(
            ctx,
            "DOWNLOADER_MIDDLEWARES",
            "downloader middleware",
            &self.downloader_mws,
        )
    }

    /// The spider middlewares `SPIDER_MIDDLEWARES` (+ `_BASE`) names, in order.
    ///
    /// # Errors
    ///
    /// As [`Registry::downloader_middlewares`].
    pub fn spider_middlewares(
        &self,
        ctx: &Rc<CrawlContext>,
    ) -> Result<Named<dyn SpiderMiddleware>, Failure> {
        build_list(
            ctx,
            "SPIDER_MIDDLEWARES",
            "spider middleware",
            &self.spider_mws,
        )
    }

    /// The item pipelines `ITEM_PIPELINES` names, in order.
    ///
    /// # Errors
    ///
    /// As [`Registry::downloader_middlewares`].
    pub fn pipelines(&self, ctx: &Rc<CrawlContext>) -> Result<Named<dyn ItemPipeline>, Failure> {
        build_list(ctx, "ITEM_PIPELINES", "item pipeline", &self.pipelines)
    }

    /// The extensions `EXTENSIONS` (+ `_BASE`) names, in order.
    ///
    /// # Errors
    ///
    /// As [`Registry::downloader_middlewares`].
    pub fn extensions(&self, ctx: &Rc<CrawlContext>) -> Result<Named<dyn Any>, Failure> {
        build_list(ctx, "EXTENSIONS", "extension", &self.extensions)
    }

    /// The download handlers by URL scheme (`DOWNLOAD_HANDLERS_BASE` updated by
    /// `DOWNLOAD_HANDLERS`); a handler named for several schemes is built once. A
    /// handler that cannot be built fails its scheme's requests with the reason, as
    /// Scrapy's: a debug line when it said `NotConfigured`, an error otherwise.
    ///
    /// # Errors
    ///
    /// An invalid setting or an unregistered handler name.
    pub fn download_handlers(
        &self,
        ctx: &Rc<CrawlContext>,
    ) -> Result<SeededMap<String, Rc<dyn DownloadHandler>>, Failure> {
        let s = &ctx.settings;
        let mut by_scheme = s.get_dict("DOWNLOAD_HANDLERS_BASE")?;
        for (k, v) in s.get_dict("DOWNLOAD_HANDLERS")? {
            by_scheme.insert(k, v);
        }
        let mut handlers = SeededMap::default();
        let mut built: HashMap<String, Rc<dyn DownloadHandler>> = HashMap::new();
        for (scheme, name) in by_scheme {
            let Value::String(name) = name else { continue };
            if let Some(h) = built.get(&name) {
                handlers.insert(scheme, h.clone());
                continue;
            }
            let Some(factory) = self.handlers.get(&normalize_component(&name)) else {
                return Err(Failure::msg(format!(
                    "no download handler is registered as {name:?} (scheme {scheme})"
                )));
            };
            match factory(ctx) {
                Ok(h) => {
                    built.insert(name, h.clone());
                    handlers.insert(scheme, h);
                }
                Err(f) => {
                    if f.check::<crate::crawl::base::errors::NotConfigured>() {
                        log::debug!("Download handler for {scheme} not available: {f}");
                    } else {
                        log::error!("Loading {name:?} for scheme {scheme:?}: {f}");
                    }
                    let reason = match f.downcast_ref::<crate::crawl::base::errors::NotConfigured>()
                    {
                        Some(n) => n.0.clone(),
                        None => f.to_string(),
                    };
                    handlers.insert(
                        scheme.clone(),
                        Rc::new(
                            crate::crawl::core::downloader::handlers::UnavailableHandler {
                                scheme,
                                reason,
                            },
                        ) as Rc<dyn DownloadHandler>,
                    );
                }
            }
        }
        Ok(handlers)
    }

    /// The scheduler factory `SCHEDULER` names.
    ///
    /// # Errors
    ///
    /// An invalid setting, or no scheduler of that name.
    pub fn scheduler(&self, settings: &Settings) -> Result<SchedulerFactory, Failure> {
        let name = settings.get_str("SCHEDULER")?.unwrap_or_default();
        self.schedulers
            .get(&normalize_component(&name))
            .cloned()
            .ok_or_else(|| {
                Failure::msg(format!(
                    "The provided scheduler class ({name}) does not implement the scheduler interface (it is not registered)"
                ))
            })
    }

    /// Builds the dupefilter `DUPEFILTER_CLASS` names.
    ///
    /// # Errors
    ///
    /// No dupefilter of that name, or it cannot be built.
    pub fn dupefilter(&self, ctx: &Rc<CrawlContext>) -> Result<Box<dyn DupeFilter>, Failure> {
        let name = ctx
            .settings
            .get_str("DUPEFILTER_CLASS")?
            .unwrap_or_default();
        let factory = self
            .dupefilters
            .get(&normalize_component(&name))
            .ok_or_else(|| ComponentError::unregistered(&name, "dupefilter"))?;
        factory(ctx)
    }

    /// Builds the stats collector `STATS_CLASS` names.
    ///
    /// # Errors
    ///
    /// No stats collector of that name, or it cannot be built.
    pub fn stats(&self, setup: &StatsSetup<'_>) -> Result<Rc<dyn StatsCollector>, Failure> {
        let name = setup.settings.get_str("STATS_CLASS")?.unwrap_or_default();
        let factory = self
            .stats
            .get(&normalize_component(&name))
            .ok_or_else(|| ComponentError::unregistered(&name, "stats collector"))?;
        factory(setup)
    }
}

/// Builds the components an order map (`setting` + `setting_BASE`) names, in order.
fn build_list<T: ?Sized>(
    ctx: &Rc<CrawlContext>,
    setting: &str,
    kind: &str,
    factories: &HashMap<String, Factory<T>>,
) -> Result<Named<T>, Failure> {
    let mut out = Vec::new();
    for (name, _order) in ctx.settings.component_list(setting)? {
        let Some(factory) = factories.get(&name) else {
            return Err(ComponentError::unregistered(&name, kind));
        };
        match factory(ctx) {
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
