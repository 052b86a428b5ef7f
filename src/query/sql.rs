//! SQL for list queries. Every user-supplied text (property names included)
//! travels as a bind parameter; the SQL text holds only fixed fragments.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use diesel::QueryableByName;
use diesel::pg::Pg;
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::sql_types::{Array, BigInt, Bool, Date, Double, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::{Condition, Field, ListQuery, Operand, Operator, RegexFlags, SortTarget};
use crate::db::values::EntityRow;
use crate::error::ApiError;
use crate::model::API_KEY_PROPERTY;
use crate::rights::ALWAYS_SHOWN;

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
struct CountRow {
    #[diesel(sql_type = BigInt)]
    count: i64,
}

/// A row of a page, with the count of all matches when the page statement
/// counts them itself (see [`page_counts_matches`]).
#[derive(QueryableByName)]
struct PageRow {
    #[diesel(embed)]
    entity: EntityRow,
    #[diesel(sql_type = Nullable<BigInt>)]
    matches: Option<i64>,
}

#[derive(QueryableByName)]
struct GroupRow {
    #[diesel(sql_type = Text)]
    first: String,
    #[diesel(sql_type = BigInt)]
    count: i64,
}

/// The columns of [`EntityRow`], read from alias `e`.
const ENTITY_COLUMNS: &str = "e.id, e.type_id, e.parent_ids, e.name, e.sharing, e.owners, e.editors, e.expanders, \
     e.viewers, e.noaccess, e.doc, e.public_props, e.domain_props";

/// What a list query found.
pub enum ListResult {
    /// One page of matching entities, and the number of all matches.
    Page { entities: Vec<EntityRow>, count: i64 },
    /// One row per group: the id of its first entity (lowest `_id`) and its
    /// size; the entities are read a chunk at a time ([`entities_by_id`]).
    Groups { groups: Vec<(String, i64)> },
}

/// Runs a list query for a caller (`person` in this database, or anonymous).
pub async fn run(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
) -> Result<ListResult, ApiError> {
    let referencing = holding_references(conn, db, query).await?;
    if !query.group.is_empty() {
        return run_grouped(conn, db, person, query, &referencing).await;
    }
    let (page, count) = page_statements(db, person, query, &referencing);
    let rows = page.into_query().load::<PageRow>(conn).await?;
    let counted = rows.as_slice().first().and_then(|row| row.matches);
    let entities: Vec<EntityRow> = rows.into_iter().map(|row| row.entity).collect();
    let count = match counted.or_else(|| count_from_page(query, entities.len())) {
        Some(count) => count,
        None => count.into_query().get_result::<CountRow>(conn).await?.count,
    };
    Ok(ListResult::Page { entities, count })
}

/// Pages longer than this are read and answered a chunk at a time, each
/// chunk one short statement on a connection taken for it alone.
pub const CHUNK: i64 = 500;

/// Whether a query's answer is streamed chunk by chunk ([`Chunks`]) rather
/// than read whole.
pub fn is_streamed(query: &ListQuery) -> bool {
    query.group.is_empty() && query.limit > CHUNK
}

/// A page read a chunk at a time. In `_id` order each chunk continues after
/// the last id of the one before (keyset); sorted by a value, the page's ids
/// are sorted once (narrow rows, counted in the same statement) and the
/// entities read by id a chunk at a time. Memory holds one chunk of
/// entities, and for a value sort the page's ids.
pub struct Chunks {
    db: String,
    person: Option<String>,
    query: ListQuery,
    referencing: HashSet<String>,
    /// The page's ids still to read, for a value sort.
    ids: Option<std::vec::IntoIter<String>>,
    /// The last id read, in `_id` order.
    after: Option<String>,
    /// Matches of the page read (or sorted) so far.
    read: usize,
    /// The count of all matches, when the sort counted them.
    counted: Option<i64>,
    done: bool,
}

#[derive(QueryableByName)]
struct SortedRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = BigInt)]
    matches: i64,
}

