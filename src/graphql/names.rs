//! GraphQL names of entity types and properties (CONTRACT "GraphQL"): each
//! character outside `[A-Za-z0-9_]` becomes `_`, lower-cased; a leading
//! digit gets a `_` before it and a leading `__` (reserved for
//! introspection) becomes a single `_`; names that collide get `_2`, `_3`…
//! in the order given (type and definition `_id` order).

use std::collections::HashSet;

/// The interface every entity object implements.
pub const ENTITY: &str = "Entity";
/// The object of an entity whose type the caller does not see.
pub const OTHER: &str = "OtherEntity";
pub const JSON: &str = "JSON";

/// `name` as a GraphQL name, before collisions are numbered.
pub fn field_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with("__") {
        out = format!("_{}", out.trim_start_matches('_'));
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// Hands out unique names: the first of a kind as it is, the next `_2`, `_3`…
#[derive(Default)]
pub struct Names {
    taken: HashSet<String>,
}

impl Names {
    /// Names already taken (root fields, fixed entity fields).
    pub fn reserving<'a>(reserved: impl IntoIterator<Item = &'a str>) -> Names {
        Names {
            taken: reserved.into_iter().map(str::to_owned).collect(),
        }
    }

    /// The unique GraphQL name of `name`.
    pub fn unique(&mut self, name: &str) -> String {
        let base = field_name(name);
        let mut candidate = base.clone();
        let mut number = 2;
        while self.taken.contains(&candidate) {
            candidate = format!("{base}_{number}");
            number += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estonian_letters_become_underscores_and_collisions_are_numbered() {
        assert_eq!(field_name("Õpilane"), "_pilane");
        assert_eq!(field_name("Käsi-raamat"), "k_si_raamat");
        assert_eq!(field_name("2nd"), "_2nd");
        assert_eq!(field_name("__secret"), "_secret");
        let mut names = Names::reserving(["_entity"]);
        assert_eq!(names.unique("_entity"), "_entity_2");
        assert_eq!(names.unique("Töö"), "t__");
        assert_eq!(names.unique("Tüü"), "t___2");
        assert_eq!(names.unique("töö"), "t___3");
    }
}
