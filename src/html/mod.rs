//! A compact, fast HTML document for CSS selection: trawl's replacement for an html5ever
//! DOM on the crawl's hot path.
//!
//! # Why not html5ever
//!
//! Measured on the fixture pages (DESIGN.md, "HTML"), building scraper's html5ever tree
//! took ~41 µs of a page's ~50 µs budget at 20,000 pages/s. This module tokenizes with
//! a byte scanner and builds a flat arena tree (every node is 32 bytes in one `Vec`, all
//! names, values and texts in one `String`), then matches with the well-kept `selectors`
//! crate (the engine behind Servo's and scraper's CSS matching).
//!
//! # Parsing rules
//!
//! Lenient in the way lxml (Scrapy's parser) is, not the full HTML5 tree-construction
//! algorithm: void elements take no children; `script`, `style`, `xmp`, `iframe`,
//! `noembed`, `noframes` are raw text and `textarea`, `title` escapable raw text; an
//! end tag closes the nearest open element with its name (stray end tags are ignored);
//! the usual implied end tags apply (`p` before block elements, `li`, `dt`/`dd`,
//! `option`, table rows and cells, `head` before body content); a missing `<html>`
//! root is supplied. Character references (the full HTML5 named table) are decoded in
//! text and attribute values. Comments, doctypes and processing instructions are kept
//! out of the tree.
//!
//! This module imports nothing else of trawl.

mod dom;
mod entities;
mod parse;
mod select;

pub use dom::{Document, ElementRef, Node, NodeId, name_key};
pub use entities::decode_entities;
pub use select::{Selector, SelectorError};
