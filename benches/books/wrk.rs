//! `wrk` runs read back as requests/s and latency.

use std::path::Path;

/// One `wrk` run of `clients` connections, with a bearer token and a Lua script choosing each
/// request when given: requests/s, p50 and p99 in milliseconds (none when no
/// request finished), and the answers other than 2xx (503 `query_timeout`).
pub fn wrk(
    url: &str,
    token: Option<&str>,
    script: Option<&Path>,
    seconds: u32,
    clients: u32,
) -> (f64, Option<(f64, f64)>, u64) {
    let mut command = std::process::Command::new("wrk");
    let threads = clients.min(2);
    command.args([
        &format!("-t{threads}"),
        &format!("-c{clients}"),
        &format!("-d{seconds}s"),
        "--timeout",
        "30s",
        "--latency",
    ]);
    if let Some(token) = token {
        command.args(["-H", &format!("Authorization: Bearer {token}")]);
    }
    if let Some(script) = script {
        command.arg("-s").arg(script);
    }
    let output = command.arg(url).output().expect("wrk (apt install wrk)");
    let text = String::from_utf8_lossy(&output.stdout);
    let field = |prefix: &str| -> Option<f64> {
        let line = text.lines().find(|line| line.trim_start().starts_with(prefix))?;
        let value = line.trim_start()[prefix.len()..].trim();
        Some(millis(value.split_whitespace().next()?))
    };
    let rate: f64 = text
        .lines()
        .find_map(|line| line.strip_prefix("Requests/sec:"))
        .and_then(|rate| rate.trim().parse().ok())
        .unwrap_or(0.0);
    let errors = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("Non-2xx or 3xx responses:"))
        .and_then(|count| count.trim().parse().ok())
        .unwrap_or(0);
    let latency = field("50%").zip(field("99%")).filter(|_| rate > 0.0);
    (rate, latency, errors)
}

/// wrk's durations (`812.00us`, `1.20ms`, `2.01s`) in milliseconds.
pub fn millis(text: &str) -> f64 {
    let (number, factor) = if let Some(n) = text.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (text, 1.0)
    };
    number.parse::<f64>().unwrap() * factor
}

pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
