//! Which of a batch of changes each subscriber is told of, and how.
//!
//! A change is tested against the entity as it is when the batch is read
//! (for a change just committed: as the change left it), with the list
//! query's own SQL, rights included, in one statement per distinct (caller,
//! query) among the subscribers. A deletion is tested against the entity as
//! it was deleted (its row keeps its rights and views). Each stream keeps
//! the entities it has reported as matching (and, for a filtered stream,
//! those matching when it opened), at most [`REPORTED`]: `leave` goes to
//! those no longer matching, and a filtered stream is told of a deletion
//! only for them (past the bound, of every readable deletion).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use chrono::SecondsFormat;
use diesel_async::AsyncPgConnection;
use serde_json::json;
use tokio::sync::mpsc;

use crate::db::changes::{self, ChangeRow};
use crate::db::values::EntityRow;
use crate::error::ApiError;
use crate::query::ListQuery;
use crate::query::sql::matching;

/// Entities a stream remembers having reported as matching.
pub(super) const REPORTED: usize = 10_000;

/// One open stream, as its database's reader sees it.
pub(super) struct Subscriber {
    pub(super) person: Option<String>,
    pub(super) query: Arc<ListQuery>,
    /// The query string it was parsed from: subscribers with the same caller
    /// and query share one statement per batch.
    pub(super) query_text: String,
    /// The last change this stream has been handed (or skipped).
    pub(super) cursor: i64,
    pub(super) reported: HashSet<String>,
    /// Whether `reported` reached its bound and left some out.
    pub(super) overflowed: bool,
    pub(super) events: mpsc::Sender<Bytes>,
}

impl Subscriber {
    fn filtered(&self) -> bool {
        !self.query.filters.is_empty() || !self.query.words.is_empty()
    }

    fn remember(&mut self, id: &str) {
        if self.reported.len() < REPORTED {
            self.reported.insert(id.to_owned());
        } else if !self.reported.contains(id) {
            self.overflowed = true;
        }
    }
}

/// The events of `rows` (changes of database `db` in id order) for each
/// subscriber, in the subscribers' order.
pub(super) async fn select(
    conn: &mut AsyncPgConnection,
    db: &str,
    rows: &[ChangeRow],
    subscribers: &mut [Subscriber],
) -> Result<Vec<Vec<Bytes>>, ApiError> {
    let deleted_ids: Vec<String> = rows
        .iter()
        .filter(|row| row.action == "delete")
        .map(|row| row.entity_id.clone())
        .collect();
    let deleted: HashMap<String, EntityRow> = if deleted_ids.is_empty() {
        HashMap::new()
    } else {
        changes::entities_any(conn, db, &deleted_ids)
            .await?
            .into_iter()
            .map(|row| (row.id.clone(), row))
            .collect()
    };
    let mut matched: HashMap<(Option<String>, String), HashMap<String, EntityRow>> = HashMap::new();
    for subscriber in subscribers.iter() {
        let key = (subscriber.person.clone(), subscriber.query_text.clone());
        if matched.contains_key(&key) {
            continue;
        }
        let cursor = subscribers
            .iter()
            .filter(|other| other.person == key.0 && other.query_text == key.1)
            .map(|other| other.cursor)
            .min()
            .unwrap_or_default();
        let mut ids: Vec<String> = rows
            .iter()
            .filter(|row| row.id > cursor && row.action != "delete")
            .map(|row| row.entity_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        let found = if ids.is_empty() {
            Vec::new()
        } else {
            let limit = ids.len() as i64;
            matching(
                conn,
                db,
                subscriber.person.as_deref(),
                &subscriber.query,
                Some(&ids),
                limit,
            )
            .await?
        };
        matched.insert(key, found.into_iter().map(|row| (row.id.clone(), row)).collect());
    }
    // a change's event for a match is the same for every stream of a
    // (caller, query): written once, shared
    let mut written: HashMap<(Option<String>, String), HashMap<i64, Bytes>> = HashMap::new();
    Ok(subscribers
        .iter_mut()
        .map(|subscriber| {
            let key = (subscriber.person.clone(), subscriber.query_text.clone());
            let matching = &matched[&key];
            let shared = written.entry(key).or_default();
            let mut events = Vec::new();
            let cursor = subscriber.cursor;
            for row in rows.iter().filter(|row| row.id > cursor) {
                if let Some(event) = event_for(subscriber, row, matching, &deleted, shared) {
                    events.push(event);
                }
            }
            events
        })
        .collect())
}

/// The event `subscriber` gets for `row`, if any.
fn event_for(
    subscriber: &mut Subscriber,
    row: &ChangeRow,
    matching: &HashMap<String, EntityRow>,
    deleted: &HashMap<String, EntityRow>,
    shared: &mut HashMap<i64, Bytes>,
) -> Option<Bytes> {
    let person = subscriber.person.as_deref();
    if row.action == "delete" {
        let entity = deleted.get(&row.entity_id)?;
        let was_reported = subscriber.reported.remove(&row.entity_id);
        let level = entity.visibility().view_level(person)?;
        if subscriber.filtered() && !was_reported && !subscriber.overflowed {
            return None;
        }
        let names = readable(entity, level, row, &subscriber.query);
        return Some(change_event(row, &row.action, names));
    }
    match matching.get(&row.entity_id) {
        Some(entity) => {
            let level = entity.visibility().view_level(person)?;
            subscriber.remember(&row.entity_id);
            let event = shared.entry(row.id).or_insert_with(|| {
                let names = readable(entity, level, row, &subscriber.query);
                change_event(row, &row.action, names)
            });
            Some(event.clone())
        }
        None if subscriber.reported.remove(&row.entity_id) => Some(change_event(row, "leave", Vec::new())),
        None => None,
    }
}

/// The properties of `row` that the caller's view of `entity` shows (and
/// that the query's `props` names, when it names some).
fn readable(entity: &EntityRow, level: crate::rights::ViewLevel, row: &ChangeRow, query: &ListQuery) -> Vec<String> {
    let visibility = entity.visibility();
    row.properties
        .iter()
        .filter(|prop| visibility.shows(level, prop))
        .filter(|prop| query.props.as_ref().is_none_or(|props| props.contains(prop)))
        .cloned()
        .collect()
}

/// The server-sent event of one change.
fn change_event(row: &ChangeRow, action: &str, properties: Vec<String>) -> Bytes {
    let data = json!({
        "_id": row.entity_id,
        "action": action,
        "at": row.at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "by": row.actor,
        "properties": properties,
    });
    Bytes::from(format!("id: {}\nevent: change\ndata: {data}\n\n", row.id))
}
