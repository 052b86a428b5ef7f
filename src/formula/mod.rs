//! Formulas: computed property values in reverse Polish notation, as in the
//! original Entu. Pure code: `Formula::parse` turns the text into tokens and
//! `Formula::evaluate` runs them against values supplied by the caller.
//! The grammar and every operator are described in `docs/formulas.md`.
//!
//! Evaluation walks the tokens left to right over one stack of *slots*. A slot
//! is a list of values, because properties are multi-valued: a literal pushes a
//! slot of one value, a field reference pushes a slot with all of its values
//! (possibly none), and an operator pops slots and pushes one result slot.
//! Reducers (`CONCAT`, `SUM`, `IN`, ...) pop the whole stack and flatten it;
//! the other operators pop a fixed number of slots. Any error (stack underflow,
//! a value of the wrong type, division by zero, a non-finite number, more or
//! fewer than one slot left at the end) makes the whole formula give no value.

pub mod worker;

use std::cmp::Ordering;

use serde_json::{Value as Json, json};

use crate::model::json::number_json;
use crate::model::value::is_valid_property_name;
use crate::model::{API_KEY_PROPERTY, LOGIN_PROPERTY};

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

    fn parse(token: &str) -> Result<FieldRef, FormulaError> {
        let invalid = || FormulaError::InvalidToken(token.to_owned());
        let name = |part: &str| {
            if is_valid_property_name(part) {
                Ok(part.to_owned())
            } else {
                Err(invalid())
            }
        };
        let parts: Vec<&str> = token.split('.').collect();
        match parts.as_slice() {
            ["_id"] => Ok(FieldRef::Id),
            ["_child" | "_referrer"] => Err(invalid()),
            [prop] => Ok(FieldRef::Own(name(prop)?)),
            [head, entity_type, prop] => {
                let entity_type = match *entity_type {
                    "*" => None,
                    named => Some(name(named)?),
                };
                let prop = name(prop)?;
                Ok(match *head {
                    "_child" => FieldRef::Child { entity_type, prop },
                    "_referrer" => FieldRef::Referrer { entity_type, prop },
                    via => FieldRef::Reference {
                        via: name(via)?,
                        entity_type,
                        prop,
                    },
                })
            }
            _ => Err(invalid()),
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

/// The operators, by their keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Concat,
    ConcatWs,
    Sum,
    Subtract,
    Multiply,
    Divide,
    Count,
    Average,
    Min,
    Max,
    Abs,
    Round,
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    In,
    Nin,
    Exists,
    If,
    When,
}

/// How many slots an operator pops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// The whole stack, flattened into one list of values.
    Stack,
    /// That many slots from the top of the stack.
    Fixed(usize),
}

const OPERATORS: [(&str, Operator); 23] = [
    ("CONCAT", Operator::Concat),
    ("CONCAT_WS", Operator::ConcatWs),
    ("SUM", Operator::Sum),
    ("SUBTRACT", Operator::Subtract),
    ("MULTIPLY", Operator::Multiply),
    ("DIVIDE", Operator::Divide),
    ("COUNT", Operator::Count),
    ("AVERAGE", Operator::Average),
    ("MIN", Operator::Min),
    ("MAX", Operator::Max),
    ("ABS", Operator::Abs),
    ("ROUND", Operator::Round),
    ("EQ", Operator::Eq),
    ("NE", Operator::Ne),
    ("GT", Operator::Gt),
    ("GTE", Operator::Gte),
    ("LT", Operator::Lt),
    ("LTE", Operator::Lte),
    ("IN", Operator::In),
    ("NIN", Operator::Nin),
    ("EXISTS", Operator::Exists),
    ("IF", Operator::If),
    ("WHEN", Operator::When),
];

type Slot = Vec<FormulaValue>;

impl Operator {
    /// The operator with this keyword (upper case, exactly).
    pub fn parse(keyword: &str) -> Option<Operator> {
        OPERATORS.iter().find(|(name, _)| *name == keyword).map(|(_, op)| *op)
    }

