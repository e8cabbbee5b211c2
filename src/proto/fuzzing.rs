//! Entry points for the fuzz targets (`tests/fuzz/`) and the bounded fuzz smoke test in
//! the normal suite (`tests/fuzz_smoke.rs`). Each one drives a decoder with arbitrary
//! bytes and must never panic or loop forever, whatever the input.

use super::decode::{ContentDecoder, Encoding};
use crate::proto::http1::{Event, Limits, ResponseParser};

/// Feeds `data` to a response parser, split at the positions encoded in its first
/// byte, as a connection would deliver it, then signals EOF. Returns the body length
/// seen, or `None` on a parse error.
pub fn parse_response(data: &[u8]) -> Option<u64> {
    let (step, data) = match data.split_first() {
        Some((&s, rest)) => (usize::from(s % 64) + 1, rest),
        None => (1, data),
    };
    let head_request = step == 64;
    let mut parser = ResponseParser::with_limits(
        head_request,
        Limits {
            max_head: 4096,
            max_headers: 32,
            max_line: 256,
        },
    );
    let mut buf: Vec<u8> = Vec::new();
    let mut body = 0u64;
    let mut pieces = data.chunks(step);
    loop {
        let more = pieces.next();
        if let Some(p) = more {
            buf.extend_from_slice(p);
        }
        // Drain every event the buffered bytes allow.
        let mut guard = 0;
        loop {
            guard += 1;
            assert!(guard < 100_000, "parser made no progress");
            match parser.parse(&buf) {
                Ok((n, ev)) => {
                    let done = matches!(ev, Some(Event::End));
                    if let Some(Event::Data(d)) = ev {
                        body += d.len() as u64;
                    }
                    buf.drain(..n);
                    if done {
                        return Some(body);
                    }
                    if n == 0 {
                        break;
                    }
                }
                Err(_) => return None,
            }
        }
        if more.is_none() {
            return parser.finish(true).ok().map(|_| body);
        }
    }
}

/// Feeds `data` as a chunked body (after a fixed head) through the parser.
pub fn parse_chunked(data: &[u8]) -> Option<u64> {
    let mut input = b"\x07HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    input.extend_from_slice(data);
    parse_response(&input)
}

/// Decodes `data` as gzip, deflate, br and zstd with a small limit.
pub fn decode_content(data: &[u8]) {
    for enc in [
        Encoding::Gzip,
        Encoding::Deflate,
        Encoding::Brotli,
        Encoding::Zstd,
    ] {
        let mut d = ContentDecoder::new(&[enc], 1 << 20);
        let mut out = Vec::new();
        for piece in data.chunks(97) {
            if d.feed(piece, &mut out).is_err() {
                break;
            }
        }
        let _ = d.finish(&mut out);
        assert!(out.len() <= 1 << 20);
    }
}

/// Feeds `data` to a RESP parser in pieces of the size its first byte encodes, as a
/// socket would deliver it, and each value to the cluster parsers (a `CLUSTER SLOTS`
/// table, a `MOVED`/`ASK` redirection). Returns how many top-level values it produced,
/// or `None` on a protocol error.
pub fn parse_resp(data: &[u8]) -> Option<usize> {
    use super::resp::{Limits as RespLimits, Parser};
    let (step, data) = match data.split_first() {
        Some((&s, rest)) => (usize::from(s % 32) + 1, rest),
        None => (1, data),
    };
    let mut parser = Parser::with_limits(RespLimits {
        max_line: 512,
        max_bulk: 4096,
        max_depth: 16,
        max_elements: 1024,
    });
    let mut buf: Vec<u8> = Vec::new();
    let mut values = 0;
    for piece in data.chunks(step) {
        buf.extend_from_slice(piece);
        let mut guard = 0;
        loop {
            guard += 1;
            assert!(guard < 100_000, "RESP parser made no progress");
            match parser.parse(&buf) {
                Ok((n, v)) => {
                    buf.drain(..n);
                    let Some(v) = v else { break };
                    values += 1;
                    // What the cluster client makes of replies: a slot table, a
                    // redirection.
                    if let Ok(t) = super::cluster::SlotTable::from_cluster_slots(&v, "seed") {
                        assert_eq!(t.owner.len(), super::cluster::SLOTS);
                    }
                    if let super::resp::Value::Error(e) = &v {
                        let _ = super::cluster::redirect(e);
                    }
                }
                Err(_) => return None,
            }
        }
    }
    Some(values)
}

/// Feeds `data` to an FTP reply parser in pieces of the size its first byte encodes,
/// and the text of each reply to the `PASV` address parser. Returns how many replies
/// it produced, or `None` on a protocol error.
pub fn parse_ftp(data: &[u8]) -> Option<usize> {
    use super::ftp::{ReplyParser, parse_pasv};
    let (step, data) = match data.split_first() {
        Some((&s, rest)) => (usize::from(s % 32) + 1, rest),
        None => (1, data),
    };
    let mut parser = ReplyParser::new();
    let mut replies = 0;
    for piece in data.chunks(step) {
        for mut reply in parser.feed(piece).ok()? {
            reply.code = 227;
            let _ = parse_pasv(&reply);
            replies += 1;
        }
    }
    Some(replies)
}

/// Runs a SOCKS5 client handshake (with credentials when the first byte is odd, to a
/// name or an address by its second bit) against `data` as the proxy's answers,
/// delivered in pieces of the size the first byte encodes. Returns whether the tunnel
/// opened, or `None` when the handshake failed.
pub fn socks5_handshake(data: &[u8]) -> Option<bool> {
    use super::socks5::{ClientHandshake, Credentials, TargetAddr};
    let (flags, data) = match data.split_first() {
        Some((&s, rest)) => (s, rest),
        None => (0, data),
    };
    let step = usize::from(flags >> 2) % 16 + 1;
    let credentials = (flags & 1 == 1).then(|| Credentials {
        username: b"user".to_vec(),
        password: b"pass".to_vec(),
    });
    let target = if flags & 2 == 0 {
        TargetAddr::Domain("example.com".into())
    } else {
        TargetAddr::Ip(std::net::IpAddr::from([127, 0, 0, 1]))
    };
    let (mut hs, _greeting) = ClientHandshake::new(&target, 443, credentials).ok()?;
    let mut buf: Vec<u8> = Vec::new();
    for piece in data.chunks(step) {
        buf.extend_from_slice(piece);
        loop {
            let p = hs.receive(&buf).ok()?;
            assert!(p.consumed <= buf.len(), "consumed more than it was given");
            buf.drain(..p.consumed);
            if p.done.is_some() {
                return Some(true);
            }
            if p.consumed == 0 {
                break;
            }
        }
    }
    Some(hs.is_done())
}
