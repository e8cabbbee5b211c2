//! A bounded fuzz campaign in the normal test suite: at least 100,000 random and mutated
//! inputs through the same entry points as the cargo-fuzz targets in `tests/fuzz/`,
//! asserting that nothing panics or stalls.

use trawl::proto::fuzzing;

const SEEDS: &[&[u8]] = &[
    b"\x05HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"\x03HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
    b"\x01HTTP/1.0 200 OK\r\n\r\nuntil close",
    b"\x09HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    b"\x3fHTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
    b"\x02HTTP/1.1 302 Found\r\nLocation: /x\r\nContent-Length: 0\r\nSet-Cookie: a=1\r\n\r\n",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=rng.below(4) {
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                v.remove(i);
            }
            3 => {
                let i = rng.below(v.len() + 1);
                let piece: &[u8] = [
                    &b"\r\n"[..],
                    b"0\r\n",
                    b"FFFFFFFF",
                    b": ",
                    b"chunked",
                    b"Content-Length: 3\r\n",
                ][rng.below(6)];
                v.splice(i..i, piece.iter().copied());
            }
            4 if v.len() > 2 => {
                let a = rng.below(v.len());
                let b = rng.below(v.len());
                let (a, b) = (a.min(b), a.max(b));
                let dup = v[a..b].to_vec();
                v.splice(b..b, dup);
            }
            5 => v.truncate(rng.below(v.len() + 1)),
            _ => {
                let i = rng.below(v.len() + 1);
                v.insert(i, b"0123456789abcdefABCDEF\r\n;= "[rng.below(27)]);
            }
        }
    }
    v
}

#[test]
fn response_parser_survives_100k_inputs() {
    let mut rng = Rng(0x5EED_F00D);
    let mut parsed_ok = 0;
    for i in 0..100_000 {
        let input = if i % 10 == 0 {
            (0..rng.below(200)).map(|_| rng.next() as u8).collect()
        } else {
            let seed = SEEDS[rng.below(SEEDS.len())];
            mutate(&mut rng, seed)
        };
        if fuzzing::parse_response(&input).is_some() {
            parsed_ok += 1;
        }
        fuzzing::parse_chunked(&input[input.len().min(1)..]);
    }
    // The mutations must leave a fair share of valid responses, or the campaign tests
    // nothing but the first error path.
    assert!(parsed_ok > 10_000, "only {parsed_ok} inputs parsed");
}

/// `data` decoded as one gzip body, fed in the 97-byte pieces `fuzzing::decode_content`
/// uses; `None` when the decoder refuses it.
fn gunzip(data: &[u8]) -> Option<Vec<u8>> {
    use trawl::proto::decode::{ContentDecoder, Encoding};
    let mut decoder = ContentDecoder::new(&[Encoding::Gzip], 1 << 20);
    let mut out = Vec::new();
    for piece in data.chunks(97) {
        decoder.feed(piece, &mut out).ok()?;
    }
    decoder.finish(&mut out).ok()?;
    Some(out)
}

#[test]
fn content_decoders_survive_random_and_mutated_streams() {
    use std::io::Write;
    let text = b"The quick brown fox jumps over the lazy dog. ".repeat(40);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&text).unwrap();
    let gz = gz.finish().unwrap();
    assert_eq!(gunzip(&gz).as_deref(), Some(text.as_slice()), "the seed");
    let mut rng = Rng(7);
    // Every input either decodes to exactly the text or is refused: gzip's CRC-32 and
    // length trailer catch a mutated stream, and an empty body decodes to nothing.
    let (mut decoded, mut empty, mut refused) = (0, 0, 0);
    for i in 0..3_000 {
        let input = if i % 3 == 0 {
            (0..rng.below(300)).map(|_| rng.next() as u8).collect()
        } else {
            mutate(&mut rng, &gz)
        };
        fuzzing::decode_content(&input);
        match gunzip(&input) {
            Some(out) if input.is_empty() => {
                assert!(
                    out.is_empty(),
                    "an empty body decoded to {} bytes",
                    out.len()
                );
                empty += 1;
            }
            Some(out) => {
                assert!(
                    out == text,
                    "input {i} decoded to other bytes: {:?}",
                    String::from_utf8_lossy(&out)
                );
                decoded += 1;
            }
            None => refused += 1,
        }
    }
    // A few mutations leave a valid stream (12 of the 2,000 with this seed), most do
    // not: a decoder that refuses everything fails here, and one that skips the checks
    // fails above.
    assert!(decoded >= 10, "only {decoded} inputs decoded");
    assert!(refused > 2_000, "only {refused} inputs refused");
    assert_eq!(decoded + empty + refused, 3_000);
}

