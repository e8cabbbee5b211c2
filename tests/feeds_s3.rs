//! The S3 feed storage against a real S3-compatible server: moto's, started on a free
//! port by `python/s3_server.py` with Signature Version 4 checked on every request.
//! Batches of 100 with gzip on a 1,000-page crawl (object names from the
//! placeholders, every page exactly once, the gzip streams read back), a multipart
//! upload above 16 MB, wrong credentials (the error logged with the URI redacted,
//! counted, the batch kept and uploaded by the next run), a server that is down when
//! the first batches close and comes back (retried with backoff), a crawl without
//! credentials refused before it starts, and JOBDIR jobs killed mid-crawl (resumed at
//! their last commit, or behind it: the later batches made again, not uploaded).

mod util;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};

use serde_json::Value;
use trawl::testing::{FixtureOptions, FixtureServer, TempDir};

fn script() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/python/s3_server.py").to_owned()
}

/// A running S3 server; stopped when dropped.
struct S3Server {
    child: Child,
    _stdin: ChildStdin,
    port: u16,
    access_key: String,
    secret_key: String,
}

impl S3Server {
    fn start(port: u16) -> Self {
        Self::start_with(port, &[])
    }

    fn start_with(port: u16, flags: &[&str]) -> Self {
        let mut child = Command::new(util::python("moto.server, boto3"))
            .arg(script())
            .args(["--port", &port.to_string()])
            .args(flags)
            .arg("feeds")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python s3_server.py starts");
        let stdin = child.stdin.take().expect("stdin");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the server's first line");
        let info: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("s3_server.py printed {line:?}: {e}"));
        Self {
            child,
            _stdin: stdin,
            port: u16::try_from(info["port"].as_u64().expect("port")).expect("port"),
            access_key: info["access_key"].as_str().expect("key").to_owned(),
            secret_key: info["secret_key"].as_str().expect("secret").to_owned(),
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The settings that point a crawl at this server.
    fn settings(&self) -> Vec<String> {
        vec![
            format!("AWS_ENDPOINT_URL={}", self.endpoint()),
            format!("AWS_ACCESS_KEY_ID={}", self.access_key),
            format!("AWS_SECRET_ACCESS_KEY={}", self.secret_key),
        ]
    }

    /// Every object of the bucket `feeds`, read with boto3: key → (ETag, body).
    fn objects(&self) -> BTreeMap<String, (String, Vec<u8>)> {
        let out = Command::new(util::python("moto.server, boto3"))
            .arg(script())
            .args([
                "dump",
                &self.endpoint(),
                &self.access_key,
                &self.secret_key,
                "feeds",
            ])
            .output()
            .expect("dump runs");
        assert!(
            out.status.success(),
            "dump: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("dump JSON");
        v.as_object()
            .expect("object")
            .iter()
            .map(|(k, o)| {
                let body = base64_decode(o["body"].as_str().expect("body"));
                (
                    k.clone(),
                    (o["etag"].as_str().unwrap_or("").to_owned(), body),
                )
            })
            .collect()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let mut out = Vec::new();
    for chunk in s.trim_end_matches('=').as_bytes().chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c) << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn fixture(pages: usize) -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages,
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

/// `trawl crawl` of the fixture site with `settings` (`-s`) and `extra` arguments.
fn crawl(srv: &FixtureServer, settings: &[String], extra: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trawl"));
    cmd.args(["crawl", &srv.url("/index.html"), "--same-domain"]);
    for s in settings {
        cmd.args(["-s", s]);
    }
    cmd.args(extra)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_ENDPOINT_URL");
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

fn gunzip(bytes: &[u8]) -> String {
    let mut out = String::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_string(&mut out)
        .expect("a gzip stream");
    out
}

/// The `url` of every JSON line.
fn urls(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}"));
            v["url"].as_str().expect("url").to_owned()
        })
        .collect()
}

fn feeds_setting(uri: &str, options: &str) -> String {
    format!("FEEDS={{\"{uri}\": {options}}}")
}

fn temp_settings(dir: &Path) -> Vec<String> {
    vec![
        format!("FEED_TEMPDIR={}", dir.display()),
        "FEED_STORAGE_RETRY_BACKOFF=0.2".to_owned(),
    ]
}

/// Left-behind batch files under a FEED_TEMPDIR.
fn kept_batches(dir: &Path) -> Vec<PathBuf> {
    util::files_under(dir)
        .into_iter()
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("feed"))
        .collect()
}

