//! The Redis client on the reactor against a real `redis-server` (started on a free
//! port in a temp dir): pipelining order, transactions, scripts and the `EVAL`
//! fallback, AUTH and SELECT, error replies, timeouts, reconnection across a server
//! restart, a server killed mid-reply, the bounded buffer.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::rc::Rc;
use std::thread;

use trawl::client::redis::{
    BufferFull, RedisClient, RedisConfig, RedisConnectionError, ReplyError, Script, Value,
};
use trawl::defer::{Deferred, Failure};
use trawl::reactor::Reactor;
use trawl::testing::{RedisServer, RedisServerOptions, run_within};

fn server() -> RedisServer {
    RedisServer::start().expect("redis-server is needed for this test")
}

struct Rig {
    reactor: Reactor,
    client: RedisClient,
}

impl Rig {
    fn new(url: &str) -> Self {
        Self::with(RedisConfig::from_url(url).expect("url"))
    }

    fn with(config: RedisConfig) -> Self {
        let reactor = Reactor::new().expect("reactor");
        let client = RedisClient::new(&reactor.handle(), config).expect("client");
        Self { reactor, client }
    }

    fn run<T: 'static>(&mut self, d: Deferred<T>) -> Result<T, Failure> {
        run_within(&mut self.reactor, &d, 60.0, "a command's reply");
        d.take_result().expect("fired")
    }

    fn cmd(&mut self, args: &[&str]) -> Result<Value, Failure> {
        let d = self.client.command(args);
        self.run(d)
    }

    fn run_for(&mut self, secs: f64) {
        let d = Deferred::new();
        let d2 = d.clone();
        self.reactor
            .call_later(secs, move || d2.callback(()).expect("once"));
        self.reactor.run_until(&d).expect("runs");
    }
}

fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

#[test]
fn pipelined_commands_answer_in_order_in_one_round_trip() {
    let srv = server();
    let mut rig = Rig::new(&srv.url(0));
    assert_eq!(
        rig.cmd(&["PING"]).expect("ping"),
        Value::Simple("PONG".into())
    );
    let before = rig.client.counters();
    let mut ds = Vec::new();
    for i in 0..1000 {
        let k = format!("k{}", i % 10);
        ds.push(rig.client.command(&["INCR", k.as_str()]));
    }
    let last = ds.last().cloned().expect("some");
    rig.reactor.run_until(&last).expect("runs");
    for (i, d) in ds.into_iter().enumerate() {
        let v = d.take_result().expect("fired").expect("ok");
        assert_eq!(v, Value::Integer(i as i64 / 10 + 1), "command {i}");
    }
    let after = rig.client.counters();
    assert_eq!(after.commands - before.commands, 1000);
    assert_eq!(
        after.round_trips - before.round_trips,
        1,
        "one write for one turn"
    );
    assert_eq!(srv.call(&["GET", "k3"]).expect("get"), bulk("100"));
}

#[test]
fn transactions_scripts_and_the_eval_fallback() {
    let srv = server();
    let mut rig = Rig::new(&srv.url(0));
    let d = rig.client.transaction(&[
        vec!["SET", "a", "1"],
        vec!["INCRBY", "a", "41"],
        vec!["LPUSH", "a", "x"],
    ]);
    let v = rig.run(d).expect("exec");
    let items = v.as_array().expect("array").to_vec();
    assert_eq!(items[0], Value::Simple("OK".into()));
    assert_eq!(items[1], Value::Integer(42));
    assert!(
        items[2].is_error(),
        "WRONGTYPE inside EXEC is a value: {:?}",
        items[2]
    );

    let script = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    rig.client.load_script(&script);
    let d = rig.client.eval(&script, &["n"], &["5"]);
    assert_eq!(rig.run(d).expect("evalsha"), Value::Integer(5));
    let n = srv
        .call(&["SCRIPT", "EXISTS", script.sha()])
        .expect("exists");
    assert_eq!(n, Value::Array(vec![Value::Integer(1)]));
    // Someone flushes the script cache: EVALSHA gets NOSCRIPT, EVAL runs it.
    srv.call(&["SCRIPT", "FLUSH"]).expect("flush");
    let d = rig.client.eval(&script, &["n"], &["5"]);
    assert_eq!(rig.run(d).expect("eval fallback"), Value::Integer(10));
    // A script error is a reply error.
    let bad = Script::new("return redis.call('NOPE')");
    let d = rig.client.eval(&bad, &[] as &[&str], &[] as &[&str]);
    let f = rig.run(d).expect_err("fails");
    assert!(f.downcast_ref::<ReplyError>().is_some(), "{f}");
}

