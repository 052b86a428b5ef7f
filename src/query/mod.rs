//! The list query language of `GET /api/{db}/entity`: the query string parsed
//! into a typed query (pure), and SQL generated from it (`sql`).

pub mod cache;
pub mod sql;

use chrono::{DateTime, NaiveDate, Utc};

use crate::db::projection::SEARCH_WORD_CHARS;
use crate::http::error::ApiError;
use crate::model::ids::is_valid_id;
use crate::model::value::{is_storable_date, is_storable_text, is_valid_property_name, parse_date, parse_datetime};

pub const DEFAULT_LIMIT: i64 = 100;

/// The field of a value a filter or sort key reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    String,
    Number,
    Boolean,
    Date,
    Datetime,
    Reference,
    Filesize,
    Filename,
    Filetype,
    Language,
}

impl Field {
    pub fn parse(name: &str) -> Option<Field> {
        Some(match name {
            "string" => Field::String,
            "number" => Field::Number,
            "boolean" => Field::Boolean,
            "date" => Field::Date,
            "datetime" => Field::Datetime,
            "reference" => Field::Reference,
            "filesize" => Field::Filesize,
            "filename" => Field::Filename,
            "filetype" => Field::Filetype,
            "language" => Field::Language,
            _ => return None,
        })
    }

    /// Whether the field takes the string operators (rule 8: file names,
    /// types and languages are filtered as strings).
    fn is_textual(self) -> bool {
        matches!(
            self,
            Field::String | Field::Filename | Field::Filetype | Field::Language
        )
    }

