//! An FTP client on the reactor that stores a file, as Python's `ftplib` does for
//! Scrapy's `ftp_store_file`: log in, `TYPE I`, change to the file's directory
//! (making the missing ones, as Scrapy's `ftp_makedirs_cwd`), open a data connection —
//! passive (`PASV`, connecting to the control connection's peer address as `ftplib`
//! does by default) or active (`PORT`, listening on the control connection's local
//! address) — send `STOR` (or `APPE` when appending), stream the file with a pull
//! producer (one 64 KiB chunk in memory at a time), wait for the `226` and `QUIT`. A
//! stat (Scrapy's `FTPFilesStore.stat_file`) asks `MDTM` and reads the file (`RETR`)
//! into an MD5.
//! The replies come from the sans-IO [`crate::proto::ftp`] parser.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::rc::{Rc, Weak};

use crate::defer::{Deferred, Failure};
use crate::net::connector::{Connector, ConnectorConfig, Endpoint};
use crate::net::tcp::{ListeningPort, connect_tcp, listen_tcp};
use crate::net::{Protocol, Transport};
use crate::proto::ftp::{Reply, ReplyParser, command, parse_pasv, port_argument};
use crate::reactor::{DelayedCall, ReactorHandle};

/// Where a file goes.
#[derive(Clone)]
pub struct FtpTarget {
    /// The server's host.
    pub host: String,
    /// The server's port (21).
    pub port: u16,
    /// The user name (`anonymous` when empty, as `ftplib`).
    pub username: String,
    /// The password.
    pub password: String,
    /// The file's path on the server (`/feeds/items.jl`).
    pub path: String,
    /// Active mode (`PORT`) instead of passive (`PASV`).
    pub active: bool,
    /// `STOR` (replace) rather than `APPE` (append).
    pub overwrite: bool,
    /// Seconds without progress before the transfer is given up.
    pub timeout: f64,
}

impl fmt::Debug for FtpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FtpTarget")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("path", &self.path)
            .field("active", &self.active)
            .field("overwrite", &self.overwrite)
            .finish_non_exhaustive()
    }
}

/// An FTP failure: the server's reply, or what went wrong on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FtpError {
    /// What was being done (`login`, `STOR`).
    pub during: String,
    /// The server's reply code (0: none).
    pub code: u16,
    /// The server's text, or the local error.
    pub message: String,
}

impl fmt::Display for FtpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.code == 0 {
            write!(f, "FTP {}: {}", self.during, self.message)
        } else {
            write!(f, "FTP {}: {} {}", self.during, self.code, self.message)
        }
    }
}

impl std::error::Error for FtpError {}

/// The client: a connector (DNS, connection timeouts) on a reactor.
#[derive(Clone)]
pub struct FtpClient {
    reactor: ReactorHandle,
    connector: Connector,
}

impl fmt::Debug for FtpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FtpClient")
    }
}

impl FtpClient {
    /// A client on `reactor`.
    ///
    /// # Errors
    ///
    /// The connector's TLS configuration failed to build.
    pub fn new(reactor: &ReactorHandle) -> Result<Self, Failure> {
        Ok(Self {
            reactor: reactor.clone(),
            connector: Connector::new(reactor, ConnectorConfig::new()?),
        })
    }

    /// Stores the local file `local` at `target`.
    pub fn store_file(&self, target: FtpTarget, local: PathBuf) -> Deferred<()> {
        let file = match File::open(&local) {
            Ok(f) => f,
            Err(e) => {
                return crate::defer::fail(FtpError {
                    during: "open".into(),
                    code: 0,
                    message: format!("{}: {e}", local.display()),
                });
            }
        };
        self.start(target, Some(Box::new(file))).map(|_| ())
    }

    /// Stores `body` at `target`.
    pub fn store_bytes(&self, target: FtpTarget, body: Vec<u8>) -> Deferred<()> {
        self.start(target, Some(Box::new(std::io::Cursor::new(body))))
            .map(|_| ())
    }

    /// When the file at `target.path` was modified (`MDTM`) and the MD5 of its bytes
    /// (`RETR`), as Scrapy's `FTPFilesStore.stat_file`.
    pub fn stat_file(&self, target: FtpTarget) -> Deferred<Option<FtpStat>> {
        self.start(target, None)
    }

