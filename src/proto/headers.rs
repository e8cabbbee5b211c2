//! [`Headers`]: HTTP header fields in order, multi-valued, looked up case-insensitively.
//!
//! Storage is compact: all names and values live in one byte buffer and an index of
//! ranges points into it, so a response's dozen headers cost two allocations, not
//! two dozen. A small set lives inline, allocating nothing: the index of up to two
//! fields and up to [`INLINE_BYTES`] bytes of names and values (a followed link's
//! `Referer`). Names keep the case they were given (servers and Scrapy users see what
//! they set); lookups ignore ASCII case.

use std::fmt;
use std::ops::Range;

use smallvec::SmallVec;

/// One header field's position in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    name: (u32, u32),
    value: (u32, u32),
}

impl Field {
    const EMPTY: Field = Field {
        name: (0, 0),
        value: (0, 0),
    };
}

/// Fields kept inline before the index moves to the heap.
const INLINE: usize = 2;

/// Bytes of names and values kept inline before they move to the heap: room for a
/// `Referer` with a URL of ~100 characters.
pub const INLINE_BYTES: usize = 112;

/// The field index: inline up to [`INLINE`] fields, then a `Vec`.
#[derive(Clone, Debug)]
enum Fields {
    Inline(u8, [Field; INLINE]),
    Heap(Vec<Field>),
}

impl Default for Fields {
    fn default() -> Self {
        Self::Inline(0, [Field::EMPTY; INLINE])
    }
}

impl PartialEq for Fields {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Fields {}

impl std::ops::Deref for Fields {
    type Target = [Field];

    fn deref(&self) -> &[Field] {
        match self {
            Self::Inline(len, items) => &items[..usize::from(*len)],
            Self::Heap(v) => v,
        }
    }
}

impl std::ops::DerefMut for Fields {
    fn deref_mut(&mut self) -> &mut [Field] {
        match self {
            Self::Inline(len, items) => &mut items[..usize::from(*len)],
            Self::Heap(v) => v,
        }
    }
}

impl Fields {
    fn with_capacity(n: usize) -> Self {
        if n <= INLINE {
            Self::default()
        } else {
            Self::Heap(Vec::with_capacity(n))
        }
    }

    fn push(&mut self, field: Field) {
        match self {
            Self::Inline(len, items) if usize::from(*len) < INLINE => {
                items[usize::from(*len)] = field;
                *len += 1;
            }
            Self::Inline(_, items) => {
                let mut v = Vec::with_capacity(INLINE * 4);
                v.extend_from_slice(items);
                v.push(field);
                *self = Self::Heap(v);
            }
            Self::Heap(v) => v.push(field),
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&Field) -> bool) {
        match self {
            Self::Inline(len, items) => {
                let mut kept = 0;
                for i in 0..usize::from(*len) {
                    if keep(&items[i]) {
                        items[kept] = items[i];
                        kept += 1;
                    }
                }
                // At most INLINE.
                *len = kept as u8;
            }
            Self::Heap(v) => v.retain(keep),
        }
    }

    fn shrink_to_fit(&mut self) {
        if let Self::Heap(v) = self {
            v.shrink_to_fit();
        }
    }
}

/// Ordered, multi-valued, case-insensitive HTTP headers.
///
/// # Examples
///
/// ```
/// use trawl::proto::Headers;
///
/// let mut h = Headers::new();
/// h.append("Set-Cookie", "a=1");
/// h.append("set-cookie", "b=2");
/// h.set("Content-Type", "text/html");
/// assert_eq!(h.get("SET-COOKIE"), Some(&b"a=1"[..]));
/// assert_eq!(h.get_all("set-cookie").count(), 2);
/// h.remove("Set-Cookie");
/// assert_eq!(h.len(), 1);
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers {
    data: SmallVec<[u8; INLINE_BYTES]>,
    fields: Fields,
}

impl Headers {
    /// No headers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops spare capacity.
    pub fn shrink_to_fit(&mut self) {
        self.data.shrink_to_fit();
        self.fields.shrink_to_fit();
    }

