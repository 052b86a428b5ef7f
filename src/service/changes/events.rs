//! The texts of a batch's events and the body parts made of them, each
//! built once for every group and stream that sends it alike: the streams
//! of a thousand callers who see a batch alike share its events and parts.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use chrono::SecondsFormat;
use serde_json::json;

use super::queue::{Budget, Part};
use crate::db::changes::ChangeRow;

/// A group's events of one batch, in change order.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) events: Vec<Event>,
}

/// An event for the streams of a group.
pub(super) struct Event {
    pub(super) text: Text,
    /// For streams opened before this change only (the `leave` of an
    /// unfiltered stream: it was reported at this change); `None`: all.
    pub(super) opened_before: Option<i64>,
}

/// The body parts of one batch's streams, whatever their group: streams
/// sent the same events share one part (the streams of a thousand callers
/// who see the batch alike hold one copy of it between them).
pub(super) struct Parts {
    built: HashMap<Vec<usize>, Part>,
    budget: Budget,
}

impl Parts {
    pub(super) fn new(budget: &Budget) -> Parts {
        Parts {
            built: HashMap::new(),
            budget: budget.clone(),
        }
    }
}

impl Batch {
    /// The body part of a stream opened after change `opened_after`.
    pub(super) fn part_for(&self, opened_after: i64, shared: &mut Parts) -> Part {
        let sent: Vec<&Text> = self
            .events
            .iter()
            .filter(|event| event.opened_before.is_none_or(|at| opened_after < at))
            .map(|event| &event.text)
            .collect();
        let key = sent.iter().map(|text| text.number).collect();
        shared
            .built
            .entry(key)
            .or_insert_with(|| {
                let mut part = BytesMut::with_capacity(sent.iter().map(|text| text.bytes.len()).sum());
                for text in sent {
                    part.extend_from_slice(&text.bytes);
                }
                shared.budget.part(part.freeze())
            })
            .clone()
    }

    /// A key under which streams get the same part: every stream, unless
    /// some event is only for streams opened before it.
    pub(super) fn distinct_for(&self, opened_after: i64) -> i64 {
        if self.events.iter().any(|event| event.opened_before.is_some()) {
            opened_after
        } else {
            0
        }
    }
}

/// The text of each event of a batch, built once for every group it goes to
/// alike (the groups of many callers mostly send the same events, differing
/// only in the properties their views name).
#[derive(Default)]
pub(super) struct EventTexts(HashMap<(i64, bool, Vec<String>), Text>);

/// An event's text, numbered within its batch.
#[derive(Clone)]
pub(super) struct Text {
    number: usize,
    bytes: Bytes,
}

impl EventTexts {
    /// The event of change `row` (a `leave` when `leave`) naming `properties`.
    pub(super) fn of(&mut self, row: &ChangeRow, leave: bool, properties: Vec<String>) -> Text {
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
    use crate::service::changes::queue::PROCESS_LIMIT_BYTES;

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
        let mut shared = Parts::new(&Budget::new(PROCESS_LIMIT_BYTES));
        let one = first.part_for(3, &mut shared);
        let opened_later = second.part_for(8, &mut shared);
        assert_eq!(
            one.bytes().as_ptr(),
            opened_later.bytes().as_ptr(),
            "the same events, one part"
        );
        let elder = second.part_for(3, &mut shared);
        assert_ne!(elder.bytes().as_ptr(), one.bytes().as_ptr());
        let elder = std::str::from_utf8(elder.bytes()).unwrap();
        assert!(elder.starts_with(std::str::from_utf8(one.bytes()).unwrap()), "{elder}");
        assert!(
            elder.ends_with(
                "\"action\":\"leave\",\"at\":\"2027-01-15T08:00:00.000Z\",\"by\":null,\"properties\":[]}\n\n"
            ),
            "{elder}"
        );
    }
}
