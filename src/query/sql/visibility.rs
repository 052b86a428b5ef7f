//! Whether the caller may see a value, decided on the value row itself:
//! every live value row carries its entity's read-audience and the widest
//! view showing its property there (migration `visibility_in_value_rows`), so a
//! filter, a sort or a count over values needs no visit to their entities.
//!
//! Which audiences the caller may read is found in the statement itself, or
//! bound into it as lists of ids resolved once per caller (`readable`):
//! a range's page tests visibility in six places, each of which scanned the
//! database's audiences in a subquery of its own.

use super::readable::Readable;
use super::statement::{Bind, Sql};

/// The caller may see value row `alias`: anonymous callers the values of
/// public entities shown in the public view; a person every value of an
/// entity they view, and the domain view's values of every entity shared
/// beyond private, unless `_noaccess` keeps them out. A live value's entity
/// is live (deleting an entity deletes its values).
pub(super) fn visible_value(sql: &mut Sql, alias: &str, db: &str, person: Option<&str>) {
    if let Some(readable) = sql.readable() {
        let shared = Bind::IntegerArray(readable.shared.clone());
        if person.is_none() {
            sql.push(&format!("{alias}.level = 2 AND {alias}.audience = ANY ("))
                .bind(shared)
                .push(")");
            return;
        }
        sql.push(&format!("({alias}.audience = ANY ("))
            .bind(Bind::IntegerArray(readable.viewed.clone()))
            .push(&format!(") OR ({alias}.level >= 1 AND {alias}.audience = ANY ("))
            .bind(shared)
            .push(")))");
        return;
    }
    let audiences = |sql: &mut Sql| {
        sql.push("(SELECT au.id FROM audiences au WHERE au.db = ")
            .bind(Bind::Text(db.to_owned()));
    };
    match person {
        None => {
            sql.push(&format!("{alias}.level = 2 AND {alias}.audience IN "));
            audiences(sql);
            sql.push(" AND au.sharing = 'public')");
        }
        Some(person) => {
            sql.push(&format!("({alias}.audience IN "));
            audiences(sql);
            sql.push(" AND ")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (au.viewers) AND NOT ")
                .bind(Bind::Text(person.to_owned()))
                .push(&format!(
                    " = ANY (au.noaccess)) OR ({alias}.level >= 1 AND {alias}.audience IN "
                ));
            audiences(sql);
            sql.push(" AND au.sharing <> 'private' AND NOT ")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (au.noaccess))))");
        }
    }
}

/// The caller may read the entities of audience `column`: anonymous
/// callers public ones; a person those viewing them, and those shared
/// beyond private, unless `_noaccess` keeps them out.
pub(super) fn readable_audience(sql: &mut Sql, column: &str, db: &str, person: Option<&str>) {
    if let Some(readable) = sql.readable() {
        let mut ids = readable.viewed.clone();
        ids.extend(readable.shared.iter().filter(|id| !readable.viewed.contains(id)));
        sql.push(&format!("{column} = ANY ("))
            .bind(Bind::IntegerArray(ids))
            .push(")");
        return;
    }
    sql.push(&format!("{column} IN (SELECT au.id FROM audiences au WHERE au.db = "))
        .bind(Bind::Text(db.to_owned()));
    match person {
        None => _ = sql.push(" AND au.sharing = 'public')"),
        Some(person) => {
            sql.push(" AND NOT ")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (au.noaccess) AND (au.sharing <> 'private' OR ")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (au.viewers)))");
        }
    }
}

/// Appends a boolean expression that is true when `readable` are still the
/// audiences of database `db` (in the statement's own snapshot).
pub(super) fn still_held(sql: &mut Sql, readable: &Readable, db: &str) {
    sql.push("coalesce((SELECT s.stamp FROM audience_stamps s WHERE s.db = ")
        .bind(Bind::Text(db.to_owned()))
        .push("), 0) = ")
        .bind(Bind::Integer(readable.stamp));
}