    /// Room for `fields` headers totalling `bytes` bytes.
    pub fn with_capacity(fields: usize, bytes: usize) -> Self {
        Self {
            data: SmallVec::with_capacity(bytes),
            fields: Fields::with_capacity(fields),
        }
    }

    /// Number of header fields (a name appearing twice counts twice).
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there are no headers.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    fn push_bytes(&mut self, bytes: &[u8]) -> (u32, u32) {
        let start = self.data.len();
        self.data.extend_from_slice(bytes);
        // Header sections are capped far below 4 GiB by every parser that fills this.
        (
            u32::try_from(start).unwrap_or(u32::MAX),
            u32::try_from(self.data.len()).unwrap_or(u32::MAX),
        )
    }

    fn slice(&self, (a, b): (u32, u32)) -> &[u8] {
        self.data.get(a as usize..b as usize).unwrap_or(&[])
    }

    /// Adds a field at the end, keeping existing ones with the same name.
    pub fn append(&mut self, name: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let (name, value) = (name.as_ref(), value.as_ref());
        // One growth for both (a request's first header is one allocation: its index
        // is inline).
        self.data.reserve(name.len() + value.len());
        let name = self.push_bytes(name);
        let value = self.push_bytes(value);
        self.fields.push(Field { name, value });
    }

    /// Replaces every field named `name` with one field (at the first one's position,
    /// or at the end).
    pub fn set(&mut self, name: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let name = name.as_ref();
        let value = value.as_ref();
        let first = self.position(name);
        match first {
            Some(i) => {
                let v = self.push_bytes(value);
                self.fields[i].value = v;
                let mut seen = false;
                let data = &self.data;
                self.fields.retain(|f| {
                    let same = data
                        .get(f.name.0 as usize..f.name.1 as usize)
                        .is_some_and(|n| n.eq_ignore_ascii_case(name));
                    if same {
                        let keep = !seen;
                        seen = true;
                        keep
                    } else {
                        true
                    }
                });
            }
            None => self.append(name, value),
        }
        self.maybe_compact();
    }

    /// Sets `name` only if it is absent (Scrapy's `headers.setdefault`).
    pub fn set_default(&mut self, name: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        if !self.contains(name.as_ref()) {
            self.append(name, value);
        }
    }

    /// Removes every field named `name`; returns how many were removed.
    pub fn remove(&mut self, name: impl AsRef<[u8]>) -> usize {
        let name = name.as_ref();
        let before = self.fields.len();
        let data = &self.data;
        self.fields.retain(|f| {
            !data
                .get(f.name.0 as usize..f.name.1 as usize)
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        });
        let removed = before - self.fields.len();
        if removed > 0 {
            self.maybe_compact();
        }
        removed
    }

    fn position(&self, name: &[u8]) -> Option<usize> {
        self.fields
            .iter()
            .position(|f| self.slice(f.name).eq_ignore_ascii_case(name))
    }

    /// Whether a field named `name` exists.
    pub fn contains(&self, name: impl AsRef<[u8]>) -> bool {
        self.position(name.as_ref()).is_some()
    }

    /// The first value of `name`.
    pub fn get(&self, name: impl AsRef<[u8]>) -> Option<&[u8]> {
        let name = name.as_ref();
        self.fields
            .iter()
            .find(|f| self.slice(f.name).eq_ignore_ascii_case(name))
            .map(|f| self.slice(f.value))
    }

    /// The first value of `name` as text (lossy UTF-8 is not attempted: `None` if it is
    /// not valid UTF-8).
    pub fn get_str(&self, name: impl AsRef<[u8]>) -> Option<&str> {
        self.get(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Every value of `name`, in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.fields
            .iter()
            .filter(move |f| self.slice(f.name).eq_ignore_ascii_case(name.as_bytes()))
            .map(|f| self.slice(f.value))
    }

    /// Every field as `(name, value)`, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.fields
            .iter()
            .map(|f| (self.slice(f.name), self.slice(f.value)))
    }

