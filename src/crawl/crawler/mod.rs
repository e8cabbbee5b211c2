//! The [`Crawler`]: the wiring of one crawl. It owns the spider, the engine and the
//! extensions, and builds every component from settings by name through the
//! [`Registry`]; the engine, the downloader and the scraper are built from their parts
//! and hold the shared [`CrawlContext`] (settings, signals, stats, clock, reactor, an
//! engine handle), never the crawler. A `Crawler` dereferences to its context.

mod builtins;
pub mod process;
mod registry;
pub mod shutdown;

pub use registry::{
    ComponentError, DownloaderMwFactory, DupeFilterFactory, ExtensionFactory, Factory,
    FingerprinterFactory, HandlerFactory, LogFormatterFactory, Named, PipelineFactory, Registry,
    SchedulerFactory, SpiderMwFactory, StatsFactory, StatsSetup,
};

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::rc::{Rc, Weak};

use crate::crawl::base::logging::LogScopeHandle;
use crate::crawl::base::settings::{Priority, Settings};
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::Downloader;
use crate::crawl::core::engine::{EngineParts, ExecutionEngine};
use crate::crawl::core::scheduler::SchedulerContext;
use crate::crawl::core::scraper::Scraper;
use crate::crawl::jobdir::Job;
use crate::crawl::spiders::spider::{Spider, SpiderAttributes, SpiderCell};
use crate::defer::{Deferred, Failure};
use crate::reactor::{Clock, ReactorHandle};

