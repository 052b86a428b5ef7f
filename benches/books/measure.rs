//! Timed runs of one side of a peer benchmark row: `wrk` runs of a Lua
//! script, or every record of a load sent once over a fixed number of
//! connections; each read back as requests/s, latency and the CPU time its
//! server spent per request.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::cpu::Processes;
use super::{median, wrk};

/// Connections of each `wrk` run.
pub const CLIENTS: u32 = 32;

/// One HTTP request of a wrk script.
pub struct Call {
    pub method: &'static str,
    pub path: String,
    pub body: Option<String>,
}

impl Call {
    pub fn get(path: String) -> Call {
        Call {
            method: "GET",
            path,
            body: None,
        }
    }

    pub fn post(path: String, body: String) -> Call {
        Call {
            method: "POST",
            path,
            body: Some(body),
        }
    }
}

/// A wrk Lua script sending `calls` in turn (each wrk thread from the first).
fn script(dir: &Path, name: &str, calls: &[Call]) -> PathBuf {
    let mut lua = String::from("wrk.headers[\"Content-Type\"] = \"application/json\"\nlocal calls = {\n");
    for call in calls {
        let body = call
            .body
            .as_deref()
            .map_or("nil".to_owned(), |b| format!("[==[{b}]==]"));
        lua.push_str(&format!("  {{\"{}\", [==[{}]==], {body}}},\n", call.method, call.path));
    }
    lua.push_str(
        "}\nlocal next = 0\nrequest = function()\n  next = next % #calls + 1\n  local call = calls[next]\n  \
         return wrk.format(call[1], call[2], nil, call[3])\nend\n",
    );
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, lua).unwrap();
    path
}

/// One side of a row: the server's base URL, the bearer token if any, its
/// calls, and the processes whose CPU it counts.
pub struct Side<'a> {
    pub url: &'a str,
    pub token: Option<&'a str>,
    pub calls: Vec<Call>,
    pub processes: &'a Processes,
}

/// Requests/s, p50 and p99 in ms, CPU µs per request (medians over the
/// runs) and non-2xx answers in all.
pub struct Measured {
    pub rate: f64,
    pub latency: Option<(f64, f64)>,
    pub cpu_us: f64,
    pub errors: u64,
}

/// `runs` wrk runs of `seconds` each after a 3 s warm-up. A run's requests
/// are its rate times its length (wrk's rate is its count over its length).
pub async fn measure(side: Side<'_>, name: &str, dir: &Path, seconds: u32, runs: usize) -> Measured {
    let script = script(dir, name, &side.calls);
    let (url, token, processes) = (
        side.url.to_owned(),
        side.token.map(str::to_owned),
        side.processes.clone(),
    );
    let results = tokio::task::spawn_blocking(move || {
        wrk(&url, token.as_deref(), Some(&script), 3, CLIENTS); // warm-up
        (0..runs)
            .map(|_| {
                let before = processes.seconds();
                let run = wrk(&url, token.as_deref(), Some(&script), seconds, CLIENTS);
                let cpu = processes.seconds() - before;
                (run, cpu * 1e6 / (run.0 * f64::from(seconds)).max(1.0))
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let latencies: Vec<(f64, f64)> = results.iter().filter_map(|(run, _)| run.1).collect();
    Measured {
        rate: median(results.iter().map(|(run, _)| run.0).collect()),
        latency: (!latencies.is_empty()).then(|| {
            (
                median(latencies.iter().map(|l| l.0).collect()),
                median(latencies.iter().map(|l| l.1).collect()),
            )
        }),
        cpu_us: median(results.iter().map(|(_, cpu)| *cpu).collect()),
        errors: results.iter().map(|(run, _)| run.2).sum(),
    }
}

/// Sends each body once to `url` as a JSON `POST`, over `connections`
/// connections of one client, each waiting for its answer before the next.
pub async fn post_all(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    bodies: Vec<String>,
    connections: usize,
    processes: &Processes,
) -> Measured {
    let count = bodies.len();
    let bodies = Arc::new(bodies);
    let next = Arc::new(AtomicUsize::new(0));
    let before = processes.seconds();
    let started = Instant::now();
    let senders: Vec<_> = (0..connections)
        .map(|_| {
            let (http, url, token) = (http.clone(), url.to_owned(), token.map(str::to_owned));
            let (bodies, next) = (bodies.clone(), next.clone());
            tokio::spawn(async move {
                let (mut latencies, mut errors) = (Vec::new(), 0u64);
                while let Some(body) = bodies.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let sent = Instant::now();
                    let mut request = http
                        .post(&url)
                        .header("Content-Type", "application/json")
                        .body(body.clone())
                        .timeout(Duration::from_secs(60));
                    if let Some(token) = &token {
                        request = request.bearer_auth(token);
                    }
                    // the answer read whole, so the connection is reused
                    let ok = match request.send().await {
                        Ok(answer) => answer.status().is_success() && answer.bytes().await.is_ok(),
                        Err(_) => false,
                    };
                    latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
                    errors += u64::from(!ok);
                }
                (latencies, errors)
            })
        })
        .collect();
    let (mut latencies, mut errors) = (Vec::with_capacity(count), 0);
    for sender in senders {
        let (sent, failed) = sender.await.unwrap();
        latencies.extend(sent);
        errors += failed;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = processes.seconds() - before;
    latencies.sort_by(f64::total_cmp);
    let percentile = |p: f64| latencies[((latencies.len() - 1) as f64 * p) as usize];
    Measured {
        rate: count as f64 / elapsed,
        latency: (!latencies.is_empty()).then(|| (percentile(0.5), percentile(0.99))),
        cpu_us: cpu * 1e6 / count.max(1) as f64,
        errors,
    }
}

/// `count` records loaded by one timed call (a bulk load): records/s and
/// CPU µs per record, no latency.
pub async fn timed<F: Future<Output = ()>>(count: usize, processes: &Processes, load: F) -> Measured {
    let before = processes.seconds();
    let started = Instant::now();
    load.await;
    let elapsed = started.elapsed().as_secs_f64();
    Measured {
        rate: count as f64 / elapsed,
        latency: None,
        cpu_us: (processes.seconds() - before) * 1e6 / count.max(1) as f64,
        errors: 0,
    }
}

/// A side's cells: requests/s, p50, p99, CPU µs per request.
pub fn cells(measured: Option<&Measured>) -> String {
    let Some(m) = measured else {
        return "— | — | — | —".to_owned();
    };
    let latency = m
        .latency
        .map_or("— | —".to_owned(), |(p50, p99)| format!("{p50:.1} | {p99:.1}"));
    let errors = if m.errors > 0 {
        format!(" ({} non-2xx)", m.errors)
    } else {
        String::new()
    };
    format!("{:.0}{errors} | {latency} | {:.0}", m.rate, m.cpu_us)
}

/// A ratio, with three decimals below 0.1 so 0.0015 does not print as zero.
pub fn ratio(ratio: f64) -> String {
    if ratio < 0.1 {
        format!("{ratio:.3}×")
    } else {
        format!("{ratio:.2}×")
    }
}