    pub fn keyword(self) -> &'static str {
        OPERATORS
            .iter()
            .find(|(_, op)| *op == self)
            .map_or("", |(name, _)| name)
    }

    pub fn arity(self) -> Arity {
        use Operator::*;
        match self {
            Concat | ConcatWs | Sum | Subtract | Multiply | Divide | Count | Average | Min | Max | In | Nin => {
                Arity::Stack
            }
            Abs | Exists => Arity::Fixed(1),
            Round | Eq | Ne | Gt | Gte | Lt | Lte | When => Arity::Fixed(2),
            If => Arity::Fixed(3),
        }
    }

    /// Applies the operator to its popped slots (bottom first); `None` is an error.
    fn apply(self, mut args: Vec<Slot>) -> Option<Slot> {
        use Operator::*;
        let one = |value: FormulaValue| Some(vec![value]);
        let number = |value: f64| value.is_finite().then(|| vec![FormulaValue::Number(value)]);
        match self {
            Concat => {
                let values = flatten(args);
                if values.is_empty() {
                    return None;
                }
                one(FormulaValue::Text(values.iter().map(FormulaValue::to_text).collect()))
            }
            ConcatWs => {
                let mut values = flatten(args);
                let separator = values.pop()?.to_text();
                if values.is_empty() {
                    return None;
                }
                let texts: Vec<String> = values.iter().map(FormulaValue::to_text).collect();
                one(FormulaValue::Text(texts.join(&separator)))
            }
            Sum => number(numbers(flatten(args))?.iter().sum()),
            Subtract => {
                let values = numbers(flatten(args))?;
                number(values[1..].iter().fold(values[0], |acc, v| acc - v))
            }
            Multiply => number(numbers(flatten(args))?.iter().product()),
            Divide => {
                let values = numbers(flatten(args))?;
                if values[1..].contains(&0.0) {
                    return None;
                }
                number(values[1..].iter().fold(values[0], |acc, v| acc / v))
            }
            Count => number(flatten(args).len() as f64),
            Average => {
                let values = numbers(flatten(args))?;
                number(values.iter().sum::<f64>() / values.len() as f64)
            }
            Min => extreme(flatten(args), Ordering::Less),
            Max => extreme(flatten(args), Ordering::Greater),
            Abs => Some(
                numbers(args.pop()?)?
                    .into_iter()
                    .map(|v| FormulaValue::Number(v.abs()))
                    .collect(),
            ),
            Round => {
                let decimals = single(args.pop()?)?.as_number()?;
                if !(0.0..=100.0).contains(&decimals) || decimals.fract() != 0.0 {
                    return None;
                }
                let values = numbers(args.pop()?)?;
                let rounded: Option<Slot> = values
                    .into_iter()
                    .map(|v| round_half_away(v, decimals as usize).map(FormulaValue::Number))
                    .collect();
                rounded
            }
            Eq | Ne => {
                let right = args.pop()?;
                let left = args.pop()?;
                if left.is_empty() || right.is_empty() {
                    return None;
                }
                let found = |l: &FormulaValue| right.iter().any(|r| l.same_as(r));
                let result = if self == Eq {
                    left.iter().any(found)
                } else {
                    left.iter().any(|l| !found(l))
                };
                one(FormulaValue::Boolean(result))
            }
            Gt | Gte | Lt | Lte => {
                let right = args.pop()?;
                let left = args.pop()?;
                let holds = |order: Ordering| match self {
                    Gt => order == Ordering::Greater,
                    Gte => order != Ordering::Less,
                    Lt => order == Ordering::Less,
                    _ => order != Ordering::Greater,
                };
                let mut comparable = false;
                for l in &left {
                    for r in &right {
                        if let Some(order) = l.order(r) {
                            comparable = true;
                            if holds(order) {
                                return one(FormulaValue::Boolean(true));
                            }
                        }
                    }
                }
                comparable.then(|| vec![FormulaValue::Boolean(false)])
            }
            In | Nin => {
                if args.is_empty() {
                    return None;
                }
                let needle = args.remove(0);
                let haystack = flatten(args);
                let found = needle.iter().any(|n| haystack.iter().any(|h| n.same_as(h)));
                one(FormulaValue::Boolean(found == (self == In)))
            }
            Exists => one(FormulaValue::Boolean(!args.pop()?.is_empty())),
            If => {
                let otherwise = args.pop()?;
                let then = args.pop()?;
                let chosen = if condition(args.pop()?)? { then } else { otherwise };
                (!chosen.is_empty()).then_some(chosen)
            }
            When => {
                let then = args.pop()?;
                (condition(args.pop()?)? && !then.is_empty()).then_some(then)
            }
        }
    }
}

fn flatten(slots: Vec<Slot>) -> Slot {
    slots.into_iter().flatten().collect()
}

/// All values as numbers; `None` when there are none or any is not a number.
fn numbers(values: Slot) -> Option<Vec<f64>> {
    if values.is_empty() {
        return None;
    }
    values.iter().map(FormulaValue::as_number).collect()
}

/// The only item of a list.
fn single<T>(mut items: Vec<T>) -> Option<T> {
    if items.len() == 1 { items.pop() } else { None }
}

/// A condition is exactly one boolean.
fn condition(slot: Slot) -> Option<bool> {
    match single(slot)? {
        FormulaValue::Boolean(flag) => Some(flag),
        _ => None,
    }
}

/// The smallest (`Less`) or largest (`Greater`) value; all numbers or all texts.
fn extreme(values: Slot, wanted: Ordering) -> Option<Slot> {
    let mut best = values.first()?;
    best.order(best)?; // only numbers and texts have an order
    for value in &values[1..] {
        if value.order(best)? == wanted {
            best = value;
        }
    }
    Some(vec![best.clone()])
}

