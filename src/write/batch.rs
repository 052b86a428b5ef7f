//! The transaction around a batch of writes: one commit for all, and a
//! savepoint per write when one of them is refused.

use chrono::{DateTime, Utc};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use tracing::{Instrument, Span};

use super::cache::{TransactionCache, WriterCache};
use super::{
    WriteOp, WriteOutcome, WriteRequest, WriteRules, access, add, aggregate, batch_ops, create, delete, duplicate,
    idempotency, login, restore, webhook,
};
use crate::auth::api_key::GeneratedKey;
use crate::db::generation;
use crate::error::{ApiError, ErrorCode};

/// How a batch's transaction failed.
pub(super) enum Failed {
    /// No connection came: nothing ran.
    NoConnection(ApiError),
    /// Before COMMIT: nothing of it was written.
    BeforeCommit(ApiError),
    /// At COMMIT: whether it was written is unknown to the server.
    AtCommit(ApiError),
}

/// Why a batch that wrote nothing may run again, whole.
pub(super) enum Rerun {
    /// The connection broke before COMMIT: on another connection.
    LostConnection,
    /// PostgreSQL rolled it back for a deadlock or a serialization failure.
    Conflict,
}

impl Failed {
    pub(super) fn rerun(&self) -> Option<Rerun> {
        match self {
            Failed::BeforeCommit(error) => match error.code {
                ErrorCode::DatabaseUnavailable => Some(Rerun::LostConnection),
                ErrorCode::WriteConflict => Some(Rerun::Conflict),
                _ => None,
            },
            Failed::NoConnection(_) | Failed::AtCommit(_) => None,
        }
    }

    /// Whether one of the writes was refused: the others may pass without it.
    pub(super) fn refused(&self) -> bool {
        matches!(self, Failed::BeforeCommit(_)) && self.rerun().is_none()
    }

    pub(super) fn into_error(self) -> ApiError {
        match self {
            Failed::NoConnection(error) | Failed::BeforeCommit(error) | Failed::AtCommit(error) => error,
        }
    }
}

/// Runs writes, all of one database, in one transaction. With `isolated`,
/// each runs in a savepoint and a refusal is its outcome; without, the first
/// refusal rolls back all. Either way a lost connection or a conflict rolls
/// back all. What the writer `known` from earlier transactions is used while
/// still true, and holds this one's after it commits.
///
/// The transaction first takes the database's write lock, so the writers of
/// several processes take their turns as those of one process do: no two
/// batches lock rows, counters and idempotency keys in opposite orders.
pub(super) async fn run_batch(
    conn: &mut AsyncPgConnection,
    batch: &[(WriteRequest, Vec<GeneratedKey>, Span)],
    isolated: bool,
    known: &mut WriterCache,
    rules: WriteRules,
) -> Result<Vec<Result<WriteOutcome, ApiError>>, Failed> {
    let Some((first, ..)) = batch.first() else {
        return Ok(Vec::new());
    };
    let db = first.db.as_str();
    let earlier = std::mem::take(known);
    let mut committing = false;
    let reached_commit = &mut committing;
    let result = conn
        .transaction(|conn| {
            async move {
                let found = generation::begin_writes(conn, db).await?;
                let mut cache = TransactionCache::after(earlier, found);
                let now = Utc::now();
                let mut outcomes = Vec::with_capacity(batch.len());
                for (request, keys, span) in batch {
                    let (request, keys) = (request.clone(), keys.clone());
                    if !isolated {
                        let outcome = apply_one(conn, &mut cache, request, keys, now).instrument(span.clone());
                        outcomes.push(Ok(outcome.await?));
                        continue;
                    }
                    let caching = &mut cache;
                    let outcome = conn
                        .transaction(|conn| {
                            async move {
                                let outcome = apply_one(conn, caching, request, keys, now).await?;
                                // inside its savepoint: a refusal there is this write's
                                caching.pending.store(conn, db).await?;
                                webhook::check_count(conn, caching, db, rules.max_webhooks).await?;
                                Ok::<_, ApiError>(outcome)
                            }
                            .instrument(span.clone())
                            .scope_boxed()
                        })
                        .await;
                    if let Err(error) = &outcome {
                        // not this write's refusal: the connection is gone,
                        // or the transaction met another in a deadlock
                        if matches!(error.code, ErrorCode::DatabaseUnavailable | ErrorCode::WriteConflict) {
                            return Err(error.clone());
                        }
                        // what it cached may have been rolled back with it
                        cache = TransactionCache::default();
                    }
                    outcomes.push(outcome);
                }
                cache.pending.store(conn, db).await?;
                webhook::check_count(conn, &mut cache, db, rules.max_webhooks).await?;
                let left = generation::bump_generation(conn, db).await?;
                *reached_commit = true;
                // only this transaction changed entities since `found`: what
                // it learned stays true after its commit
                let kept = (left == found + 1).then(|| cache.kept(left));
                Ok((outcomes, kept))
            }
            .scope_boxed()
        })
        .await;
    match result {
        Ok((outcomes, kept)) => {
            *known = kept.unwrap_or_default();
            Ok(outcomes)
        }
        Err(error) if committing => Err(Failed::AtCommit(error)),
        Err(error) => Err(Failed::BeforeCommit(error)),
    }
}

