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

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::rc::{Rc, Weak};

use serde_json::{Value, json};

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::context::CrawlContext;
use crate::crawl::http::request::keys;
use crate::defer::Failure;
use crate::net::tcp::{ListeningPort, listen_tcp};
use crate::net::{Protocol, Transport};
use crate::task::LoopingCall;

/// The status page (no external assets).
const PAGE: &str = include_str!("metrics_page.html");

/// Latency histogram bucket bounds, seconds.
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The most slots listed (busiest first).
const MAX_SLOTS: usize = 200;

/// The largest request head accepted.
const MAX_HEAD: usize = 16 * 1024;

/// Labelled families: stat prefix → (metric name, label).
const FAMILIES: &[(&str, &str, &str)] = &[
    (
        "downloader/response_status_count/",
        "trawl_downloader_response_status_count_total",
        "status",
    ),
    (
        "downloader/exception_type_count/",
        "trawl_downloader_exception_type_count_total",
        "type",
    ),
    ("log_count/", "trawl_log_count_total", "level"),
    (
        "retry/reason_count/",
        "trawl_retry_reason_count_total",
        "reason",
    ),
    (
        "item_dropped_reasons_count/",
        "trawl_item_dropped_reasons_count_total",
        "reason",
    ),
    (
        "robotstxt/response_status_count/",
        "trawl_robotstxt_response_status_count_total",
        "status",
    ),
    (
        "httperror/response_ignored_status_count/",
        "trawl_httperror_response_ignored_status_count_total",
        "status",
    ),
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

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
                let mut h = m.latency.borrow_mut();
                for (i, bound) in BUCKETS.iter().enumerate() {
                    if latency <= *bound {
                        h.counts[i] += 1;
                    }
                }
                h.sum += latency;
                h.count += 1;
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
            move |_peer| {
                Rc::new(Conn {
                    metrics: me.clone(),
                    buf: RefCell::new(Vec::new()),
                    transport: RefCell::new(None),
                    done: Cell::new(false),
                }) as Rc<dyn Protocol>
            },
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

    fn authorized(&self, head: &httparse::Request<'_, '_>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let bearer = head
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("authorization"))
            .and_then(|h| std::str::from_utf8(h.value).ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|v| constant_time_eq(v.trim().as_bytes(), token.as_bytes()));
        let query = head
            .path
            .and_then(|p| p.split_once('?'))
            .is_some_and(|(_, q)| {
                url::form_urlencoded::parse(q.as_bytes())
                    .any(|(k, v)| k == "token" && constant_time_eq(v.as_bytes(), token.as_bytes()))
            });
        bearer || query
    }

    /// The answer to one request: status, content type, body.
    fn answer(&self, head: &httparse::Request<'_, '_>) -> (u16, &'static str, Vec<u8>) {
        self.served.set(self.served.get() + 1);
        if !self.authorized(head) {
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
        let mut out = String::new();
        let Some(ctx) = self.ctx.upgrade() else {
            return out;
        };
        let spider = escape_label(ctx.spider_name());
        let mut typed: Vec<String> = Vec::new();
        let mut declare = |out: &mut String, name: &str, kind: &str, help: &str| {
            if !typed.iter().any(|t| t == name) {
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
                typed.push(name.to_owned());
            }
        };
        for (key, value) in ctx.stats.get_stats() {
            let Some(n) = value.as_f64() else {
                continue;
            };
            if let Some((prefix, metric, label)) =
                FAMILIES.iter().find(|(p, _, _)| key.starts_with(p))
            {
                declare(
                    &mut out,
                    metric,
                    "counter",
                    &format!("Scrapy stat {prefix}<{label}>"),
                );
                let _ = writeln!(
                    out,
                    "{metric}{{spider=\"{spider}\",{label}=\"{}\"}} {}",
                    escape_label(&key[prefix.len()..]),
                    number(n)
                );
                continue;
            }
            let base = format!("trawl_{}", sanitize(&key));
            let (name, kind) = if key.starts_with("memusage/") {
                (format!("{base}_bytes"), "gauge")
            } else if matches!(
                key.as_str(),
                "elapsed_time_seconds" | "items_per_minute" | "responses_per_minute"
            ) {
                (base, "gauge")
            } else {
                (format!("{base}_total"), "counter")
            };
            declare(&mut out, &name, kind, &format!("Scrapy stat {key}"));
            let _ = writeln!(out, "{name}{{spider=\"{spider}\"}} {}", number(n));
        }
        if let Some(engine) = ctx.engine() {
            let g = engine.gauges();
            for (name, help, v) in [
                (
                    "trawl_engine_inprogress",
                    "requests in the engine",
                    g.inprogress,
                ),
                (
                    "trawl_downloader_active",
                    "requests in the downloader",
                    g.downloader_active,
                ),
                (
                    "trawl_downloader_concurrency",
                    "CONCURRENT_REQUESTS",
                    g.downloader_concurrency,
                ),
                (
                    "trawl_scraper_active_bytes",
                    "response bytes being scraped",
                    g.scraper_active_size,
                ),
                (
                    "trawl_scraper_max_active_bytes",
                    "SCRAPER_SLOT_MAX_ACTIVE_SIZE",
                    g.scraper_max_active_size,
                ),
                (
                    "trawl_scheduler_pending",
                    "1 when the scheduler has requests waiting",
                    usize::from(g.scheduler_pending),
                ),
                (
                    "trawl_engine_needs_backout",
                    "1 when a backpressure gate holds new requests back",
                    usize::from(g.needs_backout),
                ),
                (
                    "trawl_engine_idle",
                    "1 when nothing is in flight or pending",
                    usize::from(g.idle),
                ),
            ] {
                declare(&mut out, name, "gauge", help);
                let _ = writeln!(out, "{name}{{spider=\"{spider}\"}} {v}");
            }
        }
        let slots = self.slots();
        for (name, help, pick) in [
            ("trawl_slot_active", "requests in a download slot", 1usize),
            (
                "trawl_slot_transferring",
                "requests transferring in a slot",
                2,
            ),
            ("trawl_slot_queued", "requests queued in a slot", 3),
        ] {
            if slots.is_empty() {
                break;
            }
            declare(&mut out, name, "gauge", help);
            for s in &slots {
                let v = match pick {
                    1 => s.1,
                    2 => s.2,
                    _ => s.3,
                };
                let _ = writeln!(
                    out,
                    "{name}{{spider=\"{spider}\",slot=\"{}\"}} {v}",
                    escape_label(&s.0)
                );
            }
        }
        let h = self.latency.borrow();
        let name = "trawl_download_latency_seconds";
        declare(
            &mut out,
            name,
            "histogram",
            "download latency of each response",
        );
        for (i, bound) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{spider=\"{spider}\",le=\"{bound}\"}} {}",
                h.counts[i]
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{spider=\"{spider}\",le=\"+Inf\"}} {}",
            h.count
        );
        let _ = writeln!(out, "{name}_sum{{spider=\"{spider}\"}} {}", number(h.sum));
        let _ = writeln!(out, "{name}_count{{spider=\"{spider}\"}} {}", h.count);
        out
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

/// A stat name as a Prometheus metric name: `[a-zA-Z0-9_]`, other characters `_`.
fn sanitize(key: &str) -> String {
    key.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// A label value with `\`, `"` and newlines escaped.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One connection: read a request head, answer, close.
struct Conn {
    metrics: Weak<Metrics>,
    buf: RefCell<Vec<u8>>,
    transport: RefCell<Option<Rc<dyn Transport>>>,
    done: Cell<bool>,
}

impl Conn {
    fn reply(&self, status: u16, content_type: &str, body: &[u8], head_only: bool) {
        let reason = crate::proto::http1::reason_phrase(status).unwrap_or("");
        let mut out = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        if !head_only {
            out.extend_from_slice(body);
        }
        let transport = self.transport.borrow().clone();
        if let Some(t) = transport {
            t.write(&out);
            t.lose_connection();
        }
        self.done.set(true);
    }
}

impl Protocol for Conn {
    fn connection_made(&self, transport: Rc<dyn Transport>) {
        *self.transport.borrow_mut() = Some(transport);
    }

    fn data_received(&self, data: &[u8]) {
        if self.done.get() {
            return;
        }
        let answer = {
            let mut buf = self.buf.borrow_mut();
            buf.extend_from_slice(data);
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&buf) {
                Ok(httparse::Status::Complete(_)) => {
                    let head_only = req.method == Some("HEAD");
                    match self.metrics.upgrade() {
                        Some(m) => {
                            let (status, ct, body) = m.answer(&req);
                            Some((status, ct, body, head_only))
                        }
                        None => Some((503, "text/plain", b"closing\n".to_vec(), false)),
                    }
                }
                Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => None,
                Ok(httparse::Status::Partial) => Some((
                    431,
                    "text/plain",
                    b"request head too large\n".to_vec(),
                    false,
                )),
                Err(e) => Some((
                    400,
                    "text/plain",
                    format!("bad request: {e}\n").into_bytes(),
                    false,
                )),
            }
        };
        if let Some((status, ct, body, head_only)) = answer {
            self.reply(status, ct, &body, head_only);
        }
    }

    fn connection_lost(&self, _reason: Failure) {
        self.transport.borrow_mut().take();
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

    #[test]
    fn names_and_labels_follow_prometheus() {
        assert_eq!(
            sanitize("scheduler/enqueued/memory"),
            "scheduler_enqueued_memory"
        );
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.25), "0.25");
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
