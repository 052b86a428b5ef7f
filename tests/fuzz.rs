//! Fuzz tests: arbitrary and structured-random input thrown at the pure
//! parsers a request reaches before any I/O — the list query string
//! (`ListQuery::parse`), formulas (`Formula::parse` and evaluation), write
//! bodies (`parse_body`) and the counter arithmetic. Every property holds for
//! any input: no panic, a refusal is a 4xx `ApiError` with a code and a
//! message (never a 500), and what is accepted respects the parser's limits
//! and holds only what PostgreSQL can store, so it cannot fail there as a 500
//! either.
//!
//! Each property runs a modest number of cases so that `cargo test` stays
//! quick; `PROPTEST_CASES=100000 cargo test --test fuzz` searches harder.
//! A failure prints the smallest input found; keep it as a unit test beside
//! the code it breaks.

use std::cell::RefCell;

use chrono::NaiveDate;
use eds::error::ApiError;
use eds::formula::{FieldRef, Formula, FormulaValue};
use eds::model::counter;
use eds::model::ids::is_valid_id;
use eds::model::value::{Value, is_language_code, is_storable_text, is_valid_property_name, parse_body};
use eds::query::{Condition, DEFAULT_LIMIT, ListQuery, Operand, SortTarget};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Map, Value as Json};

/// `cases` per property, unless `PROPTEST_CASES` says otherwise.
fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        // A failure prints its shrunk input; it becomes a unit test, not a file.
        failure_persistence: None,
        ..Config::default()
    }
}

/// A refusal a client can act on: 4xx, a snake_case code and a message.
fn assert_client_error(error: &ApiError) {
    assert!(error.status().is_client_error(), "not a 4xx: {error}");
    assert!(
        !error.code.as_str().is_empty() && error.code.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
        "code {:?}",
        error.code
    );
    assert!(!error.message.trim().is_empty(), "empty message: {error}");
}

/// Whether PostgreSQL's `date` and `timestamptz` hold this day: they start on
/// 4714-11-24 BC (and end after the last year chrono holds). An earlier day
/// accepted by a parser would be refused by the database, as a 500.
fn storable(date: NaiveDate) -> bool {
    date >= NaiveDate::from_ymd_opt(-4713, 11, 24).unwrap()
}

// ---------------------------------------------------------------------------
// Shared generators

/// Property names: mostly valid ones, some near misses and anything at all.
fn prop_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z_][a-z0-9_-]{0,12}",
        1 => prop::sample::select(vec!["_type", "_parent", "name", "price", "service_api_key", "service_user"])
            .prop_map(str::to_owned),
        1 => "[a-z]{101}",
        1 => ".{0,12}",
    ]
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,40}", "[ -~]{0,40}", "[a-z0-9é€😀\\\\'\" ,./\\x00-]{0,24}"]
}

// ---------------------------------------------------------------------------
// (a) The list query string

const FIELDS: [&str; 10] = [
    "string",
    "number",
    "boolean",
    "date",
    "datetime",
    "reference",
    "filesize",
    "filename",
    "filetype",
    "language",
];
const OPERATORS: [&str; 8] = ["ne", "gt", "gte", "lt", "lte", "in", "exists", "regex"];

fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(FIELDS.to_vec()).prop_map(str::to_owned),
        1 => "[a-z]{0,8}",
    ]
}

/// `prop.field[.op[.extra]]`, or a key of another form.
fn filter_key() -> impl Strategy<Value = String> {
    let op = prop_oneof![
        2 => Just(None),
        6 => prop::sample::select(OPERATORS.to_vec()).prop_map(|op| Some(op.to_owned())),
        1 => "[a-z]{0,6}(\\.[a-z]{0,4})?".prop_map(Some),
    ];
    prop_oneof![
        8 => (prop_name(), field_name(), op).prop_map(|(prop, field, op)| match op {
            Some(op) => format!("{prop}.{field}.{op}"),
            None => format!("{prop}.{field}"),
        }),
        1 => any_text(),
    ]
}

