//! robots.txt parsing and matching (RFC 9309), sans-IO: bytes in, answers out. The
//! [`RobotsTxtMiddleware`](super::middlewares::RobotsTxtMiddleware) fetches the files;
//! this module only reads them.
//!
//! Behaviour, as RFC 9309 and Protego (Scrapy's default parser) agree:
//!
//! * Lines are `key: value`; keys are case-insensitive and a few common misspellings
//!   are accepted (`dissallow`, `useragent`, `user agent`, `crawl delay`...); `#` starts
//!   a comment; unknown keys are ignored. Only the first 500 KiB are read (RFC 9309's
//!   minimum).
//! * Consecutive `User-agent` lines open a group; rules before any group are ignored.
//!   Several groups naming the same agent are merged.
//! * The group used for a user agent: the one whose token is the longest substring of
//!   the (lower-cased) user-agent string, else the `*` group, else none (everything
//!   allowed). Substring matching is Protego's, so `User-agent: trawl` applies to
//!   `trawl/0.1 (+https://github.com/trawl)`.
//! * Among the group's rules the longest matching pattern wins; on a tie `Allow` wins.
//!   `*` matches any sequence and a final `$` anchors at the end. An empty `Disallow`
//!   allows everything. Paths match case-sensitively after percent-encoding
//!   normalisation (unreserved characters decoded, other escapes upper-cased, non-ASCII
//!   encoded). `/robots.txt` itself is always allowed.
//! * `Crawl-delay`, `Request-rate` (per group) and `Sitemap` (global) are kept.

use url::Url;

/// RFC 9309: parsers must read at least 500 kibibytes.
pub const MAX_ROBOTS_SIZE: usize = 500 * 1024;

#[derive(Debug, Clone, PartialEq)]
struct Rule {
    allow: bool,
    /// The normalised pattern.
    pattern: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Group {
    /// Lower-cased user-agent tokens.
    agents: Vec<String>,
    rules: Vec<Rule>,
    crawl_delay: Option<f64>,
    request_rate: Option<(u32, f64)>,
}

/// A parsed robots.txt file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RobotsTxt {
    groups: Vec<Group>,
    sitemaps: Vec<String>,
    /// Everything disallowed (RFC 9309: robots.txt unreachable).
    disallow_all: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Key {
    UserAgent,
    Allow,
    Disallow,
    CrawlDelay,
    RequestRate,
    Sitemap,
    Other,
}

fn key_of(k: &str) -> Key {
    let k = k.trim().to_ascii_lowercase();
    match k.as_str() {
        "user-agent" | "useragent" | "user agent" | "user_agent" => Key::UserAgent,
        "allow" => Key::Allow,
        "disallow" | "dissallow" | "dissalow" | "disalow" | "diasllow" | "disallaw" => {
            Key::Disallow
        }
        "crawl-delay" | "crawl delay" | "crawldelay" => Key::CrawlDelay,
        "request-rate" | "request rate" => Key::RequestRate,
        "sitemap" | "sitemaps" | "site-map" => Key::Sitemap,
        _ => Key::Other,
    }
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-encoding normalisation shared by patterns and paths: `%XX` of an unreserved
/// character is decoded, other escapes are upper-cased, non-ASCII and control bytes are
/// encoded. `*` and `$` pass through (they are pattern syntax in rules and rare in
/// URLs, where the `url` crate leaves them as they are).
fn normalise(s: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let b = s.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            let v = h * 16 + l;
            if is_unreserved(v) {
                out.push(v as char);
            } else {
                out.push('%');
                out.push(HEX[usize::from(h)] as char);
                out.push(HEX[usize::from(l)] as char);
            }
            i += 3;
            continue;
        }
        if !(0x21..0x80).contains(&c) {
            out.push('%');
            out.push(HEX[usize::from(c >> 4)] as char);
            out.push(HEX[usize::from(c & 15)] as char);
        } else {
            out.push(c as char);
        }
        i += 1;
    }
    out
}

