//! The change feed (`GET /api/{db}/changes`): a stream of server-sent events,
//! one per committed change of an entity the caller may read and the
//! query's filters match, resumable by id; and the tickets that let a
//! browser's `EventSource` (which sends no header) open one.

mod events;
mod hub;
mod listen;
mod queue;
mod reported;
mod select;
mod stream;

use std::sync::Arc;

use bytes::Bytes;
use chrono::Duration;
use futures_util::stream::LocalBoxStream;
use rand::RngCore;
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

pub use hub::{ChangeHub, StreamSlot};
pub use listen::listen;
use reported::{REPORTED, Reported};
use select::Subscriber;
use stream::Body;

use crate::auth::jwt::{Claims, Refusal};
use crate::db::changes;
use crate::db::sign_in::Issued;
use crate::error::{ApiError, ErrorCode};
use crate::query::ListQuery;
use crate::query::sql::matching;
use crate::service::{Caller, Service};

/// The sign-in state kind of a stream ticket.
const TICKET_KIND: &str = "change_ticket";
/// How long a ticket may wait for its stream.
const TICKET_SECONDS: i64 = 60;
/// List query parameters that have no meaning for a stream.
const PAGE_PARAMETERS: [&str; 4] = ["sort", "limit", "skip", "group"];

/// `POST /api/{db}/changes/ticket`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Ticket {
    /// Single use, for 60 s, from the address that asked for it: `?ticket=`.
    #[schema(example = "4f0c2b0e9d1a4c3b8e7f6a5d4c3b2a1f4f0c2b0e9d1a4c3b8e7f6a5d4c3b2a1f")]
    pub ticket: String,
}

/// Opens a change stream of database `db` for `caller` with the list query
/// string `query_string` (filters, `q`, `props`; `since`, `ticket` are read
/// elsewhere or here), resuming after `last_event_id` (the header) or
/// `since`. 400 `invalid_query` for `sort`, `limit`, `skip`, `group` or an
/// id that is not a number; 404 for an unknown database; 503 / 429 past the
/// stream limits. The body starts with a comment (or the `reset` event when
/// the changes after the id are no longer kept).
pub async fn open(
    service: &Arc<Service>,
    caller: Caller,
    db: &str,
    query_string: &str,
    last_event_id: Option<&str>,
) -> Result<LocalBoxStream<'static, Result<Bytes, ApiError>>, ApiError> {
    let params: Vec<(String, String)> = serde_urlencoded::from_str(query_string)
        .map_err(|_| ApiError::new(ErrorCode::InvalidQuery, "Malformed query string"))?;
    if let Some((name, _)) = params.iter().find(|(name, _)| PAGE_PARAMETERS.contains(&name.as_str())) {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            format!("`{name}` does not apply to a change stream"),
        ));
    }
    let since = params
        .iter()
        .find(|(name, _)| name == "since")
        .map(|(_, id)| id.as_str());
    let resume = match last_event_id.or(since) {
        Some(id) => Some(id.trim().parse::<i64>().map_err(|_| {
            ApiError::new(
                ErrorCode::InvalidQuery,
                "`since` and `Last-Event-ID` must be a change id (a number)",
            )
        })?),
        None => None,
    };
    let filters: Vec<(String, String)> = params
        .into_iter()
        .filter(|(name, _)| name != "since" && name != "ticket")
        .collect();
    let query = ListQuery::parse(&filters)?;
    service.require_database(db).await?;
    let person = caller.person_in(db).map(str::to_owned);
    let holder = match &caller.claims {
        Some(claims) => format!("login {}", claims.sub),
        None => format!("address {}", caller.ip),
    };
    let slot = service.changes.admit(holder)?;
    let (cursor, reset, reported) = {
        let mut conn = service.pool_for(db)?.get().await?;
        let latest = changes::latest(&mut conn, db).await?;
        let (cursor, reset) = match resume {
            Some(id) if changes::is_kept(&mut conn, db, id).await? => (id, false),
            Some(_) => (latest, true),
            None => (latest, false),
        };
        // a filtered stream knows what matches as it opens: its `leave`s
        // and deletions then need no earlier event
        let reported: Vec<String> = if query.filters.is_empty() && query.words.is_empty() {
            Vec::new()
        } else {
            let limit = REPORTED as i64 + 1;
            matching(&mut conn, db, person.as_deref(), &query, None, limit)
                .await?
                .into_iter()
                .map(|row| row.id)
                .collect()
        };
        (cursor, reset, reported)
    };
    let (events, receiver) = service.changes.queue();
    service
        .changes
        .subscribe(
            db,
            Subscriber {
                person,
                query_text: serde_urlencoded::to_string(&filters).unwrap_or_default(),
                query: Arc::new(query),
                cursor,
                reported: Reported::new(reported),
                events,
            },
        )
        .await;
    let first = if reset {
        Bytes::from(format!("id: {cursor}\nevent: reset\ndata: {{\"since\":{cursor}}}\n\n"))
    } else {
        Bytes::from_static(b": open\n\n")
    };
    let body = Body {
        service: service.clone(),
        db: db.to_owned(),
        claims: caller.claims,
        events: receiver,
        closing: service.changes.closing(),
        _slot: slot,
    };
    Ok(body.into_stream(first))
}

/// A ticket for one stream of `caller` in `db`: 401 without a token, 403
/// with a token for other databases only.
pub async fn issue_ticket(service: &Service, caller: &Caller, db: &str) -> Result<Ticket, ApiError> {
    caller.require_person(db)?;
    service.require_database(db).await?;
    let claims = caller.claims.as_ref().ok_or_else(ApiError::token_required)?;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let ticket = hex::encode(bytes);
    let data = serde_json::to_value(claims).map_err(|e| ApiError::internal("encoding a ticket's claims", e))?;
    service
        .sign_in
        .sessions
        .issue(Issued {
            id: ticket_id(&ticket),
            kind: TICKET_KIND,
            client_ip: caller.ip.clone(),
            data,
            expires_at: service.clock.now() + Duration::seconds(TICKET_SECONDS),
        })
        .await?;
    Ok(Ticket { ticket })
}

/// The caller a ticket stands for, using it up: 401 when it is unknown,
/// used, expired, from another address, or its token expired or was
/// revoked since.
pub async fn ticket_caller(service: &Service, ticket: &str, ip: &str) -> Result<Caller, ApiError> {
    let now = service.clock.now();
    let data = service
        .sign_in
        .sessions
        .consume(&ticket_id(ticket), TICKET_KIND, ip, now)
        .await?
        .ok_or_else(|| ApiError::unauthorized("Invalid or used ticket"))?;
    let claims: Claims = serde_json::from_value(data).map_err(|_| ApiError::from(Refusal::Invalid))?;
    if claims.exp <= now.timestamp() {
        return Err(ApiError::from(Refusal::Expired));
    }
    let claims = service
        .logins
        .live_claims(&service.clusters, now, claims, "changes")
        .await?;
    Ok(Caller {
        consistency: Default::default(),
        claims: Some(claims),
        ip: ip.to_owned(),
    })
}

/// What a ticket is stored under: its digest, never the ticket itself.
fn ticket_id(ticket: &str) -> String {
    hex::encode(Sha256::digest(ticket.as_bytes()))
}
