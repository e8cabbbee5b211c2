//! The arena tree: [`Document`], [`Node`], [`ElementRef`].
//!
//! Nodes are stored in document order, and a node's descendants are exactly the ids
//! between it and its `end` (nothing is ever re-parented), so "every descendant
//! matching a selector" is a scan over a contiguous slice.

use std::fmt;

use super::name::name_key;

/// No node.
pub(crate) const NONE: u32 = u32::MAX;

/// A node's index in its document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// A `(start, len)` slice of the document's string buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) len: u32,
}

impl Span {
    /// The value of an attribute written without one (`<div hidden>`): reads as "",
    /// prints as the name alone.
    pub(crate) const VALUELESS: Span = Span {
        start: u32::MAX,
        len: 0,
    };

    /// Whether this is [`VALUELESS`](Self::VALUELESS).
    pub(crate) fn is_valueless(self) -> bool {
        self == Self::VALUELESS
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Document,
    Element {
        name: Span,
        key: u64,
        attrs: u32,
        attrs_len: u32,
    },
    Text(Span),
    /// A comment (its text between `<!--` and `-->`).
    Comment(Span),
    /// A processing instruction of an XML document (its text between `<?` and
    /// `?>`: the target, whitespace, the data).
    Pi(Span),
}

/// One node: links to its relatives and what it is.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    pub(crate) parent: u32,
    pub(crate) first_child: u32,
    pub(crate) last_child: u32,
    pub(crate) prev: u32,
    pub(crate) next: u32,
    /// One past the last descendant.
    pub(crate) end: u32,
    pub(crate) kind: Kind,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Attr {
    pub(crate) name: Span,
    pub(crate) key: u64,
    pub(crate) value: Span,
}

/// A parsed HTML (or XML) document.
#[derive(Clone, Default)]
pub struct Document {
    pub(crate) nodes: Vec<Node>,
    pub(crate) attrs: Vec<Attr>,
    pub(crate) buf: String,
    /// What an XML document adds: namespaces. `None` for HTML.
    pub(crate) xml: Option<Box<XmlInfo>>,
}

/// The namespaces of an XML document's elements and attributes, and the declarations
/// written on each element (for printing).
#[derive(Clone, Default, Debug)]
pub(crate) struct XmlInfo {
    /// Namespace URIs; index 0 is "no namespace".
    pub(crate) uris: Vec<String>,
    /// Per node id: the element's namespace (an index of `uris`).
    pub(crate) node_ns: Vec<u32>,
    /// Per attribute: its namespace.
    pub(crate) attr_ns: Vec<u32>,
    /// The namespace declarations written on an element, in order: (node id,
    /// prefix — empty for the default namespace —, namespace).
    pub(crate) decls: Vec<(u32, String, u32)>,
}

impl XmlInfo {
    /// The namespace URI of element `id` ("" for none).
    pub(crate) fn node_uri(&self, id: u32) -> &str {
        let i = self.node_ns.get(id as usize).copied().unwrap_or(0);
        self.uris.get(i as usize).map_or("", String::as_str)
    }

    /// The namespace URI of attribute `index`.
    pub(crate) fn attr_uri(&self, index: usize) -> &str {
        let i = self.attr_ns.get(index).copied().unwrap_or(0);
        self.uris.get(i as usize).map_or("", String::as_str)
    }

    /// The declarations written on element `id`.
    pub(crate) fn decls_of(&self, id: u32) -> impl Iterator<Item = (&str, &str)> + '_ {
        let start = self.decls.partition_point(|d| d.0 < id);
        self.decls[start..]
            .iter()
            .take_while(move |d| d.0 == id)
            .map(|d| {
                (
                    d.1.as_str(),
                    self.uris.get(d.2 as usize).map_or("", String::as_str),
                )
            })
    }
}

