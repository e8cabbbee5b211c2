//! The HTTP/1.1 response parser: a table of sample responses parsed whole, byte by byte
//! and split at every position; malformed inputs and limits.

use trawl::proto::http1::{Event, HttpError, Limits, ResponseHead, ResponseParser};

#[derive(Debug, PartialEq)]
struct Parsed {
    head: ResponseHead,
    body: Vec<u8>,
    keep_alive: bool,
    rest: Vec<u8>,
}

/// Parses `pieces` in order as a connection would deliver them; `eof` closes after.
fn parse_pieces(pieces: &[&[u8]], head_request: bool, eof: bool) -> Result<Parsed, HttpError> {
    let mut p = ResponseParser::new(head_request);
    let mut buf = Vec::new();
    let mut head = None;
    let mut body = Vec::new();
    let mut ended = false;
    let mut iter = pieces.iter();
    loop {
        let next = iter.next();
        if let Some(piece) = next {
            buf.extend_from_slice(piece);
        }
        while !ended {
            let (n, ev) = p.parse(&buf)?;
            let progressed = n > 0 || ev.is_some();
            match ev {
                Some(Event::Head(h)) => head = Some(h),
                Some(Event::Data(d)) => body.extend_from_slice(d),
                Some(Event::End) => ended = true,
                None => {}
            }
            buf.drain(..n);
            if !progressed {
                break;
            }
        }
        if next.is_none() {
            break;
        }
    }
    if !ended && eof {
        assert_eq!(p.finish(true)?, Event::End);
        ended = true;
    }
    assert!(ended, "response did not end");
    Ok(Parsed {
        head: head.expect("no head"),
        body,
        keep_alive: p.keep_alive(),
        rest: buf,
    })
}

struct Case {
    name: &'static str,
    input: &'static [u8],
    head_request: bool,
    eof: bool,
    status: u16,
    body: &'static [u8],
    keep_alive: bool,
    rest: &'static [u8],
}

const CASES: &[Case] = &[
    Case {
        name: "content-length",
        input: b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 11\r\n\r\nhello world",
        head_request: false,
        eof: false,
        status: 200,
        body: b"hello world",
        keep_alive: true,
        rest: b"",
    },
    Case {
        name: "pipelined bytes after the body stay in the buffer",
        input: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 204 No Content\r\n\r\n",
        head_request: false,
        eof: false,
        status: 200,
        body: b"ok",
        keep_alive: true,
        rest: b"HTTP/1.1 204 No Content\r\n\r\n",
    },
    Case {
        name: "chunked with extensions and trailers",
        input: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=val\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\nY: 2\r\n\r\n",
        head_request: false,
        eof: false,
        status: 200,
        body: b"hello 0123456789",
        keep_alive: true,
        rest: b"",
    },
    Case {
        name: "chunked, uppercase hex and empty trailer",
        input: b"HTTP/1.1 201 Created\r\ntransfer-encoding: gzip, Chunked\r\n\r\nF\r\n123456789abcdef\r\n0\r\n\r\n",
        head_request: false,
        eof: false,
        status: 201,
        body: b"123456789abcdef",
        keep_alive: true,
        rest: b"",
    },
    Case {
        name: "read until close",
        input: b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\nstreamed until the end",
        head_request: false,
        eof: true,
        status: 200,
        body: b"streamed until the end",
        keep_alive: false,
        rest: b"",
    },
    Case {
        name: "HTTP/1.0 defaults to close",
        input: b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc",
        head_request: false,
        eof: false,
        status: 200,
        body: b"abc",
        keep_alive: false,
        rest: b"",
    },
    Case {
        name: "HTTP/1.0 keep-alive",
        input: b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 3\r\n\r\nabc",
        head_request: false,
        eof: false,
        status: 200,
        body: b"abc",
        keep_alive: true,
        rest: b"",
    },
    Case {
        name: "connection close",
        input: b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx",
        head_request: false,
        eof: false,
        status: 200,
        body: b"x",
        keep_alive: false,
        rest: b"",
    },
    Case {
        name: "HEAD response announces a length but has no body",
        input: b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
        head_request: true,
        eof: false,
        status: 200,
        body: b"",
        keep_alive: true,
        rest: b"",
    },
    Case {
        name: "204 has no body",
        input: b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
        head_request: false,
        eof: false,
        status: 204,
        body: b"",
        keep_alive: true,
        rest: b"",
    },
    Case {
        name: "304 has no body",
        input: b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n",
        head_request: false,
        eof: false,
        status: 304,
        body: b"",
        keep_alive: true,
        rest: b"",
    },
    Case {
        name: "interim 100 and 103 are skipped",
        input: b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
        head_request: false,
        eof: false,
        status: 200,
        body: b"hi",
        keep_alive: true,
        rest: b"",
    },
    Case {
        name: "identical duplicate content-length",
        input: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
        head_request: false,
        eof: false,
        status: 200,
        body: b"ok",
        keep_alive: true,
        rest: b"",
    },
    Case {
        name: "content-length with chunked: chunked wins, no reuse",
        input: b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        head_request: false,
        eof: false,
        status: 200,
        body: b"ok",
        keep_alive: false,
        rest: b"",
    },
    Case {
        name: "zero length",
        input: b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
        head_request: false,
        eof: false,
        status: 404,
        body: b"",
        keep_alive: true,
        rest: b"",
    },
    Case {
        name: "lenient: bare LF after chunk data, odd reason phrase",
        input: b"HTTP/1.1 500 Internal  Server Error\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n",
        head_request: false,
        eof: false,
        status: 500,
        body: b"abc",
        keep_alive: true,
        rest: b"",
    },
];

