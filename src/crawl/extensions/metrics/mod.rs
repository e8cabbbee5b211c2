//! `Metrics`: a read-only window on a running crawl, served from the crawl's own
//! reactor — `/metrics` in the Prometheus text format, `/` a status page a person can
//! keep open (pages/min and items/min as a live chart, responses by status, active and
//! queued requests per slot, the backpressure gates, errors), `/metrics.json` what the
//! page draws from. Off unless `METRICS_ADDR` is set (`trawl crawl --metrics ADDR`);
//! a bare port binds 127.0.0.1, anything else must be written out. With
//! `METRICS_TOKEN`, every request needs `Authorization: Bearer TOKEN` (or
//! `?token=TOKEN`). Nothing here changes the crawl: no control endpoints, unlike
//! Scrapy's telnet console.
//!
//! Prometheus names: `trawl_` + the stat's name with `/` and other punctuation as `_`;
//! counters end in `_total`; the per-status, per-exception, per-level and per-reason
//! families become one metric with a label (`trawl_downloader_response_status_count_total
//! {status="200"}`); `memusage/*` are gauges in bytes. Engine gauges (in progress,
//! downloader active / concurrency, scraper bytes, the backout gate), per-slot gauges
//! (the 200 busiest slots) and a download-latency histogram (`download_latency` of each
//! response) complete it.
//!
//! Each connection carries one request (`Connection: close`); a head over 16 KiB is
//! refused. The work per request is linear in the stats and slots.

mod prometheus;
mod server;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::{Rc, Weak};

use serde_json::{Value, json};

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::context::CrawlContext;
use crate::crawl::http::request::keys;
use crate::defer::Failure;
use crate::net::Protocol;
use crate::net::tcp::{ListeningPort, listen_tcp};
use crate::task::LoopingCall;
use prometheus::Histogram;
use server::{Conn, Endpoint, authorized};

/// The status page (no external assets).
const PAGE: &str = include_str!("page.html");

/// The most slots listed (busiest first).
const MAX_SLOTS: usize = 200;

/// The extension (see the module documentation).
pub struct Metrics {
    ctx: Weak<CrawlContext>,
    addr: SocketAddr,
    token: Option<String>,
    interval: f64,
    history_len: usize,
    port: RefCell<Option<Rc<ListeningPort>>>,
    sampler: RefCell<Option<LoopingCall>>,
    /// `(seconds since open, responses, items)` samples, oldest first.
    history: RefCell<VecDeque<(f64, u64, u64)>>,
    latency: RefCell<Histogram>,
    opened_at: Cell<f64>,
    served: Cell<u64>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("addr", &self.addr)
            .field("token", &self.token.is_some())
            .field("served", &self.served.get())
            .finish_non_exhaustive()
    }
}

/// `METRICS_ADDR`: `PORT` (127.0.0.1), `HOST:PORT`, `[V6]:PORT`.
fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse::<SocketAddr>()
        .map_err(|e| format!("METRICS_ADDR {text:?}: {e} (expected PORT, HOST:PORT or [V6]:PORT)"))
}

