//! Debian's PgBouncer in transaction pooling mode in front of the shared test
//! cluster: one per test process, started on first use under
//! `/tmp/eds-test-bouncer-<digest>-<pid>`, and ended with the process (a
//! shell stopping it when the process's end closes its stdin). Directories
//! of ended processes are removed at the next start.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

pub const BINARY: &str = "/usr/sbin/pgbouncer";
/// Server connections per database and user: fewer than the eds pool's, so
/// requests share them.
pub const POOL_SIZE: usize = 2;

pub struct PgBouncer {
    pub port: u16,
    dir: PathBuf,
    /// `[databases]` lines besides the catch-all one.
    databases: Mutex<Vec<String>>,
    /// The cluster's port and the superuser's password (the URLs' own).
    cluster_port: u16,
    password: String,
    _stopper: Mutex<Child>,
}

impl PgBouncer {
    /// The URL of database `name` through PgBouncer.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// The URL of database `name` on the cluster itself.
    pub fn direct_url(&self, name: &str) -> String {
        format!(
            "postgres://postgres:{}@127.0.0.1:{}/{name}",
            self.password, self.cluster_port
        )
    }

    /// Serves database `name` with a pool of `pool_size` server connections
    /// instead of [`POOL_SIZE`] (benchmarks: as many as eds's own pool).
    pub async fn pool_size(&self, name: &str, pool_size: usize) {
        let line = format!(
            "{name} = host=127.0.0.1 port={} pool_size={pool_size}",
            self.cluster_port
        );
        let lines = {
            let mut databases = self.databases.lock().unwrap();
            databases.push(line);
            databases.clone()
        };
        write_ini(&self.dir, self.port, self.cluster_port, &lines);
        self.admin("RELOAD").await;
    }

    /// Runs `command` on PgBouncer's admin console (simple queries only).
    pub async fn admin(&self, command: &str) {
        let (client, connection) = tokio_postgres::connect(&self.url("pgbouncer"), tokio_postgres::NoTls)
            .await
            .expect("connect to PgBouncer's console");
        tokio::spawn(connection);
        client.simple_query(command).await.expect(command);
    }
}

/// The database name of a test database URL.
pub fn database_name(url: &str) -> String {
    url.rsplit('/').next().unwrap().to_owned()
}

/// The process's PgBouncer, started on first use.
pub fn pgbouncer() -> &'static PgBouncer {
    static BOUNCER: OnceLock<PgBouncer> = OnceLock::new();
    BOUNCER.get_or_init(start)
}

fn start() -> PgBouncer {
    assert!(
        Path::new(BINARY).exists(),
        "{BINARY} is missing: `make deps` installs Debian's pgbouncer package"
    );
    // the shared cluster's port and password, from a URL of it
    let sample = url::Url::parse(&super::fresh_database()).unwrap();
    let cluster_port = sample.port().unwrap();
    let password = sample.password().unwrap().to_owned();
    let prefix = format!("eds-test-bouncer-{}-", checkout_digest());
    remove_dirs_of_ended_processes(&prefix);
    let dir = std::env::temp_dir().join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // the user list holds the cluster's password
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    write(&dir.join("userlist.txt"), &format!("\"postgres\" \"{password}\"\n"));
    write_ini(&dir, port, cluster_port, &[]);
    let as_root = is_root();
    if as_root {
        // PgBouncer refuses to run as root
        let status = Command::new("chown")
            .args(["-R", "postgres"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success(), "chown {}", dir.display());
    }
    let script = format!(
        "{BINARY} -q {ini} & pid=$!; read _; kill $pid",
        ini = dir.join("pgbouncer.ini").display()
    );
    let mut command = if as_root {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--", "sh", "-c", &script]);
        command
    } else {
        let mut command = Command::new("sh");
        command.args(["-c", &script]);
        command
    };
    let stopper = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pgbouncer");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "pgbouncer did not listen; see {}/pgbouncer.log",
            dir.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    PgBouncer {
        port,
        dir,
        databases: Mutex::new(Vec::new()),
        cluster_port,
        password,
        _stopper: Mutex::new(stopper),
    }
}

fn write_ini(dir: &Path, port: u16, cluster_port: u16, databases: &[String]) {
    write(
        &dir.join("pgbouncer.ini"),
        &format!(
            "[databases]\n\
             {databases}\
             * = host=127.0.0.1 port={cluster_port}\n\
             [pgbouncer]\n\
             listen_addr = 127.0.0.1\n\
             listen_port = {port}\n\
             unix_socket_dir =\n\
             auth_type = trust\n\
             auth_file = {dir}/userlist.txt\n\
             admin_users = postgres\n\
             pool_mode = transaction\n\
             default_pool_size = {POOL_SIZE}\n\
             max_client_conn = 500\n\
             server_idle_timeout = 10\n\
             logfile = {dir}/pgbouncer.log\n\
             pidfile = {dir}/pgbouncer.pid\n",
            databases = databases.iter().map(|line| format!("{line}\n")).collect::<String>(),
            dir = dir.display()
        ),
    );
}

fn write(path: &Path, text: &str) {
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

fn checkout_digest() -> String {
    let digest = env!("CARGO_MANIFEST_DIR")
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    format!("{digest:016x}")
}

/// Removes the directories (and stops the PgBouncer) of test processes that have ended.
fn remove_dirs_of_ended_processes(prefix: &str) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(prefix).and_then(|pid| pid.parse::<u32>().ok()) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let dir: PathBuf = entry.path();
        if let Ok(bouncer) = std::fs::read_to_string(dir.join("pgbouncer.pid")) {
            let _ = Command::new("kill").arg(bouncer.trim()).status();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
