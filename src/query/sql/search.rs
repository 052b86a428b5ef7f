//! Full-text `q`: every word is a substring of the search text the caller's
//! view shows (served by the trigram indexes).

use super::statement::{Bind, Sql};

/// ` AND ...` for the search words of `q`: the entity's search text, as the
/// caller's view of it shows it, contains every word.
///
/// A viewer's search text holds every word of the domain view's (whatever
/// the domain view may read, its viewers may), so a signed-in caller's
/// words are all looked for in one text or all in the other: each text's
/// trigram index then answers every word in one scan, candidates holding
/// all of them, rather than the planner driving the search from one word's
/// candidates, which it cannot tell apart by their number.
pub(super) fn search_words(sql: &mut Sql, person: Option<&str>, words: &[String]) {
    if words.is_empty() {
        return;
    }
    let patterns: Vec<Bind> = words
        .iter()
        .map(|word| Bind::Text(format!("%{}%", escape_like(word))))
        .collect();
    match person {
        None => {
            sql.push(" AND ");
            contains_every(sql, "e.search_public", &patterns);
        }
        Some(person) => {
            sql.push(" AND ((");
            contains_every(sql, "e.search_domain", &patterns);
            sql.push(") OR (")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (e.viewers) AND ");
            contains_every(sql, "e.search_private", &patterns);
            sql.push("))");
        }
    }
}

/// `text LIKE p1 AND text LIKE p2 ...`: one condition per pattern on one
/// search text, which its trigram index answers in one scan.
fn contains_every(sql: &mut Sql, text: &str, patterns: &[Bind]) {
    for (n, pattern) in patterns.iter().enumerate() {
        if n > 0 {
            sql.push(" AND ");
        }
        sql.push(text).push(" LIKE ").bind(pattern.clone());
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
