//! parsel's selectors over a response: [`Selection`] (CSS, XPath, `.get()`,
//! `.getall()`, `.attrib`) and `.re()`.

pub mod re;
mod selection;

pub use selection::Selection;
