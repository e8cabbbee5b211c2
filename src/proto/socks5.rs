//! SOCKS5, the client side (RFC 1928) with username/password authentication (RFC 1929):
//! the greeting, the optional sub-negotiation and the `CONNECT` request as bytes to send,
//! the proxy's answers parsed from whatever slice of the stream has arrived.
//!
//! [`ClientHandshake::new`] returns the greeting; each [`ClientHandshake::receive`] is
//! given every byte received and not yet consumed, and says how many it consumed, what
//! to send next, and whether the tunnel is open. Bytes after the final reply belong to
//! the tunnel. The target is an address (`socks5://`: the client resolved the name) or a
//! name the proxy resolves (`socks5h://`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The protocol version byte.
const VERSION: u8 = 5;
/// "No authentication required".
const METHOD_NONE: u8 = 0x00;
/// "Username/password" (RFC 1929).
const METHOD_USER_PASS: u8 = 0x02;
/// "No acceptable methods".
const METHOD_REFUSED: u8 = 0xFF;
/// The sub-negotiation's version byte (RFC 1929).
const AUTH_VERSION: u8 = 1;
/// `CONNECT`.
const CMD_CONNECT: u8 = 1;
const ATYP_V4: u8 = 1;
const ATYP_DOMAIN: u8 = 3;
const ATYP_V6: u8 = 4;

/// Where the proxy should connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetAddr {
    /// An address the client resolved (`socks5://`).
    Ip(IpAddr),
    /// A host name the proxy resolves (`socks5h://`), at most 255 bytes.
    Domain(String),
}

/// Username and password for RFC 1929, each 1 to 255 bytes (bytes, not text: the
/// RFC does not say how they are encoded).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub username: Vec<u8>,
    /// The password.
    pub password: Vec<u8>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &String::from_utf8_lossy(&self.username))
            .finish_non_exhaustive()
    }
}

/// Why a SOCKS5 handshake failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Socks5Error {
    /// The user name, password or host name is empty or longer than 255 bytes.
    BadRequest(String),
    /// The proxy answered with another protocol version (it is not a SOCKS5 proxy).
    NotSocks5(u8),
    /// The proxy accepted none of the offered methods (0xFF), e.g. it requires a
    /// password and none was given.
    NoAcceptableMethod,
    /// The proxy chose a method that was not offered.
    UnexpectedMethod(u8),
    /// The proxy rejected the user name and password (its status byte).
    AuthFailed(u8),
    /// The proxy could not or would not connect (its reply code, RFC 1928 §6).
    Refused(u8),
    /// The proxy's reply is malformed.
    BadReply(String),
    /// The proxy closed the connection before the tunnel opened, during the step
    /// named (`"method selection"`, `"authentication"`, `"the connect request"`).
    Closed(&'static str),
}

impl Socks5Error {
    /// Whether the proxy refused the credentials (or demanded some).
    pub fn is_auth(&self) -> bool {
        matches!(
            self,
            Self::AuthFailed(_)
                | Self::NoAcceptableMethod
                | Self::Closed("method selection" | "authentication")
        )
    }
}

/// RFC 1928's text for a reply code.
pub fn reply_message(code: u8) -> &'static str {
    match code {
        0 => "succeeded",
        1 => "general SOCKS server failure",
        2 => "connection not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "unassigned reply code",
    }
}

impl fmt::Display for Socks5Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadRequest(why) => write!(f, "cannot ask a SOCKS5 proxy: {why}"),
            Self::NotSocks5(v) => write!(f, "not a SOCKS5 proxy (version byte {v})"),
            Self::NoAcceptableMethod => f.write_str(
                "the SOCKS5 proxy accepted no offered authentication method \
                 (does it need a user name and password?)",
            ),
            Self::UnexpectedMethod(m) => {
                write!(
                    f,
                    "the SOCKS5 proxy chose method {m:#04x}, which was not offered"
                )
            }
            Self::AuthFailed(s) => {
                write!(
                    f,
                    "the SOCKS5 proxy rejected the user name and password (status {s})"
                )
            }
            Self::Refused(code) => write!(
                f,
                "the SOCKS5 proxy could not connect: {} ({code})",
                reply_message(*code)
            ),
            Self::BadReply(why) => write!(f, "malformed SOCKS5 reply: {why}"),
            Self::Closed(step) => write!(
                f,
                "the SOCKS5 proxy closed the connection during {step}{}",
                if *step == "the connect request" {
                    ""
                } else {
                    " (does it need a user name and password?)"
                }
            ),
        }
    }
}

