//! The HTTP/1.1 exchange on one persistent connection, as a [`Protocol`] over any
//! [`Transport`]: a TCP or TLS socket in a crawl, a `StringTransport` in a test.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use super::exchange::{Cancel, Ctx, PoolKey, proxy_authorization};
use super::types::{HttpResponse, InvalidRequest, Observed, ResponseTooLarge};
use crate::defer::Failure;
use crate::net::{ConnectionLost, Protocol, Transport};
use crate::proto::Headers;
use crate::proto::decode::{ContentDecoder, DecodeError, Encoding};
use crate::proto::http1::{Event, HttpError, Limits, ResponseHead, ResponseParser, encode_request};
use crate::reactor::DelayedCall;
use url::Position;

/// What a connection asks of the client that pools it.
pub(super) trait Pool {
    /// The reactor's clock, in seconds.
    fn seconds(&self) -> f64;
    /// The response parser's limits.
    fn limits(&self) -> Limits;
    /// Takes the connection back for its next request.
    fn put_idle(&self, conn: Rc<Connection>);
    /// Forgets a connection that closed while idle.
    fn forget_idle(&self, conn: &Rc<Connection>);
    /// Sends a request again on a fresh connection (a reused one died first).
    fn retry(&self, ctx: Rc<Ctx>);
    /// A connection's TLS handshake finished (resumed or full).
    fn tls_handshake(&self, resumed: bool);
}

impl Cancel for Connection {
    fn cancel(&self) {
        self.detach_and_abort();
    }
}

/// A persistent HTTP/1.1 connection (one request at a time).
pub(super) struct Connection {
    pub(super) transport: Rc<dyn Transport>,
    pub(super) key: PoolKey,
    client: Weak<dyn Pool>,
    st: RefCell<ConnState>,
    pub(super) idle_timer: RefCell<Option<DelayedCall>>,
    /// Its place in the pool's idle order while idle (0: not idle).
    pub(super) idle_seq: Cell<u64>,
    /// The TLS handshake was counted.
    tls_counted: Cell<bool>,
    me: Weak<Connection>,
}

struct ConnState {
    ctx: Option<Rc<Ctx>>,
    parser: ResponseParser,
    buf: Vec<u8>,
    head: Option<ResponseHead>,
    body: Vec<u8>,
    decoder: Option<ContentDecoder>,
    decoded_from: Option<String>,
    any_bytes: bool,
    reused: bool,
    sent_at: f64,
    latency: f64,
    warned: bool,
    closed: bool,
    /// Something for the request's observer, told once the borrow ends.
    notice: Option<Notice>,
}

/// What `data_received` decided, acted on after its borrow ends.
enum Outcome {
    Complete(bool),
    Fail(Failure),
}

/// A part of the response for the request's [`DownloadObserver`](super::types::DownloadObserver).
enum Notice {
    Head(u16, Headers, Option<u64>),
    Data(Vec<u8>),
}

impl Connection {
    pub(super) fn new(
        client: Weak<dyn Pool>,
        transport: Rc<dyn Transport>,
        key: PoolKey,
    ) -> Rc<Self> {
        let conn = Rc::new_cyclic(|me| Self {
            transport: transport.clone(),
            key,
            client,
            st: RefCell::new(ConnState {
                ctx: None,
                parser: ResponseParser::new(false),
                buf: Vec::new(),
                head: None,
                body: Vec::new(),
                decoder: None,
                decoded_from: None,
                any_bytes: false,
                reused: false,
                sent_at: 0.0,
                latency: 0.0,
                warned: false,
                closed: false,
                notice: None,
            }),
            idle_timer: RefCell::new(None),
            idle_seq: Cell::new(0),
            tls_counted: Cell::new(false),
            me: me.clone(),
        });
        transport.attach(conn.clone());
        conn
    }

    pub(super) fn cancel_idle_timer(&self) {
        if let Some(t) = self.idle_timer.borrow_mut().take() {
            let _ = t.cancel();
        }
    }

    fn now(&self) -> f64 {
        self.client.upgrade().map_or(0.0, |c| c.seconds())
    }