    /// Total bytes of names and values (for size accounting).
    pub fn byte_len(&self) -> usize {
        self.fields
            .iter()
            .map(|f| (f.name.1 - f.name.0 + f.value.1 - f.value.0) as usize)
            .sum()
    }

    /// Drops buffer bytes no field points to any more, once they are most of it.
    fn maybe_compact(&mut self) {
        // A small buffer is never worth compacting (and is not walked to find out).
        if self.data.len() <= 256 {
            return;
        }
        let used = self.byte_len();
        if used * 2 < self.data.len() {
            let mut fresh = Headers::with_capacity(self.fields.len(), used);
            for (n, v) in self.iter() {
                fresh.append(n, v);
            }
            *self = fresh;
        }
    }

    /// The `a..b` byte range of a field's value, for parsers that need offsets.
    #[doc(hidden)]
    pub fn value_range(&self, index: usize) -> Option<Range<usize>> {
        self.fields
            .get(index)
            .map(|f| f.value.0 as usize..f.value.1 as usize)
    }
}

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        for (n, v) in self.iter() {
            list.entry(&format_args!(
                "{}: {}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            ));
        }
        list.finish()
    }
}

impl<N: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(N, V)> for Headers {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        let mut h = Headers::new();
        for (n, v) in iter {
            h.append(n, v);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replaces_all_and_keeps_position() {
        let mut h: Headers = [("A", "1"), ("B", "2"), ("a", "3")].into_iter().collect();
        h.set("a", "x");
        let v: Vec<_> = h.iter().collect();
        assert_eq!(v, [(&b"A"[..], &b"x"[..]), (&b"B"[..], &b"2"[..])]);
    }

    #[test]
    fn the_inline_index_spills_and_behaves_as_a_vec() {
        for n in 0..6 {
            let mut h = Headers::new();
            for i in 0..n {
                h.append(format!("H{}", i % 3), format!("{i}"));
            }
            assert_eq!(h.len(), n);
            let all: Vec<_> = h.iter().collect();
            assert_eq!(all.len(), n);
            for (i, (name, value)) in all.iter().enumerate() {
                assert_eq!(*name, format!("H{}", i % 3).as_bytes());
                assert_eq!(*value, format!("{i}").as_bytes());
            }
            let removed = h.remove("h0");
            assert_eq!(removed, n.div_ceil(3));
            assert_eq!(h.len(), n - removed);
            assert!(h.get("H0").is_none());
            h.set("H1", "x");
            assert_eq!(h.get_all("h1").count(), 1);
            let same: Headers = h.iter().collect();
            assert!(same.iter().eq(h.iter()));
        }
    }

    #[test]
    fn names_and_values_move_from_inline_to_heap_intact() {
        // Fields of growing size cross `INLINE_BYTES`; each stays readable.
        let mut h = Headers::new();
        let mut want = Vec::new();
        for i in 0..12 {
            let value = "v".repeat(i * 7);
            h.append(format!("X-{i}"), &value);
            want.push((format!("X-{i}"), value));
            let got: Vec<(String, String)> = h
                .iter()
                .map(|(n, v)| {
                    (
                        String::from_utf8_lossy(n).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    )
                })
                .collect();
            assert_eq!(got, want);
        }
        assert!(h.data.spilled());
        let mut small = Headers::new();
        small.set("Referer", "http://example.com/a/page.html");
        assert!(!small.data.spilled());
        assert_eq!(
            small.get_str("referer"),
            Some("http://example.com/a/page.html")
        );
    }

    #[test]
    fn compaction_keeps_content() {
        let mut h = Headers::new();
        for i in 0..100 {
            h.set("X-Counter", format!("{i:0>20}"));
        }
        assert_eq!(h.len(), 1);
        assert!(h.data.len() < 1000);
        assert_eq!(h.get_str("x-counter"), Some("00000000000000000099"));
    }
}
