//! The layer rules of the guide's Architecture page, checked on the
//! source itself: layers point down only (the front ends `src/http/` and
//! `src/mcp/` above the application layer `src/service/`, which sits above
//! `sign_in`, `write`, `query` and `db`), there are no import circles between
//! top-level modules nor between any two files, handlers do not import each
//! other, and no file grows past about 400 lines outside its tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lines a source file may hold outside its `#[cfg(test)]` module.
const MAX_LINES: usize = 400;

/// Where a file's in-place test module starts: everything after it is tests.
/// (A `#[cfg(test)] mod helpers;` declaration elsewhere does not end the code.)
const TEST_MODULE: &str = "\n#[cfg(test)]\nmod tests {";

/// Files that sit above every layer: they assemble the application.
const ENTRY_POINTS: [&str; 2] = ["app", "main"];

/// Modules of `src/http/` that handlers may use; every other one is a handler.
const HTTP_SHARED: [&str; 7] = ["caller", "forms", "middleware", "retry", "routes", "state", "views"];

/// Lines `src/http/mod.rs` may hold: module declarations and a few re-exports.
const HTTP_MOD_MAX_LINES: usize = 100;

struct Source {
    /// Module path without `crate`, e.g. `["http", "entity"]`.
    module: Vec<String>,
    path: PathBuf,
    /// The file's text before its `#[cfg(test)]` module.
    code: String,
}

impl Source {
    fn top(&self) -> &str {
        self.module.first().map_or("", String::as_str)
    }

    fn name(&self) -> String {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        self.path.strip_prefix(root).unwrap_or(&self.path).display().to_string()
    }

    /// Every `crate::…` path the code names (use trees expanded), plus
    /// `super::…` paths resolved against the module, as module paths.
    fn imports(&self) -> BTreeSet<Vec<String>> {
        paths_in(&self.code, &[("crate::", Vec::new()), ("super::", self.parent())])
    }

    /// [`Source::imports`], and the `self::…` paths by which a module uses
    /// its own children; none of its re-exports (`pub use …;`), which only
    /// name an item for others.
    fn file_imports(&self) -> BTreeSet<Vec<String>> {
        let mut code = self.code.clone();
        for statement in self.re_export_statements() {
            code = code.replacen(statement, "", 1);
        }
        let prefixes = [
            ("crate::", Vec::new()),
            ("super::", self.parent()),
            ("self::", self.module.clone()),
        ];
        paths_in(&code, &prefixes)
    }

    /// The module `super` names: the parent of a file module, or of the
    /// folder a `mod.rs` stands for.
    fn parent(&self) -> Vec<String> {
        let mut parent = self.module.clone();
        parent.pop();
        parent
    }

    /// The items this module re-exports (`pub use child::Item;`, `pub use
    /// self::child::{A, B}`), as `module::Item` → `module::child::Item`.
    fn re_exports(&self) -> Vec<(Vec<String>, Vec<String>)> {
        let mut found = Vec::new();
        for statement in self.re_export_statements() {
            for path in expand_use_tree(&statement["pub use ".len()..]) {
                let mut target = match path.first().map(String::as_str) {
                    Some("crate") => Vec::new(),
                    Some("super") => self.parent(),
                    _ => self.module.clone(),
                };
                target.extend(path.into_iter().skip_while(|part| part == "crate" || part == "super"));
                if let Some(item) = target.last() {
                    let mut alias = self.module.clone();
                    alias.push(item.clone());
                    found.push((alias, target));
                }
            }
        }
        found
    }

    /// The `pub use …;` statements of the code, each up to its semicolon.
    fn re_export_statements(&self) -> Vec<&str> {
        self.code
            .match_indices("pub use ")
            .map(|(at, _)| {
                let end = self.code[at..]
                    .find(';')
                    .map_or(self.code.len(), |semicolon| at + semicolon + 1);
                &self.code[at..end]
            })
            .collect()
    }

    fn lines(&self) -> usize {
        self.code.lines().count()
    }
}

