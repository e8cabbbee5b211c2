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

    /// The endpoint to connect to.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            host: self.host.clone(),
            port: self.port,
            tls: self.tls,
            proxy: None,
        }
    }

    /// `host:port/db`, for logs (never the password).
    pub fn display(&self) -> String {
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
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_owned(),
    }
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
    }
}
