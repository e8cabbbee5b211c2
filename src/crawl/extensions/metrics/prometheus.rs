//! The Prometheus text format (0.0.4) of a crawl's stats, engine gauges, download
//! slots and download-latency histogram.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::crawl::context::EngineGauges;

/// Latency histogram bucket bounds, seconds.
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

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
pub(super) struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    /// Counts one download's latency.
    pub(super) fn observe(&mut self, latency: f64) {
        for (i, bound) in BUCKETS.iter().enumerate() {
            if latency <= *bound {
                self.counts[i] += 1;
            }
        }
        self.sum += latency;
        self.count += 1;
    }
}

/// The exposition: every numeric stat (labelled families as one metric with a label),
/// the engine's gauges, the slots' gauges, the latency histogram.
pub(super) fn text(
    spider: &str,
    stats: BTreeMap<String, Value>,
    gauges: Option<EngineGauges>,
    slots: &[(String, usize, usize, usize)],
    latency: &Histogram,
) -> String {
    let mut out = String::new();
    let spider = escape_label(spider);
    let mut typed: Vec<String> = Vec::new();
    let mut declare = |out: &mut String, name: &str, kind: &str, help: &str| {
        if !typed.iter().any(|t| t == name) {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            typed.push(name.to_owned());
        }
    };
    for (key, value) in stats {
        let Some(n) = value.as_f64() else {
            continue;
        };
        if let Some((prefix, metric, label)) = FAMILIES.iter().find(|(p, _, _)| key.starts_with(p))
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
    if let Some(g) = gauges {
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
        for s in slots {
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
    let h = latency;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels_follow_prometheus() {
        assert_eq!(
            sanitize("scheduler/enqueued/memory"),
            "scheduler_enqueued_memory"
        );
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.25), "0.25");
    }
}