fn check(case: &Case, parsed: &Parsed, how: &str) {
    assert_eq!(parsed.head.status, case.status, "{}: {how}", case.name);
    assert_eq!(parsed.body, case.body, "{}: {how}", case.name);
    assert_eq!(parsed.keep_alive, case.keep_alive, "{}: {how}", case.name);
    assert_eq!(parsed.rest, case.rest, "{}: {how}", case.name);
}

#[test]
fn whole_input() {
    for case in CASES {
        let parsed = parse_pieces(&[case.input], case.head_request, case.eof).unwrap();
        check(case, &parsed, "whole");
    }
}

#[test]
fn byte_by_byte() {
    for case in CASES {
        let pieces: Vec<&[u8]> = case.input.chunks(1).collect();
        let parsed = parse_pieces(&pieces, case.head_request, case.eof).unwrap();
        check(case, &parsed, "byte by byte");
    }
}

#[test]
fn every_split_point() {
    for case in CASES {
        let whole = parse_pieces(&[case.input], case.head_request, case.eof).unwrap();
        for i in 0..=case.input.len() {
            let (a, b) = case.input.split_at(i);
            let parsed = parse_pieces(&[a, b], case.head_request, case.eof).unwrap();
            assert_eq!(parsed, whole, "{} split at {i}", case.name);
            for j in i..=case.input.len() {
                let (b1, b2) = b.split_at(j - i);
                let parsed = parse_pieces(&[a, b1, b2], case.head_request, case.eof).unwrap();
                assert_eq!(parsed, whole, "{} split at {i},{j}", case.name);
            }
        }
    }
}

#[test]
fn headers_are_case_insensitive_and_multi_valued() {
    let input = b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nX-Y:  padded  \r\nContent-Length: 0\r\n\r\n";
    let parsed = parse_pieces(&[input], false, false).unwrap();
    let h = &parsed.head.headers;
    assert_eq!(
        h.get_all("SET-COOKIE").collect::<Vec<_>>(),
        [&b"a=1"[..], b"b=2"]
    );
    assert_eq!(h.get("x-y"), Some(&b"padded"[..]));
    assert_eq!(parsed.head.reason, "OK");
    assert_eq!(parsed.head.protocol(), "HTTP/1.1");
}

