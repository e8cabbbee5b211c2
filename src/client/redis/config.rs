//! The Redis client's configuration: `REDIS_URL` parsing and the timeouts, backoff and
//! buffer limits, with the defaults scrapy-redis passes to redis-py
//! (`socket_timeout=30`, `socket_connect_timeout=30`, `retry_on_timeout=True`).

use std::fmt;

use crate::net::{Endpoint, TlsOptions};

/// Where and how to connect.
#[derive(Debug, Clone, PartialEq)]
pub struct RedisConfig {
    /// The server's host name or address.
    pub host: String,
    /// The server's port (6379).
    pub port: u16,
    /// TLS (`rediss://`).
    pub tls: Option<TlsOptions>,
    /// The ACL user name (`AUTH user pass`), if any.
    pub username: Option<String>,
    /// The password (`AUTH pass`), if any.
    pub password: Option<String>,
    /// The database number (`SELECT`), 0 by default.
    pub db: u32,
    /// Seconds one connection attempt may take (`socket_connect_timeout`, 30).
    pub connect_timeout: f64,
    /// Seconds a command may wait for its reply before the connection is considered
    /// dead, dropped and the command retried on a new one (`socket_timeout`, 30).
    pub command_timeout: f64,
    /// The first reconnection delay in seconds (0.1); it doubles per failed attempt.
    pub backoff_initial: f64,
    /// The largest reconnection delay in seconds (10).
    pub backoff_max: f64,
    /// Commands kept while disconnected (100,000); past it new commands fail with
    /// [`super::BufferFull`].
    pub max_buffered: usize,
    /// Find the master through Redis Sentinel (`redis+sentinel://`): `host` and `port`
    /// are then only the first sentinel's.
    pub sentinel: Option<SentinelConfig>,
}

/// Where the sentinels are and which master to ask them for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentinelConfig {
    /// The sentinels' `host:port`s, asked in order (one that answers moves to the
    /// front).
    pub sentinels: Vec<(String, u16)>,
    /// The master's name (`sentinel monitor <name> ...`).
    pub master: String,
    /// The sentinels' own password (`?sentinel_password=`), if they require one.
    pub password: Option<String>,
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self {
            host: "localhost".into(),
            port: 6379,
            tls: None,
            username: None,
            password: None,
            db: 0,
            connect_timeout: 30.0,
            command_timeout: 30.0,
            backoff_initial: 0.1,
            backoff_max: 10.0,
            max_buffered: 100_000,
            sentinel: None,
        }
    }
}

/// A `REDIS_URL` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisUrlError {
    /// The URL, with any password masked.
    pub url: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for RedisUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid Redis URL {:?}: {}", self.url, self.reason)
    }
}

impl std::error::Error for RedisUrlError {}