/// The local part of a qualified name (`media:thumbnail` → `thumbnail`), as XPath's
/// `local-name()` gives it.
pub fn local_name(qname: &str) -> &str {
    qname.rsplit_once(':').map_or(qname, |(_, l)| l)
}

impl Document {
    /// Heap bytes the document holds (its node, attribute and text arrays' capacities):
    /// what keeping it costs, whatever the page's size.
    pub fn heap_size(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.attrs.capacity() * std::mem::size_of::<Attr>()
            + self.buf.capacity()
    }

    pub(crate) fn str(&self, span: Span) -> &str {
        self.buf
            .get(span.start as usize..(span.start + span.len) as usize)
            .unwrap_or("")
    }

    /// The number of nodes (document, elements and texts).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the document has no node but itself.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    /// The root element (`<html>`, supplied when missing).
    pub fn root_element(&self) -> Option<ElementRef<'_>> {
        let root = self.nodes.first()?;
        let mut child = root.first_child;
        while child != NONE {
            if let Some(e) = ElementRef::new(self, child) {
                return Some(e);
            }
            child = self.nodes[child as usize].next;
        }
        None
    }

    /// Appends a node of `kind` as the last child of `parent` (its descendants follow
    /// it: the arena's document order); returns its id.
    pub(crate) fn append_child(&mut self, parent: u32, kind: Kind) -> u32 {
        let id = self.nodes.len() as u32;
        let prev = self.nodes[parent as usize].last_child;
        self.nodes.push(Node {
            parent,
            first_child: NONE,
            last_child: NONE,
            prev,
            next: NONE,
            end: id + 1,
            kind,
        });
        if prev == NONE {
            self.nodes[parent as usize].first_child = id;
        } else {
            self.nodes[prev as usize].next = id;
        }
        self.nodes[parent as usize].last_child = id;
        id
    }

    /// Whether this is an XML document (parsed by [`Document::parse_xml`]).
    pub fn is_xml(&self) -> bool {
        self.xml.is_some()
    }

    /// Every element, in document order.
    pub fn elements(&self) -> impl Iterator<Item = ElementRef<'_>> + '_ {
        (1..self.nodes.len() as u32).filter_map(move |id| ElementRef::new(self, id))
    }
}

impl fmt::Debug for Document {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Document")
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

/// A child of an element: an element or a text.
#[derive(Clone, Copy, Debug)]
pub enum Child<'a> {
    /// An element.
    Element(ElementRef<'a>),
    /// Text (character references decoded).
    Text(&'a str),
    /// A comment's text.
    Comment(&'a str),
}

/// An element of a document.
#[derive(Clone, Copy)]
pub struct ElementRef<'a> {
    pub(crate) doc: &'a Document,
    pub(crate) id: u32,
}

impl<'a> ElementRef<'a> {
    pub(crate) fn new(doc: &'a Document, id: u32) -> Option<Self> {
        match doc.nodes.get(id as usize)?.kind {
            Kind::Element { .. } => Some(Self { doc, id }),
            _ => None,
        }
    }

    pub(crate) fn node(&self) -> &'a Node {
        &self.doc.nodes[self.id as usize]
    }

    /// The node id.
    pub fn id(&self) -> NodeId {
        NodeId(self.id)
    }

    /// One past the id of the element's last descendant.
    pub fn end_id(&self) -> u32 {
        self.node().end
    }

    /// The document the element is in.
    pub fn document(&self) -> &'a Document {
        self.doc
    }

    /// Every element inside this one, in document order.
    pub fn descendant_elements(&self) -> impl Iterator<Item = ElementRef<'a>> + use<'a> {
        let doc = self.doc;
        (self.id + 1..self.node().end).filter_map(move |id| ElementRef::new(doc, id))
    }

    /// The tag name's [`name_key`].
    pub fn name_key(&self) -> u64 {
        match self.node().kind {
            Kind::Element { key, .. } => key,
            _ => 0,
        }
    }

