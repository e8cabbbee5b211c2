//! The response parser: head with `httparse`, then the body by Content-Length, chunked
//! coding (extensions and trailers), or until the connection closes.

use super::limits::{HttpError, Limits};
use crate::proto::Headers;

/// A parsed status line and header section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// Minor HTTP version: 1 for HTTP/1.1, 0 for HTTP/1.0.
    pub version: u8,
    /// Status code.
    pub status: u16,
    /// Reason phrase (may be empty).
    pub reason: String,
    /// Header fields in order.
    pub headers: Headers,
}

impl ResponseHead {
    /// The Content-Length, if announced and valid.
    pub fn content_length(&self) -> Option<u64> {
        content_length(&self.headers).ok().flatten()
    }

    /// `"HTTP/1.1"` or `"HTTP/1.0"`.
    pub fn protocol(&self) -> &'static str {
        if self.version == 0 {
            "HTTP/1.0"
        } else {
            "HTTP/1.1"
        }
    }
}

/// What one call to [`ResponseParser::parse`] produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// The head of the final (non-1xx) response.
    Head(ResponseHead),
    /// A piece of the body, borrowed from the input.
    Data(&'a [u8]),
    /// The response is complete; bytes after it belong to the next one.
    End,
}

/// Header slots on the stack while parsing a head: the most headers a response may
/// have, whatever [`Limits::max_headers`] says.
const MAX_HEADER_SLOTS: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    Size,
    Data(u64),
    Crlf,
    Trailer,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Head,
    NoBody,
    Length(u64),
    Chunked(Chunk),
    UntilClose,
    Done,
    Failed(HttpError),
}

/// A push parser for one HTTP/1.1 response.
///
/// # Examples
///
/// ```
/// use trawl::proto::http1::{Event, ResponseParser};
///
/// let mut p = ResponseParser::new(false);
/// let input = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
/// let (n, ev) = p.parse(input).unwrap();
/// assert!(matches!(ev, Some(Event::Head(h)) if h.status == 200));
/// let (m, ev) = p.parse(&input[n..]).unwrap();
/// assert_eq!(ev, Some(Event::Data(b"hello")));
/// assert_eq!(p.parse(&input[n + m..]).unwrap(), (0, Some(Event::End)));
/// assert!(p.keep_alive());
/// ```
#[derive(Debug, Clone)]
pub struct ResponseParser {
    state: State,
    limits: Limits,
    head_request: bool,
    connect_request: bool,
    keep_alive: bool,
    received: u64,
    expected: Option<u64>,
}

impl ResponseParser {
    /// A parser for the response to a `CONNECT`: a 2xx response has no body (the
    /// tunnel starts right after its head).
    pub fn for_connect() -> Self {
        let mut p = Self::new(false);
        p.connect_request = true;
        p
    }

    /// A parser for the response to a request; `head_request` for HEAD (no body).
    pub fn new(head_request: bool) -> Self {
        Self::with_limits(head_request, Limits::default())
    }

    /// A parser with explicit limits.
    pub fn with_limits(head_request: bool, limits: Limits) -> Self {
        Self {
            state: State::Head,
            limits,
            head_request,
            connect_request: false,
            keep_alive: false,
            received: 0,
            expected: None,
        }
    }

    /// Whether the response is complete.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Whether the head has been parsed.
    pub fn has_head(&self) -> bool {
        self.state != State::Head
    }

    /// Whether the connection may carry another request after this response (decided
    /// by the head; false for bodies delimited by closing).
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    /// Body bytes seen so far (before any content decoding).
    pub fn body_received(&self) -> u64 {
        self.received
    }

    fn fail(&mut self, e: HttpError) -> HttpError {
        self.state = State::Failed(e.clone());
        e
    }