    /// The operators the spec's table allows on this field.
    fn allows(self, op: Operator) -> bool {
        use Operator::*;
        match op {
            Eq | In | Exists => true,
            Regex => self.is_textual(),
            Ne => self.is_textual() || self == Field::Number,
            Gt | Gte | Lt | Lte => !matches!(self, Field::Boolean | Field::Reference),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    In,
    Exists,
    Regex,
}

impl Operator {
    fn parse(name: &str) -> Option<Operator> {
        Some(match name {
            "ne" => Operator::Ne,
            "gt" => Operator::Gt,
            "gte" => Operator::Gte,
            "lt" => Operator::Lt,
            "lte" => Operator::Lte,
            "in" => Operator::In,
            "exists" => Operator::Exists,
            "regex" => Operator::Regex,
            _ => return None,
        })
    }
}

/// A typed filter operand.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Text(String),
    Number(f64),
    Boolean(bool),
    Date(NaiveDate),
    Datetime(DateTime<Utc>),
    Integer(i64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `Eq`, `Ne`, `Gt`, `Gte`, `Lt` or `Lte` against one operand.
    Compare(Operator, Operand),
    In(Vec<Operand>),
    Exists(bool),
    /// A validated pattern and the flags that take effect (`i`, `m`, `s`).
    Regex {
        pattern: String,
        flags: RegexFlags,
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegexFlags {
    pub case_insensitive: bool,
    pub multi_line: bool,
    pub dot_all: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub prop: String,
    pub field: Field,
    pub condition: Condition,
}

/// A sort key: `prop.field`, or `_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub target: SortTarget,
    pub descending: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SortTarget {
    Id,
    Value { prop: String, field: Field },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    pub filters: Vec<Filter>,
    pub sort: Vec<SortKey>,
    pub limit: i64,
    pub skip: i64,
    /// Property names to return (`_id` is always returned); `None` returns all.
    pub props: Option<Vec<String>>,
    /// Full-text words (lowercased, at most 20 characters each); all must match.
    pub words: Vec<String>,
    /// Group by these values: one row per distinct combination.
    pub group: Vec<(String, Field)>,
}

const MAX_REGEX_LENGTH: usize = 512;

impl ListQuery {
    /// Parses the decoded query parameters, in order.
    pub fn parse(params: &[(String, String)]) -> Result<ListQuery, ApiError> {
        let mut query = ListQuery {
            filters: Vec::new(),
            sort: Vec::new(),
            limit: DEFAULT_LIMIT,
            skip: 0,
            props: None,
            words: Vec::new(),
            group: Vec::new(),
        };
        for (key, value) in params {
            match key.as_str() {
                "limit" => query.limit = value.trim().parse().ok().filter(|l| *l > 0).unwrap_or(DEFAULT_LIMIT),
                "skip" => query.skip = value.trim().parse().ok().filter(|s| *s >= 0).unwrap_or(0),
                "sort" => query.sort = parse_sort(value),
                "q" => query.words = parse_words(value),
                "group" => query.group = value.split(',').filter_map(|key| parse_value_key(key.trim())).collect(),
                "props" => {
                    query.props = Some(
                        value
                            .split(',')
                            .map(str::trim)
                            .filter(|p| !p.is_empty())
                            .map(str::to_owned)
                            .collect(),
                    )
                }
                _ => {
                    if let Some(filter) = parse_filter(key, value)? {
                        query.filters.push(filter);
                    }
                }
            }
        }
        Ok(query)
    }
}

fn parse_sort(value: &str) -> Vec<SortKey> {
    value
        .split(',')
        .filter_map(|key| {
            let key = key.trim();
            let (descending, key) = match key.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, key),
            };
            let target = if key == "_id" {
                SortTarget::Id
            } else {
                let (prop, field) = parse_value_key(key)?;
                SortTarget::Value { prop, field }
            };
            Some(SortKey { target, descending })
        })
        .collect()
}

/// `<prop>.<field>`, as `sort` and `group` name values.
fn parse_value_key(key: &str) -> Option<(String, Field)> {
    let (prop, field) = key.split_once('.')?;
    is_valid_property_name(prop).then(|| Some((prop.to_owned(), Field::parse(field)?)))?
}

/// Rule 12: words split on spaces, matched case-insensitively, only the first
/// 20 characters of each counting. NUL, which no stored text holds, separates
/// words too.
fn parse_words(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == '\0')
        .filter(|word| !word.is_empty())
        .map(|word| word.to_lowercase().chars().take(SEARCH_WORD_CHARS).collect())
        .collect()
}

/// A `<prop>.<field>[.<operator>]` parameter as a filter; other parameters
/// (not of that form) are not filters and are ignored.
fn parse_filter(key: &str, value: &str) -> Result<Option<Filter>, ApiError> {
    let mut parts = key.split('.');
    let (Some(prop), Some(field)) = (parts.next(), parts.next()) else {
        return Ok(None);
    };
    let (Some(field), true) = (Field::parse(field), is_valid_property_name(prop)) else {
        return Ok(None);
    };
    // Rule 5: an unknown operator, or one the field does not take, is ignored.
    let op = parts
        .next()
        .and_then(Operator::parse)
        .filter(|op| field.allows(*op))
        .unwrap_or(Operator::Eq);
    let condition = match op {
        Operator::Exists => Condition::Exists(value == "true"),
        Operator::In => Condition::In(
            value
                .split(',')
                .map(|item| operand(field, item))
                .collect::<Result<_, _>>()?,
        ),
        Operator::Regex => parse_regex(value)?,
        _ => Condition::Compare(op, operand(field, value)?),
    };
    Ok(Some(Filter {
        prop: prop.to_owned(),
        field,
        condition,
    }))
}

fn operand(field: Field, text: &str) -> Result<Operand, ApiError> {
    let invalid = |what: &str| ApiError::bad_request("invalid_filter", format!("Invalid {what}: {text:?}"));
    Ok(match field {
        Field::String | Field::Filename | Field::Filetype | Field::Language if !is_storable_text(text) => {
            return Err(invalid("text"));
        }
        Field::String | Field::Filename | Field::Filetype | Field::Language => Operand::Text(text.to_owned()),
        Field::Reference if is_valid_id(text) => Operand::Text(text.to_owned()),
        Field::Reference => return Err(ApiError::bad_request("invalid_id", "Invalid ID")),
        Field::Number => Operand::Number(text.trim().parse().map_err(|_| invalid("number"))?),
        Field::Filesize => Operand::Integer(text.trim().parse().map_err(|_| invalid("file size"))?),
        Field::Boolean => Operand::Boolean(text == "true"),
        Field::Date => Operand::Date(
            parse_date(text)
                .or_else(|| from_millis(text).map(|at| at.date_naive()))
                .ok_or_else(|| invalid("date"))?,
        ),
        Field::Datetime => Operand::Datetime(
            parse_datetime(text)
                .or_else(|| from_millis(text))
                .or_else(|| parse_date(text).map(|d| d.and_hms_opt(0, 0, 0).expect("midnight").and_utc()))
                .ok_or_else(|| invalid("datetime"))?,
        ),
    })
}

/// Rule 3: dates may be Unix timestamps in milliseconds.
fn from_millis(text: &str) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(text.trim().parse().ok()?).filter(|at| is_storable_date(at.date_naive()))
}