/// A regex pattern: drawn from regex syntax, sometimes around the length limit.
fn pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-z0-9.*+?()\\[\\]{}|^$\\\\,:dwsbB-]{0,40}",
        1 => (505usize..520).prop_map(|n| "a".repeat(n)),
        1 => (505usize..520).prop_map(|n| "(".repeat(n)),
        1 => (1usize..6, 1usize..6).prop_map(|(a, b)| format!("(a{{1,{a}00}}){{{b}00}}")),
        1 => ".{0,30}",
    ]
}

fn regex_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (pattern(), "[imsgxuy]{0,4}").prop_map(|(p, flags)| format!("/{p}/{flags}")),
        1 => pattern(),
        1 => (pattern(), ".{0,3}").prop_map(|(p, rest)| format!("/{p}{rest}")),
    ]
}

fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|n| n.to_string()),
        "-?[0-9]{1,30}(\\.[0-9]{0,5})?",
        "[0-9]{300,320}",
        Just("NaN".to_owned()),
        Just("inf".to_owned()),
        Just(" 12 ".to_owned()),
    ]
}

/// Years anywhere chrono parses, around PostgreSQL's first day (4714 BC) and near now.
fn year() -> impl Strategy<Value = i32> {
    prop_oneof![-300000i32..300000, -4715i32..-4711, 1900i32..2100]
}

fn date_text() -> impl Strategy<Value = String> {
    let zone = "(Z|[+-][0-9]{2}:[0-9]{2}|\\.[0-9]{1,9}Z)?";
    prop_oneof![
        (year(), 0u32..14, 0u32..33).prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}")),
        (year(), 1u32..13, 1u32..29, 0u32..25, 0u32..61, zone)
            .prop_map(|(y, m, d, h, min, zone)| format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:00{zone}")),
        any::<i64>().prop_map(|ms| ms.to_string()),
        (-300_000_000_000_000i64..100_000_000_000_000).prop_map(|ms| ms.to_string()),
    ]
}

fn id_text() -> impl Strategy<Value = String> {
    prop_oneof!["[0-9a-f]{24}", "[0-9a-fA-Z]{20,26}"]
}

fn filter_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any_text(),
        number_text(),
        date_text(),
        id_text(),
        regex_value(),
        prop::sample::select(vec!["true", "false", "TRUE", "", ","]).prop_map(str::to_owned),
        prop::collection::vec(prop_oneof![number_text(), id_text(), date_text()], 0..5)
            .prop_map(|items| items.join(",")),
    ]
}

fn sort_key() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop_oneof![Just("_id".to_owned()), filter_key(), any_text()],
    )
        .prop_map(|(desc, key)| if desc { format!("-{key}") } else { key })
}

/// One query parameter, decoded.
fn query_pair() -> impl Strategy<Value = (String, String)> {
    let comma_list = |item: BoxedStrategy<String>| prop::collection::vec(item, 0..5).prop_map(|items| items.join(","));
    prop_oneof![
        8 => (filter_key(), filter_value()),
        2 => (filter_key(), regex_value()),
        1 => prop_oneof![number_text(), any_text()].prop_map(|v| ("limit".to_owned(), v)),
        1 => prop_oneof![number_text(), any_text()].prop_map(|v| ("skip".to_owned(), v)),
        1 => comma_list(sort_key().boxed()).prop_map(|v| ("sort".to_owned(), v)),
        1 => comma_list(prop_name().boxed()).prop_map(|v| ("props".to_owned(), v)),
        1 => comma_list(filter_key().boxed()).prop_map(|v| ("group".to_owned(), v)),
        1 => any_text().prop_map(|v| ("q".to_owned(), v)),
        1 => (any_text(), any_text()),
    ]
}

