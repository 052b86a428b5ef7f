//! Remembered consent to OAuth clients (`oauth_consents`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::schema::oauth_consents;

/// Who consented to what: the key of a remembered consent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsentKey {
    pub db: String,
    pub person: String,
    pub client_digest: String,
    pub redirect_uri: String,
    pub scope: String,
}

/// Whether the consent `key` names was given and has not expired at `now`.
pub async fn is_remembered(conn: &mut AsyncPgConnection, key: &ConsentKey, now: DateTime<Utc>) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        oauth_consents::table
            .filter(oauth_consents::db.eq(&key.db))
            .filter(oauth_consents::person.eq(&key.person))
            .filter(oauth_consents::client_digest.eq(&key.client_digest))
            .filter(oauth_consents::redirect_uri.eq(&key.redirect_uri))
            .filter(oauth_consents::scope.eq(&key.scope))
            .filter(oauth_consents::expires_at.gt(now)),
    ))
    .get_result(conn)
    .await
}

/// Remembers the consent `key` names until `expires_at` (a renewed consent
/// moves it on).
pub async fn remember(conn: &mut AsyncPgConnection, key: &ConsentKey, expires_at: DateTime<Utc>) -> QueryResult<()> {
    diesel::insert_into(oauth_consents::table)
        .values((
            oauth_consents::db.eq(&key.db),
            oauth_consents::person.eq(&key.person),
            oauth_consents::client_digest.eq(&key.client_digest),
            oauth_consents::redirect_uri.eq(&key.redirect_uri),
            oauth_consents::scope.eq(&key.scope),
            oauth_consents::expires_at.eq(expires_at),
        ))
        .on_conflict((
            oauth_consents::db,
            oauth_consents::person,
            oauth_consents::client_digest,
            oauth_consents::redirect_uri,
            oauth_consents::scope,
        ))
        .do_update()
        .set(oauth_consents::expires_at.eq(excluded(oauth_consents::expires_at)))
        .execute(conn)
        .await
        .map(drop)
}

/// Deletes the consents expired before `now`; answers how many.
pub async fn sweep(conn: &mut AsyncPgConnection, now: DateTime<Utc>) -> QueryResult<usize> {
    diesel::delete(oauth_consents::table.filter(oauth_consents::expires_at.le(now)))
        .execute(conn)
        .await
}