#[test]
fn resp_parser_survives_random_and_mutated_replies() {
    const REPLIES: &[&[u8]] = &[
        b"\x03+OK\r\n:1\r\n$5\r\nhello\r\n$-1\r\n",
        b"\x01*3\r\n$3\r\nfoo\r\n*2\r\n:1\r\n$0\r\n\r\n-ERR x\r\n*-1\r\n",
        b"\x07%1\r\n+k\r\n~2\r\n,1.5\r\n#t\r\n|1\r\n+a\r\n+b\r\n>1\r\n_\r\n=6\r\ntxt:ab\r\n",
        b"\x1f*2\r\n*2\r\n*2\r\n:1\r\n:2\r\n$3\r\nabc\r\n!3\r\nbad\r\n(12345\r\n",
        // CLUSTER SLOTS and the redirections the cluster client reads.
        b"\x05*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n-MOVED 3999 127.0.0.1:7001\r\n-ASK 1 h:2\r\n",
    ];
    let mut rng = Rng(0xBEEF);
    let mut parsed = 0;
    for i in 0..50_000 {
        let input = if i % 10 == 0 {
            (0..rng.below(200)).map(|_| rng.next() as u8).collect()
        } else {
            let seed = REPLIES[rng.below(REPLIES.len())];
            mutate(&mut rng, seed)
        };
        if fuzzing::parse_resp(&input).is_some_and(|n| n > 0) {
            parsed += 1;
        }
    }
    assert!(parsed > 2_500, "only {parsed} inputs parsed");
}

#[test]
fn ftp_reply_parser_survives_random_and_mutated_replies() {
    const REPLIES: &[&[u8]] = &[
        b"\x03220-Welcome\r\n 220 not yet\r\n220 Ready\r\n331 Password?\r\n",
        b"\x01227 Entering Passive Mode (127,0,0,1,195,80).\r\n150 Ok\r\n226 Done\r\n",
        b"\x1f250 \"/x\" is the current directory.\n550 No such file\n257 \"/x\" created\r\n",
    ];
    let mut rng = Rng(0xF7B);
    let mut parsed = 0;
    for i in 0..30_000 {
        let input = if i % 10 == 0 {
            (0..rng.below(200)).map(|_| rng.next() as u8).collect()
        } else {
            let seed = REPLIES[rng.below(REPLIES.len())];
            mutate(&mut rng, seed)
        };
        if fuzzing::parse_ftp(&input).is_some_and(|n| n > 0) {
            parsed += 1;
        }
    }
    assert!(parsed > 2_000, "only {parsed} inputs parsed");
}

#[test]
fn robots_parser_survives_random_and_mutated_files() {
    const FILES: &[&[u8]] = &[
        b"User-agent: *\nDisallow: /private\nAllow: /private/ok$\nCrawl-delay: 2\n",
        b"\xef\xbb\xbfuser agent foo\ndisallow /a*b*c$\nRequest-rate: 1/5s 0900-1700\nSitemap https://x/s.xml\n",
        b"User-agent: FooBot\nInvalid: x\nUser-agent: *\nDisallow: /%7e~%e3%83%84\nAllow: /index.html\n",
        b"USER-AGENT: a*b\nDISALLOW: ****/*.js$\n# comment\r\nallow:/x?y=%3c<\n",
    ];
    let mut rng = Rng(0x0B0E);
    let mut with_groups = 0;
    for i in 0..20_000 {
        let input = if i % 10 == 0 {
            (0..rng.below(300)).map(|_| rng.next() as u8).collect()
        } else {
            let seed = FILES[rng.below(FILES.len())];
            mutate(&mut rng, seed)
        };
        let robots = trawl::crawl::robots::RobotsTxt::parse(&input);
        let mut disallowed = false;
        for path in ["/private/x", "/a1bc", "/~x", "/x?y=<", "/"] {
            let url = url::Url::parse("http://example.com/")
                .and_then(|u| u.join(path))
                .expect("a test URL");
            disallowed |= !robots.allowed(&url, "FooBot/1.0");
        }
        let tail = String::from_utf8_lossy(&input[input.len().saturating_sub(12)..]).into_owned();
        if let Ok(url) = url::Url::parse("http://example.com/").and_then(|u| u.join(&tail)) {
            let _ = robots.allowed(&url, &tail);
        }
        let _ = robots.crawl_delay("foobot");
        let _ = robots.request_rate(&tail);
        if disallowed {
            with_groups += 1;
        }
    }
    assert!(
        with_groups > 1_000,
        "only {with_groups} inputs disallowed anything"
    );
}