    /// Runs one session: a store of `source`, or a stat when `None`.
    fn start(&self, target: FtpTarget, source: Option<Box<dyn Read>>) -> Deferred<Option<FtpStat>> {
        let result = Deferred::new();
        let stat = source.is_none();
        let session = Rc::new_cyclic(|me| Session {
            me: me.clone(),
            reactor: self.reactor.clone(),
            target,
            file: RefCell::new(source),
            stat: stat.then(|| RefCell::new(StatState::default())),
            parser: RefCell::new(ReplyParser::new()),
            step: Cell::new(Step::Greeting),
            control: RefCell::new(None),
            data: RefCell::new(None),
            listener: RefCell::new(None),
            probe: RefCell::new(String::new()),
            to_make: RefCell::new(Vec::new()),
            made_dirs: Cell::new(false),
            preliminary: Cell::new(false),
            sent_all: Cell::new(false),
            timer: RefCell::new(None),
            result: result.clone(),
            done: Cell::new(false),
        });
        session.touch();
        let endpoint = Endpoint {
            host: session.target.host.clone(),
            port: session.target.port,
            tls: None,
            proxy: None,
            bind: None,
        };
        let s = session.clone();
        self.connector.connect(&endpoint).then(move |r| {
            match r {
                Ok(t) => {
                    *s.control.borrow_mut() = Some(t.clone());
                    t.attach(Rc::new(Control(s.clone())));
                }
                Err(f) => s.fail("connect", 0, &f.to_string()),
            }
            Ok::<(), Failure>(())
        });
        result
    }
}

/// What [`FtpClient::stat_file`] learns of a stored file.
#[derive(Debug, Clone, PartialEq)]
pub struct FtpStat {
    /// `MDTM`, as UNIX seconds.
    pub last_modified: f64,
    /// The MD5 of the file's bytes, in hex.
    pub md5: String,
}

/// A stat in progress.
#[derive(Default)]
struct StatState {
    last_modified: f64,
    md5: md5::Md5,
    /// The data connection has closed (everything arrived).
    data_closed: bool,
    /// The server's `226` arrived.
    completed: bool,
}

/// `MDTM`'s `YYYYMMDDHHMMSS[.sss]` (UTC) as UNIX seconds.
fn parse_mdtm(text: &str) -> Option<f64> {
    let t = text.trim();
    let digits = t.get(..14)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |a: usize, b: usize| digits[a..b].parse::<i64>().ok();
    let days = crate::proto::date::days_from_civil(n(0, 4)?, n(4, 6)?, n(6, 8)?);
    let secs = days * 86_400 + n(8, 10)? * 3_600 + n(10, 12)? * 60 + n(12, 14)?;
    let frac = t
        .get(14..)
        .filter(|f| f.starts_with('.'))
        .and_then(|f| format!("0{f}").parse::<f64>().ok())
        .unwrap_or(0.0);
    Some(secs as f64 + frac)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Greeting,
    User,
    Pass,
    Type,
    Mdtm,
    Cwd,
    Mkd,
    CwdFinal,
    Pasv,
    Port,
    Store,
    Complete,
    Quit,
}

/// One upload.
struct Session {
    me: Weak<Session>,
    reactor: ReactorHandle,
    target: FtpTarget,
    file: RefCell<Option<Box<dyn Read>>>,
    /// A stat's progress (`None`: a store).
    stat: Option<RefCell<StatState>>,
    parser: RefCell<ReplyParser>,
    step: Cell<Step>,
    control: RefCell<Option<Rc<dyn Transport>>>,
    data: RefCell<Option<Rc<dyn Transport>>>,
    listener: RefCell<Option<Rc<ListeningPort>>>,
    /// The directory a `CWD` is trying.
    probe: RefCell<String>,
    /// Directories to make, deepest first.
    to_make: RefCell<Vec<String>>,
    made_dirs: Cell<bool>,
    /// The `1xx` for the `STOR` arrived.
    preliminary: Cell<bool>,
    /// The whole file was written to the data connection.
    sent_all: Cell<bool>,
    timer: RefCell<Option<DelayedCall>>,
    result: Deferred<Option<FtpStat>>,
    done: Cell<bool>,
}

/// `dirname` and `basename` of a POSIX path.
fn split_path(path: &str) -> (String, String) {
    match path.rfind('/') {
        Some(i) => {
            let dir = path[..i].trim_end_matches('/');
            let dir = if dir.is_empty() && path.starts_with('/') {
                "/"
            } else {
                dir
            };
            (dir.to_owned(), path[i + 1..].to_owned())
        }
        None => (String::new(), path.to_owned()),
    }
}

impl Session {
    /// Restarts the no-progress timer.
    fn touch(&self) {
        if let Some(t) = self.timer.borrow_mut().take() {
            let _ = t.cancel();
        }
        if self.done.get() {
            return;
        }
        let me = self.me.clone();
        let timeout = self.target.timeout;
        let call = self.reactor.call_later(timeout, move || {
            if let Some(s) = me.upgrade() {
                s.fail("transfer", 0, &format!("no progress for {timeout} s"));
            }
        });
        *self.timer.borrow_mut() = Some(call);
    }