/// Every path `code` names after one of the `prefixes` (use trees
/// expanded), each joined to the module path its prefix stands for.
fn paths_in(code: &str, prefixes: &[(&str, Vec<String>)]) -> BTreeSet<Vec<String>> {
    let mut found = BTreeSet::new();
    for (prefix, base) in prefixes {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let preceded_by_ident = rest[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            rest = &rest[at + prefix.len()..];
            if preceded_by_ident {
                continue;
            }
            for path in expand_use_tree(rest) {
                let mut full = base.clone();
                full.extend(path);
                found.insert(full);
            }
        }
    }
    found
}

/// The paths a use tree (or a plain path) at the start of `text` names:
/// `a::{b, c::{d, e}}` gives `a::b`, `a::c::d`, `a::c::e`.
fn expand_use_tree(text: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    expand_into(text.trim_start(), Vec::new(), &mut paths);
    paths
}

fn expand_into(text: &str, prefix: Vec<String>, paths: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    let mut rest = text;
    loop {
        let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if ident.is_empty() {
            if let Some(group) = rest.strip_prefix('{') {
                for item in split_group(group) {
                    expand_into(item.trim(), path.clone(), paths);
                }
                return;
            }
            break;
        }
        rest = &rest[ident.len()..];
        if ident != "self" {
            path.push(ident);
        }
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    if !path.is_empty() {
        paths.push(path);
    }
}

/// The top-level items of a `{…}` group, up to its closing brace.
fn split_group(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut items) = (0usize, 0usize, Vec::new());
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&text[start..at]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items
}

fn sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = match text.find(TEST_MODULE) {
                Some(at) => text[..at].to_owned(),
                None => text,
            };
            let relative = path.strip_prefix(&root).unwrap().with_extension("");
            let mut module: Vec<String> = relative
                .iter()
                .map(|part| part.to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            Source { module, path, code }
        })
        .collect()
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

