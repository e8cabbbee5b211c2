//! The scheduler's scripts driven directly against a real Redis server: `ENQUEUE`'s
//! priority groups and the order of its answers, the lists per priority (their count,
//! leases taken back at the head, entries from before scores led them), a pop sent
//! twice and its acknowledgements, a pop that renews and reaps only when asked, and
//! keys of the wrong type repaired where a command meets them.

mod util;

use trawl::client::redis::Value;
use trawl::crawl::record;
use trawl::crawl::request::Request;
use trawl::distributed::scripts::scripts;
use util::live::get;
use util::redis::{
    close_as_me, enqueue, int, pop_as_me, pop_as_me_with, queue_len, redis, s, strings,
};

/// The lists' bookkeeping: leases go back to the head of their priority's list, the
/// count in the meta hash follows every push and pop, and a count that disagrees
/// with the index is mended before it could say "empty" wrongly.
#[test]
fn an_enqueue_stores_its_priority_groups_in_their_lists_and_answers_in_order() {
    let srv = redis();
    srv.call(&["HSET", "q:meta", "created", "1"]).expect("meta");
    let script = scripts().enqueue.source().to_owned();
    // Two groups: priority 3 (score -3) with two requests, priority 0 with three — a
    // duplicate of the first group's first and a `dont_filter` twin of it (no
    // fingerprint) among them.
    let args: Vec<&str> = vec![
        "EVAL", &script, "3", "q", "q-df", "q:meta", "p", "native", "set", "2", "-3", "2", "0",
        "3", "fp-a", "A", "fp-b", "B", "fp-a", "A-again", "", "A-twin", "fp-c", "C",
    ];
    let r = srv.call(&args).expect("enqueue");
    let got: Vec<i64> = r
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_int().expect("int"))
        .collect();
    assert_eq!(got, vec![0, 1, 1, 0, 1, 1]);
    let list = |key: &str| strings(srv.call(&["LRANGE", key, "0", "-1"]).expect("lrange"));
    assert_eq!(list("q:p:-3"), vec![b"A".to_vec(), b"B".to_vec()]);
    assert_eq!(list("q:p:0"), vec![b"A-twin".to_vec(), b"C".to_vec()]);
    assert_eq!(queue_len(&srv, "q"), 4);
    assert_eq!(s(&srv, &["HGET", "q:meta", "queued"]), "4");
    assert_eq!(int(srv.call(&["SCARD", "q-df"]).expect("scard")), 3);
}

#[test]
fn a_bare_entry_from_before_scores_led_them_is_popped_and_goes_back_at_priority_0() {
    let srv = redis();
    srv.call(&["HSET", "q:meta", "created", "1", "queued", "1"])
        .expect("meta");
    let bare = record::encode(&get("http://h.test/old").with_priority(5));
    srv.call(&[b"RPUSH".as_ref(), b"q:p:-5", &bare])
        .expect("rpush");
    srv.call(&["ZADD", "q", "-5", "-5"]).expect("zadd");
    let got = pop_as_me(&srv, "1", "4");
    assert_eq!(
        got.as_array().expect("array")[4].as_bytes(),
        Some(&bare[..])
    );
    let close = || close_as_me(&srv);
    assert_eq!(close().as_array().expect("array")[0].as_int(), Some(1));
    // Its score is not in the entry: it goes back whole to priority 0's list.
    let list = strings(srv.call(&["LRANGE", "q:p:0", "0", "-1"]).expect("lrange"));
    assert_eq!(list, vec![bare.clone()]);
    // A lease of a single list's kind (`L <entry>`) goes back without its mark.
    srv.call(&[
        b"HSET".as_ref(),
        b"q:leases:me",
        b"9:1",
        &[b"L ".as_ref(), &bare].concat(),
    ])
    .expect("hset");
    assert_eq!(close().as_array().expect("array")[0].as_int(), Some(1));
    let list = strings(srv.call(&["LRANGE", "q:p:0", "0", "-1"]).expect("lrange"));
    assert_eq!(list, vec![bare.clone(), bare]);
}

