//! Prometheus metrics of the process, served as text at `GET /metrics`.
//! One process-wide registry: the actors and the auth routes record into it
//! without a handle; the pool's gauges are read at scrape time.

use std::sync::LazyLock;

use actix_web::http::{Method, StatusCode};
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

use crate::db::Pool;

struct Metrics {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    pool: IntGaugeVec,
    writer_mailbox: IntGauge,
    commit_batch: Histogram,
    thumbnail_queue: IntGaugeVec,
    thumbnail_render: HistogramVec,
    tokens_issued: IntCounterVec,
    tokens_refused: IntCounterVec,
    rate_limited: IntCounterVec,
    answer_cache: IntCounterVec,
    formula_pending: IntGauge,
    formula_parked: IntGauge,
    reprojections_pending: IntGauge,
    webhooks_parked: IntGauge,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let registry = Registry::new();
    let metrics = Metrics {
        http_requests: IntCounterVec::new(
            Opts::new(
                "eds_http_requests_total",
                "HTTP requests by method, route pattern and status",
            ),
            &["method", "route", "status"],
        )
        .expect("valid metric"),
        http_duration: HistogramVec::new(
            HistogramOpts::new(
                "eds_http_request_duration_seconds",
                "Time to answer an HTTP request, by method and route pattern",
            ),
            &["method", "route"],
        )
        .expect("valid metric"),
        pool: IntGaugeVec::new(
            Opts::new(
                "eds_db_pool_connections",
                "PostgreSQL pool: max (configured size), size (open), available (idle), waiting (callers queued)",
            ),
            &["state"],
        )
        .expect("valid metric"),
        writer_mailbox: IntGauge::new(
            "eds_writer_mailbox_depth",
            "Writes queued for the per-database writer actors, not yet taken up",
        )
        .expect("valid metric"),
        commit_batch: Histogram::with_opts(
            HistogramOpts::new(
                "eds_writer_commit_batch_size",
                "Writes committed together in one transaction (group-commit size)",
            )
            .buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]),
        )
        .expect("valid metric"),
        thumbnail_queue: IntGaugeVec::new(
            Opts::new(
                "eds_thumbnail_queue_depth",
                "Thumbnail renderings waiting for a thread, by queue (image, pdf)",
            ),
            &["queue"],
        )
        .expect("valid metric"),
        thumbnail_render: HistogramVec::new(
            HistogramOpts::new(
                "eds_thumbnail_render_seconds",
                "Time a thread spent rendering one thumbnail, by source (image, pdf)",
            ),
            &["source"],
        )
        .expect("valid metric"),
        tokens_issued: IntCounterVec::new(
            Opts::new(
                "eds_tokens_issued_total",
                "Access tokens issued, by flow (login, refresh)",
            ),
            &["flow"],
        )
        .expect("valid metric"),
        tokens_refused: IntCounterVec::new(
            Opts::new(
                "eds_tokens_refused_total",
                "Credentials refused, by flow (login, refresh, request) and reason",
            ),
            &["flow", "reason"],
        )
        .expect("valid metric"),
        rate_limited: IntCounterVec::new(
            Opts::new("eds_rate_limited_total", "Requests refused with 429, by limit bucket"),
            &["bucket"],
        )
        .expect("valid metric"),
        answer_cache: IntCounterVec::new(
            Opts::new(
                "eds_answer_cache_total",
                "List answers by outcome: hit (served from the cache) or miss (computed)",
            ),
            &["outcome"],
        )
        .expect("valid metric"),
        formula_pending: IntGauge::new(
            "eds_formula_queue_pending",
            "Formula computations queued and not parked, all databases together",
        )
        .expect("valid metric"),
        formula_parked: IntGauge::new(
            "eds_formula_queue_parked",
            "Formula computations parked after failing every attempt, all databases together",
        )
        .expect("valid metric"),
        reprojections_pending: IntGauge::new(
            "eds_type_reprojections_pending",
            "Entity types whose entities are being re-projected in the background, all databases together",
        )
        .expect("valid metric"),
        webhooks_parked: IntGauge::new(
            "eds_webhooks_parked",
            "Webhooks parked after their endpoint failed for webhooks.retry_hours, all databases together",
        )
        .expect("valid metric"),
        registry,
    };
    let collectors: [Box<dyn prometheus::core::Collector>; 15] = [
        Box::new(metrics.http_requests.clone()),
        Box::new(metrics.http_duration.clone()),
        Box::new(metrics.pool.clone()),
        Box::new(metrics.writer_mailbox.clone()),
        Box::new(metrics.commit_batch.clone()),
        Box::new(metrics.thumbnail_queue.clone()),
        Box::new(metrics.thumbnail_render.clone()),
        Box::new(metrics.tokens_issued.clone()),
        Box::new(metrics.tokens_refused.clone()),
        Box::new(metrics.rate_limited.clone()),
        Box::new(metrics.answer_cache.clone()),
        Box::new(metrics.formula_pending.clone()),
        Box::new(metrics.formula_parked.clone()),
        Box::new(metrics.reprojections_pending.clone()),
        Box::new(metrics.webhooks_parked.clone()),
    ];
    for collector in collectors {
        metrics.registry.register(collector).expect("metric names are unique");
    }
    // A rendering that finds a free worker never queues: show both queues
    // (at 0) from the start rather than only after the first wait.
    for queue in ["image", "pdf"] {
        metrics.thumbnail_queue.with_label_values(&[queue]).set(0);
    }
    metrics
});

