//! Which of a batch of changes each subscriber is told of, and how.
//!
//! A change is tested against the entity as it is when the batch is read
//! (for a change just committed: as the change left it): for a filtered
//! stream with the list query's own SQL, rights included, in one statement
//! per distinct (caller, query) among the streams; for the others, which
//! match every entity their caller may read, the batch's live entities are
//! read once and each caller's rights applied to them here. A deletion is
//! tested against the entity as it was deleted (its row keeps its rights
//! and views). The streams of one
//! caller and query at one place in the log form a group, whose events are
//! worked out once; an event's text is built once for every group sending
//! it alike, and a body part once for every stream sent the same events. A
//! group keeps the entities it has reported as matching (and, when
//! filtered, those matching when it opened), at most
//! [`REPORTED`](super::reported::REPORTED), each with the change it was
//! reported at: `leave` goes to the streams told of those no longer
//! matching, and a filtered stream is told of a deletion only for them
//! (past the bound, of every readable deletion). An entity whose rights
//! followed its parent's is logged as an update naming no property: it
//! sends only `leave`s.

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
use crate::rights::ViewLevel;

/// A stream as it opens, before its database's reader takes it in.
pub(super) struct Subscriber {
    pub(super) person: Option<String>,
    pub(super) query: Arc<ListQuery>,
    /// The query string it was parsed from: streams of one caller and query
    /// string share their group.
    pub(super) query_text: String,
    /// The change it resumes after.
    pub(super) cursor: i64,
    /// What matched as it opened (a filtered stream).
    pub(super) reported: Reported,
    pub(super) events: queue::Sender,
}

/// The streams of one caller and query at one place in the log: each batch's
/// events are worked out once for all of them, and what they reported is
/// kept once (a process may hold a thousand streams of one caller).
pub(super) struct Group {
    person: Option<String>,
    query: Arc<ListQuery>,
    query_text: String,
    /// The last change its streams have been handed (or skipped).
    pub(super) cursor: i64,
    reported: Reported,
    members: Vec<Member>,
}

/// One stream of a group.
struct Member {
    /// The change it opened after: an unfiltered stream has a `leave` only
    /// for what it was told of, that is, reported after this.
    opened_after: i64,
    events: queue::Sender,
}

impl Group {
    pub(super) fn new(subscriber: Subscriber) -> Group {
        Group {
            person: subscriber.person,
            query: subscriber.query,
            query_text: subscriber.query_text,
            cursor: subscriber.cursor,
            reported: subscriber.reported,
            members: vec![Member {
                opened_after: subscriber.cursor,
                events: subscriber.events,
            }],
        }
    }

    /// Takes `subscriber` in if it is of this group's caller and query at
    /// its place in the log; hands it back otherwise. A filtered stream's
    /// matches as it opened are the group's own matches then.
    pub(super) fn admit(&mut self, subscriber: Subscriber) -> Option<Subscriber> {
        if !self.holds_streams_like(&subscriber.person, &subscriber.query_text, subscriber.cursor) {
            return Some(subscriber);
        }
        self.members.push(Member {
            opened_after: subscriber.cursor,
            events: subscriber.events,
        });
        None
    }

    fn holds_streams_like(&self, person: &Option<String>, query_text: &str, cursor: i64) -> bool {
        self.cursor == cursor && self.person == *person && self.query_text == query_text
    }

    /// Drops the streams whose clients are gone; answers whether any is left.
    pub(super) fn keep_open(&mut self) -> bool {
        self.members.retain(|member| !member.events.is_closed());
        !self.members.is_empty()
    }

    fn filtered(&self) -> bool {
        !self.query.filters.is_empty() || !self.query.words.is_empty()
    }

    /// Hands each stream its part of `batch` (one write per stream), taken
    /// from `shared` when a stream of another group got the same events, and
    /// moves on to change `last`; a stream that cannot take its part (its
    /// client is too slow, or gone) is dropped.
    pub(super) fn hand(&mut self, batch: &Batch, last: i64, shared: &mut Parts) {
        let mut parts: HashMap<i64, Bytes> = HashMap::new();
        self.members.retain(|member| {
            let part = parts
                .entry(batch.distinct_for(member.opened_after))
                .or_insert_with(|| batch.part_for(member.opened_after, shared))
                .clone();
            member.events.send(part)
        });
        self.cursor = self.cursor.max(last);
    }
}

