//! The pure part of the per-entity read projection: the entity's document,
//! name, type, parents, sharing, own rights, the properties each shared view
//! shows and the search text of each view, built from its live values and
//! what its type says. `db::projection` loads the inputs and stores the result.

use std::collections::HashMap;

use serde_json::{Map, Value as Json};

use crate::model::definition::PropertyDefinition;
use crate::model::json::number_json;
use crate::model::stored::ValueRow;
use crate::rights::{ALWAYS_SHOWN, Audience, RightsLists, Sharing};

/// What the projection needs besides the entity's own values.
#[derive(Debug, Clone, Default)]
pub struct ProjectionContext {
    /// Definitions of the entity type's properties, by name.
    pub definitions: HashMap<String, PropertyDefinition>,
    /// The entity type's own `_sharing`: it caps every definition's.
    pub type_sharing: Option<Sharing>,
    /// The entity type's name (`property` marks a definition).
    pub type_name: Option<String>,
    /// Entities referenced by searchable properties: their names, and who
    /// may read those names.
    pub targets: HashMap<String, (String, Audience)>,
}

/// What an entity's live values say about it, before rights inheritance.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    pub doc: Json,
    pub name: Option<String>,
    pub type_id: Option<String>,
    pub parent_ids: Vec<String>,
    pub sharing: Sharing,
    pub inherit_rights: bool,
    pub own_rights: RightsLists,
    pub public_props: Vec<String>,
    pub domain_props: Vec<String>,
    pub search_private: String,
    pub search_domain: String,
    pub search_public: String,
}

/// Only the first characters of a query word count; longer stored words are
/// kept whole so any part of them matches.
pub const SEARCH_WORD_CHARS: usize = 20;

impl Projection {
    /// Builds the projection of entity `id` from its live values (oldest first).
    pub fn from_values(id: &str, rows: &[ValueRow], context: &ProjectionContext) -> Projection {
        let mut doc = Map::new();
        doc.insert("_id".into(), Json::String(id.to_owned()));
        let mut projection = Projection {
            doc: Json::Null,
            name: None,
            type_id: None,
            parent_ids: Vec::new(),
            sharing: Sharing::Private,
            inherit_rights: false,
            own_rights: RightsLists::default(),
            public_props: Vec::new(),
            domain_props: Vec::new(),
            search_private: String::new(),
            search_domain: String::new(),
            search_public: String::new(),
        };
        let mut sharing_seen = false;
        let mut inherit_seen = false;
        for row in rows {
            let list = doc.entry(row.prop.clone()).or_insert_with(|| Json::Array(Vec::new()));
            if let Json::Array(items) = list {
                items.push(Json::Object(row.stored_json()));
            }
            let reference = row.reference.clone();
            match (row.prop.as_str(), reference) {
                ("name", _) if projection.name.is_none() => projection.name = row.string.clone(),
                ("_type", Some(target)) if projection.type_id.is_none() => projection.type_id = Some(target),
                ("_parent", Some(target)) => projection.parent_ids.push(target),
                ("_owner", Some(person)) => _ = projection.own_rights.owners.insert(person),
                ("_editor", Some(person)) => _ = projection.own_rights.editors.insert(person),
                ("_expander", Some(person)) => _ = projection.own_rights.expanders.insert(person),
                ("_viewer", Some(person)) => _ = projection.own_rights.viewers.insert(person),
                ("_noaccess", Some(person)) => _ = projection.own_rights.noaccess.insert(person),
                ("_sharing", _) if !sharing_seen => {
                    sharing_seen = true;
                    projection.sharing = row
                        .string
                        .as_deref()
                        .and_then(Sharing::parse)
                        .unwrap_or(Sharing::Private);
                }
                ("_inheritrights", _) if !inherit_seen => {
                    inherit_seen = true;
                    projection.inherit_rights = row.boolean.unwrap_or(false);
                }
                _ => {}
            }
        }
        projection.doc = Json::Object(doc);
        projection.share_props(context);
        projection
    }

    /// How widely property `prop` may show: its definition's `_sharing`
    /// capped by the type's; `_type`, `_parent` and `_sharing` everywhere;
    /// a property without a definition only to viewers.
    fn prop_sharing(context: &ProjectionContext, prop: &str) -> Sharing {
        if ALWAYS_SHOWN.contains(&prop) {
            return Sharing::Public;
        }
        match context.definitions.get(prop) {
            Some(definition) => definition.sharing.min(context.type_sharing.unwrap_or(Sharing::Private)),
            None => Sharing::Private,
        }
    }

