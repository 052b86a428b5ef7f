//! The mutations: each takes the REST body as JSON, runs the operation the
//! REST route runs, and answers what it answers. A read-only token is
//! refused before anything is looked up, as REST refuses it.

use async_graphql::dynamic::{Field, FieldFuture, InputValue, Object, ResolverContext, TypeRef};
use async_graphql::{Error, Value};
use serde::Serialize;
use serde_json::{Value as Json, json};

use super::names::JSON;
use super::{Exec, api_error, null_on_error};
use crate::error::ApiError;
use crate::model::value::parse_values;
use crate::service::{batch, entities, restore, values};

/// The `Mutation` root.
pub fn root() -> Object {
    Object::new("Mutation")
        .field(
            Field::new("create", TypeRef::named(JSON), |ctx| {
                FieldFuture::new(async move {
                    null_on_error(&ctx, async {
                        let exec = writer(&ctx)?;
                        let values = parse_values(&json_argument(&ctx, "properties")?).map_err(api_error)?;
                        answer(entities::create(&exec.service, &exec.caller, &exec.db, values, None).await)
                    })
                    .await
                })
            })
            .argument(InputValue::new("properties", TypeRef::named_nn(JSON)))
            .description("POST /api/{db}/entity: `properties` is its body, the answer its answer"),
        )
        .field(
            Field::new("add", TypeRef::named(JSON), |ctx| {
                FieldFuture::new(async move {
                    null_on_error(&ctx, async {
                        let exec = writer(&ctx)?;
                        let id = ctx.args.try_get("_id")?.string()?.to_owned();
                        let values = parse_values(&json_argument(&ctx, "properties")?).map_err(api_error)?;
                        answer(entities::add_values(&exec.service, &exec.caller, &exec.db, id, values, None).await)
                    })
                    .await
                })
            })
            .argument(InputValue::new("_id", TypeRef::named_nn(TypeRef::STRING)))
            .argument(InputValue::new("properties", TypeRef::named_nn(JSON)))
            .description("POST /api/{db}/entity/{_id}"),
        )
        .field(
            Field::new("deleteProperty", TypeRef::named(JSON), |ctx| {
                FieldFuture::new(async move {
                    null_on_error(&ctx, async {
                        let exec = writer(&ctx)?;
                        let id = ctx.args.try_get("_id")?.string()?.to_owned();
                        answer(values::delete(&exec.service, &exec.caller, &exec.db, id, None).await)
                    })
                    .await
                })
            })
            .argument(InputValue::new("_id", TypeRef::named_nn(TypeRef::STRING)))
            .description("DELETE /api/{db}/property/{_id}"),
        )
        .field(
            Field::new("deleteEntity", TypeRef::named(JSON), |ctx| {
                FieldFuture::new(async move {
                    null_on_error(&ctx, async {
                        let exec = writer(&ctx)?;
                        let id = ctx.args.try_get("_id")?.string()?.to_owned();
                        answer(entities::delete(&exec.service, &exec.caller, &exec.db, id, None).await)
                    })
                    .await
                })
            })
            .argument(InputValue::new("_id", TypeRef::named_nn(TypeRef::STRING)))
            .description("DELETE /api/{db}/entity/{_id}"),
        )
        .field(
            Field::new("batch", TypeRef::named(JSON), |ctx| {
                FieldFuture::new(async move {
                    null_on_error(&ctx, async {
                        let exec = writer(&ctx)?;
                        let mut body = json!({ "operations": json_argument(&ctx, "operations")? });
                        if let Some(dry_run) = ctx.args.get("dry_run").filter(|dry_run| !dry_run.is_null()) {
                            body["dry_run"] = Json::Bool(dry_run.boolean()?);
                        }
                        answer(batch::batch(&exec.service, &exec.caller, &exec.db, &body, None).await)
                    })
                    .await
                })
            })
            .argument(InputValue::new("operations", TypeRef::named_nn(JSON)))
            .argument(InputValue::new("dry_run", TypeRef::named(TypeRef::BOOLEAN)))
            .description("POST /api/{db}/batch"),
        )
        .field(
            Field::new("restore", TypeRef::named(JSON), |ctx| {
                FieldFuture::new(async move {
                    null_on_error(&ctx, async {
                        let exec = writer(&ctx)?;
                        let id = ctx.args.try_get("_id")?.string()?.to_owned();
                        let at = ctx
                            .args
                            .get("at")
                            .filter(|at| !at.is_null())
                            .map(|at| at.string().map(str::to_owned))
                            .transpose()?;
                        answer(restore::restore(&exec.service, &exec.caller, &exec.db, id, at.as_deref(), None).await)
                    })
                    .await
                })
            })
            .argument(InputValue::new("_id", TypeRef::named_nn(TypeRef::STRING)))
            .argument(InputValue::new("at", TypeRef::named(TypeRef::STRING)))
            .description("POST /api/{db}/entity/{_id}/restore"),
        )
}

/// The request's operation context, once the caller may write (a read-only
/// token is refused before anything is looked up).
fn writer<'a>(ctx: &ResolverContext<'a>) -> Result<&'a Exec, Error> {
    let exec = ctx.data::<Exec>()?;
    exec.caller.require_write().map_err(api_error)?;
    Ok(exec)
}

fn json_argument(ctx: &ResolverContext<'_>, name: &str) -> Result<Json, Error> {
    Ok(ctx.args.try_get(name)?.as_value().clone().into_json()?)
}

/// The REST answer as a JSON scalar, or the REST error.
fn answer(result: Result<impl Serialize, ApiError>) -> Result<Option<Value>, Error> {
    let body = serde_json::to_value(result.map_err(api_error)?)?;
    Ok(Some(Value::from_json(body)?))
}