/// Rounds to `decimals` places, halves away from zero, on the exact binary
/// value (as JavaScript's `toFixed`: 2.5 → 3, 1.005 → 1.00 because 1.005 is
/// stored as 1.00499…).
fn round_half_away(value: f64, decimals: usize) -> Option<f64> {
    if !value.is_finite() {
        return None;
    }
    if value.abs() >= 1e21 {
        return Some(value); // no fractional digits are stored at this size
    }
    // f64 values have at most 1074 fractional digits, so this expansion is exact.
    let exact = format!("{:.1100}", value.abs());
    let (whole, fraction) = exact.split_once('.')?;
    let mut digits: Vec<u8> = whole.bytes().chain(fraction.bytes().take(decimals)).collect();
    if fraction.as_bytes()[decimals] >= b'5' {
        let mut carry = true;
        for digit in digits.iter_mut().rev() {
            if *digit == b'9' {
                *digit = b'0';
            } else {
                *digit += 1;
                carry = false;
                break;
            }
        }
        if carry {
            digits.insert(0, b'1');
        }
    }
    let split = digits.len() - decimals;
    let text = format!(
        "{}.{}",
        std::str::from_utf8(&digits[..split]).ok()?,
        std::str::from_utf8(&digits[split..]).ok()?
    );
    let magnitude: f64 = text.trim_end_matches('.').parse().ok()?;
    Some(if value < 0.0 { -magnitude } else { magnitude })
}

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
    /// Parses a formula; a formula not ending in an operator gets `CONCAT` appended.
    pub fn parse(text: &str) -> Result<Formula, FormulaError> {
        let mut tokens = Vec::new();
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let mut i = 0;
        while i < chars.len() {
            let (start, c) = chars[i];
            if c.is_whitespace() {
                i += 1;
                continue;
            }
            if c == '"' || c == '\'' {
                let mut literal = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(FormulaError::UnterminatedLiteral(start)),
                        Some(&(_, '\\')) if chars.get(i + 1).map(|&(_, n)| n) == Some(c) => {
                            literal.push(c);
                            i += 2;
                        }
                        Some(&(end, q)) if q == c => {
                            i += 1;
                            if chars.get(i).is_some_and(|&(_, n)| !n.is_whitespace()) {
                                return Err(FormulaError::TextAfterLiteral(end));
                            }
                            break;
                        }
                        Some(&(_, other)) => {
                            literal.push(other);
                            i += 1;
                        }
                    }
                }
                tokens.push(Token::Literal(FormulaValue::Text(literal)));
                continue;
            }
            let end = chars[i..]
                .iter()
                .find(|(_, n)| n.is_whitespace())
                .map_or(text.len(), |&(at, _)| at);
            let word = &text[start..end];
            i += word.chars().count();
            tokens.push(Formula::word(word)?);
        }
        match tokens.last() {
            None => return Err(FormulaError::Empty),
            Some(Token::Operator(_)) => {}
            Some(_) => tokens.push(Token::Operator(Operator::Concat)),
        }
        Ok(Formula { tokens })
    }

    fn word(word: &str) -> Result<Token, FormulaError> {
        if let Some(op) = Operator::parse(word) {
            return Ok(Token::Operator(op));
        }
        match word {
            "true" => return Ok(Token::Literal(FormulaValue::Boolean(true))),
            "false" => return Ok(Token::Literal(FormulaValue::Boolean(false))),
            _ => {}
        }
        if is_number_literal(word) {
            return match word.parse::<f64>() {
                Ok(number) if number.is_finite() => Ok(Token::Literal(FormulaValue::Number(number))),
                _ => Err(FormulaError::InvalidToken(word.to_owned())),
            };
        }
        FieldRef::parse(word).map(Token::Field)
    }

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

    /// Evaluates the formula. `values` gives every value of a field reference
    /// (never called for credentials). The result is the one value of the
    /// final slot; `None` on any error, when the result is empty, and when it
    /// holds several values (see [`Formula::evaluate_all`]).
    pub fn evaluate(&self, values: &dyn Fn(&FieldRef) -> Vec<FormulaValue>) -> Option<FormulaValue> {
        single(self.evaluate_all(values))
    }

    /// Evaluates the formula to all values of the final slot: usually one, or
    /// several when the formula ends in a per-value operator over a
    /// multi-valued field (`_child.*.delta ABS`). Empty on any error.
    pub fn evaluate_all(&self, values: &dyn Fn(&FieldRef) -> Vec<FormulaValue>) -> Vec<FormulaValue> {
        self.run(values).unwrap_or_default()
    }

    fn run(&self, values: &dyn Fn(&FieldRef) -> Vec<FormulaValue>) -> Option<Slot> {
        let mut stack: Vec<Slot> = Vec::new();
        for token in &self.tokens {
            let slot = match token {
                Token::Literal(value) => vec![value.clone()],
                Token::Field(field) if field.reads_credentials() => Vec::new(),
                Token::Field(field) => values(field),
                Token::Operator(op) => {
                    let args = match op.arity() {
                        Arity::Stack => std::mem::take(&mut stack),
                        Arity::Fixed(n) => stack.split_off(stack.len().checked_sub(n)?),
                    };
                    op.apply(args)?
                }
            };
            stack.push(slot);
        }
        let result = single(stack)?;
        let finite = result.iter().all(|v| v.as_number().is_none_or(f64::is_finite));
        (!result.is_empty() && finite).then_some(result)
    }
}

