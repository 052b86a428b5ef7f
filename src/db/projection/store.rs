//! Writing projections: the columns of `entities` a projection fills, in
//! one statement for any number of entities (kept prepared: its text never
//! varies).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use serde_json::Value as Json;

use crate::db::prepared::Prepared;
use crate::model::projection::Projection;
use crate::rights::RightsLists;

/// The columns of one projection, as [`update`] and [`insert`] write them.
#[derive(Serialize)]
pub struct Stored<'a> {
    id: &'a str,
    doc: &'a Json,
    name: Option<&'a str>,
    type_id: Option<&'a str>,
    parent_ids: &'a [String],
    sharing: &'static str,
    inherit_rights: bool,
    owners: &'a BTreeSet<String>,
    editors: &'a BTreeSet<String>,
    expanders: &'a BTreeSet<String>,
    viewers: &'a BTreeSet<String>,
    noaccess: &'a BTreeSet<String>,
    public_props: &'a [String],
    domain_props: &'a [String],
    search_private: &'a str,
    search_domain: &'a str,
    search_public: &'a str,
    /// For a new entity's row: when and by whom it was created.
    #[serde(skip_serializing_if = "Option::is_none")]
    created_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    created_by: Option<&'a str>,
}

impl<'a> Stored<'a> {
    pub fn new(id: &'a str, projection: &'a Projection, lists: &'a RightsLists) -> Stored<'a> {
        Stored {
            id,
            doc: &projection.doc,
            name: projection.name.as_deref(),
            type_id: projection.type_id.as_deref(),
            parent_ids: &projection.parent_ids,
            sharing: projection.sharing.as_str(),
            inherit_rights: projection.inherit_rights,
            owners: &lists.owners,
            editors: &lists.editors,
            expanders: &lists.expanders,
            viewers: &lists.viewers,
            noaccess: &lists.noaccess,
            public_props: &projection.public_props,
            domain_props: &projection.domain_props,
            search_private: &projection.search_private,
            search_domain: &projection.search_domain,
            search_public: &projection.search_public,
            created_at: None,
            created_by: None,
        }
    }

    /// The row of a new entity, created at `at` by `by`.
    pub fn created(self, at: DateTime<Utc>, by: Option<&'a str>) -> Stored<'a> {
        Stored {
            created_at: Some(at),
            created_by: by,
            ..self
        }
    }
}

/// The projections as rows: `jsonb_to_recordset` over the JSON of [`Stored`].
const RECORDS: &str = "jsonb_to_recordset($2::jsonb) AS p(id text, doc jsonb, name text, type_id text, \
     parent_ids text[], sharing text, inherit_rights boolean, owners text[], editors text[], expanders text[], \
     viewers text[], noaccess text[], public_props text[], domain_props text[], search_private text, \
     search_domain text, search_public text, created_at timestamptz, created_by text)";

/// The JSON text of `stored`, written directly: a `serde_json::Value` tree
/// of every document would be built only to be written out and dropped.
fn records(stored: &[Stored<'_>]) -> String {
    serde_json::to_string(stored).expect("projections serialize")
}

/// Writes projections over the rows of their entities in database `db`. A
/// row that already holds its projection is left as it is: rewriting it
/// would add an entry to each of the table's indexes for nothing (a change
/// to a type re-projects all its entities, most often changing few; a
/// background batch of locked rows leaves those out before, comparing
/// the same columns). Answers how many rows changed.
pub async fn update(conn: &mut AsyncPgConnection, db: &str, stored: &[Stored<'_>]) -> QueryResult<usize> {
    if stored.is_empty() {
        return Ok(0);
    }
    let query = diesel::sql_query(format!(
        "UPDATE entities e SET doc = p.doc, name = p.name, type_id = p.type_id, parent_ids = p.parent_ids, \
         sharing = p.sharing, inherit_rights = p.inherit_rights, owners = p.owners, editors = p.editors, \
         expanders = p.expanders, viewers = p.viewers, noaccess = p.noaccess, public_props = p.public_props, \
         domain_props = p.domain_props, search_private = p.search_private, search_domain = p.search_domain, \
         search_public = p.search_public FROM {RECORDS} WHERE e.db = $1 AND e.id = p.id \
         AND (e.doc, e.name, e.type_id, e.parent_ids, e.sharing, e.inherit_rights, e.owners, e.editors, \
         e.expanders, e.viewers, e.noaccess, e.public_props, e.domain_props, e.search_private, e.search_domain, \
         e.search_public) IS DISTINCT FROM (p.doc, p.name, p.type_id, p.parent_ids, p.sharing, p.inherit_rights, \
         p.owners, p.editors, p.expanders, p.viewers, p.noaccess, p.public_props, p.domain_props, \
         p.search_private, p.search_domain, p.search_public)"
    ))
    .bind::<Text, _>(db)
    .bind::<Text, _>(records(stored));
    Prepared::kept(query).execute(conn).await
}

/// Inserts the rows of new entities with their projections, each [`Stored::created`].
pub async fn insert(conn: &mut AsyncPgConnection, db: &str, stored: &[Stored<'_>]) -> QueryResult<()> {
    if stored.is_empty() {
        return Ok(());
    }
    let query = diesel::sql_query(format!(
        "INSERT INTO entities (db, id, created_at, created_by, doc, name, type_id, parent_ids, sharing, \
         inherit_rights, owners, editors, expanders, viewers, noaccess, public_props, domain_props, \
         search_private, search_domain, search_public) \
         SELECT $1, p.id, p.created_at, p.created_by, p.doc, p.name, p.type_id, p.parent_ids, p.sharing, \
         p.inherit_rights, p.owners, p.editors, p.expanders, p.viewers, p.noaccess, p.public_props, \
         p.domain_props, p.search_private, p.search_domain, p.search_public FROM {RECORDS}"
    ))
    .bind::<Text, _>(db)
    .bind::<Text, _>(records(stored));
    Prepared::kept(query).execute(conn).await.map(drop)
}
