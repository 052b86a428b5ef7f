//! GraphQL per database (`/api/{db}/graphql`): a schema generated from the
//! entity types and definitions the caller may read, whose resolvers run
//! the application layer's operations (`crate::service`), so REST, MCP and
//! GraphQL answer under the same rights, limits and errors. Documents are
//! parsed and bounded here before any database work.

pub mod cache;
pub mod limits;
mod mutations;
pub mod names;
mod resolve;
pub mod schema;

use std::sync::Arc;

use async_graphql::parser::types::{OperationDefinition, OperationType, Selection};
use async_graphql::{ErrorExtensions, Variables};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value as Json, json};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::service::{Caller, Service};
use limits::Limits;

/// What the resolvers run with: the operations, the caller, the database.
pub struct Exec {
    pub service: Arc<Service>,
    pub caller: Caller,
    pub db: String,
}

/// An operation's error as a GraphQL error: the REST message, and the REST
/// code (with the status, and a batch's `operation`) in `extensions`.
pub fn api_error(error: ApiError) -> async_graphql::Error {
    let body = serde_json::to_value(error.body()).unwrap_or_default();
    async_graphql::Error::new(error.message.to_string()).extend_with(|_, extensions| {
        extensions.set("code", error.code.as_str());
        extensions.set("status", error.status().as_u16());
        if let Some(operation) = body.get("operation").and_then(Json::as_u64) {
            extensions.set("operation", operation);
        }
    })
}

/// A root field's answer: its error, if any, goes into `errors` with the
/// field's path and the field answers null, as GraphQL has it (the dynamic
/// schema would drop the field from `data` and the path from the error).
pub async fn null_on_error<'a, R: Into<async_graphql::dynamic::FieldValue<'a>>>(
    ctx: &async_graphql::dynamic::ResolverContext<'_>,
    answer: impl Future<Output = Result<Option<R>, async_graphql::Error>>,
) -> Result<Option<R>, async_graphql::Error> {
    Ok(answer.await.unwrap_or_else(|error| {
        let error = ctx.ctx.set_error_path(error.into_server_error(ctx.ctx.item.pos));
        ctx.ctx.add_error(error);
        None
    }))
}

/// A request: the document, its variables, the operation to run.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphqlRequest {
    pub query: String,
    #[serde(default)]
    pub variables: Option<Map<String, Json>>,
    #[serde(default)]
    pub operation_name: Option<String>,
}

/// An answer: its HTTP status and GraphQL body, as JSON text.
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
}

impl Answer {
    /// A request refused whole: `status` with one error carrying `code`.
    pub fn refused(status: u16, code: &str, message: impl Into<String>) -> Answer {
        let message = message.into();
        let body = json!({"errors": [{"message": message, "extensions": {"code": code, "status": status}}]});
        Answer {
            status,
            body: Bytes::from(body.to_string()),
        }
    }
}

/// The endpoint's limits and schema cache.
pub struct Graphql {
    limits: Limits,
    schemas: cache::SchemaCache,
}

impl Graphql {
    pub fn new(max_depth: usize, max_complexity: u64) -> Graphql {
        Graphql {
            limits: Limits {
                max_depth,
                max_complexity,
            },
            schemas: Default::default(),
        }
    }

    /// Runs `request` for `caller` in `db`. `by_get`: a mutation is refused
    /// (405). The document is parsed, held to one operation and bounded
    /// before the schema (the database's types) is looked up.
    pub async fn execute(
        &self,
        service: &Arc<Service>,
        caller: Caller,
        db: &str,
        request: GraphqlRequest,
        by_get: bool,
    ) -> Result<Answer, ApiError> {
        let document = match async_graphql::parser::parse_query(&request.query) {
            Ok(document) => document,
            Err(error) => return Ok(Answer::refused(400, "graphql_parse_failed", error.to_string())),
        };
        let mut operations = document.operations.iter();
        let operation = match (operations.next(), operations.next()) {
            (Some((_, operation)), None) => operation,
            (None, _) => {
                return Ok(Answer::refused(
                    400,
                    "graphql_parse_failed",
                    "The document has no operation",
                ));
            }
            _ => {
                let message = "One operation per request: the document has more than one";
                return Ok(Answer::refused(400, "too_many_operations", message));
            }
        };
        match operation.node.ty {
            OperationType::Mutation if by_get => {
                return Ok(Answer::refused(405, "method_not_allowed", "A mutation needs POST"));
            }
            OperationType::Subscription => {
                return Ok(Answer::refused(
                    400,
                    "graphql_validation_failed",
                    "Subscriptions are not served",
                ));
            }
            _ => {}
        }
        let variables = request.variables.unwrap_or_default();
        if let Err(too_complex) = limits::check(&document, &operation.node, &variables, &self.limits) {
            return Ok(Answer::refused(
                400,
                "query_too_complex",
                too_complex.message(&self.limits),
            ));
        }
        let introspection = introspection_only(&operation.node)
            .then(|| introspection_key(&request.query, &variables, request.operation_name.as_deref()));
        let built = self.schemas.schema(service, &caller, db).await?;
        if let Some(body) = introspection.as_ref().and_then(|key| built.introspection(key)) {
            return Ok(Answer { status: 200, body });
        }
        let mut executed = async_graphql::Request::new(request.query)
            .variables(Variables::from_json(Json::Object(variables)))
            .data(Exec {
                service: service.clone(),
                caller,
                db: db.to_owned(),
            });
        if let Some(name) = request.operation_name {
            executed = executed.operation_name(name);
        }
        let response = built.schema.execute(executed).await;
        // No data and no operation's error (each carries its REST status):
        // the document did not validate against the schema.
        let refused = response.data == async_graphql::Value::Null
            && !response.errors.is_empty()
            && response
                .errors
                .iter()
                .all(|error| (error.extensions.as_ref()).is_none_or(|extensions| extensions.get("status").is_none()));
        let mut body = serde_json::to_value(&response).map_err(|error| ApiError::internal("graphql answer", error))?;
        if refused {
            for error in body["errors"].as_array_mut().into_iter().flatten() {
                error["extensions"]["code"] = json!("graphql_validation_failed");
                error["extensions"]["status"] = json!(400);
            }
        }
        let body = Bytes::from(body.to_string());
        if let Some(key) = introspection.filter(|_| response.errors.is_empty()) {
            built.keep_introspection(key, body.clone());
        }
        Ok(Answer {
            status: if refused { 400 } else { 200 },
            body,
        })
    }
}

/// Whether every top-level field of `operation` is an introspection field
/// (`__schema`, `__type`, `__typename`): its answer depends on the schema alone.
fn introspection_only(operation: &OperationDefinition) -> bool {
    let fields = &operation.selection_set.node.items;
    !fields.is_empty()
        && fields.iter().all(|selection| match &selection.node {
            Selection::Field(field) => field.node.name.node.starts_with("__"),
            _ => false,
        })
}

/// The digest an introspection answer is kept under: its document,
/// variables and operation name.
fn introspection_key(query: &str, variables: &Map<String, Json>, operation_name: Option<&str>) -> [u8; 32] {
    let mut digest = Sha256::new();
    let variables = serde_json::to_string(variables).unwrap_or_default();
    for part in [query, &variables, operation_name.unwrap_or("")] {
        digest.update(part.len().to_le_bytes());
        digest.update(part.as_bytes());
    }
    digest.finalize().into()
}
