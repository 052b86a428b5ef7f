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
//! only for them (past the bound, of every readable deletion). An entity
//! whose rights followed its parent's is logged as an update naming no
//! property: it sends only `leave`s.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use chrono::SecondsFormat;
use diesel_async::AsyncPgConnection;
use serde_json::json;

use super::queue;
use super::reported::Reported;
use crate::db::changes::{self, ChangeRow};
use crate::db::values::EntityRow;
use crate::error::ApiError;
use crate::query::ListQuery;
use crate::query::sql::matching;

/// One open stream, as its database's reader sees it.
pub(super) struct Subscriber {
    pub(super) person: Option<String>,
    pub(super) query: Arc<ListQuery>,
    /// The query string it was parsed from: subscribers with the same caller
    /// and query share one statement per batch.
    pub(super) query_text: String,
    /// The last change this stream has been handed (or skipped).
    pub(super) cursor: i64,
    pub(super) reported: Reported,
    pub(super) events: queue::Sender,
}

impl Subscriber {
    fn filtered(&self) -> bool {
        !self.query.filters.is_empty() || !self.query.words.is_empty()
    }
}

/// The events of `rows` (changes of database `db` in id order) for each
/// subscriber, in the subscribers' order: one part of the stream's body
/// each (empty: none), so a batch costs a stream one write.
pub(super) async fn select(
    conn: &mut AsyncPgConnection,
    db: &str,
    rows: &[ChangeRow],
    subscribers: &mut [Subscriber],
) -> Result<Vec<Bytes>, ApiError> {
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
    // (caller, query): written once (or found unreadable once), shared; so
    // is the part of streams of one (caller, query, cursor) that got only
    // such events
    let mut written: HashMap<(Option<String>, String), HashMap<i64, Option<Bytes>>> = HashMap::new();
    let mut parts: HashMap<(Option<String>, String, i64), Bytes> = HashMap::new();
    Ok(subscribers
        .iter_mut()
        .map(|subscriber| {
            let key = (subscriber.person.clone(), subscriber.query_text.clone());
            let matching = &matched[&key];
            let shared = written.entry(key.clone()).or_default();
            let cursor = subscriber.cursor;
            let mut events = Vec::new();
            let mut own = false;
            for row in rows.iter().filter(|row| row.id > cursor) {
                if let Some(event) = event_for(subscriber, row, matching, &deleted, shared) {
                    own |= matches!(event, Event::Own(_));
                    events.push(event);
                }
            }
            if own {
                return joined(&events);
            }
            parts
                .entry((key.0, key.1, cursor))
                .or_insert_with(|| joined(&events))
                .clone()
        })
        .collect())
}

/// An event for one stream.
enum Event {
    /// The same for every stream of its (caller, query).
    Shared(Bytes),
    /// This stream's own (a `leave`, a deletion).
    Own(Bytes),
}

/// `events` as one part of a stream's body.
fn joined(events: &[Event]) -> Bytes {
    let mut part = BytesMut::new();
    for Event::Shared(event) | Event::Own(event) in events {
        part.extend_from_slice(event);
    }
    part.freeze()
}

/// The event `subscriber` gets for `row`, if any.
fn event_for(
    subscriber: &mut Subscriber,
    row: &ChangeRow,
    matching: &HashMap<String, EntityRow>,
    deleted: &HashMap<String, EntityRow>,
    shared: &mut HashMap<i64, Option<Bytes>>,
) -> Option<Event> {
    let person = subscriber.person.as_deref();
    if row.action == "delete" {
        let entity = deleted.get(&row.entity_id)?;
        let was_reported = subscriber.reported.forget(&row.entity_id);
        let level = entity.visibility().view_level(person)?;
        if subscriber.filtered() && !was_reported && !subscriber.reported.overflowed() {
            return None;
        }
        let names = readable(entity, level, row, &subscriber.query);
        return Some(Event::Own(change_event(row, &row.action, names)));
    }
    match matching.get(&row.entity_id) {
        // rights that followed a parent's changed no value: news only to
        // those who no longer see the entity
        Some(_) if follows_rights(row) => None,
        Some(entity) => {
            let event = shared
                .entry(row.id)
                .or_insert_with(|| {
                    let level = entity.visibility().view_level(person)?;
                    let names = readable(entity, level, row, &subscriber.query);
                    Some(change_event(row, &row.action, names))
                })
                .clone()?;
            subscriber.reported.remember(&row.entity_id);
            Some(Event::Shared(event))
        }
        None if subscriber.reported.forget(&row.entity_id) => Some(Event::Own(change_event(row, "leave", Vec::new()))),
        None => None,
    }
}

/// Whether `row` logs only that the entity's rights followed its parent's:
/// every other update names a property.
fn follows_rights(row: &ChangeRow) -> bool {
    row.action == "update" && row.properties.is_empty()
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