/// Merges the groups of one caller and query that reached the same change
/// (streams opened while the reader was a batch behind catch up with their
/// elders).
pub(super) fn merge(groups: &mut Vec<Group>) {
    if groups.len() < 2 {
        return;
    }
    let mut merged: Vec<Group> = Vec::with_capacity(groups.len());
    let mut places: HashMap<(Option<String>, String, i64), usize> = HashMap::new();
    for group in groups.drain(..) {
        let key = (group.person.clone(), group.query_text.clone(), group.cursor);
        match places.get(&key) {
            Some(&place) => {
                let elder = &mut merged[place];
                elder.members.extend(group.members);
                elder.reported.absorb(group.reported);
            }
            None => {
                places.insert(key, merged.len());
                merged.push(group);
            }
        }
    }
    *groups = merged;
}

/// A group's events of one batch, in change order.
#[derive(Default)]
pub(super) struct Batch {
    events: Vec<Event>,
}

/// An event for the streams of a group.
struct Event {
    text: Text,
    /// For streams opened before this change only (the `leave` of an
    /// unfiltered stream: it was reported at this change); `None`: all.
    opened_before: Option<i64>,
}

/// The body parts of one batch's streams, whatever their group: streams
/// sent the same events share one part (the streams of a thousand callers
/// who see the batch alike hold one copy of it between them).
#[derive(Default)]
pub(super) struct Parts(HashMap<Vec<usize>, Bytes>);

impl Batch {
    /// The body part of a stream opened after change `opened_after`.
    fn part_for(&self, opened_after: i64, shared: &mut Parts) -> Bytes {
        let sent: Vec<&Text> = self
            .events
            .iter()
            .filter(|event| event.opened_before.is_none_or(|at| opened_after < at))
            .map(|event| &event.text)
            .collect();
        let key = sent.iter().map(|text| text.number).collect();
        shared
            .0
            .entry(key)
            .or_insert_with(|| {
                let mut part = BytesMut::with_capacity(sent.iter().map(|text| text.bytes.len()).sum());
                for text in sent {
                    part.extend_from_slice(&text.bytes);
                }
                part.freeze()
            })
            .clone()
    }

    /// A key under which streams get the same part: every stream, unless
    /// some event is only for streams opened before it.
    fn distinct_for(&self, opened_after: i64) -> i64 {
        if self.events.iter().any(|event| event.opened_before.is_some()) {
            opened_after
        } else {
            0
        }
    }
}

/// The events of `rows` (changes of database `db` in id order) for each of
/// `groups`, in their order; each group notes what it reported.
pub(super) async fn select(
    conn: &mut AsyncPgConnection,
    db: &str,
    rows: &[ChangeRow],
    groups: &mut [Group],
) -> Result<Vec<Batch>, ApiError> {
    let deleted_ids: Vec<String> = rows
        .iter()
        .filter(|row| row.action == "delete")
        .map(|row| row.entity_id.clone())
        .collect();
    let deleted = if deleted_ids.is_empty() {
        HashMap::new()
    } else {
        by_id(changes::entities_any(conn, db, &deleted_ids).await?)
    };
    // an unfiltered group's matches are the live entities its caller may
    // read: one statement for every such group, the rights applied here
    let unfiltered_ids = unfiltered_from(groups).map_or_else(Vec::new, |cursor| changed_after(rows, cursor));
    let live = if unfiltered_ids.is_empty() {
        HashMap::new()
    } else {
        by_id(changes::live_entities(conn, db, &unfiltered_ids).await?)
    };
    // filtered groups of one caller and query at different places in the
    // log share one statement
    let mut matched: HashMap<(Option<String>, String), HashMap<String, EntityRow>> = HashMap::new();
    for group in groups.iter().filter(|group| group.filtered()) {
        let key = (group.person.clone(), group.query_text.clone());
        if matched.contains_key(&key) {
            continue;
        }
        let cursor = groups
            .iter()
            .filter(|other| other.person == key.0 && other.query_text == key.1)
            .map(|other| other.cursor)
            .min()
            .unwrap_or_default();
        let ids = changed_after(rows, cursor);
        let found = if ids.is_empty() {
            Vec::new()
        } else {
            let limit = ids.len() as i64;
            matching(conn, db, group.person.as_deref(), &group.query, Some(&ids), limit).await?
        };
        matched.insert(key, by_id(found));
    }
    let mut texts = EventTexts::default();
    Ok(groups
        .iter_mut()
        .map(|group| {
            let person = group.person.clone();
            let person = person.as_deref();
            if group.filtered() {
                let matching = &matched[&(group.person.clone(), group.query_text.clone())];
                events_of(
                    group,
                    rows,
                    |id| seen_by(matching.get(id)?, person),
                    &deleted,
                    &mut texts,
                )
            } else {
                events_of(group, rows, |id| seen_by(live.get(id)?, person), &deleted, &mut texts)
            }
        })
        .collect())
}