/// What every accepted query must satisfy, given the parameters it came from.
fn check_accepted_query(params: &[(String, String)], query: &ListQuery) {
    let last = |name: &str| params.iter().rev().find(|(key, _)| key == name).map(|(_, v)| v.trim());
    let expected_limit = last("limit")
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|l| *l > 0)
        .unwrap_or(DEFAULT_LIMIT);
    assert_eq!(
        query.limit, expected_limit,
        "limit is the last positive one, else the default"
    );
    let expected_skip = last("skip")
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|s| *s >= 0)
        .unwrap_or(0);
    assert_eq!(query.skip, expected_skip, "skip is the last non-negative one, else 0");
    assert!(query.filters.len() <= params.len());
    for filter in &query.filters {
        assert!(is_valid_property_name(&filter.prop), "{:?}", filter.prop);
        match &filter.condition {
            Condition::Regex { pattern, .. } => {
                assert!(
                    pattern.chars().count() <= 512,
                    "a regex over 512 characters was accepted"
                );
                assert!(is_storable_text(pattern), "{pattern:?}");
                assert!(
                    regex::Regex::new(pattern).is_ok(),
                    "invalid regex accepted: {pattern:?}"
                );
            }
            Condition::Compare(_, operand) => check_operand(operand),
            Condition::In(operands) => operands.iter().for_each(check_operand),
            Condition::Exists(_) => {}
        }
    }
    for key in &query.sort {
        if let SortTarget::Value { prop, .. } = &key.target {
            assert!(is_valid_property_name(prop), "{prop:?}");
        }
    }
    for (prop, _) in &query.group {
        assert!(is_valid_property_name(prop), "{prop:?}");
    }
    for word in &query.words {
        assert!(!word.is_empty() && word.chars().count() <= 20, "{word:?}");
        assert!(is_storable_text(word), "{word:?}");
        assert!(!word.chars().any(char::is_whitespace), "{word:?}");
    }
    if let Some(props) = &query.props {
        assert!(props.iter().all(|p| !p.is_empty() && p.trim() == p));
    }
}

