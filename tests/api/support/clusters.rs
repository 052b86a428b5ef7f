//! A second PostgreSQL primary beside the shared test cluster, for
//! databases placed on another cluster and moved there: initialised once
//! under `/tmp/eds-test-second-<digest>` (one per checkout), started once
//! per test process, a fresh PostgreSQL database per test cloned from a
//! migrated template. As on the shared cluster, the databases of test
//! processes that have ended are dropped when the next process starts.

use std::path::PathBuf;
use std::sync::OnceLock;

use eds::db::{self, local_cluster::LocalCluster};

const TEMPLATE: &str = "eds_template";

fn second_dir() -> PathBuf {
    let checkout = env!("CARGO_MANIFEST_DIR");
    let digest = checkout
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    std::env::temp_dir().join(format!("eds-test-second-{digest:016x}"))
}

/// The second cluster, running, its template migrated.
fn second() -> &'static LocalCluster {
    static SECOND: OnceLock<LocalCluster> = OnceLock::new();
    SECOND.get_or_init(|| {
        let dir = second_dir();
        let lock = std::fs::File::create(dir.with_extension("lock")).expect("create the second cluster's lock file");
        lock.lock().expect("lock the second cluster");
        let cluster = LocalCluster::new(&dir).expect("PostgreSQL server binaries");
        cluster.ensure_running(true).expect("start the second cluster");
        let admin = cluster.url("postgres").unwrap();
        super::drop_databases_of_ended_processes(&admin);
        db::create_database_if_missing(&admin, TEMPLATE, None).expect("create the second template");
        db::migrate(&cluster.url(TEMPLATE).unwrap()).expect("migrate the second template");
        lock.unlock().expect("unlock the second cluster");
        cluster
    })
}

/// A fresh, migrated, empty PostgreSQL database on the second cluster; its URL.
pub fn fresh_second_database() -> String {
    let cluster = second();
    let name = format!("t_{}_{}", std::process::id(), eds::model::ids::new_id());
    let lock = std::fs::File::create(second_dir().with_extension("lock")).unwrap();
    lock.lock().unwrap();
    let created = db::create_database_if_missing(&cluster.url("postgres").unwrap(), &name, Some(TEMPLATE));
    lock.unlock().unwrap();
    created.expect("create a database on the second cluster");
    cluster.url(&name).unwrap()
}
