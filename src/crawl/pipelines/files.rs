//! Scrapy's `FilesPipeline`: for each item, the URLs in `file_urls`
//! (`FILES_URLS_FIELD`) are downloaded through the engine (`engine.download`: the
//! downloader middlewares, robots.txt, download slots and delays, stats), stored under
//! `FILES_STORE` as `full/<SHA-1 of the URL><extension>`, and described in `files`
//! (`FILES_RESULT_FIELD`): `url`, `path`, `checksum` (MD5 of the body) and `status`
//! (`downloaded`, `cached` from the HTTP cache, `uptodate` when the stored file is
//! younger than `FILES_EXPIRES` days and was not downloaded again). A URL is
//! downloaded once per crawl however many items name it; a failed download is logged
//! and left out of the result, and the item goes on. Without
//! `MEDIA_ALLOW_REDIRECTS` a redirect is a failure, as in Scrapy.
//!
//! What Scrapy users override in a subclass — the stored path, which URLs an item
//! yields, what goes into the item — is [`FilesHooks`].

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::{Rc, Weak};
use std::sync::Arc;

use serde_json::{Value, json};

use super::images::{ImageJob, ImagePool};
use super::mimetypes::{guess_extension, guess_type, in_types_map, path_suffix, urlparse_path};
pub use super::store::md5_hex;
use super::store::{FilesStore, StatInfo, store_for};
use crate::crawl::base::errors::{IgnoreRequest, NotConfigured};
use crate::crawl::base::item::Item;
use crate::crawl::context::CrawlContext;
use crate::crawl::core::pipeline::{ItemOutcome, ItemPipeline};
use crate::crawl::http::fingerprint::{FingerprintOptions, fingerprint};
use crate::crawl::http::request::{Request, keys};
use crate::crawl::http::response::Response;
use crate::defer::{Deferred, DeferredList, Failure};

/// A file's entry in the item (`{"url", "path", "checksum", "status"}`).
pub type FileInfo = Value;

/// What a project changes about the pipeline (Scrapy: a `FilesPipeline` subclass).
pub trait FilesHooks {
    /// The requests for an item's files (`get_media_requests`): by default one GET per
    /// URL of the list in `urls_field`.
    ///
    /// # Errors
    ///
    /// The field is not a list of URLs (the item fails, as Scrapy's `TypeError`).
    fn media_requests(&self, item: &Item, urls_field: &str) -> Result<Vec<Request>, Failure> {
        default_media_requests(item, urls_field)
    }

    /// Where a file is stored, relative to the store (`file_path`).
    fn file_path(&self, request: &Request, _response: Option<&Response>, _item: &Item) -> String {
        default_file_path(request.url_str())
    }

    /// Where a thumbnail of an image is stored (`ImagesPipeline.thumb_path`).
    fn thumb_path(
        &self,
        request: &Request,
        thumb_id: &str,
        _response: Option<&Response>,
        _item: &Item,
    ) -> String {
        format!("thumbs/{thumb_id}/{}.jpg", sha1_hex(request.url_str()))
    }

    /// Puts the results into the item (`item_completed`): by default the successful
    /// ones, in request order, in `result_field`.
    ///
    /// # Errors
    ///
    /// The item fails (an `Err(DropItem)` drops it).
    fn item_completed(
        &self,
        results: Vec<Result<FileInfo, Failure>>,
        mut item: Item,
        result_field: &str,
    ) -> Result<Item, Failure> {
        let ok: Vec<Value> = results.into_iter().filter_map(Result::ok).collect();
        item.0.insert(result_field.to_owned(), Value::Array(ok));
        Ok(item)
    }
}

/// The hooks of a plain `FilesPipeline`.
#[derive(Debug, Default)]
pub struct DefaultFilesHooks;

impl FilesHooks for DefaultFilesHooks {}

/// The hooks of a plain `ImagesPipeline`: every image is stored as
/// `full/<SHA-1 of the URL>.jpg`.
#[derive(Debug, Default)]
pub struct DefaultImagesHooks;

impl FilesHooks for DefaultImagesHooks {
    fn file_path(&self, request: &Request, _response: Option<&Response>, _item: &Item) -> String {
        format!("full/{}.jpg", sha1_hex(request.url_str()))
    }
}

fn sha1_hex(text: &str) -> String {
    use sha1::Digest as _;
    crate::util::to_hex(&sha1::Sha1::digest(text.as_bytes()))
}

