//! Tidy checks over the sources (as rust-analyzer's `tidy` test): every Rust file of the workspace
//! opens with a `//!` line, and no pengine module imports a later pipeline stage.
//!
//! `STAGES` is the one definition of the pipeline's order. A module may use modules of its own
//! stage and of earlier ones; a use of a later stage is a back-import. The back-imports today's
//! code still has are listed in `KNOWN_BACK_IMPORTS`: a new one fails the test, and so does a
//! listed one that is gone (delete it from the list), so the list can only shrink.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The pipeline stages in order, each with its modules (a folder's files, `cib/sets`, belong to
/// the stage of their parent module). Feature modules sit with the earliest stage that uses
/// them: their hooks for later stages are what `KNOWN_BACK_IMPORTS` counts.
const STAGES: &[(&str, &[&str])] = &[
    // The CIB read into typed configuration and status; rules and dates, evaluated by every
    // later stage.
    ("cib", &["cib", "rules"]),
    // The cluster as it is: nodes, resources, what runs where, failures; the features that only
    // add facts or bans before placement.
    (
        "observed",
        &[
            "observed",
            "digest",
            "op_defaults",
            "one_or_more",
            "clone_groups",
            "clones",
            "bundles",
            "container",
            "guest",
            "remote",
            "promotable",
            "tickets",
            "shutdown_lock",
            "recheck",
            "recovery",
        ],
    ),
    // Where each resource should run: scores, colocations, utilization.
    ("placement", &["placement"]),
    // What changes: start, stop, move, migrate, recover; fencing, unfencing.
    ("reconcile", &["reconcile", "unfencing", "probe_restarts"]),
    // The actions and their orderings.
    ("actions", &["actions"]),
    // The transition graph and its renderings.
    ("graph", &["graph", "notifications"]),
    // The atomic migration model: hooks after observe, reconcile, actions and graph.
    ("atomic", &["atomic"]),
    // Running a transition, the status and the summaries (crm_simulate's report).
    (
        "simulate",
        &["simulate", "summary", "status", "events", "lifecycle"],
    ),
    // The pipeline itself and what drives it.
    (
        "driver",
        &[
            "pipeline",
            "explain",
            "scenario",
            "lib",
            "main",
            "cli_node",
            "cli_generate",
            "cli_source",
            "cli_refused",
        ],
    ),
];

