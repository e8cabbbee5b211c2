//! Where the media pipelines keep files (`FILES_STORE`): a directory (a path or a
//! `file://` URI, Scrapy's `FSFilesStore`), an S3 prefix (`s3://bucket/prefix/`,
//! Scrapy's `S3FilesStore`) or an FTP directory (`ftp://user:pass@host/dir`, Scrapy's
//! `FTPFilesStore`), on the S3 and FTP clients the feeds use. `stat_file` tells the
//! pipeline whether a file is already there and when it was stored; `persist_file`
//! stores one.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::client::ftp::{FtpClient, FtpTarget};
use crate::client::s3::S3Client;
use crate::crawl::context::CrawlContext;
use crate::crawl::extensions::feedexport::ftp::StorageFtp;
use crate::crawl::extensions::feedexport::s3::{StorageHttp, s3_config};
use crate::crawl::extensions::feedexport::uri::{redact, split_uri, uri_scheme};
use crate::defer::{Deferred, Failure};

/// The MD5 of `data`, in hex (a file's `checksum`).
pub fn md5_hex(data: &[u8]) -> String {
    use md5::Digest as _;
    crate::util::to_hex(&md5::Md5::digest(data))
}

/// A stored file's age and checksum.
#[derive(Debug, Clone, PartialEq)]
pub struct StatInfo {
    /// When it was stored, in UNIX seconds.
    pub last_modified: f64,
    /// Its MD5 (S3: the ETag), if known.
    pub checksum: Option<String>,
}

/// A files store.
pub trait FilesStore {
    /// The file at `path`, if it is stored (`None`: download it).
    fn stat_file(&self, path: &str) -> Deferred<Option<StatInfo>>;

    /// Stores `body` at `path`.
    fn persist_file(&self, path: &str, body: Vec<u8>) -> Deferred<()>;
}

/// The store of a `FILES_STORE` value.
///
/// # Errors
///
/// An unknown scheme, a directory that cannot be made, or S3 without credentials.
pub fn store_for(
    ctx: &Rc<CrawlContext>,
    uri: &str,
    acl_setting: &str,
) -> Result<Rc<dyn FilesStore>, String> {
    let scheme = if Path::new(uri).is_absolute() {
        "file".to_owned()
    } else {
        uri_scheme(uri)
    };
    match scheme.as_str() {
        "" | "file" => Ok(Rc::new(FsFilesStore::new(uri)?)),
        "s3" => Ok(Rc::new(S3FilesStore::new(ctx, uri, acl_setting)?)),
        "ftp" => Ok(Rc::new(FtpFilesStore::new(ctx, uri)?)),
        other => Err(format!(
            "FILES_STORE {uri:?}: unsupported scheme {other:?} (a path, file://, s3://, ftp://)"
        )),
    }
}

/// Scrapy's `FSFilesStore`.
#[derive(Debug)]
pub struct FsFilesStore {
    basedir: PathBuf,
}

impl FsFilesStore {
    /// The store under `basedir` (what follows `://` in a URI), made if missing.
    ///
    /// # Errors
    ///
    /// The directory cannot be made.
    pub fn new(basedir: &str) -> Result<Self, String> {
        let basedir = basedir.split_once("://").map_or(basedir, |(_, rest)| rest);
        std::fs::create_dir_all(basedir).map_err(|e| format!("FILES_STORE {basedir}: {e}"))?;
        Ok(Self {
            basedir: PathBuf::from(basedir),
        })
    }

    fn full_path(&self, path: &str) -> PathBuf {
        let mut p = self.basedir.clone();
        for part in path.split('/') {
            p.push(part);
        }
        p
    }
}

impl FilesStore for FsFilesStore {
    fn stat_file(&self, path: &str) -> Deferred<Option<StatInfo>> {
        let full = self.full_path(path);
        let Ok(meta) = std::fs::metadata(&full) else {
            return crate::defer::succeed(None);
        };
        let last_modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0.0, |d| d.as_secs_f64());
        match std::fs::read(&full) {
            Ok(body) => crate::defer::succeed(Some(StatInfo {
                last_modified,
                checksum: Some(md5_hex(&body)),
            })),
            Err(_) => crate::defer::succeed(None),
        }
    }

    fn persist_file(&self, path: &str, body: Vec<u8>) -> Deferred<()> {
        let full = self.full_path(path);
        let written = full
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&full, body));
        match written {
            Ok(()) => crate::defer::succeed(()),
            Err(e) => crate::defer::fail(Failure::msg(format!("{}: {e}", full.display()))),
        }
    }
}