impl Chunks {
    /// Prepares the page of `query` (for a value sort, sorts its ids).
    pub async fn start(
        conn: &mut AsyncPgConnection,
        db: &str,
        person: Option<&str>,
        query: &ListQuery,
    ) -> Result<Chunks, ApiError> {
        let referencing = holding_references(conn, db, query).await?;
        let mut chunks = Chunks {
            db: db.to_owned(),
            person: person.map(str::to_owned),
            query: query.clone(),
            referencing,
            ids: None,
            after: None,
            read: 0,
            counted: None,
            done: false,
        };
        if page_counts_matches(query) {
            let mut sorted = Sql::default();
            sorted.push("SELECT p.id, p.matches FROM (");
            ordered_matches(&mut sorted, db, person, query, &chunks.referencing);
            sorted.push(") p ORDER BY ");
            order_by(&mut sorted, "p", query);
            let rows = sorted.into_query().load::<SortedRow>(conn).await?;
            chunks.counted = rows.as_slice().first().map(|row| row.matches);
            chunks.read = rows.len();
            let ids: Vec<String> = rows.into_iter().map(|row| row.id).collect();
            chunks.ids = Some(ids.into_iter());
        }
        Ok(chunks)
    }

    /// The next chunk of the page's entities, in order; `None` after the last.
    pub async fn next(&mut self, conn: &mut AsyncPgConnection) -> Result<Option<Vec<EntityRow>>, ApiError> {
        if self.done {
            return Ok(None);
        }
        if let Some(ids) = &mut self.ids {
            let chunk: Vec<String> = ids.by_ref().take(CHUNK as usize).collect();
            if chunk.is_empty() {
                self.done = true;
                return Ok(None);
            }
            let mut by_id = entities_by_id(conn, &self.db, &chunk).await?;
            return Ok(Some(chunk.iter().filter_map(|id| by_id.remove(id)).collect()));
        }
        let wanted = (self.query.limit - self.read as i64).min(CHUNK);
        if wanted <= 0 {
            self.done = true;
            return Ok(None);
        }
        let mut chunk = Sql::default();
        chunk
            .push("SELECT ")
            .push(ENTITY_COLUMNS)
            .push(" FROM entities e WHERE ");
        where_clause(
            &mut chunk,
            &self.db,
            self.person.as_deref(),
            &self.query,
            &self.referencing,
        );
        if let Some(after) = &self.after {
            // the order is the first key's: every key is `_id`
            let descending = self.query.sort.as_slice().first().is_some_and(|key| key.descending);
            chunk
                .push(if descending { " AND e.id < " } else { " AND e.id > " })
                .bind(Bind::Text(after.clone()));
        }
        chunk.push(" ORDER BY ");
        order_by(&mut chunk, "e", &self.query);
        let skip = if self.after.is_none() { self.query.skip } else { 0 };
        chunk
            .push(" LIMIT ")
            .bind(Bind::Integer(wanted))
            .push(" OFFSET ")
            .bind(Bind::Integer(skip));
        let rows = chunk.into_query().load::<EntityRow>(conn).await?;
        self.read += rows.len();
        self.done = (rows.len() as i64) < wanted;
        self.after = rows.last().map(|row| row.id.clone());
        Ok(Some(rows))
    }

    /// The count of all matches, once the page has been read.
    pub async fn count(&self, conn: &mut AsyncPgConnection) -> Result<i64, ApiError> {
        if let Some(count) = self.counted.or_else(|| count_from_page(&self.query, self.read)) {
            return Ok(count);
        }
        let (_, count) = page_statements(&self.db, self.person.as_deref(), &self.query, &self.referencing);
        Ok(count.into_query().get_result::<CountRow>(conn).await?.count)
    }
}

/// The plan of every statement a list query runs, as `EXPLAIN (ANALYZE,
/// BUFFERS)` reports it (for the query benchmark).
pub async fn explain(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
) -> Result<Vec<String>, ApiError> {
    #[derive(QueryableByName)]
    struct PlanLine {
        #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
        line: String,
    }
    let referencing = holding_references(conn, db, query).await?;
    let statements = if query.group.is_empty() {
        let (page, count) = page_statements(db, person, query, &referencing);
        if page_counts_matches(query) {
            vec![page]
        } else {
            vec![page, count]
        }
    } else {
        vec![group_statement(db, person, query, &referencing)]
    };
    let mut plans = Vec::new();
    for mut statement in statements {
        let mut plan = statement.text.clone();
        statement.text.insert_str(0, "EXPLAIN (ANALYZE, BUFFERS) ");
        for line in statement.into_query().load::<PlanLine>(conn).await? {
            plan.push('\n');
            plan.push_str(&line.line);
        }
        plans.push(plan);
    }
    Ok(plans)
}

