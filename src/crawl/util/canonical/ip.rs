//! Python's `ipaddress` as w3lib uses it: IPv4 and IPv6 parsing, RFC 5952 formatting.

use std::borrow::Cow;

pub(super) enum IpAddr<'a> {
    V4,
    /// The address and its scope id (the part after "%").
    V6(u128, Option<&'a str>),
}

/// `ipaddress.ip_address(text)`, or `None` where it raises `ValueError`.
pub(super) fn ip_address(text: &str) -> Option<IpAddr<'_>> {
    if text.contains('/') {
        return None;
    }
    if parse_ipv4(text).is_some() {
        return Some(IpAddr::V4);
    }
    let (addr, scope) = match text.split_once('%') {
        Some((_, scope)) if scope.is_empty() || scope.contains('%') => return None,
        Some((addr, scope)) => (addr, Some(scope)),
        None => (text, None),
    };
    parse_ipv6(addr).map(|ip| IpAddr::V6(ip, scope))
}

/// `IPv4Address._ip_int_from_string`: four decimal octets, no leading zeros.
pub(super) fn parse_ipv4(text: &str) -> Option<u32> {
    let mut value: u32 = 0;
    let mut count = 0;
    for octet in text.split('.') {
        count += 1;
        if count > 4
            || octet.is_empty()
            || octet.len() > 3
            || !octet.bytes().all(|b| b.is_ascii_digit())
            || (octet.len() > 1 && octet.starts_with('0'))
        {
            return None;
        }
        let n: u32 = octet
            .bytes()
            .fold(0, |acc, b| acc * 10 + u32::from(b - b'0'));
        if n > 255 {
            return None;
        }
        value = value << 8 | n;
    }
    (count == 4).then_some(value)
}

pub(super) fn parse_hextet(part: &str) -> Option<u128> {
    if part.is_empty() || part.len() > 4 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(part, 16).ok().map(u128::from)
}

/// `IPv6Address._ip_int_from_string`.
pub(super) fn parse_ipv6(text: &str) -> Option<u128> {
    if text.is_empty() {
        return None;
    }
    let mut parts: Vec<Cow<'_, str>> = text.split(':').map(Cow::Borrowed).collect();
    if parts.len() < 3 {
        return None;
    }
    if let Some(last) = parts.last().filter(|p| p.contains('.')) {
        let v4 = parse_ipv4(last)?;
        parts.pop();
        parts.push(Cow::Owned(format!("{:x}", v4 >> 16)));
        parts.push(Cow::Owned(format!("{:x}", v4 & 0xFFFF)));
    }
    if parts.len() > 9 {
        return None;
    }
    let n = parts.len();
    let mut skip_index = None;
    for (i, part) in parts.iter().enumerate().take(n - 1).skip(1) {
        if part.is_empty() {
            if skip_index.is_some() {
                return None;
            }
            skip_index = Some(i);
        }
    }
    let (parts_hi, parts_lo, skipped) = if let Some(skip) = skip_index {
        let mut hi = skip;
        let mut lo = n - skip - 1;
        if parts[0].is_empty() {
            hi -= 1;
            if hi > 0 {
                return None;
            }
        }
        if parts[n - 1].is_empty() {
            lo -= 1;
            if lo > 0 {
                return None;
            }
        }
        let skipped = 8usize.checked_sub(hi + lo).filter(|&s| s >= 1)?;
        (hi, lo, skipped)
    } else {
        if n != 8 || parts[0].is_empty() || parts[n - 1].is_empty() {
            return None;
        }
        (n, 0, 0)
    };
    let mut ip: u128 = 0;
    for part in &parts[..parts_hi] {
        ip = ip << 16 | parse_hextet(part)?;
    }
    // With all eight hextets skipped ("::") the shift is 128 bits, of zero.
    ip = ip.checked_shl(16 * skipped as u32).unwrap_or(0);
    for part in &parts[n - parts_lo..] {
        ip = ip << 16 | parse_hextet(part)?;
    }
    Some(ip)
}

/// `str(IPv6Address)` without the scope: the longest run (first if tied) of
/// two or more zero hextets becomes "::".
pub(super) fn format_ipv6(ip: u128) -> String {
    let hextets: [u16; 8] = std::array::from_fn(|i| (ip >> (112 - 16 * i)) as u16);
    let (mut best_start, mut best_len, mut run_start, mut run_len) = (0, 0, 0, 0);
    for (i, &h) in hextets.iter().enumerate() {
        if h == 0 {
            if run_len == 0 {
                run_start = i;
            }
            run_len += 1;
            if run_len > best_len {
                best_start = run_start;
                best_len = run_len;
            }
        } else {
            run_len = 0;
        }
    }
    let join = |hs: &[u16]| {
        hs.iter()
            .map(|h| format!("{h:x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    if best_len > 1 {
        format!(
            "{}::{}",
            join(&hextets[..best_start]),
            join(&hextets[best_start + best_len..])
        )
    } else {
        join(&hextets)
    }
}

// ---------------------------------------------------------------------------
// IDNA 2003 (w3lib `_idna` + CPython `encodings.idna` + `stringprep`)
// ---------------------------------------------------------------------------
