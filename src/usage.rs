//! The database usage object of `GET /api/{db}`, and the request counts it
//! reports: counted in memory per database and month, written to PostgreSQL
//! in batches, never one write per request.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::{Datelike, NaiveDate, Utc};
use dashmap::DashMap;
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Date, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use serde_json::{Value as Json, json};
use utoipa::ToSchema;

use crate::db::Pool;
use crate::db::placement::Clusters;
use crate::error::ApiError;

/// How long a computed usage object is served from memory.
pub const CACHE_FOR: Duration = Duration::from_secs(5 * 60);
/// Monthly AI token limit when the database sets none.
const DEFAULT_TOKENS_LIMIT: i64 = 100_000;

#[derive(Default)]
pub struct Usage {
    pending: DashMap<(String, NaiveDate), u64>,
    cache: DashMap<String, (Instant, UsageObject)>,
}

/// `GET /api/{db}`: the database usage object, cached 5 minutes.
#[derive(Clone, Serialize, ToSchema)]
pub struct UsageObject {
    pub organization: Vec<Organization>,
    pub entities: UsageWithLimit,
    pub properties: UsageDeleted,
    pub requests: UsageLimit,
    pub tokens: UsageLimit,
    pub files: UsageWithLimit,
    /// Data plus index bytes of this database.
    #[serde(rename = "dbSize")]
    pub db_size: i64,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct Organization {
    pub language: Option<String>,
    pub string: Option<String>,
}

/// Usage, deleted and the limit (0 when not set).
#[derive(Clone, Serialize, ToSchema)]
pub struct UsageWithLimit {
    pub usage: i64,
    pub deleted: i64,
    pub limit: i64,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct UsageDeleted {
    pub usage: i64,
    pub deleted: i64,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct UsageLimit {
    pub usage: i64,
    pub limit: i64,
}

/// The usage object's example in the OpenAPI document.
pub fn usage_example() -> Json {
    json!({
        "organization": [{"language": "en", "string": "Demo"}],
        "entities": {"usage": 120, "deleted": 3, "limit": 0},
        "properties": {"usage": 890, "deleted": 12},
        "requests": {"usage": 1234, "limit": 2000},
        "tokens": {"usage": 0, "limit": 100000},
        "files": {"usage": 48213, "deleted": 0, "limit": 0},
        "dbSize": 1245184,
    })
}

/// The first day of the UTC month of `day`.
fn month_of(day: NaiveDate) -> NaiveDate {
    day.with_day(1).expect("every month has a first day")
}

impl Usage {
    /// Counts one API request against database `db`.
    pub fn count_request(&self, db: &str) {
        *self
            .pending
            .entry((db.to_owned(), month_of(Utc::now().date_naive())))
            .or_default() += 1;
    }

    /// Writes the pending counts (of existing databases) to PostgreSQL. Counts
    /// a failure leaves unwritten stay pending for the next flush.
    pub async fn flush(&self, clusters: &Clusters) -> Result<(), ApiError> {
        let batch: Vec<MonthCount> = {
            let keys: Vec<(String, NaiveDate)> = self.pending.iter().map(|entry| entry.key().clone()).collect();
            keys.into_iter().filter_map(|key| self.pending.remove(&key)).collect()
        };
        if batch.is_empty() {
            return Ok(());
        }
        // each database's counts go to the cluster it lives on
        let mut by_cluster: HashMap<String, Vec<MonthCount>> = HashMap::new();
        for entry in batch {
            by_cluster.entry(clusters.url_of(&entry.0.0)).or_default().push(entry);
        }
        let mut result = Ok(());
        for (url, batch) in by_cluster {
            let mut written = 0;
            let outcome = match clusters.pool_at(&url) {
                Ok(pool) => write_counts(&pool, &batch, &mut written).await,
                Err(error) => Err(error),
            };
            for (key, count) in batch.into_iter().skip(written) {
                *self.pending.entry(key).or_default() += count;
            }
            result = result.and(outcome);
        }
        result
    }

    /// The usage object of database `db`: cached for five minutes; an uncached
    /// one includes every request counted before it.
    pub async fn of(&self, clusters: &Clusters, db: &str) -> Result<UsageObject, ApiError> {
        if let Some(cached) = self.cache.get(db)
            && cached.0.elapsed() < CACHE_FOR
        {
            return Ok(cached.1.clone());
        }
        self.flush(clusters).await?;
        let mut conn = clusters.pool_for(db)?.get().await?;
        let usage = compute(&mut conn, db).await?;
        self.cache.insert(db.to_owned(), (Instant::now(), usage.clone()));
        Ok(usage)
    }
}

/// A database's requests in a month not yet written: `((db, month), count)`.
type MonthCount = ((String, NaiveDate), u64);

/// Adds each count to its row, one statement each; `written` counts those done.
async fn write_counts(pool: &Pool, batch: &[MonthCount], written: &mut usize) -> Result<(), ApiError> {
    let mut conn = pool.get().await?;
    for ((db, month), count) in batch {
        diesel::sql_query(
            "INSERT INTO request_counts (db, month, count) SELECT $1, $2, $3 \
             WHERE EXISTS (SELECT 1 FROM databases WHERE name = $1) \
             ON CONFLICT (db, month) DO UPDATE SET count = request_counts.count + EXCLUDED.count",
        )
        .bind::<Text, _>(db)
        .bind::<Date, _>(month)
        .bind::<BigInt, _>(*count as i64)
        .execute(&mut conn)
        .await?;
        *written += 1;
    }
    Ok(())
}

#[derive(QueryableByName)]
struct Totals {
    #[diesel(sql_type = BigInt)]
    entities: i64,
    #[diesel(sql_type = BigInt)]
    deleted_entities: i64,
    #[diesel(sql_type = BigInt)]
    values: i64,
    #[diesel(sql_type = BigInt)]
    deleted_values: i64,
    #[diesel(sql_type = BigInt)]
    file_bytes: i64,
    #[diesel(sql_type = BigInt)]
    deleted_file_bytes: i64,
    #[diesel(sql_type = BigInt)]
    requests: i64,
    #[diesel(sql_type = BigInt)]
    db_size: i64,
    #[diesel(sql_type = diesel::sql_types::Jsonb)]
    database: Json,
}

async fn compute(conn: &mut AsyncPgConnection, db: &str) -> Result<UsageObject, ApiError> {
    let month = month_of(Utc::now().date_naive());
    // dbSize: this database's share of each table's data and index bytes,
    // by its share of the table's rows.
    let totals: Totals = diesel::sql_query(
        "WITH e AS (SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS live, \
                           count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted \
                    FROM entities WHERE db = $1), \
              v AS (SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS live, \
                           count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted, \
                           coalesce(sum(filesize) FILTER (WHERE deleted_at IS NULL), 0)::bigint AS bytes, \
                           coalesce(sum(filesize) FILTER (WHERE deleted_at IS NOT NULL), 0)::bigint AS deleted_bytes \
                    FROM property_values WHERE db = $1) \
         SELECT e.live AS entities, e.deleted AS deleted_entities, v.live AS values, v.deleted AS deleted_values, \
                v.bytes AS file_bytes, v.deleted_bytes AS deleted_file_bytes, \
                coalesce((SELECT count FROM request_counts WHERE db = $1 AND month = $2), 0) AS requests, \
                (pg_total_relation_size('entities') * (e.live + e.deleted) \
                   / greatest((SELECT count(*) FROM entities), 1) \
                 + pg_total_relation_size('property_values') * (v.live + v.deleted) \
                   / greatest((SELECT count(*) FROM property_values), 1))::bigint AS db_size, \
                coalesce((SELECT d.doc FROM entities d JOIN databases own ON own.entity_id = d.id \
                          WHERE own.name = $1 AND d.db = $1 AND d.deleted_at IS NULL), '{}'::jsonb) AS database \
         FROM e, v",
    )
    .bind::<Text, _>(db)
    .bind::<Date, _>(month)
    .get_result(conn)
    .await?;
    let billing = |prop: &str| totals.database[prop][0]["number"].as_f64().map(|n| n as i64);
    let text = |value: &Json, field: &str| value.get(field).and_then(Json::as_str).map(str::to_owned);
    let organization = totals.database["organization"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|value| Organization {
            language: text(value, "language"),
            string: text(value, "string"),
        })
        .collect();
    Ok(UsageObject {
        organization,
        entities: UsageWithLimit {
            usage: totals.entities,
            deleted: totals.deleted_entities,
            limit: billing("billing_entities_limit").unwrap_or(0),
        },
        properties: UsageDeleted {
            usage: totals.values,
            deleted: totals.deleted_values,
        },
        requests: UsageLimit {
            usage: totals.requests,
            limit: display_scale(totals.requests),
        },
        tokens: UsageLimit {
            usage: 0,
            limit: billing("billing_tokens_limit").unwrap_or(DEFAULT_TOKENS_LIMIT),
        },
        files: UsageWithLimit {
            usage: totals.file_bytes,
            deleted: totals.deleted_file_bytes,
            limit: billing("billing_data_limit").unwrap_or(0),
        },
        db_size: totals.db_size,
    })
}

/// `requests.limit`: the usage rounded up on its leading digit (1234 → 2000).
pub fn display_scale(usage: i64) -> i64 {
    if usage <= 0 {
        return 0;
    }
    let mut unit = 1;
    while usage / unit >= 10 {
        unit *= 10;
    }
    (usage + unit - 1) / unit * unit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_scale_rounds_up_on_the_leading_digit() {
        for (usage, scale) in [
            (0, 0),
            (1, 1),
            (9, 9),
            (10, 10),
            (11, 20),
            (1234, 2000),
            (9001, 10000),
            (5000, 5000),
        ] {
            assert_eq!(display_scale(usage), scale, "{usage}");
        }
    }

    #[test]
    fn the_usage_object_serializes_in_its_documented_order() {
        let usage = UsageObject {
            organization: vec![Organization {
                language: Some("en".into()),
                string: None,
            }],
            entities: UsageWithLimit {
                usage: 1,
                deleted: 2,
                limit: 3,
            },
            properties: UsageDeleted { usage: 4, deleted: 5 },
            requests: UsageLimit { usage: 6, limit: 7 },
            tokens: UsageLimit { usage: 0, limit: 8 },
            files: UsageWithLimit {
                usage: 9,
                deleted: 10,
                limit: 11,
            },
            db_size: 12,
        };
        assert_eq!(
            serde_json::to_string(&usage).unwrap(),
            r#"{"organization":[{"language":"en","string":null}],"entities":{"usage":1,"deleted":2,"limit":3},"#
                .to_owned()
                + r#""properties":{"usage":4,"deleted":5},"requests":{"usage":6,"limit":7},"tokens":{"usage":0,"limit":8},"#
                + r#""files":{"usage":9,"deleted":10,"limit":11},"dbSize":12}"#
        );
    }

    #[test]
    fn months_are_utc_calendar_months() {
        let day = NaiveDate::from_ymd_opt(2026, 11, 21).unwrap();
        assert_eq!(month_of(day), NaiveDate::from_ymd_opt(2026, 11, 1).unwrap());
    }
}
