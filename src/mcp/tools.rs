//! The tools: their names, descriptions and input schemas (`tools/list`), and
//! the calls their arguments make. Each tool answers what one REST route (or,
//! for `get_entity_type`, two list queries) answers the same caller.

use serde_json::{Map, Value as Json, json};

/// A tool call with its arguments read.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    /// The entity types (only the one named `name`, if given) with their property definitions.
    GetEntityType { name: Option<String> },
    /// `GET /api/{db}/entity?{query}`.
    SearchEntities { query: String },
    /// `GET /api/{db}/entity/{id}`.
    GetEntity { id: String },
    /// `GET /api/{db}/property/{id}`.
    GetFileUrl { id: String },
    /// `GET /api/{db}/entity/{id}/history?limit&skip`.
    GetEntityHistory {
        id: String,
        limit: Option<String>,
        skip: Option<String>,
    },
    /// `POST /api/{db}/entity` with `properties` as the body.
    CreateEntity { properties: Json },
    /// `POST /api/{db}/entity/{id}` with `properties` as the body.
    AddProperties { id: String, properties: Json },
    /// `DELETE /api/{db}/property/{id}`.
    DeleteProperty { id: String },
}

/// Why a call cannot be made.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// No tool has this name (a protocol error).
    UnknownTool(String),
    /// The arguments do not fit the tool's input schema (a tool error).
    BadArguments(String),
}

impl ToolCall {
    /// The call of tool `name` with `arguments` (an object, or absent).
    pub fn parse(name: &str, arguments: &Json) -> Result<ToolCall, CallError> {
        let empty = Map::new();
        let args = match arguments {
            Json::Object(args) => args,
            Json::Null => &empty,
            _ => return Err(CallError::BadArguments("`arguments` must be an object".into())),
        };
        let args = Arguments(args);
        Ok(match name {
            "get_entity_type" => ToolCall::GetEntityType {
                name: args.text("name")?.filter(|name| !name.is_empty()),
            },
            "search_entities" => ToolCall::SearchEntities {
                query: args
                    .text("query")?
                    .unwrap_or_default()
                    .trim_start_matches('?')
                    .to_owned(),
            },
            "get_entity" => ToolCall::GetEntity { id: args.id()? },
            "get_file_url" => ToolCall::GetFileUrl { id: args.id()? },
            "get_entity_history" => ToolCall::GetEntityHistory {
                id: args.id()?,
                limit: args.count("limit")?,
                skip: args.count("skip")?,
            },
            "create_entity" => ToolCall::CreateEntity {
                properties: args.properties()?,
            },
            "add_properties" => ToolCall::AddProperties {
                id: args.id()?,
                properties: args.properties()?,
            },
            "delete_property" => ToolCall::DeleteProperty { id: args.id()? },
            _ => return Err(CallError::UnknownTool(name.to_owned())),
        })
    }
}

struct Arguments<'a>(&'a Map<String, Json>);

impl Arguments<'_> {
    fn bad(message: String) -> CallError {
        CallError::BadArguments(message)
    }

    /// An optional string argument.
    fn text(&self, name: &str) -> Result<Option<String>, CallError> {
        match self.0.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(Self::bad(format!("`{name}` must be a string"))),
        }
    }

    /// The required `_id`.
    fn id(&self) -> Result<String, CallError> {
        self.text("_id")?.ok_or_else(|| Self::bad("`_id` is required".into()))
    }

    /// An optional count, given as a number or as the query string would give it.
    fn count(&self, name: &str) -> Result<Option<String>, CallError> {
        match self.0.get(name) {
            Some(Json::Number(number)) => Ok(Some(number.to_string())),
            _ => self
                .text(name)
                .map_err(|_| Self::bad(format!("`{name}` must be a number"))),
        }
    }

    /// The required `properties`: the body of a REST write.
    fn properties(&self) -> Result<Json, CallError> {
        match self.0.get("properties") {
            Some(properties @ (Json::Array(_) | Json::Object(_))) => Ok(properties.clone()),
            _ => Err(Self::bad("`properties` is required: an array of value objects".into())),
        }
    }
}

/// The schema of one value object to write.
fn value_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "type": {"type": "string", "description": "The property name, e.g. `title`, `_type`, `_parent`, `_viewer`"},
            "_id": {"type": "string", "description": "Overwrite this value (a value `_id` from get_entity); omit to add a value"},
            "string": {"type": "string"},
            "number": {"type": "number"},
            "boolean": {"type": "boolean"},
            "date": {"type": "string", "description": "YYYY-MM-DD"},
            "datetime": {"type": "string", "description": "ISO 8601"},
            "reference": {"type": "string", "description": "An entity `_id`"},
            "filename": {"type": "string"},
            "filesize": {"type": "integer", "description": "Bytes"},
            "filetype": {"type": "string", "description": "MIME type"},
            "language": {"type": "string", "description": "Two lowercase letters, for multilingual properties"},
            "counter": {"description": "`true` (or a step number) in place of a value: the next number of the property's sequence"},
        },
        "required": ["type"],
    })
}

fn id_schema(description: &str) -> Json {
    json!({"type": "string", "description": description, "pattern": "^[0-9a-f]{24}$"})
}

