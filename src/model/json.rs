//! How stored numbers and dates are written in JSON, everywhere the service
//! answers with them.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value as Json;

/// A `date` value: midnight UTC, `YYYY-MM-DDT00:00:00.000Z`.
pub fn format_date(date: NaiveDate) -> String {
    format!("{}T00:00:00.000Z", date.format("%Y-%m-%d"))
}

/// A `datetime` value: RFC 3339 UTC with milliseconds.
pub fn format_datetime(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Whole numbers are written without a fraction, as clients of the original expect.
pub fn number_json(number: f64) -> Json {
    const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0; // 2^53
    if number.fract() == 0.0 && number.abs() < EXACT_INTEGERS {
        Json::from(number as i64)
    } else {
        serde_json::Number::from_f64(number).map_or(Json::Null, Json::Number)
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn whole_numbers_have_no_fraction() {
        assert_eq!(number_json(3.0).to_string(), "3");
        assert_eq!(number_json(-0.0).to_string(), "0");
        assert_eq!(number_json(2.5).to_string(), "2.5");
        // beyond 2^53 a float no longer stands for one integer: written as a float
        assert_eq!(number_json(1e20).to_string(), "1e+20");
        assert_eq!(number_json(f64::NAN), Json::Null);
    }

    #[test]
    fn dates_are_midnight_utc_with_milliseconds() {
        let date = NaiveDate::from_ymd_opt(2024, 2, 9).unwrap();
        assert_eq!(format_date(date), "2024-02-09T00:00:00.000Z");
        let at = Utc.with_ymd_and_hms(2024, 2, 9, 13, 4, 5).unwrap() + chrono::Duration::milliseconds(7);
        assert_eq!(format_datetime(at), "2024-02-09T13:04:05.007Z");
    }
}