#[test]
fn error_replies_fail_only_their_command() {
    let srv = server();
    let mut rig = Rig::new(&srv.url(0));
    let a = rig.client.command(&["LPUSH", "l", "x"]);
    let b = rig.client.command(&["INCR", "l"]);
    let c = rig.client.command(&["LLEN", "l"]);
    rig.reactor.run_until(&c).expect("runs");
    assert_eq!(
        a.take_result().expect("fired").expect("ok"),
        Value::Integer(1)
    );
    let f = b.take_result().expect("fired").expect_err("wrongtype");
    assert_eq!(
        f.downcast_ref::<ReplyError>().expect("reply error").kind(),
        "WRONGTYPE"
    );
    assert_eq!(
        c.take_result().expect("fired").expect("ok"),
        Value::Integer(1)
    );
}

#[test]
fn auth_and_select() {
    let srv = RedisServer::start_with(RedisServerOptions {
        password: Some("s3cret".into()),
        ..Default::default()
    })
    .expect("redis-server is needed for this test");
    let mut rig = Rig::new(&srv.url(3));
    rig.cmd(&["SET", "where", "db3"]).expect("set");
    // The key is in database 3, not 0.
    assert_eq!(
        srv.call(&["EXISTS", "where"]).expect("exists"),
        Value::Integer(0)
    );
    let moved = srv
        .call(&[
            "EVAL",
            "redis.call('SELECT', 3) return redis.call('GET', 'where')",
            "0",
        ])
        .expect("eval");
    assert_eq!(moved, bulk("db3"));
    // A wrong password fails the waiting commands with the server's answer.
    let mut bad = Rig::new(&format!("redis://:wrong@127.0.0.1:{}/0", srv.port()));
    let f = bad.cmd(&["GET", "where"]).expect_err("refused");
    let e = f.downcast_ref::<ReplyError>().expect("reply error");
    assert!(e.kind() == "WRONGPASS" || e.kind() == "ERR", "{e}");
    assert!(bad.client.last_error().expect("recorded").contains("AUTH"));
}

#[test]
fn commands_wait_through_a_restart_and_run_once_it_is_back() {
    let mut srv = RedisServer::start_with(RedisServerOptions {
        appendonly: true,
        ..Default::default()
    })
    .expect("redis-server is needed for this test");
    let mut config = RedisConfig::from_url(&srv.url(0)).expect("url");
    config.backoff_initial = 0.02;
    config.backoff_max = 0.2;
    let mut rig = Rig::with(config);
    let reconnects = Rc::new(std::cell::Cell::new(0));
    let r = reconnects.clone();
    rig.client.on_connect(move || r.set(r.get() + 1));
    rig.cmd(&["SET", "before", "1"]).expect("set");
    srv.kill();
    // Issued while the server is down: buffered.
    let ds: Vec<_> = (0..50)
        .map(|i| rig.client.command(&["RPUSH", "during", &i.to_string()]))
        .collect();
    rig.run_for(0.3);
    assert!(!rig.client.is_connected());
    assert!(rig.client.pending() >= 50);
    srv.restart().expect("restarts");
    let last = ds.last().cloned().expect("some");
    rig.reactor.run_until(&last).expect("runs");
    for d in ds {
        d.take_result().expect("fired").expect("ok");
    }
    assert_eq!(
        srv.call(&["LLEN", "during"]).expect("llen"),
        Value::Integer(50)
    );
    assert_eq!(srv.call(&["GET", "before"]).expect("get"), bulk("1"));
    assert_eq!(
        reconnects.get(),
        2,
        "the first connection and the reconnection"
    );
    let c = rig.client.counters();
    assert!(c.connect_failures >= 1, "{c:?}");
    assert_eq!(c.disconnects, 1, "{c:?}");
}

/// A fake server: the first connection gets half a reply and is closed; the second
/// gets whole replies.
#[test]
fn a_server_killed_mid_reply_is_retried_on_a_new_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = thread::spawn(move || {
        let mut buf = [0u8; 1024];
        let (mut first, _) = listener.accept().expect("accept");
        let _ = first.read(&mut buf).expect("read");
        first.write_all(b"$10\r\nhel").expect("write");
        drop(first);
        let (mut second, _) = listener.accept().expect("accept");
        let n = second.read(&mut buf).expect("read");
        assert!(
            buf[..n].starts_with(b"*2\r\n$3\r\nGET"),
            "the command is sent again"
        );
        second.write_all(b"$10\r\nhelloworld\r\n").expect("write");
        let _ = second.read(&mut buf);
    });
    let mut config = RedisConfig::from_url(&format!("redis://127.0.0.1:{port}")).expect("url");
    config.backoff_initial = 0.01;
    let mut rig = Rig::with(config);
    let v = rig.cmd(&["GET", "k"]).expect("the retry answers");
    assert_eq!(v, bulk("helloworld"));
    let c = rig.client.counters();
    assert_eq!((c.retried, c.disconnects, c.connects), (1, 1, 2), "{c:?}");
    rig.client.close();
    drop(rig);
    server.join().expect("server thread");
}