    fn send(&self, verb: &str, arg: Option<&str>) {
        let line = match command(verb, arg) {
            Ok(l) => l,
            Err(e) => return self.fail(verb, 0, &e.to_string()),
        };
        let control = self.control.borrow().clone();
        if let Some(c) = control {
            c.write(&line);
        }
    }

    fn finish(&self, outcome: Result<(), FtpError>) {
        if self.done.replace(true) {
            return;
        }
        if let Some(t) = self.timer.borrow_mut().take() {
            let _ = t.cancel();
        }
        let data = self.data.borrow_mut().take();
        if let Some(d) = data {
            d.unregister_producer();
            if outcome.is_err() {
                d.abort_connection();
            }
        }
        let listener = self.listener.borrow_mut().take();
        if let Some(l) = listener {
            l.stop_listening();
        }
        let control = self.control.borrow_mut().take();
        if let Some(c) = control {
            if outcome.is_ok() {
                c.lose_connection();
            } else {
                c.abort_connection();
            }
        }
        self.file.borrow_mut().take();
        let stat = self.stat.as_ref().map(|st| {
            let st = std::mem::take(&mut *st.borrow_mut());
            FtpStat {
                last_modified: st.last_modified,
                md5: crate::util::to_hex(&md5::Digest::finalize(st.md5)),
            }
        });
        let _ = match outcome {
            Ok(()) => self.result.callback(stat),
            Err(e) => self.result.errback(e),
        };
    }

    fn fail(&self, during: &str, code: u16, message: &str) {
        self.finish(Err(FtpError {
            during: during.to_owned(),
            code,
            message: message.to_owned(),
        }));
    }

    fn unexpected(&self, during: &str, reply: &Reply) {
        self.fail(during, reply.code, &reply.text);
    }

    fn on_reply(&self, reply: Reply) {
        if self.done.get() {
            return;
        }
        self.touch();
        match self.step.get() {
            Step::Greeting => match reply.code {
                120 => {}
                220 => {
                    let user = if self.target.username.is_empty() {
                        "anonymous".to_owned()
                    } else {
                        self.target.username.clone()
                    };
                    self.step.set(Step::User);
                    self.send("USER", Some(&user));
                }
                _ => self.unexpected("greeting", &reply),
            },
            Step::User | Step::Pass if reply.code == 230 || reply.code == 202 => {
                self.step.set(Step::Type);
                self.send("TYPE", Some("I"));
            }
            Step::User if reply.code == 331 => {
                self.step.set(Step::Pass);
                let password = self.target.password.clone();
                self.send("PASS", Some(&password));
            }
            Step::User | Step::Pass => self.unexpected("login", &reply),
            Step::Type if reply.is_completion() && self.stat.is_some() => {
                self.step.set(Step::Mdtm);
                let path = self.target.path.clone();
                self.send("MDTM", Some(&path));
            }
            Step::Type if reply.is_completion() => self.change_directory(),
            Step::Mdtm if reply.code == 213 => match parse_mdtm(&reply.text) {
                Some(t) => {
                    if let Some(st) = &self.stat {
                        st.borrow_mut().last_modified = t;
                    }
                    self.open_data();
                }
                None => self.unexpected("MDTM", &reply),
            },
            Step::Mdtm => self.unexpected("MDTM", &reply),
            Step::Type => self.unexpected("TYPE I", &reply),
            Step::Cwd if reply.is_completion() => self.make_next_directory(),
            Step::Cwd if reply.code >= 500 => {
                // Scrapy's ftp_makedirs_cwd: make the parent, then this one.
                let probe = self.probe.borrow().clone();
                let (parent, _) = split_path(&probe);
                let mut to_make = self.to_make.borrow_mut();
                if parent == probe || parent.is_empty() || to_make.len() >= 64 {
                    drop(to_make);
                    return self.unexpected(&format!("CWD {probe}"), &reply);
                }
                to_make.push(probe);
                drop(to_make);
                *self.probe.borrow_mut() = parent.clone();
                self.send("CWD", Some(&parent));
            }
            Step::Cwd => self.unexpected("CWD", &reply),
            Step::Mkd if reply.is_completion() => self.make_next_directory(),
            // Another session may have made it meanwhile (two files stored at once):
            // the final CWD tells whether the directory is there.
            Step::Mkd if reply.code >= 500 => self.make_next_directory(),
            Step::Mkd => self.unexpected("MKD", &reply),
            Step::CwdFinal if reply.is_completion() => self.open_data(),
            Step::CwdFinal => self.unexpected("CWD", &reply),
            Step::Pasv => match parse_pasv(&reply) {
                Ok(addr) => self.connect_data(addr.port()),
                Err(e) => self.fail("PASV", reply.code, &e.to_string()),
            },
            Step::Port if reply.is_completion() => self.send_store(),
            Step::Port => self.unexpected("PORT", &reply),
            Step::Store if reply.is_preliminary() => {
                self.preliminary.set(true);
                self.step.set(Step::Complete);
                self.start_streaming();
            }
            // ftplib: a 2xx before the 1xx is read past.
            Step::Store if reply.is_completion() => {}
            Step::Store => self.unexpected(self.store_verb(), &reply),
            Step::Complete if reply.is_completion() && self.stat.is_some() => {
                let data_closed = self.stat.as_ref().is_some_and(|st| {
                    let mut st = st.borrow_mut();
                    st.completed = true;
                    st.data_closed
                });
                if data_closed {
                    self.quit();
                }
            }
            Step::Complete if reply.is_completion() && self.sent_all.get() => self.quit(),
            Step::Complete => self.unexpected(self.store_verb(), &reply),
            Step::Quit => self.finish(Ok(())),
        }
    }

