//! A real `redis-server` for tests and benchmarks: started on 127.0.0.1 on a free port,
//! in its own temporary directory, stopped (and the directory removed) on drop. It can
//! be killed and restarted on the same port and data directory (the outage tests).
//!
//! When `redis-server` is not installed, [`RedisServer::start`] fails with a message
//! saying how to install it — tests that need it fail rather than pass silently.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::proto::resp::{Parser, Value, encode_command, parse_all};

/// How to run the server.
#[derive(Debug, Clone, Default)]
pub struct RedisServerOptions {
    /// Persist with the append-only file (`appendonly yes`, `appendfsync always`), so
    /// a restart on the same directory keeps the data.
    pub appendonly: bool,
    /// `requirepass`.
    pub password: Option<String>,
    /// Extra `--name value` arguments.
    pub extra: Vec<(String, String)>,
    /// Extra arguments as they are (`--replicaof`, `127.0.0.1`, `6379`).
    pub args: Vec<String>,
    /// Run as a Redis Sentinel with this configuration (written to `sentinel.conf` in
    /// the server's directory, which Sentinel rewrites as it learns).
    pub sentinel: Option<String>,
    /// Serve TLS only (`rediss://`), with the fixture server's test certificate
    /// (signed by [`TEST_CA_PEM`](super::fixture::TEST_CA_PEM)).
    pub tls: bool,
}

/// A running `redis-server`.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    options: RedisServerOptions,
    owned: bool,
}

