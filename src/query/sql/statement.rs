//! A statement under construction: SQL text with numbered placeholders and
//! the values bound to them.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::pg::Pg;
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::sql_types::{Array, BigInt, Bool, Date, Double, Text, Timestamptz};

/// A bind parameter value.
#[derive(Debug, Clone)]
pub(super) enum Bind {
    Text(String),
    TextArray(Vec<String>),
    Number(f64),
    NumberArray(Vec<f64>),
    Integer(i64),
    IntegerArray(Vec<i64>),
    Boolean(bool),
    BooleanArray(Vec<bool>),
    Date(NaiveDate),
    DateArray(Vec<NaiveDate>),
    Datetime(DateTime<Utc>),
    DatetimeArray(Vec<DateTime<Utc>>),
}

/// SQL text with numbered placeholders and their values.
#[derive(Default)]
pub(super) struct Sql {
    pub(super) text: String,
    binds: Vec<Bind>,
}

impl Sql {
    pub(super) fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    pub(super) fn bind(&mut self, value: Bind) -> &mut Self {
        self.binds.push(value);
        self.text.push_str(&format!("${}", self.binds.len()));
        self
    }

    pub(super) fn into_query(self) -> BoxedSqlQuery<'static, Pg, SqlQuery> {
        let mut query = diesel::sql_query(self.text).into_boxed::<Pg>();
        for bind in self.binds {
            query = match bind {
                Bind::Text(v) => query.bind::<Text, _>(v),
                Bind::TextArray(v) => query.bind::<Array<Text>, _>(v),
                Bind::Number(v) => query.bind::<Double, _>(v),
                Bind::NumberArray(v) => query.bind::<Array<Double>, _>(v),
                Bind::Integer(v) => query.bind::<BigInt, _>(v),
                Bind::IntegerArray(v) => query.bind::<Array<BigInt>, _>(v),
                Bind::Boolean(v) => query.bind::<Bool, _>(v),
                Bind::BooleanArray(v) => query.bind::<Array<Bool>, _>(v),
                Bind::Date(v) => query.bind::<Date, _>(v),
                Bind::DateArray(v) => query.bind::<Array<Date>, _>(v),
                Bind::Datetime(v) => query.bind::<Timestamptz, _>(v),
                Bind::DatetimeArray(v) => query.bind::<Array<Timestamptz>, _>(v),
            };
        }
        query
    }
}
