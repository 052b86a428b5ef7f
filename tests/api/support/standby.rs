//! A primary PostgreSQL cluster with streaming standbys made by
//! `pg_basebackup -R`, for the read replica tests: started once per test
//! process under `/tmp/eds-test-replica-<digest>-<pid>`, on free ports, run as
//! `postgres` when the tests run as root (as the shared cluster is). A
//! watcher stops and removes them when the test process exits; a later run
//! removes what an ended process left.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use diesel::{Connection, PgConnection, RunQueryDsl};

const TEMPLATE: &str = "eds_template";
const PASSWORD: &str = "replica-test-password";
const SYSTEM_USER: &str = "postgres";

/// One PostgreSQL server of the set.
pub struct Server {
    pub dir: PathBuf,
    pub port: u16,
}

impl Server {
    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{SYSTEM_USER}:{PASSWORD}@127.0.0.1:{}/{name}", self.port)
    }

    /// Stops the server at once (as a crash would, for a standby).
    pub fn stop(&self) {
        pg_ctl(&self.dir, &["stop", "-m", "immediate", "-w"]);
    }

    /// Starts the server and waits until it accepts connections.
    pub fn start(&self) {
        let log = self.dir.join("server.log");
        assert!(
            pg_ctl(&self.dir, &["start", "-w", "-t", "60", "-l", &log.to_string_lossy()]),
            "start {}",
            self.dir.display()
        );
    }

    /// Runs `sql` on database `postgres`.
    pub fn execute(&self, sql: &str) {
        let mut conn = PgConnection::establish(&self.url("postgres")).expect("connect");
        diesel::sql_query(sql).execute(&mut conn).expect(sql);
    }

    /// Pauses WAL replay (a standby only): it keeps serving what it has.
    pub fn pause_replay(&self) {
        self.execute("SELECT pg_wal_replay_pause()");
    }

    pub fn resume_replay(&self) {
        self.execute("SELECT pg_wal_replay_resume()");
    }
}

/// A primary and its standbys.
pub struct Replication {
    pub primary: Server,
    pub standbys: Vec<Server>,
}

impl Replication {
    /// A fresh, migrated, empty database on the primary (and so on the standbys); its name.
    pub fn fresh_database(&self) -> String {
        let name = format!("r_{}", eds::model::ids::new_id());
        eds::db::create_database_if_missing(&self.primary.url("postgres"), &name, Some(TEMPLATE))
            .expect("create a test database");
        name
    }
}

/// The test process's primary with `standbys` standbys (the first call decides how many).
pub fn replication(standbys: usize) -> &'static Replication {
    static REPLICATION: OnceLock<Replication> = OnceLock::new();
    REPLICATION.get_or_init(|| start(standbys))
}

