//! LEB128 varints, zigzag for signed integers, and length-prefixed byte strings: the
//! integer encoding of the request record and of the JOBDIR journal's payloads.
//!
//! A varint is 7 bits a byte, least significant first, the high bit set on every byte
//! but the last; zigzag maps 0, -1, 1, -2 ... to 0, 1, 2, 3 ... so small negative
//! numbers stay short. A reader never panics and never reads past its slice: a
//! truncated varint, one longer than 64 bits, or a length past the end is `None`.

/// Appends `v` as a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint at `*pos` and moves past it; `None` when truncated or longer than
/// ten bytes.
pub fn get_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Zigzag: a signed integer as an unsigned one whose magnitude follows `|v|`.
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Appends `s` as a varint length and its bytes.
pub fn put_bytes(out: &mut Vec<u8>, s: &[u8]) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Reads a length-prefixed byte string at `*pos` and moves past it; `None` when the
/// length runs past the end.
pub fn get_bytes<'a>(b: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let n = usize::try_from(get_varint(b, pos)?).ok()?;
    let s = b.get(*pos..pos.checked_add(n)?)?;
    *pos += n;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        let mut values = vec![0, 1, 127, 128, 255, 300, 16_383, 16_384, u64::MAX];
        values.extend((0..64).map(|s| 1u64 << s));
        values.extend((1..64).map(|s| (1u64 << s) - 1));
        let mut out = Vec::new();
        for &v in &values {
            put_varint(&mut out, v);
        }
        let mut pos = 0;
        for &v in &values {
            assert_eq!(get_varint(&out, &mut pos), Some(v));
        }
        assert_eq!(pos, out.len());
    }

    #[test]
    fn varints_are_leb128() {
        let mut out = Vec::new();
        put_varint(&mut out, 300);
        assert_eq!(out, [0xAC, 0x02]);
        out.clear();
        put_varint(&mut out, u64::MAX);
        assert_eq!(out.len(), 10);
        assert_eq!(out[9], 0x01);
    }

    #[test]
    fn readers_refuse_what_is_cut_short_or_too_long() {
        assert_eq!(get_varint(&[0x80], &mut 0), None);
        assert_eq!(get_varint(&[], &mut 0), None);
        assert_eq!(get_varint(&[0xFF; 11], &mut 0), None);
        assert_eq!(get_bytes(&[5, b'a', b'b'], &mut 0), None);
        assert_eq!(
            get_bytes(
                &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
                &mut 0
            ),
            None
        );
        let mut pos = 0;
        assert_eq!(get_bytes(&[2, b'a', b'b', 9], &mut pos), Some(&b"ab"[..]));
        assert_eq!(pos, 3);
    }

    #[test]
    fn zigzag_keeps_small_magnitudes_small() {
        for (v, z) in [(0i64, 0u64), (-1, 1), (1, 2), (-2, 3), (2, 4)] {
            assert_eq!(zigzag(v), z);
            assert_eq!(unzigzag(z), v);
        }
        for v in [i64::MIN, i64::MAX, i64::from(i32::MIN), i64::from(i32::MAX)] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }
}
