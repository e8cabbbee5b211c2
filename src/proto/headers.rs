//! [`Headers`]: HTTP header fields in order, multi-valued, looked up case-insensitively.
//!
//! Storage is compact: all names and values live in one byte buffer and an index of
//! ranges points into it, so a response's dozen headers cost two allocations, not
//! two dozen. A small set lives inline, allocating nothing: the index of up to two
//! fields and up to [`INLINE_BYTES`] bytes of names and values (a followed link's
//! `Referer`). Appending a name or a value is one copy into the buffer. Names keep
//! the case they were given (servers and Scrapy users see what they set); lookups
//! ignore ASCII case.

use std::fmt;
use std::ops::Range;

/// One header field's position in the buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Field {
    name: (u32, u32),
    value: (u32, u32),
}

/// Fields kept inline before the index moves to the heap.
const INLINE: usize = 2;

/// Bytes of names and values kept inline before they move to the heap: room for a
/// `Referer` with a URL of ~100 characters.
pub const INLINE_BYTES: usize = 112;

/// The field index: inline up to [`INLINE`] fields, then a `Vec` with room for eight.
type Fields = InlineVec<Field, INLINE, { INLINE * 4 }>;

/// The names' and values' bytes: inline up to [`INLINE_BYTES`], then a `Vec` with
/// room for twice that.
type Bytes = InlineVec<u8, INLINE_BYTES, { 2 * INLINE_BYTES }>;

/// `Copy` items kept inline up to `N` (at most 255), then in a `Vec` that starts with
/// room for at least `SPILL`.
///
/// Not `SmallVec`: its `extend_from_slice` is an insert at the end, which moves the
/// (empty) tail with a `memmove` call before the copy — two library calls per name
/// or value, where this makes one.
enum InlineVec<T: Copy + Default, const N: usize, const SPILL: usize> {
    Inline(u8, [T; N]),
    Heap(Vec<T>),
}

impl<T: Copy + Default, const N: usize, const SPILL: usize> InlineVec<T, N, SPILL> {
    /// The inline length is a `u8` (checked when the type is used).
    const LEN_FITS: () = assert!(N <= u8::MAX as usize);

    fn with_capacity(n: usize) -> Self {
        if n <= N {
            Self::default()
        } else {
            Self::Heap(Vec::with_capacity(n))
        }
    }

    /// Room for `n` more items: moves to the heap when the inline room is short.
    #[inline]
    fn reserve(&mut self, n: usize) {
        match self {
            Self::Inline(len, _) if usize::from(*len) + n > N => self.spill(n),
            Self::Inline(..) => {}
            Self::Heap(v) => v.reserve(n),
        }
    }

    /// Moves the inline items to the heap, with room for `n` more.
    #[cold]
    fn spill(&mut self, n: usize) {
        if let Self::Inline(len, items) = self {
            let len = usize::from(*len);
            let mut v = Vec::with_capacity((len + n).max(SPILL));
            v.extend_from_slice(&items[..len]);
            *self = Self::Heap(v);
        }
    }

    #[inline]
    fn extend_from_slice(&mut self, more: &[T]) {
        match self {
            Self::Inline(len, items) => {
                let at = usize::from(*len);
                let end = at + more.len();
                if let Some(room) = items.get_mut(at..end) {
                    room.copy_from_slice(more);
                    // At most N: `room` is inside the array.
                    *len = end as u8;
                    return;
                }
                self.spill(more.len());
                if let Self::Heap(v) = self {
                    v.extend_from_slice(more);
                }
            }
            Self::Heap(v) => v.extend_from_slice(more),
        }
    }

    #[inline]
    fn push(&mut self, item: T) {
        self.extend_from_slice(std::slice::from_ref(&item));
    }

    fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        match self {
            Self::Inline(len, items) => {
                let mut kept = 0;
                for i in 0..usize::from(*len) {
                    if keep(&items[i]) {
                        items[kept] = items[i];
                        kept += 1;
                    }
                }
                // At most the length before.
                *len = kept as u8;
            }
            Self::Heap(v) => v.retain(keep),
        }
    }

    /// Frees spare heap room; items that fit inline move back inline.
    fn shrink_to_fit(&mut self) {
        if let Self::Heap(v) = self {
            if v.len() <= N {
                *self = Self::inline_copy(v);
            } else {
                v.shrink_to_fit();
            }
        }
    }

    /// `items` (at most `N` of them) copied inline.
    fn inline_copy(items: &[T]) -> Self {
        let mut inline = [T::default(); N];
        let len = items.len().min(N);
        inline[..len].copy_from_slice(&items[..len]);
        Self::Inline(len as u8, inline)
    }

    #[cfg(test)]
    fn spilled(&self) -> bool {
        matches!(self, Self::Heap(_))
    }
}

impl<T: Copy + Default, const N: usize, const SPILL: usize> Default for InlineVec<T, N, SPILL> {
    fn default() -> Self {
        let () = Self::LEN_FITS;
        Self::Inline(0, [T::default(); N])
    }
}

impl<T: Copy + Default, const N: usize, const SPILL: usize> Clone for InlineVec<T, N, SPILL> {
    /// A copy that fits inline is inline, wherever the original lives.
    fn clone(&self) -> Self {
        match self {
            Self::Inline(len, items) => Self::Inline(*len, *items),
            Self::Heap(v) if v.len() <= N => Self::inline_copy(v),
            Self::Heap(v) => Self::Heap(v.clone()),
        }
    }
}

impl<T: Copy + Default + PartialEq, const N: usize, const SPILL: usize> PartialEq
    for InlineVec<T, N, SPILL>
{
    /// Equal contents, inline or not.
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Copy + Default + Eq, const N: usize, const SPILL: usize> Eq for InlineVec<T, N, SPILL> {}

impl<T: Copy + Default, const N: usize, const SPILL: usize> std::ops::Deref
    for InlineVec<T, N, SPILL>
{
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Self::Inline(len, items) => &items[..usize::from(*len)],
            Self::Heap(v) => v,
        }
    }
}

impl<T: Copy + Default, const N: usize, const SPILL: usize> std::ops::DerefMut
    for InlineVec<T, N, SPILL>
{
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Self::Inline(len, items) => &mut items[..usize::from(*len)],
            Self::Heap(v) => v,
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
    data: Bytes,
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
            data: Bytes::with_capacity(bytes),
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

    #[inline(always)]
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
                let data = &self.data[..];
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
        let data = &self.data[..];
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
    fn the_inline_buffer_fills_to_its_last_byte_and_spills_past_it() {
        // "Referer", its value and "X" fill the inline room exactly.
        let value = "v".repeat(INLINE_BYTES - "Referer".len() - "X".len());
        let mut h = Headers::new();
        h.append("Referer", &value);
        assert_eq!(h.get_str("referer"), Some(value.as_str()));
        h.append("X", "");
        assert!(!h.data.spilled(), "an exact fit stays inline");
        h.append("Y", "1");
        assert!(h.data.spilled());
        let got: Vec<_> = h.iter().collect();
        assert_eq!(
            got,
            [
                (&b"Referer"[..], value.as_bytes()),
                (&b"X"[..], &b""[..]),
                (&b"Y"[..], &b"1"[..]),
            ]
        );
    }

    #[test]
    fn headers_compare_by_content_inline_or_not_and_shrink_back_inline() {
        let mut inline = Headers::new();
        inline.append("Referer", "http://a.test/x");
        let mut heap = Headers::with_capacity(1, 4 * INLINE_BYTES);
        heap.append("Referer", "http://a.test/x");
        assert!(!inline.data.spilled());
        assert!(heap.data.spilled());
        assert_eq!(inline, heap);
        let copy = heap.clone();
        assert!(!copy.data.spilled(), "a copy that fits is inline");
        assert_eq!(copy, heap);
        heap.shrink_to_fit();
        assert!(!heap.data.spilled());
        assert_eq!(inline, heap);
        assert_eq!(heap.get_str("REFERER"), Some("http://a.test/x"));
        heap.append("X-Long", "l".repeat(2 * INLINE_BYTES));
        heap.shrink_to_fit();
        assert!(
            heap.data.spilled(),
            "more than the inline room stays on the heap"
        );
        assert_eq!(heap.get("x-long").map(<[u8]>::len), Some(2 * INLINE_BYTES));
        assert_ne!(inline, heap);
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
