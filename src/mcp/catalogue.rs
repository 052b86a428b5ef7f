//! `tools/list`: each tool's name, title, description, behaviour hints, and
//! the JSON Schemas (2020-12) of its arguments and of its answer.

use serde_json::{Value as Json, json};

/// The dialect named in every input schema. Output schemas leave `$schema`
/// out: without it 2020-12 is the dialect anyway (MCP 2025-11-25), and older
/// TypeScript SDK clients compile output schemas with a draft-07 validator
/// that gives up on a schema naming another dialect, then checks nothing.
pub const JSON_SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// What a tool does to the database, for the `annotations` a client shows.
#[derive(Clone, Copy)]
enum Effect {
    Reads,
    /// Writes something new each time it is called.
    Adds,
    /// May overwrite values already there.
    Overwrites,
    /// Deletes; a repeat deletes nothing more.
    Deletes,
}

struct Tool {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    input: Json,
    output: Json,
    effect: Effect,
}

impl Tool {
    fn listed(self) -> Json {
        let mut input = self.input;
        input["$schema"] = json!(JSON_SCHEMA_DIALECT);
        if !matches!(self.effect, Effect::Reads) {
            input["properties"]["idempotency_key"] = idempotency_key_schema();
        }
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": input,
            "outputSchema": self.output,
            "annotations": {
                "title": self.title,
                "readOnlyHint": matches!(self.effect, Effect::Reads),
                "destructiveHint": matches!(self.effect, Effect::Overwrites | Effect::Deletes),
                "idempotentHint": matches!(self.effect, Effect::Reads | Effect::Deletes),
                "openWorldHint": false,
            },
        })
    }
}

fn idempotency_key_schema() -> Json {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
        "pattern": "^[!-~]+$",
        "description": "Makes the call safe to repeat, as the REST `Idempotency-Key` header: a repeat with the same key and arguments within 24 hours answers the first answer and writes nothing; the same key with other arguments is refused",
    })
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

fn objects() -> Json {
    json!({"type": "array", "items": {"type": "object"}})
}

/// An answer object with `properties`, all of them `required`.
fn answer(properties: Json) -> Json {
    let required: Vec<&String> = properties
        .as_object()
        .map(|object| object.keys().collect())
        .unwrap_or_default();
    json!({"type": "object", "properties": properties, "required": required})
}

/// What the writes of values answer: the entity and the values written.
fn written() -> Json {
    answer(json!({"_id": {"type": "string"}, "properties": objects()}))
}

