//! Formulas: computed property values in reverse Polish notation, as in the
//! original Entu. Pure code: `Formula::parse` turns the text into tokens and
//! `Formula::evaluate` runs them against values supplied by the caller.
//! The grammar and every operator are described in the guide: `docs/guide/src/concepts/formulas.md` and
//! `formula-operators.md` beside it.
//!
//! Evaluation walks the tokens left to right over one stack of *slots*. A slot
//! is a list of values, because properties are multi-valued: a literal pushes a
//! slot of one value, a field reference pushes a slot with all of its values
//! (possibly none), and an operator pops slots and pushes one result slot.
//! Reducers (`CONCAT`, `SUM`, `IN`, ...) pop the whole stack and flatten it;
//! the other operators pop a fixed number of slots. Any error (stack underflow,
//! a value of the wrong type, division by zero, a non-finite number, more or
//! fewer than one slot left at the end) makes the whole formula give no value.

pub mod context;
mod eval;
pub mod operators;
mod parse;
#[cfg(test)]
mod test_support;
pub mod worker;

use std::cmp::Ordering;

use serde_json::{Value as Json, json};

use crate::model::json::number_json;
use crate::model::{API_KEY_PROPERTY, LOGIN_PROPERTY};
use operators::Operator;

/// One value a formula reads or produces.
#[derive(Debug, Clone, PartialEq)]
pub enum FormulaValue {
    Number(f64),
    Text(String),
    Boolean(bool),
}

impl FormulaValue {
    /// The value as text, the way `CONCAT` joins it: whole numbers without a
    /// fraction, other numbers in plain decimal notation, `true`/`false`.
    pub fn to_text(&self) -> String {
        match self {
            FormulaValue::Number(number) if *number == 0.0 => "0".to_owned(), // also -0
            FormulaValue::Number(number) => number.to_string(),
            FormulaValue::Text(text) => text.clone(),
            FormulaValue::Boolean(flag) => flag.to_string(),
        }
    }

    /// The value as the field object of a property value: `{"number": 3}`,
    /// `{"string": "a"}` or `{"boolean": true}`.
    pub fn to_value_json(&self) -> Json {
        match self {
            FormulaValue::Number(number) => json!({ "number": number_json(*number) }),
            FormulaValue::Text(text) => json!({ "string": text }),
            FormulaValue::Boolean(flag) => json!({ "boolean": flag }),
        }
    }

    /// What a formula sees of a value object of an entity document, in the
    /// original's order of precedence: `boolean`, `number` (so a counter gives
    /// its number), `datetime` (as stored), `date` (`YYYY-MM-DD`), `string`
    /// (so a reference carrying its target's name gives the name), `reference`
    /// (the target's id), `filename`. Anything else gives nothing.
    pub fn from_value_json(value: &Json) -> Option<FormulaValue> {
        let field = |name: &str| value.get(name).filter(|v| !v.is_null());
        if let Some(flag) = field("boolean").and_then(Json::as_bool) {
            return Some(FormulaValue::Boolean(flag));
        }
        if let Some(number) = field("number").and_then(Json::as_f64) {
            return Some(FormulaValue::Number(number));
        }
        if let Some(at) = field("datetime").and_then(Json::as_str) {
            return Some(FormulaValue::Text(at.to_owned()));
        }
        if let Some(date) = field("date").and_then(Json::as_str) {
            return Some(FormulaValue::Text(date.get(..10).unwrap_or(date).to_owned()));
        }
        ["string", "reference", "filename"]
            .into_iter()
            .find_map(|name| field(name).and_then(Json::as_str))
            .map(|text| FormulaValue::Text(text.to_owned()))
    }

    fn as_number(&self) -> Option<f64> {
        match self {
            FormulaValue::Number(number) => Some(*number),
            _ => None,
        }
    }

    /// Strict equality: values of different kinds are never equal (`1` is not `"1"`).
    fn same_as(&self, other: &FormulaValue) -> bool {
        match (self, other) {
            (FormulaValue::Number(a), FormulaValue::Number(b)) => a == b,
            (FormulaValue::Text(a), FormulaValue::Text(b)) => a == b,
            (FormulaValue::Boolean(a), FormulaValue::Boolean(b)) => a == b,
            _ => false,
        }
    }

