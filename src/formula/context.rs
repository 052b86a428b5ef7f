//! An entity's formula values: each formula reads the entity's id, its own
//! values, the results of formulas before it and the values of related
//! entities (children, referrers, the entities it references). A formula
//! reads a value only where everyone who may read the formula's value may
//! also read that value (docs/guide/src/concepts/formulas.md, "Who sees what"): otherwise a
//! formula would show what the rights rules hide. Pure: the database layer
//! (`db::formulas`) loads the related entities.

use std::collections::HashMap;

use serde_json::Value as Json;

use super::{FieldRef, Formula, FormulaValue};
use crate::model::definition::PropertyDefinition;
use crate::rights::{Audience, Visibility};

/// A related entity: its document and what decides who may read its values.
pub struct RelatedEntity<'a> {
    pub id: &'a str,
    pub doc: &'a Json,
    pub visibility: Visibility<'a>,
}

/// The formula properties among `definitions`, parsed, in name order (the
/// order they are computed in); a formula that does not parse is left out.
pub fn formulas_of(definitions: &HashMap<String, PropertyDefinition>) -> Vec<(&String, Formula)> {
    let mut formulas: Vec<(&String, Formula)> = definitions
        .iter()
        .filter_map(|(prop, definition)| Some((prop, Formula::parse(definition.formula.as_deref()?).ok()?)))
        .collect();
    formulas.sort_by(|a, b| a.0.cmp(b.0));
    formulas
}

/// What an entity's formulas read.
pub struct Inputs<'a> {
    /// The entity's id.
    pub id: &'a str,
    /// The entity's stored values of a property.
    pub stored: &'a dyn Fn(&str) -> Vec<FormulaValue>,
    /// The related entities each child, referrer or reference field reaches.
    pub related: &'a HashMap<FieldRef, Vec<RelatedEntity<'a>>>,
    /// Who may read each of the entity's own properties.
    pub audience: &'a dyn Fn(&str) -> Audience,
}

/// The values of the entity's `formulas`, by property name, as value
/// objects (`{"number":..}`, `{"string":..}`, `{"boolean":..}`); a formula
/// that gives no value is absent. A formula reads only values that everyone
/// reading its own value may read too.
pub fn evaluate(formulas: &[(&String, Formula)], inputs: &Inputs) -> Vec<(String, Vec<Json>)> {
    let mut results: Vec<(String, Vec<Json>)> = Vec::new();
    for (prop, formula) in formulas {
        let readers = (inputs.audience)(prop);
        let mut values: HashMap<FieldRef, Vec<FormulaValue>> = HashMap::new();
        for reference in formula.references() {
            let read = match &reference {
                FieldRef::Id => vec![FormulaValue::Text(inputs.id.to_owned())],
                FieldRef::Own(own) if !readers.within(&(inputs.audience)(own)) => Vec::new(),
                FieldRef::Own(own) => match results.iter().find(|(name, _)| name == own) {
                    Some((_, computed)) => computed.iter().filter_map(FormulaValue::from_value_json).collect(),
                    None => (inputs.stored)(own),
                },
                FieldRef::Child { prop, .. } | FieldRef::Referrer { prop, .. } | FieldRef::Reference { prop, .. } => {
                    let related = inputs.related.get(&reference).map_or(&[][..], Vec::as_slice);
                    values_of(related, prop, &readers)
                }
            };
            values.insert(reference, read);
        }
        let computed = formula.evaluate_all(&|reference| values.get(reference).cloned().unwrap_or_default());
        if !computed.is_empty() {
            results.push((
                (*prop).clone(),
                computed.iter().map(FormulaValue::to_value_json).collect(),
            ));
        }
    }
    results
}

/// The values of `prop` (or the ids, for `_id`) of related entities, as their
/// projections show them (credentials masked, formula results included),
/// from the entities where everyone in `readers` may read them: the others
/// count as absent, so not even their number shows.
fn values_of(related: &[RelatedEntity], prop: &str, readers: &Audience) -> Vec<FormulaValue> {
    related
        .iter()
        .filter(|entity| readers.within(&entity.visibility.audience(prop)))
        .flat_map(|entity| {
            if prop == "_id" {
                return vec![FormulaValue::Text(entity.id.to_owned())];
            }
            entity.doc[prop]
                .as_array()
                .map(|values| values.iter().filter_map(FormulaValue::from_value_json).collect())
                .unwrap_or_default()
        })
        .collect()
}