    /// Parses from `input`; returns how many bytes were consumed and the event they
    /// produced, if any. `(0, None)` means "need more input".
    ///
    /// # Errors
    ///
    /// Malformed input or an exceeded limit; the error is sticky.
    pub fn parse<'a>(&mut self, input: &'a [u8]) -> Result<(usize, Option<Event<'a>>), HttpError> {
        match self.state.clone() {
            State::Failed(e) => Err(e),
            State::Done => Ok((0, Some(Event::End))),
            State::Head => self.parse_head(input),
            State::NoBody => {
                self.state = State::Done;
                Ok((0, Some(Event::End)))
            }
            State::Length(0) => {
                self.state = State::Done;
                Ok((0, Some(Event::End)))
            }
            State::Length(remaining) => {
                if input.is_empty() {
                    return Ok((0, None));
                }
                let n = usize::try_from(remaining)
                    .unwrap_or(usize::MAX)
                    .min(input.len());
                self.state = State::Length(remaining - n as u64);
                self.received += n as u64;
                Ok((n, Some(Event::Data(&input[..n]))))
            }
            State::UntilClose => {
                if input.is_empty() {
                    return Ok((0, None));
                }
                self.received += input.len() as u64;
                Ok((input.len(), Some(Event::Data(input))))
            }
            State::Chunked(chunk) => self.parse_chunked(chunk, input),
        }
    }

    /// Tells the parser the connection closed; returns the final event.
    ///
    /// # Errors
    ///
    /// [`HttpError::EmptyResponse`] before any byte, [`HttpError::Incomplete`] when the
    /// head or body was cut short.
    pub fn finish(&mut self, any_bytes: bool) -> Result<Event<'static>, HttpError> {
        match self.state.clone() {
            State::Failed(e) => Err(e),
            State::Done | State::NoBody | State::Length(0) | State::UntilClose => {
                self.state = State::Done;
                Ok(Event::End)
            }
            State::Head if !any_bytes => Err(self.fail(HttpError::EmptyResponse)),
            _ => {
                let e = HttpError::Incomplete {
                    received: self.received,
                    expected: self.expected,
                };
                Err(self.fail(e))
            }
        }
    }

    fn parse_head<'a>(&mut self, input: &'a [u8]) -> Result<(usize, Option<Event<'a>>), HttpError> {
        if input.len() > self.limits.max_head {
            let window = &input[..self.limits.max_head];
            if !window.windows(4).any(|w| w == b"\r\n\r\n")
                && !window.windows(2).any(|w| w == b"\n\n")
            {
                return Err(self.fail(HttpError::HeadTooLarge {
                    limit: self.limits.max_head,
                }));
            }
        }
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADER_SLOTS];
        let slots = &mut slots[..self.limits.max_headers.min(MAX_HEADER_SLOTS)];
        let slot_count = slots.len();
        let mut config = httparse::ParserConfig::default();
        config
            .allow_spaces_after_header_name_in_responses(true)
            .allow_obsolete_multiline_headers_in_responses(true)
            .allow_multiple_spaces_in_response_status_delimiters(true);
        let mut response = httparse::Response::new(slots);
        let consumed = match config.parse_response(&mut response, input) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if input.len() > self.limits.max_head {
                    return Err(self.fail(HttpError::HeadTooLarge {
                        limit: self.limits.max_head,
                    }));
                }
                return Ok((0, None));
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(self.fail(HttpError::TooManyHeaders { limit: slot_count }));
            }
            Err(e) => return Err(self.fail(HttpError::InvalidHead(e.to_string()))),
        };
        if consumed > self.limits.max_head {
            return Err(self.fail(HttpError::HeadTooLarge {
                limit: self.limits.max_head,
            }));
        }
        let (Some(version), Some(status)) = (response.version, response.code) else {
            return Err(self.fail(HttpError::InvalidHead("missing version or status".into())));
        };
        // A status outside 100-999 is not HTTP (`000` from broken servers): refused with
        // a clear error rather than read as a body-less informational response.
        if !(100..1000).contains(&status) {
            return Err(self.fail(HttpError::InvalidHead(format!(
                "invalid status code {status:03}"
            ))));
        }
        if (100..200).contains(&status) && status != 101 {
            // Interim response (100 Continue, 103 Early Hints): skip it.
            return Ok((consumed, None));
        }
        let mut headers = Headers::with_capacity(
            response.headers.len(),
            response
                .headers
                .iter()
                .map(|h| h.name.len() + h.value.len())
                .sum(),
        );
        for h in response.headers.iter() {
            headers.append(h.name, h.value);
        }
        let head = ResponseHead {
            version,
            status,
            reason: response.reason.unwrap_or("").to_owned(),
            headers,
        };
        self.keep_alive = connection_persists(&head);
        let no_body = self.head_request
            || status == 204
            || status == 304
            || status < 200
            || (self.connect_request && (200..300).contains(&status));
        self.state = if no_body {
            State::NoBody
        } else if let Some(chunked) = transfer_chunked(&head.headers) {
            if !chunked {
                self.keep_alive = false;
                State::UntilClose
            } else {
                if head.headers.contains("content-length") {
                    // RFC 9112 §6.3: chunked wins; the message is suspect, so do not
                    // reuse the connection afterwards.
                    self.keep_alive = false;
                }
                State::Chunked(Chunk::Size)
            }
        } else {
            match content_length(&head.headers) {
                Ok(Some(n)) => {
                    self.expected = Some(n);
                    State::Length(n)
                }
                Ok(None) => {
                    self.keep_alive = false;
                    State::UntilClose
                }
                Err(e) => return Err(self.fail(e)),
            }
        };
        Ok((consumed, Some(Event::Head(head))))
    }

    fn parse_chunked<'a>(
        &mut self,
        chunk: Chunk,
        input: &'a [u8],
    ) -> Result<(usize, Option<Event<'a>>), HttpError> {
        match chunk {
            Chunk::Size => match httparse::parse_chunk_size(input) {
                Ok(httparse::Status::Complete((n, size))) => {
                    self.state = State::Chunked(if size == 0 {
                        Chunk::Trailer
                    } else {
                        Chunk::Data(size)
                    });
                    Ok((n, None))
                }
                Ok(httparse::Status::Partial) => {
                    if input.len() > self.limits.max_line {
                        return Err(self.fail(HttpError::LineTooLong {
                            limit: self.limits.max_line,
                        }));
                    }
                    Ok((0, None))
                }
                Err(_) => Err(self.fail(HttpError::InvalidChunkSize)),
            },
            Chunk::Data(remaining) => {
                if input.is_empty() {
                    return Ok((0, None));
                }
                let n = usize::try_from(remaining)
                    .unwrap_or(usize::MAX)
                    .min(input.len());
                let left = remaining - n as u64;
                self.state = State::Chunked(if left == 0 {
                    Chunk::Crlf
                } else {
                    Chunk::Data(left)
                });
                self.received += n as u64;
                Ok((n, Some(Event::Data(&input[..n]))))
            }
            Chunk::Crlf => match input {
                [] | [b'\r'] => Ok((0, None)),
                [b'\r', b'\n', ..] => {
                    self.state = State::Chunked(Chunk::Size);
                    Ok((2, None))
                }
                [b'\n', ..] => {
                    self.state = State::Chunked(Chunk::Size);
                    Ok((1, None))
                }
                _ => Err(self.fail(HttpError::InvalidChunkTerminator)),
            },
            Chunk::Trailer => {
                let Some(pos) = input.iter().position(|&b| b == b'\n') else {
                    if input.len() > self.limits.max_line {
                        return Err(self.fail(HttpError::LineTooLong {
                            limit: self.limits.max_line,
                        }));
                    }
                    return Ok((0, None));
                };
                let line = &input[..pos];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.is_empty() {
                    self.state = State::Done;
                    return Ok((pos + 1, Some(Event::End)));
                }
                if pos > self.limits.max_line {
                    return Err(self.fail(HttpError::LineTooLong {
                        limit: self.limits.max_line,
                    }));
                }
                Ok((pos + 1, None)) // a trailer field: ignored
            }
        }
    }
}

