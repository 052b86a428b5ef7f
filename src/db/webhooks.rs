//! Webhooks' tables: the settings the outbox trigger keeps
//! (`webhooks`), the events waiting for delivery (`webhook_outbox`) and
//! the attempts made (`webhook_attempts`). The migration's trigger fills
//! the outbox at the commit of each write; the delivery worker takes from
//! it here.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::schema::{entities, property_values, webhook_attempts, webhook_outbox, webhooks};

/// The name of the seeded type whose entities are webhooks.
pub const WEBHOOK_TYPE: &str = "webhook";
/// The webhook property holding its signing secret.
pub const SECRET_PROPERTY: &str = "secret";

/// Live webhooks of database `db`.
pub async fn count(conn: &mut AsyncPgConnection, db: &str) -> QueryResult<i64> {
    webhooks::table
        .filter(webhooks::db.eq(db))
        .count()
        .get_result(conn)
        .await
}

/// Live entities of the webhook type in database `db`, as the caller's
/// transaction sees them: unlike [`count`] (kept at commit), this counts
/// the webhooks it created itself.
pub async fn live_count(conn: &mut AsyncPgConnection, db: &str) -> QueryResult<i64> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        count: i64,
    }
    let found: Count = diesel::sql_query(
        "SELECT count(*) AS count FROM entities e WHERE e.db = $1 AND e.deleted_at IS NULL AND e.type_id IN \
         (SELECT t.id FROM entities t WHERE t.db = $1 AND t.name = $2 AND t.deleted_at IS NULL)",
    )
    .bind::<Text, _>(db)
    .bind::<Text, _>(WEBHOOK_TYPE)
    .get_result(conn)
    .await?;
    Ok(found.count)
}

/// Parked webhooks of every database.
pub async fn parked(conn: &mut AsyncPgConnection) -> QueryResult<i64> {
    webhooks::table
        .filter(webhooks::parked_at.is_not_null())
        .count()
        .get_result(conn)
        .await
}

/// The name of entity `id`'s type (`None` when either is missing), deleted or not.
pub async fn type_name_of(conn: &mut AsyncPgConnection, db: &str, id: &str) -> QueryResult<Option<String>> {
    let type_id: Option<Option<String>> = entities::table
        .filter(entities::db.eq(db))
        .filter(entities::id.eq(id))
        .select(entities::type_id)
        .first(conn)
        .await
        .optional()?;
    match type_id.flatten() {
        Some(type_id) => name_of(conn, db, &type_id).await,
        None => Ok(None),
    }
}

/// The `name` of entity `id` (a type's name), if any.
pub async fn name_of(conn: &mut AsyncPgConnection, db: &str, id: &str) -> QueryResult<Option<String>> {
    Ok(entities::table
        .filter(entities::db.eq(db))
        .filter(entities::id.eq(id))
        .select(entities::name)
        .first::<Option<String>>(conn)
        .await
        .optional()?
        .flatten())
}

/// The signing secrets of webhooks `ids` of database `db` that have one.
pub async fn secrets(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<(String, String)>> {
    let found: Vec<(String, Option<String>)> = property_values::table
        .filter(property_values::db.eq(db))
        .filter(property_values::entity_id.eq_any(ids))
        .filter(property_values::prop.eq(SECRET_PROPERTY))
        .filter(property_values::deleted_at.is_null())
        .distinct_on(property_values::entity_id)
        .order((property_values::entity_id, property_values::created_at.desc()))
        .select((property_values::entity_id, property_values::secret))
        .load(conn)
        .await?;
    Ok(found
        .into_iter()
        .filter_map(|(id, secret)| Some((id, secret?)))
        .collect())
}

/// An event taken for one delivery attempt.
#[derive(Debug, Clone, QueryableByName)]
pub struct Claimed {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    /// `Webhook-Id`: the same on every attempt, wherever the database moves.
    #[diesel(sql_type = Text)]
    pub message_id: String,
    #[diesel(sql_type = Text)]
    pub db: String,
    #[diesel(sql_type = Text)]
    pub webhook_id: String,
    #[diesel(sql_type = Text)]
    pub entity_id: String,
    #[diesel(sql_type = Text)]
    pub event: String,
    #[diesel(sql_type = Timestamptz)]
    pub at: DateTime<Utc>,
    /// This attempt's number, from 1.
    #[diesel(sql_type = Integer)]
    pub attempts: i32,
    #[diesel(sql_type = Timestamptz)]
    pub since: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Text>)]
    pub url: Option<String>,
}

/// Takes up to `limit` due events of unparked webhooks, skipping those
/// another worker holds, and leases them for `lease_seconds`: a worker that
/// dies mid-delivery leaves them to be taken again when the lease ends.
pub async fn claim(conn: &mut AsyncPgConnection, limit: i64, lease_seconds: f64) -> QueryResult<Vec<Claimed>> {
    diesel::sql_query(
        "UPDATE webhook_outbox o
            SET attempts = o.attempts + 1, next_at = now() + make_interval(secs => $2)
        FROM webhooks w
        WHERE o.id IN (
                SELECT d.id FROM webhook_outbox d
                JOIN webhooks dw ON dw.db = d.db AND dw.id = d.webhook_id AND dw.parked_at IS NULL
                WHERE d.next_at <= now()
                ORDER BY d.next_at LIMIT $1
                FOR UPDATE OF d SKIP LOCKED)
            AND w.db = o.db AND w.id = o.webhook_id
        RETURNING o.id, o.message_id, o.db, o.webhook_id, o.entity_id, o.event, o.at, o.attempts, o.since, w.url",
    )
    .bind::<BigInt, _>(limit)
    .bind::<Double, _>(lease_seconds)
    .load(conn)
    .await
}

