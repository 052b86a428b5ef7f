//! The commands that know where databases live: `eds db list` (with each
//! database's cluster), `eds db create --cluster`, `eds db move`, and the
//! pool of the cluster a database lives on for the other commands.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value as Json, json};

use crate::cli::Failure;
use crate::db::placement::{self, Clusters, masked};
use crate::db::{self, Pool, databases, placement_copy, placement_reads};

/// How long a move waits, after switching, before removing the old copy:
/// every process follows within this (they reread the placement table
/// every 2 s, and are told at once besides).
const FOLLOW: Duration = Duration::from_secs(5);

/// The clusters as the home cluster at `home_url` places databases (the
/// `seed` applied, every cluster migrated), with pools of `size`
/// connections under `statement_timeout_ms`.
pub async fn clusters(
    home_url: &str,
    seed: &BTreeMap<String, String>,
    size: usize,
    statement_timeout_ms: u64,
) -> Result<Arc<Clusters>, Failure> {
    let home = db::pool(home_url, size, statement_timeout_ms).map_err(Failure)?;
    placement::prepare(seed, &home, true).await.map_err(Failure)?;
    let clusters = Clusters::new(home_url, home, size, statement_timeout_ms);
    clusters.reload().await.map_err(api_failure)?;
    Ok(clusters)
}

/// The pool of the cluster database `db` lives on.
pub fn pool_of(clusters: &Clusters, db: &str) -> Result<Pool, Failure> {
    clusters.pool_for(db).map_err(api_failure)
}

/// Every database, on every cluster: one JSON object each, with its live
/// entity count and its cluster (the password masked).
pub async fn list(clusters: &Clusters) -> Result<Vec<Json>, Failure> {
    let mut listed = Vec::new();
    for (url, pool) in clusters.all() {
        for found in databases::with_entity_counts(&mut *pool.get().await?).await? {
            // a moved database's old copy, until it is removed, is not listed
            if clusters.lives_on(&found.database, &url) {
                let cluster = if url == clusters.home_url() {
                    "home".to_owned()
                } else {
                    masked(&url)
                };
                listed.push((
                    found.database.clone(),
                    json!({"database": found.database, "entities": found.entities, "cluster": cluster}),
                ));
            }
        }
    }
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(listed.into_iter().map(|(_, line)| line).collect())
}

/// Where `eds db create` makes database `name`: on the cluster at `url`
/// when given (placing it there), else where it is placed. A name taken on
/// any cluster is refused.
pub async fn creation_pool(clusters: &Clusters, name: &str, url: Option<&str>) -> Result<Pool, Failure> {
    if placement_reads::exists_anywhere(clusters, name)
        .await
        .map_err(api_failure)?
    {
        return Err(Failure(format!("Database {name} exists")));
    }
    let Some(url) = url.filter(|url| *url != clusters.home_url()) else {
        return pool_of(clusters, name);
    };
    migrate(url).await?;
    let mut conn = clusters.home().get().await?;
    placement::place(&mut conn, name, Some(url)).await?;
    clusters.reload().await.map_err(api_failure)?;
    pool_of(clusters, name)
}

/// Moves database `name` to the cluster at `to`: copies it under its
/// write lock, switches its placement, waits for every process to follow,
/// and removes the old copy. Answers what it did, with the writes' pause.
pub async fn move_database(clusters: &Clusters, name: &str, to: &str) -> Result<Json, Failure> {
    let from = clusters.url_of(name);
    if !databases::exists(&mut *pool_of(clusters, name)?.get().await?, name).await? {
        return Err(Failure(format!("database {name} not found")));
    }
    if from == to {
        return Err(Failure(format!("database {name} lives on that cluster already")));
    }
    migrate(to).await?;
    let moved = placement_copy::copy_and_switch(clusters.home(), clusters.home_url(), name, &from, to)
        .await
        .map_err(|failed| Failure(format!("moving {name}: {}", failed.0)))?;
    tracing::info!(
        db = name,
        pause_ms = moved.pause.as_millis() as u64,
        "moved; removing the old copy"
    );
    tokio::time::sleep(FOLLOW).await;
    placement_copy::remove_old_copy(&from, name)
        .await
        .map_err(|failed| Failure(format!("removing the old copy of {name}: {}", failed.0)))?;
    let shown = |url: &str| {
        if url == clusters.home_url() {
            "home".to_owned()
        } else {
            masked(url)
        }
    };
    Ok(json!({
        "moved": name,
        "from": shown(&from),
        "to": shown(to),
        "rows": moved.rows,
        "pause_ms": moved.pause.as_secs_f64() * 1000.0,
    }))
}

async fn migrate(url: &str) -> Result<(), Failure> {
    let migrated = url.to_owned();
    tokio::task::spawn_blocking(move || db::migrate(&migrated))
        .await
        .map_err(|e| Failure(e.to_string()))?
        .map_err(|e| Failure(format!("cluster {}: {e}", masked(url))))?;
    Ok(())
}

fn api_failure(error: crate::error::ApiError) -> Failure {
    Failure(error.message.into_owned())
}
