//! `DOWNLOADER_CLIENT_TLS_CIPHERS`: an OpenSSL cipher list (Scrapy passes it to
//! OpenSSL's `SSL_CTX_set_cipher_list`) read into the TLS 1.2 suites rustls offers, in
//! OpenSSL's order. As in OpenSSL, the list governs TLS 1.2 only: TLS 1.3 suites are
//! configured apart and always offered.
//!
//! The language is OpenSSL's: entries separated by `:`, `,`, `;` or spaces; a cipher
//! name or an alias (`HIGH`, `ECDHE`, `aRSA`, `AESGCM`, ...; `A+B` both) adds the
//! matching suites not yet listed, in OpenSSL's default order; `-X` removes them (they
//! may be added again), `!X` removes them for good, `+X` moves them to the end;
//! `@STRENGTH` sorts by key length, `@SECLEVEL=n` is accepted. rustls has six TLS 1.2
//! suites (ECDHE with AES-GCM or ChaCha20-Poly1305, RSA or ECDSA certificates); names
//! and aliases of OpenSSL's other suites match none of them, so a list naming only those
//! leaves TLS 1.3 alone — where OpenSSL matches nothing at all, it is an error, as
//! OpenSSL's "no cipher match". Checked against pyOpenSSL's answers
//! (`tests/data/tls_ciphers/`).

use rustls::SupportedCipherSuite;
use rustls::crypto::ring::cipher_suite as suites;

/// One TLS 1.2 suite rustls has: OpenSSL's name, the aliases that match it, its key
/// length for `@STRENGTH`.
struct Suite {
    name: &'static str,
    aliases: &'static [&'static str],
    bits: u16,
    suite: SupportedCipherSuite,
}

/// Aliases every rustls TLS 1.2 suite answers to.
const COMMON: &[&str] = &[
    "ALL", "DEFAULT", "HIGH", "TLSv1.2", "ECDHE", "EECDH", "kECDHE", "kEECDH",
];

/// rustls's TLS 1.2 suites in OpenSSL's default order (`openssl ciphers -V DEFAULT`).
fn table() -> [Suite; 6] {
    [
        Suite {
            name: "ECDHE-ECDSA-AES256-GCM-SHA384",
            aliases: &["aECDSA", "ECDSA", "AES", "AES256", "AESGCM"],
            bits: 256,
            suite: suites::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        },
        Suite {
            name: "ECDHE-RSA-AES256-GCM-SHA384",
            aliases: &["aRSA", "AES", "AES256", "AESGCM"],
            bits: 256,
            suite: suites::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        },
        Suite {
            name: "ECDHE-ECDSA-CHACHA20-POLY1305",
            aliases: &["aECDSA", "ECDSA", "CHACHA20"],
            bits: 256,
            suite: suites::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        },
        Suite {
            name: "ECDHE-RSA-CHACHA20-POLY1305",
            aliases: &["aRSA", "CHACHA20"],
            bits: 256,
            suite: suites::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        },
        Suite {
            name: "ECDHE-ECDSA-AES128-GCM-SHA256",
            aliases: &["aECDSA", "ECDSA", "AES", "AES128", "AESGCM"],
            bits: 128,
            suite: suites::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        },
        Suite {
            name: "ECDHE-RSA-AES128-GCM-SHA256",
            aliases: &["aRSA", "AES", "AES128", "AESGCM"],
            bits: 128,
            suite: suites::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        },
    ]
}

