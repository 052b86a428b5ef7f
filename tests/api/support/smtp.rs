//! A real SMTP server for the mails the service sends: Python's `aiosmtpd`
//! (installed by `scripts/fetch-python-tools.sh`), one per test, writing
//! every mail it receives into a maildir.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::tempdir;

pub struct SmtpSink {
    /// `mail.smtp_url` for the app.
    pub url: String,
    child: Child,
    maildir: tempdir::Dir,
}

fn aiosmtpd() -> PathBuf {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join(".data/venv/bin/aiosmtpd");
    assert!(
        program.exists(),
        "{} is missing: run scripts/install-deps.sh (it installs aiosmtpd)",
        program.display()
    );
    program
}

impl SmtpSink {
    /// Starts the server on a free port and waits until it accepts connections.
    pub async fn start() -> SmtpSink {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let maildir = tempdir::Dir::new();
        let mut child = Command::new(aiosmtpd())
            // -n: do not drop privileges (the tests may run as root)
            .args([
                "-n",
                "-l",
                &format!("127.0.0.1:{port}"),
                "-c",
                "aiosmtpd.handlers.Mailbox",
            ])
            .arg(maildir.0.join("mail"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start aiosmtpd");
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return SmtpSink {
                    url: format!("smtp://127.0.0.1:{port}"),
                    child,
                    maildir,
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("aiosmtpd did not start listening on port {port} within 10 s");
    }

    /// Every mail received so far, decoded, oldest first.
    pub fn mails(&self) -> Vec<Mail> {
        let new = self.maildir.0.join("mail/new");
        let Ok(entries) = std::fs::read_dir(new) else {
            return Vec::new();
        };
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
            .map(|entry| {
                let path = entry.unwrap().path();
                (std::fs::metadata(&path).unwrap().modified().unwrap(), path)
            })
            .collect();
        files.sort();
        files
            .into_iter()
            .map(|(_, path)| Mail::parse(&std::fs::read_to_string(path).unwrap()))
            .collect()
    }

    /// Waits until `count` mails have arrived (at most 10 s) and answers them.
    pub async fn wait_for(&self, count: usize) -> Vec<Mail> {
        for _ in 0..200 {
            let mails = self.mails();
            if mails.len() >= count {
                return mails;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("expected {count} mails, got {}", self.mails().len());
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One received mail: its headers (as written) and its body, decoded.
pub struct Mail {
    pub headers: String,
    pub body: String,
}

impl Mail {
    fn parse(raw: &str) -> Mail {
        let raw = raw.replace("\r\n", "\n");
        let (headers, body) = raw.split_once("\n\n").expect("a mail has headers and a body");
        let encoding = headers
            .lines()
            .find_map(|line| line.strip_prefix("Content-Transfer-Encoding: "))
            .unwrap_or("7bit")
            .trim()
            .to_ascii_lowercase();
        let body = match encoding.as_str() {
            "quoted-printable" => decode_quoted_printable(body),
            "base64" => decode_base64(body),
            _ => body.to_owned(),
        };
        Mail {
            headers: headers.to_owned(),
            body,
        }
    }

    /// The header `name`'s value (the first line of it).
    pub fn header(&self, name: &str) -> Option<&str> {
        let prefix = format!("{name}: ");
        self.headers.lines().find_map(|line| line.strip_prefix(prefix.as_str()))
    }

    /// Every `http://` or `https://` link in the body.
    pub fn links(&self) -> Vec<String> {
        self.body
            .split_whitespace()
            .filter(|word| word.starts_with("http://") || word.starts_with("https://"))
            .map(str::to_owned)
            .collect()
    }
}

fn decode_quoted_printable(text: &str) -> String {
    let joined = text.replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'=' && at + 3 <= bytes.len() {
            let hex = std::str::from_utf8(&bytes[at + 1..at + 3]).unwrap_or("");
            if let Ok(byte) = u8::from_str_radix(hex, 16) {
                out.push(byte);
                at += 3;
                continue;
            }
        }
        out.push(bytes[at]);
        at += 1;
    }
    String::from_utf8(out).expect("a UTF-8 body")
}

fn decode_base64(text: &str) -> String {
    use base64::Engine;
    let compact: String = text.split_whitespace().collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .expect("a base64 body");
    String::from_utf8(bytes).expect("a UTF-8 body")
}
