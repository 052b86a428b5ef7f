//! Who may do what: pure functions over an entity's rights lists.
//!
//! `_owner`, `_editor`, `_expander` and `_viewer` are cumulative (an owner is
//! also editor, expander and viewer, and so on down), `_noaccess` removes a
//! person from every list, and `_inheritrights` adds the parent's lists.

use std::collections::BTreeSet;

/// The properties that grant (or, `_noaccess`, deny) a person's access.
pub const RIGHTS_PROPERTIES: [&str; 5] = ["_owner", "_editor", "_expander", "_viewer", "_noaccess"];

/// Whether `prop` grants or denies a person's access ([`RIGHTS_PROPERTIES`]).
pub fn is_rights_property(prop: &str) -> bool {
    RIGHTS_PROPERTIES.contains(&prop)
}

/// The levels of access, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Right {
    Viewer,
    Expander,
    Editor,
    Owner,
}

/// An entity's `_sharing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sharing {
    Private,
    Domain,
    Public,
}

impl Sharing {
    pub fn parse(text: &str) -> Option<Sharing> {
        match text {
            "private" => Some(Sharing::Private),
            "domain" => Some(Sharing::Domain),
            "public" => Some(Sharing::Public),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Sharing::Private => "private",
            Sharing::Domain => "domain",
            Sharing::Public => "public",
        }
    }
}

/// Rights lists: as written on one entity, or effective after accumulation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RightsLists {
    pub owners: BTreeSet<String>,
    pub editors: BTreeSet<String>,
    pub expanders: BTreeSet<String>,
    pub viewers: BTreeSet<String>,
    pub noaccess: BTreeSet<String>,
}

impl RightsLists {
    /// The effective lists of an entity from its own lists and, when it
    /// inherits, its parents' effective lists (their `_noaccess` is not inherited).
    pub fn effective(own: &RightsLists, inherited: &[RightsLists]) -> RightsLists {
        let mut lists = own.clone();
        for parent in inherited {
            lists.owners.extend(parent.owners.iter().cloned());
            lists.editors.extend(parent.editors.iter().cloned());
            lists.expanders.extend(parent.expanders.iter().cloned());
            lists.viewers.extend(parent.viewers.iter().cloned());
        }
        lists.editors.extend(lists.owners.iter().cloned());
        lists.expanders.extend(lists.editors.iter().cloned());
        lists.viewers.extend(lists.expanders.iter().cloned());
        for removed in &own.noaccess {
            lists.owners.remove(removed);
            lists.editors.remove(removed);
            lists.expanders.remove(removed);
            lists.viewers.remove(removed);
        }
        lists
    }

    /// The strongest right `person` holds in these (effective) lists.
    pub fn right_of(&self, person: &str) -> Option<Right> {
        if self.owners.contains(person) {
            Some(Right::Owner)
        } else if self.editors.contains(person) {
            Some(Right::Editor)
        } else if self.expanders.contains(person) {
            Some(Right::Expander)
        } else if self.viewers.contains(person) {
            Some(Right::Viewer)
        } else {
            None
        }
    }
}

/// How much of an entity a caller sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ViewLevel {
    /// Anonymous callers of a public entity: values whose definitions are public.
    Public,
    /// Persons of the database without a right on a domain or public entity.
    Domain,
    /// Viewers and up: every value.
    Full,
}

/// What a caller (a person of the entity's database, or anonymous) sees of an
/// entity: public ones everyone, domain ones every person, all of it viewers.
pub fn view_level(sharing: Sharing, lists: &RightsLists, person: Option<&str>) -> Option<ViewLevel> {
    view_level_in(
        sharing,
        person,
        |person| lists.noaccess.contains(person),
        |person| lists.viewers.contains(person),
    )
}

/// [`view_level`] over lists in any form, asked whether they hold a person.
pub fn view_level_in(
    sharing: Sharing,
    person: Option<&str>,
    in_noaccess: impl Fn(&str) -> bool,
    in_viewers: impl Fn(&str) -> bool,
) -> Option<ViewLevel> {
    match person {
        None => (sharing == Sharing::Public).then_some(ViewLevel::Public),
        Some(person) if in_noaccess(person) => None,
        Some(person) if in_viewers(person) => Some(ViewLevel::Full),
        Some(_) => (sharing >= Sharing::Domain).then_some(ViewLevel::Domain),
    }
}

