//! `GET /api/{db}/changes`: the change feed as server-sent events, and
//! `POST /api/{db}/changes/ticket` for browsers' `EventSource`
//! (`crate::service::changes`).

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

use super::views::responses::{InvalidToken, ReadUnavailable};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::service::changes::{self, Ticket};

const CHANGES_DESCRIPTION: &str = "A server-sent event per committed change of an entity the caller may read \
(for a deletion: could read before) and the filters match: `id: <change id>`, `event: change`, `data: \
{\"_id\",\"action\":\"create\"|\"update\"|\"delete\"|\"leave\",\"at\",\"by\",\"properties\":[names]}`. \
`leave`: the entity matched before the change but no longer does (or is no longer readable); it names no \
properties. Only properties the caller may read are named; `props` narrows them. The filters and `q` of \
`GET /api/{db}/entity` apply, tested against the entity after the change (before it for a deletion); `sort`, \
`limit`, `skip` and `group` are refused. A stream resumes after `Last-Event-ID` (or `since`; the header wins) \
while the change log keeps the changes after it (`changes.retention_hours`); otherwise it starts with one \
`event: reset` carrying the id it continues from. A comment line every 15 s keeps it open. It ends when its \
token expires or is revoked, and when the server stops: resume by id. A browser's `EventSource` sends no \
header: take a ticket (`POST /api/{db}/changes/ticket`) and pass it as `ticket`.";

/// One event of the stream as a client's parser reads it: `id` and `event`
/// lines, and `data` (for `change`, a JSON object as the description says).
#[derive(Serialize, ToSchema)]
pub struct StreamEvent {
    /// The change's id, to resume after.
    pub id: String,
    /// `change` or `reset`.
    pub event: String,
    /// `{"_id","action","at","by","properties"}`, or `{"since"}` for a reset.
    pub data: String,
}

/// `GET /api/{db}/changes`: the change stream.
#[utoipa::path(
    get, path = "/api/{db}/changes", operation_id = "changes", tag = "entities", summary = "Stream committed changes (server-sent events)",
    description = CHANGES_DESCRIPTION,
    security((), ("jwt" = [])),
    params(
        ("db" = String, Path, description = "Database name", example = "demo"),
        ("filters" = Option<HashMap<String, String>>, Query, style = Form, explode, description = "Filters of the list query, `<property>.<field>[.<operator>]=<value>`", example = json!({"_type.string": "book"})),
        ("q" = Option<String>, Query, description = "Full-text words, as in the list query", example = "dune"),
        ("props" = Option<String>, Query, description = "Comma-separated property names: events name only these", example = "title,price"),
        ("since" = Option<String>, Query, description = "Resume after this change id (`Last-Event-ID` wins)", example = "1042"),
        ("ticket" = Option<String>, Query, description = "A stream ticket, instead of the `Authorization` header"),
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this change id"),
    ),
    responses(
        (status = 200, description = "The stream", content_type = "text/event-stream", body = StreamEvent,
            example = "id: 1043\nevent: change\ndata: {\"_id\":\"6571c0de9f1b2a3c4d5e6f70\",\"action\":\"update\",\"at\":\"2026-11-27T10:00:00.000Z\",\"by\":\"6571c0de9f1b2a3c4d5e6f01\",\"properties\":[\"title\"]}\n\n"),
        (status = 400, description = "`sort`, `limit`, `skip` or `group`, an id that is not a number, or a bad filter", body = ErrorBody),
        (status = 401, response = inline(InvalidToken)),
        (status = 404, description = "No such database", body = ErrorBody),
        (status = 406, description = "The `Accept` header admits no event stream", body = ErrorBody),
        (status = 429, description = "The caller holds `changes.max_streams_per_caller` streams", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn stream(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !accepts_event_stream(req.headers().get(header::ACCEPT)) {
        return Ok(HttpResponse::NotAcceptable().json(ErrorBody {
            status: 406,
            error: "not_acceptable",
            message: "The change feed answers text/event-stream only",
            operation: None,
        }));
    }
    let ticket = web::Query::<TicketParameter>::from_query(req.query_string())
        .ok()
        .and_then(|query| query.into_inner().ticket);
    let caller = match ticket {
        Some(ticket) => changes::ticket_caller(&state.service, &ticket, &caller.ip).await?,
        None => caller,
    };
    let last_event_id = req.headers().get("Last-Event-ID").and_then(|value| value.to_str().ok());
    let body = changes::open(&state.service, caller, &db, req.query_string(), last_event_id).await?;
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        // proxies that buffer answers (nginx) pass this one on at once
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body))
}

#[derive(serde::Deserialize)]
struct TicketParameter {
    ticket: Option<String>,
}

/// `POST /api/{db}/changes/ticket`: a single-use ticket for one stream.
#[utoipa::path(
    post, path = "/api/{db}/changes/ticket", operation_id = "change_ticket", tag = "entities", summary = "A ticket for a browser's change stream",
    description = "A ticket standing for the caller's token, for `GET /api/{db}/changes?ticket=`: single use, valid 60 s, from the same client address.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo")),
    responses(
        (status = 200, description = "The ticket", body = Ticket),
        (status = 401, response = inline(InvalidToken)),
        (status = 403, description = "The token gives no access to this database", body = ErrorBody),
        (status = 404, description = "No such database", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn ticket(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let ticket = changes::issue_ticket(&state.service, &caller, &db).await?;
    Ok(HttpResponse::Ok().json(ticket))
}

/// Whether an `Accept` header admits `text/event-stream` (no header does).
fn accepts_event_stream(accept: Option<&HeaderValue>) -> bool {
    let Some(accept) = accept else {
        return true;
    };
    let Ok(accept) = accept.to_str() else {
        return false;
    };
    accept.split(',').any(|range| {
        let media = range.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        matches!(media.as_str(), "text/event-stream" | "text/*" | "*/*")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accept_header_must_admit_an_event_stream() {
        let admits = |value: &str| accepts_event_stream(Some(&HeaderValue::from_str(value).unwrap()));
        assert!(accepts_event_stream(None));
        assert!(admits("text/event-stream"));
        assert!(admits("application/json, */*;q=0.1"));
        assert!(admits("text/*"));
        assert!(!admits("application/json"));
        assert!(!admits("text/html, application/xhtml+xml"));
    }
}
