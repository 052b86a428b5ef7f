//! A change stream read as a client reads it: events parsed from the body
//! of `GET /api/{db}/changes`.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde_json::Value as Json;

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: Option<i64>,
    pub event: String,
    pub data: Json,
}

impl Event {
    /// `"<action> <_id> <properties>"`, for comparing events at a glance.
    pub fn summary(&self) -> String {
        let names: Vec<&str> = self.data["properties"]
            .as_array()
            .map(|names| names.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        format!(
            "{} {} {}",
            self.data["action"].as_str().unwrap_or(&self.event),
            self.data["_id"].as_str().unwrap_or("-"),
            names.join(",")
        )
    }
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// An open stream.
pub struct Events {
    body: Body,
    buffer: String,
    /// Comment lines seen (heartbeats, the opening one).
    pub comments: usize,
}

/// Opens `url` (a whole URL) with `token`, a `Last-Event-ID` and further
/// headers; answers the response when it is not 200.
pub async fn open(url: &str, token: Option<&str>, headers: &[(&str, &str)]) -> Result<Events, reqwest::Response> {
    let mut request = reqwest::Client::new().get(url);
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("accept")) {
        request = request.header("Accept", "text/event-stream");
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    if response.status() != 200 {
        return Err(response);
    }
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = Events {
        body: Box::pin(response.bytes_stream()),
        buffer: String::new(),
        comments: 0,
    };
    // the first part is a comment (or a reset event): the stream is listening once it arrives
    events.fill(Duration::from_secs(10)).await;
    Ok(events)
}

/// Opens a stream that must open.
pub async fn must_open(url: &str, token: Option<&str>, headers: &[(&str, &str)]) -> Events {
    match open(url, token, headers).await {
        Ok(events) => events,
        Err(response) => panic!("{} {}", response.status(), response.text().await.unwrap()),
    }
}

impl Events {
    /// Reads more of the body within `within`; false when it ended or timed out.
    async fn fill(&mut self, within: Duration) -> bool {
        match tokio::time::timeout(within, self.body.next()).await {
            Ok(Some(Ok(part))) => {
                self.buffer.push_str(&String::from_utf8_lossy(&part));
                true
            }
            _ => false,
        }
    }

    /// The next event within `within`, comments skipped; `None` when none
    /// came (or the stream ended).
    pub async fn next(&mut self, within: Duration) -> Option<Event> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(event) = self.parse(&block) {
                    return Some(event);
                }
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() || !self.fill(left).await {
                return None;
            }
        }
    }

    /// The next event, which must come within 10 s.
    pub async fn expect(&mut self) -> Event {
        self.next(Duration::from_secs(10)).await.expect("an event within 10 s")
    }

    fn parse(&mut self, block: &str) -> Option<Event> {
        let (mut id, mut event, mut data) = (None, "message".to_owned(), String::new());
        for line in block.lines() {
            if line.starts_with(':') {
                self.comments += 1;
            } else if let Some(value) = line.strip_prefix("id: ") {
                id = value.parse().ok();
            } else if let Some(value) = line.strip_prefix("event: ") {
                event = value.to_owned();
            } else if let Some(value) = line.strip_prefix("data: ") {
                data.push_str(value);
            }
        }
        (!data.is_empty()).then(|| Event {
            id,
            event,
            data: serde_json::from_str(&data).unwrap(),
        })
    }

    /// Whether the server ends the stream within `within` (events before
    /// its end are skipped).
    pub async fn ends_within(&mut self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            match tokio::time::timeout(left, self.body.next()).await {
                Ok(None) | Ok(Some(Err(_))) => return true,
                Ok(Some(Ok(_))) => {}
                Err(_) => return false,
            }
        }
    }
}