async fn apply_one(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    request: WriteRequest,
    keys: Vec<GeneratedKey>,
    batch_now: DateTime<Utc>,
) -> Result<WriteOutcome, ApiError> {
    let (db, actor) = (request.db.as_str(), request.actor.as_str());
    // New entities of one transaction share its moment, so that they are
    // stored together (a new entity's history is its own). Any other write
    // may read them: they are stored first, and it takes its own moment.
    let now = if matches!(request.op, WriteOp::CreateEntity { .. }) {
        batch_now
    } else {
        cache.pending.store(conn, db).await?;
        Utc::now()
    };
    // a new login's person is the actor of its own creation
    let creates_actor = matches!(request.op, WriteOp::AddUser { .. });
    if !creates_actor && !cache.persons.contains(actor) {
        access::require_person(conn, db, actor).await?;
        cache.persons.insert(actor.to_owned());
    }
    let Some(key) = request.idempotency else {
        return apply_op(conn, cache, db, actor, now, request.op, keys).await;
    };
    if let Some(first) = idempotency::first_outcome(conn, db, actor, &key, now).await? {
        return Ok(first);
    }
    let outcome = apply_op(conn, cache, db, actor, now, request.op, keys).await?;
    idempotency::record(conn, db, actor, &key, &outcome, now).await?;
    Ok(outcome)
}

async fn apply_op(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    actor: &str,
    now: DateTime<Utc>,
    op: WriteOp,
    keys: Vec<GeneratedKey>,
) -> Result<WriteOutcome, ApiError> {
    match op {
        WriteOp::CreateEntity { values } => create::create_entity(conn, cache, db, actor, now, values, keys).await,
        WriteOp::AddValues { entity_id, values } => {
            add::add_values(conn, cache, db, actor, now, &entity_id, values, keys).await
        }
        WriteOp::DeleteValue { value_id } => {
            // deletes are rare: forget everything rather than track what they change
            *cache = TransactionCache::default();
            delete::delete_value(conn, &mut cache.types, db, actor, now, &value_id).await
        }
        WriteOp::DeleteEntity { entity_id } => {
            *cache = TransactionCache::default();
            delete::delete_entity(conn, &mut cache.types, db, actor, now, &entity_id).await
        }
        WriteOp::Restore { entity_id, at } => {
            // rare, and may change anything of the entity: forget all
            *cache = TransactionCache::default();
            restore::restore(conn, cache, db, actor, now, &entity_id, at).await
        }
        WriteOp::DuplicateEntity(duplication) => {
            duplicate::duplicate_entity(conn, cache, db, actor, now, &duplication).await
        }
        WriteOp::Aggregate { entity_id } => aggregate::aggregate(conn, &mut cache.types, db, actor, &entity_id).await,
        WriteOp::LinkLogin {
            entity_id,
            invitation,
            login,
        } => login::link_login(conn, cache, db, now, &entity_id, invitation.as_deref(), login).await,
        WriteOp::AddUser {
            parent,
            person_type,
            login,
        } => {
            let placement = login::Placement {
                parent: &parent,
                person_type: &person_type,
            };
            login::add_user(conn, cache, db, now, actor, placement, &login).await
        }
        WriteOp::Batch(batch) => batch_ops::apply(conn, cache, db, actor, now, batch, keys).await,
    }
}
