//! The query string of a list read, parsed into a [`ListQuery`] (rules 1 to
//! 15 of the list query language): filters, sort, paging, words, groups.

use chrono::{DateTime, Utc};

use super::{
    Condition, DEFAULT_LIMIT, Field, Filter, ListQuery, Operand, Operator, REFERENCES, RegexFlags, SortKey, SortTarget,
};
use crate::error::{ApiError, ErrorCode};
use crate::model::ids::is_valid_id;
use crate::model::projection::SEARCH_WORD_CHARS;
use crate::model::value::{datetime_from_millis, is_storable_text, is_valid_property_name, parse_date, parse_datetime};

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
                            // the original's clients name a value field too (`query.string`)
                            .map(|p| p.split_once('.').map_or(p, |(prop, _)| prop).trim())
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

/// `<prop>.<field>`, as `sort` and `group` name values (`_reference` is a
/// filter only).
fn parse_value_key(key: &str) -> Option<(String, Field)> {
    let (prop, field) = key.split_once('.')?;
    (is_valid_property_name(prop) && prop != REFERENCES).then(|| Some((prop.to_owned(), Field::parse(field)?)))?
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
    if prop == REFERENCES {
        return references_filter(field, parts.next(), value);
    }
    // the original's clients ask `<prop>._id.exists` for any live value
    if field == "_id" {
        return Ok(
            (parts.next() == Some("exists") && is_valid_property_name(prop)).then(|| Filter {
                prop: prop.to_owned(),
                field: Field::Id,
                condition: Condition::Exists(value == "true"),
            }),
        );
    }
    let (Some(field), true) = (Field::parse(field), is_valid_property_name(prop)) else {
        return Ok(None);
    };
    Ok(Some(Filter {
        prop: prop.to_owned(),
        field,
        condition: parse_condition(field, parts.next(), value)?,
    }))
}

/// A filter on `_reference` (see [`REFERENCES`]): its fields are `reference`
/// and `property_type`, any other is refused (a typo would otherwise drop
/// the filter and list every entity as a referrer).
fn references_filter(field: &str, op: Option<&str>, value: &str) -> Result<Option<Filter>, ApiError> {
    let field = match field {
        "reference" => Field::Reference,
        "property_type" => Field::PropertyType,
        _ => {
            return Err(ApiError::new(
                ErrorCode::InvalidQuery,
                format!("Unknown field of {REFERENCES}: {field:?} (reference or property_type)"),
            ));
        }
    };
    let condition = parse_condition(field, op, value)?;
    // No `_reference` value carries a system property's name, so `ne` one
    // (the web app's `property_type.ne=_parent`) holds for every entity: it is
    // dropped rather than made a negation no index can answer.
    let holds_for_all = match &condition {
        Condition::Compare(Operator::Ne, Operand::Text(name)) => field == Field::PropertyType && name.starts_with('_'),
        _ => false,
    };
    if holds_for_all {
        return Ok(None);
    }
    Ok(Some(Filter {
        prop: REFERENCES.to_owned(),
        field,
        condition,
    }))
}

/// The condition of a filter on `field` with operator name `op` (rule 5: an
/// unknown operator, or one the field does not take, is ignored).
fn parse_condition(field: Field, op: Option<&str>, value: &str) -> Result<Condition, ApiError> {
    let op = op
        .and_then(Operator::parse)
        .filter(|op| field.allows(*op))
        .unwrap_or(Operator::Eq);
    Ok(match op {
        Operator::Exists => Condition::Exists(value == "true"),
        Operator::In => Condition::In(
            value
                .split(',')
                .map(|item| operand(field, item))
                .collect::<Result<_, _>>()?,
        ),
        Operator::Regex => parse_regex(value)?,
        _ => Condition::Compare(op, operand(field, value)?),
    })
}

