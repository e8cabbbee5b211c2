//! XML documents for Scrapy's `XmlResponse` selectors: the same arena [`Document`] as
//! HTML, built from `quick-xml` events, with namespaces — each element and attribute
//! resolved against the declarations in scope (`xmlns`, `xmlns:p`, the predeclared
//! `xml` prefix) — kept in the document's `XmlInfo` so XPath name tests, `name()`,
//! `local-name()` and `namespace-uri()` answer as lxml's.
//!
//! As lxml's parser with `recover=True` (parsel's): text and CDATA become merged text
//! nodes, the predefined entities and character references are decoded and any other
//! entity is kept as written (a DTD is skipped unread: no entity expansion), line ends
//! are normalised and attribute values have their tabs and line breaks as spaces; a
//! malformed document keeps what was parsed before the error. The depth is bounded by
//! [`MAX_DEPTH`](super::tree::MAX_DEPTH); the work is linear in the input.

use quick_xml::events::{BytesStart, Event};

use super::dom::{Attr, Document, Kind, NONE, Node, Span, XmlInfo, local_name};
use super::name::name_key;
use super::tree::MAX_DEPTH;

/// The namespace of the `xml` prefix.
pub const XML_NAMESPACE: &str = "http://www.w3.org/XML/1998/namespace";

/// The character of a predefined entity or character reference; `None` for anything
/// else (kept as written).
pub(crate) fn resolve_entity(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        _ => {
            let num = name
                .strip_prefix("#x")
                .or_else(|| name.strip_prefix("#X"))
                .map(|h| u32::from_str_radix(h, 16))
                .or_else(|| name.strip_prefix('#').map(str::parse::<u32>));
            match num {
                Some(Ok(n)) => char::from_u32(n)?,
                _ => return None,
            }
        }
    })
}

/// An attribute value: references decoded, literal tabs and line breaks as spaces.
fn attribute_value(raw: &str, out: &mut String) {
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        push_normalised(&rest[..amp], out);
        let after = &rest[amp + 1..];
        match after
            .find(';')
            .map(|semi| (semi, resolve_entity(&after[..semi])))
        {
            Some((semi, Some(c))) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            _ => {
                out.push('&');
                rest = after;
            }
        }
    }
    push_normalised(rest, out);
}

fn push_normalised(s: &str, out: &mut String) {
    out.extend(s.chars().map(|c| {
        if matches!(c, '\t' | '\n' | '\r') {
            ' '
        } else {
            c
        }
    }));
}

struct Builder {
    doc: Document,
    info: XmlInfo,
    /// Open elements: node id, qualified name, and how many scope entries it pushed.
    open: Vec<(u32, String, usize)>,
    /// Namespace declarations in scope: (prefix, namespace index).
    scope: Vec<(String, u32)>,
    /// Text read since the last node.
    text: String,
    strip: bool,
    /// How many scope entries were inherited from outside the text.
    inherited: usize,
}

impl Builder {
    fn uri_index(&mut self, uri: &str) -> u32 {
        if uri.is_empty() {
            return 0;
        }
        match self.info.uris.iter().position(|u| u == uri) {
            Some(i) => i as u32,
            None => {
                self.info.uris.push(uri.to_owned());
                (self.info.uris.len() - 1) as u32
            }
        }
    }

    fn resolve(&self, prefix: &str) -> Option<u32> {
        if prefix == "xml" {
            return self
                .info
                .uris
                .iter()
                .position(|u| u == XML_NAMESPACE)
                .map(|i| i as u32);
        }
        self.scope
            .iter()
            .rev()
            .find(|(p, _)| p == prefix)
            .map(|(_, i)| *i)
    }

    fn push_str(&mut self, s: &str) -> Span {
        let start = u32::try_from(self.doc.buf.len()).unwrap_or(u32::MAX);
        self.doc.buf.push_str(s);
        Span {
            start,
            len: u32::try_from(s.len()).unwrap_or(0),
        }
    }

    fn parent(&self) -> u32 {
        self.open.last().map_or(0, |o| o.0)
    }

    fn append(&mut self, kind: Kind) -> u32 {
        let id = self.doc.append_child(self.parent(), kind);
        self.info.node_ns.push(0);
        id
    }

