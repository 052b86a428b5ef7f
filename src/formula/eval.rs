//! Running a parsed formula over one stack of slots.

use super::operators::{Arity, single};
use super::{FieldRef, Formula, FormulaValue, Slot, Token};

impl Formula {
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

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::formula::test_support::*;
    use FormulaValue::Number;

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
}
