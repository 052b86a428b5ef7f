//! The read replicas' metrics in `/metrics`: whether each is used, its lag,
//! and the reads each server (the primary included) answered and its share.

use std::sync::LazyLock;

use prometheus::{GaugeVec, IntCounterVec, IntGaugeVec, Opts};

/// The label of reads the primary answered.
const PRIMARY: &str = "primary";

struct ReplicaMetrics {
    usable: IntGaugeVec,
    lag: GaugeVec,
    reads: IntCounterVec,
    share: GaugeVec,
}

static METRICS: LazyLock<ReplicaMetrics> = LazyLock::new(|| {
    let metrics = ReplicaMetrics {
        usable: IntGaugeVec::new(
            Opts::new(
                "eds_replica_usable",
                "Whether a read replica is used (1) or skipped as down or lagging (0), by replica",
            ),
            &["replica"],
        )
        .expect("valid metric"),
        lag: GaugeVec::new(
            Opts::new(
                "eds_replica_lag_seconds",
                "Age of a replica's last replayed commit while it is behind the primary (0 when caught up), by replica",
            ),
            &["replica"],
        )
        .expect("valid metric"),
        reads: IntCounterVec::new(
            Opts::new(
                "eds_replica_reads_total",
                "Routed reads by the server that answered them (a replica, or primary)",
            ),
            &["server"],
        )
        .expect("valid metric"),
        share: GaugeVec::new(
            Opts::new(
                "eds_replica_read_share",
                "Share of the routed reads each server answered since the process started",
            ),
            &["server"],
        )
        .expect("valid metric"),
    };
    crate::metrics::register(Box::new(metrics.usable.clone()));
    crate::metrics::register(Box::new(metrics.lag.clone()));
    crate::metrics::register(Box::new(metrics.reads.clone()));
    crate::metrics::register(Box::new(metrics.share.clone()));
    metrics
});

pub fn usable(replica: &str, usable: bool) {
    METRICS.usable.with_label_values(&[replica]).set(i64::from(usable));
}

pub fn lag(replica: &str, lag_ms: u64) {
    METRICS
        .lag
        .with_label_values(&[replica])
        .set(lag_ms.min(u32::MAX as u64) as f64 / 1000.0);
}

/// Counts a read answered by `replica` (`None`: the primary).
pub fn served(replica: Option<&str>) {
    METRICS.reads.with_label_values(&[replica.unwrap_or(PRIMARY)]).inc();
}

/// Sets each server's share of the reads counted so far.
pub fn shares() {
    let families = counts();
    let total: u64 = families.iter().map(|(_, count)| count).sum();
    for (server, count) in families {
        let share = if total == 0 { 0.0 } else { count as f64 / total as f64 };
        METRICS.share.with_label_values(&[&server]).set(share);
    }
}

/// Each server's count of reads.
fn counts() -> Vec<(String, u64)> {
    use prometheus::core::Collector;
    METRICS
        .reads
        .collect()
        .iter()
        .flat_map(|family| family.get_metric())
        .filter_map(|metric| {
            let label = metric.get_label().first()?.value().to_owned();
            Some((label, metric.get_counter().get_value() as u64))
        })
        .collect()
}