fn check_operand(operand: &Operand) {
    match operand {
        Operand::Date(date) => assert!(storable(*date), "date {date} accepted"),
        Operand::Datetime(at) => assert!(storable(at.date_naive()), "datetime {at} accepted"),
        Operand::Text(text) => assert!(is_storable_text(text), "{text:?}"),
        _ => {}
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn list_query_never_panics_and_refuses_only_with_4xx(params in prop::collection::vec(query_pair(), 0..8)) {
        match ListQuery::parse(&params) {
            Ok(query) => check_accepted_query(&params, &query),
            Err(error) => assert_client_error(&error),
        }
    }

    #[test]
    fn list_query_survives_arbitrary_pairs(params in prop::collection::vec((".{0,24}", ".{0,24}"), 0..6)) {
        match ListQuery::parse(&params) {
            Ok(query) => check_accepted_query(&params, &query),
            Err(error) => assert_client_error(&error),
        }
    }

    #[test]
    fn date_filters_are_accepted_only_where_postgresql_holds_them(
        field in prop::sample::select(vec!["date", "datetime"]),
        op in prop::sample::select(vec!["", ".gt", ".gte", ".lt", ".lte", ".ne", ".in"]),
        values in prop::collection::vec(date_text(), 1..3),
    ) {
        let params = vec![(format!("due.{field}{op}"), values.join(","))];
        match ListQuery::parse(&params) {
            Ok(query) => check_accepted_query(&params, &query),
            Err(error) => {
                assert_client_error(&error);
                prop_assert_eq!(error.code, "invalid_filter");
            }
        }
    }

    #[test]
    fn regex_filters_are_accepted_only_when_valid_and_at_most_512_characters(
        field in prop::sample::select(vec!["string", "filename", "filetype", "language"]),
        value in regex_value(),
    ) {
        let params = vec![(format!("title.{field}.regex"), value.clone())];
        let (pattern, flags) = match value.strip_prefix('/').and_then(|rest| rest.rsplit_once('/')) {
            Some((pattern, flags)) => (pattern, flags),
            None => (value.as_str(), ""),
        };
        match ListQuery::parse(&params) {
            Ok(query) => {
                let Condition::Regex { pattern: accepted, flags: taken } = &query.filters[0].condition else {
                    panic!("a regex filter parsed as {:?}", query.filters[0].condition);
                };
                prop_assert_eq!(accepted.as_str(), pattern);
                prop_assert!(pattern.chars().count() <= 512);
                prop_assert!(regex::Regex::new(pattern).is_ok());
                prop_assert!(!flags.contains('x'));
                prop_assert_eq!(
                    (taken.case_insensitive, taken.multi_line, taken.dot_all),
                    (flags.contains('i'), flags.contains('m'), flags.contains('s'))
                );
            }
            Err(error) => {
                assert_client_error(&error);
                prop_assert_eq!((error.code.as_str(), error.message.as_ref()), ("invalid_regex", "Invalid regex"));
                // Valid also means compiling within the parser's 1 MiB size limit, no NUL,
                // and no class syntax PostgreSQL reads otherwise (set operations, nested classes).
                let compiles = regex::RegexBuilder::new(pattern).size_limit(1 << 20).build().is_ok();
                prop_assert!(
                    pattern.chars().count() > 512
                        || flags.contains('x')
                        || !compiles
                        || !is_storable_text(pattern)
                        || pattern.contains('[')
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// (b) Formulas

const FORMULA_OPERATORS: [&str; 23] = [
    "CONCAT",
    "CONCAT_WS",
    "SUM",
    "SUBTRACT",
    "MULTIPLY",
    "DIVIDE",
    "COUNT",
    "AVERAGE",
    "MIN",
    "MAX",
    "ABS",
    "ROUND",
    "EQ",
    "NE",
    "GT",
    "GTE",
    "LT",
    "LTE",
    "IN",
    "NIN",
    "EXISTS",
    "IF",
    "WHEN",
];

fn type_or_any() -> impl Strategy<Value = String> {
    prop_oneof![Just("*".to_owned()), "[a-z][a-z0-9_]{0,6}"]
}

/// A field reference of every form the grammar has, credentials included.
fn field_ref_token() -> impl Strategy<Value = String> {
    let prop = prop_oneof![
        6 => "[a-z][a-z0-9_-]{0,8}",
        1 => Just("_id".to_owned()),
        1 => prop::sample::select(vec!["service_api_key", "service_user"]).prop_map(str::to_owned),
    ];
    prop_oneof![
        prop.clone(),
        (type_or_any(), prop.clone()).prop_map(|(t, p)| format!("_child.{t}.{p}")),
        (type_or_any(), prop.clone()).prop_map(|(t, p)| format!("_referrer.{t}.{p}")),
        ("[a-z_][a-z0-9_]{0,6}", type_or_any(), prop).prop_map(|(via, t, p)| format!("{via}.{t}.{p}")),
    ]
}

/// A finite number as the grammar spells it (`-?digits(.digits)?`).
fn number_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        (-1000i64..1000).prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |n| n.is_finite())
            .prop_map(|n| n.to_string()),
        prop::sample::select(vec!["0", "-0", "0.0", "1.005", "2.5", "-2.5", "100", "101"]).prop_map(str::to_owned),
    ]
}

/// Text of a quoted literal: anything but backslashes (whose escaping rule
/// is covered by the unit tests), quotes of either kind included.
fn literal_text() -> impl Strategy<Value = String> {
    "[a-z0-9 é€😀'\"\t\n,.-]{0,12}"
}

fn quote(text: &str, quote: char) -> String {
    let escaped = text.replace(quote, &format!("\\{quote}"));
    format!("{quote}{escaped}{quote}")
}

/// A token the grammar accepts.
fn valid_token() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(FORMULA_OPERATORS.to_vec()).prop_map(str::to_owned),
        3 => field_ref_token(),
        2 => number_literal(),
        2 => (literal_text(), prop::sample::select(vec!['\'', '"'])).prop_map(|(t, q)| quote(&t, q)),
        1 => prop::sample::select(vec!["true", "false"]).prop_map(str::to_owned),
    ]
}

/// A token, sometimes one the grammar refuses.
fn any_token() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => valid_token(),
        1 => "[0-9]{310,320}",
        1 => "[\"'][a-z ]{0,4}",
        1 => "'[a-z]{0,3}'[a-z]{1,3}",
        1 => "[a-zA-Z0-9_.*$-]{1,12}",
        1 => "[^ \t\n]{1,6}",
    ]
}

