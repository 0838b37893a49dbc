//! Every HTTP client ignite makes starts from [`builder`]: model providers,
//! `http` tools and `http.get`, MCP servers over `url`, and the OTLP
//! exporter. So all of them speak TLS alike and trust the same roots.
//!
//! TLS is rustls with ring. A server's certificate must verify against:
//!
//! - **the system's roots**, through rustls' platform verifier (reqwest's
//!   own choice): on Linux the bundle `openssl` uses, or the files and
//!   folders `SSL_CERT_FILE` and `SSL_CERT_DIR` name; a company's own
//!   authority, installed in the system or named there, is trusted;
//! - or, **when the system has none at all** (a minimal container without
//!   a CA bundle: the platform verifier fails only then), the Mozilla
//!   roots built into ignite (`webpki-roots`), so public `https` servers
//!   still work there.
//!
//! The configuration is made once per process, by the first client, and
//! shared by every client after it. The roots are read once too, at the
//! first `https` handshake (`Lazy`): reading the system's (every
//! certificate of its bundle and of its folder, parsed) took 3.5–4.4 ms of
//! CPU here, which a run that speaks plain `http` only (to a local model
//! server, say) never pays.
//!
//! The configuration is handed to reqwest whole
//! (`tls_backend_preconfigured`), which needs reqwest's rustls to be this
//! crate's `rustls` (one version in the lock; a mismatch fails building
//! every client, so every test that makes one).

use std::sync::{Arc, OnceLock};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// A client builder with ignite's TLS (see the module docs); the caller
/// adds its time limits, redirect policy and headers.
///
/// reqwest's own retries are off: they retry only HTTP/2 and HTTP/3
/// refusals, which ignite's HTTP/1.1 never gets, yet copied every request
/// for them (ignite retries by its own rules: a provider's retries, a
/// tool's `retries N`).
#[allow(clippy::disallowed_methods)] // the one place a client builder is made
pub fn builder() -> reqwest::ClientBuilder {
    static TLS: OnceLock<rustls::ClientConfig> = OnceLock::new();
    reqwest::Client::builder()
        .tls_backend_preconfigured(TLS.get_or_init(tls).clone())
        .retry(reqwest::retry::never().max_retries_per_request(0))
}

/// ring, TLS 1.2 and 1.3, the roots of [`verifier`], HTTP/1.1.
fn tls() -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(Lazy { provider: provider.clone(), verifier: OnceLock::new() });
    // rustls calls every verifier of one's own "dangerous"; this one verifies.
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring offers TLS 1.2 and 1.3")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    // What reqwest offers itself when built without `http2`.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// The system's roots, or the Mozilla roots when the system has none.
fn verifier(provider: &Arc<CryptoProvider>) -> Arc<dyn ServerCertVerifier> {
    match rustls_platform_verifier::Verifier::new(provider.clone()) {
        Ok(system) => Arc::new(system),
        Err(_) => {
            let mozilla = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            WebPkiServerVerifier::builder_with_provider(Arc::new(mozilla), provider.clone())
                .build()
                .expect("the Mozilla roots are not empty")
        }
    }
}

/// The verifier of [`verifier`], made when rustls first asks for it: at
/// the first handshake, as it builds its hello (the schemes it verifies).
#[derive(Debug)]
struct Lazy {
    provider: Arc<CryptoProvider>,
    verifier: OnceLock<Arc<dyn ServerCertVerifier>>,
}

impl Lazy {
    fn get(&self) -> &dyn ServerCertVerifier {
        self.verifier.get_or_init(|| verifier(&self.provider)).as_ref()
    }
}

impl ServerCertVerifier for Lazy {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.get().verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.get().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.get().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.get().supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.get().requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.get().root_hint_subjects()
    }
}
