//! TLS configuration with rustls on the `ring` provider: client configs (webpki roots by
//! default, a custom root store, or verification off) with ALPN `http/1.1`, and server
//! configs from PEM for the fixture server.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

/// A TLS setup problem (bad PEM, no usable key...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSetupError(pub String);

impl fmt::Display for TlsSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TLS setup failed: {}", self.0)
    }
}

impl std::error::Error for TlsSetupError {}

/// The protocol versions between `min` and `max` (Scrapy's names: `TLSv1.0` ...
/// `TLSv1.3`, `None` for no bound) that rustls speaks: TLS 1.2 and 1.3.
///
/// # Errors
///
/// An unknown name (Scrapy's message), or no version rustls speaks in the range.
pub fn protocol_versions(
    min: Option<&str>,
    max: Option<&str>,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    let rank = |setting: &str, v: Option<&str>| -> Result<Option<u8>, String> {
        match v {
            None => Ok(None),
            Some("TLSv1.0") => Ok(Some(10)),
            Some("TLSv1.1") => Ok(Some(11)),
            Some("TLSv1.2") => Ok(Some(12)),
            Some("TLSv1.3") => Ok(Some(13)),
            Some(other) => Err(format!("Unknown {setting} value: {other}")),
        }
    };
    let lo = rank("DOWNLOAD_TLS_MIN_VERSION", min)?.unwrap_or(0);
    let hi = rank("DOWNLOAD_TLS_MAX_VERSION", max)?.unwrap_or(u8::MAX);
    let versions: Vec<&'static rustls::SupportedProtocolVersion> =
        [(12, &rustls::version::TLS12), (13, &rustls::version::TLS13)]
            .into_iter()
            .filter(|(r, _)| (lo..=hi).contains(r))
            .map(|(_, v)| v)
            .collect();
    if versions.is_empty() {
        return Err(format!(
            "no TLS version from {} to {} that trawl speaks (rustls: TLS 1.2 and 1.3)",
            min.unwrap_or("any"),
            max.unwrap_or("any")
        ));
    }
    Ok(versions)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn with_alpn(mut config: ClientConfig) -> Arc<ClientConfig> {
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Certificates verified against the Mozilla root set (`webpki-roots`).
///
/// # Errors
///
/// The crypto provider refused the configuration (not expected with `ring`).
pub fn client_config_webpki() -> Result<Arc<ClientConfig>, TlsSetupError> {
    let roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    client_config_with_roots(roots)
}

/// Certificates verified against `roots` only.
///
/// # Errors
///
/// The crypto provider refused the configuration (not expected with `ring`).
pub fn client_config_with_roots(roots: RootCertStore) -> Result<Arc<ClientConfig>, TlsSetupError> {
    client_config_with_roots_and_versions(roots, rustls::DEFAULT_VERSIONS)
}

fn client_config_with_roots_and_versions(
    roots: RootCertStore,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Result<Arc<ClientConfig>, TlsSetupError> {
    client_config_from(provider(), roots, versions)
}

/// The ring provider offering the TLS 1.3 suites and `tls12` (in that order of
/// preference), or all of its suites for `None`.
fn provider_with(
    tls12: Option<&[rustls::SupportedCipherSuite]>,
) -> Arc<rustls::crypto::CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    if let Some(tls12) = tls12 {
        p.cipher_suites
            .retain(|s| matches!(s, rustls::SupportedCipherSuite::Tls13(_)));
        p.cipher_suites.extend_from_slice(tls12);
    }
    Arc::new(p)
}

/// The client configs of a crawl's TLS settings: (verifying, not verifying), speaking
/// `versions`, offering the TLS 1.3 suites and `tls12` (all suites for `None`;
/// `DOWNLOADER_CLIENT_TLS_CIPHERS`), trusting the Mozilla roots plus `extra_pem`
/// (`DOWNLOAD_TLS_CA_FILE`).
///
/// # Errors
///
/// A bad PEM; versions and suites rustls cannot combine (TLS 1.2 only with no TLS 1.2
/// suite).
pub fn client_configs(
    versions: &[&'static rustls::SupportedProtocolVersion],
    tls12: Option<&[rustls::SupportedCipherSuite]>,
    extra_pem: Option<&[u8]>,
) -> Result<(Arc<ClientConfig>, Arc<ClientConfig>), TlsSetupError> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(pem) = extra_pem {
        add_pem_roots(&mut roots, pem)?;
    }
    let verify = client_config_from(provider_with(tls12), roots, versions)?;
    let no_verify = no_verify_config(provider_with(tls12), versions)?;
    Ok((verify, no_verify))
}

fn client_config_from(
    provider: Arc<rustls::crypto::CryptoProvider>,
    roots: RootCertStore,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| TlsSetupError(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(with_alpn(config))
}

/// Certificates verified against the PEM certificates in `pem` (a test CA, say).
///
/// # Errors
///
/// The PEM holds no certificate, or one rustls rejects as a root.
pub fn client_config_with_pem_roots(pem: &[u8]) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let mut roots = RootCertStore::empty();
    add_pem_roots(&mut roots, pem)?;
    client_config_with_roots(roots)
}

/// Adds every certificate in `pem` to `roots`.
///
/// # Errors
///
/// Bad PEM, a certificate rustls rejects as a root, or none at all.
fn add_pem_roots(roots: &mut RootCertStore, pem: &[u8]) -> Result<(), TlsSetupError> {
    let mut count = 0;
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| TlsSetupError(format!("bad certificate PEM: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| TlsSetupError(format!("unusable root certificate: {e}")))?;
        count += 1;
    }
    if count == 0 {
        return Err(TlsSetupError("no certificate in the root PEM".into()));
    }
    Ok(())
}

/// No certificate verification at all (`verify=False`): the handshake signatures are
/// still checked, but any certificate for any name is accepted. Scrapy's default
/// context factory does this; trawl only does it when asked.
///
/// # Errors
///
/// The crypto provider refused the configuration (not expected with `ring`).
pub fn client_config_dangerous_no_verify() -> Result<Arc<ClientConfig>, TlsSetupError> {
    client_config_dangerous_no_verify_with_versions(rustls::DEFAULT_VERSIONS)
}

/// [`client_config_dangerous_no_verify`] speaking only `versions`.
///
/// # Errors
///
/// The crypto provider refused the configuration.
pub fn client_config_dangerous_no_verify_with_versions(
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Result<Arc<ClientConfig>, TlsSetupError> {
    no_verify_config(provider(), versions)
}

fn no_verify_config(
    provider: Arc<rustls::crypto::CryptoProvider>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let verifier = Arc::new(NoVerification(provider.clone()));
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| TlsSetupError(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(with_alpn(config))
}

/// A server config from a PEM certificate chain and a PEM private key.
///
/// # Errors
///
/// Bad PEM, no certificate, no key, or a key that does not match.
pub fn server_config_from_pem(
    cert_chain: &[u8],
    key: &[u8],
) -> Result<Arc<ServerConfig>, TlsSetupError> {
    server_config_from_pem_with_versions(cert_chain, key, rustls::DEFAULT_VERSIONS)
}

/// [`server_config_from_pem`] speaking only `versions`.
///
/// # Errors
///
/// As [`server_config_from_pem`].
pub fn server_config_from_pem_with_versions(
    cert_chain: &[u8],
    key: &[u8],
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Result<Arc<ServerConfig>, TlsSetupError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_chain)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsSetupError(format!("bad certificate PEM: {e}")))?;
    if certs.is_empty() {
        return Err(TlsSetupError("no certificate in the PEM chain".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|e| TlsSetupError(format!("bad key PEM: {e}")))?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .map_err(|e| TlsSetupError(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| TlsSetupError(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// `config` issuing stateless session tickets (what most large servers do) instead of
/// remembering sessions in its 256-entry cache: any number of clients and hosts can
/// resume.
///
/// # Errors
///
/// The ticket key could not be made.
pub fn with_session_tickets(config: &ServerConfig) -> Result<Arc<ServerConfig>, TlsSetupError> {
    let mut config = config.clone();
    config.ticketer =
        rustls::crypto::ring::Ticketer::new().map_err(|e| TlsSetupError(e.to_string()))?;
    Ok(Arc::new(config))
}

/// Parses a host name or IP literal for SNI and verification.
///
/// # Errors
///
/// The name is not a valid DNS name or IP address.
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsSetupError> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned())
        .map_err(|e| TlsSetupError(format!("invalid server name {host:?}: {e}")))
}

#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