/// `Some(true)` if Transfer-Encoding ends with `chunked`, `Some(false)` if it is present
/// without it, `None` if absent.
fn transfer_chunked(headers: &Headers) -> Option<bool> {
    let mut last: Option<Vec<u8>> = None;
    for value in headers.get_all("transfer-encoding") {
        for coding in value.split(|&b| b == b',') {
            let coding = coding.trim_ascii();
            if !coding.is_empty() {
                last = Some(coding.to_ascii_lowercase());
            }
        }
    }
    last.map(|c| c == b"chunked")
}

/// The Content-Length: every value (repeated fields, comma lists) must agree.
fn content_length(headers: &Headers) -> Result<Option<u64>, HttpError> {
    let mut found: Option<u64> = None;
    for value in headers.get_all("content-length") {
        for part in value.split(|&b| b == b',') {
            let part = part.trim_ascii();
            if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
                return Err(HttpError::InvalidContentLength);
            }
            let n: u64 = std::str::from_utf8(part)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or(HttpError::InvalidContentLength)?;
            match found {
                Some(prev) if prev != n => return Err(HttpError::ConflictingContentLength),
                _ => found = Some(n),
            }
        }
    }
    Ok(found)
}

fn connection_persists(head: &ResponseHead) -> bool {
    let mut close = false;
    let mut keep = false;
    for value in head.headers.get_all("connection") {
        for token in value.split(|&b| b == b',') {
            let token = token.trim_ascii();
            close |= token.eq_ignore_ascii_case(b"close");
            keep |= token.eq_ignore_ascii_case(b"keep-alive");
        }
    }
    if head.version == 0 {
        keep && !close
    } else {
        !close
    }
}
