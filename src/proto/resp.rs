//! RESP, the Redis protocol, as a sans-IO codec: [`encode_command`] writes a command
//! (an array of bulk strings), and [`Parser`] turns bytes into [`Value`]s, resumable at
//! any byte.
//!
//! RESP2 in full (`+` simple string, `-` error, `:` integer, `$` bulk, `*` array, and
//! their null forms) plus the RESP3 types a server may send once `HELLO 3` is spoken
//! (`_` null, `#` boolean, `,` double, `(` big number, `=` verbatim string, `%` map,
//! `~` set, `>` push, `|` attribute — attributes are read and dropped). trawl speaks
//! RESP2; the RESP3 types are parsed so a misconfigured server cannot wedge the client.
//!
//! # Linear time, bounded memory
//!
//! The parser keeps the arrays it is inside on an explicit stack (no recursion) and
//! consumes whole tokens only — a line, or a bulk string's length line *and* payload —
//! so bytes are never parsed twice: a partial token is left to the caller, who calls
//! again with more bytes, and a bulk payload is only waited for, not re-read. Limits:
//! a line of at most [`Limits::max_line`] bytes, bulk strings of at most
//! [`Limits::max_bulk`], at most [`Limits::max_depth`] nested aggregates, aggregates of
//! at most [`Limits::max_elements`] elements (and their memory is reserved only as
//! elements arrive).

use std::fmt;

/// A RESP value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `+OK`.
    Simple(String),
    /// `-ERR ...`: a command error (not a protocol error).
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$5\r\nhello`.
    Bulk(Vec<u8>),
    /// `*2 ...` (also RESP3 sets and pushes).
    Array(Vec<Value>),
    /// `$-1`, `*-1`, `_`.
    Nil,
    /// RESP3 `#t` / `#f`.
    Boolean(bool),
    /// RESP3 `,3.14`.
    Double(f64),
    /// RESP3 `%`: key-value pairs.
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// The bytes of a bulk or simple string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Self::Bulk(b) => Some(b),
            Self::Simple(s) => Some(s.as_bytes()),
            _ => None,
        }
    }

    /// The integer, also from a numeric bulk string.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Self::Integer(i) => Some(*i),
            Self::Bulk(b) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }

    /// The elements of an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Self::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Whether it is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Error(_))
    }
}

/// The parser's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest header or simple line.
    pub max_line: usize,
    /// Largest bulk string (Redis's own limit is 512 MiB).
    pub max_bulk: usize,
    /// Deepest nesting of aggregates.
    pub max_depth: usize,
    /// Most elements in one aggregate.
    pub max_elements: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_line: 64 * 1024,
            max_bulk: 512 * 1024 * 1024,
            max_depth: 64,
            max_elements: 1 << 24,
        }
    }
}

/// Bytes that are not RESP (the connection cannot be trusted after one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RespError(pub String);

impl fmt::Display for RespError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RESP protocol error: {}", self.0)
    }
}

impl std::error::Error for RespError {}