/// `(file, imported path)` for every import of `forbidden` by a file `applies` selects.
fn offenders(applies: impl Fn(&Source) -> bool, forbidden: &[&str]) -> Vec<String> {
    sources()
        .iter()
        .filter(|source| applies(source))
        .flat_map(|source| {
            source
                .imports()
                .into_iter()
                .filter(|path| forbidden.contains(&path[0].as_str()))
                .map(|path| format!("{} imports crate::{}", source.name(), path.join("::")))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn no_module_below_http_imports_http() {
    let below = |source: &Source| source.top() != "http" && !ENTRY_POINTS.contains(&source.top());
    assert_eq!(offenders(below, &["http"]), Vec::<String>::new());
}

/// The front ends (`src/http/`, `src/mcp/`, `src/graphql/`) above the
/// application layer (`src/service/`): they reach storage and writes only through it.
const FRONT_ENDS: [&str; 3] = ["http", "mcp", "graphql"];

#[test]
fn no_file_in_http_mcp_or_graphql_imports_db_or_write() {
    let front_end = |source: &Source| FRONT_ENDS.contains(&source.top());
    assert_eq!(offenders(front_end, &["db", "write"]), Vec::<String>::new());
}

#[test]
fn nothing_below_the_front_ends_imports_them() {
    let below = |source: &Source| !FRONT_ENDS.contains(&source.top()) && !ENTRY_POINTS.contains(&source.top());
    assert_eq!(offenders(below, &FRONT_ENDS), Vec::<String>::new());
}

#[test]
fn nothing_below_the_service_layer_imports_it() {
    let above = ["service", "http", "mcp", "graphql"];
    let below = |source: &Source| !above.contains(&source.top()) && !ENTRY_POINTS.contains(&source.top());
    assert_eq!(offenders(below, &["service"]), Vec::<String>::new());
}

#[test]
fn the_service_layer_knows_no_actix() {
    let named: Vec<String> = sources()
        .iter()
        .filter(|source| source.top() == "service" && source.code.contains("actix_web"))
        .map(Source::name)
        .collect();
    assert_eq!(named, Vec::<String>::new());
}

#[test]
fn no_import_circle_between_files_even_inside_a_folder() {
    let graph = file_graph(&sources());
    let circles: BTreeSet<String> = graph
        .keys()
        .filter_map(|start| circle_through(&graph, start))
        .map(|circle| from_its_first_file(&circle))
        .collect();
    assert_eq!(circles, BTreeSet::new());
}

/// The circle `b -> a -> b` written from its first file, `a -> b -> a`, so
/// that each circle is listed once whichever file it was found from.
fn from_its_first_file(circle: &str) -> String {
    let mut files: Vec<&str> = circle.split(" -> ").collect();
    files.pop();
    let first = (0..files.len()).min_by_key(|at| files[*at]).unwrap_or(0);
    files.rotate_left(first);
    files.push(files[0]);
    files.join(" -> ")
}

/// Which files each file imports: an import of a module, of a child of it,
/// or of an item in it counts as one of the file that defines it, and an
/// item a `mod.rs` re-exports (`pub use self::types::TypeCache`) as one of the
/// file that defines the item.
fn file_graph(all: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let files: BTreeMap<&[String], String> = all
        .iter()
        .map(|source| (source.module.as_slice(), source.module.join("::")))
        .collect();
    let aliases: BTreeMap<Vec<String>, Vec<String>> = all.iter().flat_map(Source::re_exports).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in all {
        let own = source.module.join("::");
        for path in source.file_imports() {
            let Some(file) = defining_file(&path, &files, &aliases) else {
                continue;
            };
            if file != own {
                graph.entry(own.clone()).or_default().insert(file);
            }
        }
    }
    graph
}

/// The file that defines what `path` names: the longest module that starts
/// it, or, for an item that module re-exports, the file the item comes from.
fn defining_file(
    path: &[String],
    files: &BTreeMap<&[String], String>,
    aliases: &BTreeMap<Vec<String>, Vec<String>>,
) -> Option<String> {
    let mut path = path.to_vec();
    // a chain of re-exports ends: each step names a longer or another path
    for _ in 0..8 {
        let module = (0..=path.len()).rev().find(|len| files.contains_key(&path[..*len]))?;
        let item = path.get(..=module).and_then(|named| aliases.get(named));
        match item {
            Some(target) => path = target.clone(),
            None => return files.get(&path[..module]).cloned(),
        }
    }
    None
}

#[test]
fn the_model_and_the_rights_rules_import_no_database_or_upper_layer() {
    let pure = |source: &Source| matches!(source.top(), "model" | "rights");
    let forbidden = [
        "db", "view", "http", "write", "query", "actors", "storage", "cli", "app",
    ];
    assert_eq!(offenders(pure, &forbidden), Vec::<String>::new());
}

#[test]
fn nothing_below_the_view_imports_the_view() {
    let above = ["view", "service", "http", "mcp"];
    let below = |source: &Source| !above.contains(&source.top()) && !ENTRY_POINTS.contains(&source.top());
    assert_eq!(offenders(below, &["view"]), Vec::<String>::new());
}

#[test]
fn handlers_do_not_import_each_other() {
    let all = sources();
    let handler_of = |source: &Source| match source.module.as_slice() {
        [http, handler, ..] if http == "http" && !HTTP_SHARED.contains(&handler.as_str()) => Some(handler.clone()),
        _ => None,
    };
    let handlers: BTreeSet<String> = all.iter().filter_map(handler_of).collect();
    let mut found = Vec::new();
    for source in &all {
        let Some(own) = handler_of(source) else { continue };
        for path in source.imports() {
            if let [http, other, ..] = path.as_slice()
                && http == "http"
                && *other != own
                && handlers.contains(other)
            {
                found.push(format!("{} imports crate::{}", source.name(), path.join("::")));
            }
        }
    }
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let all = sources();
    let tops: BTreeSet<&str> = all.iter().map(Source::top).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in &all {
        for path in source.imports() {
            if path[0] != source.top() && tops.contains(path[0].as_str()) {
                graph
                    .entry(source.top().to_owned())
                    .or_default()
                    .insert(path[0].clone());
            }
        }
    }
    let circles: Vec<String> = graph.keys().filter_map(|start| circle_through(&graph, start)).collect();
    assert_eq!(circles, Vec::<String>::new());
}

/// A path of imports from `start` back to itself, if there is one.
fn circle_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<String> {
    let mut stack = vec![vec![start.to_owned()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        for next in graph.get(path.last().unwrap()).into_iter().flatten() {
            if next == start {
                return Some(format!("{} -> {start}", path.join(" -> ")));
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

#[test]
fn no_source_file_is_over_400_lines_outside_its_tests() {
    let long: Vec<String> = sources()
        .iter()
        .filter(|source| source.lines() > MAX_LINES)
        .map(|source| format!("{}: {} lines", source.name(), source.lines()))
        .collect();
    assert_eq!(long, Vec::<String>::new());
}

#[test]
fn use_trees_expand_to_every_path_they_name() {
    let paths = expand_use_tree("db::{self, Pool, values::{EntityRow, live_entity}};");
    let joined: Vec<String> = paths.iter().map(|path| path.join("::")).collect();
    assert_eq!(
        joined,
        ["db", "db::Pool", "db::values::EntityRow", "db::values::live_entity"]
    );
    let source = Source {
        module: vec!["http".into(), "entity".into()],
        path: PathBuf::from("src/http/entity.rs"),
        code: "use crate::view::visible_doc;\nlet x = super::files::thumbnail(); // not my_crate::db\n".into(),
    };
    let imports: Vec<String> = source.imports().iter().map(|path| path.join("::")).collect();
    assert_eq!(imports, ["http::files::thumbnail", "view::visible_doc"]);
}

#[test]
fn an_import_counts_for_the_file_that_defines_what_it_names_a_re_export_followed() {
    let source = |module: &str, code: &str| Source {
        module: module.split("::").map(String::from).collect(),
        path: PathBuf::from(format!("src/{}.rs", module.replace("::", "/"))),
        code: code.into(),
    };
    let mut all = vec![
        source(
            "db::projection",
            "pub use self::types::TypeCache;\nuse self::follow::follow;\n",
        ),
        source("db::projection::types", "pub struct TypeCache;\n"),
        source(
            "db::projection::follow",
            "use super::TypeCache;\nuse crate::db::queue::enqueue;\n",
        ),
        source("db::queue", "use crate::db::projection::TypeCache;\n"),
    ];
    let edges = |all: &[Source]| -> Vec<String> {
        file_graph(all)
            .into_iter()
            .flat_map(|(file, imported)| imported.into_iter().map(move |other| format!("{file} -> {other}")))
            .collect()
    };
    assert_eq!(
        edges(&all),
        [
            "db::projection -> db::projection::follow",
            "db::projection::follow -> db::projection::types",
            "db::projection::follow -> db::queue",
            "db::queue -> db::projection::types",
        ]
    );
    all[3] = source("db::queue", "use crate::db::projection::{self, TypeCache};\n");
    let graph = file_graph(&all);
    assert_eq!(
        circle_through(&graph, "db::queue").map(|circle| from_its_first_file(&circle)),
        Some("db::projection -> db::projection::follow -> db::queue -> db::projection".to_owned())
    );
}

#[test]
fn every_source_path_the_readme_and_the_guide_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_dir(root.join("docs/guide/src/architecture")).unwrap();
    let pages = architecture
        .map(|entry| entry.unwrap().path())
        .chain([root.join("README.md")]);
    let readme: String = pages.map(|page| std::fs::read_to_string(page).unwrap()).collect();
    let mut missing = Vec::new();
    for (at, _) in readme.match_indices("src/") {
        if readme[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '/') {
            continue;
        }
        let path: String = readme[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '/' | '.'))
            .collect();
        let path = path.trim_end_matches('.');
        if !root.join(path).exists() {
            missing.push(path.to_owned());
        }
    }
    assert_eq!(missing, Vec::<String>::new());
}

#[test]
fn the_http_module_file_only_declares_modules_in_under_100_lines() {
    let http_mod = sources()
        .into_iter()
        .find(|source| source.module == ["http"])
        .expect("src/http/mod.rs");
    assert!(
        http_mod.lines() < HTTP_MOD_MAX_LINES,
        "{} holds {} lines: state, the caller and the routes have files of their own",
        http_mod.name(),
        http_mod.lines()
    );
}
