//! Spider contracts — Scrapy's `scrapy check` — as data instead of docstrings: a
//! spider lists, in [`Spider::contracts`](super::Spider::contracts), a URL for a
//! callback and what the callback must return for it (`@url`, `@returns items 1 10`,
//! `@returns requests 0 0`, `@scrapes text author` in Scrapy). `trawl check` (and a
//! project's `check` command) downloads each URL through the middlewares, runs the
//! callback and reports each failure with Scrapy's messages.

use super::outputs::Output;

/// What one callback must return for one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    /// The callback's name (`"parse"` for the default one).
    pub callback: String,
    /// The page to run it on (`@url`).
    pub url: String,
    /// `@returns items MIN [MAX]`.
    pub items: Option<(usize, Option<usize>)>,
    /// `@returns requests MIN [MAX]`.
    pub requests: Option<(usize, Option<usize>)>,
    /// `@scrapes FIELD ...`: every item has these fields.
    pub scrapes: Vec<String>,
}

impl Contract {
    /// A contract for `callback` on `url` that checks nothing yet.
    pub fn new(callback: &str, url: &str) -> Self {
        Self {
            callback: callback.to_owned(),
            url: url.to_owned(),
            items: None,
            requests: None,
            scrapes: Vec::new(),
        }
    }

    /// `@returns items MIN [MAX]` (no maximum: any number from `min`).
    pub fn returns_items(mut self, min: usize, max: Option<usize>) -> Self {
        self.items = Some((min, max));
        self
    }

    /// `@returns requests MIN [MAX]`.
    pub fn returns_requests(mut self, min: usize, max: Option<usize>) -> Self {
        self.requests = Some((min, max));
        self
    }

    /// `@scrapes FIELD ...`.
    pub fn scrapes(mut self, fields: &[&str]) -> Self {
        self.scrapes = fields.iter().map(|f| (*f).to_owned()).collect();
        self
    }

    /// Checks a callback's outputs; each failure as Scrapy words it (`Returned 3
    /// items, expected 5..10`, `Missing fields: ['author']`), with the contract it
    /// broke (`@returns`, `@scrapes`).
    pub fn verify(&self, outputs: &[Output]) -> Vec<(&'static str, String)> {
        let mut failures = Vec::new();
        let items = outputs
            .iter()
            .filter(|o| matches!(o, Output::Item(_)))
            .count();
        let requests = outputs.len() - items;
        for (bounds, count, what) in [
            (self.items, items, "items"),
            (self.requests, requests, "requests"),
        ] {
            let Some((min, max)) = bounds else {
                continue;
            };
            if count < min || max.is_some_and(|m| count > m) {
                let expected = match max {
                    Some(m) if m == min => m.to_string(),
                    Some(m) => format!("{min}..{m}"),
                    None => format!("{min}..inf"),
                };
                failures.push((
                    "@returns",
                    format!("Returned {count} {what}, expected {expected}"),
                ));
            }
        }
        if !self.scrapes.is_empty() {
            for o in outputs {
                if let Output::Item(item) = o {
                    let missing: Vec<String> = self
                        .scrapes
                        .iter()
                        .filter(|f| !item.0.contains_key(f.as_str()))
                        .map(|f| format!("'{f}'"))
                        .collect();
                    if !missing.is_empty() {
                        failures.push((
                            "@scrapes",
                            format!("Missing fields: [{}]", missing.join(", ")),
                        ));
                        break;
                    }
                }
            }
        }
        failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::base::item::Item;
    use crate::crawl::http::request::Request;

    #[test]
    fn returns_and_scrapes_as_scrapy_words_them() {
        let outs = vec![
            Output::Item(Item::new().with("text", "a").with("author", "b")),
            Output::Item(Item::new().with("text", "c")),
            Output::Request(Request::get("http://example.com/2").expect("url")),
        ];
        let ok = Contract::new("parse", "http://example.com/")
            .returns_items(1, None)
            .returns_requests(1, Some(1));
        assert!(ok.verify(&outs).is_empty());
        let bad = Contract::new("parse", "http://example.com/")
            .returns_items(5, Some(10))
            .returns_requests(0, Some(0))
            .scrapes(&["text", "author"]);
        assert_eq!(
            bad.verify(&outs),
            [
                ("@returns", "Returned 2 items, expected 5..10".to_owned()),
                ("@returns", "Returned 1 requests, expected 0".to_owned()),
                ("@scrapes", "Missing fields: ['author']".to_owned()),
            ]
        );
    }
}
