//! The connection pool. The server's pool keeps a share of its connections
//! per HTTP worker thread: a connection's driver runs on the thread that
//! opened it, so a query from another thread wakes that thread and waits for
//! it to be woken back — two thread hand-offs per statement, about a fifth of
//! a read by id's CPU. Threads that are not HTTP workers (the writers, the
//! background work) share one more share.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use deadpool::Status;
use deadpool::managed::{Manager, Metrics, Object, RecycleResult};
use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::deadpool::PoolError;
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod};

use super::pooler;

type Shard = deadpool::managed::Pool<Connections>;

/// Connections to one database; cloning shares them.
#[derive(Clone)]
pub struct Pool {
    /// One per HTTP worker, then the one of every other thread; or one for all.
    shards: Arc<[Shard]>,
}

/// A connection taken from a [`Pool`], given back when dropped.
pub type Connection = Object<Connections>;

thread_local! {
    /// This thread's number among the HTTP workers, when it is one.
    static WORKER: Cell<Option<usize>> = const { Cell::new(None) };
}
static WORKERS_STARTED: AtomicUsize = AtomicUsize::new(0);

/// Marks the calling thread as an HTTP worker: it takes its connections from
/// its own share of a per-worker pool from now on.
pub fn enter_worker_thread() {
    WORKER.with(|worker| {
        if worker.get().is_none() {
            worker.set(Some(WORKERS_STARTED.fetch_add(1, Ordering::Relaxed)));
        }
    });
}

impl Pool {
    /// A connection from the calling thread's share.
    pub async fn get(&self) -> Result<Connection, PoolError> {
        self.shard().get().await
    }

    /// The shares' sizes and waiters, added up.
    pub fn status(&self) -> Status {
        self.shards.iter().map(Shard::status).fold(
            Status {
                max_size: 0,
                size: 0,
                available: 0,
                waiting: 0,
            },
            |sum, status| Status {
                max_size: sum.max_size + status.max_size,
                size: sum.size + status.size,
                available: sum.available + status.available,
                waiting: sum.waiting + status.waiting,
            },
        )
    }

    fn manager(&self) -> &Connections {
        self.shard().manager()
    }

    fn shard(&self) -> &Shard {
        let workers = self.shards.len() - 1;
        match WORKER.with(Cell::get) {
            Some(worker) if workers > 0 => &self.shards[worker % workers],
            _ => &self.shards[workers],
        }
    }
}

/// A pool whose connections cancel any statement running over
/// `statement_timeout_ms` (0: no limit). Waiting for a free connection is
/// bounded by the same time, so a burst of slow queries is answered 503
/// instead of queueing requests without end. JIT compilation is off: it costs
/// tens of milliseconds per query and pays off only for long analytical ones.
/// So are parallel workers: starting them costs milliseconds per query, and
/// the plans kept for any value (see `query::sql`) estimate a third of a
/// table for every range, so past a million value rows a 20-row page was
/// planned parallel and served at a quarter of its rate.
pub fn pool(url: &str, size: usize, statement_timeout_ms: u64) -> Result<Pool, String> {
    pool_per_worker(url, false, size, statement_timeout_ms, 0)
}

/// As [`pool`], its `size` connections shared out among `workers` HTTP
/// worker threads, the rest to the other threads; a pool too small to give
/// each share two connections (a request may hold one while it takes
/// another) stays whole. With `behind_pooler`, `url` is a
/// transaction-pooling PgBouncer (see [`pooler`]): the limits are the role's
/// settings, kept there by [`pooler::keep_limits_on_role`].
pub fn pool_per_worker(
    url: &str,
    behind_pooler: bool,
    size: usize,
    statement_timeout_ms: u64,
    workers: usize,
) -> Result<Pool, String> {
    let url = match behind_pooler {
        true => url.to_owned(),
        false => {
            let separator = if url.contains('?') { '&' } else { '?' };
            format!(
                "{url}{separator}options=-c%20statement_timeout%3D{statement_timeout_ms}%20-c%20jit%3Doff\
                 %20-c%20max_parallel_workers_per_gather%3D0"
            )
        }
    };
    let share = size / (workers + 1);
    let sizes = match share {
        0 | 1 => vec![size],
        _ => [vec![share; workers], vec![size - share * workers]].concat(),
    };
    let wait = (statement_timeout_ms > 0).then(|| Duration::from_millis(statement_timeout_ms));
    let shards = sizes
        .into_iter()
        .map(|size| {
            Shard::builder(Connections::new(url.clone(), behind_pooler))
                .max_size(size)
                .wait_timeout(wait)
                .runtime(deadpool::Runtime::Tokio1)
                .build()
                .map_err(|e| format!("cannot build the connection pool: {e}"))
        })
        .collect::<Result<Arc<[Shard]>, String>>()?;
    Ok(Pool { shards })
}

/// The server's pool on `url`, shared out among `workers` HTTP worker
/// threads: one behind a pooler when `direct_url` is another address, with
/// the limits kept on the role first.
pub async fn server_pool(
    url: &str,
    direct_url: &str,
    size: usize,
    statement_timeout_ms: u64,
    workers: usize,
) -> Result<Pool, String> {
    let behind_pooler = direct_url != url;
    if behind_pooler {
        pooler::keep_limits_on_role(direct_url, statement_timeout_ms).await?;
    }
    pool_per_worker(url, behind_pooler, size, statement_timeout_ms, workers)
}

/// How long after its last use a pooled connection is handed out again
/// without a round trip to check it.
const TRUSTED_FOR: Duration = Duration::from_secs(1);

/// The pool's connections. One taken again within [`TRUSTED_FOR`] of its
/// last use is handed out unless it is known broken; one idle for longer is
/// checked with a query first, as PostgreSQL or a proxy may have closed it
/// meanwhile. Checking every connection every time cost a round trip, as
/// much as a read by id's own statements.
pub struct Connections {
    checked: AsyncDieselConnectionManager<AsyncPgConnection>,
    trusted: AsyncDieselConnectionManager<AsyncPgConnection>,
}

impl Connections {
    fn new(url: String, behind_pooler: bool) -> Connections {
        let config = || {
            let mut config = ManagerConfig::default();
            if behind_pooler {
                config.custom_setup = Box::new(pooler::connect);
            }
            config
        };
        let mut trusted = config();
        trusted.recycling_method = RecyclingMethod::Fast;
        Connections {
            checked: AsyncDieselConnectionManager::new_with_config(url.clone(), config()),
            trusted: AsyncDieselConnectionManager::new_with_config(url, trusted),
        }
    }
}

impl Manager for Connections {
    type Type = AsyncPgConnection;
    type Error = diesel_async::pooled_connection::PoolError;

    async fn create(&self) -> Result<AsyncPgConnection, Self::Error> {
        self.checked.create().await
    }

    async fn recycle(&self, conn: &mut AsyncPgConnection, metrics: &Metrics) -> RecycleResult<Self::Error> {
        if metrics.last_used() < TRUSTED_FOR {
            self.trusted.recycle(conn, metrics).await
        } else {
            self.checked.recycle(conn, metrics).await
        }
    }
}

/// A new connection to the pool's database, outside the pool: for running a
/// write again after its connection broke, when the pooled ones may have
/// broken with it (PostgreSQL restarted).
pub async fn new_connection(pool: &Pool) -> Result<AsyncPgConnection, crate::error::ApiError> {
    pool.manager()
        .create()
        .await
        .map_err(|error| deadpool::managed::PoolError::Backend(error).into())
}
