//! The body of a property write: `parse_body` over arbitrary bytes.
//! Property: no panic; a refusal is a 4xx `ApiError`; what is accepted holds
//! only what PostgreSQL stores, and counter values survive the counter
//! arithmetic that the writer applies to them.

#![no_main]

use chrono::NaiveDate;
use eds::model::counter;
use eds::model::ids::is_valid_id;
use eds::model::value::{Value, is_language_code, is_storable_text, is_valid_property_name, parse_body};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let values = match parse_body(data) {
        Ok(values) => values,
        Err(error) => {
            assert!(error.status().is_client_error(), "not a 4xx: {error}");
            assert!(!error.message.trim().is_empty(), "no message: {error}");
            return;
        }
    };
    let first_day = NaiveDate::from_ymd_opt(-4713, 11, 24).unwrap();
    for input in &values {
        assert!(is_valid_property_name(&input.prop), "{:?}", input.prop);
        assert!(input.replaces.as_deref().is_none_or(is_valid_id));
        assert!(input.language.as_deref().is_none_or(is_language_code));
        match &input.value {
            Value::String(text) => assert!(is_storable_text(text), "{text:?}"),
            Value::Number(number) => assert!(number.is_finite(), "{number}"),
            Value::Boolean(_) => {}
            Value::Date(date) => assert!(*date >= first_day, "date {date}"),
            Value::Datetime(at) => assert!(at.date_naive() >= first_day, "datetime {at}"),
            Value::Reference(id) => assert!(is_valid_id(id), "{id:?}"),
            Value::File {
                filename,
                filesize,
                filetype,
            } => {
                assert!(*filesize >= 0);
                assert!(!filename.trim().is_empty() && is_storable_text(filename));
                assert!(!filetype.trim().is_empty() && is_storable_text(filetype));
            }
            Value::Counter { step } => {
                assert!(step.is_finite(), "{step}");
                let _ = counter::next(None, *step);
            }
            Value::CounterString { string, number } => {
                assert!(number.is_finite(), "{string:?} numbered {number}");
                assert!(is_storable_text(string), "{string:?}");
                let _ = counter::next(Some((string, *number)), 1.0);
            }
        }
    }
});
