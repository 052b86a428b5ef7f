//! The private PostgreSQL cluster used when `database.url` is unset: created
//! with the system's `initdb`, run with `pg_ctl`, reachable on loopback only,
//! and only with the superuser's password (scram-sha-256): any local user can
//! reach a loopback port. The password is generated on creation and kept in
//! the cluster's directory (mode 0600); a cluster of an earlier version, which
//! trusted every loopback connection, gets one on its next start.
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

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use rand::RngCore;
use sha2::{Digest, Sha256};

const SYSTEM_USER: &str = "postgres";
const PORT_FILE: &str = "eds_port";
const PASSWORD_FILE: &str = "eds_password";

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

    /// Initialises the cluster if needed, starts it unless it runs already,
    /// and makes it require the password. Returns whether this call started
    /// it (and so should stop it).
    pub fn ensure_running(&self, fast_unsafe: bool) -> Result<bool, String> {
        if !self.data_dir.join("PG_VERSION").exists() {
            self.init(fast_unsafe)?;
        }
        let started = !self
            .pg_ctl(&["status"])
            .map(|out| out.status.success())
            .unwrap_or(false);
        if started {
            self.keep_a_free_port()?;
            self.start()?;
        }
        self.require_password()?;
        Ok(started)
    }

    /// Moves a stopped cluster to a free port when another server (another
    /// checkout's cluster, say) took its own while it was stopped: it would
    /// not start otherwise.
    fn keep_a_free_port(&self) -> Result<(), String> {
        let port = self.port()?;
        if TcpListener::bind(format!("127.0.0.1:{port}")).is_ok() {
            return Ok(());
        }
        let port = free_port()?;
        // the later of two settings holds
        append(&self.data_dir.join("postgresql.conf"), &format!("port = {port}\n"))?;
        std::fs::write(self.data_dir.join(PORT_FILE), port.to_string())
            .map_err(|e| format!("cannot record the cluster port: {e}"))
    }

    fn start(&self) -> Result<(), String> {
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
        Ok(())
    }

    /// Upgrades a cluster that trusts loopback connections (made by an
    /// earlier version): gives the superuser a password while trust still
    /// lets us in, then has every connection present it. Each step may be
    /// repeated, so a start interrupted halfway finishes the next time.
    fn require_password(&self) -> Result<(), String> {
        let hba_path = self.data_dir.join("pg_hba.conf");
        let hba = std::fs::read_to_string(&hba_path).map_err(|e| format!("cannot read {}: {e}", hba_path.display()))?;
        let is_trust =
            |line: &str| !line.trim_start().starts_with('#') && line.split_whitespace().last() == Some("trust");
        if !hba.lines().any(is_trust) {
            return Ok(());
        }
        let password = match self.password() {
            Ok(password) => password,
            Err(_) => {
                let password = new_password();
                write_private(&self.data_dir.join(PASSWORD_FILE), &password)?;
                password
            }
        };
        let port = self.port()?;
        let mut conn = PgConnection::establish(&format!("postgres://{SYSTEM_USER}@127.0.0.1:{port}/postgres"))
            .map_err(|e| format!("cannot connect to the local cluster to set its password: {e}"))?;
        // ALTER ROLE takes no bind parameters; the password is hex.
        conn.batch_execute(&format!(
            "SET password_encryption = 'scram-sha-256'; ALTER ROLE {SYSTEM_USER} PASSWORD '{password}'"
        ))
        .map_err(|e| format!("cannot set the local cluster's password: {e}"))?;
        let secured: String = hba
            .lines()
            .map(|line| match line.trim_end().strip_suffix("trust") {
                Some(rest) if is_trust(line) => format!("{rest}scram-sha-256\n"),
                _ => format!("{line}\n"),
            })
            .collect();
        std::fs::write(&hba_path, secured).map_err(|e| format!("cannot write {}: {e}", hba_path.display()))?;
        let output = self.pg_ctl(&["reload"])?;
        if !output.status.success() {
            return Err(format!(
                "the local cluster did not reload pg_hba.conf: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(())
    }

    pub fn stop(&self) -> Result<(), String> {
        let output = self.pg_ctl(&["stop", "-m", "fast", "-w"])?;
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
        }
    }

    /// Connection URL of database `name` in this cluster, with the password.
    pub fn url(&self, name: &str) -> Result<String, String> {
        let password = self
            .password()
            .map_err(|e| format!("cannot read the local cluster's password: {e}"))?;
        Ok(format!(
            "postgres://{SYSTEM_USER}:{password}@127.0.0.1:{}/{name}",
            self.port()?
        ))
    }

    fn port(&self) -> Result<String, String> {
        std::fs::read_to_string(self.data_dir.join(PORT_FILE))
            .map(|port| port.trim().to_owned())
            .map_err(|e| format!("cannot read the local cluster's port: {e}"))
    }

    fn password(&self) -> std::io::Result<String> {
        std::fs::read_to_string(self.data_dir.join(PASSWORD_FILE)).map(|password| password.trim().to_owned())
    }

    fn init(&self, fast_unsafe: bool) -> Result<(), String> {
        std::fs::create_dir_all(&self.data_dir)
            .map_err(|e| format!("cannot create {}: {e}", self.data_dir.display()))?;
        if self.as_system_user {
            self.give_to_system_user(&self.data_dir)?;
        }
        let dir = self.data_dir.to_string_lossy().into_owned();
        // initdb wants an empty directory: the password goes through a sibling
        // file the cluster's user may read, removed once it has been read.
        let password = new_password();
        let mut pwfile = self.data_dir.as_os_str().to_owned();
        pwfile.push(".initdb-password");
        let pwfile = PathBuf::from(pwfile);
        write_private(&pwfile, &password)?;
        if self.as_system_user {
            self.give_to_system_user(&pwfile)?;
        }
        let pwfile_arg = format!("--pwfile={}", pwfile.display());
        let output = self.run(
            "initdb",
            &[
                "-D",
                &dir,
                "-U",
                SYSTEM_USER,
                "-A",
                "scram-sha-256",
                &pwfile_arg,
                "-E",
                "UTF8",
                "--no-locale",
            ],
        );
        let _ = std::fs::remove_file(&pwfile);
        let output = output?;
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
            // A test database is cloned through the WAL: cap it, or hundreds of clones keep gigabytes.
            settings.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_wal_size = 256MB\n");
        }
        append(&self.data_dir.join("postgresql.conf"), &settings)?;
        write_private(&self.data_dir.join(PASSWORD_FILE), &password)?;
        std::fs::write(self.data_dir.join(PORT_FILE), port.to_string())
            .map_err(|e| format!("cannot record the cluster port: {e}"))
    }

    fn give_to_system_user(&self, path: &Path) -> Result<(), String> {
        let status = Command::new("chown")
            .args(["-R", SYSTEM_USER])
            .arg(path)
            .status()
            .map_err(|e| format!("chown failed: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("cannot give {} to {SYSTEM_USER}", path.display()))
        }
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

/// 32 random bytes, hex: safe in a URL and in SQL without quoting.
fn new_password() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Writes a file only its owner may read, whatever was there before.
fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            file.write_all(text.as_bytes())
        })
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