/// The properties filtered by `string` that hold references somewhere in
/// the database (one index probe each): only for them can a filter match a
/// reference by its target's name, so only their SQL asks.
async fn holding_references(
    conn: &mut AsyncPgConnection,
    db: &str,
    query: &ListQuery,
) -> Result<HashSet<String>, ApiError> {
    #[derive(QueryableByName)]
    struct Prop {
        #[diesel(sql_type = Text)]
        prop: String,
    }
    let props: Vec<String> = query
        .filters
        .iter()
        .filter(|filter| filter.field == Field::String)
        .map(|filter| filter.prop.clone())
        .collect();
    if props.is_empty() {
        return Ok(HashSet::new());
    }
    let found: Vec<Prop> = diesel::sql_query(
        "SELECT p.prop FROM unnest($2::text[]) AS p(prop) WHERE EXISTS (SELECT 1 FROM property_values x \
         WHERE x.db = $1 AND x.prop = p.prop AND x.deleted_at IS NULL AND x.reference IS NOT NULL)",
    )
    .bind::<Text, _>(db)
    .bind::<Array<Text>, _>(props)
    .load(conn)
    .await?;
    Ok(found.into_iter().map(|row| row.prop).collect())
}

/// The count of all matches when the page itself shows it: a page that is
/// not full and is not past the last match ends with the last match.
fn count_from_page(query: &ListQuery, found: usize) -> Option<i64> {
    let found = i64::try_from(found).ok()?;
    (found < query.limit && (found > 0 || query.skip == 0)).then_some(query.skip + found)
}

/// Whether the page statement counts all matches itself: a page sorted by a
/// value reads every match to sort them anyway, so counting them there costs
/// nothing, while a page in `_id` order may stop after its last row.
fn page_counts_matches(query: &ListQuery) -> bool {
    query
        .sort
        .iter()
        .any(|key| matches!(key.target, SortTarget::Value { .. }))
}

/// One page of matches, and the count of all matches (needed unless the page
/// counted them or shows the count itself, see [`count_from_page`]).
fn page_statements(db: &str, person: Option<&str>, query: &ListQuery, referencing: &HashSet<String>) -> (Sql, Sql) {
    let mut page = Sql::default();
    page.push("SELECT ").push(ENTITY_COLUMNS);
    if page_counts_matches(query) {
        // Sort keys and the count come from narrow rows (id and keys), and
        // only the page's own rows are read whole: carrying every match's
        // document through the count and the sort spills to disk. OFFSET 0
        // keeps the keys computed below the count.
        page.push(", p.matches FROM (");
        ordered_matches(&mut page, db, person, query, referencing);
        page.push(") p JOIN entities e ON e.db = ")
            .bind(Bind::Text(db.to_owned()))
            .push(" AND e.id = p.id ORDER BY ");
        order_by(&mut page, "p", query);
    } else {
        page.push(", NULL::bigint AS matches FROM entities e WHERE ");
        where_clause(&mut page, db, person, query, referencing);
        page.push(" ORDER BY ");
        order_by(&mut page, "e", query);
        page_window(&mut page, query);
    }

    let mut count = Sql::default();
    count.push("SELECT count(*) AS count FROM entities e WHERE ");
    where_clause(&mut count, db, person, query, referencing);
    (page, count)
}

/// The page's matches sorted by value, as narrow rows: `id`, the sort keys
/// (`k{index}`) and `matches`, the count of all matches.
fn ordered_matches(sql: &mut Sql, db: &str, person: Option<&str>, query: &ListQuery, referencing: &HashSet<String>) {
    sql.push("SELECT m.*, count(*) OVER () AS matches FROM (SELECT e.id");
    for (index, key) in query.sort.iter().enumerate() {
        if let SortTarget::Value { prop, field } = &key.target {
            sql.push(", ");
            sort_value(sql, person, prop, *field, key.descending);
            sql.push(&format!(" AS k{index}"));
        }
    }
    sql.push(" FROM entities e WHERE ");
    where_clause(sql, db, person, query, referencing);
    sql.push(" OFFSET 0) m ORDER BY ");
    order_by(sql, "m", query);
    page_window(sql, query);
}

/// The value an entity sorts by for one sort key. Multi-valued properties
/// sort by their smallest value ascending and their largest descending;
/// entities without the property (NULL) come last either way.
fn sort_value(sql: &mut Sql, person: Option<&str>, prop: &str, field: Field, descending: bool) {
    let aggregate = if descending { "max" } else { "min" };
    if matches!(field, Field::Date | Field::Datetime) {
        // Dates before year 1 do not order as their text does: they sort by
        // the typed columns of the value rows.
        sql.push(&format!("(SELECT {aggregate}(v.{}) ", column(field)));
        visible_values(sql, person, prop);
        sql.push(")");
    } else {
        sql.push("(CASE WHEN ");
        shown(sql, person, prop);
        sql.push(" THEN ");
        document_value(sql, prop, field, aggregate);
        sql.push(" END)");
    }
}

