//! A server of client metadata documents on 127.0.0.1: https with a
//! certificate made here (its PEM written for `oauth.client_metadata_ca_file`),
//! or plain http; each path answers as the test sets it, and the server
//! counts the connections it accepts and the requests of each path.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// How a path answers.
#[derive(Clone)]
pub enum Answer {
    /// 200 with this body and, if given, this `Cache-Control`.
    Document(String, Option<&'static str>),
    /// 302 to this location.
    Redirect(String),
    /// 200 with this many bytes and no `Content-Length`.
    Unsized(usize),
    /// 200 with this body, after this long.
    Slow(Duration, String),
}

#[derive(Default)]
struct Shared {
    answers: Mutex<HashMap<String, Answer>>,
    requests: Mutex<HashMap<String, usize>>,
    connections: AtomicUsize,
}

pub struct DocumentServer {
    /// `https://127.0.0.1:{port}` (or `http://`).
    pub origin: String,
    /// The PEM of the server's certificate (https only).
    pub ca_file: PathBuf,
    shared: Arc<Shared>,
}

impl DocumentServer {
    pub async fn https() -> DocumentServer {
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
        let ca_file = std::env::temp_dir().join(format!("eds-cimd-{}.pem", rand_suffix()));
        std::fs::write(&ca_file, made.cert.pem()).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![CertificateDer::from(made.cert.der().to_vec())], key)
            .unwrap();
        DocumentServer::start("https", Some(TlsAcceptor::from(Arc::new(config))), ca_file).await
    }

    pub async fn plain_http() -> DocumentServer {
        DocumentServer::start("http", None, PathBuf::new()).await
    }

    async fn start(scheme: &str, tls: Option<TlsAcceptor>, ca_file: PathBuf) -> DocumentServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("{scheme}://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Shared::default());
        let serving = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                serving.connections.fetch_add(1, Ordering::SeqCst);
                let (shared, tls) = (serving.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        Some(tls) => {
                            if let Ok(stream) = tls.accept(stream).await {
                                serve(stream, &shared).await;
                            }
                        }
                        None => serve(stream, &shared).await,
                    }
                });
            }
        });
        DocumentServer {
            origin,
            ca_file,
            shared,
        }
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// Makes `path` answer `answer`; answers its URL.
    pub fn set(&self, path: &str, answer: Answer) -> String {
        self.shared.answers.lock().unwrap().insert(path.to_owned(), answer);
        self.url(path)
    }

    /// Requests `path` received.
    pub fn requests(&self, path: &str) -> usize {
        self.shared.requests.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    /// Connections accepted.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }
}

impl Drop for DocumentServer {
    fn drop(&mut self) {
        // eds read it at its start; nothing needs it after the test
        if !self.ca_file.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.ca_file);
        }
    }
}

fn rand_suffix() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    format!("{}-{nanos}", std::process::id())
}

/// Answers one request (the connection is closed after it).
async fn serve(mut stream: impl AsyncRead + AsyncWrite + Unpin, shared: &Shared) {
    let mut request = Vec::new();
    let mut buffer = [0u8; 1024];
    while !request.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => request.extend_from_slice(&buffer[..read]),
        }
    }
    let text = String::from_utf8_lossy(&request);
    let path = text.split(' ').nth(1).unwrap_or_default().to_owned();
    *shared.requests.lock().unwrap().entry(path.clone()).or_default() += 1;
    let answer = shared.answers.lock().unwrap().get(&path).cloned();
    let head = |status: &str, headers: &str| format!("HTTP/1.1 {status}\r\nConnection: close\r\n{headers}\r\n");
    let response = match answer {
        None => head("404 Not Found", "Content-Length: 0\r\n").into_bytes(),
        Some(Answer::Document(body, cache_control)) => {
            let cache = cache_control.map_or(String::new(), |value| format!("Cache-Control: {value}\r\n"));
            let headers = format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n{cache}",
                body.len()
            );
            [head("200 OK", &headers).into_bytes(), body.into_bytes()].concat()
        }
        Some(Answer::Redirect(location)) => {
            head("302 Found", &format!("Location: {location}\r\nContent-Length: 0\r\n")).into_bytes()
        }
        Some(Answer::Unsized(bytes)) => {
            let body = format!("{{\"padding\":\"{}\"}}", "x".repeat(bytes));
            [
                head("200 OK", "Content-Type: application/json\r\n").into_bytes(),
                body.into_bytes(),
            ]
            .concat()
        }
        Some(Answer::Slow(delay, body)) => {
            tokio::time::sleep(delay).await;
            let headers = format!("Content-Length: {}\r\n", body.len());
            [head("200 OK", &headers).into_bytes(), body.into_bytes()].concat()
        }
    };
    let _ = stream.write_all(&response).await;
    let _ = stream.shutdown().await;
}
