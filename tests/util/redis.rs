//! Helpers for the tests that talk to a Redis server: replies read, and the
//! scheduler's own scripts (`ENQUEUE`, `POP`, `CLOSE`) run as a worker would.

use trawl::client::redis::Value;
use trawl::crawl::record;
use trawl::crawl::request::Request;
use trawl::distributed::scrapy_redis_fingerprint;
use trawl::distributed::scripts::scripts;
use trawl::testing::RedisServer;

/// How many times `srv` has run `command` (`INFO commandstats`; a subcommand as
/// `cluster|slots`).
pub fn command_calls(srv: &RedisServer, command: &str) -> u64 {
    let stats = srv.call_text(&["INFO", "commandstats"]);
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().expect("a count"))
}

/// A redis-server of the test's own.
pub fn redis() -> RedisServer {
    RedisServer::start().expect("redis-server is needed for this test")
}

/// An integer reply.
pub fn int(v: Value) -> i64 {
    v.as_int().expect("an integer reply")
}

/// An array reply of strings.
pub fn strings(v: Value) -> Vec<Vec<u8>> {
    v.as_array()
        .expect("an array reply")
        .iter()
        .map(|x| x.as_bytes().expect("bulk").to_vec())
        .collect()
}

/// The `POP` script on queue `q` (lists per priority) as worker `me`.
pub fn pop_as_me(srv: &RedisServer, token: &str, n: &str) -> Value {
    pop_as_me_with(srv, token, n, &[])
}

/// `pop_as_me` with `POP`'s optional arguments: holds (`0` when the worker holds
/// leases), renew (`0`: the worker renewed its deadline lately).
pub fn pop_as_me_with(srv: &RedisServer, token: &str, n: &str, extra: &[&str]) -> Value {
    let source = scripts().pop.source().to_owned();
    let mut args = vec![
        "EVAL",
        &source,
        "4",
        "q",
        "q:workers",
        "q:leases:me",
        "q:meta",
        "p",
        n,
        "me",
        "60000",
        "q:leases:",
        token,
    ];
    args.extend_from_slice(extra);
    srv.call(&args).expect("pop")
}

/// The `CLOSE` script on queue `q` as worker `me` (persisting: the queue stays).
pub fn close_as_me(srv: &RedisServer) -> Value {
    srv.call(&[
        "EVAL",
        scripts().close.source(),
        "5",
        "q:workers",
        "q:leases:me",
        "q",
        "q-df",
        "q:meta",
        "me",
        "1",
        "p",
        "q:leases:",
        "0",
    ])
    .expect("close")
}

/// The entries in a priority queue's lists (counted, not read from its counter).
pub fn queue_len(srv: &RedisServer, queue: &str) -> i64 {
    strings(srv.call(&["ZRANGE", queue, "0", "-1"]).expect("zrange"))
        .iter()
        .map(|p| {
            let list = format!("{queue}:p:{}", String::from_utf8_lossy(p));
            int(srv.call(&["LLEN", &list]).expect("llen"))
        })
        .sum()
}

pub fn s(srv: &RedisServer, args: &[&str]) -> String {
    match srv.call(args).expect("call") {
        Value::Nil => String::new(),
        v => String::from_utf8_lossy(v.as_bytes().expect("a string reply")).into_owned(),
    }
}

/// Enqueues `requests` with trawl's own enqueue script, as a worker would.
pub fn enqueue(srv: &RedisServer, queue: &str, requests: &[Request]) -> Value {
    enqueue_as(srv, queue, "p", requests)
}

/// Enqueues `requests` into a queue of the scripts' `mode`.
pub fn enqueue_as(srv: &RedisServer, queue: &str, mode: &str, requests: &[Request]) -> Value {
    let script = scripts().enqueue.source().to_owned();
    let mut args: Vec<Vec<u8>> = vec![
        b"EVAL".to_vec(),
        script.into_bytes(),
        b"3".to_vec(),
        queue.as_bytes().to_vec(),
        format!("{}-df", queue).into_bytes(),
        format!("{queue}:meta").into_bytes(),
        mode.as_bytes().to_vec(),
        b"native".to_vec(),
        b"set".to_vec(),
    ];
    // One priority group per request (the worker sends one per priority).
    args.push(requests.len().to_string().into_bytes());
    for r in requests {
        args.push((-i64::from(r.priority())).to_string().into_bytes());
        args.push(b"1".to_vec());
    }
    for r in requests {
        args.push(if r.dont_filter() {
            Vec::new()
        } else {
            scrapy_redis_fingerprint(r).into_bytes()
        });
        // A list per priority holds `<score> <record>`, as the worker sends it.
        let mut entry = Vec::new();
        if mode == "p" {
            entry = format!("{} ", -i64::from(r.priority())).into_bytes();
        }
        entry.extend(record::encode(r));
        args.push(entry);
    }
    srv.call(&args).expect("enqueue script")
}

/// A Lua script counting the leases a worker's lease hash (KEYS[1]) holds: the entries
/// of each pop's field (a MessagePack array) not marked finished in `<token>:a`, and a
/// field of one lease value as one.
pub const LEASES_HELD: &str = r"
local kv = redis.call('HGETALL', KEYS[1])
local marks = {}
for i = 1, #kv, 2 do
  if string.sub(kv[i], -2) == ':a' then marks[string.sub(kv[i], 1, -3)] = kv[i + 1] end
end
local n = 0
for i = 1, #kv, 2 do
  if string.sub(kv[i], -2) ~= ':a' then
    local ok, vals = pcall(cmsgpack.unpack, kv[i + 1])
    if ok and type(vals) == 'table' then
      local done = marks[kv[i]] or ''
      for j = 1, #vals do
        if string.byte(done, j) ~= 49 then n = n + 1 end
      end
    else
      n = n + 1
    end
  end
end
return n
";