impl Metrics {
    /// Builds the extension from the settings.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] without `METRICS_ADDR`; a malformed address or interval.
    pub fn install(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let s = &ctx.settings;
        let addr = match s.get("METRICS_ADDR") {
            None | Some(Value::Null) => {
                return Err(Failure::new(NotConfigured(
                    "METRICS_ADDR is not set".into(),
                )));
            }
            Some(Value::String(a)) if a.is_empty() => {
                return Err(Failure::new(NotConfigured("METRICS_ADDR is empty".into())));
            }
            Some(Value::String(a)) => parse_addr(a),
            Some(Value::Number(n)) => parse_addr(&n.to_string()),
            Some(other) => Err(format!("METRICS_ADDR: expected an address, got {other}")),
        }
        .map_err(|e| Failure::new(std::io::Error::other(e)))?;
        let token = match s.get("METRICS_TOKEN") {
            Some(Value::String(t)) if !t.is_empty() => Some(t.clone()),
            _ => None,
        };
        if !addr.ip().is_loopback() && token.is_none() {
            log::warn!(
                "Metrics are served on {addr}, beyond this machine, without METRICS_TOKEN: \
                 anyone who can reach it reads the crawl's stats"
            );
        }
        let interval = s.get_float("METRICS_INTERVAL")?.max(0.1);
        let history_len = usize::try_from(s.get_int("METRICS_HISTORY")?.max(2)).unwrap_or(2);
        let me = Rc::new(Self {
            ctx: Rc::downgrade(ctx),
            addr,
            token,
            interval,
            history_len,
            port: RefCell::new(None),
            sampler: RefCell::new(None),
            history: RefCell::new(VecDeque::new()),
            latency: RefCell::new(Histogram::default()),
            opened_at: Cell::new(0.0),
            served: Cell::new(0),
        });
        let m = Rc::downgrade(&me);
        ctx.signals.connect(Signal::SpiderOpened, move |_| {
            if let Some(m) = m.upgrade() {
                m.open()?;
            }
            Ok(())
        });
        let m = Rc::downgrade(&me);
        ctx.signals.connect(Signal::ResponseReceived, move |args| {
            if let (Some(m), SignalArgs::Response { request, .. }) = (m.upgrade(), args)
                && let Some(latency) = request.meta().get_f64(keys::DOWNLOAD_LATENCY)
            {
                m.latency.borrow_mut().observe(latency);
            }
            Ok(())
        });
        let m = Rc::downgrade(&me);
        ctx.signals.connect(Signal::SpiderClosed, move |_| {
            if let Some(m) = m.upgrade() {
                m.close();
            }
            Ok(())
        });
        Ok(me)
    }

