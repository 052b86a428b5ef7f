//! CPU time of the processes that answer a benchmark's requests, from
//! `/proc/<pid>/stat` (and peak memory): a server with any children it starts, and a
//! PostgreSQL cluster's postmaster with every process it forks (backends,
//! autovacuum workers, checkpointer, WAL writer).

use std::path::Path;
use std::sync::OnceLock;

/// A process's parent and CPU ticks: its own `utime + stime`, and
/// `cutime + cstime`, the ticks of the children it has reaped (so a backend
/// that exits within a run still counts, in its postmaster).
fn stat(pid: u32) -> Option<(u32, u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name, in parentheses, may hold spaces and parentheses
    let fields: Vec<&str> = text.get(text.rfind(')')? + 2..)?.split(' ').collect();
    let number = |i: usize| fields.get(i).and_then(|field| field.parse::<u64>().ok());
    Some((
        u32::try_from(number(1)?).ok()?,
        number(11)? + number(12)?,
        number(13)? + number(14)?,
    ))
}

fn ticks_per_second() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// The processes whose CPU one side of a row counts.
#[derive(Clone, Default)]
pub struct Processes {
    /// Counted with every descendant, present or reaped.
    trees: Vec<u32>,
    /// Counted alone: the benchmark's own process, which also starts the
    /// servers and `wrk`.
    alone: Vec<u32>,
}

impl Processes {
    /// A process and its descendants.
    pub fn tree(pid: u32) -> Processes {
        Processes {
            trees: vec![pid],
            alone: Vec::new(),
        }
    }

    /// The benchmark's own process (an in-process `eds import`), its threads only.
    pub fn this_process() -> Processes {
        Processes {
            trees: Vec::new(),
            alone: vec![std::process::id()],
        }
    }

    /// Adds the PostgreSQL cluster in `data_dir`: its postmaster (the first
    /// line of `postmaster.pid`) and all its processes.
    pub fn and_cluster(mut self, data_dir: &Path) -> Processes {
        let pid_file = std::fs::read_to_string(data_dir.join("postmaster.pid")).expect("a running cluster");
        let postmaster = pid_file.lines().next().and_then(|pid| pid.trim().parse().ok());
        self.trees.push(postmaster.expect("the postmaster's pid"));
        self
    }

    /// CPU seconds used so far, user and system.
    pub fn seconds(&self) -> f64 {
        let mut children: Vec<(u32, u32)> = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse().ok()) else {
                continue;
            };
            if let Some((ppid, _, _)) = stat(pid) {
                children.push((ppid, pid));
            }
        }
        let mut ticks = 0;
        let mut pending = self.trees.clone();
        while let Some(pid) = pending.pop() {
            if let Some((_, own, reaped)) = stat(pid) {
                ticks += own + reaped;
            }
            pending.extend(children.iter().filter(|(ppid, _)| *ppid == pid).map(|(_, child)| child));
        }
        ticks += self
            .alone
            .iter()
            .filter_map(|&pid| stat(pid))
            .map(|(_, own, _)| own)
            .sum::<u64>();
        ticks as f64 / ticks_per_second()
    }
}

/// Peak resident memory of a process (`VmHWM`), in MB.
pub fn peak_rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}
