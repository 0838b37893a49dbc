//! TLS for the tests: a certificate authority of the test's own and a
//! certificate for 127.0.0.1 that it signed (made with `openssl`), and a
//! small HTTPS server that answers every request alike.

use std::io::{BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A folder with `ca.pem` (the authority), `server.pem` and `server.key`
/// (127.0.0.1's certificate and key, valid for two days), and `empty.pem`.
pub(crate) struct TestCa {
    dir: tempfile::TempDir,
}

impl TestCa {
    pub(crate) fn new() -> Self {
        let ca = Self { dir: tempfile::tempdir().expect("a temp folder") };
        ca.openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=ignite test CA",
        ]);
        ca.openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ]);
        std::fs::write(
            ca.dir.path().join("ext.cnf"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
        )
        .expect("ext.cnf is written");
        std::fs::write(ca.empty(), "").expect("empty.pem is written");
        ca.openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]);
        ca
    }

    /// Runs `openssl ARGS` in the folder.
    fn openssl(&self, args: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("openssl runs");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// The folder of the files.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The authority's certificate (what `SSL_CERT_FILE` may name).
    pub(crate) fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A file of no certificates: with `SSL_CERT_FILE` naming it and
    /// `SSL_CERT_DIR` empty, the system has no roots.
    pub(crate) fn empty(&self) -> PathBuf {
        self.dir.path().join("empty.pem")
    }

    /// Starts an HTTPS server on 127.0.0.1 with the certificate for it;
    /// every request gets `200` with `body` (JSON). Its port; the server
    /// stays for the rest of the test process.
    pub(crate) fn serve(&self, body: &'static str) -> u16 {
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(self.dir.path().join("server.pem"))
                .expect("server.pem is read")
                .collect::<Result<_, _>>()
                .expect("server.pem holds certificates");
        let key = PrivateKeyDer::from_pem_file(self.dir.path().join("server.key"))
            .expect("server.key holds a key");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring offers TLS 1.2 and 1.3")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("the certificate fits its key");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("an address").port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let config = config.clone();
                // A client that refuses the certificate ends the exchange.
                std::thread::spawn(move || answer(config, stream, body).ok());
            }
        });
        port
    }
}

/// Reads one request (its head, then `content-length` bytes of body) and
/// answers `200` with `body`, then closes.
fn answer(config: Arc<rustls::ServerConfig>, stream: TcpStream, body: &str) -> std::io::Result<()> {
    let connection = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut tls = BufReader::new(rustls::StreamOwned::new(connection, stream));
    if super::read_request(&mut tls)?.is_none() {
        return Ok(());
    }
    let tls = tls.get_mut();
    write!(
        tls,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    )?;
    tls.conn.send_close_notify();
    tls.flush()
}
