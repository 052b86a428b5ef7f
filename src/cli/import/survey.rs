//! The first reading of an export: every line checked before anything is
//! written, and the lines of its entity types and property definitions found.

use std::collections::{HashMap, HashSet};

use serde_json::Value as Json;

use crate::cli::lines::{EntityLine, FORMAT, Header, VERSION};
use crate::cli::{Failure, progress};
use crate::model::ids::is_valid_id;
use crate::model::{ENTITY_TYPE, PROPERTY_TYPE};

/// What an import wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    pub entities: u64,
    pub values: u64,
}

/// Reads and checks the header line.
pub(super) fn read_header(line: Option<std::io::Result<String>>) -> Result<Header, Failure> {
    let line = line
        .ok_or_else(|| Failure("the file is empty; an export starts with its header line".to_owned()))?
        .map_err(|e| Failure(format!("line 1: {e}")))?;
    // Format and version first: a newer version may add header fields.
    let loose: Json = serde_json::from_str(&line).map_err(|e| Failure(format!("line 1: {e}")))?;
    if loose["format"] != FORMAT {
        return Err(Failure(format!(
            "line 1: not an eds export (the header's format is not {FORMAT:?})"
        )));
    }
    if loose["version"] != VERSION {
        return Err(Failure(format!(
            "line 1: export format version {} is not supported (this eds reads version {VERSION})",
            loose["version"]
        )));
    }
    serde_json::from_value(loose).map_err(|e| Failure(format!("line 1: {e}")))
}

/// Ids read so far, to refuse a repeated id with its line number.
#[derive(Default)]
struct Seen {
    entities: HashSet<[u8; 12]>,
    values: HashSet<[u8; 12]>,
}

/// The 12 bytes of a well-formed id, or why it is not one.
fn id_bytes(id: &str, what: &str) -> Result<[u8; 12], String> {
    let mut bytes = [0u8; 12];
    if !is_valid_id(id) || hex::decode_to_slice(id, &mut bytes).is_err() {
        return Err(format!("{what} _id {id:?} is not 24 lowercase hex characters"));
    }
    Ok(bytes)
}

impl Seen {
    /// Checks one entity line: well-formed ids, none seen before, every value typed.
    fn check(&mut self, line: &EntityLine) -> Result<(), String> {
        if !self.entities.insert(id_bytes(&line.id, "entity")?) {
            return Err(format!("entity {} appears twice", line.id));
        }
        for value in &line.values {
            if !self.values.insert(id_bytes(&value.id, "value")?) {
                return Err(format!("value {} appears twice", value.id));
            }
            if value.prop.is_empty() {
                return Err(format!("value {} has an empty type", value.id));
            }
        }
        Ok(())
    }
}

/// What the first reading learned: which entity lines hold entity types and
/// property definitions, and how much there is.
pub(super) struct Survey {
    /// Indexes of the entity lines (0 for the line after the header) of live
    /// entities whose live `_type` is an entity named `entity` or `property`.
    pub(super) meta: HashSet<usize>,
    pub(super) read: Imported,
}

/// Reads every entity line once, checking it, and finds the types and
/// definitions: an entity's projection needs theirs, wherever they stand in
/// the file.
pub(super) fn survey(lines: impl Iterator<Item = std::io::Result<String>>, header: &Header) -> Result<Survey, Failure> {
    let mut seen = Seen::default();
    // each live entity's type, as an index into `type_ids`
    let mut type_of: Vec<Option<usize>> = Vec::new();
    let mut type_ids: Vec<String> = Vec::new();
    let mut type_index: HashMap<String, usize> = HashMap::new();
    let mut meta_names: HashSet<String> = HashSet::new();
    let bar = progress(header.entities, "checking");
    for (index, line) in lines.enumerate() {
        let line = parse_line(index, line)?;
        seen.check(&line).map_err(|e| at_line(index, &e))?;
        let live = |prop: &'static str| {
            line.values
                .iter()
                .filter(move |value| value.deleted.is_none() && value.prop == prop)
        };
        let type_id = live("_type").find_map(|value| value.reference.as_ref());
        let type_slot = type_id.filter(|_| line.deleted.is_none()).map(|type_id| {
            *type_index.entry(type_id.clone()).or_insert_with(|| {
                type_ids.push(type_id.clone());
                type_ids.len() - 1
            })
        });
        type_of.push(type_slot);
        if live("name").any(|value| matches!(value.string.as_deref(), Some(ENTITY_TYPE | PROPERTY_TYPE))) {
            meta_names.insert(line.id);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let read = Imported {
        entities: seen.entities.len() as u64,
        values: seen.values.len() as u64,
    };
    if (read.entities, read.values) != (header.entities, header.values) {
        return Err(Failure(format!(
            "the file holds {} entities and {} values but its header announces {} and {}: \
             it is truncated or altered",
            read.entities, read.values, header.entities, header.values
        )));
    }
    let meta = type_of
        .iter()
        .enumerate()
        .filter(|(_, slot)| slot.is_some_and(|slot| meta_names.contains(&type_ids[slot])))
        .map(|(index, _)| index)
        .collect();
    Ok(Survey { meta, read })
}

/// An error at entity line `index` (the file's line `index + 2`).
fn at_line(index: usize, error: &dyn std::fmt::Display) -> Failure {
    Failure(format!("line {}: {error}", index + 2))
}

pub(super) fn parse_line(index: usize, line: std::io::Result<String>) -> Result<EntityLine, Failure> {
    let line = line.map_err(|e| at_line(index, &e))?;
    serde_json::from_str(&line).map_err(|e| at_line(index, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_line(format: &str, version: u64) -> String {
        serde_json::json!({
            "format": format, "version": version, "database": "demo",
            "exported_at": "2026-11-22T01:00:00Z", "entities": 0, "values": 0,
        })
        .to_string()
    }

    #[test]
    fn a_header_of_another_format_or_version_is_refused() {
        assert!(read_header(Some(Ok(header_line(FORMAT, VERSION)))).is_ok());
        let other = read_header(Some(Ok(header_line("csv", VERSION)))).unwrap_err();
        assert!(other.0.contains("not an eds export"), "{other}");
        let newer = read_header(Some(Ok(header_line(FORMAT, VERSION + 1)))).unwrap_err();
        assert!(newer.0.contains("version 2 is not supported"), "{newer}");
        assert!(read_header(None).unwrap_err().0.contains("empty"));
    }

    #[test]
    fn a_malformed_id_is_refused() {
        let upper =
            r#"{"_id":"6740E1A0A1B2C3D4E5000001","created":{"at":"2026-11-22T01:02:03Z","by":null},"values":[]}"#;
        let line: EntityLine = serde_json::from_str(upper).unwrap();
        let error = Seen::default().check(&line).unwrap_err();
        assert!(error.contains("24 lowercase hex"), "{error}");
    }

    #[test]
    fn a_repeated_value_id_is_refused() {
        let line = r#"{"_id":"6740e1a0a1b2c3d4e5000001","created":{"at":"2026-11-22T01:02:03Z","by":null},"values":[{"_id":"6740e1a0a1b2c3d4e5000002","type":"a","string":"x","created":{"at":"2026-11-22T01:02:03Z","by":null}},{"_id":"6740e1a0a1b2c3d4e5000002","type":"a","string":"y","created":{"at":"2026-11-22T01:02:03Z","by":null}}]}"#;
        let line: EntityLine = serde_json::from_str(line).unwrap();
        let error = Seen::default().check(&line).unwrap_err();
        assert!(error.contains("appears twice"), "{error}");
    }
}
