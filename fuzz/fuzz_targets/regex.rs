//! The `.regex` filter: `/pattern/flags` or a bare pattern, translated and
//! checked for PostgreSQL by `parse_regex` (through `ListQuery::parse`).
//! Property: no panic; a refusal is 400 `invalid_regex`; an accepted pattern
//! is the text between the slashes, at most 512 characters, without NUL, and
//! compiles with the `regex` crate, alone and with the flags it was given.

#![no_main]

use eds::model::value::is_storable_text;
use eds::query::{Condition, ListQuery};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let value = String::from_utf8_lossy(data).into_owned();
    let params = [("p.string.regex".to_owned(), value.clone())];
    let query = match ListQuery::parse(&params) {
        Ok(query) => query,
        Err(error) => {
            assert_eq!(
                (error.status().as_u16(), error.code.as_str()),
                (400, "invalid_regex"),
                "{error}"
            );
            return;
        }
    };
    assert_eq!(query.filters.len(), 1);
    let Condition::Regex { pattern, flags } = &query.filters[0].condition else {
        panic!("a regex filter parsed as {:?}", query.filters[0].condition);
    };
    let (expected, flag_text) = match value.strip_prefix('/').and_then(|rest| rest.rsplit_once('/')) {
        Some((pattern, flags)) => (pattern, flags),
        None => (value.as_str(), ""),
    };
    assert_eq!(pattern, expected);
    assert!(!flag_text.contains('x'), "flag x accepted: {value:?}");
    assert_eq!(
        (flags.case_insensitive, flags.multi_line, flags.dot_all),
        (
            flag_text.contains('i'),
            flag_text.contains('m'),
            flag_text.contains('s')
        )
    );
    assert!(pattern.chars().count() <= 512, "{pattern:?}");
    assert!(is_storable_text(pattern), "{pattern:?}");
    assert!(
        regex::Regex::new(pattern).is_ok(),
        "accepted but does not compile: {pattern:?}"
    );
    let flagged = regex::RegexBuilder::new(pattern)
        .case_insensitive(flags.case_insensitive)
        .multi_line(flags.multi_line)
        .dot_matches_new_line(flags.dot_all)
        .build();
    assert!(
        flagged.is_ok(),
        "accepted but does not compile with its flags: {value:?}: {flagged:?}"
    );
});
