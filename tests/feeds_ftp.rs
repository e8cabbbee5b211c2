//! The FTP feed storage against a real FTP server: pyftpdlib, started on a free port by
//! `python/ftp_server.py` over a temporary directory. Batches of 100 with gzip on a
//! 1,000-page crawl into directories that do not exist yet (every page exactly once, a
//! percent-encoded password), active mode, `overwrite: false` appending (`APPE`), a
//! wrong password (logged without it, counted, kept), and a server that is down for
//! one run and up for the next, which uploads what the first kept.

mod util;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};

use serde_json::Value;
use trawl::testing::{FixtureOptions, FixtureServer, TempDir};

const USER: &str = "trawl";
/// `s3cr#t`, percent-encoded in URIs (Scrapy decodes an FTP password).
const PASSWORD: &str = "s3cr#t";
const PASSWORD_IN_URI: &str = "s3cr%23t";

/// A running FTP server over `root`; stopped when dropped.
struct FtpServer {
    child: Child,
    _stdin: ChildStdin,
    port: u16,
}

impl FtpServer {
    fn start(root: &Path, port: u16) -> Self {
        let mut child = Command::new(util::python("pyftpdlib"))
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/python/ftp_server.py"))
            .args(["--port", &port.to_string()])
            .arg(root)
            .args([USER, PASSWORD])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python ftp_server.py starts");
        let stdin = child.stdin.take().expect("stdin");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the server's first line");
        let info: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("ftp_server.py printed {line:?}: {e}"));
        Self {
            child,
            _stdin: stdin,
            port: u16::try_from(info["port"].as_u64().expect("port")).expect("port"),
        }
    }

    fn uri(&self, path: &str) -> String {
        format!(
            "ftp://{USER}:{PASSWORD_IN_URI}@127.0.0.1:{}/{path}",
            self.port
        )
    }
}

impl Drop for FtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fixture(pages: usize) -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages,
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

fn crawl(srv: &FixtureServer, settings: &[String]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trawl"));
    cmd.args([
        "crawl",
        &srv.url("/index.html"),
        "--same-domain",
        "--name",
        "shop",
    ]);
    for s in settings {
        cmd.args(["-s", s]);
    }
    cmd.output().expect("trawl runs")
}

fn stat(stderr: &str, key: &str) -> Option<i64> {
    let line = stderr.lines().find(|l| l.contains(&format!("'{key}':")))?;
    line.rsplit(':')
        .next()?
        .trim()
        .trim_end_matches(',')
        .parse()
        .ok()
}

fn urls(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}"));
            v["url"].as_str().expect("url").to_owned()
        })
        .collect()
}

fn feeds(entries: &[(&str, &str)]) -> String {
    let body: Vec<String> = entries
        .iter()
        .map(|(uri, options)| format!("\"{uri}\": {options}"))
        .collect();
    format!("FEEDS={{{}}}", body.join(", "))
}

fn temp_settings(dir: &Path) -> Vec<String> {
    vec![
        format!("FEED_TEMPDIR={}", dir.display()),
        "FEED_STORAGE_RETRY_BACKOFF=0.2".to_owned(),
    ]
}

fn kept_batches(dir: &Path) -> Vec<PathBuf> {
    util::files_under(dir)
        .into_iter()
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("feed"))
        .collect()
}

#[test]
fn batches_of_100_gzipped_over_ftp_hold_every_page_once() {
    let root = TempDir::new("feeds-ftp-root").expect("temp dir");
    let ftp = FtpServer::start(root.path(), 0);
    let srv = fixture(1000);
    let tmp = TempDir::new("feeds-ftp").expect("temp dir");
    let local = tmp.join("all.jl");
    let mut settings = temp_settings(tmp.path());
    settings.push(feeds(&[
        (
            &ftp.uri("exports/%(name)s/part-%(batch_id)03d.jl.gz"),
            r#"{"format": "jsonlines", "batch_item_count": 100, "postprocessing": ["trawl.GzipPlugin"]}"#,
        ),
        (&local.display().to_string(), r#"{"format": "jsonlines"}"#),
    ]));
    let out = crawl(&srv, &settings);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("s3cr"),
        "the password in the log: {stderr}"
    );
    let dir = root.join("exports/shop");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the directories were made")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut seen = Vec::new();
    for (i, name) in names.iter().enumerate() {
        assert_eq!(name, &format!("part-{:03}.jl.gz", i + 1));
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(dir.join(name)).expect("batch"))
            .read_to_string(&mut text)
            .expect("gzip");
        let lines = urls(&text);
        if i + 1 < names.len() {
            assert_eq!(lines.len(), 100, "{name}");
        }
        seen.extend(lines);
    }
    let mut reference = urls(&std::fs::read_to_string(&local).expect("the local feed"));
    reference.sort();
    seen.sort();
    assert!(reference.len() >= 1000, "{} items", reference.len());
    assert!(
        seen == reference,
        "the batches hold every item exactly once"
    );
    assert_eq!(
        stat(&stderr, "feedexport/success_count/FTPFeedStorage"),
        Some(names.len() as i64)
    );
    assert!(kept_batches(tmp.path()).is_empty());
}