    /// The text read so far as a node (text outside the root element is dropped).
    fn flush_text(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.text);
        if self.open.is_empty() {
            return;
        }
        let span = self.push_str(&text);
        self.append(Kind::Text(span));
    }

    fn start(&mut self, e: &BytesStart<'_>) -> Result<(), String> {
        self.flush_text();
        if self.open.len() >= MAX_DEPTH {
            return Err(format!("deeper than {MAX_DEPTH} elements"));
        }
        let qname = e.name().as_ref().to_owned();
        // Declarations first: they are in scope for the element's own name.
        let mut attrs: Vec<(String, String)> = Vec::new();
        let mut declared = 0;
        let mut decls = Vec::new();
        for a in e.attributes().with_checks(false) {
            let a = a.map_err(|e| e.to_string())?;
            let key = a.key.as_ref().to_owned();
            let mut value = String::new();
            attribute_value(&a.value, &mut value);
            let prefix = if key == "xmlns" {
                Some(String::new())
            } else {
                key.strip_prefix("xmlns:").map(str::to_owned)
            };
            match prefix {
                Some(p) => {
                    let i = self.uri_index(&value);
                    self.scope.push((p.clone(), i));
                    declared += 1;
                    decls.push((p, i));
                }
                None => attrs.push((key, value)),
            }
        }
        let (prefix, _) = match qname.split_once(':') {
            Some((p, l)) => (p, l),
            None => ("", qname.as_str()),
        };
        let ns = self.resolve(prefix).unwrap_or(0);
        let name = if self.strip {
            local_name(&qname)
        } else {
            &qname
        }
        .to_owned();
        let name_span = self.push_str(&name);
        let first = self.doc.attrs.len();
        // (namespace, name, value) with prefixes resolved; with `strip`, as parsel's
        // `remove_namespaces()` leaves them: the plain attributes in order, then each
        // namespaced one under its local name — replacing a plain one of that name in
        // place, else at the end.
        let mut resolved: Vec<(u32, String, String, bool)> = attrs
            .into_iter()
            .map(|(key, value)| match key.split_once(':') {
                Some((p, l)) => match self.resolve(p) {
                    Some(_) if self.strip => (0, l.to_owned(), value, true),
                    Some(i) => (i, key.clone(), value, true),
                    None => (0, key.clone(), value, false),
                },
                None => (0, key, value, false),
            })
            .collect();
        if self.strip {
            resolved.sort_by_key(|a| a.3);
        }
        for (attr_ns, attr_name, value, _) in resolved {
            let existing = (first..self.doc.attrs.len())
                .find(|&i| self.doc.str(self.doc.attrs[i].name) == attr_name);
            let value = self.push_str(&value);
            match existing {
                Some(i) => self.doc.attrs[i].value = value,
                None => {
                    let name = self.push_str(&attr_name);
                    let key = name_key(&attr_name);
                    self.doc.attrs.push(Attr { name, key, value });
                    self.info.attr_ns.push(attr_ns);
                }
            }
        }
        let attrs_len = (self.doc.attrs.len() - first) as u32;
        let id = self.append(Kind::Element {
            name: name_span,
            key: name_key(local_name(&name)),
            attrs: first as u32,
            attrs_len,
        });
        if !self.strip {
            self.info.node_ns[id as usize] = ns;
            for (p, i) in decls {
                self.info.decls.push((id, p, i));
            }
            if id == 1 {
                // A fragment's root: the declarations it inherited, after its own,
                // in document order, the nearest of a prefix kept.
                for k in 0..self.inherited {
                    let (p, i) = self.scope[k].clone();
                    let shadowed = self.scope[k + 1..self.inherited]
                        .iter()
                        .any(|(q, _)| *q == p);
                    if !shadowed && !self.info.decls.iter().any(|d| d.0 == 1 && d.1 == p) {
                        self.info.decls.push((1, p, i));
                    }
                }
            }
        }
        self.open.push((id, qname, declared));
        Ok(())
    }

    fn end(&mut self, qname: &str) {
        self.flush_text();
        // A stray end tag is ignored; one that closes an outer element closes the
        // inner ones too (recovery).
        let Some(pos) = self.open.iter().rposition(|o| o.1 == qname) else {
            return;
        };
        while self.open.len() > pos {
            self.close();
        }
    }

    fn close(&mut self) {
        if let Some((id, _, declared)) = self.open.pop() {
            let end = self.doc.nodes.len() as u32;
            self.doc.nodes[id as usize].end = end;
            self.scope.truncate(self.scope.len() - declared);
        }
    }
}

