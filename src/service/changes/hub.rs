//! The process's change hub: one log reader per database with open
//! streams, which fetches each batch of new changes once and hands every
//! subscriber its events; the stream limits; the closing signal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::{Notify, watch};

use super::events::Parts;
use super::queue::{self, Budget};
use super::select::{Group, Subscriber, merge, select};
use crate::db::changes;
use crate::db::placement::Clusters;
use crate::error::{ApiError, ErrorCode};

/// How often a reader looks at the log when nothing woke it: changes made
/// through another process arrive within this even without `NOTIFY`.
const POLL: Duration = Duration::from_secs(1);
/// Changes read from the log at once.
const BATCH: i64 = 500;
/// A reader hands on at most one batch this often: under a stream of
/// writes, each batch then gathers many changes, and a stream costs one
/// write per batch rather than one per change. After a quiet spell the
/// first change goes at once.
const PACE: Duration = Duration::from_millis(50);

/// The change hub of a process (see the module).
pub struct ChangeHub {
    clusters: Arc<Clusters>,
    readers: Mutex<HashMap<String, Arc<Reader>>>,
    max_streams: usize,
    max_per_caller: usize,
    open: AtomicUsize,
    per_caller: DashMap<String, usize>,
    /// The bytes waiting in all its streams' queues.
    queued: Budget,
    closing: watch::Sender<bool>,
}

/// The reader of one database's log and its streams.
struct Reader {
    wake: Notify,
    state: tokio::sync::Mutex<ReaderState>,
}

#[derive(Default)]
struct ReaderState {
    groups: Vec<Group>,
    /// Set as the reader ends (no stream left): a new one starts another.
    ended: bool,
}

/// A place among the open streams, given back when dropped.
pub struct StreamSlot {
    hub: Arc<ChangeHub>,
    caller: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.hub.open.fetch_sub(1, Ordering::SeqCst);
        self.hub.per_caller.remove_if_mut(&self.caller, |_, count| {
            *count -= 1;
            *count == 0
        });
    }
}

impl ChangeHub {
    pub fn new(clusters: Arc<Clusters>, max_streams: usize, max_per_caller: usize) -> Arc<ChangeHub> {
        Arc::new(ChangeHub {
            clusters,
            readers: Mutex::default(),
            max_streams,
            max_per_caller,
            open: AtomicUsize::new(0),
            per_caller: DashMap::new(),
            queued: Budget::new(queue::PROCESS_LIMIT_BYTES),
            closing: watch::channel(false).0,
        })
    }

    /// A place for one more stream of `caller` (a login, or an address):
    /// 503 `streams_busy` when the process serves `changes.max_streams`,
    /// 429 when the caller holds `changes.max_streams_per_caller`.
    pub fn admit(self: &Arc<Self>, caller: String) -> Result<StreamSlot, ApiError> {
        if self.open.fetch_add(1, Ordering::SeqCst) >= self.max_streams {
            self.open.fetch_sub(1, Ordering::SeqCst);
            return Err(ApiError::new(
                ErrorCode::StreamsBusy,
                "This server holds as many change streams as it may; retry later",
            ));
        }
        let mut held = self.per_caller.entry(caller.clone()).or_default();
        if *held >= self.max_per_caller {
            drop(held);
            self.open.fetch_sub(1, Ordering::SeqCst);
            return Err(ApiError {
                retry_after: Some(5),
                ..ApiError::new(ErrorCode::RateLimited, "Too many open change streams for this caller")
            });
        }
        *held += 1;
        drop(held);
        Ok(StreamSlot {
            hub: self.clone(),
            caller,
        })
    }