/// Whether a caller may read an entity at all.
pub fn can_read(sharing: Sharing, lists: &RightsLists, person: Option<&str>) -> bool {
    view_level(sharing, lists, person).is_some()
}

/// System properties every view of an entity shows.
pub const ALWAYS_SHOWN: [&str; 3] = ["_type", "_parent", "_sharing"];

/// Whether property `prop` (or `_id`) shows in the given view of an entity
/// whose public and domain views show these properties.
pub fn shows_in_view(level: ViewLevel, prop: &str, public_props: &[String], domain_props: &[String]) -> bool {
    let shown_with =
        |listed: &[String]| prop == "_id" || ALWAYS_SHOWN.contains(&prop) || listed.iter().any(|p| p == prop);
    match level {
        ViewLevel::Full => true,
        ViewLevel::Domain => shown_with(domain_props),
        ViewLevel::Public => shown_with(public_props),
    }
}

/// What decides who sees an entity and which of its properties: the one
/// rule behind every read on a caller's behalf (entities, values, history,
/// thumbnails, reference names, formulas). Built from a stored entity row or
/// a reference's target by the database layer.
#[derive(Debug, Clone)]
pub struct Visibility<'a> {
    pub sharing: Sharing,
    /// Its effective lists: `viewers` and `noaccess` decide here.
    pub lists: RightsLists,
    /// What its public view shows besides the id and [`ALWAYS_SHOWN`].
    pub public_props: &'a [String],
    /// What its domain view shows besides the id and [`ALWAYS_SHOWN`].
    pub domain_props: &'a [String],
}

impl Visibility<'_> {
    /// How much of the entity `person` (`None`: anonymous) sees; `None` when nothing.
    pub fn view_level(&self, person: Option<&str>) -> Option<ViewLevel> {
        view_level(self.sharing, &self.lists, person)
    }

    /// Whether property `prop` (or `_id`) shows in the given view of the entity.
    pub fn shows(&self, level: ViewLevel, prop: &str) -> bool {
        shows_in_view(level, prop, self.public_props, self.domain_props)
    }

    /// Whether `person` sees property `prop` of the entity.
    pub fn shows_to(&self, person: Option<&str>, prop: &str) -> bool {
        self.view_level(person).is_some_and(|level| self.shows(level, prop))
    }

    /// Who may read property `prop` of the entity (`_id`: the entity itself).
    pub fn audience(&self, prop: &str) -> Audience {
        Audience::of(
            self.sharing,
            &self.lists,
            self.shows(ViewLevel::Public, prop),
            self.shows(ViewLevel::Domain, prop),
        )
    }
}

/// Whether `person` holds at least `needed` on an entity with these effective lists.
pub fn has_right(lists: &RightsLists, person: &str, needed: Right) -> bool {
    lists.right_of(person).is_some_and(|held| held >= needed)
}

/// Whether an `add_user` value written by `writer` places the persons of new
/// logins under its target: only while the writer is an owner of the
/// database's own entity (`database`, its effective lists) and may put
/// entities under the target (`_expander` on `target`). Any person may
/// create a `database` entity or write `add_user`; neither opens the database.
pub fn places_new_persons(writer: &str, database: &RightsLists, target: &RightsLists) -> bool {
    has_right(database, writer, Right::Owner) && has_right(target, writer, Right::Expander)
}

/// Who may read one property of an entity, or the entity itself: the
/// formula and search rules compare two of these ("may everyone who reads
/// this also read that?").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audience {
    /// Callers without a token.
    pub anonymous: bool,
    /// Every person of the database but these (the entity's `_noaccess`);
    /// `None` when persons read it only by a right of their own.
    pub persons_except: Option<BTreeSet<String>>,
    /// Persons reading it by a right of their own (effective viewers and up).
    pub named: BTreeSet<String>,
}

impl Audience {
    /// Who reads a property of an entity with this sharing and these
    /// effective lists, given whether its public view shows the property
    /// (`public`) and whether its domain view does (`domain`). Both are true
    /// for what every view shows (the entity's id, `_type`, `_parent`).
    pub fn of(sharing: Sharing, lists: &RightsLists, public: bool, domain: bool) -> Audience {
        Audience {
            anonymous: sharing == Sharing::Public && public,
            persons_except: (sharing >= Sharing::Domain && domain).then(|| lists.noaccess.clone()),
            named: lists.viewers.clone(),
        }
    }

