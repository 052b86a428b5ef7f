//! An entity's document written as a caller sees it straight from the text
//! PostgreSQL sent (`RawDoc`): its properties are split apart without being
//! parsed, those the caller's view hides are left out, those holding
//! references are parsed to be named ([`TargetNames`]), and the rest is
//! copied. A page of twenty documents cost more to parse into trees and
//! write out again than PostgreSQL took to find it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value as Json;
use serde_json::value::RawValue;

use super::TargetNames;
use crate::db::values::{EntityRow, RawDoc};
use crate::error::ApiError;
use crate::rights::ViewLevel;

/// Writes `entity`'s document to `out` as the view `level` shows it (the
/// caller's, from [`EntityRow::view_level`]), with only the properties
/// `listed` keeps and its references named by `names`. The same JSON, key
/// for key, as naming the references of `view::visible_doc`'s tree.
pub fn write(
    entity: &EntityRow<RawDoc>,
    level: ViewLevel,
    listed: impl Fn(&str) -> bool,
    names: &TargetNames,
    out: &mut Vec<u8>,
) -> Result<(), ApiError> {
    write_document(entity, level, listed, names, out).map_err(unreadable)
}

/// The error of a stored document that cannot be read or written.
pub fn unreadable(error: impl std::fmt::Display) -> ApiError {
    ApiError::internal("stored entity document", error)
}

fn write_document(
    entity: &EntityRow<RawDoc>,
    level: ViewLevel,
    listed: impl Fn(&str) -> bool,
    names: &TargetNames,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    let Properties(properties) = serde_json::from_str(&entity.doc.0)?;
    out.push(b'{');
    let mut first = true;
    for (prop, values) in properties {
        if !entity.shows(level, &prop) || !listed(&prop) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut *out, prop.as_ref())?;
        out.push(b':');
        write_values(out, &prop, values, names)?;
    }
    out.push(b'}');
    Ok(())
}

/// A property's list of values, those referencing an entity named.
fn write_values(out: &mut Vec<u8>, prop: &str, values: &RawValue, names: &TargetNames) -> serde_json::Result<()> {
    // A quoted `"reference"` may also end a string value: then the list is
    // read for nothing, never left unnamed.
    if !values.get().contains("\"reference\"") {
        push_compact(out, values.get());
        return Ok(());
    }
    let Ok(items) = serde_json::from_str::<Vec<Properties>>(values.get()) else {
        // not a list of objects: named as a tree is
        let mut values: Json = serde_json::from_str(values.get())?;
        names.name(prop, &mut values);
        return serde_json::to_writer(out, &values);
    };
    out.push(b'[');
    for (index, Properties(fields)) in items.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        let target = fields
            .iter()
            .find(|(field, _)| field == "reference")
            .and_then(|(_, target)| serde_json::from_str::<Name>(target.get()).ok());
        let added = match &target {
            Some(Name(target)) => names.fields(prop, target),
            None => [None; 3],
        };
        let added_as = |field: &str| {
            added
                .iter()
                .flatten()
                .find(|(name, _)| *name == field)
                .map(|(_, text)| *text)
        };
        out.push(b'{');
        for (position, (field, value)) in fields.iter().enumerate() {
            if position > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut *out, field.as_ref())?;
            out.push(b':');
            match added_as(field) {
                Some(text) => serde_json::to_writer(&mut *out, text)?,
                None => push_compact(out, value.get()),
            }
        }
        // fields are added only to an object holding its `reference`
        for (field, text) in added.iter().flatten() {
            if fields.iter().any(|(name, _)| name == field) {
                continue;
            }
            out.push(b',');
            serde_json::to_writer(&mut *out, field)?;
            out.push(b':');
            serde_json::to_writer(&mut *out, text)?;
        }
        out.push(b'}');
    }
    out.push(b']');
    Ok(())
}

/// `json` without the whitespace between its tokens, as a tree of it would
/// be written (PostgreSQL writes `jsonb` with a space after `:` and `,`).
/// The text between two such spaces is copied whole: a page's documents
/// pass through here byte by byte otherwise.
fn push_compact(out: &mut Vec<u8>, json: &str) {
    let bytes = json.as_bytes();
    out.reserve(bytes.len());
    // `copied`: where the text not yet copied starts
    let (mut copied, mut at) = (0, 0);
    while at < bytes.len() {
        match bytes[at] {
            b'"' => at = string_end(bytes, at + 1),
            byte if byte.is_ascii_whitespace() => {
                out.extend_from_slice(&bytes[copied..at]);
                at += 1;
                copied = at;
            }
            _ => at += 1,
        }
    }
    out.extend_from_slice(&bytes[copied..]);
}

/// The position just past the string whose text starts at `from` (its
/// closing quote skipped); the end of `bytes` when it is not closed.
fn string_end(bytes: &[u8], mut from: usize) -> usize {
    while from < bytes.len() {
        match bytes[from] {
            b'\\' => from += 2,
            b'"' => return from + 1,
            _ => from += 1,
        }
    }
    bytes.len()
}

/// A document's properties in their order, each value still its text.
struct Properties<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