/// Active mode (`PORT`) and `overwrite: false` (`APPE`): two runs append to one file.
#[test]
fn active_mode_and_appending() {
    let root = TempDir::new("feeds-ftp-active-root").expect("temp dir");
    let ftp = FtpServer::start(root.path(), 0);
    let srv = fixture(30);
    let tmp = TempDir::new("feeds-ftp-active").expect("temp dir");
    let mut settings = temp_settings(tmp.path());
    settings.push("FEED_STORAGE_FTP_ACTIVE=True".to_owned());
    settings.push(feeds(&[(
        &ftp.uri("items.jl"),
        r#"{"format": "jsonlines", "overwrite": false}"#,
    )]));
    let first = crawl(&srv, &settings);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let once = urls(&std::fs::read_to_string(root.join("items.jl")).expect("stored"));
    assert!(once.len() >= 30, "{} items", once.len());
    let second = crawl(&srv, &settings);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let twice = urls(&std::fs::read_to_string(root.join("items.jl")).expect("stored"));
    assert_eq!(twice.len(), 2 * once.len(), "the second run appended");
}

/// A wrong password: refused, logged without the password, counted, the batch kept.
#[test]
fn a_wrong_password_is_counted_and_the_batch_kept() {
    let root = TempDir::new("feeds-ftp-pass-root").expect("temp dir");
    let ftp = FtpServer::start(root.path(), 0);
    let srv = fixture(10);
    let tmp = TempDir::new("feeds-ftp-pass").expect("temp dir");
    let mut settings = temp_settings(tmp.path());
    settings.push("FEED_STORAGE_RETRY_TIMES=1".to_owned());
    let uri = format!("ftp://{USER}:WRONGPASSWORD@127.0.0.1:{}/x.jl", ftp.port);
    settings.push(feeds(&[(&uri, r#"{"format": "jsonlines"}"#)]));
    let out = crawl(&srv, &settings);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("WRONGPASSWORD"), "{stderr}");
    assert!(stderr.contains("FTP login: 530"), "{stderr}");
    assert_eq!(
        stat(&stderr, "feedexport/failed_count/FTPFeedStorage"),
        Some(1)
    );
    assert_eq!(kept_batches(tmp.path()).len(), 1);
    assert!(!root.join("x.jl").exists());
}

/// The server is down for a whole run: the batch is kept; the next run, with the
/// server up, uploads it before its own.
#[test]
fn a_batch_kept_while_the_server_was_down_goes_up_with_the_next_run() {
    let root = TempDir::new("feeds-ftp-down-root").expect("temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let srv = fixture(20);
    let tmp = TempDir::new("feeds-ftp-down").expect("temp dir");
    let uri = |name: &str| format!("ftp://{USER}:{PASSWORD_IN_URI}@127.0.0.1:{port}/runs/{name}");
    let settings = |name: &str| {
        let mut s = temp_settings(tmp.path());
        s.push("FEED_STORAGE_RETRY_TIMES=1".to_owned());
        s.push(feeds(&[(&uri(name), r#"{"format": "jsonlines"}"#)]));
        s
    };
    let out = crawl(&srv, &settings("first.jl"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stat(&stderr, "feedexport/failed_count/FTPFeedStorage"),
        Some(1)
    );
    let kept = kept_batches(tmp.path());
    assert_eq!(kept.len(), 1);
    let kept_text = std::fs::read_to_string(&kept[0]).expect("kept");

    let _ftp = FtpServer::start(root.path(), port);
    let out = crawl(&srv, &settings("second.jl"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stat(&stderr, "feedexport/success_count/FTPFeedStorage"),
        Some(2)
    );
    let first = std::fs::read_to_string(root.join("runs/first.jl")).expect("first.jl");
    let second = std::fs::read_to_string(root.join("runs/second.jl")).expect("second.jl");
    assert_eq!(first, kept_text, "the kept batch went up as it was");
    assert_eq!(urls(&first).len(), urls(&second).len());
    assert!(kept_batches(tmp.path()).is_empty());
}

/// A 20 MB file goes up whole through the pull producer (64 KiB at a time, passive).
#[test]
fn a_large_file_is_streamed_whole() {
    use trawl::client::ftp::{FtpClient, FtpTarget};

    let root = TempDir::new("feeds-ftp-big-root").expect("temp dir");
    let ftp = FtpServer::start(root.path(), 0);
    let tmp = TempDir::new("feeds-ftp-big").expect("temp dir");
    let path = tmp.join("big.jl");
    let data: Vec<u8> = (0..20_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &data).expect("write");
    let mut reactor = trawl::reactor::Reactor::new().expect("reactor");
    let client = FtpClient::new(&reactor.handle()).expect("client");
    let d = client.store_file(
        FtpTarget {
            host: "127.0.0.1".into(),
            port: ftp.port,
            username: USER.into(),
            password: PASSWORD.into(),
            path: "/deep/er/big.jl".into(),
            active: false,
            overwrite: true,
            timeout: 30.0,
        },
        path,
    );
    reactor.run_until(&d).expect("the upload ends");
    let r = d.take_result().expect("fired");
    assert!(r.is_ok(), "{r:?}");
    let stored = std::fs::read(root.join("deep/er/big.jl")).expect("stored");
    assert!(
        stored == data,
        "{} bytes stored of {}",
        stored.len(),
        data.len()
    );
}

/// `FILES_STORE = ftp://user:pass@host/dir`: the files pipeline stores through the same
/// FTP client (Scrapy's `FTPFilesStore`), and a second run finds the files there
/// (`MDTM` and the MD5 of a `RETR`: `uptodate`, the same checksum).
#[test]
fn the_files_pipeline_stores_over_ftp() {
    use serde_json::json;
    use trawl::crawl::Output;
    use util::live::{LiveSpider, crawl as run_spider, get};

    let root = TempDir::new("files-ftp-root").expect("temp dir");
    let ftp = FtpServer::start(root.path(), 0);
    let srv = fixture(5);
    let base = srv.url("");
    let base = base.trim_end_matches('/').to_owned();
    let tmp = TempDir::new("files-ftp").expect("temp dir");
    let run = |out: &Path| {
        let b = base.clone();
        let spider =
            LiveSpider::new(vec![get(&format!("{base}/media/index.html"))]).follow(move |_| {
                let mut item = trawl::crawl::Item::default();
                let urls = ["report.pdf", "data.csv", "missing.pdf"]
                    .iter()
                    .map(|n| Value::from(format!("{b}/media/files/{n}")))
                    .collect();
                item.0.insert("file_urls".into(), Value::Array(urls));
                vec![Output::Item(item)]
            });
        run_spider(
            spider,
            &[
                ("ITEM_PIPELINES", json!({"trawl.FilesPipeline": 1})),
                // Scrapy's FTPFilesStore does not decode a password in the URI: the
                // settings carry this one (it has a `#`).
                (
                    "FILES_STORE",
                    json!(format!("ftp://127.0.0.1:{}/media", ftp.port)),
                ),
                ("FTP_USER", json!(USER)),
                ("FTP_PASSWORD", json!(PASSWORD)),
                (
                    "FEEDS",
                    json!({out.display().to_string(): {"format": "jsonlines"}}),
                ),
                ("ROBOTSTXT_OBEY", json!(false)),
            ],
        );
        let line = std::fs::read_to_string(out).expect("items");
        let item: Value = serde_json::from_str(line.trim()).expect("one item");
        item["files"].as_array().expect("files").clone()
    };
    let first = run(&tmp.join("first.jl"));
    assert_eq!(first.len(), 2, "{first:?}");
    for f in &first {
        assert_eq!(f["status"], "downloaded");
        let stored = std::fs::read(root.join("media").join(f["path"].as_str().expect("path")))
            .expect("stored on the server");
        let name = f["url"]
            .as_str()
            .expect("url")
            .rsplit('/')
            .next()
            .expect("name");
        assert_eq!(Some(stored), trawl::testing::media::file_body(name));
    }
    let second = run(&tmp.join("second.jl"));
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(b["status"], "uptodate", "{b}");
        assert_eq!(a["checksum"], b["checksum"]);
    }
}
