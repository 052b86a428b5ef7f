//! Entities: lists, reads and history. The documents themselves are JSON
//! built by `crate::view`; the schema types here describe their shape.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value as Json, json};
use utoipa::ToSchema;

use super::values::PropertyValue;

/// `GET /api/{db}/entity`. A grouped query's rows have no `_id` but `_count`,
/// and `count` is the number of groups.
// A page is written in this shape field by field (`service::list`), from
// [`LIST_START`] to [`list_end`].
#[derive(Serialize, ToSchema)]
pub struct EntityList {
    #[schema(value_type = Vec<ListRow>)]
    pub entities: Vec<Json>,
    /// Every match, regardless of `limit` and `skip`.
    pub count: u64,
    /// The effective limit.
    pub limit: i64,
    pub skip: i64,
}

/// What an [`EntityList`] written field by field starts with, its entities to follow.
pub const LIST_START: &[u8] = b"{\"entities\":[";

/// What follows the entities of an [`EntityList`] written field by field.
pub fn list_end(count: impl std::fmt::Display, limit: i64, skip: i64) -> String {
    format!("],\"count\":{count},\"limit\":{limit},\"skip\":{skip}}}")
}

/// `GET /api/{db}/entity/{id}`.
#[derive(Serialize, ToSchema)]
pub struct EntityRead {
    #[schema(value_type = Entity)]
    pub entity: Box<RawValue>,
}

/// `GET /api/{db}/entity/{id}/history`, newest first.
#[derive(Serialize, ToSchema)]
pub struct History {
    #[schema(value_type = Vec<Change>)]
    pub changes: Vec<Json>,
    /// All changes, regardless of `limit` and `skip`.
    pub count: u64,
}

// The shapes of the documents `crate::view` builds, for the schema only.

/// An entity as the caller may see it: `_id`, and each visible property's
/// values under its name.
#[derive(Serialize, ToSchema)]
pub struct Entity {
    #[serde(rename = "_id")]
    pub id: String,
    #[serde(flatten)]
    pub properties: BTreeMap<String, Vec<PropertyValue>>,
}

/// A row of a list: an entity, or with `group` one row per group.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum ListRow {
    Entity(Entity),
    Group(GroupRow),
}

/// A group: the `props` values of its first entity (lowest `_id`) and its size.
#[derive(Serialize, ToSchema)]
pub struct GroupRow {
    /// Entities in the group.
    #[serde(rename = "_count")]
    pub count: u64,
    #[serde(flatten)]
    pub properties: BTreeMap<String, Vec<PropertyValue>>,
}

#[derive(Serialize, ToSchema)]
pub struct Change {
    /// The property name.
    #[serde(rename = "type")]
    pub property: String,
    pub at: String,
    /// The person who made the change.
    pub by: Option<String>,
    /// The value before (absent for an addition).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub old: Option<PropertyValue>,
    /// The value after (absent for a deletion).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub new: Option<PropertyValue>,
}

/// `GET /api/{db}/entity`: the query language, filters first.
pub const ENTITY_LIST_DESCRIPTION: &str = r#"Lists the entities the caller may see (anonymous callers: public entities only).

**Filters** take the form `<property>.<field>[.<operator>]=<value>`, for example
`_type.string=book`, `price.number.gt=10`, `title.string.regex=/^d/i`, `photo.filetype=image/jpeg`.
`<field>` is the value field: `string` (types `string`, `text`, `counter`; for a `reference` the
referenced entity's name), `number` (also a counter's numeric part), `boolean`, `date`, `datetime`,
`reference`, `filename`, `filesize`, `filetype`, `language`. Operators:

| field | operators |
|---|---|
| `string` (and `filename`, `filetype`, `language`) | (none: exact), `regex`, `in`, `exists`, `gt`, `gte`, `lt`, `lte`, `ne` |
| `reference` | (none), `in`, `exists` |
| `number` | (none), `gt`, `gte`, `lt`, `lte`, `ne`, `in`, `exists` |
| `boolean` | (none), `in`, `exists` |
| `date` (`YYYY-MM-DD`), `datetime` (ISO 8601) | (none), `gt`, `gte`, `lt`, `lte`, `in`, `exists` |
| `filesize` | (none), `gt`, `gte`, `lt`, `lte`, `in`, `exists` |
| `_id` (any live value, whatever its field: `table._id.exists=true`) | `exists` |

`in` takes a comma-separated list; `exists` takes `true` (anything else means `false`); `regex`
takes `/pattern/flags` (flags `i`, `m`, `s`; `x` or an invalid pattern gives 400 `Invalid regex`);
`date` and `datetime` also take Unix milliseconds; for `boolean` anything but `true` means `false`;
an unknown operator matches exactly; `ne` also matches entities without the property; an invalid id
in a `reference` filter gives 400 `Invalid ID`. `_type.string` matches the type's `name`. Filters
are joined with AND."#;

pub fn entity_example() -> Json {
    json!({
        "_id": "6571f3a4c2b9e8d7f6a5b4c3",
        "_type": [{"_id": "6571f3a4c2b9e8d7f6a5b4c4", "reference": "6571f3a4c2b9e8d7f6a5b401",
                   "string": "book", "entity_type": "entity", "property_type": "_type"}],
        "title": [{"_id": "6571f3a4c2b9e8d7f6a5b4c5", "string": "Dune"}],
        "photo": [{"_id": "6571f3a4c2b9e8d7f6a5b4c6", "filename": "cover.jpg", "filesize": 48213, "filetype": "image/jpeg"}],
    })
}

pub fn entity_list_example() -> Json {
    json!({"entities": [entity_example()], "count": 1, "limit": 100, "skip": 0})
}

pub fn entity_read_example() -> Json {
    json!({"entity": entity_example()})
}

pub fn history_example() -> Json {
    json!({
        "changes": [{"type": "title", "at": "2026-11-21T10:05:00.000Z", "by": "6571f3a4c2b9e8d7f6a5b402",
                     "old": {"_id": "6571f3a4c2b9e8d7f6a5b4c5", "string": "Dune"},
                     "new": {"_id": "6571f3a4c2b9e8d7f6a5b4c8", "string": "Dune Messiah"}}],
        "count": 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_serializes_as_a_list_written_field_by_field() {
        let entity = r#"{"_id":"6571f3a4c2b9e8d7f6a5b4c3"}"#;
        let list = EntityList {
            entities: vec![serde_json::from_str(entity).unwrap()],
            count: 3,
            limit: 1,
            skip: 2,
        };
        let written = [LIST_START, entity.as_bytes(), list_end(3, 1, 2).as_bytes()].concat();
        assert_eq!(serde_json::to_string(&list).unwrap().as_bytes(), written);
        assert_eq!(
            serde_json::to_string(&list).unwrap(),
            r#"{"entities":[{"_id":"6571f3a4c2b9e8d7f6a5b4c3"}],"count":3,"limit":1,"skip":2}"#
        );
    }
}
