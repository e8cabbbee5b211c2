//! An S3 client on the reactor, over trawl's own HTTP client: `PutObject`, the
//! multipart upload calls, `HeadObject` and `GetObject`, each signed with AWS
//! Signature Version 4 ([`crate::proto::sigv4`]) and answered with a Deferred. Objects
//! are addressed path-style under `AWS_ENDPOINT_URL` when one is set (MinIO, moto,
//! LocalStack), else virtual-host style (`https://BUCKET.s3.REGION.amazonaws.com/KEY`).
//! [`S3Client::upload_file`] sends a file in one `PUT` up to the multipart threshold
//! and in parts above it, streamed from the disk 64 KiB at a time.

use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::rc::Rc;

use url::Url;

use crate::client::http::{BodyFile, HttpClient, HttpRequest, HttpResponse};
use crate::defer::{Deferred, Failure};
use crate::proto::Headers;
use crate::proto::sigv4::{
    Credentials, Sha256Hasher, SignRequest, amz_timestamp, sha256_hex, sign,
};
use crate::reactor::Clock;

/// Where and as whom the client talks.
#[derive(Debug, Clone)]
pub struct S3Config {
    /// `AWS_ENDPOINT_URL` (path-style addressing), or `None` for AWS itself.
    pub endpoint: Option<Url>,
    /// `AWS_REGION_NAME` (default `us-east-1`).
    pub region: String,
    /// The credentials.
    pub credentials: Credentials,
    /// `FEED_STORAGE_S3_ACL` / `FILES_STORE_S3_ACL`: a canned ACL for new objects.
    pub acl: Option<String>,
    /// Files above this many bytes go up in parts of `part_size` bytes.
    pub multipart_threshold: u64,
    /// The size of an upload part (S3's minimum is 5 MiB, but for the last).
    pub part_size: u64,
    /// Seconds one request may take.
    pub timeout: f64,
}

impl S3Config {
    /// Defaults for `credentials`: `us-east-1`, no endpoint, no ACL, 8 MiB parts above
    /// 8 MiB (boto3's defaults), 60 s per request.
    pub fn new(credentials: Credentials) -> Self {
        Self {
            endpoint: None,
            region: "us-east-1".into(),
            credentials,
            acl: None,
            multipart_threshold: 8 * 1024 * 1024,
            part_size: 8 * 1024 * 1024,
            timeout: 60.0,
        }
    }
}

/// An S3 error answer (or a transport failure), with S3's code when it sent one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Error {
    /// The operation (`PutObject`).
    pub operation: &'static str,
    /// The HTTP status (0: no answer).
    pub status: u16,
    /// S3's error code (`SignatureDoesNotMatch`, `NoSuchBucket`), if any.
    pub code: Option<String>,
    /// S3's message or the transport's error.
    pub message: String,
}

impl fmt::Display for S3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "S3 {} failed", self.operation)?;
        if self.status != 0 {
            write!(f, " with status {}", self.status)?;
        }
        if let Some(code) = &self.code {
            write!(f, " ({code})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for S3Error {}

/// The text of the first `<tag>...</tag>` in an XML answer.
fn xml_text<'a>(body: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = body.find(&open)? + open.len();
    let end = body[start..].find(&format!("</{tag}>"))? + start;
    Some(&body[start..end])
}

/// A key as it goes in a path: every byte but `A-Za-z0-9-_.~/` percent-encoded.
pub fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A request body: bytes, or a range of a file streamed from the disk.
#[derive(Debug, Clone)]
pub enum Body {
    /// In memory.
    Bytes(Vec<u8>),
    /// A file range, hashed and sent 64 KiB at a time.
    File(BodyFile),
}

impl Body {
    /// The SHA-256 of the body, in hex (the signed payload hash).
    fn sha256_hex(&self) -> std::io::Result<String> {
        match self {
            Self::Bytes(b) => Ok(sha256_hex(b)),
            Self::File(f) => {
                let mut file = std::fs::File::open(&f.path)?;
                file.seek(SeekFrom::Start(f.offset))?;
                let mut reader = file.take(f.len);
                let mut hasher = Sha256Hasher::default();
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = reader.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&buf[..n]);
                }
                Ok(hasher.hex())
            }
        }
    }
}

