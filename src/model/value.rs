//! Property values as clients write them: parsing and validating the body of a
//! property write, independent of storage.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde_json::{Map, Value as Json};

use crate::error::{ApiError, ErrorCode};
use crate::model::ids::is_valid_id;
use crate::model::{LOGIN_PROPERTY, counter};

/// The `type` attribute of a property definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    String,
    Text,
    Counter,
    Number,
    Boolean,
    Date,
    Datetime,
    Reference,
    File,
}

impl ValueType {
    pub fn parse(name: &str) -> Option<ValueType> {
        Some(match name {
            "string" => ValueType::String,
            "text" => ValueType::Text,
            "counter" => ValueType::Counter,
            "number" => ValueType::Number,
            "boolean" => ValueType::Boolean,
            "date" => ValueType::Date,
            "datetime" => ValueType::Datetime,
            "reference" => ValueType::Reference,
            "file" => ValueType::File,
            _ => return None,
        })
    }

    /// The value field a value of this type is written in.
    pub fn field(self) -> ValueField {
        match self {
            ValueType::String | ValueType::Text | ValueType::Counter => ValueField::String,
            ValueType::Number => ValueField::Number,
            ValueType::Boolean => ValueField::Boolean,
            ValueType::Date => ValueField::Date,
            ValueType::Datetime => ValueField::Datetime,
            ValueType::Reference => ValueField::Reference,
            ValueType::File => ValueField::File,
        }
    }
}

/// Which field of the value object carries the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueField {
    String,
    Number,
    Boolean,
    Date,
    Datetime,
    Reference,
    File,
}

impl ValueField {
    pub fn name(self) -> &'static str {
        match self {
            ValueField::String => "string",
            ValueField::Number => "number",
            ValueField::Boolean => "boolean",
            ValueField::Date => "date",
            ValueField::Datetime => "datetime",
            ValueField::Reference => "reference",
            ValueField::File => "file",
        }
    }
}

/// One typed value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    String(String),
    Number(f64),
    Boolean(bool),
    Date(NaiveDate),
    Datetime(DateTime<Utc>),
    Reference(String),
    File {
        filename: String,
        filesize: i64,
        filetype: String,
    },
    /// `counter` in place of a value: the next number of the property's
    /// sequence, `step` added.
    Counter {
        step: f64,
    },
    /// `counter` with a `string`: that string, its last number as `number`.
    CounterString {
        string: String,
        number: f64,
    },
}

impl Value {
    pub fn field(&self) -> ValueField {
        match self {
            Value::String(_) | Value::Counter { .. } | Value::CounterString { .. } => ValueField::String,
            Value::Number(_) => ValueField::Number,
            Value::Boolean(_) => ValueField::Boolean,
            Value::Date(_) => ValueField::Date,
            Value::Datetime(_) => ValueField::Datetime,
            Value::Reference(_) => ValueField::Reference,
            Value::File { .. } => ValueField::File,
        }
    }
}

/// One object of a property write body.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueInput {
    /// Property name (the object's `type`).
    pub prop: String,
    /// `_id` of the live value this one replaces.
    pub replaces: Option<String>,
    pub value: Value,
    pub language: Option<String>,
}

impl ValueInput {
    /// A new value of `prop`, without a language, replacing nothing.
    pub fn new(prop: &str, value: Value) -> ValueInput {
        ValueInput {
            prop: prop.to_owned(),
            replaces: None,
            value,
            language: None,
        }
    }
}

const MAX_PROPERTY_NAME: usize = 100;
const SCALAR_FIELDS: [&str; 6] = ["string", "number", "boolean", "date", "datetime", "reference"];
const FILE_FIELDS: [&str; 3] = ["filename", "filesize", "filetype"];

/// Parses a write body: an array of property objects, or a single object.
pub fn parse_body(body: &[u8]) -> Result<Vec<ValueInput>, ApiError> {
    let json: Json = serde_json::from_slice(body)
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("Malformed JSON body: {e}")))?;
    parse_values(&json)
}

/// The values of a write body already read as JSON: an array of property
/// objects, or one alone.
pub fn parse_values(json: &Json) -> Result<Vec<ValueInput>, ApiError> {
    match json {
        Json::Array(items) => items.iter().map(parse_object).collect(),
        Json::Object(_) => Ok(vec![parse_object(json)?]),
        _ => Err(malformed("the body must be a property object or an array of them")),
    }
}

fn malformed(detail: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::InvalidBody, format!("Malformed request body: {detail}"))
}