    /// Whether everyone in this audience is also in `wider`.
    pub fn within(&self, wider: &Audience) -> bool {
        if self.anonymous && !wider.anonymous {
            return false;
        }
        if let Some(excepted) = &self.persons_except {
            // every person but a few: only another "every person but" covers
            // it, and only when it excepts no one this one lets in
            match &wider.persons_except {
                Some(wider_excepted) if wider_excepted.is_subset(excepted) => {}
                _ => return false,
            }
        }
        self.named.iter().all(|person| {
            wider.named.contains(person) || wider.persons_except.as_ref().is_some_and(|ex| !ex.contains(person))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn own(owners: &[&str], editors: &[&str], viewers: &[&str], noaccess: &[&str]) -> RightsLists {
        RightsLists {
            owners: set(owners),
            editors: set(editors),
            expanders: BTreeSet::new(),
            viewers: set(viewers),
            noaccess: set(noaccess),
        }
    }

    #[test]
    fn the_rights_properties_are_the_four_rights_and_noaccess() {
        for prop in ["_owner", "_editor", "_expander", "_viewer", "_noaccess"] {
            assert!(is_rights_property(prop), "{prop}");
        }
        for prop in ["_sharing", "_inheritrights", "_parent", "owner"] {
            assert!(!is_rights_property(prop), "{prop}");
        }
    }

    #[test]
    fn rights_are_cumulative() {
        let lists = RightsLists::effective(&own(&["o"], &["e"], &["v"], &[]), &[]);
        for (person, right) in [("o", Right::Owner), ("e", Right::Editor), ("v", Right::Viewer)] {
            assert_eq!(lists.right_of(person), Some(right));
            for needed in [Right::Viewer, Right::Expander, Right::Editor, Right::Owner] {
                assert_eq!(
                    has_right(&lists, person, needed),
                    needed <= right,
                    "{person} {needed:?}"
                );
            }
        }
        assert_eq!(lists.right_of("x"), None);
    }

    #[test]
    fn only_an_owner_of_the_database_who_expands_the_target_places_new_persons() {
        let database = RightsLists::effective(&own(&["o", "lost"], &["e"], &[], &["lost"]), &[]);
        let folder = RightsLists {
            expanders: set(&["x"]),
            ..own(&["e"], &["o"], &["v"], &[])
        };
        let target = RightsLists::effective(&folder, &[]);
        assert!(
            places_new_persons("o", &database, &target),
            "owner and editor of the target"
        );
        assert!(!places_new_persons(
            "o",
            &database,
            &RightsLists::effective(&own(&[], &[], &["o"], &[]), &[])
        ));
        assert!(
            !places_new_persons("e", &database, &target),
            "an editor of the database"
        );
        assert!(
            !places_new_persons("lost", &database, &target),
            "an owner with _noaccess"
        );
        let owners = RightsLists::effective(&own(&["o", "x", "v"], &[], &[], &[]), &[]);
        assert!(places_new_persons("x", &owners, &target), "an expander of the target");
        assert!(!places_new_persons("v", &owners, &target), "a viewer of the target");
    }

    #[test]
    fn noaccess_removes_from_every_list() {
        let parent = RightsLists::effective(&own(&["p"], &[], &[], &[]), &[]);
        let lists = RightsLists::effective(&own(&["o", "p"], &[], &[], &["o", "p"]), &[parent]);
        assert_eq!(lists.right_of("o"), None);
        assert_eq!(lists.right_of("p"), None);
        assert!(!can_read(Sharing::Domain, &lists, Some("o")));
    }

    #[test]
    fn inheritance_adds_parent_lists_but_not_noaccess() {
        let parent = RightsLists::effective(&own(&["p"], &[], &["pv"], &["x"]), &[]);
        let lists = RightsLists::effective(&own(&["o"], &[], &[], &[]), &[parent]);
        assert_eq!(lists.right_of("p"), Some(Right::Owner));
        assert_eq!(lists.right_of("pv"), Some(Right::Viewer));
        assert!(lists.noaccess.is_empty());
    }

    #[test]
    fn view_levels_follow_rights_and_sharing() {
        let lists = RightsLists::effective(&own(&["o"], &[], &["v"], &["n"]), &[]);
        assert_eq!(view_level(Sharing::Public, &lists, None), Some(ViewLevel::Public));
        assert_eq!(view_level(Sharing::Public, &lists, Some("x")), Some(ViewLevel::Domain));
        assert_eq!(view_level(Sharing::Domain, &lists, Some("v")), Some(ViewLevel::Full));
        assert_eq!(view_level(Sharing::Public, &lists, Some("n")), None);
        assert_eq!(view_level(Sharing::Private, &lists, Some("x")), None);
    }

    #[test]
    fn reading_follows_sharing() {
        let lists = RightsLists::effective(&own(&["o"], &[], &[], &[]), &[]);
        assert!(can_read(Sharing::Public, &lists, None));
        assert!(!can_read(Sharing::Domain, &lists, None));
        assert!(can_read(Sharing::Domain, &lists, Some("anyone")));
        assert!(!can_read(Sharing::Private, &lists, Some("anyone")));
        assert!(can_read(Sharing::Private, &lists, Some("o")));
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_view_shows_its_listed_properties_the_id_and_the_system_ones() {
        let (public, domain) = (strings(&["name"]), strings(&["name", "email"]));
        let visibility = Visibility {
            sharing: Sharing::Public,
            lists: RightsLists::effective(&own(&["o"], &[], &["v"], &["n"]), &[]),
            public_props: &public,
            domain_props: &domain,
        };
        for prop in ["_id", "_type", "_parent", "_sharing", "name"] {
            assert!(visibility.shows(ViewLevel::Public, prop), "{prop}");
        }
        assert!(!visibility.shows(ViewLevel::Public, "email"));
        assert!(visibility.shows(ViewLevel::Domain, "email"));
        assert!(!visibility.shows(ViewLevel::Domain, "salary"));
        assert!(!visibility.shows(ViewLevel::Domain, "_owner"));
        assert!(visibility.shows(ViewLevel::Full, "salary"));

        assert!(visibility.shows_to(None, "name"));
        assert!(!visibility.shows_to(None, "email"));
        assert!(visibility.shows_to(Some("x"), "email"));
        assert!(visibility.shows_to(Some("v"), "salary"));
        assert!(!visibility.shows_to(Some("n"), "name"), "_noaccess sees nothing");
    }

    #[test]
    fn a_property_reaches_the_audience_of_the_views_that_show_it() {
        let (public, domain) = (strings(&["name"]), strings(&["name", "email"]));
        let visibility = Visibility {
            sharing: Sharing::Domain,
            lists: RightsLists::effective(&own(&["o"], &[], &[], &["n"]), &[]),
            public_props: &public,
            domain_props: &domain,
        };
        let email = visibility.audience("email");
        assert!(!email.anonymous, "a domain entity shows nothing to anonymous callers");
        assert_eq!(email.persons_except, Some(set(&["n"])));
        assert_eq!(email.named, set(&["o"]));
        let salary = visibility.audience("salary");
        assert_eq!(salary.persons_except, None);
        assert_eq!(visibility.audience("_id"), visibility.audience("_type"));
    }

    fn audience(sharing: Sharing, viewers: &[&str], noaccess: &[&str], shown: bool) -> Audience {
        let lists = RightsLists::effective(&own(viewers, &[], &[], noaccess), &[]);
        Audience::of(sharing, &lists, shown, shown)
    }

    #[test]
    fn an_audience_is_within_one_that_reads_everything_it_reads() {
        let private = audience(Sharing::Private, &["a"], &[], true);
        assert!(private.within(&audience(Sharing::Private, &["a", "b"], &[], true)));
        assert!(private.within(&audience(Sharing::Domain, &["x"], &[], true)));
        assert!(!private.within(&audience(Sharing::Private, &["b"], &[], true)));
        assert!(!private.within(&audience(Sharing::Domain, &["x"], &["a"], true)));
        // a property the target's shared views hide reaches only its viewers
        assert!(!private.within(&audience(Sharing::Public, &["x"], &[], false)));
    }

    #[test]
    fn a_shared_audience_is_within_only_an_equally_shared_one() {
        let domain = audience(Sharing::Domain, &["a"], &["n"], true);
        assert!(domain.within(&audience(Sharing::Domain, &[], &["n"], true)));
        assert!(domain.within(&audience(Sharing::Public, &[], &[], true)));
        assert!(!domain.within(&audience(Sharing::Private, &["a", "b", "c"], &[], true)));
        assert!(!domain.within(&audience(Sharing::Domain, &[], &["m"], true)));
        let public = audience(Sharing::Public, &[], &[], true);
        assert!(public.within(&audience(Sharing::Public, &[], &[], true)));
        assert!(!public.within(&audience(Sharing::Domain, &[], &[], true)));
        assert!(!public.within(&audience(Sharing::Public, &[], &[], false)));
    }
}
