//! The private PostgreSQL cluster used when `database.url` is unset: created
//! with the system's `initdb`, run with `pg_ctl`, reachable on loopback only.
//!
//! PostgreSQL refuses to run as root, so as root the cluster belongs to the
//! `postgres` system user, and its directory must be one that user can reach:
//! when the checkout sits under a directory only root may enter, the cluster
//! lives in a `postgres`-owned directory under /tmp named after a hash of the
//! preferred path (two checkouts never share one).

use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

const SYSTEM_USER: &str = "postgres";
const PORT_FILE: &str = "eds_port";

#[derive(Debug)]
pub struct LocalCluster {
    bin_dir: PathBuf,
    data_dir: PathBuf,
    as_system_user: bool,
}

impl LocalCluster {
    /// Locates the server binaries and decides where the cluster for
    /// `preferred_dir` lives. Nothing is created yet.
    pub fn new(preferred_dir: &Path) -> Result<LocalCluster, String> {
        let bin_dir = find_bin_dir().ok_or(
            "PostgreSQL server binaries (initdb, pg_ctl) were not found under \
             /usr/lib/postgresql/*/bin or `pg_config --bindir`; install them \
             (`apt-get install postgresql`) or set database.url",
        )?;
        let preferred_dir = absolute(preferred_dir)?;
        let as_system_user = is_root();
        let data_dir = if as_system_user && !reachable_by_others(&preferred_dir) {
            let digest = Sha256::digest(preferred_dir.to_string_lossy().as_bytes());
            std::env::temp_dir().join(format!("eds-postgres-{}", &hex::encode(digest)[..12]))
        } else {
            preferred_dir
        };
        Ok(LocalCluster {
            bin_dir,
            data_dir,
            as_system_user,
        })
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Initialises the cluster if needed and starts it unless it runs already.
    /// Returns whether this call started it (and so should stop it).
    pub fn ensure_running(&self, fast_unsafe: bool) -> Result<bool, String> {
        if !self.data_dir.join("PG_VERSION").exists() {
            self.init(fast_unsafe)?;
        }
        if self
            .pg_ctl(&["status"])
            .map(|out| out.status.success())
            .unwrap_or(false)
        {
            return Ok(false);
        }
        let log = self.data_dir.join("server.log");
        let log = log.to_string_lossy();
        let output = self.pg_ctl(&["start", "-w", "-t", "60", "-l", &log])?;
        if !output.status.success() {
            return Err(format!(
                "the local PostgreSQL cluster in {} did not start: {}{} (see {log})",
                self.data_dir.display(),
                String::from_utf8_lossy(&output.stdout).trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(true)
    }

    pub fn stop(&self) -> Result<(), String> {
        let output = self.pg_ctl(&["stop", "-m", "fast", "-w"])?;
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
        }
    }

    /// Connection URL of database `name` in this cluster.
    pub fn url(&self, name: &str) -> Result<String, String> {
        let port = std::fs::read_to_string(self.data_dir.join(PORT_FILE))
            .map_err(|e| format!("cannot read the local cluster's port: {e}"))?;
        Ok(format!("postgres://{SYSTEM_USER}@127.0.0.1:{}/{name}", port.trim()))
    }

    fn init(&self, fast_unsafe: bool) -> Result<(), String> {
        std::fs::create_dir_all(&self.data_dir)
            .map_err(|e| format!("cannot create {}: {e}", self.data_dir.display()))?;
        if self.as_system_user {
            let status = Command::new("chown")
                .args(["-R", SYSTEM_USER])
                .arg(&self.data_dir)
                .status()
                .map_err(|e| format!("chown failed: {e}"))?;
            if !status.success() {
                return Err(format!("cannot give {} to {SYSTEM_USER}", self.data_dir.display()));
            }
        }
        let dir = self.data_dir.to_string_lossy().into_owned();
        let output = self.run(
            "initdb",
            &[
                "-D",
                &dir,
                "-U",
                SYSTEM_USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
            ],
        )?;
        if !output.status.success() {
            return Err(format!(
                "initdb failed in {dir}: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let port = free_port()?;
        let mut settings = format!(
            "\n# eds private cluster\nlisten_addresses = '127.0.0.1'\nport = {port}\n\
             unix_socket_directories = ''\nmax_connections = 200\n"
        );
        if fast_unsafe {
            // Throwaway test clusters: durability buys nothing there.
            settings.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
        }
        append(&self.data_dir.join("postgresql.conf"), &settings)?;
        std::fs::write(self.data_dir.join(PORT_FILE), port.to_string())
            .map_err(|e| format!("cannot record the cluster port: {e}"))
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<std::process::Output, String> {
        let dir = self.data_dir.to_string_lossy().into_owned();
        let mut all = vec!["-D", &dir];
        all.extend_from_slice(args);
        self.run("pg_ctl", &all)
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<std::process::Output, String> {
        let binary = self.bin_dir.join(program);
        let mut command = if self.as_system_user {
            let mut command = Command::new("runuser");
            command.args(["-u", SYSTEM_USER, "--"]).arg(&binary);
            command
        } else {
            Command::new(&binary)
        };
        // pg_ctl's children must not hold our stdout open (callers read it to the end).
        command
            .args(args)
            .current_dir(std::env::temp_dir())
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", binary.display()))
    }
}

fn find_bin_dir() -> Option<PathBuf> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if has_server(&dir) {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_string_lossy().parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, dir)| has_server(dir))
        .collect();
    versions.sort();
    versions.pop().map(|(_, dir)| dir)
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// Whether another user can traverse every existing ancestor of `dir`.
fn reachable_by_others(dir: &Path) -> bool {
    dir.ancestors()
        .skip(1)
        .filter_map(|ancestor| std::fs::metadata(ancestor).ok())
        .all(|meta| meta.mode() & 0o001 != 0)
}

fn absolute(dir: &Path) -> Result<PathBuf, String> {
    if dir.is_absolute() {
        return Ok(dir.to_path_buf());
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(dir))
        .map_err(|e| format!("cannot read the working directory: {e}"))
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("no free port for PostgreSQL: {e}"))
}

fn append(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
