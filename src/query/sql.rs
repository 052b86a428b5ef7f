//! SQL for list queries. Every user-supplied text (property names included)
//! travels as a bind parameter; the SQL text holds only fixed fragments.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::QueryableByName;
use diesel::pg::Pg;
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::sql_types::{Array, BigInt, Bool, Date, Double, Jsonb, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value as Json;

use super::{Condition, Field, Filter, ListQuery, Operand, Operator, RegexFlags, SortTarget};
use crate::http::error::ApiError;
use crate::model::API_KEY_PROPERTY;

/// A bind parameter value.
#[derive(Debug, Clone)]
enum Bind {
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
struct Sql {
    text: String,
    binds: Vec<Bind>,
}

impl Sql {
    fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    fn bind(&mut self, value: Bind) -> &mut Self {
        self.binds.push(value);
        self.text.push_str(&format!("${}", self.binds.len()));
        self
    }

    fn into_query(self) -> BoxedSqlQuery<'static, Pg, SqlQuery> {
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

#[derive(QueryableByName)]
struct DocRow {
    #[diesel(sql_type = Jsonb)]
    doc: Json,
}

#[derive(QueryableByName)]
struct CountRow {
    #[diesel(sql_type = BigInt)]
    count: i64,
}

/// One page of matching entity documents and the number of all matches.
pub async fn run(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
) -> Result<(Vec<Json>, i64), ApiError> {
    let mut page = Sql::default();
    page.push("SELECT e.doc FROM entities e WHERE ");
    where_clause(&mut page, db, person, &query.filters);
    page.push(" ORDER BY ");
    for key in &query.sort {
        let direction = if key.descending { "DESC" } else { "ASC" };
        match &key.target {
            SortTarget::Id => _ = page.push("e.id ").push(direction),
            SortTarget::Value { prop, field } => {
                // Multi-valued properties sort by their smallest value
                // ascending and their largest descending; entities without
                // the property come last either way.
                let aggregate = if key.descending { "max" } else { "min" };
                page.push(&format!(
                    "(SELECT {aggregate}(v.{}) FROM property_values v ",
                    column(*field)
                ))
                .push("WHERE v.db = e.db AND v.entity_id = e.id AND v.deleted_at IS NULL AND v.prop = ")
                .bind(Bind::Text(prop.clone()))
                .push(") ")
                .push(direction)
                .push(" NULLS LAST");
            }
        }
        page.push(", ");
    }
    page.push("e.id ASC LIMIT ")
        .bind(Bind::Integer(query.limit))
        .push(" OFFSET ")
        .bind(Bind::Integer(query.skip));

    let mut count = Sql::default();
    count.push("SELECT count(*) AS count FROM entities e WHERE ");
    where_clause(&mut count, db, person, &query.filters);

    let docs = page.into_query().load::<DocRow>(conn).await?;
    let total = count.into_query().get_result::<CountRow>(conn).await?;
    Ok((docs.into_iter().map(|row| row.doc).collect(), total.count))
}

fn where_clause(sql: &mut Sql, db: &str, person: Option<&str>, filters: &[Filter]) {
    sql.push("e.db = ")
        .bind(Bind::Text(db.to_owned()))
        .push(" AND e.deleted_at IS NULL AND ");
    match person {
        None => _ = sql.push("e.sharing = 'public'"),
        Some(person) => {
            sql.push("NOT (")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (e.noaccess)) AND (e.sharing <> 'private' OR ")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (e.viewers))");
        }
    }
    for filter in filters {
        sql.push(" AND ");
        filter_clause(sql, filter);
    }
}

/// The column a field lives in (a fixed name, never user text).
fn column(field: Field) -> &'static str {
    match field {
        Field::String => "string",
        Field::Number => "number",
        Field::Boolean => "boolean",
        Field::Date => "date",
        Field::Datetime => "datetime",
        Field::Reference => "reference",
        Field::Filesize => "filesize",
        Field::Filename => "filename",
        Field::Filetype => "filetype",
        Field::Language => "language",
    }
}

fn filter_clause(sql: &mut Sql, filter: &Filter) {
    if filter.prop == API_KEY_PROPERTY {
        // Keys are hidden: nothing about them can be matched.
        sql.push("FALSE");
        return;
    }
    let (negated, positive) = match &filter.condition {
        Condition::Compare(Operator::Ne, operand) => (true, Condition::Compare(Operator::Eq, operand.clone())),
        Condition::Exists(false) => (true, Condition::Exists(true)),
        other => (false, other.clone()),
    };
    sql.push(if negated { "NOT EXISTS" } else { "EXISTS" })
        .push(" (SELECT 1 FROM property_values v WHERE v.db = e.db AND v.entity_id = e.id AND v.deleted_at IS NULL AND v.prop = ")
        .bind(Bind::Text(filter.prop.clone()))
        .push(" AND ");
    if filter.field == Field::String {
        // A reference's `string` is the referenced entity's name.
        sql.push("(");
        value_test(sql, "v.string", &positive);
        sql.push(" OR v.reference IN (SELECT r.id FROM entities r WHERE r.db = e.db AND r.deleted_at IS NULL AND ");
        value_test(sql, "r.name", &positive);
        sql.push("))");
    } else {
        value_test(sql, &format!("v.{}", column(filter.field)), &positive);
    }
    sql.push(")");
}

fn value_test(sql: &mut Sql, column: &str, condition: &Condition) {
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
            sql.push(" ~ ")
                .bind(Bind::Text(format!("(?{}){pattern}", embedded_options(*flags))));
        }
    }
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
