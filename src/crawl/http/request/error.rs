//! [`KindError`] and the URL checks of Scrapy's `Request.__init__` (a scheme, a URL
//! the request's encoding can encode) that building a [`JsonRequest`](super::json_request::JsonRequest)
//! or a [`FormRequest`](super::form::FormRequest) makes.

use std::fmt;

use super::Request;

/// Why a request of one of these kinds could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KindError {
    /// The URL does not parse (Scrapy: `ValueError`).
    Url(String),
    /// A form value the request's encoding cannot encode (Python's
    /// `UnicodeEncodeError`).
    Encode(String),
    /// An encoding label no codec answers to (Python's `LookupError`).
    UnknownEncoding(String),
    /// `FormRequest::from_response` could not build the request (Scrapy's message).
    Form(String),
}

impl fmt::Display for KindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Url(u) => write!(f, "invalid request URL: {u}"),
            Self::Encode(m) => write!(f, "UnicodeEncodeError: {m}"),
            Self::UnknownEncoding(e) => write!(f, "unknown encoding: {e}"),
            Self::Form(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for KindError {}

pub(super) fn get(url: &str) -> Result<Request, KindError> {
    let request = Request::get(url).map_err(|e| KindError::Url(format!("{url:?}: {e}")))?;
    let text = request.url_str();
    if !(text.contains("://") || text.starts_with("about:") || text.starts_with("data:")) {
        return Err(KindError::Url(format!(
            "Missing scheme in request url: {text}"
        )));
    }
    Ok(request)
}

/// Scrapy's `Request(url, encoding=...)`: `safe_url_string` with the request's
/// encoding (the query and fragment in it, the path in UTF-8).
pub(super) fn get_encoded(
    url: &str,
    codec: &'static encoding_rs::Encoding,
) -> Result<Request, KindError> {
    if codec == encoding_rs::UTF_8 {
        return get(url);
    }
    let text = crate::crawl::util::canonical::safe_url_string_encoded(url, codec)
        .map_err(|e| KindError::Encode(e.to_string()))?;
    let mut request = get(&text)?;
    request.set_scrapy_url(text);
    Ok(request)
}