/// The sort keys over rows of `alias` (value keys as columns `k{index}`),
/// then `_id` ascending to make the order total.
fn order_by(sql: &mut Sql, alias: &str, query: &ListQuery) {
    for (index, key) in query.sort.iter().enumerate() {
        let direction = if key.descending { "DESC" } else { "ASC" };
        match key.target {
            SortTarget::Id => sql.push(&format!("{alias}.id {direction}, ")),
            SortTarget::Value { .. } => sql.push(&format!("{alias}.k{index} {direction} NULLS LAST, ")),
        };
    }
    sql.push(&format!("{alias}.id ASC"));
}

fn page_window(sql: &mut Sql, query: &ListQuery) {
    sql.push(" LIMIT ")
        .bind(Bind::Integer(query.limit))
        .push(" OFFSET ")
        .bind(Bind::Integer(query.skip));
}

/// Rule 14: one row per distinct combination of the grouped values (a
/// multi-valued property groups by its smallest value).
async fn run_grouped(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
    referencing: &HashSet<String>,
) -> Result<ListResult, ApiError> {
    let groups = group_statement(db, person, query, referencing)
        .into_query()
        .load::<GroupRow>(conn)
        .await?
        .into_iter()
        .map(|group| (group.first, group.count))
        .collect();
    Ok(ListResult::Groups { groups })
}

/// The live entities among `ids` (at most a chunk of them), by id.
pub async fn entities_by_id(
    conn: &mut AsyncPgConnection,
    db: &str,
    ids: &[String],
) -> Result<HashMap<String, EntityRow>, ApiError> {
    let mut entities = Sql::default();
    entities
        .push("SELECT ")
        .push(ENTITY_COLUMNS)
        .push(" FROM entities e WHERE e.db = ")
        .bind(Bind::Text(db.to_owned()))
        .push(" AND e.id = ANY (")
        .bind(Bind::TextArray(ids.to_vec()))
        .push(") AND e.deleted_at IS NULL");
    Ok(entities
        .into_query()
        .load::<EntityRow>(conn)
        .await?
        .into_iter()
        .map(|row| (row.id.clone(), row))
        .collect())
}

/// The groups: each one's first entity (lowest `_id`) and size. Each grouped
/// property's smallest value is read from the entity's projected document,
/// in the scan of the entity rows: no join with the value rows, whose
/// per-entity minimum over a whole database would be a large hash aggregate.
fn group_statement(db: &str, person: Option<&str>, query: &ListQuery, referencing: &HashSet<String>) -> Sql {
    let mut sql = Sql::default();
    sql.push("SELECT min(e.id) AS first, count(*) AS count");
    for (index, (prop, field)) in query.group.iter().enumerate() {
        sql.push(", CASE WHEN ");
        shown(&mut sql, person, prop);
        sql.push(" THEN ");
        document_value(&mut sql, prop, *field, "min");
        sql.push(&format!(" END AS k{index}"));
    }
    sql.push(" FROM entities e WHERE ");
    where_clause(&mut sql, db, person, query, referencing);
    let keys: Vec<String> = (0..query.group.len()).map(|index| format!("k{index}")).collect();
    sql.push(" GROUP BY ")
        .push(&keys.join(", "))
        .push(" ORDER BY ")
        .push(&keys.join(", "));
    sql
}

/// The smallest (`aggregate` `min`) or largest (`max`) `field` of entity
/// `e`'s values of `prop`, read from its document in the scan of its row
/// rather than from the value rows. Numbers compare as numbers, everything
/// else as text (`false` before `true`). Only an entity with several values
/// pays for the subquery.
fn document_value(sql: &mut Sql, prop: &str, field: Field, aggregate: &str) {
    let key = column(field);
    let cast = match field {
        Field::Number => "::double precision",
        Field::Filesize => "::bigint",
        _ => "",
    };
    sql.push("(CASE WHEN jsonb_array_length(e.doc -> ")
        .bind(Bind::Text(prop.to_owned()))
        .push(&format!(
            ") > 1 THEN (SELECT {aggregate}((x ->> '{key}'){cast}) FROM jsonb_array_elements(e.doc -> "
        ))
        .bind(Bind::Text(prop.to_owned()))
        .push(") x) ELSE (e.doc -> ")
        .bind(Bind::Text(prop.to_owned()))
        .push(&format!(" -> 0 ->> '{key}'){cast} END)"));
}