/// Aliases and names that match OpenSSL suites rustls lacks (DHE, static RSA, PSK,
/// CBC, CCM, CAMELLIA, ARIA, NULL...): such an entry is valid and adds nothing here.
const OTHER_OPENSSL: &[&str] = &[
    "DH",
    "DHE",
    "EDH",
    "kDHE",
    "kEDH",
    "ADH",
    "AECDH",
    "RSA",
    "kRSA",
    "aDSS",
    "DSS",
    "PSK",
    "kPSK",
    "aPSK",
    "ECDHEPSK",
    "DHEPSK",
    "RSAPSK",
    "kECDHEPSK",
    "kDHEPSK",
    "kRSAPSK",
    "SRP",
    "kSRP",
    "aSRP",
    "SHA",
    "SHA1",
    "SHA256",
    "SHA384",
    "MD5",
    "CAMELLIA",
    "CAMELLIA128",
    "CAMELLIA256",
    "ARIA",
    "ARIA128",
    "ARIA256",
    "ARIAGCM",
    "AESCCM",
    "AESCCM8",
    "NULL",
    "eNULL",
    "aNULL",
    "MEDIUM",
    "COMPLEMENTOFALL",
    "COMPLEMENTOFDEFAULT",
    "AES256-SHA",
    "AES128-SHA",
    "AES256-SHA256",
    "AES128-SHA256",
    "AES256-GCM-SHA384",
    "AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-SHA384",
    "ECDHE-RSA-AES256-SHA384",
    "ECDHE-ECDSA-AES128-SHA256",
    "ECDHE-RSA-AES128-SHA256",
    "ECDHE-ECDSA-AES256-SHA",
    "ECDHE-RSA-AES256-SHA",
    "ECDHE-ECDSA-AES128-SHA",
    "ECDHE-RSA-AES128-SHA",
    "DHE-RSA-AES256-GCM-SHA384",
    "DHE-RSA-AES128-GCM-SHA256",
    "DHE-RSA-CHACHA20-POLY1305",
    "DHE-RSA-AES256-SHA256",
    "DHE-RSA-AES128-SHA256",
    "DHE-RSA-AES256-SHA",
    "DHE-RSA-AES128-SHA",
    "ECDHE-ECDSA-AES256-CCM",
    "ECDHE-ECDSA-AES128-CCM",
    "ECDHE-ECDSA-AES256-CCM8",
    "ECDHE-ECDSA-AES128-CCM8",
    "CAMELLIA256-SHA",
    "CAMELLIA128-SHA",
    "NULL-SHA",
    "NULL-MD5",
    "NULL-SHA256",
];

fn matches(suite: &Suite, term: &str) -> bool {
    term.split('+')
        .all(|part| part == suite.name || COMMON.contains(&part) || suite.aliases.contains(&part))
}

fn known_elsewhere(table: &[Suite], term: &str) -> bool {
    term.split('+').all(|part| {
        OTHER_OPENSSL.contains(&part)
            || COMMON.contains(&part)
            || table
                .iter()
                .any(|s| s.name == part || s.aliases.contains(&part))
    })
}

/// The TLS 1.2 suites `cipher_list` selects, in order (possibly none: TLS 1.3 only).
///
/// # Errors
///
/// The list matches no cipher at all, OpenSSL's "no cipher match".
pub fn tls12_suites(cipher_list: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    let table = table();
    let mut active: Vec<usize> = Vec::new();
    let mut killed = [false; 6];
    // Whether an added entry matched some OpenSSL suite rustls lacks (kept apart, as
    // OpenSSL would still have ciphers for it).
    let mut others_added = false;
    for entry in cipher_list
        .split([':', ',', ';', ' '])
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        if entry == "@STRENGTH" {
            active.sort_by_key(|&i| std::cmp::Reverse(table[i].bits));
            continue;
        }
        if entry.starts_with("@SECLEVEL=") {
            continue;
        }
        let (op, term) = match entry.as_bytes()[0] {
            b'!' | b'-' | b'+' => (entry.as_bytes()[0], &entry[1..]),
            _ => (b'a', entry),
        };
        let hits: Vec<usize> = (0..table.len())
            .filter(|&i| matches(&table[i], term))
            .collect();
        match op {
            b'!' => {
                for &i in &hits {
                    killed[i] = true;
                }
                active.retain(|i| !hits.contains(i));
                if term.split('+').any(|p| COMMON.contains(&p)) {
                    others_added = false;
                }
            }
            b'-' => active.retain(|i| !hits.contains(i)),
            b'+' => {
                let (moved, kept): (Vec<usize>, Vec<usize>) =
                    active.iter().partition(|i| hits.contains(i));
                active = kept;
                active.extend(moved);
            }
            _ => {
                for i in hits {
                    if !killed[i] && !active.contains(&i) {
                        active.push(i);
                    }
                }
                if known_elsewhere(&table, term)
                    && !term.split('+').all(|p| table.iter().any(|s| s.name == p))
                {
                    others_added = true;
                }
            }
        }
    }
    if active.is_empty() && !others_added {
        return Err(format!(
            "DOWNLOADER_CLIENT_TLS_CIPHERS {cipher_list:?} matches no cipher (OpenSSL: no cipher match)"
        ));
    }
    Ok(active.into_iter().map(|i| table[i].suite).collect())
}

/// OpenSSL's name for one of rustls's TLS 1.2 suites (for logs and tests).
pub fn openssl_name(suite: SupportedCipherSuite) -> Option<&'static str> {
    table()
        .into_iter()
        .find(|s| s.suite.suite() == suite.suite())
        .map(|s| s.name)
}
