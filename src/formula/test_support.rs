//! Helpers shared by the formula unit tests.

use super::{FieldRef, Formula, FormulaValue};
use FormulaValue::Number;

pub(super) fn text(value: &str) -> FormulaValue {
    FormulaValue::Text(value.to_owned())
}

pub(super) fn numbers(values: &[f64]) -> Vec<FormulaValue> {
    values.iter().map(|v| Number(*v)).collect()
}

pub(super) fn texts(values: &[&str]) -> Vec<FormulaValue> {
    values.iter().map(|v| text(v)).collect()
}

/// Own properties come from `fields`; every other reference has no values.
pub(super) fn lookup(fields: &[(&str, Vec<FormulaValue>)]) -> impl Fn(&FieldRef) -> Vec<FormulaValue> {
    move |field| match field {
        FieldRef::Own(name) => fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, values)| values.clone())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

pub(super) fn eval_with(formula: &str, fields: &[(&str, Vec<FormulaValue>)]) -> Option<FormulaValue> {
    Formula::parse(formula)
        .expect("formula parses")
        .evaluate(&lookup(fields))
}

pub(super) fn eval(formula: &str) -> Option<FormulaValue> {
    eval_with(formula, &[])
}
