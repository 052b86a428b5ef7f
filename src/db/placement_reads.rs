//! The reads that look at every cluster (sign-in, refresh, name checks):
//! in parallel, each bounded in time, a cluster that fails or is slow
//! skipped with a log line. Every other request reads one cluster.

use std::future::Future;
use std::time::Duration;

use crate::db::Pool;
use crate::db::placement::{Clusters, masked};
use crate::db::values::KeyCandidate;
use crate::error::{ApiError, ErrorCode};

/// Longest wait for one cluster's answer in a read of every cluster.
const CLUSTER_ANSWER: Duration = Duration::from_secs(3);

/// Runs `read` on every cluster at once, each within [`CLUSTER_ANSWER`];
/// answers what each cluster answered, by its URL. A cluster other than
/// the home one that fails or does not answer in time is skipped (logged);
/// the home cluster's failure is the caller's.
pub async fn on_every_cluster<T, F, Fut>(clusters: &Clusters, what: &str, read: F) -> Result<Vec<(String, T)>, ApiError>
where
    F: Fn(Pool) -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    let all = clusters.all();
    let reads = all.iter().map(|(_, pool)| {
        let read = read(pool.clone());
        async move {
            match tokio::time::timeout(CLUSTER_ANSWER, read).await {
                Ok(answer) => answer,
                Err(_) => Err(ApiError::new(
                    ErrorCode::QueryTimeout,
                    "The cluster did not answer in time",
                )),
            }
        }
    });
    let answers = futures_util::future::join_all(reads).await;
    let mut found = Vec::with_capacity(answers.len());
    for ((url, _), answer) in all.into_iter().zip(answers) {
        match answer {
            Ok(answer) => found.push((url, answer)),
            Err(error) if url == clusters.home_url() => return Err(error),
            Err(error) => tracing::warn!(cluster = %masked(&url), %error, what, "a cluster was skipped"),
        }
    }
    Ok(found)
}

/// `(database, person)` pairs read on every cluster, each kept only from
/// the cluster its database lives on (a moved database's old copy stays a
/// little while).
pub async fn persons_on_every_cluster<F, Fut>(
    clusters: &Clusters,
    what: &str,
    read: F,
) -> Result<Vec<(String, String)>, ApiError>
where
    F: Fn(Pool) -> Fut,
    Fut: Future<Output = Result<Vec<(String, String)>, ApiError>>,
{
    let found = on_every_cluster(clusters, what, read).await?;
    Ok(found
        .into_iter()
        .flat_map(|(url, pairs)| {
            pairs
                .into_iter()
                .filter(|(db, _)| clusters.lives_on(db, &url))
                .collect::<Vec<_>>()
        })
        .collect())
}

/// The person login `identity` (`<provider>:<uid>`) is in each database,
/// on every cluster (as [`crate::db::sign_in::persons_of_login`]).
pub async fn persons_of_login(clusters: &Clusters, identity: &str) -> Result<Vec<(String, String)>, ApiError> {
    persons_on_every_cluster(clusters, "persons of a login", |pool| async move {
        let mut conn = pool.get().await?;
        Ok(crate::db::sign_in::persons_of_login(&mut conn, identity).await?)
    })
    .await
}

/// The API keys whose lookup is `lookup`, on every cluster (as
/// [`crate::db::values::api_key_candidates`]).
pub async fn api_key_candidates(clusters: &Clusters, lookup: &str) -> Result<Vec<KeyCandidate>, ApiError> {
    let found = on_every_cluster(clusters, "API key candidates", |pool| async move {
        let mut conn = pool.get().await?;
        Ok(crate::db::values::api_key_candidates(&mut conn, lookup).await?)
    })
    .await?;
    Ok(found
        .into_iter()
        .flat_map(|(url, candidates)| {
            candidates
                .into_iter()
                .filter(|candidate| clusters.lives_on(&candidate.db, &url))
                .collect::<Vec<_>>()
        })
        .collect())
}

/// Whether a database named `name` exists on any cluster.
pub async fn exists_anywhere(clusters: &Clusters, name: &str) -> Result<bool, ApiError> {
    let found = on_every_cluster(clusters, "database names", |pool| async move {
        let mut conn = pool.get().await?;
        Ok(crate::db::databases::exists(&mut conn, name).await?)
    })
    .await?;
    Ok(found.into_iter().any(|(_, exists)| exists))
}