    pub(super) fn send(self: &Rc<Self>, ctx: Rc<Ctx>, reused: bool) {
        let req = &ctx.req;
        // An http target through an http(s) proxy: the request goes to the proxy, in
        // absolute form. SOCKS proxies and CONNECT tunnels carry origin-form requests.
        let through_proxy = !ctx.key.https
            && req
                .proxy
                .as_ref()
                .and_then(|p| crate::net::ProxyKind::from_scheme(p.scheme()))
                .is_some_and(crate::net::ProxyKind::forwards_http);
        // The request's own headers, unless they need changing (a copy then).
        let mut changed: Option<Headers> = None;
        let target: Cow<'_, str> = if through_proxy {
            let mut u = req.url.clone();
            u.set_fragment(None);
            if let Some(auth) = req.proxy.as_ref().and_then(proxy_authorization)
                && !req.headers.contains("proxy-authorization")
            {
                let mut h = req.headers.clone();
                h.append("Proxy-Authorization", auth);
                changed = Some(h);
            }
            Cow::Owned(u.to_string())
        } else {
            // Proxy credentials never go to the origin server.
            if req.headers.contains("proxy-authorization") {
                let mut h = req.headers.clone();
                h.remove("proxy-authorization");
                changed = Some(h);
            }
            Cow::Borrowed(origin_target(&req.url))
        };
        if let Some(bf) = &req.body_file {
            // The head announces the file's length; the body follows from the file.
            let h = changed.get_or_insert_with(|| req.headers.clone());
            h.remove("content-length");
            h.append("Content-Length", bf.len.to_string());
            h.remove("connection");
            h.append("Connection", "close");
        }
        let headers = changed.as_ref().unwrap_or(&req.headers);
        let host = host_header(&req.url);
        let mut bytes = Vec::new();
        let body: &[u8] = if req.body_file.is_some() {
            &[]
        } else {
            &req.body
        };
        if let Err(e) = encode_request(&req.method, &target, host, headers, body, &mut bytes) {
            ctx.fail(Failure::new(InvalidRequest(e.to_string())));
            if let Some(client) = self.client.upgrade() {
                client.put_idle(self.clone());
            }
            return;
        }
        let head_request = req.method == "HEAD";
        let limits = self
            .client
            .upgrade()
            .map(|c| c.limits())
            .unwrap_or_default();
        {
            let mut st = self.st.borrow_mut();
            st.ctx = Some(ctx.clone());
            st.parser = ResponseParser::with_limits(head_request, limits);
            st.buf.clear();
            st.head = None;
            st.body = Vec::new();
            st.decoder = None;
            st.decoded_from = None;
            st.any_bytes = false;
            st.reused = reused;
            st.warned = false;
            st.sent_at = self.now();
        }
        *ctx.conn.borrow_mut() = Some(self.clone());
        self.transport.write(&bytes);
        if let Some(bf) = &req.body_file {
            self.stream_body(bf, &ctx);
        }
    }

    /// Sends a file range as the body, one chunk each time the transport's buffer
    /// has drained.
    fn stream_body(&self, bf: &super::types::BodyFile, ctx: &Rc<Ctx>) {
        use std::io::{Read, Seek, SeekFrom};
        let opened = std::fs::File::open(&bf.path).and_then(|mut f| {
            f.seek(SeekFrom::Start(bf.offset))?;
            Ok(f)
        });
        let file = match opened {
            Ok(f) => f,
            Err(e) => {
                ctx.fail(Failure::new(InvalidRequest(format!(
                    "body file {}: {e}",
                    bf.path.display()
                ))));
                self.transport.abort_connection();
                return;
            }
        };
        let source = RefCell::new((file.take(bf.len), vec![0u8; 64 * 1024]));
        let transport = Rc::downgrade(&self.transport);
        let ctx = Rc::downgrade(ctx);
        self.transport.register_producer(Rc::new(move || {
            let Some(t) = transport.upgrade() else {
                return;
            };
            let mut src = source.borrow_mut();
            let (reader, buf) = &mut *src;
            match reader.read(buf) {
                Ok(0) => t.unregister_producer(),
                Ok(n) => {
                    let chunk = buf[..n].to_vec();
                    drop(src);
                    t.write(&chunk);
                }
                Err(e) => {
                    drop(src);
                    t.unregister_producer();
                    if let Some(c) = ctx.upgrade() {
                        c.fail(Failure::new(InvalidRequest(format!("body file: {e}"))));
                    }
                    t.abort_connection();
                }
            }
        }));
    }

    /// Drops the request and closes the connection (timeout, cancel).
    pub(super) fn detach_and_abort(&self) {
        {
            let mut st = self.st.borrow_mut();
            st.ctx = None;
            st.closed = true;
        }
        self.transport.abort_connection();
    }

    pub(super) fn close(&self) {
        self.st.borrow_mut().closed = true;
        self.cancel_idle_timer();
        self.transport.lose_connection();
    }

    /// Parses what is buffered plus `data` until the response ends, fails, runs out of
    /// bytes, or (with an observer) has something to tell it. `None` when idle.
    fn parse_some(&self, data: &[u8]) -> Option<(Rc<Ctx>, Option<Outcome>, Option<Notice>)> {
        let now = self.now();
        let mut guard = self.st.borrow_mut();
        let st = &mut *guard;
        let Some(ctx) = st.ctx.clone() else {
            if data.is_empty() {
                return None;
            }
            // Bytes while idle: the server is confused; do not reuse.
            st.closed = true;
            drop(guard);
            self.transport.lose_connection();
            return None;
        };
        st.any_bytes |= !data.is_empty();
        // Parse straight from `data` when nothing is buffered (no copy), otherwise
        // from the buffer with `data` appended.
        let mut buffered = std::mem::take(&mut st.buf);
        let from_buffer = !buffered.is_empty();
        if from_buffer {
            buffered.extend_from_slice(data);
        }
        let input: &[u8] = if from_buffer { &buffered } else { data };
        let mut pos = 0;
        let mut outcome = None;
        while outcome.is_none() && st.notice.is_none() {
            match st.parser.parse(&input[pos..]) {
                Ok((n, event)) => {
                    let progressed = n > 0 || event.is_some();
                    if let Some(ev) = event {
                        outcome = Self::on_event(st, &ctx, ev, now);
                    }
                    pos += n;
                    if !progressed {
                        break;
                    }
                }
                Err(e) => outcome = Some(Outcome::Fail(Failure::new(e))),
            }
        }
        let consumed = pos.min(input.len());
        if from_buffer {
            buffered.drain(..consumed);
        } else {
            buffered.clear();
            buffered.extend_from_slice(&data[consumed..]);
        }
        st.buf = buffered;
        let notice = st.notice.take();
        Some((ctx, outcome, notice))
    }

    /// Handles one parser event; returns an outcome when the response is finished.
    fn on_event(st: &mut ConnState, ctx: &Ctx, event: Event<'_>, now: f64) -> Option<Outcome> {
        match event {
            Event::Head(head) => {
                st.latency = now - st.sent_at;
                let req = &ctx.req;
                if let Some(expected) = head.content_length() {
                    if req.maxsize > 0 && expected > req.maxsize {
                        return Some(Outcome::Fail(Failure::new(ResponseTooLarge {
                            url: ctx.url(),
                            size: expected,
                            limit: req.maxsize,
                        })));
                    }
                    if req.warnsize > 0 && expected > req.warnsize && !st.warned {
                        st.warned = true;
                        log::warn!(
                            "Expected response size ({expected}) larger than download warn size ({}) in request {}.",
                            req.warnsize,
                            ctx.url()
                        );
                    }
                }
                if req.decode_content
                    && let Some(value) = head.headers.get("content-encoding")
                    && crate::proto::decode::count_codings(value)
                        > crate::proto::decode::MAX_CODINGS
                {
                    return Some(Outcome::Fail(Failure::new(DecodeError::TooManyCodings {
                        count: crate::proto::decode::count_codings(value),
                    })));
                }
                if req.decode_content
                    && let Some(value) = head.headers.get("content-encoding")
                    && let Ok(codings) = Encoding::parse_list(value)
                    && !codings.is_empty()
                {
                    let limit = if req.maxsize > 0 {
                        req.maxsize
                    } else {
                        u64::MAX
                    };
                    st.decoder = Some(ContentDecoder::new(&codings, limit));
                    st.decoded_from = Some(String::from_utf8_lossy(value).into_owned());
                }
                if req.observer.is_some() {
                    st.notice = Some(Notice::Head(
                        head.status,
                        head.headers.clone(),
                        head.content_length(),
                    ));
                }
                st.head = Some(head);
                None
            }
            Event::Data(data) => {
                let req = &ctx.req;
                let wire = st.parser.body_received();
                if req.maxsize > 0 && wire > req.maxsize {
                    return Some(Outcome::Fail(Failure::new(ResponseTooLarge {
                        url: ctx.url(),
                        size: wire,
                        limit: req.maxsize,
                    })));
                }
                match st.decoder.as_mut() {
                    Some(d) => {
                        if let Err(e) = d.feed(data, &mut st.body) {
                            return Some(Outcome::Fail(decode_failure(e, ctx)));
                        }
                    }
                    None => {
                        if st.body.capacity() == 0 {
                            st.body = crate::util::take_buffer();
                        }
                        st.body.extend_from_slice(data);
                    }
                }
                if req.observer.is_some() && !data.is_empty() {
                    st.notice = Some(Notice::Data(data.to_vec()));
                }
                let size = (st.body.len() as u64).max(wire);
                if req.warnsize > 0 && size > req.warnsize && !st.warned {
                    st.warned = true;
                    log::warn!(
                        "Received ({size}) bytes larger than download warn size ({}) in request {}.",
                        req.warnsize,
                        ctx.url()
                    );
                }
                None
            }
            Event::End => Some(Outcome::Complete(st.parser.keep_alive())),
        }
    }

    fn complete(self: &Rc<Self>, ctx: Rc<Ctx>, keep_alive: bool, flags: Vec<&'static str>) {
        let (response, reusable) = {
            let mut st = self.st.borrow_mut();
            let Some(mut head) = st.head.take() else {
                drop(st);
                ctx.fail(Failure::new(HttpError::EmptyResponse));
                return;
            };
            let mut body = std::mem::take(&mut st.body);
            let stopped = flags.contains(&"download_stopped");
            if let Some(mut d) = st.decoder.take()
                && let Err(e) = d.finish(&mut body)
                && !stopped
            {
                drop(st);
                self.detach_and_abort();
                ctx.fail(decode_failure(e, &ctx));
                return;
            }
            let decoded_from = st.decoded_from.take();
            if decoded_from.is_some() {
                head.headers.remove("content-encoding");
                head.headers.remove("content-length");
            }
            st.ctx = None;
            st.notice = None;
            let reusable = keep_alive && st.buf.is_empty() && !st.closed && !stopped;
            let response = HttpResponse {
                url: ctx.req.url.clone(),
                status: head.status,
                reason: head.reason,
                headers: head.headers,
                body,
                ip: self.transport.peer(),
                protocol: if head.version == 0 {
                    "HTTP/1.0"
                } else {
                    "HTTP/1.1"
                },
                latency: st.latency,
                decoded_from,
                wire_bytes: st.parser.body_received(),
                reused_connection: st.reused,
                flags,
            };
            (response, reusable)
        };
        if reusable {
            if let Some(client) = self.client.upgrade() {
                client.put_idle(self.clone());
            }
        } else {
            self.close();
        }
        ctx.succeed(response);
    }
}