/// Scrapy's `get_media_requests`.
///
/// # Errors
///
/// The field holds something else than a list of URL strings.
pub fn default_media_requests(item: &Item, urls_field: &str) -> Result<Vec<Request>, Failure> {
    let urls = match item.0.get(urls_field) {
        None => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(other) => {
            return Err(Failure::msg(format!(
                "{urls_field} must be a list of URLs, got {}. ",
                python_type(other)
            )));
        }
    };
    urls.iter()
        .map(|u| {
            let text = u
                .as_str()
                .ok_or_else(|| Failure::msg(format!("{urls_field} holds a non-string URL: {u}")))?;
            Request::get(text).map_err(|e| Failure::msg(format!("bad URL {text:?}: {e}")))
        })
        .collect()
}

fn python_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Scrapy's `file_path`: `full/<SHA-1 of the URL><extension>`, the extension from the
/// URL's path, else from the raw URL, else guessed from the MIME type Python's
/// `mimetypes` gives the URL.
pub fn default_file_path(url: &str) -> String {
    let guid = sha1_hex(url);
    let mut ext = path_suffix(urlparse_path(url)).to_owned();
    if !in_types_map(&ext) {
        ext = path_suffix(url).to_owned();
    }
    if !in_types_map(&ext) {
        ext = guess_type(url)
            .and_then(|t| guess_extension(&t))
            .unwrap_or("")
            .to_owned();
    }
    format!("full/{guid}{ext}")
}

/// A file failure (Scrapy's `FileException`), or a request a middleware filtered.
#[derive(Debug, Clone)]
struct FileException(String);

impl std::fmt::Display for FileException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FileException {}

/// What the pipeline remembers for the crawl (Scrapy's `SpiderInfo`).
#[derive(Default)]
struct MediaState {
    /// Results by request fingerprint (a failure as its message).
    downloaded: HashMap<[u8; 20], Result<FileInfo, String>>,
    /// Requests whose result is coming.
    waiting: HashMap<[u8; 20], Vec<Deferred<FileInfo>>>,
    downloading: HashSet<[u8; 20]>,
}

/// The files pipeline.
pub struct FilesPipeline {
    me: Weak<FilesPipeline>,
    ctx: Weak<CrawlContext>,
    store: Rc<dyn FilesStore>,
    hooks: Rc<dyn FilesHooks>,
    expires_days: f64,
    urls_field: String,
    result_field: String,
    allow_redirects: bool,
    /// `ImagesPipeline`: the image threads and what to make of each image.
    images: Option<(Rc<ImagePool>, Arc<ImageJob>)>,
    state: RefCell<MediaState>,
}

impl std::fmt::Debug for FilesPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilesPipeline")
            .field("urls_field", &self.urls_field)
            .field("result_field", &self.result_field)
            .finish_non_exhaustive()
    }
}

