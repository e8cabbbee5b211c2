//! Scrapy's `FTPFeedStorage` (`ftp://user:pass@host:port/path`): a batch is written to
//! a local file and stored on the server when it closes, with `STOR` (or `APPE` when
//! the feed's `overwrite` is false), passive unless `FEED_STORAGE_FTP_ACTIVE`, the
//! missing directories made first — through trawl's FTP client on the reactor. As in
//! Scrapy, the password is percent-decoded and the user name is not.

use std::path::Path;
use std::rc::Rc;

use super::remote::{RemoteFeedStorage, Uploader};
use super::storage::{FeedStorage, StorageSetup};
use super::uri::{redact, split_uri};
use crate::client::ftp::{FtpClient, FtpTarget};
use crate::crawl::context::CrawlContext;
use crate::defer::Deferred;

/// The FTP client the crawl's storages share.
pub struct StorageFtp(pub FtpClient);

impl std::fmt::Debug for StorageFtp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StorageFtp")
    }
}

impl StorageFtp {
    /// The crawl's client, made on first use.
    ///
    /// # Errors
    ///
    /// The crawl has no reactor.
    pub fn of(ctx: &CrawlContext) -> Result<FtpClient, String> {
        ctx.resource(|| {
            let reactor = ctx.require_reactor("an FTP storage")?;
            Ok(Rc::new(Self(FtpClient::new(reactor)?)))
        })
        .map(|c| c.0.clone())
        .map_err(|f| f.to_string())
    }
}

/// Where an `ftp://` URI points.
///
/// # Errors
///
/// The URI has no host, or a bad port.
pub fn ftp_target(uri: &str, active: bool, overwrite: bool) -> Result<FtpTarget, String> {
    let parts = split_uri(uri)?;
    let host = parts
        .hostname
        .clone()
        .ok_or_else(|| format!("Got a storage URI without a hostname: {}", redact(uri)))?;
    let password = parts.password.unwrap_or("");
    Ok(FtpTarget {
        host,
        port: parts.port.unwrap_or(21),
        username: parts.username.unwrap_or("").to_owned(),
        password: percent_encoding::percent_decode_str(password)
            .decode_utf8_lossy()
            .into_owned(),
        path: parts.path.to_owned(),
        active,
        overwrite,
        timeout: 60.0,
    })
}

/// Stores a batch at one path.
struct FtpUploader {
    client: FtpClient,
    target: FtpTarget,
}

impl Uploader for FtpUploader {
    fn kind(&self) -> &str {
        "FTPFeedStorage"
    }

    fn upload(&self, path: &Path) -> Deferred<()> {
        self.client
            .store_file(self.target.clone(), path.to_path_buf())
    }
}

/// The storage of an `ftp://` URI.
///
/// # Errors
///
/// The URI has no host or a bad port, or a setting is malformed.
pub fn ftp_storage(setup: &StorageSetup<'_>) -> Result<Rc<dyn FeedStorage>, String> {
    let active = setup
        .settings
        .get_bool("FEED_STORAGE_FTP_ACTIVE")
        .map_err(|e| e.to_string())?;
    let target = ftp_target(setup.uri, active, setup.overwrite.unwrap_or(true))?;
    let client = StorageFtp::of(setup.ctx)?;
    let uploader = Rc::new(FtpUploader { client, target });
    Ok(Rc::new(RemoteFeedStorage::new(setup, uploader)?))
}