fn operand(field: Field, text: &str) -> Result<Operand, ApiError> {
    let invalid = |what: &str| ApiError::new(ErrorCode::InvalidFilter, format!("Invalid {what}: {text:?}"));
    Ok(match field {
        Field::String | Field::Filename | Field::Filetype | Field::Language | Field::PropertyType
            if !is_storable_text(text) =>
        {
            return Err(invalid("text"));
        }
        Field::String | Field::Filename | Field::Filetype | Field::Language | Field::PropertyType => {
            Operand::Text(text.to_owned())
        }
        Field::Reference | Field::Id if is_valid_id(text) => Operand::Text(text.to_owned()),
        Field::Reference | Field::Id => return Err(ApiError::new(ErrorCode::InvalidId, "Invalid ID")),
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
    datetime_from_millis(text.trim().parse().ok()?)
}

/// Rule 2: `/pattern/flags`, or a bare pattern. Patterns follow the `regex`
/// crate's syntax, which is checked here so PostgreSQL never sees a pattern
/// the service would not accept.
fn parse_regex(value: &str) -> Result<Condition, ApiError> {
    let invalid = || ApiError::new(ErrorCode::InvalidRegex, "Invalid regex");
    let (pattern, flag_text) = match value.strip_prefix('/').and_then(|rest| rest.rsplit_once('/')) {
        Some((pattern, flags)) => (pattern, flags),
        None => (value, ""),
    };
    if flag_text.contains('x') || pattern.chars().count() > MAX_REGEX_LENGTH || !is_storable_text(pattern) {
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
    if has_class_set_syntax(pattern) {
        return Err(invalid());
    }
    Ok(Condition::Regex {
        pattern: pattern.to_owned(),
        flags,
    })
}

/// Whether a pattern uses character-class syntax that PostgreSQL reads
/// otherwise than the `regex` crate does (set operations `&&`, `--`, `~~`
/// and classes nested in classes): such a pattern is refused rather than
/// matched differently from what its syntax promises.
fn has_class_set_syntax(pattern: &str) -> bool {
    use regex_syntax::ast::{self, Visitor};
    struct Finder;
    impl Visitor for Finder {
        type Output = ();
        type Err = ();
        fn finish(self) -> Result<(), ()> {
            Ok(())
        }
        fn visit_class_set_binary_op_pre(&mut self, _: &ast::ClassSetBinaryOp) -> Result<(), ()> {
            Err(())
        }
        fn visit_class_set_item_pre(&mut self, item: &ast::ClassSetItem) -> Result<(), ()> {
            match item {
                ast::ClassSetItem::Bracketed(_) => Err(()),
                _ => Ok(()),
            }
        }
    }
    match ast::parse::Parser::new().parse(pattern) {
        Ok(parsed) => ast::visit(&parsed, Finder).is_err(),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

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
        assert_eq!((error.status().as_u16(), error.message.as_ref()), (400, "Invalid ID"));
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

    fn invalid_regex(value: &str) -> bool {
        match parse(&[("n.string.regex", value)]) {
            Err(error) => {
                assert_eq!(
                    (error.status().as_u16(), error.code.as_str(), error.message.as_ref()),
                    (400, "invalid_regex", "Invalid regex"),
                    "{value}"
                );
                true
            }
            Ok(_) => false,
        }
    }

    fn regex(value: &str) -> (String, RegexFlags) {
        match filter("n.string.regex", value).condition {
            Condition::Regex { pattern, flags } => (pattern, flags),
            other => panic!("{value}: {other:?}"),
        }
    }

    #[test]
    fn without_parameters_limit_is_100_skip_0_and_sort_empty_for_id_order() {
        let query = parse(&[]).unwrap();
        assert_eq!((query.limit, query.skip), (100, 0));
        assert!(query.sort.is_empty() && query.filters.is_empty() && query.group.is_empty());
        assert_eq!((query.props, query.words.len()), (None, 0));
        for raw in ["", "bogus", ",", "nothing"] {
            assert!(parse(&[("sort", raw)]).unwrap().sort.is_empty(), "{raw}");
        }
    }

    #[test]
    fn limit_has_no_upper_bound() {
        assert_eq!(parse(&[("limit", "1000000")]).unwrap().limit, 1_000_000);
        assert_eq!(parse(&[("limit", "1.5")]).unwrap().limit, 100, "not a whole number");
        assert_eq!(parse(&[("limit", "99999999999999999999")]).unwrap().limit, 100);
    }

    #[test]
    fn every_operator_of_the_table_is_taken_and_others_match_exactly() {
        use Operator::*;
        let id = "5f1a2b3c4d5e6f7a8b9c0d1e";
        let table: [(&str, &str, &[Operator]); 10] = [
            ("string", "x", &[Regex, In, Exists, Gt, Gte, Lt, Lte, Ne]),
            ("filename", "x", &[Regex, In, Exists, Gt, Gte, Lt, Lte, Ne]),
            ("filetype", "x", &[Regex, In, Exists, Gt, Gte, Lt, Lte, Ne]),
            ("language", "x", &[Regex, In, Exists, Gt, Gte, Lt, Lte, Ne]),
            ("reference", id, &[In, Exists]),
            ("number", "1", &[Gt, Gte, Lt, Lte, Ne, In, Exists]),
            ("boolean", "true", &[In, Exists]),
            ("date", "2024-03-01", &[Gt, Gte, Lt, Lte, In, Exists]),
            ("datetime", "2024-03-01T10:00:00Z", &[Gt, Gte, Lt, Lte, In, Exists]),
            ("filesize", "1", &[Gt, Gte, Lt, Lte, In, Exists]),
        ];
        let names = [
            ("ne", Ne),
            ("gt", Gt),
            ("gte", Gte),
            ("lt", Lt),
            ("lte", Lte),
            ("in", In),
            ("exists", Exists),
            ("regex", Regex),
        ];
        for (field, value, allowed) in table {
            let exact = filter(&format!("p.{field}"), value).condition;
            assert!(matches!(exact, Condition::Compare(Eq, _)), "{field}: {exact:?}");
            for (name, op) in names {
                let condition = filter(&format!("p.{field}.{name}"), value).condition;
                let taken = match &condition {
                    Condition::Compare(parsed, _) => *parsed,
                    Condition::In(_) => In,
                    Condition::Exists(_) => Exists,
                    Condition::Regex { .. } => Regex,
                };
                if allowed.contains(&op) {
                    assert_eq!(taken, op, "{field}.{name}");
                } else {
                    assert_eq!(condition, exact, "{field}.{name} is not in the table: exact");
                }
            }
            let unknown = filter(&format!("p.{field}.between"), value).condition;
            assert_eq!(unknown, exact, "{field}.between");
        }
    }

    #[test]
    fn in_takes_a_comma_separated_list_on_every_field() {
        let id = "5f1a2b3c4d5e6f7a8b9c0d1e";
        assert_eq!(
            filter("p.string.in", "a,b c,").condition,
            Condition::In(vec![
                Operand::Text("a".into()),
                Operand::Text("b c".into()),
                Operand::Text("".into())
            ])
        );
        assert_eq!(
            filter("p.reference.in", &format!("{id},{id}")).condition,
            Condition::In(vec![Operand::Text(id.into()), Operand::Text(id.into())])
        );
        assert_eq!(
            filter("p.boolean.in", "true,false,yes").condition,
            Condition::In(vec![
                Operand::Boolean(true),
                Operand::Boolean(false),
                Operand::Boolean(false)
            ])
        );
        let day = |d| Operand::Date(NaiveDate::from_ymd_opt(2024, 3, d).unwrap());
        assert_eq!(
            filter("p.date.in", "2024-03-01,1709337600000").condition,
            Condition::In(vec![day(1), day(2)]),
            "milliseconds in a list too"
        );
        assert_eq!(
            filter("p.filesize.in", "1, 2").condition,
            Condition::In(vec![Operand::Integer(1), Operand::Integer(2)])
        );
        match filter("p.datetime.in", "2024-03-01T10:00:00Z,1709287200000").condition {
            Condition::In(items) => assert_eq!(items[0], items[1]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn exists_is_true_only_for_true() {
        for field in [
            "string",
            "number",
            "boolean",
            "date",
            "datetime",
            "reference",
            "filesize",
            "filename",
        ] {
            let key = format!("p.{field}.exists");
            assert_eq!(filter(&key, "true").condition, Condition::Exists(true), "{field}");
            for other in ["false", "TRUE", "True", "1", "yes", "", " true"] {
                assert_eq!(
                    filter(&key, other).condition,
                    Condition::Exists(false),
                    "{field}={other}"
                );
            }
        }
    }

    #[test]
    fn boolean_values_other_than_true_are_false() {
        assert_eq!(
            filter("b.boolean", "true").condition,
            Condition::Compare(Operator::Eq, Operand::Boolean(true))
        );
        for other in ["false", "1", "yes", "", "True"] {
            assert_eq!(
                filter("b.boolean", other).condition,
                Condition::Compare(Operator::Eq, Operand::Boolean(false)),
                "{other}"
            );
        }
    }

    #[test]
    fn dates_and_datetimes_take_milliseconds_with_every_operator() {
        let at = DateTime::from_timestamp_millis(1_709_287_200_000).unwrap();
        for (name, op) in [
            ("", Operator::Eq),
            (".gt", Operator::Gt),
            (".gte", Operator::Gte),
            (".lt", Operator::Lt),
            (".lte", Operator::Lte),
        ] {
            assert_eq!(
                filter(&format!("d.datetime{name}"), "1709287200000").condition,
                Condition::Compare(op, Operand::Datetime(at)),
                "{name}"
            );
            assert_eq!(
                filter(&format!("d.date{name}"), "1709287200000").condition,
                Condition::Compare(op, Operand::Date(at.date_naive())),
                "{name}"
            );
        }
        assert_eq!(
            filter("d.datetime", "2024-03-01T10:00:00Z").condition,
            filter("d.datetime", "1709287200000").condition
        );
    }

    #[test]
    fn any_malformed_id_in_a_reference_filter_is_invalid_id() {
        let id = "5f1a2b3c4d5e6f7a8b9c0d1e";
        for (key, value) in [
            ("owner.reference", "5F1A2B3C4D5E6F7A8B9C0D1E".to_owned()),
            ("owner.reference", format!("{id}0")),
            ("owner.reference", "".to_owned()),
            ("owner.reference.in", format!("{id},nope")),
            ("owner.reference.in", format!("{id},")),
            ("owner.reference.gt", "nope".to_owned()),
        ] {
            let error = parse(&[(key, &value)]).unwrap_err();
            assert_eq!(
                (error.status().as_u16(), error.code.as_str(), error.message.as_ref()),
                (400, "invalid_id", "Invalid ID"),
                "{key}={value}"
            );
        }
        assert_eq!(
            filter("owner.reference.exists", "nope").condition,
            Condition::Exists(false)
        );
    }

    #[test]
    fn regex_flags_other_than_i_m_s_are_dropped() {
        let flags = |i, m, s| RegexFlags {
            case_insensitive: i,
            multi_line: m,
            dot_all: s,
        };
        assert_eq!(regex("/a/").1, flags(false, false, false));
        assert_eq!(regex("/a/i").1, flags(true, false, false));
        assert_eq!(regex("/a/m").1, flags(false, true, false));
        assert_eq!(regex("/a/s").1, flags(false, false, true));
        assert_eq!(regex("/a/gyudvIMS").1, flags(false, false, false));
        assert_eq!(regex("/a/gsu").1, flags(false, false, true));
        for with_x in ["/a/x", "/a/ix", "/a/xi", "/a/gmsx"] {
            assert!(invalid_regex(with_x), "{with_x}");
        }
    }

    #[test]
    fn a_regex_value_not_wrapped_in_slashes_is_the_pattern_as_it_is() {
        let none = RegexFlags::default();
        assert_eq!(regex("image/png"), ("image/png".to_owned(), none));
        assert_eq!(regex("a/b/i"), ("a/b/i".to_owned(), none));
        assert_eq!(regex("x"), ("x".to_owned(), none), "x is the pattern, not a flag");
        assert_eq!(regex("/a/b/i").0, "a/b", "the last slash ends the pattern");
        assert_eq!(regex("//").0, "");
    }

    #[test]
    fn a_regex_pattern_the_regex_crate_rejects_is_invalid_regex() {
        for bad in [
            "/(?=a)/",
            "/(?!a)/",
            "/(?<=a)b/",
            "/(?<!a)b/",
            r"/(a)\1/",
            "(a",
            "/*a/",
            "/[z-a]/",
            r"/\/",
            r"/[\b]/",
            "/a{99999}{99999}/",
        ] {
            assert!(invalid_regex(bad), "{bad}");
        }
        assert!(!invalid_regex(r"/\bdune\b/i"));
    }

    #[test]
    fn class_set_operations_and_nested_classes_are_invalid_regex() {
        for pattern in ["[a&&b]", "[a-z--c]", "[a~~b]", "[a[bc]]", "x[^[0-9]]"] {
            assert!(invalid_regex(pattern), "{pattern}");
        }
        for pattern in ["[abc]", "[^a-z]", "[[:alpha:]]", r"[\w.-]+@", r"\d{3}"] {
            assert!(!invalid_regex(pattern), "{pattern}");
        }
    }

    #[test]
    fn a_regex_pattern_over_512_characters_is_invalid_regex() {
        let at_limit = "a".repeat(512);
        assert_eq!(regex(&format!("/{at_limit}/i")).0, at_limit);
        assert_eq!(regex(&at_limit).0, at_limit);
        assert!(invalid_regex(&format!("/{at_limit}a/")));
        assert!(invalid_regex(&format!("{at_limit}a")));
        // characters, not bytes
        let wide = "é".repeat(512);
        assert_eq!(regex(&format!("/{wide}/")).0, wide);
        assert!(invalid_regex(&format!("/{wide}é/")));
    }

    #[test]
    fn file_fields_and_language_are_filtered_as_strings() {
        for field in ["filename", "filetype", "language"] {
            assert_eq!(
                filter(&format!("p.{field}.gte"), "image/jpeg").condition,
                Condition::Compare(Operator::Gte, Operand::Text("image/jpeg".into()))
            );
        }
    }

    #[test]
    fn several_filters_are_all_kept_even_on_one_key() {
        let query = parse(&[("title.string", "A"), ("title.string", "B"), ("price.number.gt", "1")]).unwrap();
        assert_eq!(query.filters.len(), 3);
    }

    #[test]
    fn type_string_filters_on_the_type_property() {
        let filter = filter("_type.string", "book");
        assert_eq!((filter.prop.as_str(), filter.field), ("_type", Field::String));
        assert_eq!(
            filter.condition,
            Condition::Compare(Operator::Eq, Operand::Text("book".into()))
        );
    }

    #[test]
    fn a_leading_minus_sorts_descending() {
        let query = parse(&[("sort", "-_id,price.number,-title.string")]).unwrap();
        let keys: Vec<(SortTarget, bool)> = query.sort.into_iter().map(|k| (k.target, k.descending)).collect();
        let value = |prop: &str, field| SortTarget::Value {
            prop: prop.to_owned(),
            field,
        };
        assert_eq!(
            keys,
            [
                (SortTarget::Id, true),
                (value("price", Field::Number), false),
                (value("title", Field::String), true)
            ]
        );
    }

    #[test]
    fn props_lists_names_and_an_empty_list_returns_only_id() {
        assert_eq!(parse(&[("props", "")]).unwrap().props, Some(vec![]));
        assert_eq!(
            parse(&[("props", "a,,b")]).unwrap().props,
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
    }

    #[test]
    fn props_entries_naming_a_field_select_the_property() {
        assert_eq!(
            parse(&[("props", "ordinal.number,group,query.string,_type.string")])
                .unwrap()
                .props,
            Some(["ordinal", "group", "query", "_type"].map(str::to_owned).to_vec())
        );
        // nothing before the dot names nothing; spaces around it are dropped
        assert_eq!(
            parse(&[("props", ".string, name .string ,")]).unwrap().props,
            Some(vec!["name".to_owned()])
        );
    }

    #[test]
    fn id_exists_asks_for_any_live_value_and_other_id_filters_are_ignored() {
        let filters = parse(&[("table._id.exists", "true"), ("add_from._id.exists", "false")])
            .unwrap()
            .filters;
        assert_eq!(
            filters,
            [("table", true), ("add_from", false)].map(|(prop, exists)| Filter {
                prop: prop.to_owned(),
                field: Field::Id,
                condition: Condition::Exists(exists),
            })
        );
        for key in ["table._id", "table._id.ne", "a.b._id.exists"] {
            assert!(parse(&[(key, "x")]).unwrap().filters.is_empty(), "{key}");
        }
    }

    #[test]
    fn reference_filters_take_reference_and_property_type_with_their_operators() {
        let id = "5f1a2b3c4d5e6f7a8b9c0d1e";
        let referrers = filter("_reference.reference", id);
        assert_eq!(
            (referrers.prop.as_str(), referrers.field),
            ("_reference", Field::Reference)
        );
        assert_eq!(
            filter("_reference.reference.in", &format!("{id},{id}")).condition,
            Condition::In(vec![Operand::Text(id.into()), Operand::Text(id.into())])
        );
        let by_name = filter("_reference.property_type.ne", "author");
        assert_eq!(by_name.field, Field::PropertyType);
        assert_eq!(
            by_name.condition,
            Condition::Compare(Operator::Ne, Operand::Text("author".into()))
        );
        assert!(matches!(
            filter("_reference.property_type.regex", "/^a/i").condition,
            Condition::Regex { .. }
        ));
        let error = parse(&[("_reference.reference", "nope")]).unwrap_err();
        assert_eq!(error.code.as_str(), "invalid_id");
    }

    #[test]
    fn property_type_ne_of_a_system_name_matches_every_entity_and_is_dropped() {
        let query = parse(&[
            ("_reference.reference", "5f1a2b3c4d5e6f7a8b9c0d1e"),
            ("_reference.property_type.ne", "_parent"),
            ("group", "_type.reference"),
        ])
        .unwrap();
        assert_eq!(query.filters.len(), 1);
        assert!(!query.is_expensive(), "the web app's referrer query is indexed");
    }

    #[test]
    fn an_unknown_field_of_reference_is_invalid_query_and_reference_is_no_sort_or_group_key() {
        for key in ["_reference.string", "_reference.x.ne", "_reference._id.exists"] {
            let error = parse(&[(key, "a")]).unwrap_err();
            assert_eq!(
                (error.status().as_u16(), error.code.as_str()),
                (400, "invalid_query"),
                "{key}"
            );
        }
        let query = parse(&[("sort", "_reference.reference"), ("group", "_reference.reference")]).unwrap();
        assert!(query.sort.is_empty() && query.group.is_empty());
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
