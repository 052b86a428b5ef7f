//! One writer actor per database: writes for a database are applied in
//! arrival order, and those that arrive while a commit is under way go
//! together into the next transaction (group commit), so many concurrent
//! writers share one wait for the disk. When several processes serve one
//! database, each transaction first takes the database's write lock in
//! PostgreSQL, so the writers of all processes take turns as one would.

use std::sync::Arc;

use actix::prelude::*;
use dashmap::DashMap;
use tokio::sync::{Notify, oneshot};
use tracing::Span;

use super::home::ActorHome;
use crate::auth::api_key::GeneratedKey;
use crate::db::placement::Clusters;
use crate::db::{queued_work, replicas};
use crate::error::{ApiError, ErrorCode};
use crate::metrics;
use crate::write::{self, WriteOp, WriteOutcome, WriteRequest, WriteRules, WriterCache};

type Reply = oneshot::Sender<Result<Committed, ApiError>>;

/// A write's outcome and the primary's WAL position after its transaction
/// committed (read once per transaction; `None` when it could not be read).
pub struct Committed {
    pub outcome: WriteOutcome,
    pub position: Option<u64>,
}

pub struct DbWriter {
    db: String,
    clusters: Arc<Clusters>,
    limits: WriterLimits,
    formulas_due: Arc<Notify>,
    /// Writes waiting for the next transaction, in arrival order.
    waiting: Vec<Waiting>,
    committing: bool,
    /// What its last transaction learned (taken by the one under way).
    known: WriterCache,
}

/// How many writes may wait for a database, and how many share a transaction.
#[derive(Debug, Clone, Copy)]
pub struct WriterLimits {
    pub waiting: usize,
    pub batch: usize,
    /// What its transactions check themselves.
    pub rules: WriteRules,
    /// Whether each transaction reads its commit position, for the answers'
    /// `Eds-Consistency`: a round trip that only read replicas need.
    pub positions: bool,
}

impl Actor for DbWriter {
    type Context = Context<Self>;
}

/// A write, the API keys it asks for (hashed before: never in the writer's
/// turn) and the request span it was sent from (the writer logs under it).
#[derive(Message)]
#[rtype(result = "Result<Committed, ApiError>")]
pub struct Write(pub WriteRequest, pub Vec<GeneratedKey>, pub Span);

struct Waiting {
    request: WriteRequest,
    keys: Vec<GeneratedKey>,
    span: Span,
    reply: Reply,
    /// Its place in the writer-queue gauge, given up when its transaction starts.
    _queued: metrics::Queued,
}

impl Handler<Write> for DbWriter {
    type Result = ResponseFuture<Result<Committed, ApiError>>;

    fn handle(&mut self, message: Write, ctx: &mut Self::Context) -> Self::Result {
        if self.waiting.len() >= self.limits.waiting {
            return Box::pin(async { Err(busy()) });
        }
        let (reply, outcome) = oneshot::channel();
        let Write(request, keys, span) = message;
        self.waiting.push(Waiting {
            request,
            keys,
            span,
            reply,
            _queued: metrics::writer_queued(),
        });
        self.commit_next(ctx);
        Box::pin(async move {
            outcome
                .await
                .unwrap_or_else(|e| Err(ApiError::internal("writer stopped", e)))
        })
    }
}

impl DbWriter {
    /// Starts a transaction with the writes waiting, unless one is under way
    /// (it starts the next when it ends).
    fn commit_next(&mut self, ctx: &mut Context<Self>) {
        if self.committing || self.waiting.is_empty() {
            return;
        }
        self.committing = true;
        let take = self.waiting.len().min(self.limits.batch);
        // a batch of operations commits alone: the writes grouped with it
        // neither wait for its re-run when it is refused, nor fail with it
        let take = match self.waiting[..take]
            .iter()
            .position(|w| matches!(w.request.op, WriteOp::Batch(_)))
        {
            Some(0) => 1,
            Some(before) => before,
            None => take,
        };
        let (requests, replies): (Vec<_>, Vec<_>) = self
            .waiting
            .drain(..take)
            .map(|waiting| ((waiting.request, waiting.keys, waiting.span), waiting.reply))
            .unzip();
        metrics::observe_commit_batch(requests.len());
        let (db, clusters, limits) = (self.db.clone(), self.clusters.clone(), self.limits);
        let formulas_due = self.formulas_due.clone();
        let mut known = std::mem::take(&mut self.known);
        ctx.spawn(
            async move {
                let queued_before = queued_work::count();
                let outcomes = apply_where_placed(&clusters, &db, &requests, &mut known, limits.rules).await;
                if queued_work::count() != queued_before {
                    formulas_due.notify_one();
                }
                // one position for the whole transaction, for the answers' Eds-Consistency
                // (the replicas stand by the home cluster)
                let committed = outcomes.iter().any(Result::is_ok);
                let position = match limits.positions && committed && clusters.is_home(&db) {
                    true => replicas::commit_position(clusters.home()).await,
                    false => None,
                };
                for (reply, outcome) in replies.into_iter().zip(outcomes) {
                    // a caller that went away no longer needs its answer
                    let _ = reply.send(outcome.map(|outcome| Committed { outcome, position }));
                }
                known
            }
            .into_actor(self)
            .map(|known, writer, ctx| {
                writer.known = known;
                writer.committing = false;
                writer.commit_next(ctx);
            }),
        );
    }
}