#[test]
fn the_scripts_repair_a_wrongly_typed_key_where_a_command_meets_it() {
    let srv = redis();
    let field = |v: &Value, i: usize| v.as_array().expect("array")[i].as_int().expect("int");
    let dumps = |key: &str| int(srv.call(&["LLEN", &format!("{key}:bad")]).expect("llen"));
    let req = |i: u32| get(&format!("http://h.test/{i}"));
    srv.call(&["HSET", "q:meta", "created", "1"]).expect("meta");
    // ENQUEUE: the dupefilter, a priority's list and the priority index, each met by
    // its command, moved aside and made anew; the request stored.
    for (i, key) in ["q-df", "q:p:0", "q"].into_iter().enumerate() {
        srv.call(&["SET", key, "oops"]).expect("set");
        let r = enqueue(&srv, "q", &[req(i as u32)]);
        assert_eq!((field(&r, 0), field(&r, 1)), (1, 1), "{key}: {r:?}");
        assert_eq!(dumps(key), 1, "{key}");
    }
    assert_eq!(s(&srv, &["TYPE", "q-df"]), "set");
    assert_eq!(int(srv.call(&["SCARD", "q-df"]).expect("scard")), 3);
    assert_eq!(int(srv.call(&["LLEN", "q:p:0"]).expect("llen")), 2);
    assert_eq!(queue_len(&srv, "q"), 2);
    // POP: a priority's list of another type is moved aside and leaves the index; the
    // index of another type too (a heartbeat checks it as well).
    srv.call(&["DEL", "q:p:0"]).expect("del");
    srv.call(&["SET", "q:p:0", "oops"]).expect("set");
    let r = pop_as_me(&srv, "1", "4");
    assert_eq!(field(&r, 3), 1, "{r:?}");
    assert_eq!(dumps("q:p:0"), 2);
    assert_eq!(int(srv.call(&["ZCARD", "q"]).expect("zcard")), 0);
    for (token, n) in [("2", "4"), ("3", "0")] {
        srv.call(&["DEL", "q"]).expect("del");
        srv.call(&["SET", "q", "oops"]).expect("set");
        let r = pop_as_me(&srv, token, n);
        assert_eq!(field(&r, 3), 1, "pop of {n}: {r:?}");
        assert_eq!(s(&srv, &["TYPE", "q"]), "none");
    }
    assert_eq!(dumps("q"), 3);
    // A meta hash of another type: the crawl is not there.
    srv.call(&["DEL", "q:meta"]).expect("del");
    srv.call(&["SET", "q:meta", "oops"]).expect("set");
    assert_eq!(field(&pop_as_me(&srv, "4", "4"), 0), -1);
}

#[test]
fn priority_lists_keep_their_count_and_take_leases_back_at_the_head() {
    let srv = redis();
    let reqs: Vec<Request> = [(1, 3), (2, 3), (3, 0), (4, 0)]
        .iter()
        .map(|&(i, p)| get(&format!("http://h.test/{i}")).with_priority(p))
        .collect();
    enqueue(&srv, "q", &reqs);
    srv.call(&["HSET", "q:meta", "created", "1"]).expect("meta");
    let pop = |token: &str, n: &str| pop_as_me(&srv, token, n);
    let qlen = |v: &Value| v.as_array().expect("array")[1].as_int().expect("qlen");
    let urls = |v: &Value| -> Vec<String> {
        v.as_array().expect("array")[4..]
            .iter()
            .map(|e| {
                let b = e.as_bytes().expect("an entry");
                // A list per priority needs no sequence prefix: its entry is the
                // score, a space and the record.
                let sp = b.iter().position(|&c| c == b' ').expect("a score");
                let req = record::decode(&b[sp + 1..]).expect("a record");
                assert_eq!(
                    String::from_utf8_lossy(&b[..sp]),
                    (-i64::from(req.priority())).to_string()
                );
                req.url().to_string()
            })
            .collect()
    };
    let first = pop("1", "3");
    assert_eq!(
        urls(&first),
        ["http://h.test/1", "http://h.test/2", "http://h.test/3"]
    );
    assert_eq!(qlen(&first), 1);
    assert_eq!(s(&srv, &["HGET", "q:meta", "queued"]), "1");
    // The priority-3 list was drained: its score left the index.
    assert_eq!(
        strings(srv.call(&["ZRANGE", "q", "0", "-1"]).expect("zrange")),
        vec![b"0".to_vec()]
    );
    // This worker stops: its three leases go back, ahead of what waited behind them.
    let closed = close_as_me(&srv);
    assert_eq!(closed.as_array().expect("array")[0].as_int(), Some(3));
    assert_eq!(queue_len(&srv, "q"), 4);
    assert_eq!(s(&srv, &["HGET", "q:meta", "queued"]), "4");
    let mut again = urls(&pop("2", "2"));
    again.sort();
    assert_eq!(again, ["http://h.test/1", "http://h.test/2"]);
    let next = urls(&pop("3", "1"));
    assert_eq!(next.len(), 1);
    assert_ne!(next[0], "http://h.test/4", "a taken-back lease goes first");
    // A count of 0 while the lists hold entries is recounted...
    srv.call(&["HSET", "q:meta", "queued", "0"]).expect("hset");
    assert_eq!(qlen(&pop("4", "0")), 1);
    assert_eq!(s(&srv, &["HGET", "q:meta", "queued"]), "1");
    // ...and one too high reads 0 once the index is empty.
    srv.call(&["HSET", "q:meta", "queued", "9"]).expect("hset");
    let last = pop("5", "5");
    assert_eq!(urls(&last), ["http://h.test/4"]);
    assert_eq!(qlen(&last), 0);
}

