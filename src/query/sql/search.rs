//! Full-text `q`: every word is a substring of the search text the caller's
//! view shows (served by the trigram indexes).

use super::statement::{Bind, Sql};

/// ` AND ...` for each search word of `q`: the entity's search text, as
/// the caller's view of it shows it, contains the word.
pub(super) fn search_words(sql: &mut Sql, person: Option<&str>, words: &[String]) {
    for word in words {
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