/// The binary, from `TRAWL_REDIS_SERVER` or `PATH`.
fn binary() -> String {
    std::env::var("TRAWL_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl RedisServer {
    /// Starts a server without persistence.
    ///
    /// # Errors
    ///
    /// `redis-server` is missing or did not come up within 10 s.
    pub fn start() -> Result<Self, String> {
        Self::start_with(RedisServerOptions::default())
    }

    /// Starts a server with `options`.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_with(options: RedisServerOptions) -> Result<Self, String> {
        // A free port can be taken before the server binds it, and a cluster node also
        // binds port + 10000 (its bus, so at most 65,535), which nothing reserved:
        // another port then.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let dir = std::env::temp_dir().join(format!(
                "trawl-redis-{}-{}",
                std::process::id(),
                next_id()
            ));
            std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {dir:?}: {e}"))?;
            let port = free_port().map_err(|e| format!("no free port: {e}"))?;
            let mut server = Self {
                child: None,
                port,
                dir,
                options: options.clone(),
                owned: true,
            };
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e)
                    if attempt < 5
                        && (e.contains("Address already in use")
                            || e.contains("port number too high")) =>
                {
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn spawn(&mut self) -> Result<(), String> {
        let mut cmd = Command::new(binary());
        if let Some(conf) = &self.options.sentinel {
            let path = self.dir.join("sentinel.conf");
            if !path.exists() {
                std::fs::write(&path, conf).map_err(|e| format!("cannot write {path:?}: {e}"))?;
            }
            cmd.arg(&path).arg("--sentinel");
            cmd.arg("--port")
                .arg(self.port.to_string())
                .arg("--bind")
                .arg("127.0.0.1")
                .arg("--protected-mode")
                .arg("no")
                .arg("--logfile")
                .arg(self.dir.join("redis.log"));
            cmd.args(&self.options.args);
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
            let child = cmd
                .spawn()
                .map_err(|e| format!("cannot run {} --sentinel ({e})", binary()))?;
            self.child = Some(child);
            return self.wait_ready();
        }
        cmd.arg("--port")
            .arg(self.port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(&self.dir)
            .arg("--save")
            .arg("")
            .arg("--protected-mode")
            .arg("no")
            .arg("--daemonize")
            .arg("no")
            .arg("--logfile")
            .arg(self.dir.join("redis.log"));
        if self.options.appendonly {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        if let Some(p) = &self.options.password {
            cmd.arg("--requirepass").arg(p);
        }
        for (k, v) in &self.options.extra {
            cmd.arg(format!("--{k}")).arg(v);
        }
        cmd.args(&self.options.args);
        if self.options.tls {
            let write = |name: &str, pem: &[u8]| -> Result<String, String> {
                let path = self.dir.join(name);
                std::fs::write(&path, pem).map_err(|e| format!("cannot write {path:?}: {e}"))?;
                Ok(path.to_string_lossy().into_owned())
            };
            let cert = write("server.pem", super::fixture::TEST_SERVER_CERT_PEM)?;
            let key = write("server.key", super::fixture::TEST_SERVER_KEY_PEM)?;
            let ca = write("ca.pem", super::fixture::TEST_CA_PEM)?;
            // The plain port is off: only TLS is served.
            cmd.args(["--port", "0", "--tls-port", &self.port.to_string()]);
            cmd.args(["--tls-cert-file", &cert, "--tls-key-file", &key]);
            cmd.args(["--tls-ca-cert-file", &ca, "--tls-auth-clients", "no"]);
        }
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let child = cmd.spawn().map_err(|e| {
            format!(
                "cannot run {} ({e}): install Redis (`apt-get install -y redis-server`) \
                 or point TRAWL_REDIS_SERVER at the binary",
                binary()
            )
        })?;
        self.child = Some(child);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // A TLS-only server cannot be PINGed in clear: accepting is the signal.
            if self.options.tls && TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            // A reply other than PONG means the data set is still loading.
            if let Ok(reply) = self.raw(b"*1\r\n$4\r\nPING\r\n")
                && (reply.starts_with(b"+PONG") || reply.starts_with(b"-NOAUTH"))
            {
                return Ok(());
            }
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                let log = std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default();
                return Err(format!("redis-server exited with {status}: {log}"));
            }
            if Instant::now() > deadline {
                return Err(format!("redis-server did not answer on port {}", self.port));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends raw bytes on a fresh blocking connection and returns the first reply
    /// chunk (a test's side channel, not the client under test).
    fn raw(&self, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(bytes)?;
        let mut buf = vec![0; 1 << 16];
        let n = s.read(&mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }

    /// A handle on a server someone else runs on `port` (for [`call`](Self::call)
    /// from code that cannot borrow the owner); dropping it stops nothing.
    pub fn attach(port: u16) -> Self {
        Self {
            child: None,
            port,
            dir: PathBuf::new(),
            options: RedisServerOptions::default(),
            owned: false,
        }
    }

    /// Runs one command on a fresh blocking connection (a test's second client, to
    /// inspect or tamper with keys; never used on a reactor).
    ///
    /// # Errors
    ///
    /// The connection failed or the reply was not RESP.
    pub fn call<A: AsRef<[u8]>>(&self, args: &[A]) -> Result<Value, String> {
        let mut out = Vec::new();
        if let Some(p) = &self.options.password {
            encode_command(&[b"AUTH".as_ref(), p.as_bytes()], &mut out);
        }
        encode_command(args, &mut out);
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        s.write_all(&out).map_err(|e| e.to_string())?;
        let mut parser = Parser::new();
        let mut buf = Vec::new();
        let mut values = Vec::new();
        let want = if self.options.password.is_some() {
            2
        } else {
            1
        };
        let mut chunk = vec![0; 1 << 16];
        while values.len() < want {
            let n = s.read(&mut chunk).map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            buf.extend_from_slice(&chunk[..n]);
            let (v, used) = parse_all(&mut parser, &buf).map_err(|e| e.to_string())?;
            buf.drain(..used);
            values.extend(v);
        }
        values.pop().ok_or_else(|| "no reply".into())
    }

    /// A command's bulk reply as text (`INFO replication`, `CLUSTER INFO`); empty when
    /// the server does not answer with one.
    pub fn call_text<A: AsRef<[u8]>>(&self, args: &[A]) -> String {
        self.call(args)
            .ok()
            .and_then(|v| {
                v.as_bytes()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
            })
            .unwrap_or_default()
    }

    /// A counter from `INFO <section>`: the `calls` of a `cmdstat_<name>` row (a
    /// script's own calls count too), or a plain `name:value` line; 0 when absent.
    pub fn info_count(&self, section: &str, name: &str) -> i64 {
        let text = self.call_text(&["INFO", section]);
        let cmd = format!("cmdstat_{name}:calls=");
        let plain = format!("{name}:");
        text.lines()
            .find_map(|l| l.strip_prefix(&cmd).or_else(|| l.strip_prefix(&plain)))
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT/db` (`rediss://` with TLS).
    pub fn url(&self, db: u32) -> String {
        let scheme = if self.options.tls { "rediss" } else { "redis" };
        match &self.options.password {
            Some(p) => format!("{scheme}://:{p}@127.0.0.1:{}/{db}", self.port),
            None => format!("{scheme}://127.0.0.1:{}/{db}", self.port),
        }
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Kills the server with SIGKILL (no shutdown save) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port and directory.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        self.spawn()
    }

    /// The server's process id, when it was started here and runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if self.owned {
            self.kill();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
