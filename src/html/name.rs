//! [`name_key`]: tag and attribute names as numbers, compared on the hot paths.

/// A name as a `u64`: the bytes themselves when they fit (exact), else an FNV hash with
/// the top bit set. Tag and attribute comparisons on hot paths compare these.
pub const fn name_key(name: &str) -> u64 {
    let b = name.as_bytes();
    let n = b.len();
    // Up to 8 bytes: the little-endian number of the bytes, read as two overlapping
    // words (the bytes both words cover land on the same place in each: the OR
    // keeps them), not byte by byte — every tag and attribute name passes here.
    if n >= 4 && n <= 8 {
        let lo = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64;
        let hi = u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]) as u64;
        lo | hi << (8 * (n - 4))
    } else if n >= 2 && n < 4 {
        let lo = u16::from_le_bytes([b[0], b[1]]) as u64;
        let hi = u16::from_le_bytes([b[n - 2], b[n - 1]]) as u64;
        lo | hi << (8 * (n - 2))
    } else if n == 1 {
        b[0] as u64
    } else if n == 0 {
        0
    } else {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut i = 0;
        while i < b.len() {
            h = (h ^ b[i] as u64).wrapping_mul(0x0100_0000_01b3);
            i += 1;
        }
        h | 1 << 63
    }
}

#[cfg(test)]
mod tests {
    use super::name_key;

    /// The key of a short name is its bytes as a little-endian number: the word reads
    /// agree with a byte-by-byte build at every length and for every byte value.
    #[test]
    fn short_name_keys_are_the_bytes_themselves() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..=8usize {
            for _ in 0..200 {
                let name: String = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        char::from(b' ' + (seed % 95) as u8)
                    })
                    .collect();
                let by_bytes = name
                    .bytes()
                    .enumerate()
                    .fold(0u64, |k, (i, b)| k | u64::from(b) << (8 * i));
                assert_eq!(name_key(&name), by_bytes, "{name:?}");
            }
        }
        // Longer names are hashes with the top bit set.
        assert_ne!(name_key("blockquote") & 1 << 63, 0);
        assert_ne!(name_key("blockquote"), name_key("blockquotf"));
    }
}
