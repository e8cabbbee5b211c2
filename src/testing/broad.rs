//! The broad fixture: N small sites, each on its own loopback address (127.1.x.y, one
//! port for all), for measuring what a broad crawl pays — a connection, a handshake, a
//! robots.txt and a DNS lookup per host — where the [`Site`](super::Site) fixture is one
//! fast host.
//!
//! Host `i` (0-based) listens on `127.1.0.0 + i + 1` and is named `hIIIII.fixture.test`
//! (covered by the test certificate's `*.fixture.test`; clients resolve the names with
//! [`BroadSite::hosts_file`], e.g. trawl's `DNS_RESOLVE`). Each host has `K` pages: `/`
//! and `/p/J.html`, every one with one quote block (one item), links to two pages of its
//! own host, to two pages of other hosts (so hosts are discovered and revisited later,
//! after their connection went idle) and to `/private/J.html`, which its robots.txt
//! disallows. A polite crawl fetches exactly `hosts × K` pages and `hosts` robots.txt.
//! The server closes connections idle for 5 s
//! (`fixture::BROAD_KEEPALIVE_TIMEOUT`).

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};

use super::reply::{Reply, Req};

/// The most hosts one broad fixture serves (the addresses 127.1.0.1 … 127.1.255.254).
pub const MAX_HOSTS: usize = 65_534;

/// The robots.txt every host serves.
pub const ROBOTS_TXT: &str = "User-agent: *\nDisallow: /private/\n";

/// How a broad fixture is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BroadOptions {
    /// Sites (1 ..= [`MAX_HOSTS`]).
    pub hosts: usize,
    /// Pages per site, the root included (at least 1).
    pub pages_per_host: usize,
    /// HTTPS with the embedded test certificate (`*.fixture.test`).
    pub tls: bool,
    /// Links and start URLs name hosts (`hIIIII.fixture.test`) instead of addresses.
    pub names: bool,
    /// The port every host listens on (0: the first free one on the first address).
    pub port: u16,
}

impl Default for BroadOptions {
    fn default() -> Self {
        Self {
            hosts: 1000,
            pages_per_host: 10,
            tls: false,
            names: false,
            port: 0,
        }
    }
}

/// The pages of a broad fixture, generated on demand (nothing is stored per host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BroadSite {
    options: BroadOptions,
}

impl BroadSite {
    /// The site for `options` (hosts clamped to 1 ..= [`MAX_HOSTS`], pages to ≥ 1).
    pub fn new(mut options: BroadOptions) -> Self {
        options.hosts = options.hosts.clamp(1, MAX_HOSTS);
        options.pages_per_host = options.pages_per_host.max(1);
        Self { options }
    }

    /// Its options (clamped).
    pub fn options(&self) -> &BroadOptions {
        &self.options
    }

    /// Sites.
    pub fn hosts(&self) -> usize {
        self.options.hosts
    }

    /// Pages per site.
    pub fn pages_per_host(&self) -> usize {
        self.options.pages_per_host
    }

    /// Pages a complete crawl fetches (robots.txt not counted): one item each.
    pub fn expected_pages(&self) -> usize {
        self.hosts() * self.pages_per_host()
    }

