//! `docs/architecture.md` matches the code: its module map lists every top-level module of the
//! engine, in an order where each module uses only modules listed above it (arrows point one
//! way, so there is no circle). Checked over every `crate::` path outside comments and tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The modules of the map, in the table's order.
fn documented_order(root: &Path) -> Vec<String> {
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let start = doc.find("## Module map (engine)").expect("the module map");
    doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| module |"))
        .skip(2)
        .take_while(|l| l.starts_with("| `"))
        .map(|l| l[3..].split('`').next().unwrap().to_string())
        .collect()
}

/// Each top-level module of `src/` and the other top-level modules its code names.
fn uses(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if !matches!(name.as_str(), "lib" | "main" | "test_support") {
            modules.insert(name, BTreeSet::new());
        }
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            let top = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            let top = top.trim_end_matches(".rs").to_string();
            let Some(used) = modules.get_mut(&top) else {
                continue;
            };
            let text = std::fs::read_to_string(&path).unwrap();
            // Tests may reach anywhere; they sit at the end of a file.
            let code = text.split("#[cfg(test)]").next().unwrap();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (i, _) in line.match_indices("crate::") {
                    let rest = &line[i + "crate::".len()..];
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect();
                    if name != top && names.contains(&name) {
                        used.insert(name);
                    }
                }
            }
        }
    }
    modules
}

#[test]
fn the_module_map_lists_every_module_and_every_arrow_points_up_the_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let order = documented_order(root);
    let uses = uses(&root.join("src"));
    let documented: BTreeSet<&str> = order.iter().map(String::as_str).collect();
    let present: BTreeSet<&str> = uses.keys().map(String::as_str).collect();
    assert_eq!(
        documented, present,
        "docs/architecture.md's module map and src/ list different modules"
    );
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let mut wrong = Vec::new();
    for (module, used) in &uses {
        for other in used {
            if rank[other.as_str()] > rank[module.as_str()] {
                wrong.push(format!(
                    "{module} uses {other}, which the map lists below it"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The `[dependencies]`-like tables of a manifest that name `dependency` (by key).
fn manifests_naming(root: &Path, dependency: &str) -> Vec<String> {
    let workspace: toml::Table = std::fs::read_to_string(root.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let members = workspace["workspace"]["members"].as_array().unwrap();
    let mut naming = Vec::new();
    for member in members {
        let dir = member.as_str().unwrap();
        let manifest: toml::Table = std::fs::read_to_string(root.join(dir).join("Cargo.toml"))
            .unwrap()
            .parse()
            .unwrap();
        let mut tables: Vec<&toml::Table> =
            ["dependencies", "dev-dependencies", "build-dependencies"]
                .iter()
                .filter_map(|t| manifest.get(*t).and_then(|v| v.as_table()))
                .collect();
        if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
            for target in targets.values().filter_map(|t| t.as_table()) {
                tables.extend(
                    ["dependencies", "dev-dependencies"]
                        .iter()
                        .filter_map(|t| target.get(*t).and_then(|v| v.as_table())),
                );
            }
        }
        if tables.iter().any(|t| t.contains_key(dependency)) {
            naming.push(dir.to_string());
        }
    }
    naming
}

#[test]
fn llama_cpp_is_linked_by_its_own_crate_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(manifests_naming(root, "llama-cpp-2"), ["crates/llama"]);
    // The seam itself knows no backend.
    assert!(!manifests_naming(root, "rudder-llama").contains(&"crates/llm".to_string()));
}