fn decode_failure(e: DecodeError, ctx: &Ctx) -> Failure {
    match e {
        DecodeError::TooLarge { limit } => Failure::new(ResponseTooLarge {
            url: ctx.url(),
            size: limit.saturating_add(1),
            limit,
        }),
        other => Failure::new(other),
    }
}

impl Protocol for Connection {
    fn connection_made(&self, _transport: Rc<dyn Transport>) {}

    fn data_received(&self, data: &[u8]) {
        // Application data means the handshake is over: counted once, no borrow held.
        if !self.tls_counted.get()
            && let Some(resumed) = self.transport.tls_resumed()
        {
            self.tls_counted.set(true);
            if let Some(pool) = self.client.upgrade() {
                pool.tls_handshake(resumed);
            }
        }
        let mut data = data;
        loop {
            let Some((ctx, outcome, notice)) = self.parse_some(data) else {
                return;
            };
            data = &[];
            let Some(me) = self.me.upgrade() else { return };
            match outcome {
                None => {}
                Some(Outcome::Complete(keep_alive)) => {
                    me.complete(ctx, keep_alive, Vec::new());
                    return;
                }
                Some(Outcome::Fail(f)) => {
                    self.detach_and_abort();
                    ctx.fail(f);
                    return;
                }
            }
            // The observer runs with no borrow held; parsing resumes from the buffer.
            let Some(notice) = notice else { return };
            let Some(observer) = ctx.req.observer.clone() else {
                return;
            };
            let verdict = match &notice {
                Notice::Head(status, headers, expected) => {
                    observer.0.headers_received(*status, headers, *expected)
                }
                Notice::Data(bytes) => observer.0.bytes_received(bytes),
            };
            let still_ours = self
                .st
                .borrow()
                .ctx
                .as_ref()
                .is_some_and(|c| Rc::ptr_eq(c, &ctx));
            if !still_ours {
                return; // the observer cancelled or failed the download
            }
            if verdict == Observed::Stop {
                self.st.borrow_mut().closed = true;
                me.complete(ctx, false, vec!["download_stopped"]);
                self.transport.lose_connection();
                return;
            }
        }
    }