fn parse_object(item: &Json) -> Result<ValueInput, ApiError> {
    let object = item
        .as_object()
        .ok_or_else(|| malformed("every item must be a property object"))?;
    let prop = match object.get("type") {
        Some(Json::String(name)) if is_valid_property_name(name) => name.clone(),
        Some(Json::String(name)) => {
            return Err(malformed(format!("invalid property name {name:?}")));
        }
        _ => return Err(malformed("every property object needs a string `type`")),
    };
    // login fields are set by the service at sign-in, never written
    if prop == LOGIN_PROPERTY
        && let Some(field) = object
            .keys()
            .find(|key| !matches!(key.as_str(), "type" | "_id" | "string"))
    {
        return Err(ApiError::new(
            ErrorCode::LoginFieldsReserved,
            format!("{field}: service_user login fields are set by the service at sign-in"),
        ));
    }
    let replaces = match object.get("_id") {
        None | Some(Json::Null) => None,
        Some(Json::String(id)) if is_valid_id(id) => Some(id.clone()),
        Some(_) => return Err(malformed(format!("`_id` of {prop} is not a value id"))),
    };
    let language = match object.get("language") {
        None | Some(Json::Null) => None,
        Some(Json::String(code)) if is_language_code(code) => Some(code.clone()),
        Some(_) => {
            return Err(ApiError::new(
                ErrorCode::InvalidLanguage,
                "Language must be exactly two lowercase letters",
            ));
        }
    };
    let value = match object.get("counter") {
        None | Some(Json::Null) | Some(Json::Bool(false)) => parse_value(&prop, object)?,
        Some(counter) => parse_counter(&prop, counter, object)?,
    };
    Ok(ValueInput {
        prop,
        replaces,
        value,
        language,
    })
}

fn parse_value(prop: &str, object: &Map<String, Json>) -> Result<Value, ApiError> {
    let present = |field: &str| object.get(field).is_some_and(|v| !v.is_null());
    let scalars: Vec<&str> = SCALAR_FIELDS.into_iter().filter(|f| present(f)).collect();
    let is_file = FILE_FIELDS.into_iter().any(present);
    match (scalars.as_slice(), is_file) {
        ([], true) => parse_file(prop, object),
        ([field], false) => parse_scalar(prop, field, &object[*field]),
        ([], false) => Err(malformed(format!("{prop} has no value field"))),
        _ => Err(malformed(format!("{prop} has more than one value field"))),
    }
}

/// `counter: true` (step 1) or a number (the step), alone or with a `string`
/// that holds a number.
fn parse_counter(prop: &str, counter: &Json, object: &Map<String, Json>) -> Result<Value, ApiError> {
    let step = match counter {
        Json::Bool(true) => 1.0,
        Json::Number(step) => step.as_f64().filter(|s| s.is_finite()).unwrap_or(1.0),
        _ => return Err(malformed(format!("{prop}: `counter` is true or a number"))),
    };
    match parse_value(prop, object) {
        Err(_)
            if SCALAR_FIELDS
                .iter()
                .chain(&FILE_FIELDS)
                .all(|f| object.get(*f).is_none_or(Json::is_null)) =>
        {
            Ok(Value::Counter { step })
        }
        Ok(Value::String(text)) => {
            let (string, number) = counter::normalise(&text)
                .ok_or_else(|| malformed(format!("{prop}: a counter string needs a number in it")))?;
            Ok(Value::CounterString { string, number })
        }
        _ => Err(malformed(format!("{prop}: `counter` goes with a `string` or alone"))),
    }
}

fn parse_scalar(prop: &str, field: &str, raw: &Json) -> Result<Value, ApiError> {
    let wrong = || malformed(format!("{prop}: `{field}` has the wrong form"));
    Ok(match field {
        "string" => Value::String(
            raw.as_str()
                .filter(|s| is_storable_text(s))
                .ok_or_else(wrong)?
                .to_owned(),
        ),
        "number" => Value::Number(raw.as_f64().ok_or_else(wrong)?),
        "boolean" => Value::Boolean(raw.as_bool().ok_or_else(wrong)?),
        "date" => Value::Date(
            match raw {
                Json::Number(millis) => millis.as_i64().and_then(date_from_millis),
                _ => raw.as_str().and_then(parse_date),
            }
            .ok_or_else(wrong)?,
        ),
        "datetime" => Value::Datetime(
            match raw {
                Json::Number(millis) => millis.as_i64().and_then(datetime_from_millis),
                _ => raw.as_str().and_then(parse_datetime),
            }
            .ok_or_else(wrong)?,
        ),
        "reference" => match raw.as_str() {
            Some(id) if is_valid_id(id) => Value::Reference(id.to_owned()),
            _ => return Err(ApiError::new(ErrorCode::InvalidId, "Invalid ID")),
        },
        _ => unreachable!("only scalar field names are passed"),
    })
}

