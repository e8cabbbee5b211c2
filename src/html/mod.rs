//! HTML for the crawl: one tokenizer, one set of tree-repair rules, and two consumers —
//! a compact DOM for CSS and XPath selection ([`Document`], [`XPath`]) and a DOM-free link scanner
//! ([`scan_links`]) that sees exactly the structure the DOM would have.
//!
//! # Why not html5ever
//!
//! Building scraper's html5ever tree of a fixture page takes most of a page's ~50 µs
//! budget at 20,000 pages/s (`cargo bench --bench crawl_hot`; benches/RESULTS.md). This module tokenizes with
//! a byte scanner and builds a flat arena tree (every node in one `Vec`, all names,
//! values and texts in one `String`), then matches with the well-kept `selectors`
//! crate (the engine behind Servo's and scraper's CSS matching).
//!
//! # Parsing rules
//!
//! * Tokenizing follows HTML5 where it decides what is markup (`tokenizer.rs`:
//!   comments, raw text and RCDATA, script escape states, attribute values), and
//!   decodes the full HTML5 named-reference table (`entities.rs`).
//! * Tree repair follows libxml2, the parser behind lxml and so behind Scrapy's
//!   selectors and link extractor (`tree.rs`, its tables in `rules.rs`), with two
//!   deliberate differences listed there: a depth limit, and content after
//!   `</body>`/`</html>` kept in the body.
//! * Comments are nodes of the DOM where libxml2 puts them (bogus comments — `<?pi?>`,
//!   `<!x>`, `</ x>` — too, as libxml2 2.14 makes them); doctypes make no node; the
//!   link scanner skips comments in the tokenizer.
//!
//! # Hostile input
//!
//! Parsing is linear in the input — no quadratic entity scan, no stack walk per tag,
//! no quadratic duplicate-attribute check — with bounded constants: at most
//! [`MAX_DEPTH`] nested elements and [`MAX_ATTRIBUTES`] attributes per tag.
//! `benches/html_adversarial.rs` measures it on adversarial inputs, and
//! `tests/html_linear.rs` checks the builder's work counter ([`ParseStats::steps`]).
//!
//! This module imports nothing else of trawl but `util`.

mod dom;
mod entities;
mod links;
mod name;
mod parse;
mod rules;
mod select;
mod serialize;
mod tokenizer;
mod tree;
mod xml;
mod xpath;

pub use dom::{Child, Document, ElementRef, Node, NodeId, local_name as local_name_of};
pub use entities::{LONGEST_NAME, decode_entities};
pub use links::{RawLink, TextBudget, rel_has_nofollow, scan_links};
pub use name::name_key;
pub use select::{Selector, SelectorError};
pub use tokenizer::MAX_ATTRIBUTES;
pub use tree::{MAX_DEPTH, ParseStats};
pub use xml::XML_NAMESPACE;
pub(crate) use xml::resolve_entity;
pub use xpath::{XPath, XPathError, XPathItem, XPathValue, XPathVar, python_float_str};
