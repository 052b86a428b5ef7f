//! A page read together with its references' targets: the page statement
//! in a CTE, its rows first and then the live entities its documents
//! reference, as `db::references::targets` reads them. One statement for
//! what took two round trips (the targets were read once the page came).
//! A page built on the facts last seen of its properties, or on the
//! audiences last resolved for its caller, ends with a row telling whether
//! they still hold.

use std::sync::LazyLock;

use diesel::QueryableByName;
use diesel::sql_types::{Integer, Nullable, Text};

use super::PageRow;
use super::facts::PropertyFacts;
use super::readable::Readable;
use super::statement::{Bind, Sql};
use super::visibility::still_held;
use crate::db::references::{self, Target};

/// What a row of [`with_targets`] is (its `part`).
const PAGE: i32 = 0;
const TARGET: i32 = 1;
/// The row whose `matches` is 1 + the database's generation when what the
/// page was built on held, 0 when not.
const CHECK: i32 = 2;

/// What follows the page: its rows, then its references' targets.
static PAGE_THEN_TARGETS: LazyLock<String> = LazyLock::new(|| {
    format!(
        ") SELECT {PAGE} AS part, NULL::text AS type_name, page.* FROM page \
         UNION ALL SELECT {TARGET}, k.name, t.id, NULL, '{{}}', t.name, t.sharing, '{{}}', '{{}}', '{{}}', t.viewers, \
         t.noaccess, 'null', t.public_props, t.domain_props, NULL \
         FROM entities t LEFT JOIN entities k ON k.db = t.db AND k.id = t.type_id WHERE t.db = "
    )
});

/// The start of the check row, its `matches` to follow.
static CHECK_ROW: LazyLock<String> = LazyLock::new(|| {
    format!(
        " UNION ALL SELECT {CHECK}, NULL, '', NULL, '{{}}', NULL, '', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', \
         'null', '{{}}', '{{}}', CASE WHEN "
    )
});

/// A row of [`with_targets`]: one of the page's, in its order, a target
/// (its `EntityRow` holding only the columns a [`Target`] needs), or the
/// check of what the page was built on.
#[derive(QueryableByName)]
pub(super) struct PageOrTarget {
    #[diesel(sql_type = Integer)]
    part: i32,
    #[diesel(sql_type = Nullable<Text>)]
    type_name: Option<String>,
    #[diesel(embed)]
    row: PageRow,
}

/// `page` followed by the targets of its rows' references, and by the check
/// of what it was built on without reading it in its own snapshot: facts
/// `assumed` and audiences `readable`. A CTE scan runs in no parallel worker,
/// so the page's rows come first and in its order.
pub(super) fn with_targets(
    mut page: Sql,
    db: &str,
    assumed: Option<&PropertyFacts>,
    readable: Option<&Readable>,
) -> Sql {
    page.text.insert_str(0, "WITH page AS MATERIALIZED (");
    page.push(&PAGE_THEN_TARGETS).bind(Bind::Text(db.to_owned())).push(
        " AND t.deleted_at IS NULL AND t.id = ANY (ARRAY( \
         SELECT jsonb_path_query(page.doc, '$.*[*].reference') #>> '{}' FROM page))",
    );
    if assumed.is_none() && readable.is_none() {
        return page;
    }
    page.push(&CHECK_ROW);
    if let Some(assumed) = assumed {
        assumed.still_hold(&mut page, db);
    }
    if let Some(readable) = readable {
        if assumed.is_some() {
            page.push(" AND ");
        }
        still_held(&mut page, readable, db);
    }
    // held: 1 + the generation they held at
    page.push(" THEN 1 + (SELECT d.generation FROM databases d WHERE d.name = ")
        .bind(Bind::Text(db.to_owned()))
        .push(") ELSE 0 END");
    page
}

/// A page read with [`with_targets`].
pub(super) struct Split {
    pub(super) rows: Vec<PageRow>,
    pub(super) targets: Vec<Target>,
    /// The database's generation in the page's snapshot, when it checked
    /// what it was built on (and found it held).
    pub(super) held_at: Option<i64>,
}

/// The page's rows, in order, and the targets read with them; `None` when
/// the facts or audiences the page was built on no longer held.
pub(super) fn split(rows: Vec<PageOrTarget>) -> Option<Split> {
    let mut split = Split {
        rows: Vec::with_capacity(rows.len()),
        targets: Vec::new(),
        held_at: None,
    };
    for PageOrTarget { part, type_name, row } in rows {
        match part {
            PAGE => split.rows.push(row),
            TARGET => split.targets.push(references::target_of(row.entity, type_name)),
            _ => match row.matches {
                Some(held) if held > 0 => split.held_at = Some(held - 1),
                _ => return None,
            },
        }
    }
    Some(split)
}