/// Appends a command (`*N` of bulk strings) to `out`.
pub fn encode_command<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    out.push(b'*');
    out.extend_from_slice(args.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(a.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// An aggregate being filled.
#[derive(Debug)]
struct Frame {
    kind: Agg,
    remaining: usize,
    items: Vec<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agg {
    Array,
    Map,
    Attribute,
}

/// The incremental parser.
#[derive(Debug, Default)]
pub struct Parser {
    limits: Limits,
    stack: Vec<Frame>,
    /// Bytes of the current, incomplete line already searched for its `\n`, so a line
    /// delivered a byte at a time is still scanned once.
    scanned: usize,
}

fn find_crlf(b: &[u8], max: usize, from: usize) -> Result<Option<usize>, RespError> {
    let window = &b[..b.len().min(max + 2)];
    let from = from.min(window.len());
    match memchr::memchr(b'\n', &window[from..]).map(|i| i + from) {
        Some(i) if i > 0 && b[i - 1] == b'\r' => Ok(Some(i - 1)),
        Some(_) => Err(RespError("a line ending without \\r".into())),
        None if b.len() > max + 1 => Err(RespError(format!("a line longer than {max} bytes"))),
        None => Ok(None),
    }
}

fn parse_int(line: &[u8]) -> Result<i64, RespError> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| {
            RespError(format!(
                "not an integer: {:?}",
                String::from_utf8_lossy(line)
            ))
        })
}

impl Parser {
    /// A parser with the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser with `limits`.
    pub fn with_limits(limits: Limits) -> Self {
        Self {
            limits,
            stack: Vec::new(),
            scanned: 0,
        }
    }

    /// Parses from `input`: returns the bytes consumed and, when one is complete, a
    /// top-level value. Call again with the unconsumed rest (plus any new bytes) until
    /// it returns `(0, None)`.
    ///
    /// # Errors
    ///
    /// The bytes are not RESP or exceed a limit; the parser must not be used again.
    pub fn parse(&mut self, input: &[u8]) -> Result<(usize, Option<Value>), RespError> {
        let mut pos = 0;
        'tokens: loop {
            let Some((used, token)) = self.token(&input[pos..])? else {
                return Ok((pos, None));
            };
            pos += used;
            let mut value = match token {
                Token::Value(v) => v,
                // An empty attribute annotates nothing: read on.
                Token::Open(Agg::Attribute, 0) => continue,
                Token::Open(kind, 0) => empty(kind),
                Token::Open(kind, n) => {
                    if self.stack.len() >= self.limits.max_depth {
                        return Err(RespError("aggregates nested too deeply".into()));
                    }
                    self.stack.push(Frame {
                        kind,
                        remaining: n,
                        items: Vec::with_capacity(n.min(1024)),
                    });
                    continue;
                }
            };
            // Fill enclosing aggregates; return a value when none encloses it.
            loop {
                let Some(frame) = self.stack.last_mut() else {
                    return Ok((pos, Some(value)));
                };
                frame.items.push(value);
                frame.remaining -= 1;
                if frame.remaining > 0 {
                    continue 'tokens;
                }
                let Some(done) = self.stack.pop() else {
                    return Err(RespError("internal: empty stack".into()));
                };
                value = match done.kind {
                    Agg::Array => Value::Array(done.items),
                    Agg::Map => Value::Map(pairs(done.items)),
                    // An attribute precedes the value it annotates and is not an
                    // element of its own: drop it and read on.
                    Agg::Attribute => continue 'tokens,
                };
            }
        }
    }

    /// One complete token at the start of `b`, or `None` if it is not complete yet.
    fn token(&mut self, b: &[u8]) -> Result<Option<(usize, Token)>, RespError> {
        let Some(&kind) = b.first() else {
            return Ok(None);
        };
        let Some(end) = find_crlf(&b[1..], self.limits.max_line, self.scanned)? else {
            self.scanned = b.len() - 1;
            return Ok(None);
        };
        self.scanned = 0;
        let line = &b[1..1 + end];
        let after = 1 + end + 2;
        let count = |n: i64, what: &str| -> Result<usize, RespError> {
            usize::try_from(n)
                .ok()
                .filter(|&n| n <= self.limits.max_elements)
                .ok_or_else(|| RespError(format!("{what} of {n} elements")))
        };
        let text = || String::from_utf8_lossy(line).into_owned();
        Ok(Some(match kind {
            b'+' => (after, Token::Value(Value::Simple(text()))),
            b'-' => (after, Token::Value(Value::Error(text()))),
            b':' => (after, Token::Value(Value::Integer(parse_int(line)?))),
            b'_' => (after, Token::Value(Value::Nil)),
            b'#' => match line {
                b"t" => (after, Token::Value(Value::Boolean(true))),
                b"f" => (after, Token::Value(Value::Boolean(false))),
                _ => return Err(RespError("a boolean that is not t or f".into())),
            },
            b',' => {
                let s = text();
                let f = match s.as_str() {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    _ => s
                        .parse::<f64>()
                        .map_err(|_| RespError(format!("not a double: {s:?}")))?,
                };
                (after, Token::Value(Value::Double(f)))
            }
            b'(' => (after, Token::Value(Value::Bulk(line.to_vec()))),
            b'$' | b'=' | b'!' => {
                let n = parse_int(line)?;
                if n < 0 {
                    return Ok(Some((after, Token::Value(Value::Nil))));
                }
                let n = usize::try_from(n)
                    .ok()
                    .filter(|&n| n <= self.limits.max_bulk)
                    .ok_or_else(|| RespError(format!("a bulk string of {n} bytes")))?;
                if b.len() < after + n + 2 {
                    return Ok(None);
                }
                if &b[after + n..after + n + 2] != b"\r\n" {
                    return Err(RespError("a bulk string not followed by \\r\\n".into()));
                }
                let payload = b[after..after + n].to_vec();
                let v = match kind {
                    b'!' => Value::Error(String::from_utf8_lossy(&payload).into_owned()),
                    b'=' if payload.len() >= 4 => Value::Bulk(payload[4..].to_vec()),
                    _ => Value::Bulk(payload),
                };
                (after + n + 2, Token::Value(v))
            }
            b'*' | b'~' | b'>' => {
                let n = parse_int(line)?;
                if n < 0 {
                    return Ok(Some((after, Token::Value(Value::Nil))));
                }
                (after, Token::Open(Agg::Array, count(n, "an array")?))
            }
            b'%' | b'|' => {
                let n = parse_int(line)?;
                let pairs = count(n, "a map")?;
                let n = pairs
                    .checked_mul(2)
                    .ok_or_else(|| RespError("a map too large".into()))?;
                let kind = if kind == b'%' {
                    Agg::Map
                } else {
                    Agg::Attribute
                };
                (after, Token::Open(kind, n))
            }
            other => {
                return Err(RespError(format!("unknown type byte {:?}", other as char)));
            }
        }))
    }
}

