//! robots.txt parsing and matching (RFC 9309), sans-IO: bytes in, answers out. The
//! [`RobotsTxtMiddleware`](crate::crawl::downloadermiddlewares::robotstxt::RobotsTxtMiddleware) fetches the files;
//! this module only reads them.
//!
//! Allow / disallow follow Google's reference library (RFC 9309's), checked against its
//! own `robots_test.cc` and 1,406 Protego-recorded cases (`tests/robots_conformance.rs`):
//!
//! * Bytes, not text: lines end at LF, CR or CRLF; any prefix of a UTF-8 BOM is skipped;
//!   a line keeps its first 16,663 bytes; `#` starts a comment; only the first 500 KiB
//!   are read (RFC 9309's minimum).
//! * `key: value`, keys case-insensitive and matched by prefix (`user-agentx`), with
//!   Google's accepted typos; without a colon, `key value` when a single value follows,
//!   and Protego's salvage of `Sitemap https://...` and `user agent name`.
//! * Only `Allow` / `Disallow` lines end a run of `User-agent` lines: an unknown line
//!   between two user-agent lines leaves them in one group. Rules before any group are
//!   ignored.
//! * A group's agent is the value's leading run of letters, `-` and `_` (`FooBot/1.2` →
//!   `foobot`; a stray byte after it is dropped), or `*`. The caller's agent is its
//!   product token, its user agent up to `/` or a space (`trawl/0.1 (+...)` → `trawl`),
//!   compared case-insensitively and whole. Groups naming it apply (merged) and the `*`
//!   groups are then ignored, even when no rule of them matches.
//! * The longest matching pattern wins, `Allow` on a tie; `*` matches any sequence, a
//!   final `$` anchors; an empty rule has no effect; `Allow: /a/index.html` also allows
//!   `/a/`. No `/` is prepended (`Disallow: ~` does not block `/~`).
//! * Patterns and paths are compared percent-encoding-normalised (RFC 9309 §2.2.2):
//!   unreserved escapes decoded, other escapes upper-cased, and every byte the `url`
//!   crate encodes in a path or query encoded in the rule too, so `Allow: /a<d.html`
//!   matches the URL `/a<d.html` (which trawl requests as `/a%3Cd.html`). Google
//!   compares raw bytes here; Protego agrees with trawl.
//! * `/robots.txt` itself is always allowed (RFC 9309 §2.5).
//!
//! `Crawl-delay` and `Request-rate` (which Google's matcher ignores) follow Protego:
//! its grouping (any directive ends a run of user-agent lines), its agent choice (the
//! value found at a token boundary of the caller's user agent, longest first, else
//! `*`), its value syntax (`n/m` with `s`/`m`/`h`/`d`, an optional well-formed
//! `HHMM-HHMM` window). `Sitemap` lines (exact key) are kept in file order.

use url::Url;

use crate::util::hex_digit;

/// RFC 9309: parsers must read at least 500 kibibytes.
pub const MAX_ROBOTS_SIZE: usize = 500 * 1024;

#[derive(Debug, Clone, PartialEq)]
struct Rule {
    allow: bool,
    /// The normalised pattern.
    pattern: String,
}