    /// The properties of the document the public and domain views show.
    pub fn share_props(&mut self, context: &ProjectionContext) {
        self.public_props.clear();
        self.domain_props.clear();
        let Some(doc) = self.doc.as_object() else { return };
        for prop in doc.keys().filter(|prop| !prop.starts_with('_')) {
            let sharing = Projection::prop_sharing(context, prop);
            if sharing >= Sharing::Domain {
                self.domain_props.push(prop.clone());
            }
            if sharing == Sharing::Public {
                self.public_props.push(prop.clone());
            }
        }
    }

    /// Who may read property `prop` of this entity, given its effective lists.
    pub fn audience(&self, context: &ProjectionContext, lists: &RightsLists, prop: &str) -> Audience {
        let sharing = Projection::prop_sharing(context, prop);
        Audience::of(
            self.sharing,
            lists,
            sharing == Sharing::Public,
            sharing >= Sharing::Domain,
        )
    }

    /// The search text of each view: the searchable values that view shows,
    /// and a referenced entity's name only where everyone reading that view
    /// may read the name (the formula rule, docs/guide/src/concepts/formulas.md).
    pub fn index_search(&mut self, rows: &[ValueRow], context: &ProjectionContext, lists: &RightsLists) {
        let private = Audience {
            named: lists.viewers.clone(),
            ..Audience::default()
        };
        let domain = Audience::of(self.sharing, lists, false, true);
        let public = Audience {
            anonymous: true,
            ..Audience::default()
        };
        for row in rows {
            if !context.definitions.get(&row.prop).is_some_and(|d| d.search) {
                continue;
            }
            let (text, readers) = match &row.reference {
                Some(target) => match context.targets.get(target) {
                    Some((name, readers)) => (name.clone(), Some(readers)),
                    None => continue,
                },
                None => match search_text(row) {
                    Some(text) => (text, None),
                    None => continue,
                },
            };
            let readable = |view: &Audience| readers.is_none_or(|readers| view.within(readers));
            if readable(&private) {
                append_words(&mut self.search_private, &text);
            }
            if self.domain_props.contains(&row.prop) && readable(&domain) {
                append_words(&mut self.search_domain, &text);
            }
            if self.public_props.contains(&row.prop) && readable(&public) {
                append_words(&mut self.search_public, &text);
            }
        }
    }
}

/// The searchable text of one value other than a reference: strings,
/// numbers, dates and file names.
fn search_text(row: &ValueRow) -> Option<String> {
    if let Some(text) = &row.string {
        return Some(text.clone());
    }
    if let Some(number) = row.number {
        return Some(number_json(number).to_string());
    }
    if let Some(date) = row.date {
        return Some(date.format("%Y-%m-%d").to_string());
    }
    row.filename.clone()
}

fn append_words(index: &mut String, text: &str) {
    for word in text.split_whitespace() {
        if !index.is_empty() {
            index.push(' ');
        }
        index.push_str(&word.to_lowercase());
    }
}

