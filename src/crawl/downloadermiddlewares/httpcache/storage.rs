//! [`FilesystemCacheStorage`] (`trawl.FilesystemCacheStorage`): one directory an entry,
//! Scrapy's file names, written into a temporary directory and renamed into place.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::{Value, json};

use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::crawl::http::response::ResponseBuilder;
use crate::proto::Headers;

/// The filesystem storage.
#[derive(Debug, Clone)]
pub struct FilesystemCacheStorage {
    dir: PathBuf,
    gzip: bool,
    expiration: f64,
}

fn raw_headers(h: &Headers) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in h.iter() {
        out.extend_from_slice(n);
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn parse_raw_headers(raw: &[u8]) -> Headers {
    let mut h = Headers::new();
    for line in raw.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(colon) = line.iter().position(|&b| b == b':') {
            let name = &line[..colon];
            let value = line[colon + 1..].trim_ascii();
            if !name.is_empty() {
                h.append(name, value);
            }
        }
    }
    h
}

impl FilesystemCacheStorage {
    /// A storage under `dir` (already including the spider name).
    pub fn new(dir: PathBuf, gzip: bool, expiration: f64) -> Self {
        Self {
            dir,
            gzip,
            expiration,
        }
    }

    /// The entry directory for a fingerprint.
    pub fn entry_dir(&self, fp: &[u8; 20]) -> PathBuf {
        let h = crate::util::to_hex(fp);
        self.dir.join(&h[..2]).join(h)
    }

    fn write_file(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        let mut f = fs::File::create(path)?;
        if self.gzip {
            let mut enc = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
            enc.write_all(data)?;
            enc.finish()?.sync_data()
        } else {
            f.write_all(data)?;
            f.sync_data()
        }
    }

    fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let raw = fs::read(path)?;
        if self.gzip {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&raw[..]).read_to_end(&mut out)?;
            Ok(out)
        } else {
            Ok(raw)
        }
    }

    /// Stores `response` for `request` at wall time `now`.
    ///
    /// # Errors
    ///
    /// The filesystem refused.
    pub fn store(
        &self,
        fp: &[u8; 20],
        request: &Request,
        response: &Response,
        now: f64,
    ) -> std::io::Result<()> {
        let final_dir = self.entry_dir(fp);
        let parent = final_dir.parent().unwrap_or(&self.dir).to_path_buf();
        fs::create_dir_all(&parent)?;
        let tmp = parent.join(format!(
            ".{}.tmp-{}",
            crate::util::to_hex(fp),
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir(&tmp)?;
        let meta = json!({
            "url": request.url().as_str(),
            "method": request.method().as_str(),
            "status": response.status(),
            "response_url": response.url().as_str(),
            "timestamp": now,
        });
        self.write_file(&tmp.join("meta"), meta.to_string().as_bytes())?;
        self.write_file(
            &tmp.join("request_headers"),
            &raw_headers(request.headers()),
        )?;
        self.write_file(&tmp.join("request_body"), request.body())?;
        self.write_file(
            &tmp.join("response_headers"),
            &raw_headers(response.headers()),
        )?;
        self.write_file(&tmp.join("response_body"), response.body())?;
        let _ = fs::remove_dir_all(&final_dir);
        fs::rename(&tmp, &final_dir)
    }

    /// The cached response for `request`, if there is a fresh-enough entry.
    ///
    /// # Errors
    ///
    /// The entry exists but cannot be read (corrupt): callers treat it as a miss.
    pub fn retrieve(
        &self,
        fp: &[u8; 20],
        request: &Request,
        now: f64,
    ) -> Result<Option<Response>, String> {
        let dir = self.entry_dir(fp);
        let meta = match self.read_file(&dir.join("meta")) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        };
        let meta: Value =
            serde_json::from_slice(&meta).map_err(|e| format!("{}/meta: {e}", dir.display()))?;
        let timestamp = meta.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0);
        if self.expiration > 0.0 && now - timestamp > self.expiration {
            return Ok(None);
        }
        let status = meta
            .get("status")
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok())
            .ok_or_else(|| format!("{}/meta: no status", dir.display()))?;
        let url = meta
            .get("response_url")
            .and_then(Value::as_str)
            .and_then(|u| url::Url::parse(u).ok())
            .unwrap_or_else(|| request.url().clone());
        let headers = self
            .read_file(&dir.join("response_headers"))
            .map_err(|e| format!("{}/response_headers: {e}", dir.display()))?;
        let body = self
            .read_file(&dir.join("response_body"))
            .map_err(|e| format!("{}/response_body: {e}", dir.display()))?;
        Ok(Some(
            ResponseBuilder {
                url,
                status,
                headers: parse_raw_headers(&headers),
                body: Bytes::from(body),
                request: request.clone(),
                flags: vec!["cached".into()],
                ip: None,
                protocol: None,
            }
            .build(),
        ))
    }
}

#[cfg(test)]
pub(super) fn fp_of(request: &Request) -> [u8; 20] {
    use crate::crawl::http::fingerprint::{FingerprintOptions, fingerprint};
    fingerprint(request, &FingerprintOptions::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::downloadermiddlewares::httpcache::test_support::{req, resp};

    #[test]
    fn storage_round_trip_gzip_expiry_and_corruption() {
        let tmp = std::env::temp_dir().join(format!("trawl-httpcache-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        for gzip in [false, true] {
            let st = FilesystemCacheStorage::new(tmp.join(format!("g{gzip}")), gzip, 100.0);
            let r = req("http://a.test/page?x=1");
            let fp = fp_of(&r);
            let response = resp(
                203,
                &[
                    ("Content-Type", "text/html"),
                    ("Set-Cookie", "a=1"),
                    ("Set-Cookie", "b=2"),
                ],
            );
            st.store(&fp, &r, &response, 50.0).expect("store");
            let got = st.retrieve(&fp, &r, 60.0).expect("read").expect("hit");
            assert_eq!(got.status(), 203);
            assert_eq!(got.body(), b"body");
            assert_eq!(got.headers().get_all("Set-Cookie").count(), 2);
            assert_eq!(got.flags(), ["cached"]);
            assert!(
                st.retrieve(&fp, &r, 151.0).expect("read").is_none(),
                "expired"
            );
            fs::write(st.entry_dir(&fp).join("meta"), b"\x00garbage").expect("corrupt it");
            assert!(st.retrieve(&fp, &r, 60.0).is_err());
        }
        let _ = fs::remove_dir_all(&tmp);
    }
}