    fn connection_lost(&self, reason: Failure) {
        let Some(me) = self.me.upgrade() else { return };
        let (ctx, fin, any_bytes, reused, has_head) = {
            let mut st = self.st.borrow_mut();
            st.closed = true;
            let any = st.any_bytes;
            let fin = st.parser.finish(any);
            (st.ctx.clone(), fin, any, st.reused, st.head.is_some())
        };
        self.cancel_idle_timer();
        let Some(ctx) = ctx else {
            // An idle connection went away.
            if let Some(client) = self.client.upgrade() {
                client.forget_idle(&me);
            }
            return;
        };
        match fin {
            Ok(_) => me.complete(ctx, false, Vec::new()),
            Err(HttpError::Incomplete { .. }) if has_head && !ctx.req.fail_on_dataloss => {
                me.complete(ctx, false, vec!["dataloss"]);
            }
            Err(e) => {
                if !any_bytes && reused && ctx.req.idempotent() && !ctx.retried.get() {
                    // The pooled connection was dead: retry once on a fresh one.
                    ctx.retried.set(true);
                    self.st.borrow_mut().ctx = None;
                    ctx.conn.borrow_mut().take();
                    if let Some(client) = self.client.upgrade() {
                        client.retry(ctx);
                    }
                    return;
                }
                let failure = if any_bytes {
                    Failure::new(e)
                } else if reason.check::<crate::net::ConnectionDone>() {
                    Failure::new(ConnectionLost {
                        reason: "connection closed before any response byte".into(),
                    })
                } else {
                    reason
                };
                ctx.fail(failure);
            }
        }
    }
}