impl Document {
    /// Parses an XML document (Scrapy's `XmlResponse` selector); with
    /// `strip_namespaces`, as parsel's `remove_namespaces()` leaves it (local names,
    /// no namespaces).
    ///
    /// # Errors
    ///
    /// No root element could be read. A document malformed later keeps what came
    /// before the error (lxml's recovery), logged.
    pub fn parse_xml(text: &str, strip_namespaces: bool) -> Result<Document, String> {
        Self::parse_xml_in_scope(text, strip_namespaces, &[])
    }

    /// [`parse_xml`](Self::parse_xml) of a fragment cut from a larger document, with
    /// the namespace declarations in scope where it was cut (`(prefix, uri)`, the
    /// default namespace's prefix empty): declared on its root element, as lxml
    /// prints a node of a document (Scrapy's `xmliter_lxml` parses that print).
    ///
    /// # Errors
    ///
    /// As [`parse_xml`](Self::parse_xml).
    pub fn parse_xml_in_scope(
        text: &str,
        strip_namespaces: bool,
        scope: &[(String, String)],
    ) -> Result<Document, String> {
        let normalised;
        let text = if text.contains('\r') {
            normalised = text.replace("\r\n", "\n").replace('\r', "\n");
            normalised.as_str()
        } else {
            text
        };
        let mut reader = quick_xml::Reader::from_str(text);
        let config = reader.config_mut();
        config.allow_dangling_amp = true;
        config.allow_unmatched_ends = true;
        config.check_end_names = false;
        let mut b = Builder {
            doc: Document::default(),
            info: XmlInfo {
                uris: vec![String::new(), XML_NAMESPACE.to_owned()],
                ..XmlInfo::default()
            },
            open: Vec::new(),
            scope: Vec::new(),
            text: String::new(),
            strip: strip_namespaces,
            inherited: 0,
        };
        b.doc.nodes.push(Node {
            parent: NONE,
            first_child: NONE,
            last_child: NONE,
            prev: NONE,
            next: NONE,
            end: 1,
            kind: Kind::Document,
        });
        b.info.node_ns.push(0);
        for (prefix, uri) in scope {
            let i = b.uri_index(uri);
            b.scope.push((prefix.clone(), i));
        }
        b.inherited = b.scope.len();
        let mut seen_root = false;
        loop {
            let event = match reader.read_event() {
                Ok(e) => e,
                Err(e) => {
                    if !seen_root {
                        return Err(format!("XML: {e}"));
                    }
                    log::warn!(
                        "XML: stopped at byte {}: {e}; keeping what came before",
                        reader.buffer_position()
                    );
                    break;
                }
            };
            let step = match event {
                Event::Start(e) => {
                    seen_root = true;
                    b.start(&e)
                }
                Event::Empty(e) => {
                    seen_root = true;
                    let r = b.start(&e);
                    b.close();
                    r
                }
                Event::End(e) => {
                    b.end(e.name().as_ref());
                    Ok(())
                }
                Event::Text(t) => {
                    b.text.push_str(t.as_ref());
                    Ok(())
                }
                Event::CData(t) => {
                    b.text.push_str(t.as_ref());
                    Ok(())
                }
                Event::GeneralRef(r) => {
                    let name: &str = r.as_ref();
                    match resolve_entity(name) {
                        Some(c) => b.text.push(c),
                        None => {
                            b.text.push('&');
                            b.text.push_str(name);
                            b.text.push(';');
                        }
                    }
                    Ok(())
                }
                Event::Comment(t) => {
                    b.flush_text();
                    let span = b.push_str(t.as_ref());
                    b.append(Kind::Comment(span));
                    Ok(())
                }
                Event::PI(t) => {
                    b.flush_text();
                    let span = b.push_str(t.as_ref());
                    b.append(Kind::Pi(span));
                    Ok(())
                }
                Event::Eof => break,
                // The DOCTYPE (and every entity it would define) is skipped unread.
                Event::DocType(_) | Event::Decl(_) => Ok(()),
            };
            if let Err(e) = step {
                log::warn!("XML: {e}; keeping what came before");
                break;
            }
        }
        b.flush_text();
        while !b.open.is_empty() {
            b.close();
        }
        if !seen_root {
            return Err("XML: no root element".into());
        }
        let end = b.doc.nodes.len() as u32;
        b.doc.nodes[0].end = end;
        let mut doc = b.doc;
        doc.xml = Some(Box::new(b.info));
        Ok(doc)
    }
}