impl std::error::Error for Socks5Error {}

/// What [`ClientHandshake::receive`] made of the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Bytes of the input consumed.
    pub consumed: usize,
    /// Bytes to send to the proxy now (possibly none).
    pub send: Vec<u8>,
    /// The proxy connected: the tunnel is open, and what follows is the target's.
    pub done: Option<Bound>,
}

/// The address the proxy connected from (`BND.ADDR`, `BND.PORT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The bound address.
    pub addr: TargetAddr,
    /// The bound port.
    pub port: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Method,
    Auth,
    Reply,
    Done,
}

/// The client side of one SOCKS5 handshake.
#[derive(Debug, Clone)]
pub struct ClientHandshake {
    state: State,
    credentials: Option<Credentials>,
    request: Vec<u8>,
}

fn check_len(what: &str, bytes: &[u8]) -> Result<u8, Socks5Error> {
    match u8::try_from(bytes.len()) {
        Ok(0) => Err(Socks5Error::BadRequest(format!("the {what} is empty"))),
        Ok(n) => Ok(n),
        Err(_) => Err(Socks5Error::BadRequest(format!(
            "the {what} is longer than 255 bytes"
        ))),
    }
}

impl ClientHandshake {
    /// Starts a handshake asking the proxy to connect to `target`:`port`; returns it
    /// with the greeting to send. With `credentials` the greeting offers
    /// username/password and "no authentication" (as curl does: a proxy needing no
    /// password may choose none); without, only "no authentication".
    ///
    /// # Errors
    ///
    /// [`Socks5Error::BadRequest`]: an empty or over-long name, user name or password.
    pub fn new(
        target: &TargetAddr,
        port: u16,
        credentials: Option<Credentials>,
    ) -> Result<(Self, Vec<u8>), Socks5Error> {
        if let Some(c) = &credentials {
            check_len("user name", &c.username)?;
            check_len("password", &c.password)?;
        }
        let mut request = vec![VERSION, CMD_CONNECT, 0];
        match target {
            TargetAddr::Ip(IpAddr::V4(a)) => {
                request.push(ATYP_V4);
                request.extend_from_slice(&a.octets());
            }
            TargetAddr::Ip(IpAddr::V6(a)) => {
                request.push(ATYP_V6);
                request.extend_from_slice(&a.octets());
            }
            TargetAddr::Domain(name) => {
                let n = check_len("host name", name.as_bytes())?;
                request.push(ATYP_DOMAIN);
                request.push(n);
                request.extend_from_slice(name.as_bytes());
            }
        }
        request.extend_from_slice(&port.to_be_bytes());
        let greeting = if credentials.is_some() {
            vec![VERSION, 2, METHOD_NONE, METHOD_USER_PASS]
        } else {
            vec![VERSION, 1, METHOD_NONE]
        };
        Ok((
            Self {
                state: State::Method,
                credentials,
                request,
            },
            greeting,
        ))
    }

    /// Whether the tunnel is open.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The error for a connection the proxy closed now, before the tunnel opened.
    pub fn closed(&self) -> Socks5Error {
        Socks5Error::Closed(match self.state {
            State::Method => "method selection",
            State::Auth => "authentication",
            State::Reply | State::Done => "the connect request",
        })
    }

