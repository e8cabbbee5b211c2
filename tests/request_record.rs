//! The request record: any request → record → request is identical (a property test
//! over random requests, non-UTF-8 header bytes and exact floats included); every
//! truncation and random corruption of a record is an error, never a panic or a
//! misread; decoded requests keep the compact static meta keys.

use serde_json::{Value, json};
use trawl::crawl::Request;
use trawl::crawl::record::{RECORD_VERSION, RecordError, decode, encode};

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

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn bytes(&mut self, max: u64) -> Vec<u8> {
        (0..self.below(max)).map(|_| self.next() as u8).collect()
    }

    fn text(&mut self, max: u64) -> String {
        const PIECES: &[&str] = &[
            "a", "Z", "0", "-", "_", " ", "é", "€", "東", "😀", "\"", "\\", "\n",
        ];
        (0..self.below(max))
            .map(|_| PIECES[self.below(PIECES.len() as u64) as usize])
            .collect()
    }

    fn json(&mut self, depth: u32) -> Value {
        match self.below(if depth > 2 { 6 } else { 8 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance(50)),
            2 => json!(self.next() as i64),
            3 => json!(self.next()),
            4 => {
                // Any finite float, exactly.
                let f = f64::from_bits(self.next());
                if f.is_finite() {
                    json!(f)
                } else {
                    json!(1.5e-300)
                }
            }
            5 => Value::String(self.text(12)),
            6 => Value::Array((0..self.below(4)).map(|_| self.json(depth + 1)).collect()),
            _ => Value::Object(
                (0..self.below(4))
                    .map(|_| (self.text(6), self.json(depth + 1)))
                    .collect(),
            ),
        }
    }
}

fn random_request(rng: &mut Rng) -> Request {
    let url = format!(
        "https://h{}.example/p/{}?q={}#{}",
        rng.below(100),
        rng.below(1_000_000),
        rng.below(1000),
        rng.below(10)
    );
    let mut r = Request::get(&url).expect("url");
    if rng.chance(30) {
        r = r.with_method(
            ["POST", "HEAD", "PUT", "DELETE", "PATCH", "PROPFIND"][rng.below(6) as usize],
        );
    }
    if rng.chance(50) {
        r = r.with_callback(&format!("parse_{}", rng.text(5)));
    }
    if rng.chance(20) {
        r = r.with_errback("on_error");
    }
    if rng.chance(50) {
        let p = match rng.below(3) {
            0 => i32::MIN,
            1 => i32::MAX,
            _ => rng.next() as i32,
        };
        r = r.with_priority(p);
    }
    r = r.with_dont_filter(rng.chance(20));
    for _ in 0..rng.below(4) {
        // Header names and values are bytes: not necessarily UTF-8.
        let mut name = rng.bytes(10);
        name.retain(|b| !b.is_ascii_whitespace());
        name.insert(0, b'X');
        let value = rng.bytes(20);
        r.headers_mut().append(&name, &value);
    }
    if rng.chance(30) {
        r = r.with_body(rng.bytes(64));
    }
    for _ in 0..rng.below(4) {
        if rng.chance(50) {
            r.meta_mut().insert_static("depth", rng.below(10));
        } else {
            let k = rng.text(8);
            let v = rng.json(0);
            r.meta_mut().insert(&k, v);
        }
    }
    for _ in 0..rng.below(3) {
        let k = rng.text(6);
        let v = rng.json(1);
        r = r.with_cb_kwarg(&k, v);
    }
    for _ in 0..rng.below(3) {
        let f = rng.text(6);
        r.add_flag(&f);
    }
    for _ in 0..rng.below(3) {
        let (n, v) = (rng.text(5), rng.text(8));
        r = r.with_cookie(&n, &v);
    }
    if rng.chance(20) {
        r = r.with_encoding(["latin-1", "cp1251", "utf-8"][rng.below(3) as usize]);
    }
    r
}

#[test]
fn any_request_round_trips_exactly() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for i in 0..3_000 {
        let r = random_request(&mut rng);
        let rec = encode(&r);
        assert_eq!(rec[0], RECORD_VERSION);
        let back = decode(&rec).unwrap_or_else(|e| panic!("case {i}: {e}"));
        assert_eq!(back, r, "case {i}");
        // Byte-identical on a second trip too.
        assert_eq!(encode(&back), rec, "case {i}");
        for (k, v) in r.meta().iter() {
            assert_eq!(back.meta().get(k), Some(v), "case {i}: meta {k:?}");
        }
        assert_eq!(back.headers(), r.headers(), "case {i}");
    }
}

#[test]
fn truncations_and_corruptions_are_errors() {
    let mut rng = Rng(42);
    let mut errors = 0;
    for _ in 0..300 {
        let r = random_request(&mut rng);
        let rec = encode(&r);
        for cut in 0..rec.len() {
            assert!(decode(&rec[..cut]).is_err(), "a {cut}-byte prefix decoded");
        }
        for _ in 0..20 {
            let mut bad = rec.clone();
            let i = rng.below(bad.len() as u64) as usize;
            bad[i] ^= 1 << rng.below(8);
            // Either an error or some request, never a panic.
            if decode(&bad).is_err() {
                errors += 1;
            }
        }
    }
    assert!(errors > 1_000, "corruptions mostly detected ({errors})");
    let garbage: Vec<u8> = (0..50_000).map(|_| rng.next() as u8).collect();
    for w in garbage.chunks(37) {
        let _ = decode(w);
    }
}

#[test]
fn other_versions_and_pickle_are_refused_by_name() {
    let rec = encode(&Request::get("http://a.test/").expect("url"));
    let mut newer = rec.clone();
    newer[0] = RECORD_VERSION + 1;
    assert_eq!(
        decode(&newer),
        Err(RecordError::UnknownVersion(RECORD_VERSION + 1))
    );
    assert!(
        decode(&newer)
            .unwrap_err()
            .to_string()
            .contains("this build reads version 1")
    );
    // A pickle protocol-4 frame starts with 0x80 0x04.
    assert_eq!(
        decode(b"\x80\x04\x95\x20\x00\x00\x00\x00\x00\x00\x00"),
        Err(RecordError::UnknownVersion(0x80))
    );
}

#[test]
fn decoded_requests_keep_static_meta_keys() {
    let r = Request::get("http://a.test/")
        .expect("url")
        .with_meta("depth", 3)
        .with_meta("download_slot", "a.test");
    let back = decode(&encode(&r)).expect("decodes");
    assert_eq!(back, r);
    assert!(back.meta().key_is_static("depth"));
    assert!(back.meta().key_is_static("download_slot"));
    let json: Request =
        serde_json::from_str(&serde_json::to_string(&r).expect("json")).expect("json");
    assert!(json.meta().key_is_static("depth"), "JSON too");
}