impl FilesPipeline {
    /// The pipeline with Scrapy's behaviour.
    ///
    /// # Errors
    ///
    /// No `FILES_STORE` ([`NotConfigured`]), an unknown store scheme or a malformed
    /// setting.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        Self::with_hooks(ctx, Rc::new(DefaultFilesHooks))
    }

    /// The pipeline with a project's hooks.
    ///
    /// # Errors
    ///
    /// As [`from_context`](Self::from_context).
    pub fn with_hooks(
        ctx: &Rc<CrawlContext>,
        hooks: Rc<dyn FilesHooks>,
    ) -> Result<Rc<Self>, Failure> {
        Self::build(ctx, hooks, false)
    }

    /// Scrapy's `ImagesPipeline` (`IMAGES_STORE`, `image_urls` → `images`,
    /// `IMAGES_THUMBS`, `IMAGES_MIN_WIDTH` / `IMAGES_MIN_HEIGHT`).
    ///
    /// # Errors
    ///
    /// No `IMAGES_STORE` ([`NotConfigured`]), no reactor, or a malformed setting.
    pub fn images(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        Self::build(ctx, Rc::new(DefaultImagesHooks), true)
    }

    /// `ImagesPipeline` with a project's hooks.
    ///
    /// # Errors
    ///
    /// As [`images`](Self::images).
    pub fn images_with_hooks(
        ctx: &Rc<CrawlContext>,
        hooks: Rc<dyn FilesHooks>,
    ) -> Result<Rc<Self>, Failure> {
        Self::build(ctx, hooks, true)
    }

    fn build(
        ctx: &Rc<CrawlContext>,
        hooks: Rc<dyn FilesHooks>,
        images: bool,
    ) -> Result<Rc<Self>, Failure> {
        let s = &ctx.settings;
        let (prefix, class, urls, results) = if images {
            ("IMAGES", "ImagesPipeline", "image_urls", "images")
        } else {
            ("FILES", "FilesPipeline", "file_urls", "files")
        };
        let uri = s.get_str(&format!("{prefix}_STORE"))?.unwrap_or_default();
        if uri.is_empty() {
            return Err(Failure::new(NotConfigured(format!(
                "{prefix}_STORE setting must be set to a valid path (not empty) to enable \
                 {class}."
            ))));
        }
        let store =
            store_for(ctx, &uri, &format!("{prefix}_STORE_S3_ACL")).map_err(Failure::msg)?;
        let urls_field = s
            .get_str(&format!("{prefix}_URLS_FIELD"))?
            .unwrap_or_else(|| urls.into());
        let result_field = s
            .get_str(&format!("{prefix}_RESULT_FIELD"))?
            .unwrap_or_else(|| results.into());
        let expires_days = s.get_float(&format!("{prefix}_EXPIRES"))?;
        let allow_redirects = s.get_bool("MEDIA_ALLOW_REDIRECTS")?;
        let images = if images {
            let reactor = ctx.require_reactor("ImagesPipeline")?;
            let size = |name: &str| -> Result<u32, Failure> {
                let v = s.get_int(name)?;
                u32::try_from(v)
                    .map_err(|_| Failure::msg(format!("{name} must be from 0 to 2^32, not {v}")))
            };
            let mut thumbs = Vec::new();
            for (id, size_value) in s.get_dict("IMAGES_THUMBS")? {
                let pair = size_value.as_array().filter(|a| a.len() == 2);
                let dims: Option<Vec<u32>> = pair.map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
                        .collect()
                });
                match dims.as_deref() {
                    Some([w, h]) if *w > 0 && *h > 0 => thumbs.push((id, *w, *h)),
                    _ => {
                        return Err(Failure::msg(format!(
                            "IMAGES_THUMBS[{id:?}] must be a [width, height] pair of \
                             positive integers, not {size_value}"
                        )));
                    }
                }
            }
            let job = ImageJob {
                min_width: size("IMAGES_MIN_WIDTH")?,
                min_height: size("IMAGES_MIN_HEIGHT")?,
                thumbs,
            };
            let pool = ctx.resource(|| Ok(Rc::new(ImagePool::new(reactor))))?;
            Some((pool, Arc::new(job)))
        } else {
            None
        };
        Ok(Rc::new_cyclic(|me| Self {
            me: me.clone(),
            ctx: Rc::downgrade(ctx),
            store,
            hooks,
            expires_days,
            urls_field,
            result_field,
            allow_redirects,
            images,
            state: RefCell::new(MediaState::default()),
        }))
    }

    fn inc_stats(&self, status: &str) {
        if let Some(c) = self.ctx.upgrade() {
            c.stats.inc_value("file_count", 1);
            c.stats.inc_value(&format!("file_status_count/{status}"), 1);
        }
    }

    /// One file of an item (Scrapy's `_process_request`): the remembered result, or
    /// the download in progress, or a new stat-then-download.
    fn process_request(&self, mut request: Request, item: &Item) -> Deferred<FileInfo> {
        let fp = match self.ctx.upgrade() {
            Some(c) => c.fingerprinter().fingerprint(&request),
            None => fingerprint(&request, &FingerprintOptions::default()),
        };
        let known = self.state.borrow().downloaded.get(&fp).cloned();
        if let Some(result) = known {
            return match result {
                Ok(v) => crate::defer::succeed(v),
                Err(e) => crate::defer::fail(FileException(e)),
            };
        }
        let waiter = Deferred::new();
        let already = {
            let mut st = self.state.borrow_mut();
            st.waiting.entry(fp).or_default().push(waiter.clone());
            !st.downloading.insert(fp)
        };
        if already {
            return waiter;
        }
        // Scrapy's _modify_media_request.
        if self.allow_redirects {
            let codes: Vec<Value> = (100..600)
                .filter(|c| !(300..400).contains(c))
                .map(Value::from)
                .collect();
            request
                .meta_mut()
                .insert_known(keys::HANDLE_HTTPSTATUS_LIST, Value::Array(codes));
        } else {
            request
                .meta_mut()
                .insert_known(keys::HANDLE_HTTPSTATUS_ALL, true);
        }
        let path = self.hooks.file_path(&request, None, item);
        let me = self.me.clone();
        let item = item.clone();
        let stat = self.store.stat_file(&path);
        let _done: Deferred<()> = stat.then(move |stat| {
            let Some(p) = me.upgrade() else {
                return Ok(());
            };
            let fresh = stat
                .ok()
                .flatten()
                .and_then(|s| p.uptodate(&request, &path, s));
            let result = match fresh {
                Some(info) => crate::defer::succeed(info),
                None => p.download(request, item),
            };
            result.add_both(move |r| {
                if let Some(p) = me.upgrade() {
                    p.finish_request(fp, r.clone().map_err(|f| f.to_string()));
                }
                Ok::<FileInfo, Failure>(FileInfo::Null)
            });
            Ok(())
        });
        waiter
    }

    /// Scrapy's `media_to_download` success path: the stored file when it is younger
    /// than `FILES_EXPIRES` days.
    fn uptodate(&self, request: &Request, path: &str, stat: StatInfo) -> Option<FileInfo> {
        let now = self.ctx.upgrade()?.clock().wall_seconds();
        let age_days = (now - stat.last_modified) / 60.0 / 60.0 / 24.0;
        if stat.last_modified == 0.0 || age_days > self.expires_days {
            return None;
        }
        log::debug!(
            "File (uptodate): Downloaded file from {request} referred in <{}>",
            referer(request)
        );
        self.inc_stats("uptodate");
        Some(json!({
            "url": request.url_str(),
            "path": path,
            "checksum": stat.checksum,
            "status": "uptodate",
        }))
    }

    /// Downloads through the engine and stores (`media_downloaded` / `media_failed`).
    fn download(&self, request: Request, item: Item) -> Deferred<FileInfo> {
        let Some(engine) = self.ctx.upgrade().and_then(|c| c.engine()) else {
            return crate::defer::fail(FileException("the engine is not running".into()));
        };
        let me = self.me.clone();
        let req = request.clone();
        engine.download(request).then(move |r| {
            let Some(p) = me.upgrade() else {
                return crate::defer::Step::Done(Err(Failure::msg("the pipeline is gone")));
            };
            match r {
                Ok(resp) => crate::defer::Step::Wait(p.media_downloaded(&resp, &req, &item)),
                Err(f) => crate::defer::Step::Done(Err(p.media_failed(&f, &req))),
            }
        })
    }

    fn media_downloaded(
        &self,
        response: &Response,
        request: &Request,
        item: &Item,
    ) -> Deferred<FileInfo> {
        let referer = referer(request);
        if response.status() != 200 {
            log::warn!(
                "File (code: {}): Error downloading file from {request} referred in <{referer}>",
                response.status()
            );
            return crate::defer::fail(FileException("download-error".into()));
        }
        if response.body().is_empty() {
            log::warn!(
                "File (empty-content): Empty file from {request} referred in <{referer}>: \
                 no-content"
            );
            return crate::defer::fail(FileException("empty-content".into()));
        }
        let status = if response.flags().iter().any(|f| f == "cached") {
            "cached"
        } else {
            "downloaded"
        };
        log::debug!("File ({status}): Downloaded file from {request} referred in <{referer}>");
        self.inc_stats(status);
        let path = self.hooks.file_path(request, Some(response), item);
        if let Some((pool, job)) = &self.images {
            return self.image_downloaded(pool, job, response, request, item, path, status);
        }
        let checksum = md5_hex(response.body());
        let info = json!({
            "url": request.url_str(),
            "path": path,
            "checksum": checksum,
            "status": status,
        });
        let shown = request.to_string();
        self.store
            .persist_file(&path, response.body().to_vec())
            .then(move |r| match r {
                Ok(()) => Ok(info),
                Err(f) => {
                    log::error!(
                        "File (unknown-error): Error processing file from {shown} referred in \
                         <{referer}>: {f}"
                    );
                    Err(Failure::new(FileException(f.to_string())))
                }
            })
    }

    /// `ImagesPipeline.image_downloaded`: the image and its thumbnails, made on the
    /// image threads, stored one after the other; the checksum is the full image's.
    #[allow(clippy::too_many_arguments)]
    fn image_downloaded(
        &self,
        pool: &ImagePool,
        job: &Arc<ImageJob>,
        response: &Response,
        request: &Request,
        item: &Item,
        path: String,
        status: &'static str,
    ) -> Deferred<FileInfo> {
        let shown = request.to_string();
        let referer = referer(request);
        let url = request.url_str().to_owned();
        let me = self.me.clone();
        let request = request.clone();
        let response = response.clone();
        let item = item.clone();
        pool.convert(response.body().to_vec(), job.clone())
            .then(move |r| {
                let Some(p) = me.upgrade() else {
                    return crate::defer::Step::Done(Err(Failure::msg("the pipeline is gone")));
                };
                let images = match r {
                    Ok(images) => images,
                    Err(f) => {
                        log::error!(
                            "File (unknown-error): Error processing file from {shown} referred \
                             in <{referer}>: {f}"
                        );
                        return crate::defer::Step::Done(Err(Failure::new(FileException(
                            f.to_string(),
                        ))));
                    }
                };
                let checksum = images.first().map(|c| c.md5.clone()).unwrap_or_default();
                let files: Vec<(String, Vec<u8>)> = images
                    .into_iter()
                    .map(|c| {
                        let at = match &c.thumb {
                            None => path.clone(),
                            Some(id) => p.hooks.thumb_path(&request, id, Some(&response), &item),
                        };
                        (at, c.jpeg)
                    })
                    .collect();
                let info = json!({
                    "url": url,
                    "path": path,
                    "checksum": checksum,
                    "status": status,
                });
                crate::defer::Step::Wait(persist_all(p.store.clone(), files).then(
                    move |r| match r {
                        Ok(()) => Ok(info),
                        Err(f) => {
                            log::error!(
                                "File (unknown-error): Error processing file from {shown} \
                                 referred in <{referer}>: {f}"
                            );
                            Err(Failure::new(FileException(f.to_string())))
                        }
                    },
                ))
            })
    }

    fn media_failed(&self, failure: &Failure, request: &Request) -> Failure {
        let referer = referer(request);
        if let Some(IgnoreRequest(why)) = failure.find::<IgnoreRequest>() {
            log::debug!(
                "File (filtered): Not downloading file from {request} referred in <{referer}>: \
                 {why}"
            );
            return failure.clone();
        }
        log::warn!(
            "File (unknown-error): Error downloading file from {request} referred in \
             <{referer}>: {failure}"
        );
        Failure::new(FileException(failure.to_string()))
    }

    /// Remembers a result and hands it to every request waiting for it.
    fn finish_request(&self, fp: [u8; 20], result: Result<FileInfo, String>) {
        let waiters = {
            let mut st = self.state.borrow_mut();
            st.downloading.remove(&fp);
            st.downloaded.insert(fp, result.clone());
            st.waiting.remove(&fp).unwrap_or_default()
        };
        for w in waiters {
            let _ = match &result {
                Ok(v) => w.callback(v.clone()),
                Err(e) => w.errback(FileException(e.clone())),
            };
        }
    }
}

