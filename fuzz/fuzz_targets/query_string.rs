//! The list query string: bytes decoded into pairs as the list handler does
//! (`serde_urlencoded`: `&` and `=` split, `+` and `%XX` decoded), then
//! `ListQuery::parse`. Property: no panic; a refusal is a 4xx `ApiError`;
//! what is accepted holds only what PostgreSQL stores (no NUL in text, no day
//! before 4714 BC) and only patterns the `regex` crate compiles.

#![no_main]

use chrono::NaiveDate;
use eds::model::value::{is_storable_text, is_valid_property_name};
use eds::query::{Condition, ListQuery, Operand, SortTarget};
use libfuzzer_sys::fuzz_target;

fn check_operand(operand: &Operand) {
    let first_day = NaiveDate::from_ymd_opt(-4713, 11, 24).unwrap();
    match operand {
        Operand::Text(text) => assert!(is_storable_text(text), "{text:?}"),
        Operand::Date(date) => assert!(*date >= first_day, "date {date}"),
        Operand::Datetime(at) => assert!(at.date_naive() >= first_day, "datetime {at}"),
        // NaN and infinities are double precision values PostgreSQL compares.
        Operand::Number(_) | Operand::Boolean(_) | Operand::Integer(_) => {}
    }
}

fuzz_target!(|data: &[u8]| {
    // The handler answers 400 invalid_query when this fails; nothing to parse.
    let Ok(params) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(data) else {
        return;
    };
    let query = match ListQuery::parse(&params) {
        Ok(query) => query,
        Err(error) => {
            assert!(error.status().is_client_error(), "not a 4xx: {error}");
            assert!(!error.message.trim().is_empty(), "no message: {error}");
            return;
        }
    };
    assert!(
        query.limit > 0 && query.skip >= 0,
        "limit {} skip {}",
        query.limit,
        query.skip
    );
    assert!(query.filters.len() <= params.len());
    for filter in &query.filters {
        assert!(is_valid_property_name(&filter.prop), "{:?}", filter.prop);
        match &filter.condition {
            Condition::Compare(_, operand) => check_operand(operand),
            Condition::In(operands) => operands.iter().for_each(check_operand),
            Condition::Exists(_) => {}
            Condition::Regex { pattern, .. } => {
                assert!(pattern.chars().count() <= 512, "{pattern:?}");
                assert!(is_storable_text(pattern), "{pattern:?}");
                assert!(
                    regex::Regex::new(pattern).is_ok(),
                    "invalid regex accepted: {pattern:?}"
                );
            }
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
    }
    let _ = query.is_expensive();
});