fn start(standbys: usize) -> Replication {
    let base = base_dir();
    remove_ended_runs(&base);
    let dir = PathBuf::from(format!("{}-{}", base.display(), std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    give_to_system_user(&dir);
    watch_for_exit(&dir);
    let primary = Server {
        dir: dir.join("primary"),
        port: free_port(),
    };
    let pwfile = dir.join("password");
    std::fs::write(&pwfile, PASSWORD).unwrap();
    give_to_system_user(&pwfile);
    let primary_dir = primary.dir.to_string_lossy().into_owned();
    let pwfile_arg = format!("--pwfile={}", pwfile.display());
    let initdb = [
        "-D",
        &primary_dir,
        "-U",
        SYSTEM_USER,
        "-A",
        "scram-sha-256",
        &pwfile_arg,
    ];
    assert!(
        run("initdb", &[&initdb[..], &["-E", "UTF8", "--no-locale"]].concat()),
        "initdb"
    );
    // initdb's pg_hba.conf lets 127.0.0.1 replicate with the password
    append(
        &primary.dir.join("postgresql.conf"),
        &format!(
            "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = ''\nmax_connections = 200\n\
             wal_level = replica\nmax_wal_senders = 10\nfsync = off\nfull_page_writes = off\n",
            primary.port
        ),
    );
    primary.start();
    eds::db::create_database_if_missing(&primary.url("postgres"), TEMPLATE, None).expect("create the template");
    eds::db::migrate(&primary.url(TEMPLATE)).expect("migrate the template");
    let standbys = (0..standbys)
        .map(|n| {
            let standby = Server {
                dir: dir.join(format!("standby{n}")),
                port: free_port(),
            };
            let conninfo = format!(
                "host=127.0.0.1 port={} user={SYSTEM_USER} password={PASSWORD}",
                primary.port
            );
            let standby_dir = standby.dir.to_string_lossy().into_owned();
            assert!(
                run(
                    "pg_basebackup",
                    &["-D", &standby_dir, "-R", "-X", "stream", "-d", &conninfo]
                ),
                "pg_basebackup"
            );
            // a later line wins: the standby's own port
            append(
                &standby.dir.join("postgresql.conf"),
                &format!("port = {}\nhot_standby = on\n", standby.port),
            );
            standby.start();
            standby
        })
        .collect();
    Replication { primary, standbys }
}

fn base_dir() -> PathBuf {
    let digest = env!("CARGO_MANIFEST_DIR")
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    std::env::temp_dir().join(format!("eds-test-replica-{digest:016x}"))
}

/// Stops and removes the servers of test processes that have ended.
fn remove_ended_runs(base: &Path) {
    let prefix = format!("{}-", base.file_name().unwrap().to_string_lossy());
    let Ok(entries) = std::fs::read_dir(base.parent().unwrap()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(&prefix).and_then(|pid| pid.parse::<u32>().ok()) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        for server in std::fs::read_dir(entry.path()).into_iter().flatten().flatten() {
            if server.path().join("PG_VERSION").exists() {
                pg_ctl(&server.path(), &["stop", "-m", "immediate", "-w"]);
            }
        }
        let _ = std::fs::remove_dir_all(entry.path());
    }
}

/// Has a shell stop the servers under `run_dir` and remove it once this
/// test process has exited.
fn watch_for_exit(run_dir: &Path) {
    let as_user = if is_root() {
        format!("runuser -u {SYSTEM_USER} -- ")
    } else {
        String::new()
    };
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
         for server in {run}/*/; do [ -f \"$server/PG_VERSION\" ] && {as_user}{pg_ctl} -D \"$server\" stop -m immediate; done; \
         rm -rf {run}",
        pid = std::process::id(),
        run = run_dir.display(),
        pg_ctl = bin_dir().join("pg_ctl").display(),
    );
    // in the background of a shell that ends at once: the watcher outlives no one's wait
    let started = Command::new("sh")
        .args(["-c", &format!("({script}) >/dev/null 2>&1 &")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("start the exit watcher");
    assert!(started.success());
}

fn pg_ctl(dir: &Path, args: &[&str]) -> bool {
    let dir = dir.to_string_lossy().into_owned();
    run("pg_ctl", &[&["-D", dir.as_str()][..], args].concat())
}

/// Runs a PostgreSQL program (as `postgres` under root); whether it succeeded.
fn run(program: &str, args: &[&str]) -> bool {
    let binary = bin_dir().join(program);
    let mut command = if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", SYSTEM_USER, "--"]).arg(&binary);
        command
    } else {
        Command::new(&binary)
    };
    let output = command
        .args(args)
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .expect("run a PostgreSQL program");
    if !output.status.success() {
        eprintln!("{program}: {}", String::from_utf8_lossy(&output.stderr));
    }
    output.status.success()
}

fn bin_dir() -> PathBuf {
    let output = Command::new("pg_config").arg("--bindir").output();
    if let Ok(output) = output
        && output.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if dir.join("pg_basebackup").is_file() && dir.join("initdb").is_file() {
            return dir;
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL server binaries under /usr/lib/postgresql")
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|dir| dir.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop().expect("initdb under /usr/lib/postgresql/*/bin")
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

fn give_to_system_user(path: &Path) {
    if is_root() {
        assert!(
            Command::new("chown")
                .args(["-R", SYSTEM_USER])
                .arg(path)
                .status()
                .unwrap()
                .success()
        );
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(format!("\n# eds replica tests\n{text}").as_bytes())
        .unwrap();
}