/// The S3 client.
#[derive(Clone)]
pub struct S3Client {
    http: HttpClient,
    clock: Clock,
    config: Rc<S3Config>,
}

impl fmt::Debug for S3Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Client")
            .field("config", &self.config)
            .finish()
    }
}

impl S3Client {
    /// A client on `http` (its reactor), signing with `clock`'s wall time.
    pub fn new(http: HttpClient, clock: Clock, config: S3Config) -> Self {
        Self {
            http,
            clock,
            config: Rc::new(config),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &S3Config {
        &self.config
    }

    /// The URL of `bucket`/`key` with `query` (already encoded).
    ///
    /// # Errors
    ///
    /// The bucket does not make a valid host or URL.
    pub fn object_url(&self, bucket: &str, key: &str, query: &str) -> Result<Url, Failure> {
        let key = encode_key(key.trim_start_matches('/'));
        let q = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        let text = match &self.config.endpoint {
            Some(e) => format!("{}/{bucket}/{key}{q}", e.as_str().trim_end_matches('/')),
            None if self.config.region == "us-east-1" => {
                format!("https://{bucket}.s3.amazonaws.com/{key}{q}")
            }
            None => format!(
                "https://{bucket}.s3.{}.amazonaws.com/{key}{q}",
                self.config.region
            ),
        };
        Url::parse(&text).map_err(|e| Failure::msg(format!("bad S3 URL {text:?}: {e}")))
    }

    /// Sends a signed request; an answer outside 2xx is an [`S3Error`].
    fn send(
        &self,
        operation: &'static str,
        method: &'static str,
        url: Url,
        extra: &[(&str, &str)],
        body: Body,
    ) -> Deferred<HttpResponse> {
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => return crate::defer::fail(Failure::msg(format!("no host in {url}"))),
        };
        let payload = match body.sha256_hex() {
            Ok(p) => p,
            Err(e) => {
                return crate::defer::fail(Failure::new(S3Error {
                    operation,
                    status: 0,
                    code: None,
                    message: format!("cannot read the body: {e}"),
                }));
            }
        };
        let timestamp = amz_timestamp(self.clock.wall_seconds() as i64);
        let signed = sign(
            &SignRequest {
                method,
                host: &host,
                path: url.path(),
                query: url.query().unwrap_or(""),
                headers: extra,
                payload_hash: &payload,
                timestamp: &timestamp,
                region: &self.config.region,
                service: "s3",
            },
            &self.config.credentials,
        );
        let mut req = HttpRequest::get(url);
        req.method = method.into();
        req.timeout = self.config.timeout;
        req.decode_content = false;
        req.maxsize = 64 * 1024 * 1024;
        let mut headers = Headers::new();
        headers.append("Host", &host);
        for (k, v) in extra {
            headers.append(k, v);
        }
        for (k, v) in &signed.headers {
            headers.append(k, v);
        }
        req.headers = headers;
        match body {
            Body::Bytes(b) => req.body = b,
            Body::File(f) => req.body_file = Some(f),
        }
        self.http.request(req).then(move |r| match r {
            Ok(resp) if (200..300).contains(&resp.status) => Ok(resp),
            Ok(resp) => {
                let text = String::from_utf8_lossy(&resp.body);
                Err(Failure::new(S3Error {
                    operation,
                    status: resp.status,
                    code: xml_text(&text, "Code").map(str::to_owned),
                    message: xml_text(&text, "Message")
                        .map_or_else(|| resp.reason.clone(), str::to_owned),
                }))
            }
            Err(f) => Err(Failure::new(S3Error {
                operation,
                status: 0,
                code: None,
                message: f.to_string(),
            })),
        })
    }

    fn acl_header(&self) -> Vec<(&str, &str)> {
        match &self.config.acl {
            Some(acl) => vec![("x-amz-acl", acl.as_str())],
            None => Vec::new(),
        }
    }

    /// `PutObject`.
    pub fn put_object(&self, bucket: &str, key: &str, body: Vec<u8>) -> Deferred<()> {
        self.put_body(bucket, key, Body::Bytes(body))
    }

    /// `PutObject` of a body in memory or streamed from a file.
    pub fn put_body(&self, bucket: &str, key: &str, body: Body) -> Deferred<()> {
        let url = match self.object_url(bucket, key, "") {
            Ok(u) => u,
            Err(f) => return crate::defer::fail(f),
        };
        let acl = self.acl_header();
        self.send("PutObject", "PUT", url, &acl, body).map(|_| ())
    }

    /// `GetObject`: the object's bytes.
    pub fn get_object(&self, bucket: &str, key: &str) -> Deferred<Vec<u8>> {
        match self.object_url(bucket, key, "") {
            Ok(url) => self
                .send("GetObject", "GET", url, &[], Body::Bytes(Vec::new()))
                .map(|r| r.body),
            Err(f) => crate::defer::fail(f),
        }
    }

    /// `HeadObject`: the object's headers (`Last-Modified`, `ETag`).
    pub fn head_object(&self, bucket: &str, key: &str) -> Deferred<Headers> {
        match self.object_url(bucket, key, "") {
            Ok(url) => self
                .send("HeadObject", "HEAD", url, &[], Body::Bytes(Vec::new()))
                .map(|r| r.headers),
            Err(f) => crate::defer::fail(f),
        }
    }

    /// `CreateMultipartUpload`: the upload's id.
    pub fn create_multipart_upload(&self, bucket: &str, key: &str) -> Deferred<String> {
        let url = match self.object_url(bucket, key, "uploads") {
            Ok(u) => u,
            Err(f) => return crate::defer::fail(f),
        };
        let acl = self.acl_header();
        self.send(
            "CreateMultipartUpload",
            "POST",
            url,
            &acl,
            Body::Bytes(Vec::new()),
        )
        .then(|r| {
            let resp = r?;
            let text = String::from_utf8_lossy(&resp.body);
            xml_text(&text, "UploadId")
                .map(str::to_owned)
                .ok_or_else(|| {
                    Failure::msg(format!("CreateMultipartUpload: no UploadId in {text:?}"))
                })
        })
    }

    /// `UploadPart`: the part's ETag.
    pub fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
        body: Body,
    ) -> Deferred<String> {
        let query = format!(
            "partNumber={number}&uploadId={}",
            encode_key(upload_id).replace('/', "%2F")
        );
        let url = match self.object_url(bucket, key, &query) {
            Ok(u) => u,
            Err(f) => return crate::defer::fail(f),
        };
        self.send("UploadPart", "PUT", url, &[], body).then(|r| {
            let resp = r?;
            resp.headers
                .get("etag")
                .map(|e| String::from_utf8_lossy(e).into_owned())
                .ok_or_else(|| Failure::msg("UploadPart: no ETag in the answer"))
        })
    }