/// Puts formula results into an entity document, in place of any stored values.
pub fn apply(doc: &mut Json, results: Vec<(String, Vec<Json>)>) {
    if let Some(object) = doc.as_object_mut() {
        for (prop, values) in results {
            object.insert(prop, Json::Array(values));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::rights::{RightsLists, Sharing};

    /// Everyone, anonymous callers included.
    fn everyone() -> Audience {
        Audience::of(Sharing::Public, &RightsLists::default(), true, true)
    }

    /// Only the persons named.
    fn only(persons: &[&str]) -> Audience {
        let lists = RightsLists {
            viewers: persons.iter().map(|p| (*p).to_owned()).collect(),
            ..RightsLists::default()
        };
        Audience::of(Sharing::Private, &lists, false, false)
    }

    fn run(
        formulas: &[(&String, Formula)],
        audience: &dyn Fn(&str) -> Audience,
        related: &HashMap<FieldRef, Vec<RelatedEntity>>,
    ) -> Vec<(String, Vec<Json>)> {
        let stored = |prop: &str| match prop {
            "salary" => vec![FormulaValue::Number(100.0)],
            _ => Vec::new(),
        };
        let inputs = Inputs {
            id: "e1",
            stored: &stored,
            related,
            audience,
        };
        evaluate(formulas, &inputs)
    }

    #[test]
    fn formulas_are_computed_in_name_order_and_read_earlier_results() {
        let mut definitions = HashMap::new();
        for (prop, text) in [("b_double", "a_salary 2 MULTIPLY"), ("a_salary", "salary SUM")] {
            let definition = PropertyDefinition::from_doc(&json!({ "formula": [{ "string": text }] }));
            definitions.insert(prop.to_owned(), definition);
        }
        let parsed = formulas_of(&definitions);
        let names: Vec<&str> = parsed.iter().map(|(prop, _)| prop.as_str()).collect();
        assert_eq!(names, ["a_salary", "b_double"]);
        let results = run(&parsed, &|_| only(&["owner"]), &HashMap::new());
        assert_eq!(results[1], ("b_double".to_owned(), vec![json!({ "number": 200 })]));
    }

    #[test]
    fn an_own_value_read_by_fewer_than_the_formula_gives_nothing() {
        let shown = "shown".to_owned();
        let parsed = [(&shown, Formula::parse("salary _id CONCAT").unwrap())];
        let audience = |prop: &str| if prop == "shown" { everyone() } else { only(&["owner"]) };
        let results = run(&parsed, &audience, &HashMap::new());
        assert_eq!(results, [("shown".to_owned(), vec![json!({ "string": "e1" })])]);
    }

    #[test]
    fn related_entities_count_only_where_every_reader_of_the_formula_may_read_them() {
        let total = "total".to_owned();
        let parsed = [(&total, Formula::parse("_child.*.price SUM").unwrap())];
        let field = FieldRef::Child {
            entity_type: None,
            prop: "price".to_owned(),
        };
        let (cheap, dear) = (
            json!({ "price": [{ "number": 2 }] }),
            json!({ "price": [{ "number": 40 }] }),
        );
        let (price, nothing): ([String; 1], [String; 0]) = (["price".to_owned()], []);
        fn visibility(sharing: Sharing, shown: &[String]) -> Visibility<'_> {
            let lists = RightsLists {
                viewers: ["owner".to_owned()].into(),
                ..RightsLists::default()
            };
            Visibility {
                sharing,
                lists,
                public_props: shown,
                domain_props: shown,
            }
        }
        let children = vec![
            RelatedEntity {
                id: "c1",
                doc: &cheap,
                visibility: visibility(Sharing::Public, &price),
            },
            RelatedEntity {
                id: "c2",
                doc: &dear,
                visibility: visibility(Sharing::Private, &nothing),
            },
        ];
        let related = HashMap::from([(field, children)]);
        let public = run(&parsed, &|_| everyone(), &related);
        assert_eq!(public, [("total".to_owned(), vec![json!({ "number": 2 })])]);
        let private = run(&parsed, &|_| only(&["owner"]), &related);
        assert_eq!(private, [("total".to_owned(), vec![json!({ "number": 42 })])]);
    }

    #[test]
    fn results_replace_the_stored_values_in_the_document() {
        let mut doc = json!({ "total": [{ "number": 1 }], "name": [{ "string": "a" }] });
        apply(&mut doc, vec![("total".to_owned(), vec![json!({ "number": 2 })])]);
        assert_eq!(doc, json!({ "total": [{ "number": 2 }], "name": [{ "string": "a" }] }));
    }
}
