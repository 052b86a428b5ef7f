//! The query resolvers: a type's list through the REST list operation,
//! `_entity` through the REST read, value objects read from the answered
//! documents, and references' entities loaded for a whole answer at once.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use async_graphql::dynamic::{Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, TypeRef};
use async_graphql::{Error, Value};
use serde_json::Value as Json;

use super::names::{ENTITY, JSON, OTHER};
use super::{Exec, api_error, null_on_error};
use crate::error::{ApiError, ErrorCode};
use crate::service::{entities, list, lookups, values};

/// The object name of each type the schema has, by type `_id`.
pub struct TypeObjects(pub HashMap<String, String>);

/// An entity as the caller sees it, with the entities its references name
/// (when the query asks for them).
pub struct EntityDoc {
    doc: Json,
    referenced: Arc<HashMap<String, Json>>,
}

impl EntityDoc {
    pub fn id_value(&self) -> FieldValue<'static> {
        FieldValue::value(self.doc["_id"].as_str().unwrap_or_default().to_owned())
    }

    pub fn json_value(&self) -> FieldValue<'static> {
        FieldValue::value(Value::from_json(self.doc.clone()).unwrap_or(Value::Null))
    }

    /// The entity as a field value of the interface: its type's object.
    fn typed(self, types: &TypeObjects) -> FieldValue<'static> {
        let type_id = self.doc["_type"][0]["reference"].as_str().unwrap_or_default();
        let object = types.0.get(type_id).cloned().unwrap_or_else(|| OTHER.to_owned());
        FieldValue::owned_any(self).with_type(object)
    }
}

/// A value of an entity, and the entities its entity's references name.
struct ValueDoc {
    value: Json,
    referenced: Arc<HashMap<String, Json>>,
}

pub fn entity_doc<'a>(ctx: &ResolverContext<'a>) -> Result<&'a EntityDoc, Error> {
    ctx.parent_value.try_downcast_ref::<EntityDoc>()
}

/// A type's list field: the REST list of `type_id`'s entities.
pub fn list_field(field_name: &str, object_name: &str, type_id: &str) -> Field {
    let type_id = type_id.to_owned();
    list_arguments(Field::new(
        field_name,
        TypeRef::named_nn_list(object_name),
        move |ctx| {
            let type_id = type_id.clone();
            FieldFuture::new(async move {
                null_on_error(&ctx, async {
                    let exec = ctx.data::<Exec>()?;
                    let query = list_query(&type_id, &ctx).map_err(api_error)?;
                    let docs = list::documents(&exec.service, &exec.caller, &exec.db, &query)
                        .await
                        .map_err(api_error)?;
                    let referenced = referenced_entities(exec, &ctx, &docs).await?;
                    Ok(Some(FieldValue::list(docs.into_iter().map(|doc| {
                        FieldValue::owned_any(EntityDoc {
                            doc,
                            referenced: referenced.clone(),
                        })
                    }))))
                })
                .await
            })
        },
    ))
}

/// `_entity(_id)`: the entity as the REST read answers it, as its type's object.
pub fn entity_field() -> Field {
    Field::new("_entity", TypeRef::named(ENTITY), |ctx| {
        FieldFuture::new(async move {
            null_on_error(&ctx, async {
                let exec = ctx.data::<Exec>()?;
                let id = ctx.args.try_get("_id")?.string()?;
                let read = entities::read(&exec.service, &exec.caller, &exec.db, id)
                    .await
                    .map_err(api_error)?;
                let doc: Json = serde_json::from_str(read.entity.get())?;
                let docs = [doc];
                let referenced = referenced_entities(exec, &ctx, &docs).await?;
                let [doc] = docs;
                Ok(Some(EntityDoc { doc, referenced }.typed(ctx.data::<TypeObjects>()?)))
            })
            .await
        })
    })
    .argument(InputValue::new("_id", TypeRef::named_nn(TypeRef::STRING)))
}

/// The REST list query string of a type's list field: `filter` as it is
/// (less `group` and `props`, which change the answer's shape), the type,
/// then `q`, `sort`, `limit` and `skip`.
fn list_query(type_id: &str, ctx: &ResolverContext<'_>) -> Result<String, ApiError> {
    let filter = ctx
        .args
        .get("filter")
        .and_then(|value| value.string().ok())
        .unwrap_or_default();
    let mut params: Vec<(String, String)> = serde_urlencoded::from_str(filter)
        .map_err(|_| ApiError::new(ErrorCode::InvalidQuery, "Malformed query string"))?;
    params.retain(|(key, _)| key != "group" && key != "props");
    params.push(("_type.reference".into(), type_id.to_owned()));
    for name in ["q", "sort"] {
        if let Some(text) = ctx.args.get(name).and_then(|value| value.string().ok()) {
            params.push((name.into(), text.to_owned()));
        }
    }
    for name in ["limit", "skip"] {
        if let Some(number) = ctx.args.get(name).and_then(|value| value.i64().ok()) {
            params.push((name.into(), number.to_string()));
        }
    }
    Ok(serde_urlencoded::to_string(params).expect("strings encode"))
}

/// The entities the references of `docs` name, as the caller sees them, in
/// one read for the whole answer; none when the query asks for no
/// reference's `entity`.
async fn referenced_entities(
    exec: &Exec,
    ctx: &ResolverContext<'_>,
    docs: &[Json],
) -> Result<Arc<HashMap<String, Json>>, Error> {
    let asked = ctx
        .ctx
        .field()
        .selection_set()
        .any(|property| property.selection_set().any(|field| field.name() == "entity"));
    if !asked {
        return Ok(Arc::default());
    }
    let ids: BTreeSet<String> = docs
        .iter()
        .filter_map(Json::as_object)
        .flat_map(|doc| doc.values())
        .filter_map(Json::as_array)
        .flatten()
        .filter_map(|value| value["reference"].as_str().map(str::to_owned))
        .collect();
    let ids: Vec<String> = ids.into_iter().collect();
    let found = lookups::read_many(&exec.service, &exec.caller, &exec.db, &ids)
        .await
        .map_err(api_error)?;
    Ok(Arc::new(found))
}