/// Events not to be sent (their webhook's owners may not read the entity): dropped.
pub async fn drop_events(conn: &mut AsyncPgConnection, ids: &[i64]) -> QueryResult<()> {
    diesel::delete(webhook_outbox::table.filter(webhook_outbox::id.eq_any(ids)))
        .execute(conn)
        .await
        .map(drop)
}

/// One attempt as recorded.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = webhook_attempts)]
pub struct NewAttempt<'a> {
    pub db: &'a str,
    pub webhook_id: &'a str,
    pub message_id: &'a str,
    pub event: &'a str,
    pub attempt: i32,
    pub at: DateTime<Utc>,
    pub status: Option<i32>,
    pub duration_ms: i32,
    pub error: Option<String>,
}

/// What follows an attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AfterAttempt {
    /// Delivered: the event leaves the outbox.
    Delivered,
    /// Tried again at this time.
    RetryAt(DateTime<Utc>),
    /// Failed for the whole retry period: the webhook is parked.
    Park,
}

/// Records the attempts of a batch of events (outbox id, the attempt, what
/// follows it), together: one transaction, whose commit is the batch's
/// only flush.
pub async fn record(conn: &mut AsyncPgConnection, attempts: &[(i64, NewAttempt<'_>, AfterAttempt)]) -> QueryResult<()> {
    use diesel_async::AsyncConnection;
    use diesel_async::scoped_futures::ScopedFutureExt;
    let rows: Vec<&NewAttempt<'_>> = attempts.iter().map(|(_, attempt, _)| attempt).collect();
    let delivered: Vec<i64> = attempts
        .iter()
        .filter(|(_, _, after)| *after == AfterAttempt::Delivered)
        .map(|(id, _, _)| *id)
        .collect();
    conn.transaction(|conn| {
        async move {
            diesel::insert_into(webhook_attempts::table)
                .values(rows)
                .execute(conn)
                .await?;
            diesel::delete(webhook_outbox::table.filter(webhook_outbox::id.eq_any(&delivered)))
                .execute(conn)
                .await?;
            for (outbox_id, attempt, after) in attempts {
                let event = webhook_outbox::table.filter(webhook_outbox::id.eq(outbox_id));
                match after {
                    AfterAttempt::Delivered => {}
                    AfterAttempt::RetryAt(at) => {
                        diesel::update(event)
                            .set(webhook_outbox::next_at.eq(at))
                            .execute(conn)
                            .await?;
                    }
                    AfterAttempt::Park => {
                        // its events wait, untried, until a write resumes it
                        diesel::update(event)
                            .set(webhook_outbox::next_at.eq(attempt.at))
                            .execute(conn)
                            .await?;
                        diesel::update(
                            webhooks::table
                                .filter(webhooks::db.eq(attempt.db))
                                .filter(webhooks::id.eq(attempt.webhook_id)),
                        )
                        .set(webhooks::parked_at.eq(attempt.at))
                        .execute(conn)
                        .await?;
                    }
                }
            }
            Ok(())
        }
        .scope_boxed()
    })
    .await
}

/// One recorded attempt, as the deliveries route lists it.
#[derive(Debug, Clone, Queryable)]
pub struct Attempt {
    pub message_id: String,
    pub event: String,
    pub attempt: i32,
    pub at: DateTime<Utc>,
    pub status: Option<i32>,
    pub duration_ms: i32,
    pub error: Option<String>,
}

/// Deletes the attempts made before `before`, all databases together;
/// answers how many.
pub async fn sweep_attempts(conn: &mut AsyncPgConnection, before: DateTime<Utc>) -> QueryResult<usize> {
    diesel::delete(webhook_attempts::table.filter(webhook_attempts::at.lt(before)))
        .execute(conn)
        .await
}

/// Webhook `id`'s attempts, newest first, and how many there are in all.
pub async fn attempts(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    limit: i64,
    skip: i64,
) -> QueryResult<(Vec<Attempt>, i64)> {
    let of_webhook = || {
        webhook_attempts::table
            .filter(webhook_attempts::db.eq(db))
            .filter(webhook_attempts::webhook_id.eq(id))
    };
    let rows = of_webhook()
        .order(webhook_attempts::id.desc())
        .limit(limit)
        .offset(skip)
        .select((
            webhook_attempts::message_id,
            webhook_attempts::event,
            webhook_attempts::attempt,
            webhook_attempts::at,
            webhook_attempts::status,
            webhook_attempts::duration_ms,
            webhook_attempts::error,
        ))
        .load(conn)
        .await?;
    let count = of_webhook().count().get_result(conn).await?;
    Ok((rows, count))
}