impl RedisConfig {
    /// Parses `redis://[[user]:password@]host[:port][/db]` or `rediss://…` (TLS with
    /// certificate verification; `?ssl_cert_reqs=none` turns verification off, as in
    /// redis-py). A `?db=N` query also selects the database.
    ///
    /// # Errors
    ///
    /// Another scheme (including `unix://`, not supported), no host, a bad port or
    /// database number.
    pub fn from_url(url: &str) -> Result<Self, RedisUrlError> {
        let err = |reason: &str| RedisUrlError {
            url: mask_password(url),
            reason: reason.into(),
        };
        if let Some(rest) = url.strip_prefix("redis+sentinel://") {
            return Self::from_sentinel_url(rest).map_err(|reason| err(&reason));
        }
        if url.starts_with("rediss+sentinel://") {
            return Err(err(
                "TLS to sentinels is not supported: use redis+sentinel://",
            ));
        }
        let parsed = url::Url::parse(url).map_err(|e| err(&e.to_string()))?;
        let mut config = Self::default();
        match parsed.scheme() {
            "redis" => {}
            "rediss" => config.tls = Some(TlsOptions { verify: true }),
            "unix" => {
                return Err(err(
                    "unix sockets are not supported: use redis://host:port or rediss://",
                ));
            }
            other => return Err(err(&format!("unknown scheme {other:?}"))),
        }
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| err("no host"))?;
        config.host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        config.port = parsed.port().unwrap_or(6379);
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| err("the credentials are not UTF-8"))
        };
        if !parsed.username().is_empty() {
            config.username = Some(decode(parsed.username())?);
        }
        if let Some(p) = parsed.password() {
            config.password = Some(decode(p)?);
        }
        let path = parsed.path().trim_start_matches('/');
        if !path.is_empty() {
            config.db = path
                .parse()
                .map_err(|_| err(&format!("the database {path:?} is not a number")))?;
        }
        for (k, v) in parsed.query_pairs() {
            match &*k {
                "db" => {
                    config.db = v
                        .parse()
                        .map_err(|_| err(&format!("the database {v:?} is not a number")))?;
                }
                "ssl_cert_reqs" if v.eq_ignore_ascii_case("none") => {
                    if let Some(t) = &mut config.tls {
                        t.verify = false;
                    }
                }
                _ => {}
            }
        }
        Ok(config)
    }

    /// Parses what follows `redis+sentinel://`:
    /// `[[user]:password@]host:port[,host:port...]/master[/db][?db=N&sentinel_password=P]`
    /// (the credentials and database are the master's).
    fn from_sentinel_url(rest: &str) -> Result<Self, String> {
        let mut config = Self::default();
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((a, r)) => (Some(a), r),
            None => (None, rest),
        };
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| "the credentials are not UTF-8".to_owned())
        };
        if let Some(a) = auth {
            let (user, pass) = a.split_once(':').unwrap_or((a, ""));
            if !user.is_empty() {
                config.username = Some(decode(user)?);
            }
            if !pass.is_empty() {
                config.password = Some(decode(pass)?);
            }
        }
        let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
        let mut sentinels = Vec::new();
        for h in hosts.split(',').filter(|h| !h.is_empty()) {
            let (host, port) = match h.rsplit_once(':') {
                Some((host, port)) if !host.ends_with(':') || host.starts_with('[') => (
                    host,
                    port.parse::<u16>()
                        .map_err(|_| format!("the sentinel port in {h:?} is not a port"))?,
                ),
                _ => (h, 26379),
            };
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if host.is_empty() {
                return Err(format!("no host in {h:?}"));
            }
            sentinels.push((host.to_owned(), port));
        }
        let mut parts = path.split('/');
        let master = parts.next().unwrap_or_default();
        if sentinels.is_empty() || master.is_empty() {
            return Err(
                "expected redis+sentinel://host:port[,host:port...]/mastername[/db]".into(),
            );
        }
        if let Some(db) = parts.next().filter(|d| !d.is_empty()) {
            config.db = db
                .parse()
                .map_err(|_| format!("the database {db:?} is not a number"))?;
        }
        let mut password = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "db" => {
                    config.db = v
                        .parse()
                        .map_err(|_| format!("the database {v:?} is not a number"))?;
                }
                "sentinel_password" => password = Some(decode(v)?),
                _ => {}
            }
        }
        config.host.clone_from(&sentinels[0].0);
        config.port = sentinels[0].1;
        config.sentinel = Some(SentinelConfig {
            sentinels,
            master: decode(master)?,
            password,
        });
        Ok(config)
    }

    /// The endpoint to connect to.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            host: self.host.clone(),
            port: self.port,
            tls: self.tls,
            proxy: None,
            bind: None,
        }
    }

    /// `host:port/db`, for logs (never the password).
    pub fn display(&self) -> String {
        if let Some(s) = &self.sentinel {
            return format!(
                "redis+sentinel://{}/{}/{}",
                s.sentinels
                    .iter()
                    .map(|(h, p)| format!("{h}:{p}"))
                    .collect::<Vec<_>>()
                    .join(","),
                s.master,
                self.db
            );
        }
        format!(
            "{}://{}:{}/{}",
            if self.tls.is_some() {
                "rediss"
            } else {
                "redis"
            },
            self.host,
            self.port,
            self.db
        )
    }
}