    fn quit(&self) {
        self.step.set(Step::Quit);
        self.send("QUIT", None);
    }

    fn store_verb(&self) -> &'static str {
        if self.stat.is_some() {
            return "RETR";
        }
        if self.target.overwrite {
            "STOR"
        } else {
            "APPE"
        }
    }

    fn change_directory(&self) {
        let (dir, _) = split_path(&self.target.path);
        if dir.is_empty() {
            return self.open_data();
        }
        *self.probe.borrow_mut() = dir.clone();
        self.step.set(Step::Cwd);
        self.send("CWD", Some(&dir));
    }

    /// After a `CWD` or `MKD` succeeded: the next directory to make, or the final
    /// `CWD` into the file's directory, or the transfer.
    fn make_next_directory(&self) {
        let next = self.to_make.borrow_mut().pop();
        match next {
            Some(dir) => {
                self.made_dirs.set(true);
                self.step.set(Step::Mkd);
                self.send("MKD", Some(&dir));
            }
            None if self.made_dirs.get() => {
                let (dir, _) = split_path(&self.target.path);
                self.step.set(Step::CwdFinal);
                self.send("CWD", Some(&dir));
            }
            None => self.open_data(),
        }
    }

    fn open_data(&self) {
        if !self.target.active {
            self.step.set(Step::Pasv);
            return self.send("PASV", None);
        }
        let local = self.control.borrow().as_ref().and_then(|c| c.host());
        let Some(SocketAddr::V4(local)) = local else {
            return self.fail("PORT", 0, "active mode needs an IPv4 control connection");
        };
        let me = self.me.clone();
        let listening = listen_tcp(
            &self.reactor,
            SocketAddr::new(IpAddr::V4(*local.ip()), 0),
            move |_| Rc::new(Data(me.clone())) as Rc<dyn Protocol>,
            None,
        );
        let port = match listening {
            Ok(p) => p,
            Err(e) => return self.fail("PORT", 0, &e.to_string()),
        };
        let addr = match port.local_addr() {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(_) => return self.fail("PORT", 0, "an IPv6 listening address"),
        };
        *self.listener.borrow_mut() = Some(port);
        self.step.set(Step::Port);
        self.send("PORT", Some(&port_argument(addr)));
    }

    /// Passive mode: connects to the control connection's peer at `port`.
    fn connect_data(&self, port: u16) {
        let peer = self.control.borrow().as_ref().and_then(|c| c.peer());
        let Some(peer) = peer else {
            return self.fail("PASV", 0, "the control connection has no peer address");
        };
        let me = self.me.clone();
        connect_tcp(
            &self.reactor,
            SocketAddr::new(peer.ip(), port),
            self.target.timeout,
            None,
            None,
        )
        .then(move |r| {
            if let Some(s) = me.upgrade() {
                match r {
                    Ok(t) => {
                        t.attach(Rc::new(Data(me.clone())));
                        s.send_store();
                    }
                    Err(f) => s.fail("data connection", 0, &f.to_string()),
                }
            }
            Ok::<(), Failure>(())
        });
    }

    fn send_store(&self) {
        self.step.set(Step::Store);
        if self.stat.is_some() {
            // Scrapy's stat reads the file by its full path, without a CWD.
            let path = self.target.path.clone();
            return self.send("RETR", Some(&path));
        }
        let (_, name) = split_path(&self.target.path);
        self.send(self.store_verb(), Some(&name));
    }

    /// Streams the file once both the data connection and the `1xx` are there.
    fn start_streaming(&self) {
        if !self.preliminary.get() || self.stat.is_some() {
            return;
        }
        let Some(data) = self.data.borrow().clone() else {
            return;
        };
        let me = self.me.clone();
        data.register_producer(Rc::new(move || {
            if let Some(s) = me.upgrade() {
                s.produce();
            }
        }));
    }

    /// Writes the next chunk, or ends the data connection at the end of the file.
    fn produce(&self) {
        if self.done.get() {
            return;
        }
        self.touch();
        let mut chunk = vec![0u8; 64 * 1024];
        let read = match self.file.borrow_mut().as_mut() {
            Some(f) => f.read(&mut chunk),
            None => Ok(0),
        };
        let data = self.data.borrow().clone();
        let Some(data) = data else {
            return;
        };
        match read {
            Ok(0) => {
                data.unregister_producer();
                self.sent_all.set(true);
                data.lose_connection();
            }
            Ok(n) => data.write(&chunk[..n]),
            Err(e) => self.fail("read", 0, &e.to_string()),
        }
    }

    fn data_connected(&self, transport: Rc<dyn Transport>) {
        if self.done.get() {
            transport.abort_connection();
            return;
        }
        if self.data.borrow().is_some() {
            transport.abort_connection(); // one data connection only
            return;
        }
        *self.data.borrow_mut() = Some(transport);
        if let Some(l) = self.listener.borrow_mut().take() {
            l.stop_listening();
        }
        self.start_streaming();
    }

    fn data_lost(&self, reason: &Failure) {
        if let Some(st) = &self.stat {
            // A RETR ends when the server closes the data connection.
            let completed = {
                let mut st = st.borrow_mut();
                st.data_closed = true;
                st.completed
            };
            if completed && !self.done.get() {
                self.quit();
            }
            return;
        }
        if !self.done.get() && !self.sent_all.get() {
            self.fail("data connection", 0, &reason.to_string());
        }
    }

    fn data_bytes(&self, data: &[u8]) {
        if let Some(st) = &self.stat {
            md5::Digest::update(&mut st.borrow_mut().md5, data);
            self.touch();
        }
    }
}

