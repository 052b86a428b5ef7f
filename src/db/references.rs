//! What references may show of the entities they point at, and the read of
//! one entity together with those entities, in a single statement.

use diesel::sql_types::{Array, Bool, Nullable, Text};
use diesel::{QueryResult, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::prepared::Prepared;
use crate::db::values::{EntityRow, RawDoc};
use crate::rights::{RightsLists, Sharing, Visibility};

/// The columns of an entity that decide who sees it and which of its
/// properties, for statements that read other entities than the one written
/// (`e.sharing, e.viewers, e.noaccess, e.public_props, e.domain_props`).
#[derive(Debug, Clone, QueryableByName)]
pub struct AccessColumns {
    #[diesel(sql_type = Text)]
    sharing: String,
    #[diesel(sql_type = Array<Text>)]
    viewers: Vec<String>,
    #[diesel(sql_type = Array<Text>)]
    noaccess: Vec<String>,
    #[diesel(sql_type = Array<Text>)]
    public_props: Vec<String>,
    #[diesel(sql_type = Array<Text>)]
    domain_props: Vec<String>,
}

impl AccessColumns {
    /// Who sees the entity, and which of its properties.
    pub fn visibility(&self) -> Visibility<'_> {
        Visibility {
            sharing: Sharing::parse(&self.sharing).unwrap_or(Sharing::Private),
            lists: RightsLists {
                viewers: self.viewers.iter().cloned().collect(),
                noaccess: self.noaccess.iter().cloned().collect(),
                ..RightsLists::default()
            },
            public_props: &self.public_props,
            domain_props: &self.domain_props,
        }
    }
}

/// What a reference may show of the entity it points at: its name and its
/// type's name, and what decides who may read them.
#[derive(Debug, Clone, QueryableByName)]
pub struct Target {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub name: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub type_name: Option<String>,
    #[diesel(embed)]
    pub access: AccessColumns,
}

/// The live entities among `ids`, as references to them see them. The values
/// are read through subqueries so that one plan serves any list of ids (see
/// `query::sql::Sql::planned_for_any_values`): planned for each list's
/// length, this statement took longer to plan than to run.
pub async fn targets(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<Target>> {
    let query = diesel::sql_query(
        "SELECT e.id, e.name, t.name AS type_name, e.sharing, e.viewers, e.noaccess, e.public_props, \
         e.domain_props FROM entities e LEFT JOIN entities t ON t.db = e.db AND t.id = e.type_id \
         WHERE e.db = (SELECT $1) AND e.id = ANY((SELECT $2)::text[]) AND e.deleted_at IS NULL",
    )
    .bind::<Text, _>(db)
    .bind::<Array<Text>, _>(ids);
    Prepared::kept(query).load(conn).await
}

/// The entity row of [`entity_with_targets`], or the row of one of the
/// entities its references point at (`doc` null, only the columns of
/// [`AccessColumns`] and the names filled).
#[derive(QueryableByName)]
struct EntityOrTarget {
    #[diesel(sql_type = Bool)]
    is_target: bool,
    #[diesel(sql_type = Nullable<Text>)]
    type_name: Option<String>,
    #[diesel(embed)]
    row: EntityRow<RawDoc>,
}

/// Live entity `id`, and the live entities its references point at as
/// [`targets`] answers them: one statement, one round trip.
pub async fn entity_with_targets(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
) -> QueryResult<Option<(EntityRow<RawDoc>, Vec<Target>)>> {
    // The references' ids go to the index as one array, as `targets` sends
    // them: a set-returning function in `IN` would be planned for 1,000 ids.
    let query = diesel::sql_query(
        "WITH e AS (SELECT id, type_id, parent_ids, name, sharing, owners, editors, expanders, viewers, noaccess, \
         doc, public_props, domain_props FROM entities WHERE db = $1 AND id = $2 AND deleted_at IS NULL) \
         SELECT false AS is_target, NULL::text AS type_name, e.* FROM e \
         UNION ALL SELECT true, k.name, t.id, NULL, '{}', t.name, t.sharing, '{}', '{}', '{}', t.viewers, \
         t.noaccess, 'null', t.public_props, t.domain_props \
         FROM entities t LEFT JOIN entities k ON k.db = t.db AND k.id = t.type_id \
         WHERE t.db = $1 AND t.deleted_at IS NULL AND t.id = ANY (ARRAY( \
         SELECT jsonb_path_query(e.doc, '$.*[*].reference') #>> '{}' FROM e))",
    )
    .bind::<Text, _>(db)
    .bind::<Text, _>(id);
    let rows: Vec<EntityOrTarget> = Prepared::kept(query).load(conn).await?;
    let mut entity = None;
    let mut found = Vec::with_capacity(rows.len());
    for EntityOrTarget {
        is_target,
        type_name,
        row,
    } in rows
    {
        if !is_target {
            entity = Some(row);
            continue;
        }
        found.push(target_of(row, type_name));
    }
    Ok(entity.map(|entity| (entity, found)))
}

/// The target read as an entity row of which only the columns of
/// [`AccessColumns`] and the name were filled, with its type's name.
pub fn target_of<Doc>(row: EntityRow<Doc>, type_name: Option<String>) -> Target {
    Target {
        id: row.id,
        name: row.name,
        type_name,
        access: AccessColumns {
            sharing: row.sharing,
            viewers: row.viewers,
            noaccess: row.noaccess,
            public_props: row.public_props,
            domain_props: row.domain_props,
        },
    }
}