    /// Order of two numbers or two texts; `None` for any other pair.
    fn order(&self, other: &FormulaValue) -> Option<Ordering> {
        match (self, other) {
            (FormulaValue::Number(a), FormulaValue::Number(b)) => a.partial_cmp(b),
            (FormulaValue::Text(a), FormulaValue::Text(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// A field reference: where the values pushed by a token come from.
/// `entity_type: None` stands for `*` (any type); `prop` may be `_id` for the
/// ids of the related entities.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FieldRef {
    /// `prop`: the entity's own values of `prop`.
    Own(String),
    /// `_id`: the entity's own id.
    Id,
    /// `_child.<type|*>.<prop>`: values of the entity's children.
    Child { entity_type: Option<String>, prop: String },
    /// `_referrer.<type|*>.<prop>`: values of entities whose reference
    /// properties point at the entity.
    Referrer { entity_type: Option<String>, prop: String },
    /// `<via>.<type|*>.<prop>`: values of the entities that the entity's
    /// reference property `via` points at (`_parent` reaches the parents).
    Reference {
        via: String,
        entity_type: Option<String>,
        prop: String,
    },
}

impl FieldRef {
    /// Whether the reference reads a login credential, which formulas never see.
    pub fn reads_credentials(&self) -> bool {
        let secret = |name: &str| name == LOGIN_PROPERTY || name == API_KEY_PROPERTY;
        match self {
            FieldRef::Own(prop) => secret(prop),
            FieldRef::Id => false,
            FieldRef::Child { prop, .. } | FieldRef::Referrer { prop, .. } => secret(prop),
            FieldRef::Reference { via, prop, .. } => secret(via) || secret(prop),
        }
    }
}

/// Why a formula text could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormulaError {
    #[error("the formula is empty")]
    Empty,
    #[error("the quoted literal at byte {0} is not closed")]
    UnterminatedLiteral(usize),
    #[error("the quoted literal closed at byte {0} is not followed by whitespace")]
    TextAfterLiteral(usize),
    #[error("{0:?} is neither an operator, a literal nor a field reference")]
    InvalidToken(String),
}

/// The values one token pushes or an operator pops: all values of a property.
type Slot = Vec<FormulaValue>;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Literal(FormulaValue),
    Field(FieldRef),
    Operator(Operator),
}

/// A parsed formula.
#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    tokens: Vec<Token>,
}

impl Formula {
    /// The field references the formula reads, each once, in order of first
    /// use; references to credentials are left out (they never give values).
    pub fn references(&self) -> Vec<FieldRef> {
        let mut found: Vec<FieldRef> = Vec::new();
        for token in &self.tokens {
            if let Token::Field(field) = token
                && !field.reads_credentials()
                && !found.contains(field)
            {
                found.push(field.clone());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::test_support::text;
    use super::*;
    use FormulaValue::{Boolean, Number};

    #[test]
    fn value_objects_are_read_in_the_original_order_of_precedence() {
        let read = |value: Json| FormulaValue::from_value_json(&value);
        assert_eq!(
            read(json!({"_id": "v", "string": "INV-42", "number": 42})),
            Some(Number(42.0))
        );
        assert_eq!(read(json!({"boolean": false})), Some(Boolean(false)));
        assert_eq!(
            read(json!({"date": "2026-01-02T00:00:00.000Z"})),
            Some(text("2026-01-02"))
        );
        assert_eq!(
            read(json!({"datetime": "2026-01-02T03:04:05.000Z"})),
            Some(text("2026-01-02T03:04:05.000Z"))
        );
        assert_eq!(read(json!({"reference": "abc", "string": "Acme"})), Some(text("Acme")));
        assert_eq!(read(json!({"reference": "abc"})), Some(text("abc")));
        assert_eq!(read(json!({"filename": "a.pdf", "filesize": 3})), Some(text("a.pdf")));
        assert_eq!(read(json!({"_id": "v"})), None);
    }

    #[test]
    fn results_are_written_as_value_fields() {
        assert_eq!(Number(3.0).to_value_json(), json!({"number": 3}));
        assert_eq!(Number(0.5).to_value_json(), json!({"number": 0.5}));
        assert_eq!(text("a").to_value_json(), json!({"string": "a"}));
        assert_eq!(Boolean(true).to_value_json(), json!({"boolean": true}));
    }
}