/// `tools/list`: every tool.
pub fn catalogue() -> Json {
    let entity_id = id_schema("The entity's `_id`");
    let value_id = id_schema("The value's `_id` (inside a property's value object, not the entity's `_id`)");
    let values = json!({"type": "array", "items": value_schema(), "minItems": 1});
    let tools = [
        Tool {
            name: "get_entity_type",
            title: "Entity types and their property definitions",
            description: "The database's entity types, each with the property definitions entities of that type use (name, value `type`, `multilingual`, `list`, `mandatory`, ...), as `{\"types\":[{\"entity\":TYPE,\"properties\":[DEFINITION]}],\"count\":N}`. Give `name` for one type. Call this first: a type's `_id` is what `_type` references.",
            input: json!({"type": "object", "properties": {"name": {"type": "string", "description": "A type's name, e.g. `book`"}}}),
            output: answer(json!({
                "types": {"type": "array", "items": answer(json!({"entity": {"type": "object"}, "properties": objects()}))},
                "count": {"type": "integer"},
            })),
            effect: Effect::Reads,
        },
        Tool {
            name: "search_entities",
            title: "Search entities",
            description: "Lists the entities you may see that match a query: the query string of `GET /api/{db}/entity`, e.g. `_type.string=book&q=dune&props=title,author&sort=title.string&limit=20`. Answers `{\"entities\":[...],\"count\":N,\"limit\":L,\"skip\":S}`, `count` counting every match. See the server instructions for filters, `q`, `sort`, `props`, `group`.",
            input: json!({"type": "object", "properties": {"query": {"type": "string", "description": "A URL query string without `?`"}}, "required": ["query"]}),
            output: json!({
                "type": "object",
                "properties": {"entities": objects(), "count": {"type": "integer"}, "limit": {"type": "integer"}, "skip": {"type": "integer"}},
                "required": ["entities", "count"],
            }),
            effect: Effect::Reads,
        },
        Tool {
            name: "get_entity",
            title: "Read an entity",
            description: "One entity with every property you may see: `{\"entity\":{\"_id\":ID,PROPERTY:[VALUE,...],...}}`.",
            input: json!({"type": "object", "properties": {"_id": entity_id}, "required": ["_id"]}),
            output: answer(json!({"entity": answer(json!({"_id": {"type": "string"}}))})),
            effect: Effect::Reads,
        },
        Tool {
            name: "get_file_url",
            title: "A file's download URL",
            description: "A file value by its value `_id` (from a file property of `get_entity`): the value with `filename`, `filesize`, `filetype` and `url`, a download URL valid 60 seconds.",
            input: json!({"type": "object", "properties": {"_id": value_id}, "required": ["_id"]}),
            output: json!({
                "type": "object",
                "properties": {
                    "_id": {"type": "string"},
                    "filename": {"type": "string"},
                    "filesize": {"type": "integer"},
                    "filetype": {"type": "string"},
                    "url": {"type": "string"},
                },
                "required": ["_id"],
            }),
            effect: Effect::Reads,
        },
        Tool {
            name: "get_entity_history",
            title: "An entity's changes",
            description: "Every value added or removed on an entity, newest first: `{\"changes\":[{\"type\",\"at\",\"by\",\"old\"?,\"new\"?}],\"count\":N}`. Needs `_viewer` or higher on the entity.",
            input: json!({"type": "object", "properties": {
                "_id": entity_id,
                "limit": {"type": "integer", "description": "Most changes to return; default 100, at most 1000"},
                "skip": {"type": "integer", "description": "Changes to skip; default 0"},
            }, "required": ["_id"]}),
            output: answer(json!({"changes": objects(), "count": {"type": "integer"}})),
            effect: Effect::Reads,
        },
        Tool {
            name: "create_entity",
            title: "Create an entity",
            description: "Creates an entity of the given values, which must include `_type` (a reference to the type's `_id`); with `_parent` you need `_expander` on that parent. Answers `{\"_id\":NEW_ID,\"properties\":[...]}`.",
            input: json!({"type": "object", "properties": {"properties": values}, "required": ["properties"]}),
            output: written(),
            effect: Effect::Adds,
        },
        Tool {
            name: "add_properties",
            title: "Add or overwrite values",
            description: "Adds values to an entity (editors and up); a value with `_id` overwrites that value. Answers `{\"_id\":ID,\"properties\":[...]}` with the values written.",
            input: json!({"type": "object", "properties": {"_id": entity_id, "properties": values}, "required": ["_id", "properties"]}),
            output: written(),
            effect: Effect::Overwrites,
        },
        Tool {
            name: "delete_property",
            title: "Delete one value",
            description: "Deletes one value by its value `_id` (editors and up; owners for rights and `_parent`). Answers `{\"deleted\":true}`.",
            input: json!({"type": "object", "properties": {"_id": value_id}, "required": ["_id"]}),
            output: answer(json!({"deleted": {"type": "boolean"}})),
            effect: Effect::Deletes,
        },
        Tool {
            name: "restore_entity",
            title: "Restore an entity from its history",
            description: "Makes an entity's values those live at `at` (RFC 3339): values live then are written again with new `_id`s, values added since are deleted, the history keeps both. Without `at`, undeletes a deleted entity as it was just before its deletion. API keys, logins, a webhook's `secret`, `billing_*` and `_created` are never touched. Editors and up; owners for a deleted entity or a change of rights, `_parent`, `_sharing` or `_inheritrights`. Answers `{\"_id\":ID,\"properties\":[...]}` with the values written again.",
            input: json!({"type": "object", "properties": {
                "_id": entity_id,
                "at": {"type": "string", "format": "date-time", "description": "The moment to restore, e.g. `2026-11-20T09:30:00Z`; omit to undelete a deleted entity"},
            }, "required": ["_id"]}),
            output: written(),
            effect: Effect::Overwrites,
        },
        batch_tool(values),
    ];
    json!({"tools": tools.into_iter().map(Tool::listed).collect::<Vec<_>>()})
}

/// `batch`: `POST /api/{db}/batch`.
fn batch_tool(values: Json) -> Tool {
    let entity = json!({"type": "string", "description": "An entity `_id`, or the `ref` of an earlier create"});
    let operation = json!({
        "type": "object",
        "properties": {
            "op": {"enum": ["create", "add", "delete_property", "delete_entity"]},
            "ref": {"type": "string", "pattern": "^\\$[A-Za-z0-9_]{1,64}$", "description": "create: a name (`$author`) later operations use for the new entity's `_id`, in `entity` and in `reference` values"},
            "entity": entity,
            "property": id_schema("delete_property: the value's `_id`"),
            "properties": values,
        },
        "required": ["op"],
    });
    Tool {
        name: "batch",
        title: "Several writes, all or nothing",
        description: "Applies operations in order in one transaction: `{\"op\":\"create\",\"ref\"?:\"$name\",\"properties\":[...]}`, `{\"op\":\"add\",\"entity\":ID|\"$name\",\"properties\":[...]}`, `{\"op\":\"delete_property\",\"property\":VALUE_ID}`, `{\"op\":\"delete_entity\",\"entity\":ID|\"$name\"}`. Each follows the rules of its single tool, judged on the state the earlier operations left. If one fails, nothing is written and the error names its `operation` (from 0). `dry_run: true` checks everything and keeps nothing. Answers `{\"results\":[one per operation],\"refs\":{\"$name\":ID}}`.",
        input: json!({"type": "object", "properties": {
            "operations": {"type": "array", "items": operation, "minItems": 1},
            "dry_run": {"type": "boolean", "description": "Check everything and answer what would be written, keeping nothing"},
        }, "required": ["operations"]}),
        output: json!({
            "type": "object",
            "properties": {"results": objects(), "refs": {"type": "object"}, "dry_run": {"type": "boolean"}},
            "required": ["results", "refs"],
        }),
        effect: Effect::Overwrites,
    }
}
