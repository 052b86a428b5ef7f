//! A page read together with its references' targets: the page statement
//! in a CTE, its rows first and then the live entities its documents
//! reference, as `db::references::targets` reads them. One statement for
//! what took two round trips (the targets were read once the page came).

use diesel::QueryableByName;
use diesel::sql_types::{Bool, Nullable, Text};

use super::PageRow;
use super::statement::{Bind, Sql};
use crate::db::references::{self, Target};

/// A row of [`with_targets`]: one of the page's, in its order, or a target
/// (its `EntityRow` holding only the columns a [`Target`] needs).
#[derive(QueryableByName)]
pub(super) struct PageOrTarget {
    #[diesel(sql_type = Bool)]
    is_target: bool,
    #[diesel(sql_type = Nullable<Text>)]
    type_name: Option<String>,
    #[diesel(embed)]
    row: PageRow,
}

/// `page` followed by the targets of its rows' references. A CTE scan runs
/// in no parallel worker, so the page's rows come first and in its order.
pub(super) fn with_targets(mut page: Sql, db: &str) -> Sql {
    page.text.insert_str(0, "WITH page AS MATERIALIZED (");
    page.push(
        ") SELECT false AS is_target, NULL::text AS type_name, page.* FROM page \
         UNION ALL SELECT true, k.name, t.id, NULL, '{}', t.name, t.sharing, '{}', '{}', '{}', t.viewers, \
         t.noaccess, 'null', t.public_props, t.domain_props, NULL \
         FROM entities t LEFT JOIN entities k ON k.db = t.db AND k.id = t.type_id WHERE t.db = ",
    )
    .bind(Bind::Text(db.to_owned()))
    .push(
        " AND t.deleted_at IS NULL AND t.id = ANY (ARRAY( \
         SELECT jsonb_path_query(page.doc, '$.*[*].reference') #>> '{}' FROM page))",
    );
    page
}

/// The page's rows, in order, and the targets read with them.
pub(super) fn split(rows: Vec<PageOrTarget>) -> (Vec<PageRow>, Vec<Target>) {
    let mut page = Vec::with_capacity(rows.len());
    let mut targets = Vec::new();
    for PageOrTarget {
        is_target,
        type_name,
        row,
    } in rows
    {
        if is_target {
            targets.push(references::target_of(row.entity, type_name));
        } else {
            page.push(row);
        }
    }
    (page, targets)
}
