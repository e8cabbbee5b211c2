//! The FTP control connection, sans-IO (RFC 959): replies parsed from bytes in any
//! split — one line (`226 Transfer complete.`) or several (`220-Welcome` … `220 Ready`)
//! — commands made safe to send, and the arguments of `PASV` (227) and `PORT`.
//! A reply line longer than [`MAX_LINE`] or a reply of more than [`MAX_LINES`] lines is
//! an error: a server cannot make the client buffer without bound.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddrV4};

/// The longest reply line accepted, in bytes.
pub const MAX_LINE: usize = 8 * 1024;

/// The most lines one multi-line reply may have.
pub const MAX_LINES: usize = 1_000;

/// One reply: its code and its text (the lines after the code, joined by `\n`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The three-digit code.
    pub code: u16,
    /// The text.
    pub text: String,
}

impl Reply {
    /// `1xx`: a preliminary reply; another follows.
    pub fn is_preliminary(&self) -> bool {
        (100..200).contains(&self.code)
    }

    /// `2xx`: done.
    pub fn is_completion(&self) -> bool {
        (200..300).contains(&self.code)
    }

    /// `3xx`: more is needed (a password after the user name).
    pub fn is_intermediate(&self) -> bool {
        (300..400).contains(&self.code)
    }
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.text)
    }
}

/// The server broke the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FtpProtocolError(pub String);

impl fmt::Display for FtpProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FTP protocol error: {}", self.0)
    }
}

impl std::error::Error for FtpProtocolError {}

/// Turns the control connection's bytes into replies.
#[derive(Debug, Default)]
pub struct ReplyParser {
    line: Vec<u8>,
    /// The code and lines of a multi-line reply in progress.
    open: Option<(u16, Vec<String>)>,
}

fn code_of(line: &[u8]) -> Option<u16> {
    let digits = line.get(..3)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let code = digits
        .iter()
        .fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
    (100..600).contains(&code).then_some(code)
}

