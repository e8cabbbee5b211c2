//! What a crawl's Redis components share: the one connection ([`shared_client`]: all
//! components of a crawl write on it, so their commands reach the server in the order
//! they were issued), the scrapy-redis settings they read, and the key templates.

use std::cell::RefCell;
use std::rc::Rc;

use crate::client::redis::RedisConfig;
use crate::client::redis::handle::{RedisHandle, Topology};
use crate::crawl::context::CrawlContext;
use crate::crawl::errors::NotConfigured;
use crate::crawl::settings::{Settings, SettingsError};
use crate::defer::Failure;
use crate::proto::cluster::NodeAddr;
use crate::reactor::ReactorHandle;

/// scrapy-redis's default queue key.
pub const SCHEDULER_QUEUE_KEY: &str = "%(spider)s:requests";
/// scrapy-redis's default dupefilter key.
pub const SCHEDULER_DUPEFILTER_KEY: &str = "%(spider)s:dupefilter";
/// scrapy-redis's default items key.
pub const REDIS_ITEMS_KEY: &str = "%(spider)s:items";
/// scrapy-redis's default start-URL key.
pub const REDIS_START_URLS_KEY: &str = "%(name)s:start_urls";
/// scrapy-redis's default stats key.
pub const STATS_KEY: &str = "%(spider)s:stats";
/// trawl's default lease timeout, seconds (`REDIS_LEASE_TIMEOUT`).
pub const DEFAULT_LEASE_TIMEOUT: f64 = 60.0;
/// trawl's default `REDIS_FLUSH_DELAY`, seconds: how long the scheduler's enqueues and
/// acknowledgements and the pipeline's items may wait to share a round trip.
pub const DEFAULT_FLUSH_DELAY: f64 = 0.02;

/// Formats a scrapy-redis key template (`%(spider)s`, `%(name)s`) for `spider`.
pub fn format_key(template: &str, spider: &str) -> String {
    template
        .replace("%(spider)s", spider)
        .replace("%(name)s", spider)
}

/// A string setting, or `default` when unset.
///
/// # Errors
///
/// The setting is not a string.
pub fn setting_str(
    settings: &Settings,
    name: &str,
    default: &str,
) -> Result<String, SettingsError> {
    Ok(settings
        .get_str(name)?
        .unwrap_or_else(|| default.to_owned()))
}

/// A duration setting, or `default` when unset.
///
/// # Errors
///
/// The setting is not a duration.
pub fn setting_secs(settings: &Settings, name: &str, default: f64) -> Result<f64, SettingsError> {
    if settings.get(name).is_some() {
        settings.get_duration(name)
    } else {
        Ok(default)
    }
}

/// The client configuration from settings, as scrapy-redis reads them: `REDIS_URL`
/// wins; otherwise `REDIS_HOST` (localhost), `REDIS_PORT` (6379), `REDIS_DB` (0);
/// `REDIS_PARAMS` may set `socket_timeout`, `socket_connect_timeout` (30 s each),
/// `password`, `username` and `db`. `REDIS_MAX_BUFFERED` bounds what waits while
/// Redis is unreachable (100,000 commands).
///
/// # Errors
///
/// A malformed URL or setting.
pub fn redis_config(settings: &Settings) -> Result<RedisConfig, Failure> {
    let mut config = match settings.get_str("REDIS_URL")? {
        Some(url) if !url.is_empty() => RedisConfig::from_url(&url).map_err(Failure::new)?,
        _ => {
            let mut c = RedisConfig::default();
            if let Some(h) = settings.get_str("REDIS_HOST")?.filter(|h| !h.is_empty()) {
                c.host = h;
            }
            if settings.get("REDIS_PORT").is_some() {
                c.port = u16::try_from(settings.get_int("REDIS_PORT")?)
                    .map_err(|_| Failure::msg("REDIS_PORT is not a port number"))?;
            }
            if settings.get("REDIS_DB").is_some() {
                c.db = u32::try_from(settings.get_int("REDIS_DB")?)
                    .map_err(|_| Failure::msg("REDIS_DB is not a database number"))?;
            }
            c
        }
    };
    let params = settings.get_dict("REDIS_PARAMS")?;
    for (k, v) in &params {
        match (k.as_str(), v) {
            ("socket_timeout", serde_json::Value::Number(n)) => {
                config.command_timeout = n.as_f64().unwrap_or(config.command_timeout);
            }
            ("socket_connect_timeout", serde_json::Value::Number(n)) => {
                config.connect_timeout = n.as_f64().unwrap_or(config.connect_timeout);
            }
            ("password", serde_json::Value::String(p)) => config.password = Some(p.clone()),
            ("username", serde_json::Value::String(u)) => config.username = Some(u.clone()),
            ("db", serde_json::Value::Number(n)) => {
                config.db = n
                    .as_u64()
                    .and_then(|d| u32::try_from(d).ok())
                    .ok_or_else(|| Failure::msg("REDIS_PARAMS db is not a database number"))?;
            }
            _ => {}
        }
    }
    if settings.get("REDIS_MAX_BUFFERED").is_some() {
        config.max_buffered = settings.get_usize("REDIS_MAX_BUFFERED")?.max(1);
    }
    Ok(config)
}