/// The entities a document's own (not system) reference values point at.
pub fn references_in(doc: &Json) -> Vec<String> {
    let Some(properties) = doc.as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .filter(|(prop, _)| !prop.starts_with('_'))
        .filter_map(|(_, values)| values.as_array())
        .flatten()
        .filter_map(|value| value.get("reference").and_then(Json::as_str))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use chrono::NaiveDate;
    use serde_json::json;

    use super::*;
    use crate::model::stored::tests::value;

    fn text(id: &str, prop: &str, string: &str) -> ValueRow {
        ValueRow {
            string: Some(string.into()),
            ..value(id, prop)
        }
    }

    fn reference(id: &str, prop: &str, target: &str) -> ValueRow {
        ValueRow {
            reference: Some(target.into()),
            ..value(id, prop)
        }
    }

    fn definition(sharing: Sharing, search: bool) -> PropertyDefinition {
        PropertyDefinition {
            value_type: None,
            multilingual: false,
            search,
            sharing,
            formula: None,
        }
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_document_holds_every_value_and_the_system_values_say_what_the_entity_is() {
        let rows = [
            reference("v1", "_type", "book"),
            text("v2", "name", "Dune"),
            text("v3", "name", "Dune, again"),
            reference("v4", "_parent", "p1"),
            reference("v5", "_parent", "p2"),
            reference("v6", "_owner", "ann"),
            reference("v7", "_viewer", "bob"),
            reference("v8", "_noaccess", "eve"),
            text("v9", "_sharing", "domain"),
            text("va", "_sharing", "public"),
            ValueRow {
                boolean: Some(true),
                ..value("vb", "_inheritrights")
            },
        ];
        let projection = Projection::from_values("e1", &rows, &ProjectionContext::default());
        assert_eq!(projection.doc["_id"], json!("e1"));
        assert_eq!(
            projection.doc["name"],
            json!([{"_id": "v2", "string": "Dune"}, {"_id": "v3", "string": "Dune, again"}])
        );
        assert_eq!(projection.name.as_deref(), Some("Dune"), "the first name names it");
        assert_eq!(projection.type_id.as_deref(), Some("book"));
        assert_eq!(projection.parent_ids, ["p1", "p2"]);
        assert_eq!(projection.sharing, Sharing::Domain, "the first _sharing counts");
        assert!(projection.inherit_rights);
        assert_eq!(projection.own_rights.owners, set(&["ann"]));
        assert_eq!(projection.own_rights.viewers, set(&["bob"]));
        assert_eq!(projection.own_rights.noaccess, set(&["eve"]));
    }

    #[test]
    fn an_entity_without_sharing_values_is_private() {
        let projection = Projection::from_values("e1", &[text("v1", "title", "x")], &ProjectionContext::default());
        assert_eq!(projection.sharing, Sharing::Private);
        assert!(!projection.inherit_rights);
        assert!(projection.public_props.is_empty() && projection.domain_props.is_empty());
    }

    fn book_context() -> ProjectionContext {
        ProjectionContext {
            definitions: HashMap::from([
                ("title".to_owned(), definition(Sharing::Public, true)),
                ("email".to_owned(), definition(Sharing::Domain, true)),
                ("salary".to_owned(), definition(Sharing::Private, true)),
                ("notes".to_owned(), definition(Sharing::Public, false)),
                ("author".to_owned(), definition(Sharing::Public, true)),
            ]),
            type_sharing: Some(Sharing::Public),
            ..ProjectionContext::default()
        }
    }

    #[test]
    fn shared_views_show_what_the_definitions_allow_capped_by_the_type() {
        let rows = [
            reference("v0", "_type", "book"),
            text("v1", "title", "Dune"),
            text("v2", "email", "a@b.c"),
            text("v3", "salary", "1"),
            text("v4", "undefined", "?"),
            text("v5", "_sharing", "public"),
        ];
        let projection = Projection::from_values("e1", &rows, &book_context());
        assert_eq!(projection.public_props, ["title"]);
        assert_eq!(projection.domain_props, ["title", "email"]);

        let capped = ProjectionContext {
            type_sharing: Some(Sharing::Domain),
            ..book_context()
        };
        let projection = Projection::from_values("e1", &rows, &capped);
        assert!(projection.public_props.is_empty());
        assert_eq!(projection.domain_props, ["title", "email"]);
    }

    #[test]
    fn a_property_reaches_whom_its_definition_and_the_entity_allow() {
        let rows = [text("v1", "_sharing", "public")];
        let projection = Projection::from_values("e1", &rows, &book_context());
        let lists = RightsLists {
            viewers: set(&["ann"]),
            noaccess: set(&["eve"]),
            ..RightsLists::default()
        };
        let title = projection.audience(&book_context(), &lists, "title");
        assert!(title.anonymous);
        assert_eq!(title.persons_except, Some(set(&["eve"])));
        let salary = projection.audience(&book_context(), &lists, "salary");
        assert!(!salary.anonymous);
        assert_eq!(salary.persons_except, None);
        assert_eq!(salary.named, set(&["ann"]));
        assert!(projection.audience(&book_context(), &lists, "_type").anonymous);
    }

    #[test]
    fn each_view_searches_the_searchable_values_it_shows_in_lower_case_words() {
        let rows = [
            text("v0", "_sharing", "public"),
            text("v1", "title", "Dune  MESSIAH"),
            text("v2", "email", "Ann@Example.com"),
            text("v3", "salary", "Secret"),
            text("v4", "notes", "unsearched"),
            ValueRow {
                number: Some(12.0),
                ..value("v5", "title")
            },
            ValueRow {
                date: NaiveDate::from_ymd_opt(1965, 8, 1),
                ..value("v6", "title")
            },
            ValueRow {
                filename: Some("Cover.PNG".into()),
                ..value("v7", "title")
            },
        ];
        let context = book_context();
        let mut projection = Projection::from_values("e1", &rows, &context);
        projection.index_search(&rows, &context, &RightsLists::default());
        assert_eq!(
            projection.search_private,
            "dune messiah ann@example.com secret 12 1965-08-01 cover.png"
        );
        assert_eq!(
            projection.search_domain,
            "dune messiah ann@example.com 12 1965-08-01 cover.png"
        );
        assert_eq!(projection.search_public, "dune messiah 12 1965-08-01 cover.png");
    }

    #[test]
    fn a_referenced_name_is_searched_only_where_everyone_reading_the_view_may_read_it() {
        let everyone = Audience {
            anonymous: true,
            persons_except: Some(BTreeSet::new()),
            named: BTreeSet::new(),
        };
        let persons = Audience {
            persons_except: Some(BTreeSet::new()),
            ..Audience::default()
        };
        let ann_only = Audience {
            named: set(&["ann"]),
            ..Audience::default()
        };
        let context = ProjectionContext {
            targets: HashMap::from([
                ("t1".to_owned(), ("Herbert".to_owned(), everyone)),
                ("t2".to_owned(), ("Persons".to_owned(), persons)),
                ("t3".to_owned(), ("Hidden".to_owned(), ann_only)),
            ]),
            ..book_context()
        };
        let rows = [
            text("v0", "_sharing", "public"),
            reference("v1", "author", "t1"),
            reference("v2", "author", "t2"),
            reference("v3", "author", "t3"),
            reference("v4", "author", "deleted"),
        ];
        let lists = RightsLists {
            viewers: set(&["ann"]),
            ..RightsLists::default()
        };
        let mut projection = Projection::from_values("e1", &rows, &context);
        projection.index_search(&rows, &context, &lists);
        assert_eq!(projection.search_private, "herbert persons hidden");
        assert_eq!(projection.search_domain, "herbert persons");
        assert_eq!(projection.search_public, "herbert");
    }

    /// `q` looks for all of a signed-in caller's words in one text or all
    /// in the other (`query::sql::search`): it relies on this.
    #[test]
    fn a_viewers_search_text_holds_every_word_of_the_domain_views() {
        let anyone = |anonymous| Audience {
            anonymous,
            persons_except: Some(BTreeSet::new()),
            named: BTreeSet::new(),
        };
        let all_but_ann = Audience {
            persons_except: Some(set(&["ann"])),
            ..Audience::default()
        };
        let named = |persons: &[&str]| Audience {
            named: set(persons),
            ..Audience::default()
        };
        let targets = [
            anyone(true),
            anyone(false),
            all_but_ann,
            named(&["ann"]),
            named(&["ann", "bo"]),
        ];
        let context = ProjectionContext {
            targets: targets
                .into_iter()
                .enumerate()
                .map(|(n, readers)| (format!("t{n}"), (format!("Target{n}"), readers)))
                .collect(),
            ..book_context()
        };
        for sharing in ["private", "domain", "public"] {
            for viewers in [&["ann"][..], &["ann", "bo"], &[]] {
                let mut rows = vec![
                    text("v", "_sharing", sharing),
                    text("w", "title", "Dune Messiah"),
                    text("x", "email", "a@b.c"),
                    text("y", "salary", "secret"),
                ];
                rows.extend((0..5).map(|n| reference(&format!("r{n}"), "author", &format!("t{n}"))));
                let lists = RightsLists {
                    viewers: set(viewers),
                    noaccess: set(&["cy"]),
                    ..RightsLists::default()
                };
                let mut projection = Projection::from_values("e1", &rows, &context);
                projection.index_search(&rows, &context, &lists);
                let private: BTreeSet<&str> = projection.search_private.split(' ').collect();
                for word in projection.search_domain.split_whitespace() {
                    assert!(private.contains(word), "{sharing} {viewers:?}: {word}");
                }
            }
        }
    }

    #[test]
    fn references_in_a_document_are_its_own_not_the_system_ones() {
        let doc = json!({
            "_id": "e1",
            "_parent": [{"_id": "v1", "reference": "p1"}],
            "author": [{"_id": "v2", "reference": "a1"}, {"_id": "v3", "reference": "a2"}],
            "title": [{"_id": "v4", "string": "Dune"}],
        });
        assert_eq!(references_in(&doc), ["a1", "a2"]);
    }
}