/// A property's field: its values as `value_object`s.
pub fn property_field(field_name: &str, property: String, value_object: &str) -> Field {
    let description = format!("The values of `{property}`");
    Field::new(field_name, TypeRef::named_nn_list_nn(value_object), move |ctx| {
        let property = property.clone();
        FieldFuture::new(async move {
            let entity = entity_doc(&ctx)?;
            let values = entity.doc[&property].as_array().cloned().unwrap_or_default();
            Ok(Some(FieldValue::list(values.into_iter().map(|value| {
                FieldValue::owned_any(ValueDoc {
                    value,
                    referenced: entity.referenced.clone(),
                })
            }))))
        })
    })
    .description(description)
}

/// The value objects, each with the fields of its type.
pub fn value_objects() -> Vec<Object> {
    let string = [("string", TypeRef::STRING), ("language", TypeRef::STRING)];
    let reference = [
        ("reference", TypeRef::STRING),
        ("string", TypeRef::STRING),
        ("entity_type", TypeRef::STRING),
    ];
    let file = [
        ("filename", TypeRef::STRING),
        ("filesize", TypeRef::FLOAT),
        ("filetype", TypeRef::STRING),
    ];
    let any = [
        ("string", TypeRef::STRING),
        ("number", TypeRef::FLOAT),
        ("boolean", TypeRef::BOOLEAN),
        ("date", TypeRef::STRING),
        ("datetime", TypeRef::STRING),
        ("reference", TypeRef::STRING),
        ("language", TypeRef::STRING),
    ];
    vec![
        value_object("StringValue", &string),
        value_object(
            "NumberValue",
            &[("number", TypeRef::FLOAT), ("language", TypeRef::STRING)],
        ),
        value_object("BooleanValue", &[("boolean", TypeRef::BOOLEAN)]),
        value_object("DateValue", &[("date", TypeRef::STRING)]),
        value_object("DatetimeValue", &[("datetime", TypeRef::STRING)]),
        value_object("ReferenceValue", &reference).field(referenced_entity_field()),
        value_object("FileValue", &file).field(file_url_field()),
        value_object("Value", &any).field(
            Field::new("_json", TypeRef::named_nn(JSON), |ctx| {
                FieldFuture::new(async move {
                    let value = &ctx.parent_value.try_downcast_ref::<ValueDoc>()?.value;
                    Ok(Some(Value::from_json(value.clone()).unwrap_or(Value::Null)))
                })
            })
            .description("The value as the REST API answers it"),
        ),
    ]
}

/// The arguments of a type's list field: the REST list query's.
fn list_arguments(field: Field) -> Field {
    field
        .argument(InputValue::new("filter", TypeRef::named(TypeRef::STRING)).description(
            "Filters as the REST list query string writes them, e.g. \"price.number.gt=10&title.string.regex=^a\"",
        ))
        .argument(InputValue::new("q", TypeRef::named(TypeRef::STRING)))
        .argument(InputValue::new("sort", TypeRef::named(TypeRef::STRING)))
        .argument(InputValue::new("limit", TypeRef::named(TypeRef::INT)))
        .argument(InputValue::new("skip", TypeRef::named(TypeRef::INT)))
}

/// A value object with `_id` and `fields`, each read from the value's JSON.
fn value_object(name: &str, fields: &[(&'static str, &str)]) -> Object {
    let mut object = Object::new(name);
    for &(field, scalar) in [("_id", TypeRef::STRING)].iter().chain(fields) {
        object = object.field(Field::new(field, TypeRef::named(scalar), move |ctx| {
            FieldFuture::new(async move {
                let value = &ctx.parent_value.try_downcast_ref::<ValueDoc>()?.value;
                Ok(value
                    .get(field)
                    .filter(|json| !json.is_null())
                    .map(|json| FieldValue::value(Value::from_json(json.clone()).unwrap_or(Value::Null))))
            })
        }));
    }
    object
}

/// A reference's entity as the caller sees it (one level: its own
/// references' entities are not loaded); null when the caller does not see it.
fn referenced_entity_field() -> Field {
    Field::new("entity", TypeRef::named(ENTITY), |ctx| {
        FieldFuture::new(async move {
            let value = ctx.parent_value.try_downcast_ref::<ValueDoc>()?;
            let Some(doc) = value.value["reference"]
                .as_str()
                .and_then(|id| value.referenced.get(id))
            else {
                return Ok(None);
            };
            let entity = EntityDoc {
                doc: doc.clone(),
                referenced: Arc::default(),
            };
            Ok(Some(entity.typed(ctx.data::<TypeObjects>()?)))
        })
    })
    .description("The referenced entity as the caller sees it (its own references' entities are not loaded)")
}

/// A file value's fresh signed download URL, as `GET /api/{db}/property/{_id}` signs it.
fn file_url_field() -> Field {
    Field::new("url", TypeRef::named(TypeRef::STRING), |ctx| {
        FieldFuture::new(async move {
            let exec = ctx.data::<Exec>()?;
            let value = ctx.parent_value.try_downcast_ref::<ValueDoc>()?;
            let Some(id) = value.value["_id"].as_str() else {
                return Ok(None);
            };
            let shown = values::read(&exec.service, &exec.caller, &exec.db, id)
                .await
                .map_err(api_error)?;
            Ok(shown.url.map(FieldValue::value))
        })
    })
}