/// `url` with its password replaced by `***`, for messages.
pub fn mask_password(url: &str) -> String {
    if let Some(start) = url.find("://").map(|i| i + 3) {
        let authority_end = url[start..]
            .find(['/', '?'])
            .map_or(url.len(), |i| start + i);
        if let Some(at) = url[start..authority_end].rfind('@').map(|i| start + i)
            && let Some(colon) = url[start..at].find(':').map(|i| start + i)
            && colon + 1 < at
        {
            return format!("{}***{}", &url[..=colon], &url[at..]);
        }
    }
    url.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let c = RedisConfig::from_url("redis://localhost").expect("ok");
        assert_eq!((c.host.as_str(), c.port, c.db), ("localhost", 6379, 0));
        assert_eq!(c.password, None);
        let c = RedisConfig::from_url("redis://u%40x:p%3Aw@10.0.0.1:7000/3").expect("ok");
        assert_eq!((c.host.as_str(), c.port, c.db), ("10.0.0.1", 7000, 3));
        assert_eq!(c.username.as_deref(), Some("u@x"));
        assert_eq!(c.password.as_deref(), Some("p:w"));
        let c = RedisConfig::from_url("redis://:secret@h/").expect("ok");
        assert_eq!((c.username, c.password.as_deref()), (None, Some("secret")));
        let c = RedisConfig::from_url("rediss://h:6380?db=2&ssl_cert_reqs=none").expect("ok");
        assert_eq!(c.tls, Some(TlsOptions { verify: false }));
        assert_eq!(c.db, 2);
        let c = RedisConfig::from_url("redis://[::1]:6379/0").expect("ok");
        assert_eq!(c.host, "::1");
        for bad in [
            "http://h",
            "unix:///tmp/redis.sock",
            "redis://h/x",
            "redis://h:99999",
            "nonsense",
        ] {
            assert!(RedisConfig::from_url(bad).is_err(), "{bad}");
        }
        let e = RedisConfig::from_url("redis://u:hunter2@h/x").expect_err("bad db");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        assert_eq!(
            mask_password("redis://u:hunter2@h:1/0"),
            "redis://u:***@h:1/0"
        );
        assert_eq!(
            mask_password("redis+sentinel://:hunter2@a:1,b:2/m"),
            "redis+sentinel://:***@a:1,b:2/m"
        );
        assert_eq!(mask_password("redis://h/0"), "redis://h/0");
    }

    #[test]
    fn sentinel_urls() {
        let c = RedisConfig::from_url(
            "redis+sentinel://:pw@s1:26379,s2:5000,[::1]:7/mymaster/2?sentinel_password=sp",
        )
        .expect("ok");
        let s = c.sentinel.clone().expect("sentinel");
        assert_eq!(
            s.sentinels,
            vec![
                ("s1".to_owned(), 26379),
                ("s2".to_owned(), 5000),
                ("::1".to_owned(), 7)
            ]
        );
        assert_eq!(s.master, "mymaster");
        assert_eq!(s.password.as_deref(), Some("sp"));
        assert_eq!((c.db, c.password.as_deref()), (2, Some("pw")));
        assert_eq!(
            c.display(),
            "redis+sentinel://s1:26379,s2:5000,::1:7/mymaster/2"
        );
        let c = RedisConfig::from_url("redis+sentinel://s1/m").expect("default port");
        assert_eq!(c.sentinel.expect("sentinel").sentinels[0].1, 26379);
        for bad in [
            "redis+sentinel://s1:26379",
            "redis+sentinel:///m",
            "redis+sentinel://s1:x/m",
            "redis+sentinel://s1/m/x",
            "rediss+sentinel://s1/m",
        ] {
            assert!(RedisConfig::from_url(bad).is_err(), "{bad}");
        }
    }
}