fn parse_file(prop: &str, object: &Map<String, Json>) -> Result<Value, ApiError> {
    let text = |field: &str| {
        object
            .get(field)
            .and_then(Json::as_str)
            .filter(|s| !s.trim().is_empty() && is_storable_text(s))
            .map(str::to_owned)
            .ok_or_else(|| malformed(format!("{prop}: a file needs a non-empty `{field}`")))
    };
    let filesize = object
        .get("filesize")
        .and_then(Json::as_i64)
        .filter(|size| *size >= 0)
        .ok_or_else(|| malformed(format!("{prop}: a file needs `filesize` in bytes")))?;
    Ok(Value::File {
        filename: text("filename")?,
        filesize,
        filetype: text("filetype")?,
    })
}

/// Whether PostgreSQL's `text` holds this: any character but NUL. Text with
/// a NUL is refused while parsing, rather than failing in the database.
pub fn is_storable_text(text: &str) -> bool {
    !text.contains('\0')
}

/// The first day PostgreSQL's `date` and `timestamptz` hold, 4714-11-24 BC
/// (their last day lies beyond the years chrono parses).
const FIRST_STORABLE_DAY: NaiveDate = match NaiveDate::from_ymd_opt(-4713, 11, 24) {
    Some(day) => day,
    None => panic!("4714-11-24 BC is a date"),
};

/// Whether PostgreSQL holds this day. Earlier days are refused as malformed
/// while parsing, rather than failing in the database.
pub fn is_storable_date(date: NaiveDate) -> bool {
    date >= FIRST_STORABLE_DAY
}

/// `YYYY-MM-DD`, or an ISO 8601 date-time whose UTC date is taken.
pub fn parse_date(text: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .or_else(|| parse_datetime(text).map(|dt| dt.date_naive()))
        .filter(|date| is_storable_date(*date))
}

/// ISO 8601 / RFC 3339 date-time; without an offset it is read as UTC.
pub fn parse_datetime(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .map(|dt| dt.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
                .ok()
                .map(|naive| naive.and_utc())
        })
        .filter(|at| is_storable_date(at.date_naive()))
}

/// Milliseconds since 1970-01-01 UTC, as the original's clients write dates.
pub fn datetime_from_millis(millis: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(millis).filter(|at| is_storable_date(at.date_naive()))
}

/// The UTC day nearest to the instant: a date picker sends local midnight, so
/// the day is kept for any offset from UTC−11 to UTC+12.
pub fn date_from_millis(millis: i64) -> Option<NaiveDate> {
    const HALF_DAY: i64 = 12 * 60 * 60 * 1000;
    datetime_from_millis(millis.checked_add(HALF_DAY)?).map(|at| at.date_naive())
}

pub fn is_language_code(code: &str) -> bool {
    code.len() == 2 && code.bytes().all(|b| b.is_ascii_lowercase())
}