fn where_clause(sql: &mut Sql, db: &str, person: Option<&str>, query: &ListQuery, referencing: &HashSet<String>) {
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
    for word in &query.words {
        let pattern = Bind::Text(format!("%{}%", escape_like(word)));
        match person {
            None => _ = sql.push(" AND e.search_public LIKE ").bind(pattern),
            // Viewers search every searchable value, others the domain view's.
            Some(person) => {
                sql.push(" AND (e.search_domain LIKE ")
                    .bind(pattern.clone())
                    .push(" OR (")
                    .bind(Bind::Text(person.to_owned()))
                    .push(" = ANY (e.viewers) AND e.search_private LIKE ")
                    .bind(pattern)
                    .push("))");
            }
        }
    }
    // Conditions on one property and value field hold for one and the same
    // value (a range is one index scan); negations stand alone.
    let mut groups: Vec<(&str, Field, Vec<Condition>)> = Vec::new();
    for filter in &query.filters {
        if filter.prop == API_KEY_PROPERTY {
            // Keys are hidden: nothing about them can be matched.
            sql.push(" AND FALSE");
            continue;
        }
        let (negated, positive) = match &filter.condition {
            Condition::Compare(Operator::Ne, operand) => (true, Condition::Compare(Operator::Eq, operand.clone())),
            Condition::Exists(false) => (true, Condition::Exists(true)),
            other => (false, other.clone()),
        };
        if negated {
            sql.push(" AND NOT ");
            let references = referencing.contains(&filter.prop);
            filter_clause(sql, db, person, &filter.prop, filter.field, &[positive], references);
        } else if let Some(group) = groups
            .iter_mut()
            .find(|(prop, field, _)| *prop == filter.prop && *field == filter.field)
        {
            group.2.push(positive);
        } else {
            groups.push((&filter.prop, filter.field, vec![positive]));
        }
    }
    for (prop, field, conditions) in groups {
        sql.push(" AND ");
        let references = referencing.contains(prop);
        filter_clause(sql, db, person, prop, field, &conditions, references);
    }
}

/// `FROM property_values v WHERE ...`: the live values of `prop` on entity `e`
/// that the caller's view of `e` shows.
fn visible_values(sql: &mut Sql, person: Option<&str>, prop: &str) {
    sql.push("FROM property_values v WHERE v.db = e.db AND v.entity_id = e.id AND v.deleted_at IS NULL AND v.prop = ")
        .bind(Bind::Text(prop.to_owned()))
        .push(" AND ");
    shown(sql, person, prop);
}

/// Whether the caller's view of entity `e` shows property `prop`.
fn shown(sql: &mut Sql, person: Option<&str>, prop: &str) {
    if ALWAYS_SHOWN.contains(&prop) {
        sql.push("TRUE");
        return;
    }
    match person {
        None => _ = sql.bind(Bind::Text(prop.to_owned())).push(" = ANY (e.public_props)"),
        Some(person) => {
            sql.push("(")
                .bind(Bind::Text(prop.to_owned()))
                .push(" = ANY (e.domain_props) OR ")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (e.viewers))");
        }
    }
}