impl ReplyParser {
    /// A parser at the start of a connection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the replies they complete, in order.
    ///
    /// # Errors
    ///
    /// A line that is not a reply, or a line or reply over the limits. The parser is
    /// then unusable: drop the connection.
    pub fn feed(&mut self, data: &[u8]) -> Result<Vec<Reply>, FtpProtocolError> {
        let mut replies = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    self.push_bytes(&rest[..i])?;
                    rest = &rest[i + 1..];
                    let mut line = std::mem::take(&mut self.line);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    if let Some(r) = self.line_done(&line)? {
                        replies.push(r);
                    }
                }
                None => {
                    self.push_bytes(rest)?;
                    rest = &[];
                }
            }
        }
        Ok(replies)
    }

    fn push_bytes(&mut self, bytes: &[u8]) -> Result<(), FtpProtocolError> {
        if self.line.len() + bytes.len() > MAX_LINE {
            return Err(FtpProtocolError(format!(
                "a reply line longer than {MAX_LINE} bytes"
            )));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn line_done(&mut self, line: &[u8]) -> Result<Option<Reply>, FtpProtocolError> {
        let text = String::from_utf8_lossy(line);
        if let Some((code, lines)) = self.open.as_mut() {
            // RFC 959 §4.2: the reply ends at a line starting with the same code and a
            // space; other lines (indented, or other digits) are its text.
            if code_of(line) == Some(*code) && line.get(3) == Some(&b' ') {
                lines.push(text.get(4..).unwrap_or("").to_owned());
                let (code, lines) = self.open.take().unwrap_or_default();
                return Ok(Some(Reply {
                    code,
                    text: lines.join("\n"),
                }));
            }
            if lines.len() >= MAX_LINES {
                return Err(FtpProtocolError(format!(
                    "a reply of more than {MAX_LINES} lines"
                )));
            }
            lines.push(text.into_owned());
            return Ok(None);
        }
        let Some(code) = code_of(line) else {
            return Err(FtpProtocolError(format!("not a reply: {text:?}")));
        };
        match line.get(3) {
            Some(b'-') => {
                self.open = Some((code, vec![text.get(4..).unwrap_or("").to_owned()]));
                Ok(None)
            }
            None | Some(b' ') => Ok(Some(Reply {
                code,
                text: text.get(4..).unwrap_or("").to_owned(),
            })),
            Some(_) => Err(FtpProtocolError(format!("not a reply: {text:?}"))),
        }
    }
}

/// A command line, `VERB ARG\r\n`.
///
/// # Errors
///
/// The argument holds a CR or LF (it would smuggle a second command).
pub fn command(verb: &str, arg: Option<&str>) -> Result<Vec<u8>, FtpProtocolError> {
    let mut out = verb.as_bytes().to_vec();
    if let Some(arg) = arg {
        if arg.contains(['\r', '\n']) {
            return Err(FtpProtocolError(format!(
                "a line break in the argument of {verb}: {arg:?}"
            )));
        }
        out.push(b' ');
        out.extend_from_slice(arg.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    Ok(out)
}

/// The address of a `227 Entering Passive Mode (h1,h2,h3,h4,p1,p2)` reply: the first
/// run of six comma-separated numbers in its text (Python's `ftplib.parse227`).
///
/// # Errors
///
/// The reply is not a 227 with six numbers from 0 to 255.
pub fn parse_pasv(reply: &Reply) -> Result<SocketAddrV4, FtpProtocolError> {
    let bad = || FtpProtocolError(format!("bad PASV reply: {reply}"));
    if reply.code != 227 {
        return Err(bad());
    }
    let text = reply.text.as_bytes();
    let six_at = |mut i: usize| -> Option<[u32; 6]> {
        let mut out = [0u32; 6];
        for (k, slot) in out.iter_mut().enumerate() {
            let start = i;
            while i < text.len() && text[i].is_ascii_digit() && i - start < 10 {
                *slot = *slot * 10 + u32::from(text[i] - b'0');
                i += 1;
            }
            if i == start {
                return None;
            }
            if k < 5 {
                if text.get(i) != Some(&b',') {
                    return None;
                }
                i += 1;
            }
        }
        Some(out)
    };
    let n = (0..text.len())
        .filter(|&i| text[i].is_ascii_digit())
        .find_map(six_at)
        .ok_or_else(bad)?;
    let byte = |v: u32| u8::try_from(v).map_err(|_| bad());
    Ok(SocketAddrV4::new(
        Ipv4Addr::new(byte(n[0])?, byte(n[1])?, byte(n[2])?, byte(n[3])?),
        u16::from(byte(n[4])?) << 8 | u16::from(byte(n[5])?),
    ))
}

/// The argument of `PORT` for a local address: `h1,h2,h3,h4,p1,p2`.
pub fn port_argument(addr: SocketAddrV4) -> String {
    let [a, b, c, d] = addr.ip().octets();
    let port = addr.port();
    format!("{a},{b},{c},{d},{},{}", port >> 8, port & 0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(parser: &mut ReplyParser, chunks: &[&[u8]]) -> Vec<Reply> {
        chunks
            .iter()
            .flat_map(|c| parser.feed(c).expect("valid"))
            .collect()
    }

    #[test]
    fn single_and_multi_line_replies_in_any_split() {
        let bytes = b"220-Welcome\r\n 220 is not the end\r\n220 Ready\r\n331 Password?\r\n";
        for split in 0..bytes.len() {
            let mut p = ReplyParser::new();
            let got = all(&mut p, &[&bytes[..split], &bytes[split..]]);
            assert_eq!(
                got,
                [
                    Reply {
                        code: 220,
                        text: "Welcome\n 220 is not the end\nReady".into()
                    },
                    Reply {
                        code: 331,
                        text: "Password?".into()
                    }
                ],
                "split at {split}"
            );
        }
    }

    #[test]
    fn garbage_and_long_lines_are_errors() {
        assert!(ReplyParser::new().feed(b"hello\r\n").is_err());
        assert!(ReplyParser::new().feed(&[b'2'; MAX_LINE + 1]).is_err());
        let mut p = ReplyParser::new();
        let mut body = b"211-start\r\n".to_vec();
        for _ in 0..MAX_LINES {
            body.extend_from_slice(b" x\r\n");
        }
        assert!(p.feed(&body).is_err());
    }

    #[test]
    fn commands_and_addresses() {
        assert_eq!(command("STOR", Some("a b.jl")).unwrap(), b"STOR a b.jl\r\n");
        assert_eq!(command("PASV", None).unwrap(), b"PASV\r\n");
        assert!(command("STOR", Some("x\r\nDELE y")).is_err());
        let r = Reply {
            code: 227,
            text: "Entering Passive Mode (127,0,0,1,195,80).".into(),
        };
        assert_eq!(
            parse_pasv(&r).unwrap(),
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, 50000)
        );
        assert!(
            parse_pasv(&Reply {
                code: 227,
                text: "(1,2,3)".into()
            })
            .is_err()
        );
        assert_eq!(
            port_argument(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 50000)),
            "10,0,0,2,195,80"
        );
    }
}