/// Property names are identifiers: letters, digits, `_` and `-` (no dots, which
/// separate the parts of a query key).
pub fn is_valid_property_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PROPERTY_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(body: &str) -> Result<ValueInput, ApiError> {
        parse_body(body.as_bytes()).map(|mut v| v.remove(0))
    }

    #[test]
    fn single_object_and_array_bodies_are_accepted() {
        assert_eq!(parse_body(br#"{"type":"name","string":"a"}"#).unwrap().len(), 1);
        let many = parse_body(br#"[{"type":"a","number":1},{"type":"b","boolean":true}]"#).unwrap();
        assert_eq!(many[0].value, Value::Number(1.0));
        assert_eq!(many[1].value, Value::Boolean(true));
    }

    #[test]
    fn malformed_bodies_are_rejected() {
        for body in [
            "",
            "3",
            "[1]",
            r#"[{"string":"x"}]"#,
            r#"{"type":"a"}"#,
            r#"{"type":"a.b","string":"x"}"#,
        ] {
            assert_eq!(
                parse_body(body.as_bytes()).unwrap_err().status().as_u16(),
                400,
                "{body}"
            );
        }
    }

    #[test]
    fn text_with_nul_is_malformed() {
        for body in [
            r#"{"type":"a","string":"x\u0000y"}"#,
            r#"{"type":"a","counter":true,"string":"INV-\u00001"}"#,
            r#"{"type":"a","filename":"a\u0000.pdf","filesize":1,"filetype":"application/pdf"}"#,
            r#"{"type":"a","filename":"a.pdf","filesize":1,"filetype":"application/pdf\u0000"}"#,
        ] {
            assert_eq!(one(body).unwrap_err().code, "invalid_body", "{body}");
        }
    }

    #[test]
    fn dates_before_postgresql_s_first_day_are_malformed() {
        assert!(parse_date("-4713-11-24").is_some());
        assert_eq!(parse_date("-4713-11-23"), None);
        assert_eq!(parse_datetime("-5000-01-01T00:00:00"), None);
        for body in [
            r#"{"type":"d","date":"-5000-01-01"}"#,
            r#"{"type":"d","datetime":"-5000-01-01T00:00:00"}"#,
        ] {
            assert_eq!(one(body).unwrap_err().status().as_u16(), 400, "{body}");
        }
    }

    #[test]
    fn two_value_fields_are_rejected() {
        assert!(one(r#"{"type":"a","string":"x","number":1}"#).is_err());
    }

    #[test]
    fn dates_and_datetimes_parse() {
        assert_eq!(
            one(r#"{"type":"d","date":"2024-02-29"}"#).unwrap().value,
            Value::Date(NaiveDate::from_ymd_opt(2024, 2, 29).unwrap())
        );
        assert!(one(r#"{"type":"d","date":"2023-02-29"}"#).is_err());
        let dt = one(r#"{"type":"d","datetime":"2024-01-02T03:04:05+02:00"}"#).unwrap();
        assert_eq!(
            dt.value,
            Value::Datetime(parse_datetime("2024-01-02T01:04:05Z").unwrap())
        );
    }

    #[test]
    fn dates_written_as_milliseconds_take_the_nearest_utc_day() {
        let day = |y, m, d| Value::Date(NaiveDate::from_ymd_opt(y, m, d).unwrap());
        // midnight of 1965-08-02 at UTC+2, at UTC, and at UTC-11
        for millis in ["-139370400000", "-139363200000", "-139323600000"] {
            let body = format!(r#"{{"type":"d","date":{millis}}}"#);
            assert_eq!(one(&body).unwrap().value, day(1965, 8, 2), "{millis}");
        }
        assert_eq!(one(r#"{"type":"d","date":0}"#).unwrap().value, day(1970, 1, 1));
        assert_eq!(
            one(r#"{"type":"d","datetime":1704164645000}"#).unwrap().value,
            Value::Datetime(parse_datetime("2024-01-02T03:04:05Z").unwrap())
        );
    }

    #[test]
    fn non_integral_or_out_of_range_milliseconds_are_malformed() {
        for raw in [
            "1.5",
            "1e300",
            "9223372036854775807",
            "-9223372036854775808",
            "-300000000000000",
        ] {
            for field in ["date", "datetime"] {
                let body = format!(r#"{{"type":"d","{field}":{raw}}}"#);
                assert_eq!(one(&body).unwrap_err().code, "invalid_body", "{body}");
            }
        }
    }

    #[test]
    fn language_must_be_two_lowercase_letters() {
        assert!(one(r#"{"type":"a","string":"x","language":"et"}"#).is_ok());
        for bad in ["EN", "est", "e", "e1"] {
            let body = format!(r#"{{"type":"a","string":"x","language":"{bad}"}}"#);
            assert_eq!(one(&body).unwrap_err().code, "invalid_language");
        }
    }

    #[test]
    fn counters_take_true_a_step_or_a_string_with_a_number() {
        assert_eq!(
            one(r#"{"type":"n","counter":true}"#).unwrap().value,
            Value::Counter { step: 1.0 }
        );
        assert_eq!(
            one(r#"{"type":"n","counter":5}"#).unwrap().value,
            Value::Counter { step: 5.0 }
        );
        assert_eq!(
            one(r#"{"type":"n","counter":true,"string":"INV-0042"}"#).unwrap().value,
            Value::CounterString {
                string: "INV-42".into(),
                number: 42.0
            }
        );
        assert!(one(r#"{"type":"n","counter":true,"string":"none"}"#).is_err());
        assert!(one(r#"{"type":"n","counter":true,"number":3}"#).is_err());
        assert!(one(r#"{"type":"n","counter":"x"}"#).is_err());
    }

    #[test]
    fn references_must_be_ids() {
        assert_eq!(
            one(r#"{"type":"r","reference":"nope"}"#).unwrap_err().message,
            "Invalid ID"
        );
    }

    #[test]
    fn files_need_all_three_fields() {
        let file = one(r#"{"type":"f","filename":"a.txt","filesize":3,"filetype":"text/plain"}"#);
        assert!(matches!(file.unwrap().value, Value::File { filesize: 3, .. }));
        assert!(one(r#"{"type":"f","filename":"a.txt","filesize":3}"#).is_err());
        assert!(one(r#"{"type":"f","filename":"a.txt","filesize":-1,"filetype":"x/y"}"#).is_err());
    }
}