/// Back-imports today's code still has, as (module, the later module it uses). Only shrinks.
const KNOWN_BACK_IMPORTS: &[(&str, &str)] = &[
    ("bundles", "actions"),
    ("bundles", "placement"),
    ("bundles", "status"),
    ("clone_groups", "status"),
    ("clones", "status"),
    ("graph", "simulate"),
    ("graph", "summary"),
    ("guest", "actions"),
    ("guest", "graph"),
    ("guest", "placement"),
    ("guest", "reconcile"),
    ("observed", "atomic"),
    ("observed", "reconcile"),
    ("probe_restarts", "actions"),
    ("promotable", "actions"),
    ("promotable", "graph"),
    ("promotable", "placement"),
    ("promotable", "reconcile"),
    ("recovery", "placement"),
    ("remote", "actions"),
    ("remote", "graph"),
    ("remote", "placement"),
    ("remote", "reconcile"),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !matches!(name, "target" | ".git" | "corpus" | "artifacts") {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The module a file of pengine/src is (`cib/sets.rs` -> `cib/sets`).
fn module_of(file: &Path) -> String {
    let rel = file.strip_prefix(src()).expect("under src");
    rel.with_extension("").to_string_lossy().replace('\\', "/")
}

/// The stage index of a module (`cib/sets` is in `cib`'s stage).
fn stage_of(module: &str) -> usize {
    let top = module.split('/').next().unwrap_or(module);
    STAGES
        .iter()
        .position(|(_, mods)| mods.contains(&top))
        .unwrap_or_else(|| panic!("module '{module}' is in no stage of STAGES: add it"))
}

/// What a name at the crate root stands for (the re-exports of lib.rs).
fn root_name(name: &str) -> &str {
    match name {
        "Transition" | "schedule" | "schedule_traced" => "pipeline",
        "Cib" | "CibError" | "parse_cib" => "cib",
        n if n.chars().next().is_some_and(char::is_lowercase) => n,
        _ => "lib",
    }
}

/// The source without its unit tests (`#[cfg(test)] mod ...` and everything after it) and
/// without comments.
fn code(text: &str) -> String {
    let body = match text.find("#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    };
    body.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate modules a file's code names: `crate::x`, `crate::{x, y::z}`, `super::x` (in a
/// folder module: the parent).
fn imports(module: &str, code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let preceded_by_ident = rest[..i]
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if !preceded_by_ident {
            if let Some(group) = after.strip_prefix('{') {
                let end = matching_brace(group);
                for item in split_top_level(&group[..end]) {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() && name != "self" {
                        out.insert(root_name(&name).to_string());
                    }
                }
            } else {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(root_name(&name).to_string());
                }
            }
        }
        rest = after;
    }
    if code.contains("super::") && module.contains('/') {
        out.insert(module.split('/').next().unwrap_or(module).to_string());
    }
    let own = module.split('/').next().unwrap_or(module).to_string();
    out.remove(&own);
    out
}

fn matching_brace(text: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    text.len()
}

fn split_top_level(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// Every (module, later module it uses) of pengine/src today.
fn back_imports() -> BTreeSet<(String, String)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    assert!(files.len() > 30, "pengine/src has {} files", files.len());
    let mut out = BTreeSet::new();
    for file in files {
        let module = module_of(&file);
        let text = std::fs::read_to_string(&file).expect("readable source");
        let own = stage_of(&module);
        for used in imports(&module, &code(&text)) {
            if used == "lib" {
                continue;
            }
            if stage_of(&used) > own {
                out.insert((
                    module.split('/').next().unwrap_or(&module).to_string(),
                    used,
                ));
            }
        }
    }
    out
}

#[test]
fn no_module_imports_a_later_stage_beyond_the_known_list() {
    let found = back_imports();
    let known: BTreeSet<(String, String)> = KNOWN_BACK_IMPORTS
        .iter()
        .map(|&(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    let gone: Vec<_> = known.difference(&found).collect();
    let listing: String = found
        .iter()
        .map(|(a, b)| format!("    (\"{a}\", \"{b}\"),\n"))
        .collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "back-imports changed: new {new:?} (import an earlier stage instead, or move the code), \
         gone {gone:?} (delete them from KNOWN_BACK_IMPORTS). Today's {} back-imports:\n{listing}",
        found.len()
    );
}

#[test]
fn the_import_scanner_sees_groups_paths_and_parents() {
    let text = "use crate::{actions::Plan, cib::{Cib, NvSet}, Transition};\n\
                fn f() { crate::graph::expand(); super::x(); my_crate::nope(); }";
    let found = imports("placement/clones", text);
    let want: BTreeSet<String> = ["actions", "cib", "pipeline", "graph", "placement"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // (`placement` is the parent of `placement/clones`: its own module, removed.)
    assert_eq!(
        found,
        want.into_iter().filter(|m| m != "placement").collect()
    );
    assert!(stage_of("graph") > stage_of("placement/clones"));
    assert!(!code("fn a() {}\n#[cfg(test)]\nmod tests { use crate::graph; }").contains("graph"));
}

#[test]
fn every_rust_file_of_the_workspace_opens_with_a_module_doc_line() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf();
    let mut files = Vec::new();
    for dir in [
        "agent",
        "ocf-metadata",
        "pengine",
        "test-cts",
        "examples",
        "fuzz",
    ] {
        rust_files(&workspace.join(dir), &mut files);
    }
    assert!(files.len() > 100, "found only {} Rust files", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("readable source");
            !text.starts_with("//!")
        })
        .map(|f| {
            f.strip_prefix(&workspace)
                .unwrap_or(f)
                .display()
                .to_string()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "files not opening with `//!`: {missing:#?}"
    );
}
