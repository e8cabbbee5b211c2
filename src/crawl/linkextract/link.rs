//! [`Link`]: an extracted link (Scrapy's `scrapy.link.Link`).

/// An extracted link (Scrapy's `Link`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The absolute URL, as Scrapy's `Link.url` holds it (build a request with
    /// `Request::get(&link.url)` or `Request::get_owned(link.url)`, as Scrapy's `Request(link.url)`).
    pub url: String,
    /// The link's text.
    pub text: String,
    /// Scrapy's `Link.fragment`: empty from the extractor, as in Scrapy (the URL keeps
    /// its fragment).
    pub fragment: String,
    /// Whether `rel` contains `nofollow`.
    pub nofollow: bool,
}

/// A link is followed by its URL: `response.follow(&link)` and
/// `response.follow_all(&links)` take links as Scrapy's `response.follow(link)` does.
impl AsRef<str> for Link {
    fn as_ref(&self) -> &str {
        &self.url
    }
}