fn separator() -> impl Strategy<Value = String> {
    prop_oneof![8 => Just(" ".to_owned()), 1 => "[ \t\n\r\u{a0}\u{2003}]{1,3}"]
}

fn join(tokens: &[String], separators: &[String]) -> String {
    let mut text = String::new();
    for (i, token) in tokens.iter().enumerate() {
        if i > 0 {
            text.push_str(&separators[i % separators.len()]);
        }
        text.push_str(token);
    }
    text
}

fn formula_value() -> impl Strategy<Value = FormulaValue> {
    prop_oneof![
        any::<f64>().prop_map(FormulaValue::Number),
        (-100i32..100).prop_map(|n| FormulaValue::Number(n.into())),
        "[a-c0-9-]{0,3}".prop_map(FormulaValue::Text),
        any::<bool>().prop_map(FormulaValue::Boolean),
    ]
}

/// Values for field references: each reference gets the pool its name's
/// length points at, so one reference always reads the same values.
fn value_pools() -> impl Strategy<Value = Vec<Vec<FormulaValue>>> {
    prop::collection::vec(prop::collection::vec(formula_value(), 0..4), 1..5)
}

fn field_name_of(field: &FieldRef) -> String {
    format!("{field:?}")
}

/// Evaluates `formula` over `pools` and checks what any evaluation must hold.
fn check_evaluation(formula: &Formula, pools: &[Vec<FormulaValue>]) {
    let asked = RefCell::new(Vec::new());
    let lookup = |field: &FieldRef| {
        asked.borrow_mut().push(field.clone());
        pools[field_name_of(field).len() % pools.len()].clone()
    };
    let all = formula.evaluate_all(&lookup);
    let one = formula.evaluate(&lookup);
    assert!(
        asked.borrow().iter().all(|field| !field.reads_credentials()),
        "a credential was read"
    );
    assert!(formula.references().iter().all(|field| !field.reads_credentials()));
    for value in &all {
        if let FormulaValue::Number(number) = value {
            assert!(number.is_finite(), "a formula gave {number}");
        }
        // Every result can be stored and shown.
        let _ = (value.to_text(), value.to_value_json());
    }
    assert_eq!(one, if all.len() == 1 { all.first().cloned() } else { None });
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn formulas_of_valid_tokens_parse_and_evaluate_without_panicking(
        tokens in prop::collection::vec(valid_token(), 1..12),
        separators in prop::collection::vec(separator(), 1..4),
        pools in value_pools(),
    ) {
        let text = join(&tokens, &separators);
        let formula = Formula::parse(&text);
        prop_assert!(formula.is_ok(), "{:?} refused: {:?}", text, formula);
        check_evaluation(&formula.unwrap(), &pools);
    }

    #[test]
    fn formulas_of_any_tokens_parse_or_give_a_reason(
        tokens in prop::collection::vec(any_token(), 0..12),
        separators in prop::collection::vec(separator(), 1..4),
        pools in value_pools(),
    ) {
        match Formula::parse(&join(&tokens, &separators)) {
            Ok(formula) => check_evaluation(&formula, &pools),
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }

    #[test]
    fn formula_text_of_any_characters_never_panics(text in "\\PC{0,64}|.{0,64}", pools in value_pools()) {
        match Formula::parse(&text) {
            Ok(formula) => check_evaluation(&formula, &pools),
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }

    #[test]
    fn quoted_literals_read_back_as_written(text in literal_text(), q in prop::sample::select(vec!['\'', '"'])) {
        let formula = Formula::parse(&quote(&text, q)).unwrap();
        prop_assert_eq!(formula.evaluate(&|_: &FieldRef| Vec::new()), Some(FormulaValue::Text(text)));
    }

    #[test]
    fn number_literals_read_back_as_written(literal in number_literal()) {
        let formula = Formula::parse(&literal).unwrap();
        let expected: f64 = literal.parse().unwrap();
        // CONCAT (appended to a formula without an operator) writes the number as text.
        prop_assert_eq!(
            formula.evaluate(&|_: &FieldRef| Vec::new()),
            Some(FormulaValue::Text(FormulaValue::Number(expected).to_text()))
        );
    }
}

// ---------------------------------------------------------------------------
// (c) Write bodies

fn json_leaf() -> impl Strategy<Value = Json> {
    prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::from),
        any::<u64>().prop_map(Json::from),
        any::<f64>().prop_filter_map("finite", |n| serde_json::Number::from_f64(n).map(Json::Number)),
        any_text().prop_map(Json::String),
    ]
}

