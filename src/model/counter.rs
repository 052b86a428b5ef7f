//! Counter arithmetic: the next value of a counter property, and the
//! normalised form of a counter value given with its own string.

use crate::model::json::number_json;

/// The last run of ASCII digits in `text`: its byte range and value; `None`
/// when there is none, or when it is too long to be a finite number.
fn last_number(text: &str) -> Option<(usize, usize, f64)> {
    let end = text.rfind(|c: char| c.is_ascii_digit())? + 1;
    // Trimming ASCII digits ends on a character boundary, even after a multi-byte character.
    let start = text[..end].trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let number: f64 = text[start..end].parse().ok()?;
    number.is_finite().then_some((start, end, number))
}

fn format_number(number: f64) -> String {
    number_json(number).to_string()
}

/// Rule 4: a `string` sent with `counter` keeps its text, takes `number` from
/// its last number and drops that number's leading zeros (`INV-0042` →
/// `INV-42`, 42). `None` when the string holds no number.
pub fn normalise(text: &str) -> Option<(String, f64)> {
    let (start, end, number) = last_number(text)?;
    Some((
        format!("{}{}{}", &text[..start], format_number(number), &text[end..]),
        number,
    ))
}

/// Rules 2 and 3: the value after `previous` (the live value with the largest
/// `number` under the property name), `step` added to the last number of its
/// string, surrounding text kept (`INV-41` → `INV-42`); with no previous
/// value, the step itself.
pub fn next(previous: Option<(&str, f64)>, step: f64) -> (String, f64) {
    match previous {
        None => (format_number(step), step),
        Some((text, number)) => match last_number(text) {
            Some((start, end, last)) => {
                let next = last + step;
                (
                    format!("{}{}{}", &text[..start], format_number(next), &text[end..]),
                    next,
                )
            }
            None => (format_number(number + step), number + step),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_is_added_to_the_last_number_keeping_the_text() {
        assert_eq!(next(Some(("INV-41", 41.0)), 1.0), ("INV-42".into(), 42.0));
        assert_eq!(next(Some(("2024/A-7-x", 7.0)), 10.0), ("2024/A-17-x".into(), 17.0));
    }

    #[test]
    fn leading_zeros_are_not_preserved() {
        assert_eq!(next(Some(("INV-0041", 41.0)), 1.0), ("INV-42".into(), 42.0));
    }

    #[test]
    fn without_an_earlier_value_the_result_is_the_step() {
        assert_eq!(next(None, 1.0), ("1".into(), 1.0));
        assert_eq!(next(None, 5.0), ("5".into(), 5.0));
    }

    #[test]
    fn a_previous_value_without_digits_counts_from_its_number() {
        assert_eq!(next(Some(("none", 9.0)), 1.0), ("10".into(), 10.0));
    }

    #[test]
    fn a_given_string_keeps_its_text_and_loses_leading_zeros() {
        assert_eq!(normalise("INV-0042"), Some(("INV-42".into(), 42.0)));
        assert_eq!(normalise("A1-B007"), Some(("A1-B7".into(), 7.0)));
        assert_eq!(normalise("000"), Some(("0".into(), 0.0)));
        assert_eq!(normalise("no digits"), None);
    }

    #[test]
    fn a_number_after_a_multi_byte_character_is_found() {
        assert_eq!(normalise("é0042"), Some(("é42".into(), 42.0)));
        assert_eq!(next(Some(("№7", 7.0)), 1.0), ("№8".into(), 8.0));
    }

    #[test]
    fn digits_beyond_a_finite_number_are_no_counter_number() {
        let huge = format!("INV-{}", "9".repeat(400));
        assert_eq!(normalise(&huge), None);
        assert_eq!(next(Some((&huge, 9.0)), 1.0), ("10".into(), 10.0));
    }
}