#[test]
fn from_curl_survives_mutated_command_lines() {
    // Every recorded command line as a seed (tests/data/requests/curl.json).
    let data: serde_json::Value =
        serde_json::from_str(include_str!("data/requests/curl.json")).expect("curl.json");
    let seeds: Vec<&str> = data["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["curl"].as_str())
        .collect();
    let mut rng = Rng(0xC0_12);
    let (mut built, mut refused) = (0, 0);
    for i in 0..20_000 {
        let input = if i % 10 == 0 {
            (0..rng.below(120)).map(|_| rng.next() as u8).collect()
        } else {
            let seed = seeds[rng.below(seeds.len())];
            mutate(&mut rng, seed.as_bytes())
        };
        let text = String::from_utf8_lossy(&input);
        match trawl::crawl::Request::from_curl_with(&text, i % 3 != 0) {
            Ok(_) => built += 1,
            Err(_) => refused += 1,
        }
    }
    assert!(
        built > 2_000 && refused > 2_000,
        "{built} built, {refused} refused"
    );
}

#[test]
fn csv_reader_survives_mutated_feeds() {
    // Every recorded feed as a seed (tests/data/feeds_spiders/csviter.json).
    let data: serde_json::Value =
        serde_json::from_str(include_str!("data/feeds_spiders/csviter.json"))
            .expect("csviter.json");
    let seeds: Vec<&str> = data["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["csv"].as_str())
        .collect();
    let mut rng = Rng(0xC5_71);
    let (mut rows, mut errors) = (0usize, 0usize);
    for i in 0..20_000 {
        let input = if i % 10 == 0 {
            (0..rng.below(120)).map(|_| rng.next() as u8).collect()
        } else {
            let seed = seeds[rng.below(seeds.len())];
            mutate(&mut rng, seed.as_bytes())
        };
        let text = String::from_utf8_lossy(&input);
        let quote = if i % 7 == 0 { Some('\'') } else { None };
        match trawl::crawl::pycsv::csviter(&text, None, None, quote, |_| rows += 1, |_| {}) {
            Ok(()) => {}
            Err(_) => errors += 1,
        }
    }
    assert!(rows > 5_000 && errors > 100, "{rows} rows, {errors} errors");
}

#[test]
fn xml_parser_survives_mutated_feeds() {
    const FEEDS: &[&str] = &[
        include_str!("data/select/xml_pages/atom.xml"),
        include_str!("data/select/xml_pages/rss.xml"),
        include_str!("data/select/xml_pages/products.xml"),
    ];
    let mut rng = Rng(0x0_C4);
    let (mut parsed, mut refused) = (0usize, 0usize);
    for i in 0..3_000 {
        let input = if i % 10 == 0 {
            (0..rng.below(200)).map(|_| rng.next() as u8).collect()
        } else {
            let seed = FEEDS[rng.below(FEEDS.len())];
            mutate(&mut rng, seed.as_bytes())
        };
        let text = String::from_utf8_lossy(&input);
        for strip in [false, true] {
            match trawl::html::Document::parse_xml(&text, strip) {
                Ok(doc) => {
                    parsed += 1;
                    // Select and print what was parsed.
                    let sel = trawl::crawl::Selection::of_document(&doc);
                    let _ = sel.xpath("//*[local-name()='title']/text()").getall();
                    let _ = sel.xpath("//*").getall();
                }
                Err(_) => refused += 1,
            }
        }
    }
    assert!(
        parsed > 1_000 && refused > 10,
        "{parsed} parsed, {refused} refused"
    );
}

#[test]
fn socks5_handshake_survives_random_and_mutated_answers() {
    // Answers a proxy gives: no auth then success with an IPv4, IPv6 or named bound
    // address; password auth then success; refusals.
    const ANSWERS: &[&[u8]] = &[
        b"\x00\x05\x00\x05\x00\x00\x01\x7f\x00\x00\x01\x1f\x90",
        b"\x05\x05\x02\x01\x00\x05\x00\x00\x04\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01\x00\x50",
        b"\x0b\x05\x02\x01\x00\x05\x00\x00\x03\x09localhost\x01\xbb",
        b"\x02\x05\x00\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00",
        b"\x01\x05\x02\x01\x01",
        b"\x00\x05\xff",
    ];
    let mut rng = Rng(0x50C5);
    let (mut opened, mut failed) = (0, 0);
    for i in 0..30_000 {
        let input = if i % 10 == 0 {
            (0..rng.below(40)).map(|_| rng.next() as u8).collect()
        } else {
            let seed = ANSWERS[rng.below(ANSWERS.len())];
            mutate(&mut rng, seed)
        };
        match fuzzing::socks5_handshake(&input) {
            Some(true) => opened += 1,
            Some(false) => {}
            None => failed += 1,
        }
    }
    assert!(
        opened > 1_000 && failed > 1_000,
        "{opened} opened, {failed} failed"
    );
}
