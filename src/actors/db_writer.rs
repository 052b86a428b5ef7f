//! One writer actor per database: writes for a database are applied one at a
//! time, in arrival order. It is the fast path; the entity row lock inside each
//! transaction keeps writes correct when several processes serve one database.

use actix::prelude::*;
use dashmap::DashMap;
use tracing::Instrument;

use crate::db::Pool;
use crate::http::error::ApiError;
use crate::metrics;
use crate::write::{self, WriteOutcome, WriteRequest};

pub struct DbWriter {
    pool: Pool,
    mailbox: usize,
}

impl Actor for DbWriter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(self.mailbox);
    }
}

/// A write, the request span it was sent from (the writer logs under it), and
/// its place in the mailbox-depth gauge, given up when the writer takes it.
#[derive(Message)]
#[rtype(result = "Result<WriteOutcome, ApiError>")]
pub struct Write(pub WriteRequest, pub tracing::Span, pub metrics::Queued);

impl Handler<Write> for DbWriter {
    // Atomic: the next message starts only when this write has committed.
    type Result = AtomicResponse<Self, Result<WriteOutcome, ApiError>>;

    fn handle(&mut self, message: Write, _: &mut Self::Context) -> Self::Result {
        let Write(request, span, _) = message;
        let pool = self.pool.clone();
        AtomicResponse::new(Box::pin(
            async move {
                let outcome = write::apply(&pool, request).await;
                if outcome.is_ok() {
                    // each write is its own transaction
                    metrics::observe_commit_batch(1);
                }
                outcome
            }
            .instrument(span)
            .into_actor(self),
        ))
    }
}

/// The writers of every database, started on first use.
pub struct Writers {
    pool: Pool,
    mailbox: usize,
    writers: DashMap<String, Addr<DbWriter>>,
}

impl Writers {
    pub fn new(pool: Pool, mailbox: usize) -> Writers {
        Writers {
            pool,
            mailbox,
            writers: DashMap::new(),
        }
    }

    /// Sends a write to its database's writer and waits for the outcome.
    pub async fn write(&self, request: WriteRequest) -> Result<WriteOutcome, ApiError> {
        let writer = self
            .writers
            .entry(request.db.clone())
            .or_insert_with(|| {
                DbWriter {
                    pool: self.pool.clone(),
                    mailbox: self.mailbox,
                }
                .start()
            })
            .clone();
        writer
            .send(Write(request, tracing::Span::current(), metrics::writer_queued()))
            .await
            .map_err(|e| ApiError::internal("writer actor unavailable", e))?
    }
}
