//! `GET /api/auth`: exchanges an API key for an access token.

use std::collections::BTreeMap;

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;

use super::error::ApiError;
use super::{AppState, bearer, client_ip};
use crate::auth::api_key;
use crate::auth::jwt::Claims;
use crate::db::values;
use crate::view::format_datetime;

#[derive(Debug, Deserialize)]
pub struct AuthQuery {
    db: Option<String>,
    /// Alias of `db`.
    account: Option<String>,
}

pub async fn authenticate(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<AuthQuery>,
) -> Result<HttpResponse, ApiError> {
    let credential = bearer(&req).ok_or_else(|| ApiError::unauthorized("No key"))?;
    if !api_key::looks_like_key(credential) {
        return Err(ApiError::unauthorized("Invalid API key"));
    }
    let mut conn = state.pool.get().await?;
    let candidates = values::api_key_candidates(&mut conn, &api_key::lookup(credential)).await?;
    let plain = credential.to_owned();
    let matched = tokio::task::spawn_blocking(move || {
        candidates
            .into_iter()
            .find(|candidate| api_key::verify(&plain, &candidate.hash))
    })
    .await
    .map_err(|e| ApiError::internal("key verification failed", e))?
    .ok_or_else(|| ApiError::unauthorized("Invalid API key"))?;

    let wanted = query.db.as_ref().or(query.account.as_ref());
    if wanted.is_some_and(|wanted| *wanted != matched.db) {
        return Err(ApiError::unauthorized("No accessible accounts"));
    }
    let person = values::names_and_types(&mut conn, &matched.db, std::slice::from_ref(&matched.entity_id))
        .await?
        .pop()
        .ok_or_else(|| ApiError::unauthorized("No accessible accounts"))?;
    let name = person.1;

    let now = Utc::now();
    let accounts = BTreeMap::from([(matched.db.clone(), matched.entity_id.clone())]);
    let claims = Claims::access(
        format!("api_key:{}:{}", matched.db, matched.value_id),
        accounts,
        Some(client_ip(&req, &state.trusted_proxies)),
        now,
    );
    let token = state.jwt.sign(&claims)?;
    let expires = DateTime::from_timestamp(claims.exp, 0).unwrap_or(now);
    let user = json!({"_id": matched.entity_id, "name": name});
    Ok(HttpResponse::Ok().json(json!({
        "accounts": [{"_id": matched.db, "name": matched.db, "user": user}],
        "user": user,
        "token": token,
        "expires": format_datetime(expires),
    })))
}