/// `tools/list`: every tool with its description and input schema.
pub fn catalogue() -> Json {
    let entity_id = id_schema("The entity's `_id`");
    let value_id = id_schema("The value's `_id` (inside a property's value object, not the entity's `_id`)");
    let values = json!({"type": "array", "items": value_schema(), "minItems": 1});
    let tools = [
        (
            "get_entity_type",
            "Entity types and their property definitions",
            "The database's entity types, each with the property definitions entities of that type use (name, value `type`, `multilingual`, `list`, `mandatory`, ...), as `{\"types\":[{\"entity\":TYPE,\"properties\":[DEFINITION]}],\"count\":N}`. Give `name` for one type. Call this first: a type's `_id` is what `_type` references.",
            json!({"type": "object", "properties": {"name": {"type": "string", "description": "A type's name, e.g. `book`"}}}),
            true,
        ),
        (
            "search_entities",
            "Search entities",
            "Lists the entities you may see that match a query: the query string of `GET /api/{db}/entity`, e.g. `_type.string=book&q=dune&props=title,author&sort=title.string&limit=20`. Answers `{\"entities\":[...],\"count\":N,\"limit\":L,\"skip\":S}`, `count` counting every match. See the server instructions for filters, `q`, `sort`, `props`, `group`.",
            json!({"type": "object", "properties": {"query": {"type": "string", "description": "A URL query string without `?`"}}, "required": ["query"]}),
            true,
        ),
        (
            "get_entity",
            "Read an entity",
            "One entity with every property you may see: `{\"entity\":{\"_id\":ID,PROPERTY:[VALUE,...],...}}`.",
            json!({"type": "object", "properties": {"_id": entity_id}, "required": ["_id"]}),
            true,
        ),
        (
            "get_file_url",
            "A file's download URL",
            "A file value by its value `_id` (from a file property of `get_entity`): the value with `filename`, `filesize`, `filetype` and `url`, a download URL valid 60 seconds.",
            json!({"type": "object", "properties": {"_id": value_id}, "required": ["_id"]}),
            true,
        ),
        (
            "get_entity_history",
            "An entity's changes",
            "Every value added or removed on an entity, newest first: `{\"changes\":[{\"type\",\"at\",\"by\",\"old\"?,\"new\"?}],\"count\":N}`. Needs `_viewer` or higher on the entity.",
            json!({"type": "object", "properties": {
                "_id": entity_id,
                "limit": {"type": "integer", "description": "Most changes to return; default 100, at most 1000"},
                "skip": {"type": "integer", "description": "Changes to skip; default 0"},
            }, "required": ["_id"]}),
            true,
        ),
        (
            "create_entity",
            "Create an entity",
            "Creates an entity of the given values, which must include `_type` (a reference to the type's `_id`); with `_parent` you need `_expander` on that parent. Answers `{\"_id\":NEW_ID,\"properties\":[...]}`.",
            json!({"type": "object", "properties": {"properties": values}, "required": ["properties"]}),
            false,
        ),
        (
            "add_properties",
            "Add or overwrite values",
            "Adds values to an entity (editors and up); a value with `_id` overwrites that value. Answers `{\"_id\":ID,\"properties\":[...]}` with the values written.",
            json!({"type": "object", "properties": {"_id": entity_id, "properties": values}, "required": ["_id", "properties"]}),
            false,
        ),
        (
            "delete_property",
            "Delete one value",
            "Deletes one value by its value `_id` (editors and up; owners for rights and `_parent`). Answers `{\"deleted\":true}`.",
            json!({"type": "object", "properties": {"_id": value_id}, "required": ["_id"]}),
            false,
        ),
    ];
    let tools: Vec<Json> = tools
        .into_iter()
        .map(|(name, title, description, input_schema, read_only)| {
            json!({
                "name": name,
                "title": title,
                "description": description,
                "inputSchema": input_schema,
                "annotations": {
                    "title": title,
                    "readOnlyHint": read_only,
                    "destructiveHint": name == "delete_property" || name == "add_properties",
                    "openWorldHint": false,
                },
            })
        })
        .collect();
    json!({ "tools": tools })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_tool_parses_and_no_other() {
        let catalogue = catalogue();
        let names: Vec<&str> = catalogue["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 8);
        let args = json!({"_id": "6571f3a4c2b9e8d7f6a5b4c3", "query": "q=x", "properties": [{"type": "a"}]});
        for name in names {
            assert!(ToolCall::parse(name, &args).is_ok(), "{name}");
        }
        assert_eq!(
            ToolCall::parse("drop_database", &args),
            Err(CallError::UnknownTool("drop_database".into()))
        );
    }

    #[test]
    fn arguments_are_read_as_the_rest_route_would_take_them() {
        let history = ToolCall::parse("get_entity_history", &json!({"_id": "a", "limit": 5, "skip": "2"}));
        assert_eq!(
            history,
            Ok(ToolCall::GetEntityHistory {
                id: "a".into(),
                limit: Some("5".into()),
                skip: Some("2".into())
            })
        );
        let search = ToolCall::parse("search_entities", &json!({"query": "?q=dune"}));
        assert_eq!(search, Ok(ToolCall::SearchEntities { query: "q=dune".into() }));
        assert!(matches!(
            ToolCall::parse("get_entity", &json!({})),
            Err(CallError::BadArguments(_))
        ));
        assert!(matches!(
            ToolCall::parse("create_entity", &json!({"properties": "x"})),
            Err(CallError::BadArguments(_))
        ));
    }
}