/// The text of each event of a batch, built once for every group it goes to
/// alike (the groups of many callers mostly send the same events, differing
/// only in the properties their views name).
#[derive(Default)]
struct EventTexts(HashMap<(i64, bool, Vec<String>), Text>);

/// An event's text, numbered within its batch.
#[derive(Clone)]
struct Text {
    number: usize,
    bytes: Bytes,
}

impl EventTexts {
    /// The event of change `row` (a `leave` when `leave`) naming `properties`.
    fn of(&mut self, row: &ChangeRow, leave: bool, properties: Vec<String>) -> Text {
        let number = self.0.len();
        self.0
            .entry((row.id, leave, properties))
            .or_insert_with_key(|(_, leave, properties)| {
                let action = if *leave { "leave" } else { row.action.as_str() };
                Text {
                    number,
                    bytes: change_event(row, action, properties),
                }
            })
            .clone()
    }
}

fn by_id(rows: Vec<EntityRow>) -> HashMap<String, EntityRow> {
    rows.into_iter().map(|row| (row.id.clone(), row)).collect()
}

/// The place in the log of the furthest-behind unfiltered group, if any.
fn unfiltered_from(groups: &[Group]) -> Option<i64> {
    groups
        .iter()
        .filter(|group| !group.filtered())
        .map(|group| group.cursor)
        .min()
}