    /// Streams open in this process.
    pub fn open_streams(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Tells every stream to end (the server is stopping).
    pub fn close_all(&self) {
        self.closing.send_replace(true);
    }

    /// Changes to when the server stops.
    pub fn closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// Wakes database `db`'s reader, if it has one: a change was committed.
    pub fn wake(&self, db: &str) {
        let readers = self.readers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(reader) = readers.get(db) {
            reader.wake.notify_one();
        }
    }

    /// Wakes every reader (the wake-up connection came back: notifications
    /// may have been missed meanwhile).
    pub fn wake_all(&self) {
        let readers = self.readers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for reader in readers.values() {
            reader.wake.notify_one();
        }
    }

    /// A new stream's queue, counted in the process's budget.
    pub(super) fn queue(&self) -> (queue::Sender, queue::Receiver) {
        queue::queue(&self.queued)
    }

    /// Adds `subscriber` to database `db`'s reader, starting one if needed.
    pub(super) async fn subscribe(self: &Arc<Self>, db: &str, subscriber: Subscriber) {
        let mut subscriber = Some(subscriber);
        loop {
            let reader = {
                let mut readers = self.readers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                readers
                    .entry(db.to_owned())
                    .or_insert_with(|| {
                        let reader = Arc::new(Reader {
                            wake: Notify::new(),
                            state: Default::default(),
                        });
                        tokio::spawn(self.clone().read(db.to_owned(), reader.clone()));
                        reader
                    })
                    .clone()
            };
            let mut state = reader.state.lock().await;
            if state.ended {
                // that reader is going away: take the next one
                drop(state);
                self.forget(db, &reader);
                continue;
            }
            if let Some(subscriber) = subscriber.take() {
                let unplaced = state
                    .groups
                    .iter_mut()
                    .try_fold(subscriber, |subscriber, group| group.admit(subscriber));
                state.groups.extend(unplaced.map(Group::new));
            }
            reader.wake.notify_one();
            return;
        }
    }

    fn forget(&self, db: &str, reader: &Arc<Reader>) {
        let mut readers = self.readers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if readers.get(db).is_some_and(|kept| Arc::ptr_eq(kept, reader)) {
            readers.remove(db);
        }
    }

    /// Database `db`'s log reader: woken by a notification or every
    /// [`POLL`], it reads the changes after its furthest-behind stream and
    /// hands each stream the events of those after its own cursor.
    /// It holds a pool connection only while reading and selecting a batch;
    /// it ends when no stream is left.
    async fn read(self: Arc<Self>, db: String, reader: Arc<Reader>) {
        loop {
            tokio::select! {
                () = reader.wake.notified() => {}
                () = tokio::time::sleep(POLL) => {}
            }
            let began = tokio::time::Instant::now();
            let mut handed = false;
            loop {
                let mut state = reader.state.lock().await;
                state.groups.retain_mut(Group::keep_open);
                if state.groups.is_empty() {
                    state.ended = true;
                    drop(state);
                    self.forget(&db, &reader);
                    return;
                }
                match self.step(&db, &mut state.groups).await {
                    Ok(Step { read, more }) => {
                        handed |= read;
                        if !more {
                            break;
                        }
                    }
                    Err(error) => {
                        tracing::warn!(db, %error, "reading the change log failed; retrying");
                        break;
                    }
                }
            }
            if handed {
                // wake-ups meanwhile are kept: the next batch starts then
                tokio::time::sleep_until(began + PACE).await;
            }
        }
    }

    /// One batch.
    async fn step(&self, db: &str, groups: &mut Vec<Group>) -> Result<Step, ApiError> {
        let from = groups.iter().map(|group| group.cursor).min().unwrap_or_default();
        // the database's cluster now: a reader follows a move
        let mut conn = self.clusters.pool_for(db)?.get().await?;
        let rows = changes::after(&mut conn, db, from, BATCH).await?;
        let Some(last) = rows.last().map(|row| row.id) else {
            return Ok(Step {
                read: false,
                more: false,
            });
        };
        let batches = select(&mut conn, db, &rows, groups).await?;
        drop(conn);
        let mut parts = Parts::new(&self.queued);
        for (group, batch) in groups.iter_mut().zip(&batches) {
            group.hand(batch, last, &mut parts);
        }
        groups.retain_mut(Group::keep_open);
        merge(groups);
        Ok(Step {
            read: true,
            more: rows.len() as i64 == BATCH,
        })
    }
}

/// What one batch found.
struct Step {
    /// Some changes were read (and handed on).
    read: bool,
    /// The log may hold more.
    more: bool,
}