    /// The bound address, once the spider is open (the real port when 0 was asked).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.port.borrow().as_ref().map(|p| p.local_addr())
    }

    fn now(&self) -> f64 {
        self.ctx.upgrade().map_or(0.0, |c| c.clock().seconds())
    }

    fn open(self: &Rc<Self>) -> Result<(), Failure> {
        let Some(ctx) = self.ctx.upgrade() else {
            return Ok(());
        };
        let reactor = ctx.require_reactor("METRICS_ADDR")?.clone();
        let me = Rc::downgrade(self);
        let port = listen_tcp(
            &reactor,
            self.addr,
            move |_peer| Conn::new(me.clone() as Weak<dyn Endpoint>) as Rc<dyn Protocol>,
            None,
        )
        .map_err(|e| {
            Failure::new(std::io::Error::other(format!(
                "METRICS_ADDR {}: cannot listen: {e}",
                self.addr
            )))
        })?;
        let local = port.local_addr();
        log::info!("Metrics on http://{local}/ (Prometheus: http://{local}/metrics)");
        ctx.stats
            .set_value("metrics/url", Value::String(format!("http://{local}/")));
        *self.port.borrow_mut() = Some(port);
        self.opened_at.set(self.now());
        self.sample();
        let me = Rc::downgrade(self);
        let lc = LoopingCall::new(ctx.clock(), move || {
            if let Some(m) = me.upgrade() {
                m.sample();
            }
            Ok(())
        });
        lc.start(self.interval, false).map_err(Failure::new)?;
        *self.sampler.borrow_mut() = Some(lc);
        Ok(())
    }

    fn close(&self) {
        if let Some(port) = self.port.borrow_mut().take() {
            port.stop_listening();
        }
        if let Some(lc) = self.sampler.borrow_mut().take()
            && lc.running()
        {
            let _ = lc.stop();
        }
    }

    fn sample(&self) {
        let Some(ctx) = self.ctx.upgrade() else {
            return;
        };
        let stat = |k: &str| ctx.stats.get_value(k).and_then(|v| v.as_u64()).unwrap_or(0);
        let t = self.now() - self.opened_at.get();
        let mut h = self.history.borrow_mut();
        h.push_back((
            t,
            stat("response_received_count"),
            stat("item_scraped_count"),
        ));
        while h.len() > self.history_len {
            h.pop_front();
        }
    }

    /// The answer to one request: status, content type, body.
    fn answer_request(&self, head: &httparse::Request<'_, '_>) -> (u16, &'static str, Vec<u8>) {
        self.served.set(self.served.get() + 1);
        if !authorized(head, self.token.as_deref()) {
            return (
                401,
                "text/plain; charset=utf-8",
                b"a token is required\n".to_vec(),
            );
        }
        if head.method != Some("GET") && head.method != Some("HEAD") {
            return (
                405,
                "text/plain; charset=utf-8",
                b"read-only: GET only\n".to_vec(),
            );
        }
        let path = head.path.unwrap_or("/");
        let path = path.split_once('?').map_or(path, |(p, _)| p);
        match path {
            "/" | "/index.html" => (200, "text/html; charset=utf-8", PAGE.as_bytes().to_vec()),
            "/metrics" => (
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                self.prometheus().into_bytes(),
            ),
            "/metrics.json" => (
                200,
                "application/json",
                self.json().to_string().into_bytes(),
            ),
            _ => (404, "text/plain; charset=utf-8", b"not found\n".to_vec()),
        }
    }

    fn slots(&self) -> Vec<(String, usize, usize, usize)> {
        let Some(engine) = self.ctx.upgrade().and_then(|c| c.engine()) else {
            return Vec::new();
        };
        let mut slots: Vec<(String, usize, usize, usize)> = engine
            .downloader()
            .slot_states()
            .into_iter()
            .map(|(k, s)| (k, s.active, s.transferring, s.queued))
            .collect();
        slots.sort_by(|a, b| (b.1 + b.3).cmp(&(a.1 + a.3)).then_with(|| a.0.cmp(&b.0)));
        slots.truncate(MAX_SLOTS);
        slots
    }

    /// The Prometheus text format (0.0.4).
    pub fn prometheus(&self) -> String {
        let Some(ctx) = self.ctx.upgrade() else {
            return String::new();
        };
        prometheus::text(
            ctx.spider_name(),
            ctx.stats.get_stats(),
            ctx.engine().map(|e| e.gauges()),
            &self.slots(),
            &self.latency.borrow(),
        )
    }

    /// What the status page draws: stats, gauges, slots, the samples.
    pub fn json(&self) -> Value {
        let Some(ctx) = self.ctx.upgrade() else {
            return json!({});
        };
        let gauges = ctx.engine().map(|e| e.gauges()).unwrap_or_default();
        let stats: serde_json::Map<String, Value> = ctx.stats.get_stats().into_iter().collect();
        json!({
            "spider": ctx.spider_name(),
            "uptime": self.now() - self.opened_at.get(),
            "interval": self.interval,
            "stats": stats,
            "gauges": {
                "inprogress": gauges.inprogress,
                "downloader_active": gauges.downloader_active,
                "downloader_concurrency": gauges.downloader_concurrency,
                "scraper_active_bytes": gauges.scraper_active_size,
                "scraper_max_active_bytes": gauges.scraper_max_active_size,
                "scheduler_pending": gauges.scheduler_pending,
                "needs_backout": gauges.needs_backout,
                "idle": gauges.idle,
            },
            "slots": self.slots().into_iter().map(|(k, a, t, q)| {
                json!({"slot": k, "active": a, "transferring": t, "queued": q})
            }).collect::<Vec<_>>(),
            "history": self.history.borrow().iter().map(|(t, p, i)| json!([t, p, i])).collect::<Vec<_>>(),
        })
    }
}

impl Endpoint for Metrics {
    fn answer(&self, head: &httparse::Request<'_, '_>) -> (u16, &'static str, Vec<u8>) {
        self.answer_request(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(
            parse_addr("9410"),
            Ok("127.0.0.1:9410".parse().expect("addr"))
        );
        assert_eq!(
            parse_addr("0.0.0.0:80"),
            Ok("0.0.0.0:80".parse().expect("addr"))
        );
        assert_eq!(parse_addr("[::1]:9"), Ok("[::1]:9".parse().expect("addr")));
        assert!(parse_addr("localhost").is_err());
    }
}
