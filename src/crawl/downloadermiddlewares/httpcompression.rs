//! `HttpCompressionMiddleware`: asks for compressed responses and counts the decoded
//! ones (Scrapy's `scrapy.downloadermiddlewares.httpcompression`).
//!
//! Decoding itself happens while the body streams in, in the HTTP client
//! (`proto::decode`), so `DOWNLOAD_MAXSIZE` applies to the decoded size and a
//! decompression bomb stops at the limit (CVE-2024-3572, CVE-2025-6176). This middleware
//! sends `Accept-Encoding: gzip, deflate, br, zstd` (unless the request has its own) and
//! records `httpcompression/response_count` and `httpcompression/response_bytes` for
//! responses that arrived encoded.

use std::rc::{Rc, Weak};

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{
    DownloaderMiddleware, RequestOutcome, ResponseOutcome,
};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::defer::Failure;

/// The codings the client decodes, in preference order.
pub const ACCEPTED_ENCODINGS: &str = "gzip, deflate, br, zstd";

/// Sends `Accept-Encoding` and counts decoded responses.
#[derive(Debug)]
pub struct HttpCompressionMiddleware {
    ctx: Weak<CrawlContext>,
}

impl HttpCompressionMiddleware {
    /// Reads `COMPRESSION_ENABLED`.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        if !ctx.settings.get_bool("COMPRESSION_ENABLED")? {
            return Err(Failure::new(NotConfigured(
                "COMPRESSION_ENABLED is off".into(),
            )));
        }
        Ok(Self {
            ctx: Rc::downgrade(ctx),
        })
    }
}

impl DownloaderMiddleware for HttpCompressionMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        request
            .headers_mut()
            .set_default("Accept-Encoding", ACCEPTED_ENCODINGS);
        Ok(RequestOutcome::Continue)
    }

    fn process_response(
        &self,
        _request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        if response.meta().contains_key(keys::DECODED_FROM)
            && let Some(c) = self.ctx.upgrade()
        {
            c.stats.inc("httpcompression/response_count");
            c.stats.inc_value(
                "httpcompression/response_bytes",
                i64::try_from(response.body().len()).unwrap_or(i64::MAX),
            );
        }
        Ok(ResponseOutcome::Response(response))
    }
}