#[test]
fn batches_of_100_gzipped_to_s3_hold_every_page_once() {
    let s3 = S3Server::start(0);
    let srv = fixture(1000);
    let tmp = TempDir::new("feeds-s3").expect("temp dir");
    let mut settings = s3.settings();
    settings.extend(temp_settings(tmp.path()));
    // The same crawl also writes every item to one local file, the reference.
    let local = tmp.join("all.jl");
    settings.push(format!(
        "FEEDS={{\"s3://feeds/%(name)s/part-%(batch_id)03d.jl.gz\": {{\"format\": \"jsonlines\", \
         \"batch_item_count\": 100, \"postprocessing\": [\"trawl.GzipPlugin\"]}}, \
         \"{}\": {{\"format\": \"jsonlines\"}}}}",
        local.display()
    ));
    let out = crawl(&srv, &settings, &["--name", "shop"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let objects = s3.objects();
    let mut seen = Vec::new();
    for (i, (key, (_, body))) in objects.iter().enumerate() {
        assert_eq!(key, &format!("shop/part-{:03}.jl.gz", i + 1));
        let lines = urls(&gunzip(body));
        if i + 1 < objects.len() {
            assert_eq!(lines.len(), 100, "{key}");
        }
        seen.extend(lines);
    }
    let mut reference = urls(&std::fs::read_to_string(&local).expect("the local feed"));
    reference.sort();
    seen.sort();
    assert!(reference.len() >= 1000, "{} items", reference.len());
    assert!(
        seen == reference,
        "the batches hold every item of the crawl exactly once"
    );
    assert_eq!(
        stat(&stderr, "feedexport/success_count/S3FeedStorage"),
        Some(objects.len() as i64),
        "{stderr}"
    );
    assert!(kept_batches(tmp.path()).is_empty(), "local batches removed");
    assert!(
        !tmp.join("trawl-feeds/shop")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some()),
        "the run's directory removed"
    );
}

/// Wrong credentials: the upload is refused (the server checks the signature), the
/// error is logged without the secret, counted, and the batch kept; the next run, with
/// the right credentials, uploads it before its own feed. A URI's own credentials
/// (Scrapy reads them before the settings') stay with the kept batch.
#[test]
fn a_refused_upload_is_kept_and_uploaded_by_the_next_run() {
    let s3 = S3Server::start(0);
    let srv = fixture(40);
    let tmp = TempDir::new("feeds-s3-creds").expect("temp dir");
    let endpoint = format!("AWS_ENDPOINT_URL={}", s3.endpoint());
    let mut first = vec![
        endpoint.clone(),
        format!("AWS_ACCESS_KEY_ID={}", s3.access_key),
        "AWS_SECRET_ACCESS_KEY=not-the-secret".to_owned(),
        "FEED_STORAGE_RETRY_TIMES=1".to_owned(),
    ];
    first.extend(temp_settings(tmp.path()));
    first.push(format!(
        "FEEDS={{\"s3://feeds/run1.jl\": {{\"format\": \"jsonlines\"}}, \
         \"s3://{}:WRONGSECRETINURI@feeds/uri-creds.jl\": {{\"format\": \"jsonlines\"}}}}",
        s3.access_key
    ));
    let out = crawl(&srv, &first, &["--name", "shop"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("SignatureDoesNotMatch"), "{stderr}");
    assert!(
        stderr.contains("Error storing jsonlines feed")
            && stderr.contains("s3://***@feeds/uri-creds.jl"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("WRONGSECRETINURI"),
        "a secret in the log: {stderr}"
    );
    assert_eq!(
        stat(&stderr, "feedexport/failed_count/S3FeedStorage"),
        Some(2)
    );
    assert_eq!(
        stat(&stderr, "feedexport/retry_count/S3FeedStorage"),
        Some(2)
    );
    let kept = kept_batches(tmp.path());
    assert_eq!(kept.len(), 2, "both batches kept: {kept:?}");
    let kept_run1: Vec<String> = kept
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("kept batch"))
        .filter(|t| !t.is_empty())
        .collect();
    assert!(s3.objects().is_empty());

    let mut second = s3.settings();
    second.extend(temp_settings(tmp.path()));
    second.push(feeds_setting(
        "s3://feeds/run2.jl",
        r#"{"format": "jsonlines"}"#,
    ));
    let out = crawl(&srv, &second, &["--name", "shop"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Uploading a batch an earlier run left"),
        "{stderr}"
    );
    let objects = s3.objects();
    let keys: Vec<&String> = objects.keys().collect();
    assert_eq!(keys, ["run1.jl", "run2.jl"], "{stderr}");
    let run1 = String::from_utf8_lossy(&objects["run1.jl"].1).into_owned();
    assert!(kept_run1.contains(&run1), "run1.jl is the kept batch");
    assert_eq!(
        urls(&run1).len(),
        urls(&String::from_utf8_lossy(&objects["run2.jl"].1)).len()
    );
    // The batch with wrong credentials in its URI failed again and is still kept.
    assert_eq!(
        stat(&stderr, "feedexport/failed_count/S3FeedStorage"),
        Some(1)
    );
    assert_eq!(
        stat(&stderr, "feedexport/success_count/S3FeedStorage"),
        Some(2)
    );
    assert_eq!(kept_batches(tmp.path()).len(), 1);
}

/// The server is down when the batches close: each upload is retried with backoff
/// and succeeds once the server is back; nothing is lost or kept.
#[test]
fn uploads_are_retried_until_the_server_comes_back() {
    let port = free_port();
    let srv = fixture(300);
    let tmp = TempDir::new("feeds-s3-down").expect("temp dir");
    let mut settings = vec![
        format!("AWS_ENDPOINT_URL=http://127.0.0.1:{port}"),
        "AWS_ACCESS_KEY_ID=any".to_owned(),
        "AWS_SECRET_ACCESS_KEY=any".to_owned(),
        format!("FEED_TEMPDIR={}", tmp.path().display()),
        "FEED_STORAGE_RETRY_TIMES=12".to_owned(),
        "FEED_STORAGE_RETRY_BACKOFF=0.25".to_owned(),
    ];
    settings.push(feeds_setting(
        "s3://feeds/part-%(batch_id)d.jl",
        r#"{"format": "jsonlines", "batch_item_count": 100}"#,
    ));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trawl"));
    cmd.args(["crawl", &srv.url("/index.html"), "--same-domain"]);
    for s in &settings {
        cmd.args(["-s", s]);
    }
    let mut child = cmd
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("trawl starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut log = String::new();
    for line in lines.by_ref() {
        let line = line.expect("a log line");
        log.push_str(&line);
        log.push('\n');
        if line.contains("failed (attempt 1 of 13)") {
            break;
        }
    }
    assert!(log.contains("failed (attempt 1 of 13)"), "{log}");
    let s3 = S3Server::start_with(port, &["--open"]);
    for line in lines {
        log.push_str(&line.expect("a log line"));
        log.push('\n');
    }
    assert!(child.wait().expect("trawl ends").success(), "{log}");
    let objects = s3.objects();
    let total: usize = objects
        .values()
        .map(|(_, b)| urls(&String::from_utf8_lossy(b)).len())
        .sum();
    let scraped = stat(&log, "item_scraped_count").expect("item_scraped_count");
    assert_eq!(total as i64, scraped, "{log}");
    assert!(objects.len() >= 3, "{objects:?}");
    assert_eq!(
        stat(&log, "feedexport/success_count/S3FeedStorage"),
        Some(objects.len() as i64)
    );
    assert_eq!(stat(&log, "feedexport/failed_count/S3FeedStorage"), None);
    assert!(stat(&log, "feedexport/retry_count/S3FeedStorage").unwrap_or(0) >= 1);
    assert!(kept_batches(tmp.path()).is_empty());
}

/// No credentials anywhere: the crawl does not start.
#[test]
fn an_s3_feed_without_credentials_is_refused_at_start_up() {
    let srv = fixture(5);
    let out = crawl(&srv, &[], &["-o", "s3://feeds/items.jl"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("no AWS credentials"), "{stderr}");
    assert_eq!(srv.stats().requests(), 0, "nothing fetched");
}

/// A file above the 8 MiB threshold goes up in 8 MiB parts (a 17 MB file: three
/// parts, the ETag of a multipart object), byte for byte.
#[test]
fn a_feed_above_16_mb_goes_up_in_parts() {
    use trawl::client::http::{HttpClient, HttpClientConfig};
    use trawl::client::s3::{S3Client, S3Config};
    use trawl::proto::sigv4::Credentials;

    let s3 = S3Server::start(0);
    let tmp = TempDir::new("feeds-s3-multipart").expect("temp dir");
    let path = tmp.join("big.jl");
    let mut data = Vec::with_capacity(17_000_000);
    let mut n = 0u64;
    while data.len() < 17_000_000 {
        data.extend_from_slice(
            format!(
                "{{\"n\": {n}, \"pad\": \"{}\"}}\n",
                "x".repeat(n as usize % 200)
            )
            .as_bytes(),
        );
        n += 1;
    }
    std::fs::write(&path, &data).expect("write");
    let mut reactor = trawl::reactor::Reactor::new().expect("reactor");
    let http = HttpClient::new(&reactor.handle(), HttpClientConfig::new().expect("config"));
    let mut config = S3Config::new(Credentials {
        access_key: s3.access_key.clone(),
        secret_key: s3.secret_key.clone(),
        session_token: None,
    });
    config.endpoint = Some(url::Url::parse(&s3.endpoint()).expect("url"));
    let client = S3Client::new(http, reactor.handle().clock().clone(), config);
    let d = client.upload_file(path, "feeds", "big/items.jl");
    reactor.run_until(&d).expect("the upload ends");
    assert!(d.take_result().expect("fired").is_ok());
    let objects = s3.objects();
    let (etag, body) = &objects["big/items.jl"];
    assert!(etag.ends_with("-3\""), "a three-part upload: {etag}");
    assert!(body == &data, "the object is the file");
}

/// `FILES_STORE = s3://bucket/prefix/`: the files pipeline stores through the same S3
/// client (objects named as on a disk, the MD5 as the object's ETag), and a second run
/// finds them there (`uptodate`, the checksum from the ETag).
#[test]
fn the_files_pipeline_stores_to_s3() {
    use serde_json::json;
    use trawl::crawl::Output;
    use util::live::{LiveSpider, crawl, get};

    let s3 = S3Server::start(0);
    let srv = fixture(5);
    let base = srv.url("");
    let base = base.trim_end_matches('/').to_owned();
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
        crawl(
            spider,
            &[
                ("ITEM_PIPELINES", json!({"trawl.FilesPipeline": 1})),
                ("FILES_STORE", json!("s3://feeds/media/")),
                ("AWS_ENDPOINT_URL", json!(s3.endpoint())),
                ("AWS_ACCESS_KEY_ID", json!(s3.access_key)),
                ("AWS_SECRET_ACCESS_KEY", json!(s3.secret_key)),
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
    let tmp = TempDir::new("files-s3").expect("temp dir");
    let first = run(&tmp.join("first.jl"));
    assert_eq!(first.len(), 2, "{first:?}");
    let objects = s3.objects();
    for f in &first {
        assert_eq!(f["status"], "downloaded");
        let key = format!("media/{}", f["path"].as_str().expect("path"));
        let (etag, body) = objects
            .get(&key)
            .unwrap_or_else(|| panic!("{key} in {objects:?}"));
        assert_eq!(
            etag.trim_matches('"'),
            f["checksum"].as_str().expect("checksum")
        );
        let name = f["url"]
            .as_str()
            .expect("url")
            .rsplit('/')
            .next()
            .expect("name");
        assert_eq!(Some(body.clone()), trawl::testing::media::file_body(name));
    }
    let second = run(&tmp.join("second.jl"));
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(b["status"], "uptodate");
        assert_eq!(a["checksum"], b["checksum"]);
        assert_eq!(a["path"], b["path"]);
    }
}

/// A JOBDIR job of the fixture site with batches of 100 to S3, killed (SIGKILL) once
/// the server has answered 1,500 requests.
struct KilledJob {
    s3: S3Server,
    srv: FixtureServer,
    tmp: TempDir,
    settings: Vec<String>,
}

impl KilledJob {
    fn run(name: &str, extra: &[&str]) -> Self {
        let s3 = S3Server::start(0);
        let srv = FixtureServer::start(FixtureOptions {
            pages: 3000,
            record: true,
            ..FixtureOptions::default()
        })
        .expect("fixture server");
        let tmp = TempDir::new(name).expect("temp dir");
        let mut settings = s3.settings();
        settings.push("CONCURRENT_REQUESTS=8".to_owned());
        settings.push(feeds_setting(
            "s3://feeds/job/part-%(batch_id)04d.jl",
            r#"{"format": "jsonlines", "batch_item_count": 100}"#,
        ));
        settings.extend(extra.iter().map(|s| (*s).to_owned()));
        let job = Self {
            s3,
            srv,
            tmp,
            settings,
        };
        let mut victim = job.command().spawn().expect("trawl starts");
        let started = std::time::Instant::now();
        while job.srv.stats().requests() < 1500 {
            assert!(
                started.elapsed().as_secs() < 120,
                "the crawl did not get going"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        victim.kill().expect("SIGKILL");
        let _ = victim.wait();
        job
    }

    fn jobdir(&self) -> PathBuf {
        self.tmp.join("job")
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_trawl"));
        cmd.args([
            "crawl",
            &self.srv.url("/index.html"),
            "--same-domain",
            "--jobdir",
        ])
        .arg(self.jobdir());
        for s in &self.settings {
            cmd.args(["-s", s]);
        }
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        cmd
    }

    /// Runs the job again to its end; its log.
    fn resume(&self) -> String {
        let resumed = self.command().output().expect("the resume runs");
        let log = String::from_utf8_lossy(&resumed.stderr).into_owned();
        assert!(resumed.status.success(), "{log}");
        assert_eq!(
            stat(&log, "jobdir/rolled_back_to_sync"),
            None,
            "a process kill leaves the feed as long as the journal says: {log}"
        );
        log
    }

    /// The batch the resume continued (its log's "Resuming feed" line).
    fn resumed_batch(log: &str) -> u64 {
        log.split("bytes of batch ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no resume line: {log}"))
    }

    /// The bucket holds consecutive full batches and, in them, every item of a solo
    /// crawl exactly once.
    fn assert_holds_the_solo_crawl(&self) {
        let objects = self.s3.objects();
        let keys: Vec<&String> = objects.keys().collect();
        let expected: Vec<String> = (1..=keys.len())
            .map(|i| format!("job/part-{i:04}.jl"))
            .collect();
        assert_eq!(
            keys,
            expected.iter().collect::<Vec<_>>(),
            "consecutive batches"
        );
        let got: Vec<String> = objects
            .values()
            .flat_map(|(_, body)| urls(&String::from_utf8_lossy(body)))
            .collect();
        for (key, (_, body)) in objects.iter().rev().skip(1) {
            assert_eq!(
                urls(&String::from_utf8_lossy(body)).len(),
                100,
                "{key} is full"
            );
        }
        let reference_path = self.tmp.join("solo.jl");
        let solo = crawl(
            &self.srv,
            &[],
            &["-o", reference_path.to_str().expect("utf-8")],
        );
        assert!(solo.status.success());
        let reference = urls(&std::fs::read_to_string(&reference_path).expect("solo feed"));
        // `?a=1&b=2` and `?b=2&a=1` are one page: which spelling is fetched depends on
        // which link is found first.
        let normalize = |u: &String| match u.split_once('?') {
            Some((p, q)) => {
                let mut args: Vec<&str> = q.split('&').collect();
                args.sort_unstable();
                format!("{p}?{}", args.join("&"))
            }
            None => u.clone(),
        };
        let mut got: Vec<String> = got.iter().map(normalize).collect();
        let mut reference: Vec<String> = reference.iter().map(normalize).collect();
        got.sort();
        reference.sort();
        if got != reference {
            // Kept with the job for inspection: every object as the server holds it.
            for (key, (_, body)) in &objects {
                let _ = std::fs::write(self.tmp.join(key.replace('/', "_")), body);
            }
            panic!(
                "the same items, each once: {}",
                multiset_difference(&got, &reference)
            );
        }
    }
}

/// A JOBDIR job with batches of 100 to S3, killed (SIGKILL) mid-crawl and resumed:
/// the resume continues from the journal's last commit (a process kill loses no
/// committed byte: no fall-back to the last `SYNC`), every closed batch is uploaded (a
/// batch whose upload the kill cut off goes up when the job resumes), the open batch is
/// re-made from the journal, and the objects hold every item of a solo crawl exactly
/// once, in consecutive batches.
#[test]
fn a_job_killed_mid_crawl_uploads_every_batch_once() {
    let job = KilledJob::run("feeds-s3-job", &[]);
    let log = job.resume();
    let batch = KilledJob::resumed_batch(&log);
    assert!(batch > 1, "the kill came after the first batch: {log}");
    job.assert_holds_the_solo_crawl();
}

/// A resume behind the killed run — the journal put back to its commit at item 350,
/// as a fall-back to the last `SYNC` after a power cut puts it — uploads the three
/// batches closed before that point from what the killed run left, and makes the
/// later ones again: the killed run's copies of batches 5 and on are removed, never
/// uploaded (they would race the resume's own, which reuse their files).
#[test]
fn a_job_resumed_behind_its_killed_run_makes_the_later_batches_again() {
    // No durable point before the kill: every closed batch is still in the JOBDIR.
    let job = KilledJob::run("feeds-s3-behind", &["JOBDIR_FSYNC=never"]);
    let left = std::fs::read_dir(job.jobdir().join("feeds"))
        .expect("the job's batches")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    assert!(left > 6, "the killed run made more than 6 batches: {left}");
    let items = util::journal::cut_at_items(&job.jobdir().join("journal"), 350);
    assert!((350..400).contains(&items), "cut in batch 4: {items}");
    let log = job.resume();
    assert_eq!(KilledJob::resumed_batch(&log), 4, "{log}");
    assert_eq!(
        log.matches("Uploading a batch an earlier run left").count(),
        3,
        "batches 1 to 3, closed before the point the job resumes from: {log}"
    );
    assert_eq!(
        stat(&log, "feedexport/discarded_batches"),
        Some(i64::try_from(left - 4).expect("small")),
        "the killed run's batches 5 and on: {log}"
    );
    job.assert_holds_the_solo_crawl();
}

/// What two sorted lists differ by, as a multiset: each one's surplus (a few).
fn multiset_difference(got: &[String], want: &[String]) -> String {
    let count = |v: &[String]| {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for u in v {
            *m.entry(u.clone()).or_default() += 1;
        }
        m
    };
    let (g, w) = (count(got), count(want));
    let surplus = |a: &BTreeMap<String, usize>, b: &BTreeMap<String, usize>| {
        a.iter()
            .filter_map(|(u, n)| {
                let m = b.get(u).copied().unwrap_or(0);
                (*n > m).then(|| format!("{u} ×{n} (not ×{m})"))
            })
            .take(5)
            .collect::<Vec<_>>()
    };
    format!(
        "the feed has more of {:?}; the solo crawl has more of {:?}",
        surplus(&g, &w),
        surplus(&w, &g)
    )
}
