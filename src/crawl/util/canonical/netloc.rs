//! w3lib's `_safe_url_split` netloc: quoted userinfo, the IDNA host, a numeric port.

use std::borrow::Cow;

use super::error::Reason;
use super::idna::idna_2003;
use super::quote::{USERINFO_SAFEST, requote_into};
use super::split::{Parts, lower, parse_port};

/// `_safe_url_split`'s netloc: quoted userinfo, IDNA host, numeric port.
pub(super) fn write_netloc(out: &mut Vec<u8>, parts: &Parts<'_>) -> Result<(), Reason> {
    let netloc = parts.netloc;
    let (userinfo, hostinfo) = match netloc.rfind('@') {
        Some(i) => (Some(&netloc[..i]), &netloc[i + 1..]),
        None => (None, netloc),
    };
    let (hostname, port) = if parts.bracketed {
        let inside = hostinfo.split_once('[').map_or("", |(_, r)| r);
        let (host, after) = inside.split_once(']').unwrap_or((inside, ""));
        (host, after.split_once(':').map_or("", |(_, p)| p))
    } else {
        hostinfo.split_once(':').unwrap_or((hostinfo, ""))
    };
    let port = parse_port(port)?;
    // The hostname is lower-cased up to a "%" (the zone of an IPv6 address).
    let hostname: Cow<'_, str> = match hostname.split_once('%') {
        Some((h, zone)) => Cow::Owned(format!("{}%{zone}", lower(h))),
        None => lower(hostname),
    };

    if let Some(userinfo) = userinfo {
        let (user, password) = match userinfo.split_once(':') {
            Some((u, p)) => (u, Some(p)),
            None => (userinfo, None),
        };
        requote_into(out, user.as_bytes(), &USERINFO_SAFEST);
        if let Some(password) = password {
            out.push(b':');
            requote_into(out, password.as_bytes(), &USERINFO_SAFEST);
        }
        out.push(b'@');
    }
    if hostname.contains(':') {
        if !hostname.is_ascii() {
            return Err("UnicodeEncodeError: 'ascii' codec can't encode IPv6 host");
        }
        out.push(b'[');
        out.extend_from_slice(hostname.as_bytes());
        out.push(b']');
    } else if hostname.is_ascii() {
        out.extend_from_slice(hostname.as_bytes());
    } else {
        // IDNA can fail (e.g. a label over 63 characters): keep the host.
        match idna_2003(&hostname) {
            Some(ascii) => out.extend_from_slice(ascii.as_bytes()),
            None => out.extend_from_slice(hostname.as_bytes()),
        }
    }
    if let Some(port) = port {
        out.push(b':');
        push_decimal(out, port);
    }
    Ok(())
}

fn push_decimal(out: &mut Vec<u8>, n: u16) {
    let mut buf = [0u8; 5];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}