/// `-?digits(.digits)?`: the only spelling of a numeric literal.
fn is_number_literal(word: &str) -> bool {
    let unsigned = word.strip_prefix('-').unwrap_or(word);
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, "0"));
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && digits(fraction)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use FormulaValue::{Boolean, Number};

    fn text(value: &str) -> FormulaValue {
        FormulaValue::Text(value.to_owned())
    }

    fn numbers(values: &[f64]) -> Vec<FormulaValue> {
        values.iter().map(|v| Number(*v)).collect()
    }

    fn texts(values: &[&str]) -> Vec<FormulaValue> {
        values.iter().map(|v| text(v)).collect()
    }

    /// Own properties come from `fields`; every other reference has no values.
    fn lookup(fields: &[(&str, Vec<FormulaValue>)]) -> impl Fn(&FieldRef) -> Vec<FormulaValue> {
        move |field| match field {
            FieldRef::Own(name) => fields
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, values)| values.clone())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    fn eval_with(formula: &str, fields: &[(&str, Vec<FormulaValue>)]) -> Option<FormulaValue> {
        Formula::parse(formula)
            .expect("formula parses")
            .evaluate(&lookup(fields))
    }

    fn eval(formula: &str) -> Option<FormulaValue> {
        eval_with(formula, &[])
    }

    // Parsing

    #[test]
    fn tokens_are_split_on_any_whitespace() {
        let fields = [("first", texts(&["John"])), ("last", texts(&["Doe"]))];
        assert_eq!(
            eval_with("first\t\" \"\n last   CONCAT", &fields),
            Some(text("John Doe"))
        );
    }

    #[test]
    fn quoted_literals_keep_their_spaces() {
        assert_eq!(eval("\"a  b\" ' c d '"), Some(text("a  b c d ")));
    }

    #[test]
    fn single_quoted_literal_may_hold_double_quotes_and_the_reverse() {
        assert_eq!(eval(r#"'say "hi"' " it's""#), Some(text(r#"say "hi" it's"#)));
    }

    #[test]
    fn backslash_escapes_the_closing_quote_only() {
        assert_eq!(eval(r#""a \"b\" c\d""#), Some(text(r#"a "b" c\d"#)));
    }

    #[test]
    fn empty_literal_is_an_empty_string() {
        assert_eq!(eval("''"), Some(text("")));
    }

    #[test]
    fn unterminated_literal_is_a_parse_error() {
        assert_eq!(Formula::parse("name ' x"), Err(FormulaError::UnterminatedLiteral(5)));
    }

    #[test]
    fn text_glued_to_a_literal_is_a_parse_error() {
        assert!(matches!(Formula::parse("'a'b"), Err(FormulaError::TextAfterLiteral(_))));
        assert!(matches!(Formula::parse("a'b'"), Err(FormulaError::InvalidToken(_))));
    }

    #[test]
    fn empty_formula_is_a_parse_error() {
        assert_eq!(Formula::parse(""), Err(FormulaError::Empty));
        assert_eq!(Formula::parse(" \n\t "), Err(FormulaError::Empty));
    }

    #[test]
    fn malformed_reference_is_a_parse_error() {
        for bad in [
            "a.b",
            "a.b.c.d",
            "_child",
            "_referrer",
            "a..b",
            "a.*.",
            ".*.b",
            "pri$e",
            "a.b*.c",
        ] {
            assert!(
                matches!(Formula::parse(bad), Err(FormulaError::InvalidToken(_))),
                "{bad} should not parse"
            );
        }
    }

    #[test]
    fn every_reference_form_parses() {
        let formula =
            Formula::parse("name _id _child.*.price _referrer.invoice.total customer.person.name _parent.*._id")
                .unwrap();
        assert_eq!(
            formula.references(),
            vec![
                FieldRef::Own("name".into()),
                FieldRef::Id,
                FieldRef::Child {
                    entity_type: None,
                    prop: "price".into()
                },
                FieldRef::Referrer {
                    entity_type: Some("invoice".into()),
                    prop: "total".into()
                },
                FieldRef::Reference {
                    via: "customer".into(),
                    entity_type: Some("person".into()),
                    prop: "name".into()
                },
                FieldRef::Reference {
                    via: "_parent".into(),
                    entity_type: None,
                    prop: "_id".into()
                },
            ]
        );
    }

    #[test]
    fn references_are_listed_once_in_order_of_first_use() {
        let formula = Formula::parse("b a b 'a' 1 a").unwrap();
        assert_eq!(
            formula.references(),
            vec![FieldRef::Own("b".into()), FieldRef::Own("a".into())]
        );
    }

    #[test]
    fn numeric_literals_are_plain_decimals() {
        assert_eq!(eval("-2 45.67 1.50 SUM"), Some(Number(45.17)));
        // Other spellings are property names, or not valid at all.
        assert_eq!(
            Formula::parse("1e3").unwrap().references(),
            vec![FieldRef::Own("1e3".into())]
        );
        assert!(Formula::parse(".5").is_err());
    }

    #[test]
    fn boolean_literals_push_booleans() {
        assert_eq!(eval("true false NE"), Some(Boolean(true)));
    }

    #[test]
    fn operator_keywords_are_case_sensitive() {
        let fields = [("concat", texts(&["field"]))];
        assert_eq!(eval_with("'a' concat", &fields), Some(text("afield")));
        assert_eq!(Operator::parse("SUM"), Some(Operator::Sum));
        assert_eq!(Operator::Sum.keyword(), "SUM");
        assert_eq!(Operator::If.arity(), Arity::Fixed(3));
    }

    // Implicit CONCAT and the final stack

    #[test]
    fn formula_not_ending_in_an_operator_gets_implicit_concat() {
        assert_eq!(eval("1 2"), Some(text("12")));
        assert_eq!(eval("1 2 SUM"), Some(Number(3.0)));
        assert_eq!(eval("1 2 SUM 'x'"), Some(text("3x")));
    }

    #[test]
    fn slots_left_over_at_the_end_give_no_value() {
        assert_eq!(eval("1 2 3 EQ"), None);
    }

    #[test]
    fn stack_underflow_gives_no_value() {
        for formula in ["1 ROUND", "1 EQ", "1 2 IF", "WHEN", "ABS", "EXISTS"] {
            assert_eq!(eval(formula), None, "{formula}");
        }
    }

    #[test]
    fn non_finite_result_gives_no_value() {
        let fields = [("big", numbers(&[1e308]))];
        assert_eq!(eval_with("big 10 MULTIPLY", &fields), None);
        assert_eq!(eval_with("big big SUM", &fields), None);
    }

    #[test]
    fn multi_valued_result_is_only_given_whole_by_evaluate_all() {
        let formula = Formula::parse("delta ABS").unwrap();
        let fields = [("delta", numbers(&[-1.0, 2.0]))];
        assert_eq!(formula.evaluate_all(&lookup(&fields)), numbers(&[1.0, 2.0]));
        assert_eq!(formula.evaluate(&lookup(&fields)), None);
        assert!(formula.evaluate_all(&lookup(&[])).is_empty());
    }

    #[test]
    fn field_references_push_every_value_from_the_lookup() {
        let formula = Formula::parse("_id _child.*.price SUM _referrer.*._id COUNT customer.*.name").unwrap();
        let values = |field: &FieldRef| match field {
            FieldRef::Id => texts(&["e1"]),
            FieldRef::Child { .. } => numbers(&[1.0, 2.0]),
            FieldRef::Referrer { .. } => texts(&["r1", "r2", "r3"]),
            FieldRef::Reference { .. } => texts(&["Acme", "Bolt"]),
            FieldRef::Own(_) => Vec::new(),
        };
        // SUM swallows the whole stack, text id included, and fails.
        assert_eq!(formula.evaluate(&values), None);
        let count = Formula::parse("_id _referrer.*._id COUNT customer.*.name").unwrap();
        assert_eq!(count.evaluate(&values), Some(text("4AcmeBolt")));
        let sum = Formula::parse("_child.*.price SUM").unwrap();
        assert_eq!(sum.evaluate(&values), Some(Number(3.0)));
    }

    // Credentials

    #[test]
    fn credentials_give_no_values_even_when_the_lookup_has_some() {
        let asked = RefCell::new(Vec::new());
        let values = |field: &FieldRef| {
            asked.borrow_mut().push(field.clone());
            texts(&["secret"])
        };
        for formula in [
            "service_api_key",
            "service_user",
            "_child.*.service_user",
            "_referrer.person.service_api_key",
            "service_user.*.name",
            "owner.*.service_api_key",
        ] {
            let parsed = Formula::parse(formula).unwrap();
            assert_eq!(parsed.evaluate(&values), None, "{formula}");
            assert!(parsed.references().is_empty(), "{formula}");
        }
        assert!(asked.borrow().is_empty());
        let count = Formula::parse("name service_api_key COUNT").unwrap();
        assert_eq!(count.evaluate(&values), Some(Number(1.0)));
    }

    // CONCAT

    #[test]
    fn concat_joins_all_values_without_separator() {
        assert_eq!(eval("'a' 1 true 2.5 CONCAT"), Some(text("a1true2.5")));
    }

    #[test]
    fn concat_flattens_multi_valued_fields() {
        let fields = [("tags", texts(&["x", "y", "z"]))];
        assert_eq!(eval_with("'<' tags '>' CONCAT", &fields), Some(text("<xyz>")));
    }

    #[test]
    fn concat_of_nothing_gives_no_value() {
        assert_eq!(eval("missing CONCAT"), None);
        assert_eq!(eval("missing"), None);
        assert_eq!(eval("'a' missing"), Some(text("a")));
    }

    #[test]
    fn numbers_are_written_as_text_without_a_needless_fraction() {
        assert_eq!(Number(3.0).to_text(), "3");
        assert_eq!(Number(-0.0).to_text(), "0");
        assert_eq!(Number(0.1).to_text(), "0.1");
        assert_eq!(Number(-1.25).to_text(), "-1.25");
    }

    // CONCAT_WS

    #[test]
    fn concat_ws_joins_with_the_last_value() {
        let fields = [("first", texts(&["John"])), ("last", texts(&["Doe"]))];
        assert_eq!(eval_with("first last ' ' CONCAT_WS", &fields), Some(text("John Doe")));
    }

    #[test]
    fn concat_ws_can_be_chained() {
        let fields = [("artist", texts(&["A", "B"])), ("title", texts(&["T"]))];
        assert_eq!(
            eval_with("artist ', ' CONCAT_WS title ' - ' CONCAT_WS", &fields),
            Some(text("A, B - T"))
        );
    }

    #[test]
    fn concat_ws_with_only_a_separator_gives_no_value() {
        assert_eq!(eval("missing ', ' CONCAT_WS"), None);
        assert_eq!(eval("CONCAT_WS"), None);
    }

    // Arithmetic

    #[test]
    fn sum_adds_all_values() {
        let fields = [("price", numbers(&[1.5, 2.5]))];
        assert_eq!(eval_with("price 6 SUM", &fields), Some(Number(10.0)));
    }

    #[test]
    fn sum_of_nothing_gives_no_value() {
        assert_eq!(eval("missing SUM"), None);
    }

    #[test]
    fn sum_with_a_non_number_gives_no_value() {
        assert_eq!(eval("1 '2' SUM"), None);
        assert_eq!(eval("1 true SUM"), None);
    }

    #[test]
    fn subtract_takes_the_rest_from_the_first_value() {
        assert_eq!(eval("10 3 2 SUBTRACT"), Some(Number(5.0)));
        assert_eq!(eval("7 SUBTRACT"), Some(Number(7.0)));
    }

    #[test]
    fn subtract_of_nothing_gives_no_value() {
        assert_eq!(eval("missing SUBTRACT"), None);
        assert_eq!(eval("1 'x' SUBTRACT"), None);
    }

    #[test]
    fn multiply_multiplies_all_values() {
        assert_eq!(eval("2 3 4 MULTIPLY"), Some(Number(24.0)));
    }

    #[test]
    fn multiply_of_nothing_gives_no_value() {
        assert_eq!(eval("missing MULTIPLY"), None);
        assert_eq!(eval("2 'x' MULTIPLY"), None);
    }

    #[test]
    fn divide_divides_the_first_value_by_the_rest() {
        assert_eq!(eval("100 4 5 DIVIDE"), Some(Number(5.0)));
        assert_eq!(eval("1 4 DIVIDE"), Some(Number(0.25)));
    }

    #[test]
    fn divide_by_zero_gives_no_value() {
        assert_eq!(eval("1 0 DIVIDE"), None);
        assert_eq!(eval("0 2 0 DIVIDE"), None);
        assert_eq!(eval("0 2 DIVIDE"), Some(Number(0.0)));
    }

    #[test]
    fn divide_of_nothing_gives_no_value() {
        assert_eq!(eval("missing DIVIDE"), None);
        assert_eq!(eval("1 'x' DIVIDE"), None);
    }

    #[test]
    fn abs_applies_to_every_value() {
        assert_eq!(eval("-2.5 ABS"), Some(Number(2.5)));
        let fields = [("delta", numbers(&[-1.0, 0.0, 3.0]))];
        let formula = Formula::parse("delta ABS").unwrap();
        assert_eq!(formula.evaluate_all(&lookup(&fields)), numbers(&[1.0, 0.0, 3.0]));
    }

    #[test]
    fn abs_of_nothing_or_text_gives_no_value() {
        assert_eq!(eval("missing ABS"), None);
        assert_eq!(eval("'x' ABS"), None);
    }

    #[test]
    fn round_rounds_halves_away_from_zero() {
        assert_eq!(eval("2.5 0 ROUND"), Some(Number(3.0)));
        assert_eq!(eval("-2.5 0 ROUND"), Some(Number(-3.0)));
        assert_eq!(eval("1.2345 2 ROUND"), Some(Number(1.23)));
        assert_eq!(eval("9.995 2 ROUND"), Some(Number(9.99))); // stored as 9.99499…
        assert_eq!(eval("1.005 2 ROUND"), Some(Number(1.0))); // stored as 1.00499…
        assert_eq!(eval("2.345 2 ROUND"), Some(Number(2.35))); // stored as 2.34500…02
        assert_eq!(eval("99.96 1 ROUND"), Some(Number(100.0)));
        assert_eq!(eval("7 3 ROUND"), Some(Number(7.0)));
    }

    #[test]
    fn round_applies_to_every_value() {
        // 1.25 is stored exactly; 1.45 is stored as 1.44999…
        let fields = [("x", numbers(&[1.24, 1.25, -1.25, 1.45]))];
        let formula = Formula::parse("x 1 ROUND").unwrap();
        assert_eq!(formula.evaluate_all(&lookup(&fields)), numbers(&[1.2, 1.3, -1.3, 1.4]));
    }

    #[test]
    fn round_needs_one_whole_number_of_decimals_from_0_to_100() {
        assert_eq!(eval("1.5 -1 ROUND"), None);
        assert_eq!(eval("1.5 0.5 ROUND"), None);
        assert_eq!(eval("1.5 101 ROUND"), None);
        assert_eq!(eval("1.5 '1' ROUND"), None);
        assert_eq!(eval_with("1.5 d ROUND", &[("d", numbers(&[1.0, 2.0]))]), None);
        assert_eq!(eval("1.5 100 ROUND"), Some(Number(1.5)));
    }

    #[test]
    fn round_of_nothing_or_text_gives_no_value() {
        assert_eq!(eval("missing 2 ROUND"), None);
        assert_eq!(eval("1.5 missing ROUND"), None);
        assert_eq!(eval("'1.5' 0 ROUND"), None);
    }

    // Lists

    #[test]
    fn count_counts_all_values() {
        let fields = [("children", texts(&["a", "b", "c"]))];
        assert_eq!(eval_with("children 'x' COUNT", &fields), Some(Number(4.0)));
    }

    #[test]
    fn count_of_nothing_is_zero() {
        assert_eq!(eval("missing COUNT"), Some(Number(0.0)));
        assert_eq!(eval("COUNT"), Some(Number(0.0)));
    }

    #[test]
    fn average_is_the_mean_of_all_values() {
        let fields = [("price", numbers(&[1.0, 2.0, 6.0]))];
        assert_eq!(eval_with("price AVERAGE", &fields), Some(Number(3.0)));
    }

    #[test]
    fn average_of_nothing_gives_no_value() {
        assert_eq!(eval("missing AVERAGE"), None);
        assert_eq!(eval("1 'x' AVERAGE"), None);
    }

    #[test]
    fn min_and_max_compare_numbers() {
        let fields = [("x", numbers(&[3.0, -1.0, 2.0]))];
        assert_eq!(eval_with("x 0 MIN", &fields), Some(Number(-1.0)));
        assert_eq!(eval_with("x 0 MAX", &fields), Some(Number(3.0)));
    }

    #[test]
    fn min_and_max_compare_texts_such_as_iso_dates() {
        let fields = [("due", texts(&["2026-03-01", "2025-12-31", "2026-01-15"]))];
        assert_eq!(eval_with("due MIN", &fields), Some(text("2025-12-31")));
        assert_eq!(eval_with("due MAX", &fields), Some(text("2026-03-01")));
    }

    #[test]
    fn min_and_max_of_mixed_or_boolean_values_give_no_value() {
        assert_eq!(eval("1 'a' MIN"), None);
        assert_eq!(eval("'a' 1 MAX"), None);
        assert_eq!(eval("true MAX"), None);
    }

    #[test]
    fn min_and_max_of_nothing_give_no_value() {
        assert_eq!(eval("missing MIN"), None);
        assert_eq!(eval("missing MAX"), None);
    }

    // Comparisons

    #[test]
    fn eq_is_true_when_any_left_value_equals_any_right_value() {
        let fields = [("tags", texts(&["a", "b"]))];
        assert_eq!(eval_with("tags 'b' EQ", &fields), Some(Boolean(true)));
        assert_eq!(eval_with("tags 'c' EQ", &fields), Some(Boolean(false)));
        assert_eq!(eval("2 2.0 EQ"), Some(Boolean(true)));
    }

    #[test]
    fn eq_is_strict_about_kinds() {
        assert_eq!(eval("1 '1' EQ"), Some(Boolean(false)));
        assert_eq!(eval("true 'true' EQ"), Some(Boolean(false)));
    }

    #[test]
    fn eq_with_an_empty_side_gives_no_value() {
        assert_eq!(eval("missing 1 EQ"), None);
        assert_eq!(eval("1 missing EQ"), None);
    }

    #[test]
    fn ne_is_true_when_any_left_value_is_not_among_the_right_values() {
        assert_eq!(eval_with("x 1 NE", &[("x", numbers(&[1.0, 2.0]))]), Some(Boolean(true)));
        assert_eq!(
            eval_with("x 1 NE", &[("x", numbers(&[1.0, 1.0]))]),
            Some(Boolean(false))
        );
        assert_eq!(eval("1 '1' NE"), Some(Boolean(true)));
    }

    #[test]
    fn ne_with_an_empty_side_gives_no_value() {
        assert_eq!(eval("missing 1 NE"), None);
        assert_eq!(eval("1 missing NE"), None);
    }

    #[test]
    fn gt_compares_numbers_and_texts_with_any_semantics() {
        assert_eq!(eval("3 2 GT"), Some(Boolean(true)));
        assert_eq!(eval("2 2 GT"), Some(Boolean(false)));
        assert_eq!(eval("'b' 'a' GT"), Some(Boolean(true)));
        assert_eq!(eval_with("x 5 GT", &[("x", numbers(&[1.0, 6.0]))]), Some(Boolean(true)));
    }

    #[test]
    fn gte_includes_equal_values() {
        assert_eq!(eval("2 2 GTE"), Some(Boolean(true)));
        assert_eq!(eval("1 2 GTE"), Some(Boolean(false)));
    }

    #[test]
    fn lt_compares_dates_as_texts() {
        assert_eq!(eval("'2025-12-31' '2026-01-01' LT"), Some(Boolean(true)));
        assert_eq!(eval("2 2 LT"), Some(Boolean(false)));
    }

    #[test]
    fn lte_includes_equal_values() {
        assert_eq!(eval("2 2 LTE"), Some(Boolean(true)));
        assert_eq!(eval("3 2 LTE"), Some(Boolean(false)));
    }

    #[test]
    fn ordering_skips_pairs_of_different_kinds() {
        assert_eq!(
            eval_with("x 5 GT", &[("x", vec![text("9"), Number(6.0)])]),
            Some(Boolean(true))
        );
        assert_eq!(eval("'9' 5 GT"), None);
        assert_eq!(eval("true false GT"), None);
    }

    #[test]
    fn ordering_with_an_empty_side_gives_no_value() {
        for op in ["GT", "GTE", "LT", "LTE"] {
            assert_eq!(eval(&format!("missing 1 {op}")), None, "{op}");
            assert_eq!(eval(&format!("1 missing {op}")), None, "{op}");
        }
    }

    #[test]
    fn in_is_true_when_a_needle_value_is_in_the_rest_of_the_stack() {
        assert_eq!(
            eval_with("s 10 20 30 IN", &[("s", numbers(&[20.0]))]),
            Some(Boolean(true))
        );
        assert_eq!(
            eval_with("s 10 20 30 IN", &[("s", numbers(&[25.0]))]),
            Some(Boolean(false))
        );
        let fields = [("s", texts(&["x", "b"])), ("allowed", texts(&["a", "b"]))];
        assert_eq!(eval_with("s allowed IN", &fields), Some(Boolean(true)));
    }

    #[test]
    fn in_with_an_empty_needle_or_haystack_is_false() {
        assert_eq!(eval("missing 1 2 IN"), Some(Boolean(false)));
        assert_eq!(eval("1 missing IN"), Some(Boolean(false)));
        assert_eq!(eval("IN"), None);
    }

    #[test]
    fn nin_is_the_negation_of_in() {
        assert_eq!(eval("5 1 2 NIN"), Some(Boolean(true)));
        assert_eq!(eval("2 1 2 NIN"), Some(Boolean(false)));
    }

    #[test]
    fn nin_with_an_empty_needle_or_haystack_is_true() {
        assert_eq!(eval("missing 1 NIN"), Some(Boolean(true)));
        assert_eq!(eval("1 missing NIN"), Some(Boolean(true)));
        assert_eq!(eval("NIN"), None);
    }

    #[test]
    fn exists_tells_whether_the_slot_has_values() {
        assert_eq!(
            eval_with("paid EXISTS", &[("paid", texts(&["2026-01-01"]))]),
            Some(Boolean(true))
        );
        assert_eq!(eval("paid EXISTS"), Some(Boolean(false)));
    }

    // Conditionals

    #[test]
    fn if_chooses_then_or_else() {
        assert_eq!(eval("150 100 GT 'expensive' 'cheap' IF"), Some(text("expensive")));
        assert_eq!(eval("50 100 GT 'expensive' 'cheap' IF"), Some(text("cheap")));
        let fields = [("tags", texts(&["a", "b"]))];
        let formula = Formula::parse("true tags 'none' IF").unwrap();
        assert_eq!(formula.evaluate_all(&lookup(&fields)), texts(&["a", "b"]));
    }

    #[test]
    fn if_needs_exactly_one_boolean_condition() {
        assert_eq!(eval("missing 'a' 'b' IF"), None);
        assert_eq!(eval("1 'a' 'b' IF"), None);
        assert_eq!(
            eval_with("c 'a' 'b' IF", &[("c", vec![Boolean(true), Boolean(true)])]),
            None
        );
    }

    #[test]
    fn if_with_an_empty_chosen_branch_gives_no_value() {
        assert_eq!(eval("true missing 'b' IF"), None);
        assert_eq!(eval("false missing 'b' IF"), Some(text("b")));
    }

    #[test]
    fn when_gives_then_only_for_true() {
        assert_eq!(eval("2 1 GT 'over budget' WHEN"), Some(text("over budget")));
        assert_eq!(eval("1 2 GT 'over budget' WHEN"), None);
    }

    #[test]
    fn when_with_an_empty_or_non_boolean_condition_gives_no_value() {
        assert_eq!(eval("missing 'x' WHEN"), None);
        assert_eq!(eval("'true' 'x' WHEN"), None);
        assert_eq!(eval("true missing WHEN"), None);
    }

    // Values in and out

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
