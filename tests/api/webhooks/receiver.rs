//! A webhook receiver on 127.0.0.1: plain HTTP/1.1 over TCP, one request per
//! connection. It records each request (headers, body, time) and answers
//! from a script the test sets (status, delay, `Location`), then 200.
#![allow(dead_code)] // the crash test (tests/chaos.rs) uses part of it

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::Value as Json;
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer.
#[derive(Clone, Copy)]
pub struct Answer {
    pub status: u16,
    pub delay: Duration,
}

impl Answer {
    pub fn status(status: u16) -> Answer {
        Answer {
            status,
            delay: Duration::ZERO,
        }
    }
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Received {
    pub fn json(&self) -> Json {
        serde_json::from_str(&self.body).unwrap()
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(String::as_str).unwrap_or_default()
    }

    /// Whether the Standard Webhooks signature verifies with `secret`
    /// (`whsec_` and base64), as a client library checks it.
    pub fn signed_with(&self, secret: &str) -> bool {
        let key = STANDARD.decode(secret.strip_prefix("whsec_").unwrap()).unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
        let signed = format!(
            "{}.{}.{}",
            self.header("webhook-id"),
            self.header("webhook-timestamp"),
            self.body
        );
        mac.update(signed.as_bytes());
        let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
        self.header("webhook-signature")
            .split(' ')
            .any(|given| given == expected)
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Answer>>,
    /// Answered after the script ends.
    otherwise: Mutex<Option<Answer>>,
    received: Mutex<Vec<Received>>,
}

pub struct Receiver {
    /// `http://127.0.0.1:{port}`.
    pub origin: String,
    pub port: u16,
    shared: Arc<Shared>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let serving = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, serving.clone()));
            }
        });
        Receiver {
            origin: format!("http://127.0.0.1:{port}"),
            port,
            shared,
        }
    }

    /// The hook's URL on this receiver.
    pub fn url(&self) -> String {
        format!("{}/hook", self.origin)
    }

    /// Answers these first, in order.
    pub fn script(&self, answers: &[Answer]) {
        self.shared.script.lock().unwrap().extend(answers.iter().copied());
    }

    /// Answers this once the script has ended (200 unless set).
    pub fn otherwise(&self, answer: Answer) {
        *self.shared.otherwise.lock().unwrap() = Some(answer);
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.shared.received.lock().unwrap().len()
    }

    /// The requests once there are at least `count`, within `within`.
    pub async fn wait_for(&self, count: usize, within: Duration) -> Vec<Received> {
        let started = Instant::now();
        loop {
            let received = self.received();
            if received.len() >= count {
                return received;
            }
            assert!(
                started.elapsed() < within,
                "{} of {count} requests within {within:?}: {received:?}",
                received.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut data = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(read) => data.extend_from_slice(&chunk[..read]),
        }
    };
    let head = String::from_utf8_lossy(&data[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .unwrap_or_default()
        .split(' ')
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = data[header_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(read) => body.extend_from_slice(&chunk[..read]),
        }
    }
    let answer = shared.script.lock().unwrap().pop_front();
    let answer = answer
        .or(*shared.otherwise.lock().unwrap())
        .unwrap_or(Answer::status(200));
    shared.received.lock().unwrap().push(Received {
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    tokio::time::sleep(answer.delay).await;
    let response = format!(
        "HTTP/1.1 {} Scripted\r\nLocation: /elsewhere\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        answer.status
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
