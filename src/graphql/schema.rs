//! The dynamic schema of one view of a database: a list field per entity
//! type the caller may read, an object per type with a field per property
//! definition the caller may read (value objects typed by the definition's
//! type), `_entity(_id)`, and the mutations.

use std::collections::HashMap;

use async_graphql::dynamic::{Field, FieldFuture, Interface, InterfaceField, Object, Scalar, Schema, TypeRef};
use serde_json::Value as Json;

use super::mutations;
use super::names::{ENTITY, JSON, Names, OTHER};
use super::resolve::{self, TypeObjects};
use crate::model::definition::PropertyDefinition;
use crate::model::value::ValueType;

/// The root query fields besides the types'.
const ROOT_FIELDS: [&str; 1] = ["_entity"];
/// The fields every entity object has before its properties.
const ENTITY_FIELDS: [&str; 2] = ["_id", "_json"];

/// The system properties every entity object shows, with their value objects.
const SYSTEM_PROPERTIES: [(&str, &str); 10] = [
    ("_type", "ReferenceValue"),
    ("_parent", "ReferenceValue"),
    ("_owner", "ReferenceValue"),
    ("_editor", "ReferenceValue"),
    ("_expander", "ReferenceValue"),
    ("_viewer", "ReferenceValue"),
    ("_noaccess", "ReferenceValue"),
    ("_sharing", "StringValue"),
    ("_inheritrights", "BooleanValue"),
    ("_created", "Value"),
];

/// The schema of `types` (the answer of `service::types::entity_types`:
/// `{"types":[{"entity":TYPE,"properties":[DEFINITION,...]}]}`).
pub fn build(types: &Json) -> Result<Schema, String> {
    let mut described: Vec<&Json> = types["types"].as_array().into_iter().flatten().collect();
    described.sort_by_key(|described| id_of(&described["entity"]));
    let mut root_names = Names::reserving(ROOT_FIELDS);
    let mut query = Object::new("Query").field(resolve::entity_field());
    let mut objects = Vec::new();
    let mut type_objects = HashMap::new();
    for described in described {
        let type_doc = &described["entity"];
        let field_name = root_names.unique(first_string(type_doc, "name").unwrap_or_default());
        let object_name = format!("T_{field_name}");
        type_objects.insert(id_of(type_doc).to_owned(), object_name.clone());
        query = query.field(resolve::list_field(&field_name, &object_name, id_of(type_doc)));
        objects.push(type_object(&object_name, described));
    }
    let mut builder = Schema::build("Query", Some("Mutation"), None)
        .register(query)
        .register(mutations::root())
        .register(Scalar::new(JSON).description("A JSON value, as the REST API reads and answers it"))
        .register(entity_interface())
        .register(entity_object(OTHER, &[]))
        .data(TypeObjects(type_objects));
    for object in objects.into_iter().chain(resolve::value_objects()) {
        builder = builder.register(object);
    }
    builder.finish().map_err(|error| error.to_string())
}

/// The object of the type `described` (its entity and definitions).
fn type_object(object_name: &str, described: &Json) -> Object {
    let mut definitions: Vec<&Json> = described["properties"].as_array().into_iter().flatten().collect();
    definitions.sort_by_key(|definition| id_of(definition));
    let properties: Vec<(String, &'static str)> = definitions
        .into_iter()
        .filter_map(|definition| {
            let name = first_string(definition, "name")?;
            let value_type = PropertyDefinition::from_doc(definition).value_type;
            Some((name.to_owned(), value_object(value_type)))
        })
        .collect();
    entity_object(object_name, &properties)
}

/// An entity object: `_id`, `_json`, the system properties, then `properties`.
fn entity_object(object_name: &str, properties: &[(String, &'static str)]) -> Object {
    let mut names = Names::reserving(ENTITY_FIELDS);
    let mut object = Object::new(object_name)
        .implement(ENTITY)
        .field(Field::new("_id", TypeRef::named_nn(TypeRef::STRING), |ctx| {
            FieldFuture::new(async move { Ok(Some(resolve::entity_doc(&ctx)?.id_value())) })
        }))
        .field(
            Field::new("_json", TypeRef::named_nn(JSON), |ctx| {
                FieldFuture::new(async move { Ok(Some(resolve::entity_doc(&ctx)?.json_value())) })
            })
            .description("The entity as the REST API answers it"),
        );
    let system = SYSTEM_PROPERTIES
        .iter()
        .map(|(name, object)| ((*name).to_owned(), *object));
    for (property, value_object) in system.chain(properties.iter().cloned()) {
        let field_name = names.unique(&property);
        object = object.field(resolve::property_field(&field_name, property, value_object));
    }
    object
}

fn entity_interface() -> Interface {
    Interface::new(ENTITY)
        .field(InterfaceField::new("_id", TypeRef::named_nn(TypeRef::STRING)))
        .field(InterfaceField::new("_json", TypeRef::named_nn(JSON)))
}

/// The value object of a definition's type.
fn value_object(value_type: Option<ValueType>) -> &'static str {
    match value_type {
        Some(ValueType::String | ValueType::Text | ValueType::Counter) => "StringValue",
        Some(ValueType::Number) => "NumberValue",
        Some(ValueType::Boolean) => "BooleanValue",
        Some(ValueType::Date) => "DateValue",
        Some(ValueType::Datetime) => "DatetimeValue",
        Some(ValueType::Reference) => "ReferenceValue",
        Some(ValueType::File) => "FileValue",
        None => "Value",
    }
}

fn id_of(doc: &Json) -> &str {
    doc["_id"].as_str().unwrap_or_default()
}

fn first_string<'a>(doc: &'a Json, prop: &str) -> Option<&'a str> {
    doc[prop][0]["string"].as_str()
}