    /// `CompleteMultipartUpload` with the parts' `(number, ETag)`.
    pub fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[(u32, String)],
    ) -> Deferred<()> {
        let query = format!("uploadId={}", encode_key(upload_id).replace('/', "%2F"));
        let url = match self.object_url(bucket, key, &query) {
            Ok(u) => u,
            Err(f) => return crate::defer::fail(f),
        };
        let mut xml = String::from("<CompleteMultipartUpload>");
        for (n, etag) in parts {
            xml.push_str(&format!(
                "<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>"
            ));
        }
        xml.push_str("</CompleteMultipartUpload>");
        self.send(
            "CompleteMultipartUpload",
            "POST",
            url,
            &[("Content-Type", "application/xml")],
            Body::Bytes(xml.into_bytes()),
        )
        .then(|r| {
            // S3 may answer 200 with an error in the body.
            let resp = r?;
            let text = String::from_utf8_lossy(&resp.body);
            match xml_text(&text, "Code") {
                Some(code) => Err(Failure::new(S3Error {
                    operation: "CompleteMultipartUpload",
                    status: resp.status,
                    code: Some(code.to_owned()),
                    message: xml_text(&text, "Message").unwrap_or_default().to_owned(),
                })),
                None => Ok(()),
            }
        })
    }

    /// `AbortMultipartUpload`.
    pub fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Deferred<()> {
        let query = format!("uploadId={}", encode_key(upload_id).replace('/', "%2F"));
        match self.object_url(bucket, key, &query) {
            Ok(url) => self
                .send(
                    "AbortMultipartUpload",
                    "DELETE",
                    url,
                    &[],
                    Body::Bytes(Vec::new()),
                )
                .map(|_| ()),
            Err(f) => crate::defer::fail(f),
        }
    }

    /// Uploads the file at `path` to `bucket`/`key`: one `PUT` up to the multipart
    /// threshold, else a multipart upload of `part_size` parts read one at a time (an
    /// upload that fails midway is aborted).
    pub fn upload_file(&self, path: PathBuf, bucket: &str, key: &str) -> Deferred<()> {
        let size = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) => {
                return crate::defer::fail(Failure::msg(format!("{}: {e}", path.display())));
            }
        };
        if size <= self.config.multipart_threshold {
            let body = Body::File(BodyFile {
                path,
                offset: 0,
                len: size,
            });
            return self.put_body(bucket, key, body);
        }
        let upload = Rc::new(Multipart {
            client: self.clone(),
            path,
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            size,
        });
        self.create_multipart_upload(bucket, key)
            .then(move |r| match r {
                Ok(id) => crate::defer::Step::Wait(upload.next_part(id, 1, Vec::new())),
                Err(f) => crate::defer::Step::Done(Err(f)),
            })
    }
}

