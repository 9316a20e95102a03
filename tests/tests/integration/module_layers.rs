//! agent-core's modules form layers that depend one way (README, "one-way layers"): the facade
//! `agent` uses the `engine`, which uses `session`, which uses `hooks`, which uses the leaves.
//! This reads every `crate::<module>` and `super::<module>` path of each top-level module's
//! files and fails on a module that names a module of its own layer or above it, so a merge
//! that brings a cycle back is caught by `cargo test`, not by a later review.

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