fn parse_err(input: &[u8]) -> HttpError {
    let mut p = ResponseParser::new(false);
    let mut buf = input.to_vec();
    loop {
        match p.parse(&buf) {
            Ok((0, None)) => return p.finish(!input.is_empty()).unwrap_err(),
            Ok((_, Some(Event::End))) => {
                panic!("parsed fine: {:?}", String::from_utf8_lossy(input))
            }
            Ok((n, _)) => {
                buf.drain(..n);
            }
            Err(e) => {
                // sticky
                assert_eq!(p.parse(b"more").unwrap_err(), e);
                return e;
            }
        }
    }
}

#[test]
fn malformed_inputs() {
    assert!(matches!(
        parse_err(b"HTTP/1.1 abc OK\r\n\r\n"),
        HttpError::InvalidHead(_)
    ));
    assert!(matches!(
        parse_err(b"HTTX/1.1 200 OK\r\n\r\n"),
        HttpError::InvalidHead(_)
    ));
    assert!(matches!(
        parse_err(b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n"),
        HttpError::InvalidHead(_)
    ));
    assert_eq!(
        parse_err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
        HttpError::InvalidChunkSize
    );
    assert_eq!(
        parse_err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n"),
        HttpError::InvalidChunkSize,
        "chunk size overflowing 64 bits"
    );
    assert_eq!(
        parse_err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX"),
        HttpError::InvalidChunkTerminator
    );
    assert_eq!(
        parse_err(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"),
        HttpError::ConflictingContentLength
    );
    assert_eq!(
        parse_err(b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nok"),
        HttpError::ConflictingContentLength
    );
    assert_eq!(
        parse_err(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"),
        HttpError::InvalidContentLength
    );
    assert_eq!(
        parse_err(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
        HttpError::InvalidContentLength,
        "overflowing Content-Length"
    );
}

#[test]
fn truncated_responses() {
    assert_eq!(parse_err(b""), HttpError::EmptyResponse);
    assert_eq!(
        parse_err(b"HTTP/1.1 200 OK\r\nContent-Len"),
        HttpError::Incomplete {
            received: 0,
            expected: None
        }
    );
    assert_eq!(
        parse_err(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
        HttpError::Incomplete {
            received: 3,
            expected: Some(10)
        }
    );
    assert!(matches!(
        parse_err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"),
        HttpError::Incomplete { received: 2, .. }
    ));
}

#[test]
fn limits() {
    let mut big = b"HTTP/1.1 200 OK\r\n".to_vec();
    while big.len() < 70 * 1024 {
        big.extend_from_slice(
            b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
        );
    }
    let mut p = ResponseParser::with_limits(false, Limits::default());
    assert_eq!(
        p.parse(&big).unwrap_err(),
        HttpError::HeadTooLarge { limit: 64 * 1024 }
    );

    let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..101 {
        many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    assert_eq!(parse_err(&many), HttpError::TooManyHeaders { limit: 100 });

    let mut long = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;".to_vec();
    long.extend(std::iter::repeat_n(b'x', 10_000));
    assert_eq!(parse_err(&long), HttpError::LineTooLong { limit: 8192 });
}

#[test]
fn a_status_outside_100_to_999_is_an_error_not_an_empty_response() {
    // `000` used to be read as an informational status and its body dropped.
    for line in [&b"HTTP/1.1 000 OK\r\n"[..], b"HTTP/1.1 099 X\r\n"] {
        let mut wire = line.to_vec();
        wire.extend_from_slice(b"Content-Length: 5\r\n\r\nhello");
        let e = parse_pieces(&[&wire], false, true).expect_err("refused");
        assert!(e.to_string().contains("invalid status code"), "{e}");
    }
    let ok = parse_pieces(
        &[b"HTTP/1.1 599 Custom\r\nContent-Length: 2\r\n\r\nok"],
        false,
        true,
    );
    assert!(ok.is_ok());
}
