//! `POST .../duplicate` and `GET .../activity`: what they take and answer.

use serde::Serialize;
use serde_json::{Value as Json, json};
use utoipa::ToSchema;

use super::values::PropertyValue;

/// The body of `POST /api/{db}/entity/{id}/duplicate` (optional: none is `{}`).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateBody {
    /// How many copies, 1 to 100; default 1.
    #[schema(minimum = 1, maximum = 100, nullable = false)]
    pub count: Option<u8>,
    /// Properties whose values the copies leave out.
    #[schema(nullable = false)]
    pub ignored_properties: Option<Vec<String>>,
}

/// `GET /api/{db}/entity/{id}/activity`, newest first.
#[derive(Serialize, ToSchema)]
pub struct Activity {
    #[schema(value_type = Vec<ActivityChange>)]
    pub changes: Vec<Json>,
}

/// One change the person made: as a history change, with the entity it was made on.
#[derive(Serialize, ToSchema)]
pub struct ActivityChange {
    pub entity: ChangedEntity,
    /// The property name.
    #[serde(rename = "type")]
    pub property: String,
    pub at: String,
    /// The person who made the change.
    pub by: String,
    /// The value before (absent for an addition).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub old: Option<PropertyValue>,
    /// The value after (absent for a deletion).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub new: Option<PropertyValue>,
}

#[derive(Serialize, ToSchema)]
pub struct ChangedEntity {
    #[serde(rename = "_id")]
    pub id: String,
    /// Its name, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub name: Option<String>,
}

pub fn duplicate_body_example() -> Json {
    json!({"count": 2, "ignoredProperties": ["isbn"]})
}

pub fn duplicated_example() -> Json {
    json!([{
        "_id": "6571f3a4c2b9e8d7f6a5b4d1",
        "properties": [
            {"_id": "6571f3a4c2b9e8d7f6a5b4d2", "type": "_type", "reference": "6571f3a4c2b9e8d7f6a5b401"},
            {"_id": "6571f3a4c2b9e8d7f6a5b4d3", "type": "title", "string": "Dune"},
            {"_id": "6571f3a4c2b9e8d7f6a5b4d4", "type": "no", "string": "43", "number": 43},
        ],
    }])
}

pub fn activity_example() -> Json {
    json!({
        "changes": [{"entity": {"_id": "6571f3a4c2b9e8d7f6a5b4c3", "name": "Dune"}, "type": "title",
                     "at": "2026-11-21T10:05:00.000Z", "by": "6571f3a4c2b9e8d7f6a5b402",
                     "old": {"_id": "6571f3a4c2b9e8d7f6a5b4c5", "string": "Dune"},
                     "new": {"_id": "6571f3a4c2b9e8d7f6a5b4c8", "string": "Dune Messiah"}}],
    })
}
