//! agent-core's modules form layers that depend one way (README, "one-way layers"): the facade
//! `agent` uses the `engine`, which uses `session`, which uses `hooks`, which uses the leaves.
//! This reads every `crate::<module>` and `super::<module>` path of each top-level module's
//! files and fails on a module that names a module of its own layer or above it, so a merge
//! that brings a cycle back is caught by `cargo test`, not by a later review. Inside every
//! folder of every crate, the files import one another one way too (a file's `super::x` and
//! `crate::<folder>::x` paths to its siblings form no loop).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers from the top; a module may use only modules of lower layers, never one of its
/// own layer (the leaves too are layered: `model` reads tool specs, `tool` the cancel token,
/// `message` the shared `Text`).
const LAYERS: &[&[&str]] = &[
    &["agent"],
    &["engine"],
    &["session"],
    &["hooks"],
    &["model", "store"],
    &["tool"],
    &[
        "message",
        "cancel",
        "run_agent",
        "util",
        "partial_json",
        "weak_table",
    ],
    &["text"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent-core/src")
}

/// The layer of a top-level module.
fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The `.rs` files of a top-level module: `name.rs` and everything under `name/`.
fn files(module: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let file = src().join(format!("{module}.rs"));
    if file.exists() {
        found.push(file);
    }
    let mut dirs = vec![src().join(module)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found
}

/// The top-level modules a source text names through `crate::x`.
fn named(source: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in source.match_indices("crate::") {
        // Doc links (`[x](crate::y)`) and comments name things without depending on them.
        let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
        let line = source[line_start..].trim_start();
        if line.starts_with("//") {
            continue;
        }
        let rest = &source[at + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        names.insert(name);
    }
    names
}

#[test]
fn agent_core_modules_depend_one_way() {
    let mut wrong = Vec::new();
    for (index, layer_modules) in LAYERS.iter().enumerate() {
        for module in *layer_modules {
            let files = files(module);
            assert!(!files.is_empty(), "agent-core has no module `{module}`");
            for file in files {
                let source = std::fs::read_to_string(&file).unwrap();
                for used in named(&source) {
                    let Some(used_layer) = layer(&used) else {
                        continue; // crate-root items, macros
                    };
                    if used != *module && used_layer <= index {
                        let file = file.strip_prefix(src()).unwrap().display().to_string();
                        wrong.push(format!("{file} ({module}) uses crate::{used}"));
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "uses that run up the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_layer() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    for line in lib.lines() {
        if let Some(module) = line.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
            assert!(
                layer(module).is_some(),
                "module `{module}` is in no layer of this test: add it where it belongs"
            );
        }
    }
}

/// The sibling modules a file names: `super::x` (the file sits directly in its parent's folder,
/// outside its test module) and `crate::<parent path>::x`, each `x` among `siblings`.
fn siblings_named(source: &str, parent: &str, siblings: &BTreeSet<String>) -> BTreeSet<String> {
    // A file's test module names the file itself as `super`.
    let source = source
        .split("\n#[cfg(test)]\nmod ")
        .next()
        .unwrap_or(source);
    let code: String = source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut prefixes = vec![format!("crate::{parent}")];
    if !parent.is_empty() {
        prefixes.push("super::".to_owned());
    }
    let mut names = BTreeSet::new();
    for prefix in &prefixes {
        let prefix = prefix.trim_end_matches("::").to_owned() + "::";
        for (at, _) in code.match_indices(&prefix) {
            let rest = &code[at + prefix.len()..];
            // `super::{a::X, b}`: the first segment of each item at the braces' first level.
            let items: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => {
                    let mut depth = 0;
                    let end = group
                        .char_indices()
                        .find(|&(_, c)| {
                            depth += match c {
                                '{' => 1,
                                '}' => -1,
                                _ => 0,
                            };
                            depth < 0
                        })
                        .map_or(group.len(), |(i, _)| i);
                    let mut items = Vec::new();
                    let (mut depth, mut start) = (0, 0);
                    for (i, c) in group[..end].char_indices() {
                        match c {
                            '{' => depth += 1,
                            '}' => depth -= 1,
                            ',' if depth == 0 => {
                                items.push(&group[start..i]);
                                start = i + 1;
                            }
                            _ => {}
                        }
                    }
                    items.push(&group[start..end]);
                    items
                }
                None => vec![rest],
            };
            for item in items {
                let name: String = item
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if siblings.contains(&name) {
                    names.insert(name);
                }
            }
        }
    }
    names
}

/// The first cycle among the files of `dir` (`parent`: its module path, `a::b`), then in each
/// folder under it.
fn file_cycle(dir: &Path, parent: &str) -> Option<String> {
    let mut files = Vec::new();
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            folders.push((path, stem));
        } else if path.extension().is_some_and(|e| e == "rs")
            && !["mod", "lib", "main"].contains(&stem.as_str())
        {
            files.push((path, stem));
        }
    }
    let siblings: BTreeSet<String> = files
        .iter()
        .chain(&folders)
        .map(|(_, stem)| stem.clone())
        .collect();
    let edges: Vec<(String, BTreeSet<String>)> = files
        .iter()
        .map(|(path, stem)| {
            let source = std::fs::read_to_string(path).unwrap();
            let mut named = siblings_named(&source, parent, &siblings);
            named.remove(stem);
            (stem.clone(), named)
        })
        .collect();
    // Depth-first from each file: a file met again on the path closes a cycle.
    fn visit<'a>(
        at: &'a str,
        edges: &'a [(String, BTreeSet<String>)],
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<String> {
        if let Some(start) = path.iter().position(|p| *p == at) {
            return Some(format!("{} -> {at}", path[start..].join(" -> ")));
        }
        if !done.insert(at) {
            return None;
        }
        path.push(at);
        let next = edges.iter().find(|(stem, _)| stem == at);
        for used in next.into_iter().flat_map(|(_, used)| used) {
            if let Some(cycle) = visit(used, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for (stem, _) in &edges {
        if let Some(cycle) = visit(stem, &edges, &mut Vec::new(), &mut done) {
            return Some(format!("{}: {cycle}", dir.display()));
        }
    }
    folders.iter().find_map(|(path, stem)| {
        let inner = match parent {
            "" => stem.clone(),
            _ => format!("{parent}::{stem}"),
        };
        file_cycle(path, &inner)
    })
}

#[test]
fn the_files_of_every_module_import_one_another_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in [
        "agent-core",
        "agent-macros",
        "agent-providers",
        "agent-mcp",
        "agent-postgres",
    ] {
        let cycle = file_cycle(&root.join(krate).join("src"), "");
        let cycle = cycle.map(|cycle| cycle.replace(&format!("{}/", root.display()), ""));
        assert_eq!(cycle, None, "files that import each other in a loop");
    }
}
