//! Scrapy's `S3FeedStorage` (`s3://bucket/key`): a batch is written to a local file and
//! uploaded to the bucket when it closes — one `PUT` up to 8 MiB, a multipart upload
//! above — through trawl's S3 client on the reactor. Credentials come from the URI
//! (`s3://KEY:SECRET@bucket/key`, as Scrapy reads them), else `AWS_ACCESS_KEY_ID` /
//! `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`, else the environment variables of
//! the same names; `AWS_ENDPOINT_URL`, `AWS_REGION_NAME` and `FEED_STORAGE_S3_ACL` as in
//! Scrapy.

use std::path::Path;
use std::rc::Rc;

use url::Url;

use super::remote::{RemoteFeedStorage, Uploader};
use super::storage::{FeedStorage, StorageSetup};
use super::uri::split_uri;
use crate::client::http::{HttpClient, HttpClientConfig};
use crate::client::s3::{S3Client, S3Config};
use crate::crawl::base::settings::Settings;
use crate::crawl::context::CrawlContext;
use crate::defer::Deferred;
use crate::proto::sigv4::Credentials;

/// The HTTP client the crawl's storages share (one connection pool).
pub struct StorageHttp(pub HttpClient);

impl std::fmt::Debug for StorageHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StorageHttp")
    }
}

impl StorageHttp {
    /// The crawl's client, made on first use.
    ///
    /// # Errors
    ///
    /// The crawl has no reactor, or the TLS configuration failed.
    pub fn of(ctx: &CrawlContext) -> Result<HttpClient, String> {
        ctx.resource(|| {
            let reactor = ctx.require_reactor("a remote feed storage")?;
            Ok(Rc::new(Self(HttpClient::new(
                reactor,
                HttpClientConfig::new()?,
            ))))
        })
        .map(|h| h.0.clone())
        .map_err(|f| f.to_string())
    }
}

/// A setting's text, `None` when unset or empty.
fn text(s: &Settings, name: &str) -> Result<Option<String>, String> {
    Ok(s.get_str(name)
        .map_err(|e| e.to_string())?
        .filter(|v| !v.is_empty()))
}

/// A setting, else the environment variable of the same name.
fn setting_or_env(s: &Settings, name: &str) -> Result<Option<String>, String> {
    Ok(text(s, name)?.or_else(|| std::env::var(name).ok().filter(|v| !v.is_empty())))
}

/// The S3 configuration for a URI: credentials, endpoint, region, ACL.
///
/// # Errors
///
/// No credentials anywhere, or a malformed `AWS_ENDPOINT_URL`.
pub fn s3_config(
    settings: &Settings,
    user: Option<&str>,
    password: Option<&str>,
    acl_setting: &str,
) -> Result<S3Config, String> {
    let access_key = match user.filter(|u| !u.is_empty()) {
        Some(u) => Some(u.to_owned()),
        None => setting_or_env(settings, "AWS_ACCESS_KEY_ID")?,
    };
    let secret_key = match password.filter(|p| !p.is_empty()) {
        Some(p) => Some(p.to_owned()),
        None => setting_or_env(settings, "AWS_SECRET_ACCESS_KEY")?,
    };
    let (Some(access_key), Some(secret_key)) = (access_key, secret_key) else {
        return Err(
            "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (settings or \
             environment), or give them in the URI (s3://KEY:SECRET@bucket/key)"
                .into(),
        );
    };
    let mut config = S3Config::new(Credentials {
        access_key,
        secret_key,
        session_token: setting_or_env(settings, "AWS_SESSION_TOKEN")?,
    });
    if let Some(e) = setting_or_env(settings, "AWS_ENDPOINT_URL")? {
        config.endpoint =
            Some(Url::parse(&e).map_err(|err| format!("AWS_ENDPOINT_URL {e:?}: {err}"))?);
    }
    if let Some(r) = text(settings, "AWS_REGION_NAME")? {
        config.region = r;
    }
    config.acl = text(settings, acl_setting)?;
    Ok(config)
}

/// Uploads a batch to one object.
struct S3Uploader {
    client: S3Client,
    bucket: String,
    key: String,
}

impl Uploader for S3Uploader {
    fn kind(&self) -> &str {
        "S3FeedStorage"
    }

    fn upload(&self, path: &Path) -> Deferred<()> {
        self.client
            .upload_file(path.to_path_buf(), &self.bucket, &self.key)
    }
}

/// The storage of an `s3://` URI.
///
/// # Errors
///
/// The URI has no bucket or key, there are no credentials, or a setting is malformed.
pub fn s3_storage(setup: &StorageSetup<'_>) -> Result<Rc<dyn FeedStorage>, String> {
    let parts = split_uri(setup.uri)?;
    let bucket = parts.hostname.clone().ok_or_else(|| {
        format!(
            "Got a storage URI without a bucket: {}",
            super::uri::redact(setup.uri)
        )
    })?;
    let key = parts
        .path
        .strip_prefix('/')
        .unwrap_or(parts.path)
        .to_owned();
    if key.is_empty() {
        return Err(format!(
            "Got a storage URI without a key: {}",
            super::uri::redact(setup.uri)
        ));
    }
    let config = s3_config(
        setup.settings,
        parts.username,
        parts.password,
        "FEED_STORAGE_S3_ACL",
    )?;
    if setup.overwrite == Some(false) {
        log::warn!(
            "S3 does not support appending to files. To suppress this warning, remove the \
             overwrite option from your FEEDS setting or set it to True."
        );
    }
    let http = StorageHttp::of(setup.ctx)?;
    let client = S3Client::new(http, setup.ctx.clock().clone(), config);
    let uploader = Rc::new(S3Uploader {
        client,
        bucket,
        key,
    });
    Ok(Rc::new(RemoteFeedStorage::new(setup, uploader)?))
}
