//! Whether an accepted token's login still stands: the revocation check
//! every request's token passes, answers kept for a while.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use dashmap::DashMap;

use crate::auth::jwt::{Claims, Refusal};
use crate::auth::subject::Subject;
use crate::db::placement::Clusters;
use crate::db::{placement_reads, values};
use crate::error::ApiError;
use crate::metrics;

/// What is left of a token's login when it was last looked up: the
/// databases whose person is live, or `None` when the login is revoked.
struct Checked {
    at: DateTime<Utc>,
    accounts: Option<BTreeMap<String, String>>,
}

/// Checks that an accepted token's login still stands: its API key is not
/// deleted, and of its `accounts` only databases whose person entity is live
/// remain. A token whose key is gone, or which named persons and has none
/// left, is revoked (401 `Invalid token`). Answers are kept per login and
/// accounts for `auth.revocation_check_seconds`, so a deletion stops its
/// tokens within that time in every process, at one indexed query per
/// login and interval.
pub struct LoginChecks {
    ttl_seconds: i64,
    checked: DashMap<(String, BTreeMap<String, String>), Checked>,
}

/// Past this many kept answers, a lookup first drops the stale ones.
const KEPT_CHECKS: usize = 4096;

impl LoginChecks {
    pub fn new(ttl_seconds: u64) -> LoginChecks {
        LoginChecks {
            ttl_seconds: i64::try_from(ttl_seconds).unwrap_or(i64::MAX),
            checked: DashMap::new(),
        }
    }

    /// `claims` with only the databases whose person is live; counted and
    /// refused under `flow` when the login is revoked.
    pub async fn live_claims(
        &self,
        clusters: &Clusters,
        now: DateTime<Utc>,
        mut claims: Claims,
        flow: &'static str,
    ) -> Result<Claims, ApiError> {
        // A clock set back makes an answer stale too, never fresher.
        let fresh = |at: DateTime<Utc>| (0..self.ttl_seconds).contains(&(now - at).num_seconds());
        let key = (claims.sub.clone(), claims.accounts.clone());
        let kept = self
            .checked
            .get(&key)
            .filter(|checked| fresh(checked.at))
            .map(|checked| checked.accounts.clone());
        let accounts = match kept {
            Some(accounts) => accounts,
            None => {
                let accounts = look_up(clusters, &claims).await?;
                if self.checked.len() >= KEPT_CHECKS {
                    self.checked.retain(|_, checked| fresh(checked.at));
                }
                self.checked.insert(
                    key,
                    Checked {
                        at: now,
                        accounts: accounts.clone(),
                    },
                );
                accounts
            }
        };
        claims.accounts = accounts.ok_or_else(|| {
            metrics::token_refused(flow, Refusal::Revoked.reason());
            ApiError::from(Refusal::Revoked)
        })?;
        Ok(claims)
    }
}

/// The databases of `claims` whose person is live (and, for a provider
/// login, still holds it), or `None` when the login is revoked.
async fn look_up(clusters: &Clusters, claims: &Claims) -> Result<Option<BTreeMap<String, String>>, ApiError> {
    let subject = claims.subject();
    let key = match &subject {
        Some(Subject::ApiKey { db, value_id }) => Some((db.as_str(), value_id.as_str())),
        _ => None,
    };
    let persons: Vec<(&str, &str)> = claims
        .accounts
        .iter()
        .map(|(db, person)| (db.as_str(), person.as_str()))
        .collect();
    // each cluster answers for the databases living on it
    let mut by_cluster: BTreeMap<String, Vec<(&str, &str)>> = BTreeMap::new();
    for (db, person) in &persons {
        by_cluster.entry(clusters.url_of(db)).or_default().push((db, person));
    }
    if let Some((db, _)) = key {
        by_cluster.entry(clusters.url_of(db)).or_default();
    }
    let (mut key_live, mut live) = (false, Vec::new());
    for (url, persons) in by_cluster {
        let key_here = key.filter(|(db, _)| clusters.lives_on(db, &url));
        let mut conn = clusters.pool_at(&url)?.get().await?;
        let (key_live_here, live_here) = values::live_login(&mut conn, key_here, &persons).await?;
        key_live |= key_live_here;
        live.extend(live_here);
    }
    if key.is_some() && !key_live {
        return Ok(None);
    }
    let mut accounts: BTreeMap<String, String> = live.into_iter().collect();
    // A provider login keeps only the persons that still hold it: deleting
    // the login method ends its tokens as deleting an API key does.
    if let Some(identity) = subject.as_ref().and_then(Subject::login_identity)
        && !accounts.is_empty()
    {
        let holders: BTreeMap<String, String> = placement_reads::persons_of_login(clusters, &identity)
            .await?
            .into_iter()
            .collect();
        accounts.retain(|db, person| holders.get(db) == Some(person));
    }
    // A token that never named a person (a new login's) has nothing to lose.
    if accounts.is_empty() && !claims.accounts.is_empty() {
        return Ok(None);
    }
    Ok(Some(accounts))
}