/// Stores `files` one after the other.
fn persist_all(store: Rc<dyn FilesStore>, mut files: Vec<(String, Vec<u8>)>) -> Deferred<()> {
    if files.is_empty() {
        return crate::defer::succeed(());
    }
    let (path, body) = files.remove(0);
    store.persist_file(&path, body).then(move |r| match r {
        Ok(()) => crate::defer::Step::Wait(persist_all(store, files)),
        Err(f) => crate::defer::Step::Done(Err(f)),
    })
}

/// The `Referer` a request carries, or `None` (Scrapy's `referer_str`).
fn referer(request: &Request) -> String {
    request.headers().get("Referer").map_or_else(
        || "None".to_owned(),
        |v| String::from_utf8_lossy(v).into_owned(),
    )
}

impl ItemPipeline for FilesPipeline {
    fn process_item(
        &self,
        item: Item,
        _response: Option<&Response>,
    ) -> Result<ItemOutcome, Failure> {
        let requests = self.hooks.media_requests(&item, &self.urls_field)?;
        if requests.is_empty() {
            return self
                .hooks
                .item_completed(Vec::new(), item, &self.result_field)
                .map(ItemOutcome::Item);
        }
        let files: Vec<Deferred<FileInfo>> = requests
            .into_iter()
            .map(|r| self.process_request(r, &item))
            .collect();
        let hooks = self.hooks.clone();
        let field = self.result_field.clone();
        let done = DeferredList::new(files)
            .consume_errors(true)
            .deferred()
            .then(move |r| {
                let results = r?.into_all().unwrap_or_default();
                hooks.item_completed(results, item, &field)
            });
        Ok(ItemOutcome::Wait(done))
    }
}