/// A pop whose reply was lost (the connection died after the server ran it) is sent
/// again with the same token: it must return the same entries, not lease more. A
/// pop's leases are one field; the places acknowledged are marked beside it, and a
/// stopping worker puts back only the others.
#[test]
fn a_pop_sent_twice_leases_once_and_its_acknowledged_places_stay_done() {
    let srv = redis();
    let reqs: Vec<Request> = (1..=6)
        .map(|i| get(&format!("http://h.test/{i}")))
        .collect();
    enqueue(&srv, "q", &reqs);
    srv.call(&["HSET", "q:meta", "created", "1"]).expect("meta");
    let pop = |token: &str, n: &str| pop_as_me(&srv, token, n);
    let entries = |v: &Value| v.as_array().expect("array")[4..].to_vec();
    let keys = || {
        let mut f = strings(srv.call(&["HKEYS", "q:leases:me"]).expect("hkeys"));
        f.sort();
        f
    };
    let first = pop("7", "2");
    let again = pop("7", "2");
    assert_eq!(entries(&first).len(), 2);
    assert_eq!(entries(&again), entries(&first));
    assert_eq!(queue_len(&srv, "q"), 4);
    // A new token pops on.
    let next = pop("8", "2");
    assert_eq!(entries(&next).len(), 2);
    assert_ne!(entries(&next), entries(&first));
    assert_eq!(queue_len(&srv, "q"), 2);
    // One field per pop: its token.
    assert_eq!(keys(), [b"7".to_vec(), b"8".to_vec()]);
    // A pop sent again after its leases were taken back pops anew.
    srv.call(&["HDEL", "q:leases:me", "8"]).expect("hdel");
    let anew = pop("8", "2");
    assert_eq!(entries(&anew).len(), 2);
    assert_ne!(entries(&anew), entries(&next));
    assert_eq!(queue_len(&srv, "q"), 0);
    // After a reconnection the worker says which pops it holds and the places it
    // acknowledged: the others go (counted by entry), the marks are written again.
    srv.call(&["HSET", "q:leases:me", "stray", "0 x"])
        .expect("hset");
    let gone = srv
        .call(&[
            "EVAL",
            scripts().reconcile.source(),
            "1",
            "q:leases:me",
            "7",
            "10",
        ])
        .expect("reconcile");
    assert_eq!(
        gone.as_int(),
        Some(3),
        "pop 8's two entries and the stray one"
    );
    assert_eq!(keys(), [b"7".to_vec(), b"7:a".to_vec()]);
    assert_eq!(s(&srv, &["HGET", "q:leases:me", "7:a"]), "10");
    // Stopping, the worker puts back the place it did not acknowledge, and only it.
    let closed = close_as_me(&srv);
    assert_eq!(closed.as_array().expect("array")[0].as_int(), Some(1));
    assert_eq!(queue_len(&srv, "q"), 1);
    assert_eq!(entries(&pop("9", "5")), entries(&first)[1..]);
}

/// A pop renews this worker's deadline and takes back dead workers' leases only when
/// the worker asks (`renew` 1: a sixth of the lease has passed); a heartbeat always.
#[test]
fn a_pop_renews_and_reaps_when_asked_and_a_heartbeat_always() {
    let srv = redis();
    let reqs: Vec<Request> = (1..=4)
        .map(|i| get(&format!("http://h.test/{i}")))
        .collect();
    enqueue(&srv, "q", &reqs);
    srv.call(&["HSET", "q:meta", "created", "1"]).expect("meta");
    srv.call(&["ZADD", "q:workers", "5", "me", "1", "dead"])
        .expect("workers");
    srv.call(&["HSET", "q:leases:dead", "9:1", "0 gone"])
        .expect("lease");
    let pop = |token: &str, n: &str, renew: &str| -> Vec<Value> {
        pop_as_me_with(&srv, token, n, &["0", renew])
            .as_array()
            .expect("array")
            .to_vec()
    };
    let deadline = || s(&srv, &["ZSCORE", "q:workers", "me"]);
    let first = pop("1", "1", "0");
    assert_eq!(first[0].as_int(), Some(0), "nothing re-queued");
    assert_eq!(first.len(), 5, "one entry popped");
    assert_eq!(deadline(), "5", "not renewed");
    assert_eq!(
        int(srv.call(&["EXISTS", "q:leases:dead"]).expect("exists")),
        1
    );
    let second = pop("2", "1", "1");
    assert_eq!(
        second[0].as_int(),
        Some(1),
        "the dead worker's lease re-queued"
    );
    assert_ne!(deadline(), "5", "renewed");
    assert_eq!(
        int(srv.call(&["EXISTS", "q:leases:dead"]).expect("exists")),
        0
    );
    srv.call(&["ZADD", "q:workers", "5", "me"]).expect("zadd");
    let beat = pop("3", "0", "0");
    assert_eq!(beat.len(), 4, "a heartbeat pops nothing");
    assert_ne!(deadline(), "5", "a heartbeat renews");
}