    /// Reads the proxy's answers from `input` (everything received and not yet
    /// consumed). Several steps may complete in one call only if the proxy sent ahead,
    /// which it must not; so at most one step is taken per call.
    ///
    /// # Errors
    ///
    /// The proxy refused, failed, or is not speaking SOCKS5.
    pub fn receive(&mut self, input: &[u8]) -> Result<Progress, Socks5Error> {
        let waiting = Progress {
            consumed: 0,
            send: Vec::new(),
            done: None,
        };
        match self.state {
            State::Method => {
                let [version, method, ..] = *input else {
                    return Ok(waiting);
                };
                if version != VERSION {
                    return Err(Socks5Error::NotSocks5(version));
                }
                let send = match method {
                    METHOD_NONE => {
                        self.state = State::Reply;
                        self.request.clone()
                    }
                    METHOD_USER_PASS => match &self.credentials {
                        Some(c) => {
                            self.state = State::Auth;
                            let mut v = Vec::with_capacity(3 + c.username.len() + c.password.len());
                            v.push(AUTH_VERSION);
                            v.push(check_len("user name", &c.username)?);
                            v.extend_from_slice(&c.username);
                            v.push(check_len("password", &c.password)?);
                            v.extend_from_slice(&c.password);
                            v
                        }
                        None => return Err(Socks5Error::UnexpectedMethod(method)),
                    },
                    METHOD_REFUSED => return Err(Socks5Error::NoAcceptableMethod),
                    other => return Err(Socks5Error::UnexpectedMethod(other)),
                };
                Ok(Progress {
                    consumed: 2,
                    send,
                    done: None,
                })
            }
            State::Auth => {
                let [version, status, ..] = *input else {
                    return Ok(waiting);
                };
                // RFC 1929 says version 1; some servers answer 5. Both are seen in the
                // wild and curl accepts either, as does this.
                if version != AUTH_VERSION && version != VERSION {
                    return Err(Socks5Error::BadReply(format!(
                        "authentication reply version {version}"
                    )));
                }
                if status != 0 {
                    return Err(Socks5Error::AuthFailed(status));
                }
                self.state = State::Reply;
                Ok(Progress {
                    consumed: 2,
                    send: self.request.clone(),
                    done: None,
                })
            }
            State::Reply => {
                let Some((bound, used)) = parse_reply(input)? else {
                    return Ok(waiting);
                };
                self.state = State::Done;
                Ok(Progress {
                    consumed: used,
                    send: Vec::new(),
                    done: Some(bound),
                })
            }
            State::Done => Ok(waiting),
        }
    }
}

