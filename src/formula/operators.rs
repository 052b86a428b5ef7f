//! The operators: their keywords, how many slots each pops and what each
//! computes (`docs/guide/src/concepts/formula-operators.md`).

use std::cmp::Ordering;

use super::{FormulaValue, Slot};

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
    pub(super) fn apply(self, mut args: Vec<Slot>) -> Option<Slot> {
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
pub(super) fn single<T>(mut items: Vec<T>) -> Option<T> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formula::Formula;
    use crate::formula::test_support::{eval, eval_with, lookup, numbers, text, texts};
    use FormulaValue::{Boolean, Number};

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
}