/// A property name, borrowed from the document unless it holds an escape.
struct Name<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Properties<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Properties<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an entity document")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut properties = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some((Name(name), values)) = map.next_entry::<Name<'de>, &'de RawValue>()? {
                    properties.push((name, values));
                }
                Ok(Properties(properties))
            }
        }
        deserializer.deserialize_map(Each)
    }
}

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a property name")
            }
            fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Borrowed(name)))
            }
            fn visit_str<E>(self, name: &str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(name.to_owned())))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::references::target_of;
    use crate::view::{name_references, visible_doc};

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    /// A document as PostgreSQL writes `jsonb`: keys shortest first, a space
    /// after every `:` and `,`, escapes in strings.
    const DOC: &str = r#"{"_id": "e1", "name": [{"_id": "v3", "string": "say \"reference\", \\ and é: x"}], "_type": [{"_id": "v1", "reference": "t1"}], "price": [{"_id": "v4", "number": 9.5}, {"_id": "v5", "number": 10}], "author": [{"_id": "v6", "reference": "p1"}, {"_id": "v7", "reference": "gone"}], "_owner": [{"_id": "v2", "string": "old name", "reference": "ann"}], "related": [{"_id": "v8", "reference": null}, "odd", {"_id": "v9", "reference": "p1"}]}"#;

    fn row<Doc>(id: &str, name: &str, sharing: &str, doc: Doc) -> EntityRow<Doc> {
        EntityRow {
            id: id.into(),
            type_id: Some("t1".into()),
            parent_ids: Vec::new(),
            name: Some(name.into()),
            sharing: sharing.into(),
            owners: strings(&["ann"]),
            editors: strings(&["ann"]),
            expanders: strings(&["ann"]),
            viewers: strings(&["ann"]),
            noaccess: strings(&["eve"]),
            doc,
            public_props: strings(&["name"]),
            domain_props: strings(&["name", "price", "author", "related"]),
        }
    }

    fn targets() -> Vec<crate::db::values::Target> {
        vec![
            target_of(row("t1", "book", "domain", ()), None),
            target_of(row("p1", "Frank", "private", ()), Some("person".into())),
            target_of(row("ann", "Ann", "public", ()), Some("person".into())),
        ]
    }

    /// What the tree of the document, seen and named, serializes to.
    fn as_tree(person: Option<&str>, listed: &dyn Fn(&str) -> bool) -> Option<String> {
        let mut doc = visible_doc(row("e1", "Dune", "public", serde_json::from_str(DOC).unwrap()), person)?;
        doc.as_object_mut().unwrap().retain(|prop, _| listed(prop));
        let mut docs = [doc];
        name_references(&mut docs, targets(), person);
        Some(serde_json::to_string(&docs[0]).unwrap())
    }

    fn as_written(person: Option<&str>, listed: &dyn Fn(&str) -> bool) -> Option<String> {
        let entity = row("e1", "Dune", "public", RawDoc(DOC.into()));
        let level = entity.view_level(person)?;
        let mut out = Vec::new();
        write(&entity, level, listed, &TargetNames::new(targets(), person), &mut out).unwrap();
        Some(String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_document_written_from_its_text_is_the_tree_of_it_seen_and_named() {
        let everything = |_: &str| true;
        let some = |prop: &str| ["_id", "author", "price"].contains(&prop);
        for person in [Some("ann"), Some("bob"), None, Some("eve")] {
            for listed in [&everything as &dyn Fn(&str) -> bool, &some] {
                assert_eq!(as_written(person, listed), as_tree(person, listed), "{person:?}");
            }
        }
        let full = as_written(Some("ann"), &everything).unwrap();
        assert!(full.contains(
            r#"{"_id":"v6","reference":"p1","string":"Frank","entity_type":"person","property_type":"author"}"#
        ));
        assert!(full.contains(r#""string":"say \"reference\", \\ and é: x""#));
        assert!(full.contains(
            r#"{"_id":"v2","string":"Ann","reference":"ann","entity_type":"person","property_type":"_owner"}"#
        ));
        let public = as_written(None, &everything).unwrap();
        assert!(!public.contains("price") && !public.contains("author"), "{public}");
    }

    #[test]
    fn compacting_keeps_the_whitespace_inside_strings() {
        let mut out = Vec::new();
        push_compact(&mut out, r#"[{"a": "x \" y, z: \\", "b": [1, 2]}]"#);
        assert_eq!(String::from_utf8(out).unwrap(), r#"[{"a":"x \" y, z: \\","b":[1,2]}]"#);
    }

    #[test]
    fn compacting_writes_what_a_tree_of_the_text_would() {
        let texts = [
            r#"{"_id": "a b", "name": [{"_id": "c", "string": " \\\" , : "}], "n": [1.5, -2, true, null]}"#,
            r#"[{"string": "ends with a backslash \\"}, {"string": "tab\t and é"}]"#,
            "[ {\n\t\"x\" :\r\n [ ] } , { } ]",
            r#""only a string, with spaces""#,
            "",
        ];
        for text in texts {
            let mut out = Vec::new();
            push_compact(&mut out, text);
            let out = String::from_utf8(out).unwrap();
            match serde_json::from_str::<Json>(text) {
                Ok(tree) => assert_eq!(out, tree.to_string(), "{text}"),
                Err(_) => assert_eq!(out, "", "{text}"),
            }
        }
        let mut unclosed = Vec::new();
        push_compact(&mut unclosed, r#"["open \"#);
        assert_eq!(unclosed, br#"["open \"#, "an unclosed string ends the text");
    }
}