/// Parses a reply (`VER REP RSV ATYP BND.ADDR BND.PORT`): `None` until it is complete.
fn parse_reply(input: &[u8]) -> Result<Option<(Bound, usize)>, Socks5Error> {
    let [version, code, _reserved, atyp, ref rest @ ..] = *input else {
        if let Some(&v) = input.first()
            && v != VERSION
        {
            return Err(Socks5Error::NotSocks5(v));
        }
        return Ok(None);
    };
    if version != VERSION {
        return Err(Socks5Error::NotSocks5(version));
    }
    if code != 0 {
        return Err(Socks5Error::Refused(code));
    }
    let (addr_len, skip) = match atyp {
        ATYP_V4 => (4, 0),
        ATYP_V6 => (16, 0),
        ATYP_DOMAIN => match rest.first() {
            Some(&n) => (usize::from(n), 1),
            None => return Ok(None),
        },
        other => {
            return Err(Socks5Error::BadReply(format!("address type {other}")));
        }
    };
    let need = skip + addr_len + 2;
    if rest.len() < need {
        return Ok(None);
    }
    let raw = &rest[skip..skip + addr_len];
    let addr = match atyp {
        ATYP_V4 => {
            let mut a = [0u8; 4];
            a.copy_from_slice(raw);
            TargetAddr::Ip(IpAddr::V4(Ipv4Addr::from(a)))
        }
        ATYP_V6 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(raw);
            TargetAddr::Ip(IpAddr::V6(Ipv6Addr::from(a)))
        }
        _ => TargetAddr::Domain(String::from_utf8_lossy(raw).into_owned()),
    };
    let port = u16::from_be_bytes([rest[skip + addr_len], rest[skip + addr_len + 1]]);
    Ok(Some((Bound { addr, port }, 4 + need)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(u: &str, p: &str) -> Credentials {
        Credentials {
            username: u.as_bytes().to_vec(),
            password: p.as_bytes().to_vec(),
        }
    }

    /// What a handshake sent and how it ended.
    type Outcome = Result<(Vec<Vec<u8>>, Option<Bound>), Socks5Error>;

    /// Feeds `answer` split at every position, as a stream would deliver it.
    fn drive_split(hs: &ClientHandshake, answer: &[u8]) -> Vec<Outcome> {
        (1..=answer.len())
            .map(|split| {
                let mut hs = hs.clone();
                let mut sent = Vec::new();
                let mut buf: Vec<u8> = Vec::new();
                for chunk in answer.chunks(split) {
                    buf.extend_from_slice(chunk);
                    loop {
                        let p = hs.receive(&buf)?;
                        buf.drain(..p.consumed);
                        if !p.send.is_empty() {
                            sent.push(p.send);
                        }
                        if p.done.is_some() {
                            return Ok((sent, p.done));
                        }
                        if p.consumed == 0 {
                            break;
                        }
                    }
                }
                Ok((sent, None))
            })
            .collect()
    }

    #[test]
    fn no_auth_domain_target() {
        let (hs, greeting) =
            ClientHandshake::new(&TargetAddr::Domain("example.com".into()), 443, None)
                .expect("valid");
        assert_eq!(greeting, [5, 1, 0]);
        let answer = [5, 0, 5, 0, 0, 1, 10, 0, 0, 1, 0x1f, 0x90];
        for r in drive_split(&hs, &answer) {
            let (sent, bound) = r.expect("handshake");
            let mut req = vec![5, 1, 0, 3, 11];
            req.extend_from_slice(b"example.com");
            req.extend_from_slice(&[1, 187]);
            assert_eq!(sent, vec![req]);
            assert_eq!(
                bound,
                Some(Bound {
                    addr: TargetAddr::Ip("10.0.0.1".parse().expect("ip")),
                    port: 8080
                })
            );
        }
    }

    #[test]
    fn user_pass_ip_targets() {
        let v6: IpAddr = "::1".parse().expect("ip");
        let (hs, greeting) =
            ClientHandshake::new(&TargetAddr::Ip(v6), 80, Some(creds("ann", "pw"))).expect("ok");
        assert_eq!(greeting, [5, 2, 0, 2]);
        // Method 2, auth ok, a reply with a domain-typed bound address.
        let answer = [5, 2, 1, 0, 5, 0, 0, 3, 1, b'x', 0, 1];
        for r in drive_split(&hs, &answer) {
            let (sent, bound) = r.expect("handshake");
            let mut req = vec![5, 1, 0, 4];
            req.extend_from_slice(&[0; 15]);
            req.extend_from_slice(&[1, 0, 80]);
            assert_eq!(sent, vec![b"\x01\x03ann\x02pw".to_vec(), req]);
            assert_eq!(
                bound,
                Some(Bound {
                    addr: TargetAddr::Domain("x".into()),
                    port: 1
                })
            );
        }
        let v4 = TargetAddr::Ip("127.0.0.2".parse().expect("ip"));
        let (mut hs, _) = ClientHandshake::new(&v4, 8000, None).expect("ok");
        let p = hs.receive(&[5, 0]).expect("method");
        assert_eq!(p.send, [5, 1, 0, 1, 127, 0, 0, 2, 0x1f, 0x40]);
    }

    #[test]
    fn failures() {
        let target = TargetAddr::Domain("h".into());
        let fail = |creds: Option<Credentials>, answer: &[u8]| {
            let (hs, _) = ClientHandshake::new(&target, 1, creds).expect("ok");
            let results = drive_split(&hs, answer);
            let first = results[0].clone();
            assert!(results.iter().all(|r| *r == first), "{results:?}");
            first.expect_err("must fail")
        };
        assert_eq!(fail(None, &[5, 0xFF]), Socks5Error::NoAcceptableMethod);
        assert_eq!(fail(None, &[5, 2]), Socks5Error::UnexpectedMethod(2));
        assert_eq!(fail(None, &[4, 0]), Socks5Error::NotSocks5(4));
        assert_eq!(fail(None, b"HTTP/1.1 400"), Socks5Error::NotSocks5(b'H'));
        assert_eq!(
            fail(Some(creds("a", "b")), &[5, 2, 1, 1]),
            Socks5Error::AuthFailed(1)
        );
        assert_eq!(fail(None, &[5, 0, 5, 5, 0, 1]), Socks5Error::Refused(5));
        assert!(matches!(
            fail(None, &[5, 0, 5, 0, 0, 9, 0, 0]),
            Socks5Error::BadReply(_)
        ));
        assert!(
            Socks5Error::Refused(5)
                .to_string()
                .contains("connection refused")
        );
        let long = "x".repeat(256);
        assert!(matches!(
            ClientHandshake::new(&TargetAddr::Domain(long), 1, None),
            Err(Socks5Error::BadRequest(_))
        ));
        assert!(matches!(
            ClientHandshake::new(&target, 1, Some(creds("", "p"))),
            Err(Socks5Error::BadRequest(_))
        ));
    }

    #[test]
    fn bytes_after_the_reply_are_left_for_the_tunnel() {
        let (mut hs, _) =
            ClientHandshake::new(&TargetAddr::Domain("h".into()), 1, None).expect("ok");
        hs.receive(&[5, 0]).expect("method");
        let p = hs
            .receive(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0, b'H', b'T'])
            .expect("reply");
        assert_eq!(p.consumed, 10);
        assert!(p.done.is_some() && hs.is_done());
    }
}