fn json_value() -> impl Strategy<Value = Json> {
    json_leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
            prop::collection::vec((any_text(), inner), 0..6)
                .prop_map(|pairs| Json::Object(pairs.into_iter().collect())),
        ]
    })
}

/// A value of a key of a property object: the right kind or any other.
fn field_value(key: &'static str) -> BoxedStrategy<Json> {
    let right = match key {
        "type" => prop_name().prop_map(Json::String).boxed(),
        "_id" | "reference" => id_text().prop_map(Json::String).boxed(),
        "string" | "filename" | "filetype" => prop_oneof![
            any_text(),
            "[a-zA-Zé€😀 /-]{0,4}[0-9]{0,6}[a-zé€-]{0,3}",
            "[A-Z]{1,3}-[0-9]{300,320}",
        ]
        .prop_map(Json::String)
        .boxed(),
        "number" | "filesize" => prop_oneof![any::<i64>().prop_map(Json::from), json_leaf()].boxed(),
        "boolean" => any::<bool>().prop_map(Json::Bool).boxed(),
        "date" | "datetime" => date_text().prop_map(Json::String).boxed(),
        "language" => "[a-zA-Z]{1,3}".prop_map(Json::String).boxed(),
        _ => prop_oneof![Just(Json::Bool(true)), Just(Json::Bool(false)), json_leaf()].boxed(),
    };
    prop_oneof![6 => right, 1 => json_value()].boxed()
}

const BODY_KEYS: [&str; 13] = [
    "type",
    "_id",
    "string",
    "number",
    "boolean",
    "date",
    "datetime",
    "reference",
    "filename",
    "filesize",
    "filetype",
    "language",
    "counter",
];

/// A property object: `type` nearly always, then some of the other keys.
fn property_object() -> impl Strategy<Value = Json> {
    let entries: Vec<BoxedStrategy<Option<(String, Json)>>> = BODY_KEYS
        .iter()
        .map(|key| {
            let chance = if *key == "type" { 0.95 } else { 0.2 };
            prop::option::weighted(chance, field_value(key))
                .prop_map(move |value| value.map(|v| (key.to_string(), v)))
                .boxed()
        })
        .collect();
    entries.prop_map(|entries| Json::Object(entries.into_iter().flatten().collect::<Map<_, _>>()))
}

/// A counter write: `counter` with a `string` holding digits among any text.
fn counter_object() -> impl Strategy<Value = Json> {
    (
        prop_name(),
        prop_oneof![Just(Json::Bool(true)), json_leaf()],
        field_value("string"),
    )
        .prop_map(|(name, counter, string)| serde_json::json!({"type": name, "counter": counter, "string": string}))
}

fn body() -> impl Strategy<Value = Json> {
    prop_oneof![
        6 => prop::collection::vec(property_object(), 0..4).prop_map(Json::Array),
        3 => property_object(),
        2 => counter_object(),
        1 => json_value(),
    ]
}