/// Whether `pattern` (with `*` and a final `$`) matches the start of `path`.
fn pattern_matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    if !path.starts_with(first) {
        return false;
    }
    let rest: Vec<&str> = parts.collect();
    if rest.is_empty() {
        return !anchored || path.len() == first.len();
    }
    let mut pos = first.len();
    let last = rest.len() - 1;
    for (i, part) in rest.iter().enumerate() {
        if i == last && anchored {
            // The last piece must sit at the very end, after `pos`.
            return path.len() >= pos + part.len() && path.ends_with(part);
        }
        match path[pos..].find(part) {
            Some(at) => pos += at + part.len(),
            None => return false,
        }
    }
    true
}

impl RobotsTxt {
    /// Parses a robots.txt body (invalid UTF-8 is replaced; bytes past
    /// [`MAX_ROBOTS_SIZE`] are ignored).
    pub fn parse(body: &[u8]) -> Self {
        let body = &body[..body.len().min(MAX_ROBOTS_SIZE)];
        let text = String::from_utf8_lossy(body);
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let mut robots = Self::default();
        // Index of the group being built, and whether it has seen a non-agent line.
        let mut current: Option<usize> = None;
        let mut in_agents = false;
        for line in text.split(['\n', '\r']) {
            let line = match line.find('#') {
                Some(at) => &line[..at],
                None => line,
            };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let Some((k, v)) = line.split_once(':').or_else(|| {
                // Tolerate `Disallow /path` (a common mistake Google also accepts).
                line.split_once([' ', '\t'])
            }) else {
                continue;
            };
            let value = v.trim();
            match key_of(k) {
                Key::UserAgent => {
                    let agent = value.split_whitespace().next().unwrap_or("").to_lowercase();
                    if !in_agents {
                        robots.groups.push(Group::default());
                        current = Some(robots.groups.len() - 1);
                        in_agents = true;
                    }
                    if let Some(g) = current {
                        robots.groups[g].agents.push(agent);
                    }
                }
                Key::Allow | Key::Disallow => {
                    in_agents = false;
                    let Some(g) = current else { continue };
                    if value.is_empty() {
                        continue; // `Disallow:` allows everything: no rule.
                    }
                    let mut pattern = normalise(value);
                    if !pattern.starts_with('/') && !pattern.starts_with('*') {
                        pattern.insert(0, '/');
                    }
                    robots.groups[g].rules.push(Rule {
                        allow: key_of(k) == Key::Allow,
                        pattern,
                    });
                }
                Key::CrawlDelay => {
                    in_agents = false;
                    if let (Some(g), Ok(d)) = (current, value.parse::<f64>())
                        && d.is_finite()
                        && d >= 0.0
                    {
                        robots.groups[g].crawl_delay = Some(d);
                    }
                }
                Key::RequestRate => {
                    in_agents = false;
                    if let Some(g) = current
                        && let Some(rate) = parse_request_rate(value)
                    {
                        robots.groups[g].request_rate = Some(rate);
                    }
                }
                Key::Sitemap => robots.sitemaps.push(value.to_owned()),
                Key::Other => in_agents = false,
            }
        }
        robots
    }

    /// A robots.txt that allows everything (a 4xx answer, per RFC 9309).
    pub fn allow_all() -> Self {
        Self::default()
    }

    /// A robots.txt that disallows everything (unreachable: 5xx or a network error).
    pub fn disallow_all() -> Self {
        Self {
            disallow_all: true,
            ..Self::default()
        }
    }

    /// Whether every path is disallowed because the file was unreachable.
    pub fn is_disallow_all(&self) -> bool {
        self.disallow_all
    }

