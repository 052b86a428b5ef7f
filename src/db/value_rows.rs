//! How a [`ValueRow`], the model's plain data, is read from
//! `property_values` and made from a value about to be inserted.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::deserialize::{self, FromStaticSqlRow};
use diesel::pg::Pg;
use diesel::prelude::*;

use crate::db::schema::property_values;
use crate::db::values::NewValue;
use crate::model::stored::ValueRow;

/// The columns a [`ValueRow`] is read from, in its fields' order: every
/// column of `property_values` but its database and credential columns.
type ValueColumns = (
    property_values::id,
    property_values::entity_id,
    property_values::prop,
    property_values::string,
    property_values::number,
    property_values::boolean,
    property_values::date,
    property_values::datetime,
    property_values::reference,
    property_values::filename,
    property_values::filesize,
    property_values::filetype,
    property_values::language,
    property_values::created_at,
    property_values::created_by,
    property_values::deleted_at,
    property_values::deleted_by,
);

/// The Rust types of [`ValueColumns`].
type ValueFields = (
    String,
    String,
    String,
    Option<String>,
    Option<f64>,
    Option<bool>,
    Option<NaiveDate>,
    Option<DateTime<Utc>>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    DateTime<Utc>,
    Option<String>,
    Option<DateTime<Utc>>,
    Option<String>,
);

// What `#[derive(Selectable, Queryable)]` would write: the model declares
// `ValueRow` without knowing the table, so the database layer says it here.
impl Selectable<Pg> for ValueRow {
    type SelectExpression = ValueColumns;

    fn construct_selection() -> ValueColumns {
        (
            property_values::id,
            property_values::entity_id,
            property_values::prop,
            property_values::string,
            property_values::number,
            property_values::boolean,
            property_values::date,
            property_values::datetime,
            property_values::reference,
            property_values::filename,
            property_values::filesize,
            property_values::filetype,
            property_values::language,
            property_values::created_at,
            property_values::created_by,
            property_values::deleted_at,
            property_values::deleted_by,
        )
    }
}

impl<ST> Queryable<ST, Pg> for ValueRow
where
    ValueFields: FromStaticSqlRow<ST, Pg>,
{
    type Row = ValueFields;

    fn build(
        (
            id,
            entity_id,
            prop,
            string,
            number,
            boolean,
            date,
            datetime,
            reference,
            filename,
            filesize,
            filetype,
            language,
            created_at,
            created_by,
            deleted_at,
            deleted_by,
        ): ValueFields,
    ) -> deserialize::Result<ValueRow> {
        Ok(ValueRow {
            id,
            entity_id,
            prop,
            string,
            number,
            boolean,
            date,
            datetime,
            reference,
            filename,
            filesize,
            filetype,
            language,
            created_at,
            created_by,
            deleted_at,
            deleted_by,
        })
    }
}

impl From<&NewValue> for ValueRow {
    fn from(new: &NewValue) -> ValueRow {
        ValueRow {
            id: new.id.clone(),
            entity_id: new.entity_id.clone(),
            prop: new.prop.clone(),
            string: new.string.clone(),
            number: new.number,
            boolean: new.boolean,
            date: new.date,
            datetime: new.datetime,
            reference: new.reference.clone(),
            filename: new.filename.clone(),
            filesize: new.filesize,
            filetype: new.filetype.clone(),
            language: new.language.clone(),
            created_at: new.created_at,
            created_by: new.created_by.clone(),
            deleted_at: None,
            deleted_by: None,
        }
    }
}
