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

use diesel_async::AsyncPgConnection;

use super::events::{Batch, Event, EventTexts, Parts};
use super::queue::{self, Part};
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
        let mut parts: HashMap<i64, Part> = HashMap::new();
        self.members.retain(|member| {
            let part = parts
                .entry(batch.distinct_for(member.opened_after))
                .or_insert_with(|| batch.part_for(member.opened_after, shared));
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
