//! One condition of a filter as SQL over one column: comparisons, `in`
//! lists as typed arrays, and `regex` patterns in PostgreSQL's dialect
//! with JavaScript's flag semantics.

use super::statement::{Bind, Sql};
use crate::query::{Condition, Operand, Operator, RegexFlags};

pub(super) fn value_test(sql: &mut Sql, column: &str, condition: &Condition) {
    sql.push(column);
    match condition {
        Condition::Exists(_) => _ = sql.push(" IS NOT NULL"),
        Condition::Compare(op, operand) => {
            let symbol = match op {
                Operator::Gt => " > ",
                Operator::Gte => " >= ",
                Operator::Lt => " < ",
                Operator::Lte => " <= ",
                _ => " = ",
            };
            sql.push(symbol).bind(scalar(operand));
        }
        Condition::In(operands) => {
            sql.push(" = ANY (").bind(array(operands)).push(")");
        }
        Condition::Regex { pattern, flags } => {
            sql.push(" ~ ").bind(Bind::Text(format!(
                "(?{}){}",
                embedded_options(*flags),
                postgres_pattern(pattern)
            )));
        }
    }
}

/// A pattern of the `regex` crate's syntax in PostgreSQL's. The two agree
/// but for word boundaries, which PostgreSQL spells `\y`, `\Y`, `\m` and
/// `\M` (its `\b` is a backspace and its `\B` a backslash). A backslash
/// always escapes the next character, so an escaped backslash is kept.
fn postgres_pattern(pattern: &str) -> String {
    let mut translated = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            translated.push(c);
            continue;
        }
        match chars.next() {
            Some('b') => {
                let rest = chars.as_str();
                let special = [
                    ("{start}", "\\m"),
                    ("{end}", "\\M"),
                    ("{start-half}", "(?<!\\w)"),
                    ("{end-half}", "(?!\\w)"),
                ]
                .into_iter()
                .find_map(|(name, spelled)| Some((rest.strip_prefix(name)?, spelled)));
                match special {
                    Some((after, spelled)) => {
                        translated.push_str(spelled);
                        chars = after.chars();
                    }
                    None => translated.push_str("\\y"),
                }
            }
            Some('B') => translated.push_str("\\Y"),
            Some('<') => translated.push_str("\\m"),
            Some('>') => translated.push_str("\\M"),
            Some(other) => {
                translated.push('\\');
                translated.push(other);
            }
            None => translated.push('\\'),
        }
    }
    translated
}

/// PostgreSQL embedded options giving a pattern JavaScript's flag semantics:
/// by default `.` does not match a newline and `^`/`$` match only at the ends
/// (`p`); `m` lets `^`/`$` match at newlines, `s` lets `.` match one.
fn embedded_options(flags: RegexFlags) -> String {
    let mode = match (flags.multi_line, flags.dot_all) {
        (false, false) => 'p',
        (true, false) => 'n',
        (false, true) => 's',
        (true, true) => 'w',
    };
    let case = if flags.case_insensitive { "i" } else { "" };
    format!("{mode}{case}")
}

fn scalar(operand: &Operand) -> Bind {
    match operand.clone() {
        Operand::Text(v) => Bind::Text(v),
        Operand::Number(v) => Bind::Number(v),
        Operand::Boolean(v) => Bind::Boolean(v),
        Operand::Date(v) => Bind::Date(v),
        Operand::Datetime(v) => Bind::Datetime(v),
        Operand::Integer(v) => Bind::Integer(v),
    }
}

/// `in` operands share one field, so one typed array holds them all.
fn array(operands: &[Operand]) -> Bind {
    match operands.first() {
        Some(Operand::Number(_)) => Bind::NumberArray(collect(operands, |o| match o {
            Operand::Number(v) => Some(*v),
            _ => None,
        })),
        Some(Operand::Boolean(_)) => Bind::BooleanArray(collect(operands, |o| match o {
            Operand::Boolean(v) => Some(*v),
            _ => None,
        })),
        Some(Operand::Date(_)) => Bind::DateArray(collect(operands, |o| match o {
            Operand::Date(v) => Some(*v),
            _ => None,
        })),
        Some(Operand::Datetime(_)) => Bind::DatetimeArray(collect(operands, |o| match o {
            Operand::Datetime(v) => Some(*v),
            _ => None,
        })),
        Some(Operand::Integer(_)) => Bind::IntegerArray(collect(operands, |o| match o {
            Operand::Integer(v) => Some(*v),
            _ => None,
        })),
        Some(Operand::Text(_)) | None => Bind::TextArray(collect(operands, |o| match o {
            Operand::Text(v) => Some(v.clone()),
            _ => None,
        })),
    }
}

fn collect<T>(operands: &[Operand], pick: impl Fn(&Operand) -> Option<T>) -> Vec<T> {
    operands.iter().filter_map(pick).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_boundaries_are_spelled_as_postgresql_spells_them() {
        for (pattern, spelled) in [
            (r"\bdune\b", r"\ydune\y"),
            (r"un\B", r"un\Y"),
            (r"\<a\>", r"\ma\M"),
            (r"\b{start}a\b{end}", r"\ma\M"),
            (r"\b{start-half}a\b{end-half}", r"(?<!\w)a(?!\w)"),
            (r"\\b", r"\\b"),
            (r"\\\b", r"\\\y"),
            (r"\d+\.\w\s", r"\d+\.\w\s"),
            ("é\\", "é\\"),
        ] {
            assert_eq!(postgres_pattern(pattern), spelled, "{pattern}");
        }
    }
}