/// Applies the batch on the cluster database `db` lives on. A batch that
/// failed whole may have met the old copy of a database moved meanwhile (it
/// finds no live database there): when the placement table names another
/// cluster now, the batch, which wrote nothing, runs there.
async fn apply_where_placed(
    clusters: &Clusters,
    db: &str,
    requests: &[(WriteRequest, Vec<GeneratedKey>, Span)],
    known: &mut WriterCache,
    rules: WriteRules,
) -> Vec<Result<WriteOutcome, ApiError>> {
    let url = clusters.url_of(db);
    let outcomes = match clusters.pool_at(&url) {
        Ok(pool) => write::apply_batch_under(&pool, requests, known, rules).await,
        Err(error) => return vec![Err(error); requests.len()],
    };
    // the old copy answers as a database gone: an internal error, never a refusal
    let failed_whole = outcomes
        .iter()
        .all(|outcome| matches!(outcome, Err(error) if error.code == ErrorCode::Internal));
    if !failed_whole {
        return outcomes;
    }
    match clusters.reload().await {
        Ok(_) if clusters.url_of(db) != url => {
            tracing::info!(db, "the database moved: its writes go to its new cluster");
            *known = WriterCache::default();
            match clusters.pool_for(db) {
                Ok(pool) => write::apply_batch_under(&pool, requests, known, rules).await,
                Err(error) => vec![Err(error); requests.len()],
            }
        }
        _ => outcomes,
    }
}

fn busy() -> ApiError {
    ApiError::new(
        ErrorCode::WritesBusy,
        "Too many writes are waiting for this database; retry later",
    )
}

/// The writers of every database, started on first use.
pub struct Writers {
    clusters: Arc<Clusters>,
    limits: WriterLimits,
    writers: DashMap<String, Addr<DbWriter>>,
    formulas_due: Arc<Notify>,
    home: ActorHome,
}

impl Writers {
    pub fn new(clusters: Arc<Clusters>, limits: WriterLimits) -> Writers {
        Writers {
            clusters,
            limits,
            writers: DashMap::new(),
            formulas_due: Arc::new(Notify::new()),
            home: ActorHome::default(),
        }
    }

    /// Notified after every commit: wakes the formula worker.
    pub fn formulas_due(&self) -> Arc<Notify> {
        self.formulas_due.clone()
    }

    /// Sends a write, with the keys it asks for, to its database's writer and
    /// waits for the outcome.
    pub async fn write(&self, request: WriteRequest, keys: Vec<GeneratedKey>) -> Result<WriteOutcome, ApiError> {
        self.write_committed(request, keys)
            .await
            .map(|committed| committed.outcome)
    }

    /// [`Writers::write`], with the commit position of the write.
    pub async fn write_committed(&self, request: WriteRequest, keys: Vec<GeneratedKey>) -> Result<Committed, ApiError> {
        let writer = self
            .writers
            .entry(request.db.clone())
            .or_insert_with(|| {
                let (clusters, limits, formulas_due) = (self.clusters.clone(), self.limits, self.formulas_due.clone());
                let db = request.db.clone();
                DbWriter::start_in_arbiter(&self.home.handle(), move |_| {
                    // its connections' drivers then run on its own thread
                    crate::db::enter_writers_thread();
                    DbWriter {
                        db,
                        clusters,
                        limits,
                        formulas_due,
                        waiting: Vec::new(),
                        committing: false,
                        known: WriterCache::default(),
                    }
                })
            })
            .clone();
        writer
            .send(Write(request, keys, Span::current()))
            .await
            .map_err(|e| ApiError::internal("writer actor unavailable", e))?
    }
}