/// Scrapy's `S3FilesStore`: objects under `s3://bucket/prefix`, with the
/// `FILES_STORE_S3_ACL` canned ACL (`private`).
#[derive(Debug)]
pub struct S3FilesStore {
    client: S3Client,
    bucket: String,
    prefix: String,
}

impl S3FilesStore {
    /// The store of an `s3://bucket/prefix` URI.
    ///
    /// # Errors
    ///
    /// The URI has no `/` after the bucket, or there are no credentials.
    pub fn new(ctx: &Rc<CrawlContext>, uri: &str, acl_setting: &str) -> Result<Self, String> {
        let expected = || format!("{}: expected s3://bucket/prefix", redact(uri));
        let rest = uri.split_once("://").ok_or_else(expected)?.1;
        let (bucket, prefix) = rest.split_once('/').ok_or_else(expected)?;
        let mut config = s3_config(&ctx.settings, None, None, acl_setting)?;
        if config.acl.is_none() {
            config.acl = Some("private".into());
        }
        let http = StorageHttp::of(ctx)?;
        Ok(Self {
            client: S3Client::new(http, ctx.clock().clone(), config),
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
        })
    }
}

impl FilesStore for S3FilesStore {
    fn stat_file(&self, path: &str) -> Deferred<Option<StatInfo>> {
        let key = format!("{}{path}", self.prefix);
        self.client.head_object(&self.bucket, &key).then(|r| {
            // Any failure (a 404 above all) means "download it", as Scrapy's errback.
            let Ok(headers) = r else {
                return Ok::<_, Failure>(None);
            };
            let text = |name: &str| {
                headers
                    .get(name)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            };
            let last_modified = text("last-modified")
                .and_then(|d| crate::proto::date::parse_http_date(&d))
                .map_or(0.0, |t| t as f64);
            let checksum = text("etag").map(|e| e.trim_matches('"').to_owned());
            Ok(Some(StatInfo {
                last_modified,
                checksum,
            }))
        })
    }

    fn persist_file(&self, path: &str, body: Vec<u8>) -> Deferred<()> {
        let key = format!("{}{path}", self.prefix);
        self.client.put_object(&self.bucket, &key, body)
    }
}

/// Scrapy's `FTPFilesStore`: files under the URI's directory, the user and password
/// from the URI or `FTP_USER` / `FTP_PASSWORD`, active mode with
/// `FEED_STORAGE_FTP_ACTIVE`. A stat asks `MDTM` and reads the file for its MD5.
#[derive(Debug)]
pub struct FtpFilesStore {
    client: FtpClient,
    target: FtpTarget,
    basedir: String,
}

impl FtpFilesStore {
    /// The store of an `ftp://` URI.
    ///
    /// # Errors
    ///
    /// The URI has no host, or a setting is malformed.
    pub fn new(ctx: &Rc<CrawlContext>, uri: &str) -> Result<Self, String> {
        let parts = split_uri(uri)?;
        let host = parts
            .hostname
            .clone()
            .ok_or_else(|| format!("FILES_STORE {}: no host", redact(uri)))?;
        let s = &ctx.settings;
        let setting = |name: &str| -> Result<String, String> {
            Ok(s.get_str(name)
                .map_err(|e| e.to_string())?
                .unwrap_or_default())
        };
        let username = match parts.username.filter(|u| !u.is_empty()) {
            Some(u) => u.to_owned(),
            None => setting("FTP_USER")?,
        };
        let password = match parts.password.filter(|p| !p.is_empty()) {
            Some(p) => p.to_owned(),
            None => setting("FTP_PASSWORD")?,
        };
        Ok(Self {
            client: StorageFtp::of(ctx)?,
            target: FtpTarget {
                host,
                port: parts.port.unwrap_or(21),
                username,
                password,
                path: String::new(),
                active: s
                    .get_bool("FEED_STORAGE_FTP_ACTIVE")
                    .map_err(|e| e.to_string())?,
                overwrite: true,
                timeout: 60.0,
            },
            basedir: parts.path.trim_end_matches('/').to_owned(),
        })
    }

    fn at(&self, path: &str) -> FtpTarget {
        FtpTarget {
            path: format!("{}/{path}", self.basedir),
            ..self.target.clone()
        }
    }
}

impl FilesStore for FtpFilesStore {
    fn stat_file(&self, path: &str) -> Deferred<Option<StatInfo>> {
        // Any failure (no such file above all) means "download it", as Scrapy's.
        self.client.stat_file(self.at(path)).then(|r| {
            Ok::<_, Failure>(r.ok().flatten().map(|st| StatInfo {
                last_modified: st.last_modified,
                checksum: Some(st.md5),
            }))
        })
    }

    fn persist_file(&self, path: &str, body: Vec<u8>) -> Deferred<()> {
        self.client.store_bytes(self.at(path), body)
    }
}