    fn groups_for<'a>(&'a self, user_agent: &str) -> Vec<&'a Group> {
        let ua = user_agent.trim().to_lowercase();
        let score = |a: &str| {
            if a == "*" {
                1
            } else if !a.is_empty() && ua.contains(a) {
                a.len() + 1
            } else {
                0
            }
        };
        let best = self
            .groups
            .iter()
            .flat_map(|g| g.agents.iter())
            .max_by_key(|a| score(a.as_str()))
            .filter(|a| score(a.as_str()) > 0);
        let Some(token) = best else {
            return Vec::new();
        };
        // Every group naming the winning token (merged, RFC 9309 §2.2.1).
        self.groups
            .iter()
            .filter(|g| g.agents.iter().any(|a| a == token))
            .collect()
    }

    /// Whether `user_agent` may fetch `url`.
    pub fn allowed(&self, url: &Url, user_agent: &str) -> bool {
        let path = url.path();
        if path == "/robots.txt" {
            return true;
        }
        if self.disallow_all {
            return false;
        }
        let mut target = normalise(path);
        if let Some(q) = url.query() {
            target.push('?');
            target.push_str(&normalise(q));
        }
        let mut best: Option<(usize, bool)> = None;
        for g in self.groups_for(user_agent) {
            for r in &g.rules {
                if pattern_matches(&r.pattern, &target) {
                    let len = r.pattern.len();
                    best = match best {
                        Some((l, a)) if l > len || (l == len && (a || !r.allow)) => Some((l, a)),
                        _ => Some((len, r.allow)),
                    };
                }
            }
        }
        best.is_none_or(|(_, allow)| allow)
    }

    /// The `Crawl-delay` of the group applying to `user_agent`, in seconds.
    pub fn crawl_delay(&self, user_agent: &str) -> Option<f64> {
        self.groups_for(user_agent)
            .iter()
            .find_map(|g| g.crawl_delay)
    }

    /// The `Request-rate` (requests, per seconds) of the group applying to `user_agent`.
    pub fn request_rate(&self, user_agent: &str) -> Option<(u32, f64)> {
        self.groups_for(user_agent)
            .iter()
            .find_map(|g| g.request_rate)
    }

    /// The `Sitemap:` URLs, in file order.
    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }
}