/// What every accepted body must satisfy.
fn check_accepted_body(json: Option<&Json>, values: &[eds::model::value::ValueInput]) {
    match json {
        Some(Json::Array(items)) => assert_eq!(values.len(), items.len()),
        Some(_) => assert_eq!(values.len(), 1),
        None => {}
    }
    for input in values {
        assert!(is_valid_property_name(&input.prop), "{:?}", input.prop);
        assert!(input.replaces.as_deref().is_none_or(is_valid_id));
        assert!(input.language.as_deref().is_none_or(is_language_code));
        match &input.value {
            Value::Number(number) => assert!(number.is_finite()),
            Value::Counter { step } => assert!(step.is_finite()),
            Value::CounterString { string, number } => {
                assert!(number.is_finite(), "counter {string:?} numbered {number}");
                assert!(is_storable_text(string), "{string:?}");
                assert!(string.bytes().any(|b| b.is_ascii_digit()));
            }
            Value::File {
                filename,
                filesize,
                filetype,
            } => {
                assert!(*filesize >= 0 && !filename.trim().is_empty() && !filetype.trim().is_empty());
                assert!(
                    is_storable_text(filename) && is_storable_text(filetype),
                    "{filename:?} {filetype:?}"
                );
            }
            Value::String(text) => assert!(is_storable_text(text), "{text:?}"),
            Value::Date(date) => assert!(storable(*date), "date {date} accepted"),
            Value::Datetime(at) => assert!(storable(at.date_naive()), "datetime {at} accepted"),
            Value::Boolean(_) => {}
            Value::Reference(id) => assert!(is_valid_id(id)),
        }
    }
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn write_bodies_are_parsed_or_refused_with_4xx(json in body()) {
        match parse_body(json.to_string().as_bytes()) {
            Ok(values) => check_accepted_body(Some(&json), &values),
            Err(error) => assert_client_error(&error),
        }
    }

    #[test]
    fn date_values_are_accepted_only_where_postgresql_holds_them(
        field in prop::sample::select(vec!["date", "datetime"]),
        value in date_text(),
    ) {
        let json = serde_json::json!({"type": "due", field: value});
        match parse_body(json.to_string().as_bytes()) {
            Ok(values) => check_accepted_body(Some(&json), &values),
            Err(error) => assert_client_error(&error),
        }
    }

    #[test]
    fn write_bodies_of_random_bytes_are_refused_with_4xx(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        match parse_body(&bytes) {
            Ok(values) => check_accepted_body(None, &values),
            Err(error) => assert_client_error(&error),
        }
    }

    #[test]
    fn write_bodies_of_mangled_json_are_refused_with_4xx(json in body(), cut in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut bytes = json.to_string().into_bytes();
        let at = cut.index(bytes.len() + 1);
        bytes.insert(at, byte);
        match parse_body(&bytes[..at.max(1).min(bytes.len())]) {
            Ok(values) => check_accepted_body(None, &values),
            Err(error) => assert_client_error(&error),
        }
        match parse_body(&bytes) {
            Ok(values) => check_accepted_body(None, &values),
            Err(error) => assert_client_error(&error),
        }
    }

    #[test]
    fn counter_strings_never_break_the_counter_arithmetic(
        text in field_value("string").prop_map(|v| v.as_str().map(str::to_owned).unwrap_or_default()),
        previous in any::<f64>(),
        step in prop_oneof![Just(1.0), -1e6f64..1e6],
    ) {
        if let Some((string, number)) = counter::normalise(&text) {
            prop_assert!(number.is_finite() && string.bytes().any(|b| b.is_ascii_digit()), "{string:?} {number}");
        }
        let (string, number) = counter::next(Some((&text, previous)), step);
        prop_assert!(!string.is_empty());
        if previous.is_finite() {
            prop_assert!(number.is_finite(), "{text:?} + {step} gave {string:?} {number}");
        }
    }
}
