//! `graphql.max_depth` and `graphql.max_complexity`, checked on the parsed
//! document before any database work (the schema itself needs the
//! database): a field costs 1 plus its selection; a type's list field
//! costs its `limit` (the REST default when not given) times that; aliases
//! and fragments count each time they are used. Introspection fields
//! (`__schema`, `__type`, `__typename`) read only the schema and count nothing.

use async_graphql::parser::types::{ExecutableDocument, OperationDefinition, OperationType, Selection, SelectionSet};
use async_graphql::{Name, Value};
use serde_json::{Map, Value as Json};

use crate::query::DEFAULT_LIMIT;

/// The bounds a document must keep.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_depth: usize,
    pub max_complexity: u64,
}

/// Why a document was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum TooComplex {
    Depth(usize),
    Complexity(u64),
}

impl TooComplex {
    pub fn message(&self, limits: &Limits) -> String {
        match self {
            TooComplex::Depth(_) => format!("The query is nested deeper than {} levels", limits.max_depth),
            TooComplex::Complexity(cost) => {
                format!("The query costs {cost}, over the limit of {}", limits.max_complexity)
            }
        }
    }
}

/// Checks `operation` of `document` against `limits`.
pub fn check(
    document: &ExecutableDocument,
    operation: &OperationDefinition,
    variables: &Map<String, Json>,
    limits: &Limits,
) -> Result<(), TooComplex> {
    let walk = Walk {
        document,
        operation,
        variables,
        limits,
    };
    let root_lists = operation.ty == OperationType::Query;
    let cost = walk.cost(&operation.selection_set.node, 1, root_lists, &mut Vec::new())?;
    if cost > limits.max_complexity {
        return Err(TooComplex::Complexity(cost));
    }
    Ok(())
}

struct Walk<'a> {
    document: &'a ExecutableDocument,
    operation: &'a OperationDefinition,
    variables: &'a Map<String, Json>,
    limits: &'a Limits,
}

impl Walk<'_> {
    /// The cost of `set` at `depth`; `root_lists`: its fields are the
    /// query's type fields, lists costing their `limit`. `fragments`: those
    /// being expanded (a cycle is left to validation and costs nothing more).
    fn cost<'d>(
        &'d self,
        set: &'d SelectionSet,
        depth: usize,
        root_lists: bool,
        fragments: &mut Vec<&'d Name>,
    ) -> Result<u64, TooComplex> {
        let mut total: u64 = 0;
        for item in &set.items {
            let cost = match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    if field.name.node.starts_with("__") {
                        continue;
                    }
                    if depth > self.limits.max_depth {
                        return Err(TooComplex::Depth(depth));
                    }
                    let inner = self.cost(&field.selection_set.node, depth + 1, false, fragments)?;
                    let own = inner.saturating_add(1);
                    if root_lists && field.name.node != "_entity" {
                        let limit = field.get_argument("limit").map(|value| {
                            let value = value.node.clone().into_const_with(|name| self.variable(&name));
                            limit_of(&value.unwrap_or_default())
                        });
                        own.saturating_mul(limit.unwrap_or(DEFAULT_LIMIT as u64))
                    } else {
                        own
                    }
                }
                Selection::InlineFragment(inline) => {
                    self.cost(&inline.node.selection_set.node, depth, root_lists, fragments)?
                }
                Selection::FragmentSpread(spread) => {
                    let name = &spread.node.fragment_name.node;
                    match self.document.fragments.get(name) {
                        Some(fragment) if !fragments.contains(&name) => {
                            fragments.push(name);
                            let cost = self.cost(&fragment.node.selection_set.node, depth, root_lists, fragments);
                            fragments.pop();
                            cost?
                        }
                        _ => 0,
                    }
                }
            };
            total = total.saturating_add(cost);
            if total > self.limits.max_complexity {
                return Err(TooComplex::Complexity(total));
            }
        }
        Ok(total)
    }

    /// Variable `name`'s value: the request's, else its definition's default.
    fn variable(&self, name: &Name) -> Result<Value, std::convert::Infallible> {
        let given = self
            .variables
            .get(name.as_str())
            .cloned()
            .and_then(|json| Value::from_json(json).ok());
        Ok(given
            .or_else(|| {
                let definition = self
                    .operation
                    .variable_definitions
                    .iter()
                    .find(|definition| definition.node.name.node == *name)?;
                definition.node.default_value().cloned()
            })
            .unwrap_or_default())
    }
}

/// A `limit` argument's number, as the REST list reads it: what is not a
/// positive number is the default.
fn limit_of(value: &Value) -> u64 {
    let number = match value {
        Value::Number(number) => number.as_u64(),
        _ => None,
    };
    number.filter(|n| *n > 0).unwrap_or(DEFAULT_LIMIT as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(query: &str) -> Result<(), TooComplex> {
        let document = async_graphql::parser::parse_query(query).unwrap();
        let (_, operation) = document.operations.iter().next().unwrap();
        let limits = Limits {
            max_depth: 4,
            max_complexity: 1000,
        };
        check(&document, &operation.node, &Map::new(), &limits)
    }

    #[test]
    fn list_fields_cost_their_limit_and_aliases_count_each_time() {
        assert_eq!(checked("{ book(limit: 10) { _id title { string } } }"), Ok(()));
        assert_eq!(checked("{ book { _id } }"), Ok(()));
        assert_eq!(
            checked("{ a: book(limit: 200) { _id } b: book(limit: 200) { _id } c: book(limit: 200) { _id } }"),
            Err(TooComplex::Complexity(1200))
        );
        assert_eq!(
            checked("{ _entity(_id: \"x\") { a { entity { b { entity { _id } } } } } }"),
            Err(TooComplex::Depth(5))
        );
        assert_eq!(
            checked("{ __schema { types { fields { type { ofType { ofType { name } } } } } } }"),
            Ok(())
        );
    }
}