/// `Request-rate: 1/5s`, `1/5`, `10/1m`, `3/1h` → (requests, seconds).
fn parse_request_rate(v: &str) -> Option<(u32, f64)> {
    let v = v.split_whitespace().next()?;
    let (n, per) = v.split_once('/')?;
    let n: u32 = n.trim().parse().ok()?;
    let per = per.trim();
    let (num, mult) = match per.chars().last()? {
        's' | 'S' => (&per[..per.len() - 1], 1.0),
        'm' | 'M' => (&per[..per.len() - 1], 60.0),
        'h' | 'H' => (&per[..per.len() - 1], 3600.0),
        _ => (per, 1.0),
    };
    let secs: f64 = num.parse::<f64>().ok()? * mult;
    (n > 0 && secs.is_finite() && secs > 0.0).then_some((n, secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(robots: &RobotsTxt, path: &str, ua: &str) -> bool {
        let url = Url::parse(&format!("http://example.com{path}")).expect("test URL");
        robots.allowed(&url, ua)
    }

    #[test]
    fn longest_match_wins_and_allow_wins_ties() {
        let r = RobotsTxt::parse(
            b"User-agent: *\nDisallow: /a\nAllow: /a/b\nDisallow: /a/b/c\nAllow: /t\nDisallow: /t\n",
        );
        assert!(!ok(&r, "/a", "x"));
        assert!(!ok(&r, "/a/x", "x"));
        assert!(ok(&r, "/a/b", "x"));
        assert!(ok(&r, "/a/b/x", "x"));
        assert!(!ok(&r, "/a/b/c/d", "x"));
        assert!(ok(&r, "/t", "x"), "Allow wins a tie");
        assert!(ok(&r, "/other", "x"));
    }

    #[test]
    fn wildcards_and_end_anchor() {
        let r = RobotsTxt::parse(
            b"User-agent: *\nDisallow: /*.pdf$\nDisallow: /private*/data\nDisallow: /exact$\n",
        );
        assert!(!ok(&r, "/docs/file.pdf", "x"));
        assert!(ok(&r, "/docs/file.pdf?x=1", "x"));
        assert!(ok(&r, "/docs/file.pdfx", "x"));
        assert!(!ok(&r, "/private-area/data/1", "x"));
        assert!(ok(&r, "/private-area/other", "x"));
        assert!(!ok(&r, "/exact", "x"));
        assert!(ok(&r, "/exact/more", "x"));
    }

    #[test]
    fn user_agent_groups_are_chosen_by_longest_token_and_merged() {
        let r = RobotsTxt::parse(
            b"User-agent: *\nDisallow: /\n\nUser-agent: trawl\nUser-agent: other\nDisallow: /no\n\n\
              User-agent: TRAWL\nDisallow: /also\n",
        );
        let ua = "trawl/0.1 (+https://github.com/trawl)";
        assert!(ok(&r, "/yes", ua));
        assert!(!ok(&r, "/no", ua));
        assert!(!ok(&r, "/also", ua), "groups for the same agent merge");
        assert!(!ok(&r, "/yes", "somebot/1.0"), "`*` applies to others");
    }

    #[test]
    fn no_matching_group_allows_everything_and_empty_disallow_allows() {
        let r = RobotsTxt::parse(b"User-agent: googlebot\nDisallow: /\n");
        assert!(ok(&r, "/x", "trawl"));
        let r = RobotsTxt::parse(b"User-agent: *\nDisallow:\n");
        assert!(ok(&r, "/x", "trawl"));
    }

    #[test]
    fn directives_are_case_insensitive_paths_are_not() {
        let r = RobotsTxt::parse(b"USER-AGENT: *\nDISALLOW: /Private\n");
        assert!(!ok(&r, "/Private/x", "a"));
        assert!(ok(&r, "/private/x", "a"));
    }

    #[test]
    fn percent_encoding_is_normalised_on_both_sides() {
        let r = RobotsTxt::parse(
            "User-agent: *\nDisallow: /%7Ejoe\nDisallow: /caf\u{e9}\nDisallow: /a%2fb\n".as_bytes(),
        );
        assert!(!ok(&r, "/~joe/x", "a"));
        assert!(!ok(&r, "/%7ejoe/x", "a"));
        assert!(!ok(&r, "/caf%C3%A9/menu", "a"));
        assert!(!ok(&r, "/a%2Fb", "a"));
        assert!(ok(&r, "/a/b", "a"), "an escaped slash is not a slash");
    }

    #[test]
    fn comments_bom_crlf_and_rules_before_groups() {
        let r = RobotsTxt::parse(
            b"\xef\xbb\xbfDisallow: /ignored\r\nUser-agent: * # everyone\r\nDisallow: /x # no\r\n",
        );
        assert!(ok(&r, "/ignored", "a"));
        assert!(!ok(&r, "/x", "a"));
    }

    #[test]
    fn query_strings_take_part_in_matching() {
        let r = RobotsTxt::parse(b"User-agent: *\nDisallow: /*?sort=\n");
        assert!(!ok(&r, "/list?sort=asc", "a"));
        assert!(ok(&r, "/list?page=2", "a"));
    }

    #[test]
    fn robots_txt_is_always_allowed_and_disallow_all() {
        let r = RobotsTxt::disallow_all();
        assert!(ok(&r, "/robots.txt", "a"));
        assert!(!ok(&r, "/", "a"));
        let r = RobotsTxt::parse(b"User-agent: *\nDisallow: /\n");
        assert!(ok(&r, "/robots.txt", "a"));
    }

    #[test]
    fn crawl_delay_request_rate_and_sitemaps() {
        let r = RobotsTxt::parse(
            b"Sitemap: http://example.com/s1.xml\nUser-agent: *\nCrawl-delay: 2.5\nRequest-rate: 3/1m\n\
              Sitemap: http://example.com/s2.xml\nUser-agent: fast\nCrawl-delay: nonsense\n",
        );
        assert_eq!(r.crawl_delay("trawl"), Some(2.5));
        assert_eq!(r.request_rate("trawl"), Some((3, 60.0)));
        assert_eq!(r.crawl_delay("fastbot"), None);
        assert_eq!(
            r.sitemaps(),
            ["http://example.com/s1.xml", "http://example.com/s2.xml"]
        );
    }

    #[test]
    fn garbage_never_panics() {
        for input in [
            &b""[..],
            b"\xff\xfe\x00",
            b"User-agent",
            b":::\n%%%\nDisallow: %",
            b"User-agent: *\nDisallow: /%E",
            b"User-agent: *\nAllow: *$\n",
        ] {
            let r = RobotsTxt::parse(input);
            let _ = ok(&r, "/a%", "x");
            let _ = ok(&r, "/", "x");
        }
    }
}
