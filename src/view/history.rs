//! An entity's history: every value added and deleted, as changes.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value as Json};

use crate::model::json::format_datetime;
use crate::model::stored::ValueRow;

/// The changes of an entity, newest first. Values of one property added and
/// deleted at the same moment by the same author form one change (an
/// overwrite carries both `old` and `new`); credentials show their hidden form.
pub fn changes(rows: &[ValueRow]) -> Vec<Json> {
    type Key<'a> = (DateTime<Utc>, &'a str, Option<&'a str>);
    let mut added: BTreeMap<Key, Vec<&ValueRow>> = BTreeMap::new();
    let mut deleted: BTreeMap<Key, Vec<&ValueRow>> = BTreeMap::new();
    for row in rows {
        added
            .entry((row.created_at, &row.prop, row.created_by.as_deref()))
            .or_default()
            .push(row);
        if let Some(at) = row.deleted_at {
            deleted
                .entry((at, &row.prop, row.deleted_by.as_deref()))
                .or_default()
                .push(row);
        }
    }
    let mut keys: Vec<Key> = added.keys().chain(deleted.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    let mut changes = Vec::new();
    for key in keys.into_iter().rev() {
        let new = added.get(&key).map(Vec::as_slice).unwrap_or_default();
        let old = deleted.get(&key).map(Vec::as_slice).unwrap_or_default();
        for index in 0..new.len().max(old.len()) {
            let mut change = Map::new();
            change.insert("type".into(), Json::String(key.1.to_owned()));
            change.insert("at".into(), Json::String(format_datetime(key.0)));
            change.insert("by".into(), key.2.map_or(Json::Null, |by| Json::String(by.to_owned())));
            if let Some(row) = old.get(index) {
                change.insert("old".into(), Json::Object(row.stored_json()));
            }
            if let Some(row) = new.get(index) {
                change.insert("new".into(), Json::Object(row.stored_json()));
            }
            changes.push(Json::Object(change));
        }
    }
    changes
}