/// A multipart upload in progress.
struct Multipart {
    client: S3Client,
    path: PathBuf,
    bucket: String,
    key: String,
    size: u64,
}

impl Multipart {
    /// Part `number` (from 1) of the file, as a streamed body.
    fn part(&self, number: u32) -> Body {
        let part = self.client.config.part_size;
        let start = u64::from(number - 1) * part;
        Body::File(BodyFile {
            path: self.path.clone(),
            offset: start,
            len: part.min(self.size.saturating_sub(start)),
        })
    }

    /// Uploads part `number` and the ones after it, then completes the upload.
    fn next_part(
        self: Rc<Self>,
        id: String,
        number: u32,
        mut parts: Vec<(u32, String)>,
    ) -> Deferred<()> {
        let start = u64::from(number - 1) * self.client.config.part_size;
        if start >= self.size {
            let me = self.clone();
            let id2 = id.clone();
            return self
                .client
                .complete_multipart_upload(&self.bucket, &self.key, &id, &parts)
                .then(move |r| me.abort_on_error(r, &id2));
        }
        let body = self.part(number);
        let me = self.clone();
        self.client
            .upload_part(&self.bucket, &self.key, &id, number, body)
            .then(move |r| match r {
                Ok(etag) => {
                    parts.push((number, etag));
                    crate::defer::Step::Wait(me.next_part(id, number + 1, parts))
                }
                Err(f) => crate::defer::Step::Wait(me.abort_on_error(Err(f), &id)),
            })
    }

    /// On an error, aborts the upload (its parts are deleted) and fails with the
    /// error.
    fn abort_on_error(&self, r: Result<(), Failure>, id: &str) -> Deferred<()> {
        match r {
            Ok(()) => crate::defer::succeed(()),
            Err(f) => self
                .client
                .abort_multipart_upload(&self.bucket, &self.key, id)
                .then(move |_| Err::<(), Failure>(f)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_error_bodies() {
        assert_eq!(encode_key("a b/café+1.jl"), "a%20b/caf%C3%A9%2B1.jl");
        let body =
            "<Error><Code>NoSuchBucket</Code><Message>The bucket does not exist</Message></Error>";
        assert_eq!(xml_text(body, "Code"), Some("NoSuchBucket"));
        assert_eq!(xml_text(body, "Missing"), None);
    }
}