/// The crawl's one Redis connection (one per master on a cluster) and this
/// process's worker id.
#[derive(Debug)]
pub struct SharedRedis {
    /// The client: one server, or a cluster (found by asking the server).
    pub client: RedisHandle,
    /// `host:pid:random`, unique per process and crawl: the owner of leases.
    pub worker_id: String,
    /// Who sends along with the scheduler's writes to a shard.
    pub shard_writes: ShardWrites,
}

/// A rider: called with a shard, the shard count and the time (reactor seconds).
type Rider = Rc<dyn Fn(usize, usize, f64)>;

/// The sharded scheduler's flushes, offered to other components: on a cluster each
/// master reads a worker's commands in the wake-up they arrive in, so a push that
/// goes in the same reactor turn as the scheduler's commands to a shard, to a key on
/// that shard's master, costs the master no wake-up of its own. The items pipeline
/// rides so (`pipeline.rs`).
#[derive(Default)]
pub struct ShardWrites {
    riders: RefCell<Vec<Rider>>,
}

impl std::fmt::Debug for ShardWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardWrites")
            .field("riders", &self.riders.borrow().len())
            .finish()
    }
}

impl ShardWrites {
    /// Adds `rider`, called with (shard, shard count, now) each time the scheduler
    /// sends commands to a shard's master.
    pub fn ride(&self, rider: Rider) {
        self.riders.borrow_mut().push(rider);
    }

    /// The scheduler is sending commands to `shard` of `shards` in this reactor turn,
    /// at `now` (reactor seconds).
    pub fn writing(&self, shard: usize, shards: usize, now: f64) {
        // No borrow held while the riders run: one may add another.
        let riders = self.riders.borrow().clone();
        for r in riders {
            r(shard, shards, now);
        }
    }
}

/// The crawl's shared Redis connection (made on first use from the settings).
///
/// # Errors
///
/// The crawl has no reactor, or the settings are malformed.
pub fn shared_client(ctx: &Rc<CrawlContext>) -> Result<Rc<SharedRedis>, Failure> {
    ctx.resource(|| {
        let reactor = ctx.reactor().ok_or_else(|| {
            Failure::new(NotConfigured(
                "Redis components need a crawl with a reactor".into(),
            ))
        })?;
        new_shared(reactor, &ctx.settings)
    })
}

/// A new connection and worker id (the stats collector's own, made before the crawl
/// context exists).
///
/// # Errors
///
/// As [`shared_client`].
pub fn new_shared(
    reactor: &ReactorHandle,
    settings: &Settings,
) -> Result<Rc<SharedRedis>, Failure> {
    let config = redis_config(settings)?;
    log::debug!("Redis: {}", config.display());
    let seeds = cluster_nodes(settings)?;
    let client = RedisHandle::new(reactor, config, Topology::Auto, &seeds)?;
    Ok(Rc::new(SharedRedis {
        client,
        worker_id: worker_id(reactor),
        shard_writes: ShardWrites::default(),
    }))
}

/// `REDIS_CLUSTER_NODES`: more cluster nodes (`host:port` strings, a list or one
/// comma-separated string) to ask for the slot table, so a worker starts while the
/// node `REDIS_URL` names is down. Given any, the crawl talks to a cluster.
///
/// # Errors
///
/// An entry is not `host:port`.
pub fn cluster_nodes(settings: &Settings) -> Result<Vec<NodeAddr>, Failure> {
    let entries: Vec<String> = match settings.get("REDIS_CLUSTER_NODES") {
        None | Some(serde_json::Value::Null) => return Ok(Vec::new()),
        Some(serde_json::Value::String(s)) => s.split(',').map(str::to_owned).collect(),
        Some(_) => settings
            .get_list("REDIS_CLUSTER_NODES")?
            .into_iter()
            .map(|v| match v {
                serde_json::Value::String(s) => Ok(s),
                other => Err(Failure::msg(format!(
                    "REDIS_CLUSTER_NODES: {other} is not a \"host:port\" string"
                ))),
            })
            .collect::<Result<_, _>>()?,
    };
    entries
        .iter()
        .map(|e| e.trim())
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (host, port) = e
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
                .ok_or_else(|| {
                    Failure::msg(format!("REDIS_CLUSTER_NODES: {e:?} is not host:port"))
                })?;
            Ok(NodeAddr {
                host: host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned(),
                port,
            })
        })
        .collect()
}

fn worker_id(reactor: &ReactorHandle) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    let nanos = reactor.clock().wall_seconds().to_bits();
    let salt = crate::util::fx_hash(&nanos.to_le_bytes()) & 0xffff_ffff;
    format!("{host}:{}:{salt:08x}", std::process::id())
}
