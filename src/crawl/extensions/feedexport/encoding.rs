//! The text encodings a feed can be written in (`FEED_EXPORT_ENCODING`, the `encoding`
//! feed option): UTF-8, Latin-1 and ASCII under Python's codec names, strict (an item
//! holding a character outside the encoding is refused, as Python's `str.encode`
//! raises) or with XML character references (`xmlcharrefreplace`, what Scrapy's XML
//! exporter uses).

use std::fmt;

/// The character set of a [`TextEncoding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    /// Every character, as UTF-8.
    Utf8,
    /// U+0000..=U+00FF, one byte each (`latin-1`, `iso-8859-1`).
    Latin1,
    /// U+0000..=U+007F (`ascii`, `us-ascii`).
    Ascii,
}

/// A feed's encoding: the name as the user gave it (the XML declaration repeats it)
/// and its character set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEncoding {
    /// The name as given (`"latin-1"`, `"UTF-8"`).
    pub name: String,
    /// What it can write.
    pub charset: Charset,
}

/// A character the encoding cannot write (Python's `UnicodeEncodeError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError {
    /// The encoding's name.
    pub encoding: String,
    /// The character.
    pub character: char,
    /// Its position in the text, in characters.
    pub position: usize,
    /// The first code point the encoding cannot hold.
    pub limit: u32,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' codec can't encode character {:?} (U+{:04X}) in position {}: ordinal not in range({})",
            self.encoding,
            self.character,
            u32::from(self.character),
            self.position,
            self.limit
        )
    }
}

impl std::error::Error for EncodeError {}

/// Python's codec aliases (after its normalization: lower case, `-` and spaces as `_`).
const UTF8: &[&str] = &["utf_8", "utf8", "u8", "utf", "cp65001"];
const LATIN1: &[&str] = &[
    "latin_1",
    "latin1",
    "latin",
    "l1",
    "iso8859_1",
    "iso_8859_1",
    "8859",
    "cp819",
    "iso_ir_100",
    "csisolatin1",
];
const ASCII: &[&str] = &["ascii", "us_ascii", "646", "us", "ansi_x3.4_1968", "cp367"];

fn normalize(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace(['-', ' '], "_")
}

impl TextEncoding {
    /// UTF-8 under the name `utf-8`.
    pub fn utf8() -> Self {
        Self {
            name: "utf-8".into(),
            charset: Charset::Utf8,
        }
    }

    /// The encoding Python's codec registry finds under `name`, among those trawl
    /// writes.
    ///
    /// # Errors
    ///
    /// Another encoding: the message names the ones trawl knows.
    pub fn from_name(name: &str) -> Result<Self, String> {
        let n = normalize(name);
        let charset = if UTF8.contains(&n.as_str()) {
            Charset::Utf8
        } else if LATIN1.contains(&n.as_str()) {
            Charset::Latin1
        } else if ASCII.contains(&n.as_str()) {
            Charset::Ascii
        } else {
            return Err(format!(
                "unsupported encoding {name:?}: feeds are written in utf-8, latin-1 or ascii"
            ));
        };
        Ok(Self {
            name: name.to_owned(),
            charset,
        })
    }

    fn holds(&self, c: char) -> bool {
        match self.charset {
            Charset::Utf8 => true,
            Charset::Latin1 => u32::from(c) < 0x100,
            Charset::Ascii => c.is_ascii(),
        }
    }

    /// Appends `text` in this encoding; strict: a character it cannot hold is an
    /// error and nothing is appended.
    ///
    /// # Errors
    ///
    /// The first character outside the encoding.
    pub fn encode_into(&self, text: &str, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if self.charset == Charset::Utf8 || text.is_ascii() {
            out.extend_from_slice(text.as_bytes());
            return Ok(());
        }
        if let Some((position, character)) = text.chars().enumerate().find(|(_, c)| !self.holds(*c))
        {
            return Err(EncodeError {
                encoding: self.name.clone(),
                character,
                position,
                limit: if self.charset == Charset::Latin1 {
                    0x100
                } else {
                    0x80
                },
            });
        }
        // Latin-1 (ASCII text returned above): one byte per character.
        out.extend(text.chars().map(|c| u32::from(c) as u8));
        Ok(())
    }

    /// Appends `text` in this encoding, a character it cannot hold as an XML character
    /// reference `&#N;` (Python's `xmlcharrefreplace`).
    pub fn encode_xml_into(&self, text: &str, out: &mut Vec<u8>) {
        if self.charset == Charset::Utf8 || text.is_ascii() {
            out.extend_from_slice(text.as_bytes());
            return;
        }
        for c in text.chars() {
            if !self.holds(c) {
                out.extend_from_slice(format!("&#{};", u32::from(c)).as_bytes());
            } else if c.is_ascii() || self.charset == Charset::Latin1 {
                out.push(u32::from(c) as u8);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_codec_names() {
        for (name, charset) in [
            ("utf-8", Charset::Utf8),
            ("UTF-8", Charset::Utf8),
            ("utf8", Charset::Utf8),
            ("latin-1", Charset::Latin1),
            ("ISO-8859-1", Charset::Latin1),
            ("ascii", Charset::Ascii),
            ("US-ASCII", Charset::Ascii),
        ] {
            let e = TextEncoding::from_name(name).unwrap();
            assert_eq!((e.name.as_str(), e.charset), (name, charset));
        }
        assert!(TextEncoding::from_name("cp1252").is_err());
    }

    #[test]
    fn strict_and_xml_references() {
        let latin1 = TextEncoding::from_name("latin-1").unwrap();
        let mut out = Vec::new();
        latin1.encode_into("café", &mut out).unwrap();
        assert_eq!(out, b"caf\xe9");
        let err = latin1.encode_into("a😀", &mut out).unwrap_err();
        assert_eq!((err.character, err.position), ('😀', 1));
        assert_eq!(out, b"caf\xe9", "nothing appended on error");
        let mut xml = Vec::new();
        latin1.encode_xml_into("é😀", &mut xml);
        assert_eq!(xml, b"\xe9&#128512;");
    }
}
