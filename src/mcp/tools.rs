//! The calls the tools' arguments make (the catalogue is in `catalogue`).
//! Each tool answers what one REST route (or, for `get_entity_type`, two list
//! queries) answers the same caller.

use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};

use crate::service::{IdempotencyKey, is_valid_idempotency_key};

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
    CreateEntity {
        properties: Json,
        retry: Option<IdempotencyKey>,
    },
    /// `POST /api/{db}/entity/{id}` with `properties` as the body.
    AddProperties {
        id: String,
        properties: Json,
        retry: Option<IdempotencyKey>,
    },
    /// `DELETE /api/{db}/property/{id}`.
    DeleteProperty { id: String, retry: Option<IdempotencyKey> },
    /// `POST /api/{db}/entity/{id}/restore` with `at`.
    RestoreEntity {
        id: String,
        at: Option<String>,
        retry: Option<IdempotencyKey>,
    },
    /// `POST /api/{db}/batch` with `{"operations","dry_run"?}` as the body.
    Batch { body: Json, retry: Option<IdempotencyKey> },
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
                retry: args.retry(name)?,
            },
            "add_properties" => ToolCall::AddProperties {
                id: args.id()?,
                properties: args.properties()?,
                retry: args.retry(name)?,
            },
            "delete_property" => ToolCall::DeleteProperty {
                id: args.id()?,
                retry: args.retry(name)?,
            },
            "restore_entity" => ToolCall::RestoreEntity {
                id: args.id()?,
                at: args.text("at")?,
                retry: args.retry(name)?,
            },
            "batch" => ToolCall::Batch {
                body: args.batch_body()?,
                retry: args.retry(name)?,
            },
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

    /// The body of a batch: the required `operations` and an optional `dry_run`.
    fn batch_body(&self) -> Result<Json, CallError> {
        let mut body = Map::new();
        match self.0.get("operations") {
            Some(operations @ Json::Array(_)) => body.insert("operations".into(), operations.clone()),
            _ => return Err(Self::bad("`operations` is required: an array of operations".into())),
        };
        match self.0.get("dry_run") {
            None | Some(Json::Null) => {}
            Some(dry_run @ Json::Bool(_)) => {
                body.insert("dry_run".into(), dry_run.clone());
            }
            Some(_) => return Err(Self::bad("`dry_run` must be a boolean".into())),
        }
        Ok(Json::Object(body))
    }

    /// The optional `idempotency_key` of write tool `tool`, as REST's
    /// `Idempotency-Key`: its fingerprint covers the tool and every other
    /// argument, so a repeat must bring the same ones (in any key order).
    fn retry(&self, tool: &str) -> Result<Option<IdempotencyKey>, CallError> {
        let Some(key) = self.text("idempotency_key")? else {
            return Ok(None);
        };
        if !is_valid_idempotency_key(&key) {
            return Err(Self::bad(
                "`idempotency_key` must be 1 to 255 visible ASCII characters".into(),
            ));
        }
        let mut others = self.0.clone();
        others.remove("idempotency_key");
        let mut digest = Sha256::new();
        digest.update(format!("tools/call {tool}\n").as_bytes());
        digest.update(canonical(&Json::Object(others)).to_string().as_bytes());
        Ok(Some(IdempotencyKey {
            key,
            fingerprint: hex::encode(digest.finalize()),
        }))
    }
}

/// `json` with every object's keys sorted: the same arguments sent in
/// another order are the same call.
fn canonical(json: &Json) -> Json {
    match json {
        Json::Object(object) => {
            let mut entries: Vec<(&String, &Json)> = object.iter().collect();
            entries.sort_by_key(|(key, _)| *key);
            Json::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key.clone(), canonical(value)))
                    .collect(),
            )
        }
        Json::Array(items) => Json::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::catalogue::catalogue;
    use serde_json::json;

    #[test]
    fn every_listed_tool_parses_and_no_other() {
        let catalogue = catalogue();
        let names: Vec<&str> = catalogue["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 10);
        let args =
            json!({"_id": "6571f3a4c2b9e8d7f6a5b4c3", "query": "q=x", "properties": [{"type": "a"}], "operations": []});
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

    #[test]
    fn an_idempotency_key_fingerprints_the_tool_and_its_other_arguments() {
        let retry = |name: &str, arguments: Json| match ToolCall::parse(name, &arguments) {
            Ok(
                ToolCall::CreateEntity { retry, .. }
                | ToolCall::AddProperties { retry, .. }
                | ToolCall::DeleteProperty { retry, .. },
            ) => retry,
            other => panic!("{other:?}"),
        };
        let values = json!([{"type": "title", "string": "Emma"}]);
        let first = retry("create_entity", json!({"properties": values, "idempotency_key": "k1"})).unwrap();
        assert_eq!(first.key, "k1");
        let again = retry("create_entity", json!({"idempotency_key": "k1", "properties": values})).unwrap();
        assert_eq!(first, again, "the key's place among the arguments does not count");
        let id = "6571f3a4c2b9e8d7f6a5b4c3";
        let reordered = [
            json!({"_id": id, "properties": [{"type": "title", "string": "Emma"}], "idempotency_key": "k1"}),
            json!({"properties": [{"string": "Emma", "type": "title"}], "_id": id, "idempotency_key": "k1"}),
        ]
        .map(|arguments| retry("add_properties", arguments).unwrap());
        assert_eq!(reordered[0], reordered[1], "nor the order of any object's keys");
        let other = retry("create_entity", json!({"properties": [], "idempotency_key": "k1"})).unwrap();
        assert_ne!(first.fingerprint, other.fingerprint);
        let added = retry(
            "add_properties",
            json!({"_id": id, "properties": values, "idempotency_key": "k1"}),
        );
        assert_ne!(added.unwrap().fingerprint, first.fingerprint);
        assert_eq!(retry("delete_property", json!({"_id": id})), None);
        for bad in [json!(""), json!("with space"), json!("k".repeat(256)), json!(7)] {
            let arguments = json!({"_id": id, "idempotency_key": bad});
            assert!(matches!(
                ToolCall::parse("delete_property", &arguments),
                Err(CallError::BadArguments(_))
            ));
        }
    }

    #[test]
    fn every_tool_has_hints_an_output_schema_and_a_2020_12_input_schema() {
        let catalogue = catalogue();
        for tool in catalogue["tools"].as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            let hints = &tool["annotations"];
            assert_eq!(hints["title"], tool["title"], "{name}");
            assert_eq!(hints["openWorldHint"], false, "{name}");
            let read_only = hints["readOnlyHint"].as_bool().unwrap();
            assert_eq!(
                read_only,
                name.starts_with("get_") || name == "search_entities",
                "{name}"
            );
            let destructive = hints["destructiveHint"].as_bool().unwrap();
            assert_eq!(
                destructive,
                matches!(name, "add_properties" | "delete_property" | "restore_entity" | "batch"),
                "{name}"
            );
            let idempotent = hints["idempotentHint"].as_bool().unwrap();
            assert_eq!(idempotent, read_only || name == "delete_property", "{name}");
            let input = &tool["inputSchema"];
            assert_eq!(
                input["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{name}"
            );
            assert_eq!(input["type"], "object", "{name}");
            assert_eq!(
                input["properties"].get("idempotency_key").is_some(),
                !read_only,
                "{name}"
            );
            let output = &tool["outputSchema"];
            assert_eq!(output["type"], "object", "{name}");
            assert!(output.get("$schema").is_none(), "{name}");
            assert!(!output["required"].as_array().unwrap().is_empty(), "{name}");
        }
    }
}