/// The origin-form request target: the path and query as the URL serialises them
/// (a slice of it, no copy; the fragment left out).
fn origin_target(url: &url::Url) -> &str {
    &url[Position::BeforePath..Position::AfterQuery]
}

/// The `Host` header: `host[:port]` as the URL serialises them (the port only when
/// it is not the scheme's default, an IPv6 address in its brackets, no userinfo).
fn host_header(url: &url::Url) -> &str {
    if url.has_host() {
        &url[Position::BeforeHost..Position::AfterPort]
    } else {
        ""
    }
}

#[cfg(test)]
mod target_tests {
    use super::{host_header, origin_target};

    #[test]
    fn the_target_and_host_are_the_urls_parts() {
        for text in [
            "http://example.com/a/b?q=1&r#frag",
            "http://example.com",
            "http://example.com/?",
            "https://user:pw@example.com:8443/p;x?y",
            "http://example.com:80/default-port",
            "https://example.com:443/",
            "http://[::1]:8080/v6?x",
            "http://[2001:db8::1]/",
            "http://127.0.0.1:8089/s/138/13875.html",
            "http://xn--bcher-kva.example/%C3%A9",
        ] {
            let url = url::Url::parse(text).expect("a test URL");
            // What the accessors give, joined as the request line and Host header
            // need them.
            let mut target = url.path().to_owned();
            if let Some(q) = url.query() {
                target.push('?');
                target.push_str(q);
            }
            let host = match (url.host_str(), url.port()) {
                (Some(h), Some(p)) => format!("{h}:{p}"),
                (Some(h), None) => h.to_owned(),
                (None, _) => String::new(),
            };
            assert_eq!(origin_target(&url), target, "{text}");
            assert_eq!(host_header(&url), host, "{text}");
        }
    }
}