/// Adds metrics kept elsewhere (the read replicas') to what `/metrics` shows.
pub fn register(collector: Box<dyn prometheus::core::Collector>) {
    if let Err(error) = METRICS.registry.register(collector) {
        tracing::error!(%error, "registering a metric failed");
    }
}

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Every metric in the text exposition format, the pool's gauges read now.
pub fn render(pool: &Pool) -> String {
    let status = pool.status();
    for (state, value) in [
        ("max", status.max_size),
        ("size", status.size),
        ("available", status.available),
        ("waiting", status.waiting),
    ] {
        METRICS
            .pool
            .with_label_values(&[state])
            .set(i64::try_from(value).unwrap_or(i64::MAX));
    }
    let mut text = Vec::new();
    if let Err(error) = TextEncoder::new().encode(&METRICS.registry.gather(), &mut text) {
        tracing::error!(%error, "encoding the metrics failed");
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// The background queues' lengths, counted for a scrape: the formula
/// queue's entries waiting and parked, the types being re-projected.
pub fn background_queues(formulas_pending: i64, formulas_parked: i64, reprojections_pending: i64) {
    METRICS.formula_pending.set(formulas_pending);
    METRICS.formula_parked.set(formulas_parked);
    METRICS.reprojections_pending.set(reprojections_pending);
}

/// Webhooks parked, counted for a scrape.
pub fn webhooks_parked(parked: i64) {
    METRICS.webhooks_parked.set(parked);
}

/// Counts a request and its latency under the route's pattern (never the raw
/// path, which would make a series per entity id).
pub fn observe_request(method: &Method, route: &str, status: StatusCode, seconds: f64) {
    let method = method_label(method);
    METRICS
        .http_requests
        .with_label_values(&[method, route, status.as_str()])
        .inc();
    METRICS
        .http_duration
        .with_label_values(&[method, route])
        .observe(seconds);
}

/// Known methods by name; anything else shares one label, so a client cannot
/// create series at will.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

/// Records how many writes one transaction committed.
pub fn observe_commit_batch(writes: usize) {
    METRICS.commit_batch.observe(writes as f64);
}

/// One item counted in a queue-depth gauge while it exists: created when an
/// item is queued, dropped when it is taken up or abandoned.
pub struct Queued(IntGauge);

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.dec();
    }
}

fn queued(gauge: IntGauge) -> Queued {
    gauge.inc();
    Queued(gauge)
}

/// Writes waiting in this process's writer mailboxes now.
pub fn writes_waiting() -> i64 {
    METRICS.writer_mailbox.get()
}

/// A write entering a writer actor's mailbox.
pub fn writer_queued() -> Queued {
    queued(METRICS.writer_mailbox.clone())
}

/// A rendering entering the `queue` (`image` or `pdf`) of the thumbnail pool.
pub fn thumbnail_queued(queue: &'static str) -> Queued {
    queued(METRICS.thumbnail_queue.with_label_values(&[queue]))
}

/// Time one thumbnail of a `source` (`image` or `pdf`) took to render.
pub fn observe_render(source: &'static str, seconds: f64) {
    METRICS.thumbnail_render.with_label_values(&[source]).observe(seconds);
}

/// An access token issued through `flow` (`login`, `refresh`).
pub fn token_issued(flow: &'static str) {
    METRICS.tokens_issued.with_label_values(&[flow]).inc();
}

/// A credential refused in `flow` (`login`, `refresh`, `request`) for `reason`.
pub fn token_refused(flow: &'static str, reason: &'static str) {
    METRICS.tokens_refused.with_label_values(&[flow, reason]).inc();
}

/// A request refused by the rate limit `bucket`.
pub fn rate_limited(bucket: &'static str) {
    METRICS.rate_limited.with_label_values(&[bucket]).inc();
}

/// A list answer served from the cache (`hit`) or computed (`miss`).
pub fn answer_cache(outcome: &'static str) {
    METRICS.answer_cache.with_label_values(&[outcome]).inc();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queued_item_counts_until_it_is_dropped() {
        let gauge = IntGauge::new("test_depth", "test").unwrap();
        let first = queued(gauge.clone());
        let second = queued(gauge.clone());
        assert_eq!(gauge.get(), 2);
        drop(first);
        assert_eq!(gauge.get(), 1);
        drop(second);
        assert_eq!(gauge.get(), 0);
    }

    #[test]
    fn unknown_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
    }
}