#[test]
fn a_silent_server_times_out_and_buffers_are_bounded() {
    // Accepts, reads, never answers.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let silent = thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut buf = [0u8; 1024];
        while s.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    let mut config = RedisConfig::from_url(&format!("redis://127.0.0.1:{port}")).expect("url");
    config.command_timeout = 0.2;
    config.backoff_initial = 5.0;
    let mut rig = Rig::with(config);
    let d = rig.client.command_once(&["GET", "k"]);
    let f = rig.run(d).expect_err("times out");
    let e = f
        .downcast_ref::<RedisConnectionError>()
        .expect("connection error");
    assert!(
        e.reason.contains("no reply") || e.reason.contains("abort"),
        "{e}"
    );
    assert!(
        rig.client
            .last_error()
            .expect("recorded")
            .contains("no reply")
    );
    silent.join().expect("thread");

    // Nothing listens: commands wait up to the limit, then fail at once.
    let free = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = free.local_addr().expect("addr").port();
    drop(free);
    let mut config = RedisConfig::from_url(&format!("redis://127.0.0.1:{port}")).expect("url");
    config.max_buffered = 10;
    let mut rig = Rig::with(config);
    let waiting: Vec<_> = (0..10).map(|_| rig.client.command(&["PING"])).collect();
    let over = rig.client.command(&["PING"]);
    let f = rig.run(over).expect_err("over the limit");
    assert_eq!(
        f.downcast_ref::<BufferFull>(),
        Some(&BufferFull { limit: 10 })
    );
    assert!(waiting.iter().all(|d| !d.has_result()));
    rig.client.close();
    for d in waiting {
        assert!(d.take_result().expect("failed on close").is_err());
    }
}

#[test]
fn a_connect_that_never_completes_times_out_and_is_retried() {
    let reactor = Reactor::new().expect("reactor");
    let attempts = Rc::new(std::cell::Cell::new(0));
    let a = attempts.clone();
    let config = RedisConfig {
        connect_timeout: 0.05,
        backoff_initial: 0.01,
        backoff_max: 0.02,
        ..Default::default()
    };
    let client = RedisClient::with_connect(
        &reactor.handle(),
        config,
        Rc::new(move |_| {
            a.set(a.get() + 1);
            Deferred::new()
        }),
    );
    let d = client.command(&["PING"]);
    let mut rig = Rig { reactor, client };
    // Until three connects have timed out, however long the host takes (a minute only
    // guards against a hang).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while rig.client.counters().connect_failures < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} connect failures",
            rig.client.counters().connect_failures
        );
        rig.run_for(0.01);
    }
    let client = rig.client;
    assert!(!d.has_result(), "still waiting for a connection");
    assert!(attempts.get() >= 3, "attempts: {}", attempts.get());
    assert!(client.last_error().expect("recorded").contains("timed out"));
    assert!(client.counters().connect_failures >= 3);
}

#[test]
fn rediss_goes_through_the_connector_with_tls() {
    use trawl::net::{Connector, ConnectorConfig, tls};
    let srv = RedisServer::start_with(RedisServerOptions {
        tls: true,
        ..Default::default()
    })
    .expect("redis-server (with TLS) is needed for this test");
    let reactor = Reactor::new().expect("reactor");
    let mut cc = ConnectorConfig::new().expect("config");
    cc.tls_verify =
        tls::client_config_with_pem_roots(trawl::testing::fixture::TEST_CA_PEM).expect("roots");
    let connector = Connector::new(&reactor.handle(), cc);
    let config = RedisConfig::from_url(&srv.url(2)).expect("url");
    assert!(config.tls.is_some_and(|t| t.verify));
    let client = RedisClient::with_connector(&reactor.handle(), config, &connector);
    let mut rig = Rig { reactor, client };
    rig.cmd(&["SET", "k", "over tls"]).expect("set");
    assert_eq!(rig.cmd(&["GET", "k"]).expect("get"), bulk("over tls"));
    // Without the test CA the certificate is refused: the command waits, the client
    // records why.
    let reactor = Reactor::new().expect("reactor");
    let mut config = RedisConfig::from_url(&srv.url(0)).expect("url");
    config.backoff_initial = 5.0;
    let client = RedisClient::new(&reactor.handle(), config).expect("client");
    let mut rig = Rig { reactor, client };
    let d = rig.client.command(&["PING"]);
    // Until the failed handshake is recorded, however long the host takes (a minute
    // only guards against a hang).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while rig.client.last_error().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "no connection error recorded"
        );
        rig.run_for(0.01);
    }
    assert!(!d.has_result(), "the command waits for a connection");
    // The server's certificate, signed by the test CA, against the default roots:
    // an unknown issuer.
    let why = rig.client.last_error().expect("recorded");
    let first = why.lines().next().unwrap_or_default();
    assert!(first.starts_with("trawl::net::tcp::TlsError: "), "{why}");
    assert!(
        first.ends_with("invalid peer certificate: UnknownIssuer"),
        "{why}"
    );
}