/// The entities changed (not deleted) by `rows` after change `cursor`.
fn changed_after(rows: &[ChangeRow], cursor: i64) -> Vec<String> {
    let mut ids: Vec<String> = rows
        .iter()
        .filter(|row| row.id > cursor && row.action != "delete")
        .map(|row| row.entity_id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// How `person` sees `entity` (the entity and their view of it), if they
/// may read it; decided on the row's own lists.
fn seen_by<'a>(entity: &'a EntityRow, person: Option<&str>) -> Option<(&'a EntityRow, ViewLevel)> {
    Some((entity, entity.view_level(person)?))
}

/// The events `group` gets for `rows`; `matching` tells how its caller sees
/// each entity the group's query matches.
fn events_of<'a>(
    group: &mut Group,
    rows: &[ChangeRow],
    matching: impl Fn(&str) -> Option<(&'a EntityRow, ViewLevel)>,
    deleted: &HashMap<String, EntityRow>,
    texts: &mut EventTexts,
) -> Batch {
    let filtered = group.filtered();
    let person = group.person.as_deref();
    let mut events = Vec::new();
    for row in rows.iter().filter(|row| row.id > group.cursor) {
        let to_all = |text| Event {
            text,
            opened_before: None,
        };
        if row.action == "delete" {
            let Some(entity) = deleted.get(&row.entity_id) else {
                continue;
            };
            let was_reported = group.reported.forget(&row.entity_id).is_some();
            let Some((entity, level)) = seen_by(entity, person) else {
                continue;
            };
            if filtered && !was_reported && !group.reported.overflowed() {
                continue;
            }
            let names = readable(entity, level, row, &group.query);
            events.push(to_all(texts.of(row, false, names)));
            continue;
        }
        match matching(&row.entity_id) {
            // rights that followed a parent's changed no value: news only to
            // those who no longer see the entity
            Some(_) if follows_rights(row) => {}
            Some((entity, level)) => {
                let names = readable(entity, level, row, &group.query);
                events.push(to_all(texts.of(row, false, names)));
                group.reported.remember(&row.entity_id, row.id);
            }
            None => {
                if let Some(reported_at) = group.reported.forget(&row.entity_id) {
                    events.push(Event {
                        text: texts.of(row, true, Vec::new()),
                        // a filtered stream knew every match as it opened
                        opened_before: (!filtered).then_some(reported_at),
                    });
                }
            }
        }
    }
    Batch { events }
}

/// Whether `row` logs only that the entity's rights followed its parent's:
/// every other update names a property.
fn follows_rights(row: &ChangeRow) -> bool {
    row.action == "update" && row.properties.is_empty()
}

/// The properties of `row` that the caller's view of `entity` (at `level`)
/// shows, and that the query's `props` names when it names some.
fn readable(entity: &EntityRow, level: ViewLevel, row: &ChangeRow, query: &ListQuery) -> Vec<String> {
    row.properties
        .iter()
        .filter(|prop| entity.shows(level, prop))
        .filter(|prop| query.props.as_ref().is_none_or(|props| props.contains(prop)))
        .cloned()
        .collect()
}

/// The server-sent event of one change.
fn change_event(row: &ChangeRow, action: &str, properties: &[String]) -> Bytes {
    let data = json!({
        "_id": row.entity_id,
        "action": action,
        "at": row.at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "by": row.actor,
        "properties": properties,
    });
    Bytes::from(format!("id: {}\nevent: change\ndata: {data}\n\n", row.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(id: i64, action: &str) -> ChangeRow {
        ChangeRow {
            id,
            entity_id: "6571f3a4c2b9e8d7f6a5b4c3".to_owned(),
            actor: None,
            action: action.to_owned(),
            properties: vec!["name".to_owned(), "title".to_owned()],
            at: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
        }
    }

    #[test]
    fn an_event_s_text_is_built_once_for_every_group_that_sends_it_alike() {
        let mut texts = EventTexts::default();
        let update = change(7, "update");
        let both = texts.of(&update, false, vec!["name".to_owned(), "title".to_owned()]);
        let again = texts.of(&update, false, vec!["name".to_owned(), "title".to_owned()]);
        assert_eq!(both.bytes.as_ptr(), again.bytes.as_ptr(), "one text, shared");
        assert_eq!(both.number, again.number);

        let narrower = texts.of(&update, false, vec!["name".to_owned()]);
        let leave = texts.of(&update, true, Vec::new());
        let next = texts.of(&change(8, "update"), false, vec!["name".to_owned()]);
        let numbers: std::collections::HashSet<usize> = [&both, &narrower, &leave, &next]
            .iter()
            .map(|text| text.number)
            .collect();
        assert_eq!(numbers.len(), 4, "each text its own number");
        for (text, expected) in [
            (
                &both,
                r#""action":"update","at":"2027-01-15T08:00:00.000Z","by":null,"properties":["name","title"]"#,
            ),
            (
                &narrower,
                r#""action":"update","at":"2027-01-15T08:00:00.000Z","by":null,"properties":["name"]"#,
            ),
            (
                &leave,
                r#""action":"leave","at":"2027-01-15T08:00:00.000Z","by":null,"properties":[]"#,
            ),
        ] {
            let text = std::str::from_utf8(&text.bytes).unwrap();
            assert!(text.starts_with("id: 7\nevent: change\n"), "{text}");
            assert!(text.contains(expected), "{text}");
        }
        assert!(std::str::from_utf8(&next.bytes).unwrap().starts_with("id: 8\n"));
    }

    #[test]
    fn streams_of_any_group_sent_the_same_events_share_one_part() {
        let mut texts = EventTexts::default();
        let (created, hidden) = (change(7, "create"), change(9, "update"));
        let event = |text: Text, opened_before| Event { text, opened_before };
        // two callers' groups: the second also had `hidden` reported at 7
        let first = Batch {
            events: vec![event(texts.of(&created, false, vec!["name".to_owned()]), None)],
        };
        let second = Batch {
            events: vec![
                event(texts.of(&created, false, vec!["name".to_owned()]), None),
                event(texts.of(&hidden, true, Vec::new()), Some(7)),
            ],
        };
        let mut shared = Parts::default();
        let one = first.part_for(3, &mut shared);
        let opened_later = second.part_for(8, &mut shared);
        assert_eq!(one.as_ptr(), opened_later.as_ptr(), "the same events, one part");
        let elder = second.part_for(3, &mut shared);
        assert_ne!(elder.as_ptr(), one.as_ptr());
        let elder = std::str::from_utf8(&elder).unwrap();
        assert!(elder.starts_with(std::str::from_utf8(&one).unwrap()), "{elder}");
        assert!(
            elder.ends_with(
                "\"action\":\"leave\",\"at\":\"2027-01-15T08:00:00.000Z\",\"by\":null,\"properties\":[]}\n\n"
            ),
            "{elder}"
        );
    }
}