/// Rule 2: `/pattern/flags`, or a bare pattern. Patterns follow the `regex`
/// crate's syntax, which is checked here so PostgreSQL never sees a pattern
/// the service would not accept.
fn parse_regex(value: &str) -> Result<Condition, ApiError> {
    let invalid = || ApiError::bad_request("invalid_regex", "Invalid regex");
    let (pattern, flag_text) = match value.strip_prefix('/').and_then(|rest| rest.rsplit_once('/')) {
        Some((pattern, flags)) => (pattern, flags),
        None => (value, ""),
    };
    if flag_text.contains('x') || pattern.len() > MAX_REGEX_LENGTH || !is_storable_text(pattern) {
        return Err(invalid());
    }
    let flags = RegexFlags {
        case_insensitive: flag_text.contains('i'),
        multi_line: flag_text.contains('m'),
        dot_all: flag_text.contains('s'),
    };
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|_| invalid())?;
    Ok(Condition::Regex {
        pattern: pattern.to_owned(),
        flags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(query: &[(&str, &str)]) -> Result<ListQuery, ApiError> {
        let params: Vec<(String, String)> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ListQuery::parse(&params)
    }

    fn filter(key: &str, value: &str) -> Filter {
        parse(&[(key, value)]).unwrap().filters.remove(0)
    }

    #[test]
    fn limit_defaults_to_100_for_zero_and_garbage() {
        for raw in ["0", "abc", "-5", ""] {
            assert_eq!(parse(&[("limit", raw)]).unwrap().limit, 100, "{raw}");
        }
        assert_eq!(parse(&[("limit", "100000")]).unwrap().limit, 100000);
        assert_eq!(parse(&[("skip", "x")]).unwrap().skip, 0);
        assert_eq!(parse(&[("skip", "7")]).unwrap().skip, 7);
    }

    #[test]
    fn exact_filters_by_default_and_unknown_operators_are_ignored() {
        let exact = filter("name.string", "A");
        assert_eq!(
            exact.condition,
            Condition::Compare(Operator::Eq, Operand::Text("A".into()))
        );
        assert_eq!(filter("name.string.between", "A").condition, exact.condition);
        // `gt` is not an operator of `reference`: ignored, so exact
        let id = "5f1a2b3c4d5e6f7a8b9c0d1e";
        assert_eq!(
            filter("owner.reference.gt", id).condition,
            Condition::Compare(Operator::Eq, Operand::Text(id.into()))
        );
    }

    #[test]
    fn in_exists_and_booleans() {
        assert_eq!(
            filter("n.number.in", "1,2.5").condition,
            Condition::In(vec![Operand::Number(1.0), Operand::Number(2.5)])
        );
        assert_eq!(filter("n.number.exists", "true").condition, Condition::Exists(true));
        assert_eq!(filter("n.number.exists", "yes").condition, Condition::Exists(false));
        assert_eq!(
            filter("b.boolean", "TRUE").condition,
            Condition::Compare(Operator::Eq, Operand::Boolean(false))
        );
    }

    #[test]
    fn dates_accept_iso_and_milliseconds() {
        let day = NaiveDate::from_ymd_opt(2024, 3, 1).unwrap();
        for raw in ["2024-03-01", "2024-03-01T10:00:00Z", "1709287200000"] {
            assert_eq!(
                filter("d.date.gte", raw).condition,
                Condition::Compare(Operator::Gte, Operand::Date(day)),
                "{raw}"
            );
        }
        assert!(matches!(
            filter("d.datetime.lt", "1709287200000").condition,
            Condition::Compare(Operator::Lt, Operand::Datetime(_))
        ));
    }

    #[test]
    fn text_with_nul_is_an_invalid_filter_and_separates_words() {
        assert_eq!(parse(&[("name.string", "a\0b")]).unwrap_err().code, "invalid_filter");
        assert_eq!(
            parse(&[("name.filename.in", "a,b\0")]).unwrap_err().code,
            "invalid_filter"
        );
        assert_eq!(
            parse(&[("name.string.regex", "/a\0/i")]).unwrap_err().code,
            "invalid_regex"
        );
        assert_eq!(parse(&[("q", "Dune\0arr")]).unwrap().words, ["dune", "arr"]);
    }

    #[test]
    fn dates_before_postgresql_s_first_day_are_invalid_filters() {
        for (key, raw) in [
            ("d.date", "-5000-01-01"),
            ("d.date.gt", "-300000000000000"),
            ("d.datetime.lt", "-300000000000000"),
            ("d.datetime", "-5000-01-01T00:00:00"),
        ] {
            assert_eq!(parse(&[(key, raw)]).unwrap_err().code, "invalid_filter", "{key}={raw}");
        }
        assert!(parse(&[("d.datetime", "-4713-11-24")]).is_ok());
    }

    #[test]
    fn malformed_reference_is_invalid_id() {
        let error = parse(&[("owner.reference", "xyz")]).unwrap_err();
        assert_eq!((error.status.as_u16(), error.message.as_ref()), (400, "Invalid ID"));
    }

    #[test]
    fn regex_flags_and_errors() {
        match filter("n.string.regex", "/^ab+c$/imsg").condition {
            Condition::Regex { pattern, flags } => {
                assert_eq!(pattern, "^ab+c$");
                assert!(flags.case_insensitive && flags.multi_line && flags.dot_all);
            }
            other => panic!("{other:?}"),
        }
        match filter("n.string.regex", "abc").condition {
            Condition::Regex { pattern, flags } => {
                assert_eq!((pattern.as_str(), flags), ("abc", RegexFlags::default()))
            }
            other => panic!("{other:?}"),
        }
        for bad in ["/a/x", "/(unclosed/", &format!("/{}/", "a".repeat(513))] {
            assert_eq!(
                parse(&[("n.string.regex", bad)]).unwrap_err().message,
                "Invalid regex",
                "{bad}"
            );
        }
    }

    #[test]
    fn sort_keys_and_props() {
        let query = parse(&[
            ("sort", "-price.number,name.string,_id,bogus"),
            ("props", "name, price"),
        ])
        .unwrap();
        assert_eq!(query.sort.len(), 3);
        assert!(query.sort[0].descending);
        assert_eq!(query.sort[2].target, SortTarget::Id);
        assert_eq!(query.props, Some(vec!["name".to_owned(), "price".to_owned()]));
    }

    #[test]
    fn q_words_are_lowercased_and_cut_at_20_characters() {
        let query = parse(&[("q", "  Dune  ABCDEFGHIJKLMNOPQRSTUVWXYZ ")]).unwrap();
        assert_eq!(query.words, ["dune", "abcdefghijklmnopqrst"]);
    }

    #[test]
    fn group_takes_comma_separated_values() {
        let query = parse(&[("group", "instock.boolean, type.string,bad")]).unwrap();
        assert_eq!(
            query.group,
            [
                ("instock".to_owned(), Field::Boolean),
                ("type".to_owned(), Field::String)
            ]
        );
    }

    #[test]
    fn parameters_not_of_filter_form_are_ignored() {
        assert!(
            parse(&[("foo", "bar"), ("a.unknownfield", "x")])
                .unwrap()
                .filters
                .is_empty()
        );
    }
}
