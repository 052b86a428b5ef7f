//! The connection pool. The server's pool keeps a share of its connections
//! per HTTP worker thread, and one for the thread the writers run on: a
//! connection's driver runs on the thread that opened it, so a query from
//! another thread wakes that thread and waits for it to be woken back — two
//! thread hand-offs per statement, about a fifth of a read by id's CPU, and
//! on a busy machine a wait for a time slice at each of a write's round
//! trips while it holds its database's writer. The other threads (the
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
    /// One per HTTP worker, the writers' thread's, then the one of every
    /// other thread; or one for all.
    shards: Arc<[Shard]>,
}

/// A connection taken from a [`Pool`], given back when dropped.
pub type Connection = Object<Connections>;

/// Whose share of a per-worker pool a thread takes its connections from.
#[derive(Clone, Copy)]
enum Share {
    HttpWorker(usize),
    Writers,
    Rest,
}

thread_local! {
    static SHARE: Cell<Share> = const { Cell::new(Share::Rest) };
}
static WORKERS_STARTED: AtomicUsize = AtomicUsize::new(0);

/// Marks the calling thread as an HTTP worker: it takes its connections from
/// its own share of a per-worker pool from now on.
pub fn enter_worker_thread() {
    SHARE.with(|share| {
        if matches!(share.get(), Share::Rest) {
            share.set(Share::HttpWorker(WORKERS_STARTED.fetch_add(1, Ordering::Relaxed)));
        }
    });
}

/// Marks the calling thread as the one the writers run on: it takes its
/// connections from the writers' share of a per-worker pool from now on.
pub fn enter_writers_thread() {
    SHARE.with(|share| share.set(Share::Writers));
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
        let rest = self.shards.len() - 1;
        if rest == 0 {
            return &self.shards[0];
        }
        let workers = rest - 1;
        match SHARE.with(Cell::get) {
            Share::HttpWorker(worker) => &self.shards[worker % workers],
            Share::Writers => &self.shards[workers],
            Share::Rest => &self.shards[rest],
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
/// worker threads, the writers' thread and the other threads; a pool too
/// small to give each share two connections (a request may hold one while
/// it takes another), or shared by no workers, stays whole. With
/// `behind_pooler`, `url` is a transaction-pooling PgBouncer (see
/// [`pooler`]): the limits are the role's settings, kept there by
/// [`pooler::keep_limits_on_role`].
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
    let wait = (statement_timeout_ms > 0).then(|| Duration::from_millis(statement_timeout_ms));
    let shards = share_sizes(size, workers)
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

/// The sizes of a pool's shares: `workers` equal ones, then the rest halved
/// (the writers' share, the other threads'), or one for all.
fn share_sizes(size: usize, workers: usize) -> Vec<usize> {
    let share = size / (workers + 1);
    let rest = size.saturating_sub(share * workers);
    match workers > 0 && share >= 2 && rest >= 4 {
        true => [vec![share; workers], vec![rest / 2, rest - rest / 2]].concat(),
        false => vec![size],
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writers_have_a_share_of_their_own_beside_the_workers_and_the_rest() {
        assert_eq!(share_sizes(16, 2), [5, 5, 3, 3]);
        assert_eq!(share_sizes(32, 3), [8, 8, 8, 4, 4]);
        // every share holds two, or the pool stays whole
        assert_eq!(share_sizes(6, 2), [6]);
        assert_eq!(share_sizes(16, 0), [16]);
    }

    #[test]
    fn each_thread_takes_its_connections_from_its_own_share() {
        let pool = pool_per_worker("postgres://nobody@127.0.0.1:1/none", false, 16, 0, 2).unwrap();
        let share_of = |enter: fn()| {
            let pool = pool.clone();
            std::thread::spawn(move || {
                enter();
                let shard: *const Shard = pool.shard();
                pool.shards.iter().position(|candidate| std::ptr::eq(candidate, shard))
            })
            .join()
            .unwrap()
        };
        // two workers started one after the other: the two workers' shares
        let mut workers = [share_of(enter_worker_thread), share_of(enter_worker_thread)];
        workers.sort();
        assert_eq!(workers, [Some(0), Some(1)]);
        assert_eq!(share_of(enter_writers_thread), Some(2));
        assert_eq!(share_of(|| ()), Some(3));
    }
}