enum Token {
    Value(Value),
    Open(Agg, usize),
}

fn empty(kind: Agg) -> Value {
    match kind {
        Agg::Array => Value::Array(Vec::new()),
        Agg::Map | Agg::Attribute => Value::Map(Vec::new()),
    }
}

fn pairs(items: Vec<Value>) -> Vec<(Value, Value)> {
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    out
}

/// Parses every complete value in `input` (a test and fuzzing helper): the values and
/// the bytes consumed.
///
/// # Errors
///
/// As [`Parser::parse`].
pub fn parse_all(parser: &mut Parser, input: &[u8]) -> Result<(Vec<Value>, usize), RespError> {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let (used, v) = parser.parse(&input[pos..])?;
        pos += used;
        match v {
            Some(v) => out.push(v),
            None => return Ok((out, pos)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"+OK\r\n-ERR bad\r\n:-42\r\n$5\r\nhe\r\no\r\n$-1\r\n*0\r\n*-1\r\n\
*3\r\n:1\r\n*2\r\n$1\r\na\r\n$0\r\n\r\n+x\r\n_\r\n#t\r\n,1.5\r\n(123456789012345678901234\r\n\
=8\r\ntxt:abcd\r\n%1\r\n+k\r\n:1\r\n~2\r\n:1\r\n:2\r\n>2\r\n+p\r\n+q\r\n|1\r\n+a\r\n+b\r\n:7\r\n\
*2\r\n|1\r\n+a\r\n*1\r\n+b\r\n:1\r\n|0\r\n:2\r\n";

    fn expected() -> Vec<Value> {
        vec![
            Value::Simple("OK".into()),
            Value::Error("ERR bad".into()),
            Value::Integer(-42),
            Value::Bulk(b"he\r\no".to_vec()),
            Value::Nil,
            Value::Array(vec![]),
            Value::Nil,
            Value::Array(vec![
                Value::Integer(1),
                Value::Array(vec![Value::Bulk(b"a".to_vec()), Value::Bulk(Vec::new())]),
                Value::Simple("x".into()),
            ]),
            Value::Nil,
            Value::Boolean(true),
            Value::Double(1.5),
            Value::Bulk(b"123456789012345678901234".to_vec()),
            Value::Bulk(b"abcd".to_vec()),
            Value::Map(vec![(Value::Simple("k".into()), Value::Integer(1))]),
            Value::Array(vec![Value::Integer(1), Value::Integer(2)]),
            Value::Array(vec![Value::Simple("p".into()), Value::Simple("q".into())]),
            Value::Integer(7),
            Value::Array(vec![Value::Integer(1), Value::Integer(2)]),
        ]
    }

    #[test]
    fn every_type_in_one_go() {
        let mut p = Parser::new();
        let (values, used) = parse_all(&mut p, SAMPLE).expect("parses");
        assert_eq!(used, SAMPLE.len());
        assert_eq!(values, expected());
    }

    #[test]
    fn split_at_every_byte() {
        for split in 0..=SAMPLE.len() {
            let mut p = Parser::new();
            let mut buf = Vec::new();
            let mut values = Vec::new();
            for chunk in [&SAMPLE[..split], &SAMPLE[split..]] {
                buf.extend_from_slice(chunk);
                let (v, used) = parse_all(&mut p, &buf).expect("parses");
                values.extend(v);
                buf.drain(..used);
            }
            assert!(buf.is_empty(), "split {split}");
            assert_eq!(values, expected(), "split {split}");
        }
        // One byte at a time.
        let mut p = Parser::new();
        let mut buf = Vec::new();
        let mut values = Vec::new();
        for &b in SAMPLE {
            buf.push(b);
            let (v, used) = parse_all(&mut p, &buf).expect("parses");
            values.extend(v);
            buf.drain(..used);
        }
        assert_eq!(values, expected());
    }

    #[test]
    fn encoding_and_limits() {
        let mut out = Vec::new();
        encode_command(&["SET", "k", "v\r\n"], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv\r\n\r\n");
        let mut p = Parser::new();
        assert_eq!(
            parse_all(&mut p, &out)
                .expect("a command is an array of bulks")
                .0
                .len(),
            1
        );
        for bad in [
            &b"?x\r\n"[..],
            b":12a\r\n",
            b"$3\r\nabcd\r\n",
            b"+no cr\n",
            b"#x\r\n",
            b"*99999999999\r\n",
            b"$99999999999\r\n",
        ] {
            assert!(Parser::new().parse(bad).is_err(), "{bad:?}");
        }
        let deep = "*1\r\n".repeat(100);
        assert!(Parser::new().parse(deep.as_bytes()).is_err(), "depth limit");
        let long = vec![b'+'; 100_000];
        assert!(Parser::new().parse(&long).is_err(), "line limit");
        // A long line delivered a byte at a time is scanned once (this would take
        // seconds if each call rescanned the line from its start).
        let mut line = vec![b'+'];
        line.extend(std::iter::repeat_n(b'a', 60_000));
        line.extend_from_slice(b"\r\n");
        let mut p = Parser::new();
        let mut got = None;
        for end in 1..=line.len() {
            let (used, v) = p.parse(&line[..end]).expect("parses");
            assert!(used == 0 || end == line.len());
            got = got.or(v);
        }
        assert_eq!(got, Some(Value::Simple("a".repeat(60_000))));
        // A huge announced array reserves nothing up front.
        let mut p = Parser::new();
        assert_eq!(p.parse(b"*16000000\r\n").expect("ok"), (11, None));
    }
}