/// Who a group is for.
#[derive(Debug, Clone, PartialEq)]
enum Agent {
    /// `User-agent: *`.
    Global,
    /// A product token, lower-cased (Google's `ExtractUserAgent` of the line's value).
    Token(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Group {
    agents: Vec<Agent>,
    rules: Vec<Rule>,
}

/// `Crawl-delay` and `Request-rate` for one user-agent value, grouped as Protego groups
/// them (any other directive ends a run of user-agent lines); Google's matcher has no
/// such directives.
#[derive(Debug, Clone, Default, PartialEq)]
struct Extension {
    /// The lower-cased user-agent value.
    agent: String,
    crawl_delay: Option<f64>,
    request_rate: Option<(u32, f64)>,
}

/// A parsed robots.txt file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RobotsTxt {
    groups: Vec<Group>,
    extensions: Vec<Extension>,
    sitemaps: Vec<String>,
    /// Everything disallowed (RFC 9309: robots.txt unreachable).
    disallow_all: bool,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Key {
    UserAgent,
    Allow,
    Disallow,
    CrawlDelay,
    RequestRate,
    Sitemap,
    Other,
}

/// Google's keys match by prefix, case-insensitively (`user-agentx` is a user-agent
/// line), with its accepted typos; Protego's extra keys match exactly.
fn key_of(k: &str) -> Key {
    let k = k.trim().to_ascii_lowercase();
    let starts = |p: &str| k.starts_with(p);
    if starts("user-agent") || starts("useragent") || starts("user agent") {
        Key::UserAgent
    } else if starts("allow") {
        Key::Allow
    } else if [
        "disallow",
        "dissallow",
        "dissalow",
        "disalow",
        "diasllow",
        "disallaw",
    ]
    .iter()
    .any(|p| starts(p))
    {
        Key::Disallow
    } else if matches!(k.as_str(), "sitemap" | "sitemaps" | "site-map") {
        Key::Sitemap
    } else if matches!(k.as_str(), "crawl-delay" | "crawl delay") {
        Key::CrawlDelay
    } else if matches!(k.as_str(), "request-rate" | "request rate") {
        Key::RequestRate
    } else {
        Key::Other
    }
}

/// Splits a line (comment already removed, trimmed) into key and value: at the first
/// `:`; without one, at whitespace when a single value follows (Google); a `key value`
/// line whose colon sits inside the value (`Sitemap https://...`) is salvaged as
/// Protego does.
fn key_value(line: &[u8]) -> Option<(Key, &[u8])> {
    if let Some(colon) = line.iter().position(|&b| b == b':') {
        let key = String::from_utf8_lossy(line[..colon].trim_ascii()).into_owned();
        let value = line[colon + 1..].trim_ascii();
        let k = key_of(&key);
        if k != Key::Other || key.is_empty() {
            return (!key.is_empty()).then_some((k, value));
        }
        let raw = &line[colon + 1..];
        if raw.is_empty() || raw[0].is_ascii_whitespace() {
            return Some((Key::Other, value));
        }
    }
    // `Disallow /path`, `Sitemap https://...`, `User agent foo`.
    let words: Vec<&[u8]> = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    for n in 1..=2.min(words.len().saturating_sub(1)) {
        let key = words[..n]
            .iter()
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let k = key_of(&key);
        let exact = matches!(
            key.to_ascii_lowercase().as_str(),
            "user-agent"
                | "useragent"
                | "user agent"
                | "allow"
                | "disallow"
                | "sitemap"
                | "sitemaps"
                | "site-map"
                | "crawl-delay"
                | "crawl delay"
                | "request-rate"
                | "request rate"
        ) || matches!(k, Key::Disallow);
        if k != Key::Other && exact {
            let start = words[n].as_ptr() as usize - line.as_ptr() as usize;
            return Some((k, line[start..].trim_ascii()));
        }
    }
    None
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Whether the `url` crate percent-encodes `b` in a path (`in_query`: in a query): the
/// WHATWG path / special-query percent-encode sets. A rule is encoded the way the URL
/// it is matched against was, so `Allow: /a<d.html` matches the URL `/a<d.html`.
fn url_crate_encodes(b: u8, in_query: bool) -> bool {
    !(0x21..0x7f).contains(&b)
        || matches!(b, b'"' | b'#' | b'<' | b'>')
        || (!in_query && matches!(b, b'`' | b'{' | b'}'))
        || (in_query && b == b'\'')
}

/// Percent-encoding normalisation shared by patterns and paths (RFC 9309 §2.2.2): `%XX`
/// of an unreserved character is decoded, other escapes are upper-cased, and bytes the
/// `url` crate would encode are encoded (non-ASCII included, byte by byte, as Google's
/// `MaybeEscapePattern`). `*` and `$` pass through: pattern syntax in rules.
fn normalise(s: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(s.len());
    let mut in_query = false;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == b'%'
            && i + 2 < s.len()
            && let (Some(h), Some(l)) = (hex_digit(s[i + 1]), hex_digit(s[i + 2]))
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
        if c == b'?' {
            in_query = true;
        }
        if url_crate_encodes(c, in_query) {
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

/// Whether [`normalise`] gives `s` back unchanged, decided conservatively: no escape
/// to rewrite, no `?` (after which the query's set applies), no byte to encode.
fn normalises_to_itself(s: &[u8]) -> bool {
    s.iter()
        .all(|&b| b != b'%' && b != b'?' && !url_crate_encodes(b, false))
}

/// Whether `pattern` (with `*` and a final `$`) matches the start of `path` (Google's
/// `Matches`, greedily: each `*`-separated piece at its leftmost place).
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

/// Google's `ExtractUserAgent`: the leading run of ASCII letters, `-` and `_`
/// (`Googlebot/2.1` → `Googlebot`), lower-cased.
fn product_token(agent: &[u8]) -> String {
    let end = agent
        .iter()
        .position(|b| !(b.is_ascii_alphabetic() || *b == b'-' || *b == b'_'))
        .unwrap_or(agent.len());
    String::from_utf8_lossy(&agent[..end]).to_ascii_lowercase()
}

/// Google's line length limit: 2,083 × 8 bytes including the terminator.
const MAX_LINE: usize = 2083 * 8 - 1;

impl RobotsTxt {
    /// Parses a robots.txt body, byte for byte as Google's parser (bytes past
    /// [`MAX_ROBOTS_SIZE`] are ignored; a line keeps its first 16,663 bytes).
    pub fn parse(body: &[u8]) -> Self {
        let body = &body[..body.len().min(MAX_ROBOTS_SIZE)];
        // Google skips whatever prefix of the UTF-8 BOM the file starts with.
        let bom = body
            .iter()
            .zip(b"\xef\xbb\xbf")
            .take_while(|(a, b)| a == b)
            .count();
        let body = &body[bom..];
        let mut robots = Self::default();
        let mut ext = ExtensionParser::default();
        // The group being built, and whether a rule ended its user-agent lines
        // (Google's `seen_separator_`: only allow/disallow lines do).
        let mut current: Option<usize> = None;
        let mut separated = true;
        for line in body.split(|&b| b == b'\n' || b == b'\r') {
            let line = &line[..line.len().min(MAX_LINE)];
            let line = match line.iter().position(|&b| b == b'#') {
                Some(at) => &line[..at],
                None => line,
            };
            let line = line.trim_ascii();
            if line.is_empty() {
                continue;
            }
            let Some((key, value)) = key_value(line) else {
                continue;
            };
            ext.directive(&mut robots.extensions, key, value);
            match key {
                Key::UserAgent => {
                    if separated || current.is_none() {
                        robots.groups.push(Group::default());
                        current = Some(robots.groups.len() - 1);
                        separated = false;
                    }
                    let agent = if value.first() == Some(&b'*')
                        && value.get(1).is_none_or(u8::is_ascii_whitespace)
                    {
                        Agent::Global
                    } else {
                        Agent::Token(product_token(value))
                    };
                    if let Some(g) = current {
                        robots.groups[g].agents.push(agent);
                    }
                }
                Key::Allow | Key::Disallow => {
                    let Some(g) = current else { continue };
                    separated = true;
                    if value.is_empty() {
                        continue; // an empty rule matches with priority 0: no effect
                    }
                    robots.groups[g].rules.push(Rule {
                        allow: key == Key::Allow,
                        pattern: normalise(value),
                    });
                }
                Key::CrawlDelay | Key::RequestRate => {}
                Key::Sitemap => {
                    if !value.is_empty() {
                        robots
                            .sitemaps
                            .push(String::from_utf8_lossy(value).into_owned());
                    }
                }
                Key::Other => {}
            }
        }
        robots.shrink();
        robots
    }

    /// Gives back the vectors' growth room: a broad crawl keeps one parsed file per
    /// host (a two-line file's vectors held ~700 bytes of room, 7 MB at 10,000 hosts).
    fn shrink(&mut self) {
        for g in &mut self.groups {
            g.agents.shrink_to_fit();
            g.rules.shrink_to_fit();
            for r in &mut g.rules {
                r.pattern.shrink_to_fit();
            }
        }
        self.groups.shrink_to_fit();
        self.extensions.shrink_to_fit();
        self.sitemaps.shrink_to_fit();
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

    /// The groups for `user_agent`: those naming its product token (RFC 9309 §2.2.1,
    /// case-insensitive, merged), else the `*` groups. `true` with the specific ones.
    fn groups_for<'a>(
        &'a self,
        user_agent: &'a str,
    ) -> (impl Iterator<Item = &'a Group> + 'a, bool) {
        // The caller's product token: its user agent up to the first `/` or space
        // (`trawl/0.1 (+https://...)` → `trawl`), compared whole as Google compares
        // the agent it is given (a group's tokens are lower-case ASCII: comparing
        // them with the token's ASCII case ignored is comparing with its lower case,
        // without writing it out).
        let token = user_agent
            .trim()
            .split(|c: char| c == '/' || c.is_whitespace())
            .next()
            .unwrap_or("");
        let names_token = move |g: &Group| {
            !token.is_empty()
                && g.agents
                    .iter()
                    .any(|a| matches!(a, Agent::Token(t) if t.eq_ignore_ascii_case(token)))
        };
        let specific = self.groups.iter().any(names_token);
        let groups = self.groups.iter().filter(move |g| {
            if specific {
                names_token(g)
            } else {
                g.agents.contains(&Agent::Global)
            }
        });
        (groups, specific)
    }

    /// Whether `user_agent` may fetch `url`: Google's longest-match rule over the
    /// groups for the agent's product token (`trawl/0.1 (...)` → `trawl`), an `Allow`
    /// winning a tie; `Allow: .../index.html` also allows the directory. `/robots.txt`
    /// itself is always allowed (RFC 9309 §2.5).
    pub fn allowed(&self, url: &Url, user_agent: &str) -> bool {
        let path = url.path();
        if path == "/robots.txt" {
            return true;
        }
        if self.disallow_all {
            return false;
        }
        // A path `normalise` gives back as it is (the usual one: the `url` crate has
        // encoded it already) is matched where it lies, without a copy.
        let target = match url.query() {
            None if normalises_to_itself(path.as_bytes()) => std::borrow::Cow::Borrowed(path),
            query => {
                let mut target = normalise(path.as_bytes());
                if let Some(q) = query {
                    target.push('?');
                    target.push_str(&normalise(q.as_bytes()));
                }
                std::borrow::Cow::Owned(target)
            }
        };
        let (groups, _) = self.groups_for(user_agent);
        let (mut allow, mut disallow) = (-1i64, -1i64);
        for r in groups.flat_map(|g| g.rules.iter()) {
            let len = r.pattern.len() as i64;
            if r.allow {
                if pattern_matches(&r.pattern, &target) {
                    allow = allow.max(len);
                } else if let Some(dir) = index_html_directory(&r.pattern)
                    && pattern_matches(&dir, &target)
                {
                    allow = allow.max(dir.len() as i64);
                }
            } else if pattern_matches(&r.pattern, &target) {
                disallow = disallow.max(len);
            }
        }
        !(allow > 0 || disallow > 0) || disallow <= allow
    }

    /// The `Crawl-delay` applying to `user_agent`, in seconds (Protego's grouping and
    /// matching: the user-agent value found at a token boundary of `user_agent` with
    /// the longest length, else `*`).
    pub fn crawl_delay(&self, user_agent: &str) -> Option<f64> {
        self.extension_for(user_agent)?.crawl_delay
    }

    /// The `Request-rate` (requests, per seconds) applying to `user_agent` (as
    /// [`crawl_delay`](Self::crawl_delay) chooses).
    pub fn request_rate(&self, user_agent: &str) -> Option<(u32, f64)> {
        self.extension_for(user_agent)?.request_rate
    }

    /// Protego's `_get_matching_rule_set`: the best `applies_to` score, first on ties.
    fn extension_for(&self, user_agent: &str) -> Option<&Extension> {
        let robot = user_agent.trim().to_lowercase();
        let score = |agent: &str| -> usize {
            if agent == "*" {
                return 1;
            }
            let mut from = 0;
            while let Some(at) = robot[from..].find(agent) {
                let index = from + at;
                // Python: the previous character is neither alphanumeric nor `-`/`_`.
                let boundary = index == 0
                    || robot[..index]
                        .chars()
                        .next_back()
                        .is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
                if boundary {
                    return agent.len();
                }
                from = index + robot[index..].chars().next().map_or(1, char::len_utf8);
            }
            0
        };
        let mut best: Option<(usize, &Extension)> = None;
        for e in &self.extensions {
            let s = score(&e.agent);
            if s > 0 && best.is_none_or(|(b, _)| s > b) {
                best = Some((s, e));
            }
        }
        best.map(|(_, e)| e)
    }

    /// The `Sitemap:` URLs, in file order.
    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }
}

/// Google: an `Allow` pattern whose last segment starts with `index.htm` also allows
/// the directory itself (`/a/index.html` → `/a/$`).
fn index_html_directory(pattern: &str) -> Option<String> {
    let slash = pattern.rfind('/')?;
    pattern[slash..]
        .starts_with("/index.htm")
        .then(|| format!("{}$", &pattern[..=slash]))
}

/// Protego's grouping for `Crawl-delay` / `Request-rate`.
#[derive(Default)]
struct ExtensionParser {
    /// Indices into the extensions of the current record group.
    current: Vec<usize>,
    /// The last directive other than `Sitemap`: a user-agent line after any other one
    /// starts a new record group.
    previous: Option<Key>,
}

impl ExtensionParser {
    fn directive(&mut self, all: &mut Vec<Extension>, key: Key, value: &[u8]) {
        if key == Key::UserAgent && self.previous.is_some_and(|p| p != Key::UserAgent) {
            self.current.clear();
        }
        if key != Key::Sitemap {
            self.previous = Some(key);
        }
        if value.is_empty() || (self.current.is_empty() && key != Key::UserAgent) {
            return;
        }
        let text = String::from_utf8_lossy(value);
        match key {
            Key::UserAgent => {
                let agent = text.trim().to_lowercase();
                let starless =
                    (agent != "*" && agent.contains('*')).then(|| agent.replace('*', ""));
                for a in std::iter::once(agent).chain(starless) {
                    if a.is_empty() {
                        continue;
                    }
                    let index = match all.iter().position(|e| e.agent == a) {
                        Some(i) => i,
                        None => {
                            all.push(Extension {
                                agent: a,
                                ..Extension::default()
                            });
                            all.len() - 1
                        }
                    };
                    if !self.current.contains(&index) {
                        self.current.push(index);
                    }
                }
            }
            Key::CrawlDelay => {
                if let Ok(d) = text.trim().parse::<f64>()
                    && d.is_finite()
                    && d >= 0.0
                {
                    for &i in &self.current {
                        all[i].crawl_delay = Some(d);
                    }
                }
            }
            Key::RequestRate => {
                if let Some(rate) = parse_request_rate(&text) {
                    for &i in &self.current {
                        all[i].request_rate = Some(rate);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Protego's `Request-rate`: `requests/seconds` with an optional `s`/`m`/`h`/`d` unit
/// (integers), and an optional `HHMM-HHMM` window that must be well formed → (requests,
/// seconds).
fn parse_request_rate(v: &str) -> Option<(u32, f64)> {
    let parts: Vec<&str> = v.split_whitespace().collect();
    let rate = *parts.first()?;
    if parts.len() == 2 {
        let (start, end) = parts[1].split_once('-')?;
        let time = |t: &str| {
            let t = t.trim();
            (3..=4).contains(&t.len())
                && t.bytes().all(|b| b.is_ascii_digit())
                && t[..t.len() - 2].parse::<u32>().is_ok_and(|h| h < 24)
                && t[t.len() - 2..].parse::<u32>().is_ok_and(|m| m < 60)
        };
        if end.contains('-') || !time(start) || !time(end) {
            return None;
        }
    }
    let (n, per) = rate.split_once('/')?;
    if per.contains('/') {
        return None;
    }
    let n: u32 = n.trim().parse().ok()?;
    let (num, mult) = match per.chars().last()?.to_ascii_lowercase() {
        's' => (&per[..per.len() - 1], 1.0),
        'm' => (&per[..per.len() - 1], 60.0),
        'h' => (&per[..per.len() - 1], 3600.0),
        'd' => (&per[..per.len() - 1], 86400.0),
        _ => (per, 1.0),
    };
    let secs = f64::from(num.trim().parse::<u32>().ok()?) * mult;
    (n > 0 && secs > 0.0).then_some((n, secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(robots: &RobotsTxt, path: &str, ua: &str) -> bool {
        let url = Url::parse(&format!("http://example.com{path}")).expect("test URL");
        robots.allowed(&url, ua)
    }

    #[test]
    fn a_path_admitted_as_is_is_its_own_normal_form() {
        // Random byte strings over an alphabet dense in the bytes `normalise` treats
        // apart: whenever the shortcut admits one, `normalise` gives it back.
        const ALPHABET: &[u8] = b"/a%2F?'`{}<>#\"~*$ \x7f\xc3\xa9";
        let mut next = crate::util::xorshift(0x5eed_cafe);
        let mut admitted = 0;
        for _ in 0..50_000 {
            let len = (next() % 12) as usize;
            let s: Vec<u8> = (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect();
            if normalises_to_itself(&s) {
                admitted += 1;
                assert_eq!(
                    normalise(&s).as_bytes(),
                    &s[..],
                    "{:?}",
                    String::from_utf8_lossy(&s)
                );
            }
        }
        assert!(
            admitted > 1_000,
            "the generator rarely reaches the shortcut: {admitted}"
        );
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