/// The control connection's protocol. It keeps the session alive while the connection
/// is open; the session drops the connection when it finishes, which breaks the cycle.
struct Control(Rc<Session>);

impl Protocol for Control {
    fn connection_made(&self, _transport: Rc<dyn Transport>) {}

    fn data_received(&self, data: &[u8]) {
        let s = &self.0;
        let replies = s.parser.borrow_mut().feed(data);
        match replies {
            Ok(replies) => {
                for r in replies {
                    s.on_reply(r);
                }
            }
            Err(e) => s.fail("control connection", 0, &e.to_string()),
        }
    }

    fn connection_lost(&self, reason: Failure) {
        let s = &self.0;
        if s.step.get() == Step::Quit {
            s.finish(Ok(()));
        } else {
            s.fail("control connection", 0, &format!("closed: {reason}"));
        }
    }
}

/// The data connection's protocol (the server sends nothing on it for a `STOR`).
struct Data(Weak<Session>);

impl Protocol for Data {
    fn connection_made(&self, transport: Rc<dyn Transport>) {
        if let Some(s) = self.0.upgrade() {
            s.data_connected(transport);
        }
    }

    fn data_received(&self, data: &[u8]) {
        if let Some(s) = self.0.upgrade() {
            s.data_bytes(data);
        }
    }

    fn connection_lost(&self, reason: Failure) {
        if let Some(s) = self.0.upgrade() {
            s.data_lost(&reason);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_path;

    #[test]
    fn mdtm_times() {
        assert_eq!(super::parse_mdtm("20261205004300"), Some(1_796_431_380.0));
        assert_eq!(super::parse_mdtm("19700101000001.5"), Some(1.5));
        assert_eq!(super::parse_mdtm("2026120500430"), None);
    }

    #[test]
    fn paths_split_as_posixpath() {
        assert_eq!(split_path("/a/b/c.jl"), ("/a/b".into(), "c.jl".into()));
        assert_eq!(split_path("/c.jl"), ("/".into(), "c.jl".into()));
        assert_eq!(split_path("c.jl"), (String::new(), "c.jl".into()));
        assert_eq!(split_path("/a"), ("/".into(), "a".into()));
    }
}
