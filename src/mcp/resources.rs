//! The resources of a database: its schema, and each entity by the template
//! `eds://{db}/entity/{id}`.

use serde_json::{Value as Json, json};

/// A resource URI, read.
#[derive(Debug, PartialEq)]
pub enum Resource {
    /// The entity types with their property definitions.
    Schema,
    /// One entity, as `get_entity` answers it.
    Entity(String),
}

impl Resource {
    /// The resource `uri` names in `db`; `None` for any other URI.
    pub fn parse(db: &str, uri: &str) -> Option<Resource> {
        let rest = uri.strip_prefix("eds://")?.strip_prefix(db)?.strip_prefix('/')?;
        match rest.strip_prefix("entity/") {
            Some(id) if !id.is_empty() && !id.contains('/') => Some(Resource::Entity(id.to_owned())),
            _ => (rest == "schema").then_some(Resource::Schema),
        }
    }
}

/// `resources/list`: the schema (entities are too many to list: they come by template).
pub fn listed(db: &str) -> Json {
    json!({"resources": [{
        "uri": format!("eds://{db}/schema"),
        "name": "schema",
        "title": format!("The entity types of {db}"),
        "description": "The entity types with their property definitions, as the tool get_entity_type answers them",
        "mimeType": "application/json",
    }]})
}

/// `resources/templates/list`: an entity by its `_id`.
pub fn templates(db: &str) -> Json {
    json!({"resourceTemplates": [{
        "uriTemplate": format!("eds://{db}/entity/{{id}}"),
        "name": "entity",
        "title": format!("An entity of {db}"),
        "description": "One entity with every property you may see, as the tool get_entity answers it",
        "mimeType": "application/json",
    }]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_and_entity_uris_of_this_database_are_read_and_no_other() {
        assert_eq!(Resource::parse("demo", "eds://demo/schema"), Some(Resource::Schema));
        assert_eq!(
            Resource::parse("demo", "eds://demo/entity/6571f3a4c2b9e8d7f6a5b4c3"),
            Some(Resource::Entity("6571f3a4c2b9e8d7f6a5b4c3".into()))
        );
        for other in [
            "eds://other/schema",
            "eds://demos/schema",
            "eds://demo/entity/",
            "eds://demo/entity/a/b",
            "eds://demo/thing",
            "https://demo/schema",
        ] {
            assert_eq!(Resource::parse("demo", other), None, "{other}");
        }
    }
}