    /// The address host `i` listens on.
    pub fn addr(i: usize) -> Ipv4Addr {
        let n = u32::try_from(i)
            .unwrap_or(u32::MAX)
            .min(MAX_HOSTS as u32 - 1);
        Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 1, 0, 1)) + n)
    }

    /// The socket address of host `i` on `port`.
    pub fn socket_addr(i: usize, port: u16) -> SocketAddr {
        SocketAddr::from((Self::addr(i), port))
    }

    /// The name of host `i` (`h00042.fixture.test`).
    pub fn host_name(i: usize) -> String {
        format!("h{i:05}.fixture.test")
    }

    /// `scheme://host:port` of host `i`, as links name it.
    pub fn origin(&self, i: usize) -> String {
        let scheme = if self.options.tls { "https" } else { "http" };
        if self.options.names {
            format!("{scheme}://{}:{}", Self::host_name(i), self.options.port)
        } else {
            format!("{scheme}://{}:{}", Self::addr(i), self.options.port)
        }
    }

    /// The path of page `j` of a host.
    pub fn page_path(j: usize) -> String {
        if j == 0 {
            "/".to_owned()
        } else {
            format!("/p/{j}.html")
        }
    }

    /// The absolute URL of page `j` of host `i`.
    pub fn page_url(&self, i: usize, j: usize) -> String {
        format!("{}{}", self.origin(i), Self::page_path(j))
    }

    /// The start URLs: every host's root, one per line.
    pub fn start_urls(&self) -> String {
        let mut out = String::new();
        for i in 0..self.hosts() {
            let _ = writeln!(out, "{}", self.page_url(i, 0));
        }
        out
    }

    /// `/etc/hosts` lines naming every host's address.
    pub fn hosts_file(&self) -> String {
        let mut out = String::new();
        for i in 0..self.hosts() {
            let _ = writeln!(out, "{} {}", Self::addr(i), Self::host_name(i));
        }
        out
    }

    /// The pages page `j` of host `i` links to, as (host, page).
    ///
    /// Links never name a root: a root is a start URL, which crawlers send unfiltered
    /// (`dont_filter`), so a link to it would have it fetched twice.
    pub fn links(&self, i: usize, j: usize) -> [(usize, usize); 4] {
        let (n, k) = (self.hosts(), self.pages_per_host());
        let deep = |p: usize| if k > 1 { 1 + p % (k - 1) } else { 0 };
        [
            (i, deep(j)),
            (i, deep(j * 3 + 1)),
            ((i * 13 + j * 7 + 1) % n, deep(j)),
            ((i + n / 2 + j) % n, deep(j + 1)),
        ]
    }

    /// The HTML of page `j` of host `i` (about 2 KB).
    pub fn page(&self, i: usize, j: usize) -> String {
        let mut html = String::with_capacity(2560);
        let _ = write!(
            html,
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>host {i} page {j}</title>\
             </head><body>\n<h1>Host {i}, page {j}</h1>\n<div class=\"quote\"><span class=\"text\">\
             Page {j} of host {i}.</span> <small class=\"author\">{}</small></div>\n<ul>\n",
            Self::host_name(i)
        );
        for (h, p) in self.links(i, j) {
            if h == i {
                let _ = writeln!(
                    html,
                    "<li><a href=\"{}\">page {p}</a></li>",
                    Self::page_path(p)
                );
            } else {
                let _ = writeln!(
                    html,
                    "<li><a href=\"{}\">host {h} page {p}</a></li>",
                    self.page_url(h, p)
                );
            }
        }
        let _ = writeln!(
            html,
            "<li><a href=\"/private/{j}.html\">private</a></li>\n</ul>"
        );
        for n in 0..12 {
            let _ = writeln!(
                html,
                "<p>Paragraph {n} of page {j} on host {i}: filler text that a parser must \
                 walk through, as real pages carry far more text than links.</p>"
            );
        }
        html.push_str("</body></html>\n");
        html
    }

    /// The answer of host `i` to `req`.
    pub(super) fn route(&self, i: usize, req: &Req) -> Reply {
        let html = |body: String| Reply::Full {
            status: 200,
            headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
            body: body.into_bytes(),
            close: false,
        };
        let path = req.path.as_str();
        if path == "/robots.txt" {
            return Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "text/plain".into())],
                body: ROBOTS_TXT.as_bytes().to_vec(),
                close: false,
            };
        }
        if path.starts_with("/private/") {
            return html(format!(
                "<html><body><p>host {i}: {path} is disallowed by robots.txt</p></body></html>"
            ));
        }
        let page = if path == "/" {
            Some(0)
        } else {
            path.strip_prefix("/p/")
                .and_then(|p| p.strip_suffix(".html"))
                .and_then(|p| p.parse::<usize>().ok())
                .filter(|&j| j > 0 && j < self.pages_per_host())
        };
        match page {
            Some(j) => html(self.page(i, j)),
            None => Reply::Full {
                status: 404,
                headers: vec![("Content-Type".into(), "text/plain".into())],
                body: b"not found".to_vec(),
                close: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_is_reachable_from_its_root_and_links_stay_in_range() {
        let site = BroadSite::new(BroadOptions {
            hosts: 37,
            pages_per_host: 7,
            ..BroadOptions::default()
        });
        for i in 0..site.hosts() {
            let mut seen = vec![false; site.pages_per_host()];
            let mut todo = vec![0];
            while let Some(j) = todo.pop() {
                if std::mem::replace(&mut seen[j], true) {
                    continue;
                }
                for (h, p) in site.links(i, j) {
                    assert!(h < site.hosts() && p < site.pages_per_host());
                    assert!(p != 0, "a link to a root");
                    if h == i {
                        todo.push(p);
                    }
                }
            }
            assert!(seen.iter().all(|s| *s), "host {i}: {seen:?}");
        }
    }

    #[test]
    fn addresses_and_names_are_distinct_per_host() {
        assert_eq!(BroadSite::addr(0), Ipv4Addr::new(127, 1, 0, 1));
        assert_eq!(BroadSite::addr(255), Ipv4Addr::new(127, 1, 1, 0));
        assert_eq!(
            BroadSite::addr(MAX_HOSTS - 1),
            Ipv4Addr::new(127, 1, 255, 254)
        );
        assert_eq!(BroadSite::host_name(42), "h00042.fixture.test");
        let site = BroadSite::new(BroadOptions {
            hosts: 3,
            names: true,
            tls: true,
            port: 8443,
            ..BroadOptions::default()
        });
        assert_eq!(
            site.page_url(2, 3),
            "https://h00002.fixture.test:8443/p/3.html"
        );
        assert_eq!(
            site.hosts_file().lines().nth(1),
            Some("127.1.0.2 h00001.fixture.test")
        );
    }
}