    /// The value of the attribute whose name has key `key` ([`name_key`]).
    pub fn attr_by_key(&self, key: u64) -> Option<&'a str> {
        self.attr_slice()
            .iter()
            .find(|a| a.key == key)
            .map(|a| self.doc.str(a.value))
    }

    /// The tag name, lower case.
    pub fn name(&self) -> &'a str {
        match self.node().kind {
            Kind::Element { name, .. } => self.doc.str(name),
            _ => "",
        }
    }

    fn attr_slice(&self) -> &'a [super::dom::Attr] {
        match self.node().kind {
            Kind::Element {
                attrs, attrs_len, ..
            } => self
                .doc
                .attrs
                .get(attrs as usize..(attrs + attrs_len) as usize)
                .unwrap_or(&[]),
            _ => &[],
        }
    }

    /// An attribute's value (names are lower case).
    pub fn attr(&self, name: &str) -> Option<&'a str> {
        let key = name_key(name);
        if name.len() <= 8 {
            // Short keys are the bytes themselves: equal keys mean equal names.
            return self.attr_by_key(key);
        }
        self.attr_slice()
            .iter()
            .find(|a| a.key == key && self.doc.str(a.name) == name)
            .map(|a| self.doc.str(a.value))
    }

    /// Every attribute as `(name, value)`.
    pub fn attrs(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let doc = self.doc;
        self.attr_slice()
            .iter()
            .map(move |a| (doc.str(a.name), doc.str(a.value)))
    }

    /// The parent element.
    pub fn parent_element(&self) -> Option<ElementRef<'a>> {
        ElementRef::new(self.doc, self.node().parent)
    }

    /// The element's children (elements, texts and comments), in order.
    pub fn children(&self) -> impl Iterator<Item = Child<'a>> + 'a {
        let doc = self.doc;
        let mut child = self.node().first_child;
        std::iter::from_fn(move || {
            while child != NONE {
                let id = child;
                let node = &doc.nodes[id as usize];
                child = node.next;
                match node.kind {
                    Kind::Text(span) => return Some(Child::Text(doc.str(span))),
                    Kind::Comment(span) => return Some(Child::Comment(doc.str(span))),
                    Kind::Element { .. } => return Some(Child::Element(ElementRef { doc, id })),
                    Kind::Document | Kind::Pi(_) => {}
                }
            }
            None
        })
    }

    /// The texts directly inside this element (parsel's `::text`).
    pub fn child_texts(&self) -> impl Iterator<Item = &'a str> + 'a {
        let doc = self.doc;
        let mut child = self.node().first_child;
        std::iter::from_fn(move || {
            while child != NONE {
                let node = &doc.nodes[child as usize];
                child = node.next;
                if let Kind::Text(span) = node.kind {
                    return Some(doc.str(span));
                }
            }
            None
        })
    }

    /// The texts directly inside this element with their node ids (document order).
    pub(crate) fn child_text_nodes(&self) -> impl Iterator<Item = (u32, &'a str)> + use<'a> {
        let doc = self.doc;
        let mut child = self.node().first_child;
        std::iter::from_fn(move || {
            while child != NONE {
                let id = child;
                let node = &doc.nodes[id as usize];
                child = node.next;
                if let Kind::Text(span) = node.kind {
                    return Some((id, doc.str(span)));
                }
            }
            None
        })
    }

    /// Every text inside this element, in order.
    pub fn texts(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        let doc = self.doc;
        let node = self.node();
        (self.id + 1..node.end).filter_map(move |i| match doc.nodes[i as usize].kind {
            Kind::Text(span) => Some(doc.str(span)),
            _ => None,
        })
    }

    /// All text inside this element, concatenated.
    pub fn text_content(&self) -> String {
        self.texts().collect()
    }
}

impl fmt::Debug for ElementRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}", self.name())?;
        for (k, v) in self.attrs() {
            write!(f, " {k}={v:?}")?;
        }
        write!(f, ">")
    }
}
