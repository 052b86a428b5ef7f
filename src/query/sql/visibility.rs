//! Whether the caller may see a value, decided on the value row itself:
//! every live value row carries its entity's read-audience and the widest
//! view showing its property there (migration `visibility_in_value_rows`), so a
//! filter, a sort or a count over values needs no visit to their entities.

use super::statement::{Bind, Sql};

/// The caller may see value row `alias`: anonymous callers the values of
/// public entities shown in the public view; a person every value of an
/// entity they view, and the domain view's values of every entity shared
/// beyond private, unless `_noaccess` keeps them out. A live value's entity
/// is live (deleting an entity deletes its values).
pub(super) fn visible_value(sql: &mut Sql, alias: &str, db: &str, person: Option<&str>) {
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

/// `(SELECT au.id FROM audiences au WHERE ...)`: the audiences whose
/// entities the caller may read (anonymous callers: public ones; a person:
/// those viewing them, and those shared beyond private, unless `_noaccess`
/// keeps them out).
pub(super) fn readable_audiences(sql: &mut Sql, db: &str, person: Option<&str>) {
    sql.push("(SELECT au.id FROM audiences au WHERE au.db = ")
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