/// One crawl's wiring: Scrapy's `Crawler`. It dereferences to its [`CrawlContext`].
pub struct Crawler {
    /// The crawl's logging scope: everything the crawl runs, runs in it.
    log_scope: LogScopeHandle,
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

/// Warns about each setting a project or a spider's `custom_settings` gives that
/// nothing built in reads and no component declared (a typo is otherwise silent), with
/// the closest known name when there is one — once per process, whichever crawl sees
/// it first; `-s` and environment ones are warned about by the command as they are
/// parsed. A component of your own declares what it reads with
/// [`Registry::declare_settings`].
fn warn_unknown_settings(settings: &Settings, spider: &str) {
    for (name, _, priority) in settings.iter_sorted() {
        let source = match priority {
            Priority::Project => "the project's settings".to_owned(),
            Priority::Spider => format!("the custom_settings of spider {spider:?}"),
            _ => continue,
        };
        crate::crawl::base::settings::warn_if_unknown(name, &format!("in {source}"));
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
        settings: Settings,
        clock: Clock,
        reactor: Option<ReactorHandle>,
        registry: Registry,
    ) -> Result<Rc<Self>, Failure> {
        let log_scope = crate::crawl::base::logging::open_scope(spider.name());
        log_scope
            .id()
            .run(move || Self::new_in_scope(log_scope, spider, settings, clock, reactor, registry))
    }

    fn new_in_scope(
        log_scope: LogScopeHandle,
        spider: Box<dyn Spider>,
        mut settings: Settings,
        clock: Clock,
        reactor: Option<ReactorHandle>,
        registry: Registry,
    ) -> Result<Rc<Self>, Failure> {
        for (name, value) in spider.custom_settings() {
            settings.set(&name, value, Priority::Spider);
        }
        warn_unknown_settings(&settings, spider.name());
        settings.freeze();
        // LOG_LEVEL / LOG_ENABLED (spider's custom_settings and -s included) take effect
        // when trawl manages the logger (the `trawl` command).
        crate::crawl::base::logging::apply_settings(&settings).map_err(Failure::new)?;
        log::info!(
            "trawl {} started (bot: {})",
            env!("CARGO_PKG_VERSION"),
            settings.get_str("BOT_NAME")?.unwrap_or_default()
        );
        let overridden = settings.overridden();
        if !overridden.is_empty() {
            let lines: Vec<String> = overridden
                .iter()
                .map(|(name, value)| {
                    let shown = crate::crawl::util::redact::redact_setting(name, value);
                    format!("{name}: {shown}")
                })
                .collect();
            log::info!("Overridden settings:\n{}", lines.join("\n"));
        }
        let mut spider = spider;
        spider.settings_ready(&settings);
        let spider_name = spider.name().to_owned();
        let allowed_domains = spider.allowed_domains();
        let stats = registry.stats(&StatsSetup {
            settings: &settings,
            clock: &clock,
            reactor: reactor.as_ref(),
            spider_name: &spider_name,
        })?;
        let (fingerprinter_name, fingerprinter) = registry.request_fingerprinter(&settings)?;
        let job = Job::from_settings(&settings, &spider_name, stats.clone())?;
        if let Some(job) = &job {
            job.set_fingerprinter(fingerprinter.clone());
        }
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
        ctx.set_fingerprinter(&fingerprinter_name, fingerprinter);
        let dropitem_level = match ctx.settings.get("DEFAULT_DROPITEM_LOG_LEVEL") {
            Some(serde_json::Value::Number(n)) => n.to_string(),
            Some(serde_json::Value::String(s)) => s.clone(),
            _ => "WARNING".to_owned(),
        };
        let dropitem_level = crate::crawl::base::logging::level_from_name(&dropitem_level)
            .ok_or_else(|| {
                Failure::new(crate::crawl::base::settings::SettingsError {
                    name: "DEFAULT_DROPITEM_LOG_LEVEL".into(),
                    reason: format!("unknown level {dropitem_level:?}"),
                })
            })?;
        ctx.set_log_formatter(registry.log_formatter(&ctx.settings)?, dropitem_level);
        let mut attributes = spider.attributes();
        attributes.insert("name".into(), ctx.spider_name().into());
        attributes
            .entry("allowed_domains")
            .or_insert_with(|| ctx.allowed_domains().to_vec().into());
        for (k, v) in registry.spider_arguments() {
            attributes.insert(k.clone(), v.clone().into());
        }
        ctx.resource(|| Ok(Rc::new(SpiderAttributes(attributes))))?;
        let plugins = registry.feed_plugins().clone();
        ctx.resource(|| Ok(Rc::new(plugins)))?;
        spider.set_context(&ctx);
        let crawler = Rc::new_cyclic(|me| Self {
            log_scope,
            ctx,
            registry,
            spider: Rc::new(RefCell::new(spider)),
            engine: RefCell::new(None),
            extensions: RefCell::new(Vec::new()),
            me: me.clone(),
        });
        let extensions = crawler.registry.extensions(&crawler.ctx)?;
        *crawler.extensions.borrow_mut() = extensions;
        Ok(crawler)
    }

    /// The crawl's logging scope (its spider, level and `log_count/*` counts). Code
    /// run through [`in_scope`](Self::in_scope) — and everything it schedules — logs
    /// as this crawl.
    pub fn log_scope(&self) -> &Rc<crate::crawl::base::logging::LogScope> {
        self.log_scope.scope()
    }

    /// Runs `f` in the crawl's scope (its records, its timers and I/O).
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        self.log_scope.id().run(f)
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

    /// Runs the crawl: builds the engine, opens the spider and starts. The Deferred
    /// fires when the engine has stopped (the spider closed).
    pub fn crawl(self: &Rc<Self>) -> Deferred<()> {
        self.in_scope(|| self.crawl_in_scope())
    }

    fn crawl_in_scope(self: &Rc<Self>) -> Deferred<()> {
        let engine = match self.build_engine() {
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

    /// Builds the downloader, the scraper and the engine from the components the
    /// settings name. If the scraper cannot be built, the downloader already built is
    /// closed.
    fn build_engine(&self) -> Result<Rc<ExecutionEngine>, Failure> {
        let ctx = &self.ctx;
        let scheduler = self.registry.scheduler(&ctx.settings)?;
        let downloader = Downloader::new(
            ctx,
            self.registry.downloader_middlewares(ctx)?,
            self.registry.download_handlers(ctx)?,
        )?;
        let scraper = self
            .registry
            .spider_middlewares(ctx)
            .and_then(|mws| Ok((mws, self.registry.pipelines(ctx)?)))
            .and_then(|(mws, pipelines)| Scraper::new(ctx, self.spider.clone(), mws, pipelines));
        let scraper = match scraper {
            Ok(s) => s,
            Err(f) => {
                downloader.close();
                return Err(f);
            }
        };
        let registry = self.registry.clone();
        let sched_ctx = ctx.clone();
        let dupefilter_ctx = ctx.clone();
        Ok(ExecutionEngine::new(EngineParts {
            ctx: ctx.clone(),
            spider: self.spider.clone(),
            downloader,
            scraper,
            scheduler: Box::new(move |activity, wake| {
                let registry = registry.clone();
                let ctx = dupefilter_ctx.clone();
                scheduler(
                    &sched_ctx,
                    SchedulerContext {
                        activity,
                        wake,
                        dupefilter: Rc::new(move || registry.dupefilter(&ctx)),
                    },
                )
            }),
        }))
    }

    /// Flushes and closes the feeds now (the second Ctrl+C: in-flight requests are
    /// abandoned, what was scraped is kept).
    pub fn force_close_feeds(&self) {
        let feeds = self.extension("trawl.FeedExporter").and_then(|e| {
            e.downcast::<crate::crawl::extensions::feedexport::FeedExporter>()
                .ok()
        });
        if let Some(feeds) = feeds {
            self.in_scope(|| feeds.force_close());
        }
    }

    /// Stops the crawl gracefully (first Ctrl+C): closes the spider with `shutdown`,
    /// finishing what is in progress.
    pub fn stop(&self) {
        if let Some(engine) = self.engine() {
            self.in_scope(|| engine.stop());
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
