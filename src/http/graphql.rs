//! `POST /api/{db}/graphql` and `GET /api/{db}/graphql?query=…&variables=…`:
//! the HTTP side of `crate::graphql` (the caller, the request, the status).

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::views::responses::{InvalidToken, ReadUnavailable};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::graphql::{Answer, GraphqlRequest};

const DESCRIPTION: &str = "A GraphQL schema generated from the entity types and property definitions the caller may read: a list field per type (its name lower-cased, each character outside `[A-Za-z0-9_]` as `_`, collisions numbered `_2`, `_3`… in type `_id` order) taking `filter` (the REST list query string, e.g. `\"price.number.gt=10\"`), `q`, `sort`, `limit`, `skip`; `_entity(_id)`; each entity with `_id`, `_json` (the REST document) and a field per property listing typed value objects (a reference's `entity`, one level; a file's signed `url`). Mutations `create(properties)`, `add(_id, properties)`, `deleteProperty(_id)`, `deleteEntity(_id)`, `batch(operations, dry_run)`, `restore(_id, at)` take the REST bodies as JSON and answer what REST answers. A field's or mutation's error answers 200 with `errors[].extensions.code` the REST error code and `message` the REST message. One operation per request; `graphql.max_depth` and `graphql.max_complexity` bound a document (a type's list field costs its `limit` × its selection, aliases each time) before any database work. This is not the original Entu's GraphQL shape.";

/// `POST /api/{db}/graphql` with `{"query","variables"?,"operationName"?}`.
#[utoipa::path(
    post, path = "/api/{db}/graphql", operation_id = "graphql", tag = "graphql", summary = "Run a GraphQL query or mutation",
    description = DESCRIPTION,
    security((), ("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo")),
    request_body(content = Object, description = "`query`, and optionally `variables` and `operationName`",
        example = json!({"query": "query Books($min: String) { book(filter: $min, sort: \"-title.string\", limit: 10) { _id title { string } author { string entity { _id } } } }", "variables": {"min": "price.number.gt=10"}})),
    responses(
        (status = 200, description = "`data`, and `errors` for the fields that failed (`extensions.code` = the REST error code)", body = Object,
         example = json!({"data": {"book": [{"_id": "6571f3a4c2b9e8d7f6a5b4c3", "title": [{"string": "Dune"}], "author": [{"string": "Frank Herbert", "entity": {"_id": "6571f3a4c2b9e8d7f6a5b4c4"}}]}]}})),
        (status = 400, description = "A body or document that does not parse or validate, more than one operation, or a document over the depth or complexity limits (`query_too_complex`)", body = Object,
         example = json!({"errors": [{"message": "The query costs 20100, over the limit of 10000", "extensions": {"code": "query_too_complex", "status": 400}}]})),
        (status = 401, response = inline(InvalidToken)),
        (status = 404, description = "No such database", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn post(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let request: GraphqlRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(error) => {
            return Ok(answer(Answer::refused(
                400,
                "invalid_json",
                format!("Malformed request: {error}"),
            )));
        }
    };
    let answered = state
        .graphql
        .execute(&state.service, caller, &db, request, false)
        .await?;
    Ok(answer(answered))
}

/// The query string of `GET /api/{db}/graphql`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GetParams {
    query: Option<String>,
    /// JSON text of the variables object.
    variables: Option<String>,
    operation_name: Option<String>,
}

/// `GET /api/{db}/graphql?query=…&variables=…`: queries only (a mutation → 405).
#[utoipa::path(
    get, path = "/api/{db}/graphql", operation_id = "graphql_get", tag = "graphql", summary = "Run a GraphQL query",
    description = "As `POST /api/{db}/graphql`, with `query`, `variables` (JSON text) and `operationName` in the query string; a mutation answers 405.",
    security((), ("jwt" = [])),
    params(
        ("db" = String, Path, description = "Database name", example = "demo"),
        ("query" = String, Query, description = "The GraphQL document", example = "{ book(limit: 5) { _id title { string } } }"),
        ("variables" = Option<String>, Query, description = "The variables, as JSON text", example = "{\"min\":\"price.number.gt=10\"}"),
        ("operationName" = Option<String>, Query, description = "The operation to run"),
    ),
    responses(
        (status = 200, description = "`data`, and `errors` for the fields that failed; with `Accept: text/html`, the query console page", body = Object,
         example = json!({"data": {"book": [{"_id": "6571f3a4c2b9e8d7f6a5b4c3", "title": [{"string": "Dune"}]}]}})),
        (status = 400, description = "No `query`, malformed `variables`, or a document refused as by POST", body = Object),
        (status = 401, response = inline(InvalidToken)),
        (status = 404, description = "No such database", body = ErrorBody),
        (status = 405, description = "A mutation by GET", body = Object,
         example = json!({"errors": [{"message": "A mutation needs POST", "extensions": {"code": "method_not_allowed", "status": 405}}]})),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn get(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    // a browser opening the address gets the query console
    let wants_page = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"));
    if wants_page {
        return Ok(super::views::graphql_console::page(&db));
    }
    let params: GetParams = match serde_urlencoded::from_str(req.query_string()) {
        Ok(params) => params,
        Err(_) => return Ok(answer(Answer::refused(400, "invalid_query", "Malformed query string"))),
    };
    let Some(query) = params.query else {
        return Ok(answer(Answer::refused(400, "invalid_query", "`query` is required")));
    };
    let variables = match params.variables.as_deref().map(serde_json::from_str).transpose() {
        Ok(variables) => variables,
        Err(error) => {
            return Ok(answer(Answer::refused(
                400,
                "invalid_json",
                format!("Malformed variables: {error}"),
            )));
        }
    };
    let request = GraphqlRequest {
        query,
        variables,
        operation_name: params.operation_name,
    };
    let answered = state
        .graphql
        .execute(&state.service, caller, &db, request, true)
        .await?;
    Ok(answer(answered))
}

fn answer(answer: Answer) -> HttpResponse {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let mut response = HttpResponse::build(status);
    if status == StatusCode::METHOD_NOT_ALLOWED {
        response.insert_header(("Allow", "POST"));
    }
    response.content_type("application/json").body(answer.body)
}