/// Escapes LIKE's wildcards in a search word.
fn escape_like(word: &str) -> String {
    let mut escaped = String::with_capacity(word.len());
    for c in word.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
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

/// A filter: the caller's view of `e` shows the property, and one of its
/// live values passes every condition. The values are found first, through
/// the (database, property, value) indexes, and only their entities checked.
fn filter_clause(
    sql: &mut Sql,
    db: &str,
    person: Option<&str>,
    prop: &str,
    field: Field,
    conditions: &[Condition],
    holds_references: bool,
) {
    sql.push("(");
    shown(sql, person, prop);
    sql.push(" AND e.id IN (");
    let values = |sql: &mut Sql| {
        sql.push("SELECT v.entity_id FROM property_values v WHERE v.db = ")
            .bind(Bind::Text(db.to_owned()))
            .push(" AND v.prop = ")
            .bind(Bind::Text(prop.to_owned()))
            .push(" AND v.deleted_at IS NULL");
    };
    let tests = |sql: &mut Sql, column: &str| {
        for condition in conditions {
            sql.push(" AND ");
            value_test(sql, column, condition);
        }
    };
    values(sql);
    if field == Field::String {
        tests(sql, "v.string");
        if holds_references {
            // A reference's `string` is the referenced entity's name.
            sql.push(" UNION ALL ");
            values(sql);
            sql.push(" AND v.reference IS NOT NULL AND v.reference IN (SELECT r.id FROM entities r WHERE r.db = ")
                .bind(Bind::Text(db.to_owned()))
                .push(" AND r.deleted_at IS NULL");
            // type names are schema (rule 15); any other name matches only
            // as the caller's own view of the referenced entity shows it
            if prop != "_type" {
                name_shown(sql, person);
            }
            tests(sql, "r.name");
            sql.push(")");
        }
    } else {
        tests(sql, &format!("v.{}", column(field)));
    }
    sql.push("))");
}

/// ` AND ...`: the caller's view of referenced entity `r` shows its name.
fn name_shown(sql: &mut Sql, person: Option<&str>) {
    match person {
        None => _ = sql.push(" AND r.sharing = 'public' AND 'name' = ANY (r.public_props)"),
        Some(person) => {
            sql.push(" AND NOT (")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (r.noaccess)) AND (")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (r.viewers) OR (r.sharing <> 'private' AND 'name' = ANY (r.domain_props)))");
        }
    }
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
            sql.push(" ~ ").bind(Bind::Text(format!(
                "(?{}){}",
                embedded_options(*flags),
                postgres_pattern(pattern)
            )));
        }
    }
}

/// A pattern of the `regex` crate's syntax in PostgreSQL's. The two agree
/// but for word boundaries, which PostgreSQL spells `\y`, `\Y`, `\m` and
/// `\M` (its `\b` is a backspace and its `\B` a backslash). A backslash
/// always escapes the next character, so an escaped backslash is kept.
fn postgres_pattern(pattern: &str) -> String {
    let mut translated = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            translated.push(c);
            continue;
        }
        match chars.next() {
            Some('b') => {
                let rest = chars.as_str();
                let special = [
                    ("{start}", "\\m"),
                    ("{end}", "\\M"),
                    ("{start-half}", "(?<!\\w)"),
                    ("{end-half}", "(?!\\w)"),
                ]
                .into_iter()
                .find_map(|(name, spelled)| Some((rest.strip_prefix(name)?, spelled)));
                match special {
                    Some((after, spelled)) => {
                        translated.push_str(spelled);
                        chars = after.chars();
                    }
                    None => translated.push_str("\\y"),
                }
            }
            Some('B') => translated.push_str("\\Y"),
            Some('<') => translated.push_str("\\m"),
            Some('>') => translated.push_str("\\M"),
            Some(other) => {
                translated.push('\\');
                translated.push(other);
            }
            None => translated.push('\\'),
        }
    }
    translated
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

#[cfg(test)]
mod tests {
    use super::*;

    fn query(limit: i64, skip: i64) -> ListQuery {
        let params = [
            ("limit".to_owned(), limit.to_string()),
            ("skip".to_owned(), skip.to_string()),
        ];
        ListQuery::parse(&params).unwrap()
    }

    #[test]
    fn word_boundaries_are_spelled_as_postgresql_spells_them() {
        for (pattern, spelled) in [
            (r"\bdune\b", r"\ydune\y"),
            (r"un\B", r"un\Y"),
            (r"\<a\>", r"\ma\M"),
            (r"\b{start}a\b{end}", r"\ma\M"),
            (r"\b{start-half}a\b{end-half}", r"(?<!\w)a(?!\w)"),
            (r"\\b", r"\\b"),
            (r"\\\b", r"\\\y"),
            (r"\d+\.\w\s", r"\d+\.\w\s"),
            ("é\\", "é\\"),
        ] {
            assert_eq!(postgres_pattern(pattern), spelled, "{pattern}");
        }
    }

    #[test]
    fn a_page_that_is_not_full_gives_the_count() {
        assert_eq!(count_from_page(&query(20, 0), 0), Some(0));
        assert_eq!(count_from_page(&query(20, 0), 7), Some(7));
        assert_eq!(count_from_page(&query(20, 40), 7), Some(47));
    }

    #[test]
    fn a_full_page_or_one_past_the_end_needs_counting() {
        assert_eq!(count_from_page(&query(20, 0), 20), None);
        assert_eq!(count_from_page(&query(20, 40), 0), None);
    }
}
