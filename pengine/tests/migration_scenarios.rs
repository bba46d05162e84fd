//! Migration scenarios side by side: our plan against the committed `highlander.summary`, Pacemaker
//! 2.1.5's against the committed `pacemaker.summary`, invariants of every atomic plan, and the
//! generated `docs/atomic-migration.md`.
//!
//! Golden files: a missing one is written on the first run (review it like code); a differing one
//! fails the test. `HIGHLANDER_BLESS=1` rewrites our own goldens after a deliberate change
//! (`pacemaker.summary` files are only ever rewritten by `scenarios/migration/regen.sh --update`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use pengine::unstable::NvSet;
use pengine::unstable::{Decision, Location};
use pengine::unstable::{EventKind, TransitionGraph};

/// "Now" for the library runs: the scenarios have no time-dependent rules or failure timeouts.
const NOW: i64 = 1_764_500_000;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scenarios_dir() -> PathBuf {
    manifest_dir().join("scenarios").join("migration")
}

fn bless() -> bool {
    std::env::var("HIGHLANDER_BLESS").is_ok_and(|v| v == "1")
}

/// The scenario directories, sorted.
fn scenarios() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/migration exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("cib.xml").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn inject_args(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("inject"))
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// Compares `actual` with a golden file; writes it when missing (or when blessed). Returns a
/// failure message instead of panicking, so one run reports every difference.
fn check_golden(path: &Path, actual: &str, blessable: bool) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(expected) if expected == actual => None,
        Ok(_) if blessable && bless() => {
            std::fs::write(path, actual).expect("write golden");
            eprintln!("rewrote {}", path.display());
            None
        }
        Ok(expected) => Some(format!(
            "{} differs from the output:\n--- golden\n{expected}\n--- actual\n{actual}",
            path.display()
        )),
        Err(_) => {
            std::fs::write(path, actual).expect("write golden");
            eprintln!("wrote missing golden {} (review it)", path.display());
            None
        }
    }
}

fn run_pengine(dir: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pengine"))
        .current_dir(dir)
        .env("LC_ALL", "C")
        .args(["simulate", "-x", "cib.xml", "-S"])
        .args(inject_args(dir))
        .output()
        .expect("run pengine");
    assert!(
        out.status.success(),
        "pengine simulate failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

fn crm_simulate_installed() -> bool {
    Command::new("crm_simulate")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run_crm_simulate(dir: &Path, shadow: &Path) -> String {
    let out = Command::new("crm_simulate")
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("CIB_shadow_dir", shadow)
        .args(["-x", "cib.xml", "-S"])
        .args(inject_args(dir))
        .output()
        .expect("run crm_simulate");
    assert!(
        out.status.success(),
        "crm_simulate failed in {}",
        dir.display()
    );
    // regen.sh captures stdout and stderr together, in that order for these inputs.
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

fn load_cib(path: &Path) -> pengine::Cib {
    let text = std::fs::read_to_string(path).expect("read CIB");
    pengine::parse_cib(&text).expect("CIB parses")
}

/// Every graph action that must complete before `then`, transitively.
fn graph_before(g: &TransitionGraph, then: usize) -> Vec<usize> {
    let mut seen = vec![false; g.actions.len()];
    let mut stack = vec![then];
    while let Some(x) = stack.pop() {
        for &(a, b) in &g.edges {
            if b == x && a < seen.len() && !seen[a] {
                seen[a] = true;
                stack.push(a);
            }
        }
    }
    (0..g.actions.len()).filter(|&i| seen[i]).collect()
}

fn graph_acyclic(g: &TransitionGraph) -> bool {
    let n = g.actions.len();
    let mut indegree = vec![0usize; n];
    for &(_, b) in &g.edges {
        indegree[b] += 1;
    }
    let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut done = 0;
    while let Some(x) = ready.pop() {
        done += 1;
        for &(a, b) in &g.edges {
            if a == x {
                indegree[b] -= 1;
                if indegree[b] == 0 {
                    ready.push(b);
                }
            }
        }
    }
    done == n
}

/// The invariants of one scheduler run, for every atomic resource with an open migration.
fn check_atomic_invariants(name: &str, cib: &pengine::Cib) -> Vec<String> {
    let t = pengine::unstable::schedule(cib, NOW);
    let g = &t.graph;
    let mut failures = Vec::new();
    if !graph_acyclic(g) {
        failures.push(format!("{name}: the transition graph has a cycle"));
    }
    for e in &t.atomic.entries {
        let rsc = &t.observed.resources[e.rsc].id;
        let of_rsc: Vec<usize> = (0..g.actions.len())
            .filter(|&i| g.actions[i].rsc == Some(e.rsc))
            .collect();
        let real = |i: usize| g.actions[i].event == EventKind::RscOp;
        let possible: Vec<usize> = match &e.location {
            Location::Exact { node, .. } => vec![*node],
            Location::Unknown { candidates, .. } => candidates.clone(),
            _ => Vec::new(),
        };
        // No start while the location is unknown: a real start waits for a probe or fencing of
        // every possible node.
        for &i in of_rsc
            .iter()
            .filter(|&&i| g.actions[i].task == "start" && real(i))
        {
            let firsts = graph_before(g, i);
            for &p in &possible {
                let settled = firsts.iter().any(|&f| {
                    let a = &g.actions[f];
                    a.node == Some(p)
                        && ((a.rsc == Some(e.rsc) && (a.task == "monitor" || a.task == "stop"))
                            || a.task == "stonith")
                });
                if !settled {
                    failures.push(format!(
                        "{name}: {rsc} starts while it may run on {} unprobed",
                        t.observed.nodes[p].uname
                    ));
                }
            }
        }
        // Never two real stops of copies that may both run.
        let stops: Vec<usize> = of_rsc
            .iter()
            .copied()
            .filter(|&i| g.actions[i].task == "stop" && real(i))
            .filter(|&i| g.actions[i].node.is_some_and(|n| possible.contains(&n)))
            .collect();
        if stops.len() > 1 {
            failures.push(format!(
                "{name}: {rsc} is stopped on {} possible nodes",
                stops.len()
            ));
        }
        // A confirmation pending: only the source's migrate_to record says the VM left it, and
        // the source's clean shutdown or fencing erases that record. Neither may happen before
        // an action of the resource on another node has recorded where the VM is.
        if let Location::Exact {
            migration,
            node,
            confirm: true,
            ..
        } = &e.location
        {
            // A move onward from the target not ordered before the source's fencing races the
            // erasure: the fencing may end the transition first (scenario 16).
            let on_target: Vec<usize> = of_rsc
                .iter()
                .copied()
                .filter(|&i| real(i) && g.actions[i].node == Some(*node))
                .filter(|&i| g.actions[i].interval_ms == 0)
                .collect();
            let onward = on_target
                .iter()
                .any(|&i| matches!(g.actions[i].task.as_str(), "migrate_to" | "stop"));
            let fencings = (0..g.actions.len()).filter(|&i| {
                g.actions[i].task == "stonith" && g.actions[i].node == Some(migration.source)
            });
            for f in fencings.filter(|_| onward) {
                let firsts = graph_before(g, f);
                for &i in on_target.iter().filter(|i| !firsts.contains(i)) {
                    failures.push(format!(
                        "{name}: {rsc} moves on from {} but {} is not ordered before {}",
                        t.observed.nodes[*node].uname, g.actions[i].key, g.actions[f].key
                    ));
                }
            }
            let erasers = (0..g.actions.len()).filter(|&i| {
                let a = &g.actions[i];
                a.node == Some(migration.source)
                    && a.runnable
                    && (a.task == "do_shutdown" || a.task == "stonith")
            });
            for i in erasers {
                let answered = graph_before(g, i).iter().any(|&f| {
                    let a = &g.actions[f];
                    a.rsc == Some(e.rsc) && real(f) && a.node != Some(migration.source)
                });
                if !answered {
                    failures.push(format!(
                        "{name}: {} erases {rsc}'s only record (migrate_to on {}) before the target answers",
                        g.actions[i].key, t.observed.nodes[migration.source].uname
                    ));
                }
            }
        }
        // Unknown: nothing but probes, and what follows them (the continuation that their
        // expected answers make true) only after every one of them.
        if let Some(Decision::Probe { then, .. }) = &e.decision {
            let probes: Vec<usize> = of_rsc
                .iter()
                .copied()
                .filter(|&i| g.actions[i].task == "monitor" && g.actions[i].interval_ms == 0)
                .collect();
            for &i in &of_rsc {
                if g.actions[i].task == "monitor" || !real(i) {
                    continue;
                }
                let firsts = graph_before(g, i);
                if then.is_none() || probes.iter().any(|p| !firsts.contains(p)) {
                    failures.push(format!(
                        "{name}: {rsc}'s location is unknown but the plan has {} before the probes answer",
                        g.actions[i].key
                    ));
                }
            }
        }
    }
    failures
}

#[test]
fn scenarios_match_their_goldens_and_keep_the_invariants() {
    let dirs = scenarios();
    assert!(
        dirs.len() >= 14,
        "expected the 14 scenarios, found {}",
        dirs.len()
    );
    let pacemaker = crm_simulate_installed();
    assert!(
        pacemaker,
        "crm_simulate is not installed: the pacemaker.summary re-check needs it (tools/deps.sh installs it)"
    );
    let shadow = std::env::temp_dir().join(format!("highlander-shadow-{}", std::process::id()));
    std::fs::create_dir_all(&shadow).expect("shadow dir");
    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        assert!(dir.join("README.md").is_file(), "{name}: README.md missing");
        let ours = run_pengine(dir);
        failures.extend(check_golden(&dir.join("highlander.summary"), &ours, true));
        if pacemaker {
            let theirs = run_crm_simulate(dir, &shadow);
            failures.extend(check_golden(&dir.join("pacemaker.summary"), &theirs, false));
        }
        failures.extend(check_atomic_invariants(
            &name,
            &load_cib(&dir.join("cib.xml")),
        ));
    }
    let _ = std::fs::remove_dir_all(&shadow);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The scenario inputs are the atomic model's: their VirtualDomain resources default to it and
/// every scenario but the control cases has an open migration.
#[test]
fn scenarios_exercise_the_atomic_model() {
    let mut open = 0;
    for dir in scenarios() {
        let t = pengine::unstable::schedule(&load_cib(&dir.join("cib.xml")), NOW);
        open += t.atomic.entries.len();
    }
    // 01-11 and 13-16 have one open migration each, 11 has two; 12 is a fresh migration.
    assert_eq!(
        open, 16,
        "atomic resources with an open migration across the scenarios"
    );
}

/// The two-phase model is untouched: forcing it on a scenario gives no atomic entry.
#[test]
fn two_phase_meta_attribute_disables_the_atomic_model() {
    let mut cib =
        load_cib(&scenarios_dir().join("01-constraint-removed-before-migrate-from/cib.xml"));
    cib.rsc_defaults.insert(
        0,
        NvSet {
            id: "force-two-phase".into(),
            score: 1_000_000,
            pairs: vec![("migration-model".into(), "two-phase".into())],
            ..Default::default()
        },
    );
    let t = pengine::unstable::schedule(&cib, NOW);
    assert!(t.atomic.entries.is_empty());
    assert!(!pengine::render_simulation(&cib, NOW).contains("Atomic Migrations:"));
}

/// The corpus's partial and failed migration cases, listed in `corpus.tsv`: (name, kind, situation).
fn corpus_cases() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(scenarios_dir().join("corpus.tsv")).expect("corpus.tsv");
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split('\t').map(String::from);
            (
                f.next().unwrap_or_default(),
                f.next().unwrap_or_default(),
                f.next().unwrap_or_default(),
            )
        })
        .collect()
}

/// The Pacemaker 2.1.5 corpus kept in the repository (`testdata/`); a checkout without it fails.
fn corpus_dir() -> PathBuf {
    let dir = manifest_dir().join("../testdata/pacemaker-2.1.5");
    assert!(
        dir.join("xml").is_dir(),
        "the corpus {} is missing: it is part of the repository",
        dir.display()
    );
    dir
}

/// A corpus CIB with every resource set to the atomic model (through rsc_defaults).
fn corpus_atomic_cib(name: &str) -> pengine::Cib {
    let path = corpus_dir().join("xml").join(format!("{name}.xml"));
    let mut cib = load_cib(&path);
    cib.rsc_defaults.insert(
        0,
        NvSet {
            id: "force-atomic".into(),
            score: 1_000_000,
            pairs: vec![("migration-model".into(), "atomic".into())],
            ..Default::default()
        },
    );
    cib
}

/// The atomic model's part of a corpus case: its `Atomic Migrations:` lines and the actions on
/// those resources (sorted; their order is checked on the graph). The rest of these plans (clones,
/// load pseudo actions) is the core's two-phase work, checked by the conformance harness.
fn corpus_atomic_output(name: &str) -> Option<String> {
    let cib = corpus_atomic_cib(name);
    let t = pengine::unstable::schedule(&cib, NOW);
    let ids: Vec<String> = t
        .atomic
        .entries
        .iter()
        .map(|e| t.observed.resources[e.rsc].id.clone())
        .collect();
    let full = pengine::render_simulation(&cib, NOW);
    let mut out = String::from("Atomic Migrations:\n");
    for l in section(&full, "Atomic Migrations:") {
        out.push_str(&l);
        out.push('\n');
    }
    let mut actions: Vec<String> = section(&full, "Executing Cluster Transition:")
        .into_iter()
        .filter(|l| {
            l.contains("Fencing ")
                || ids.iter().any(|id| {
                    l.contains(&format!("Resource action: {id} "))
                        || l.contains(&format!("Pseudo action:   {id}_"))
                })
        })
        .collect();
    actions.sort();
    out.push_str("Actions (sorted):\n");
    for l in actions {
        out.push_str(&l);
        out.push('\n');
    }
    Some(out)
}

#[test]
fn corpus_cases_in_the_atomic_model() {
    let out_dir = scenarios_dir().join("corpus");
    std::fs::create_dir_all(&out_dir).expect("corpus golden dir");
    let mut failures = Vec::new();
    let cases = corpus_cases();
    assert!(cases.len() >= 19, "corpus.tsv lists {} cases", cases.len());
    for (name, _, _) in &cases {
        let Some(out) = corpus_atomic_output(name) else {
            continue;
        };
        failures.extend(check_golden(
            &out_dir.join(format!("{name}.atomic.txt")),
            &out,
            true,
        ));
        failures.extend(check_atomic_invariants(name, &corpus_atomic_cib(name)));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The lines of a summary section (without the header), e.g. "Transition Summary:".
fn section(text: &str, header: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut inside = false;
    for l in text.lines() {
        if l == header {
            inside = true;
            continue;
        }
        if inside {
            if l.is_empty() || !l.starts_with(' ') {
                break;
            }
            lines.push(l.to_string());
        }
    }
    lines
}

/// A README split into its title, its opening paragraph(s) and its "## ..." sections.
fn readme_parts(text: &str) -> (String, String, BTreeMap<String, String>) {
    let mut title = String::new();
    let mut intro = String::new();
    let mut sections: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    for l in text.lines() {
        if let Some(t) = l.strip_prefix("# ") {
            title = t.trim().to_string();
        } else if let Some(s) = l.strip_prefix("## ") {
            current = Some(s.trim().to_string());
            sections.insert(s.trim().to_string(), String::new());
        } else {
            let target = match &current {
                Some(c) => sections.entry(c.clone()).or_default(),
                None => &mut intro,
            };
            target.push_str(l);
            target.push('\n');
        }
    }
    let trim = |s: &str| s.trim().to_string();
    (
        title,
        trim(&intro),
        sections.into_iter().map(|(k, v)| (k, trim(&v))).collect(),
    )
}

/// Does the output start the VM from cold (a real start of a VirtualDomain resource)?
fn restarts(summary: &str) -> &'static str {
    let vms: Vec<String> = summary
        .lines()
        .filter(|l| l.contains("VirtualDomain"))
        .filter_map(|l| {
            l.trim()
                .strip_prefix("* ")
                .and_then(|r| r.split('\t').next())
        })
        .map(|s| s.trim().to_string())
        .collect();
    let starts = section(summary, "Executing Cluster Transition:")
        .iter()
        .any(|l| {
            vms.iter().any(|vm| {
                l.contains(&format!("Resource action: {vm:<15} start on"))
                    || l.contains(&format!("Resource action: {vm} start on"))
            })
        });
    if !starts {
        "no"
    } else if summary.contains("only if the probe finds it nowhere") {
        "only if found nowhere"
    } else {
        "yes"
    }
}

fn render_doc() -> String {
    let mut doc = String::new();
    let _ = writeln!(
        doc,
        "# Atomic live migration: Pacemaker 2.1.5 and Highlander side by side\n"
    );
    let _ = writeln!(
        doc,
        "<!-- Generated by pengine/tests/migration_scenarios.rs from pengine/scenarios/migration/. \
Do not edit: change the scenarios and run `HIGHLANDER_BLESS=1 cargo test --release -p pengine --test migration_scenarios`. -->\n"
    );
    doc.push_str(DOC_INTRO);
    doc.push('\n');
    let dirs = scenarios();
    let mut table = String::from(
        "| scenario | Pacemaker 2.1.5 | VM restarted | Highlander (atomic) | VM restarted |\n|---|---|---|---|---|\n",
    );
    let mut body = String::new();
    for dir in &dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap_or_default();
        let (title, intro, sections) = readme_parts(&readme);
        let theirs = std::fs::read_to_string(dir.join("pacemaker.summary")).unwrap_or_default();
        // The reviewed golden; freshly computed only while it does not exist yet.
        let ours = std::fs::read_to_string(dir.join("highlander.summary"))
            .unwrap_or_else(|_| run_pengine(dir));
        let summary_cell = |text: &str| {
            let lines: Vec<String> = section(text, "Transition Summary:")
                .iter()
                .map(|l| {
                    l.trim()
                        .trim_start_matches("* ")
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            if lines.is_empty() {
                "(nothing)".to_string()
            } else {
                lines.join("; ").replace('|', "\\|")
            }
        };
        let _ = writeln!(
            table,
            "| [{name}](#{}) | {} | {} | {} | {} |",
            anchor(&title),
            summary_cell(&theirs),
            restarts(&theirs),
            summary_cell(&ours),
            restarts(&ours)
        );
        let _ = writeln!(body, "## {title}\n");
        let _ = writeln!(body, "{intro}\n");
        let _ = writeln!(
            body,
            "Input: `pengine/scenarios/migration/{name}/cib.xml`.\n"
        );
        let _ = writeln!(body, "### What Pacemaker 2.1.5 does\n");
        if let Some(t) = sections.get("Pacemaker 2.1.5") {
            let _ = writeln!(body, "{t}\n");
        }
        let _ = writeln!(body, "```");
        for l in section(&theirs, "Transition Summary:") {
            let _ = writeln!(body, "{l}");
        }
        for l in section(&theirs, "Executing Cluster Transition:") {
            let _ = writeln!(body, "{l}");
        }
        let _ = writeln!(body, "```\n");
        let _ = writeln!(
            body,
            "### What Highlander does, and why the VM keeps running once\n"
        );
        if let Some(t) = sections.get("Atomic model") {
            let _ = writeln!(body, "{t}\n");
        }
        let _ = writeln!(body, "```");
        for header in [
            "Transition Summary:",
            "Atomic Migrations:",
            "Executing Cluster Transition:",
        ] {
            for l in section(&ours, header) {
                let _ = writeln!(body, "{l}");
            }
        }
        let _ = writeln!(body, "```\n");
    }
    doc.push_str("## At a glance\n\n");
    doc.push_str(&table);
    doc.push('\n');
    doc.push_str(&body);
    doc.push_str(&render_corpus_section());
    doc
}

fn render_corpus_section() -> String {
    let mut out = String::from("## Pacemaker's own partial and failed migration cases\n\n");
    out.push_str(
        "The cases of the Pacemaker 2.1.5 scheduler corpus listed in \
`pengine/scenarios/migration/corpus.tsv`, planned with every resource set to `atomic` \
(`migration-model` in `rsc_defaults`). With their own agents they keep the two-phase model and \
Pacemaker's output. Goldens: `pengine/scenarios/migration/corpus/<name>.atomic.txt`.\n\n",
    );
    out.push_str("| case | kind | situation | atomic model: where it is; what the plan does |\n|---|---|---|---|\n");
    for (name, kind, situation) in corpus_cases() {
        let golden = scenarios_dir()
            .join("corpus")
            .join(format!("{name}.atomic.txt"));
        let ours = std::fs::read_to_string(golden)
            .ok()
            .or_else(|| corpus_atomic_output(&name))
            .unwrap_or_default();
        // Only the atomic model's own account: the rest of these plans (clones, groups) is the
        // core's two-phase work and is checked by the conformance harness.
        let cell: Vec<String> = section(&ours, "Atomic Migrations:")
            .iter()
            .map(|l| l.trim().trim_start_matches("* ").to_string())
            .collect();
        let cell = if cell.is_empty() {
            "no open migration: the ordinary reading of the history applies".to_string()
        } else {
            cell.join("; ").replace('|', "\\|")
        };
        let _ = writeln!(out, "| `{name}` | {kind} | {situation} | {cell} |");
    }
    out
}

fn anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

const DOC_INTRO: &str = "\
Pacemaker models a live migration in two phases: `migrate_to` on the source, `migrate_from` on the \
target, then a stop of the source. After an interruption it rebuilds the state from the history \
and, whenever the migration cannot simply continue, assumes the VM may run on both nodes: it stops \
both copies and starts one, a reboot (pacemaker.md 4.4). libvirt's migration is atomic: when \
`migrate_to` returns, the VM runs on exactly one node. The `atomic` migration model plans with that \
fact.

**Choosing the model.** Each primitive has a model: `two-phase` (Pacemaker's, the default for every \
agent; the conformance corpus keeps Pacemaker's output) or `atomic`. The meta-attribute \
`migration-model` (`two-phase` or `atomic`, on the resource or in `rsc_defaults`) selects it; \
without it, `ocf:highlander:VirtualDomain` defaults to `atomic` (its agent guarantees an atomic, \
truthful `migrate_to`, and its meta-data advertises it) and every other agent to `two-phase`. An \
invalid value is reported in the summary and the resource keeps `two-phase`.

**Where the VM is** (for an `atomic` resource, from its last migration):
- `migrate_to` answered success: it runs on the target; the confirmation (`migrate_from`) and a \
bookkeeping stop on the source are pending;
- `migrate_to` answered failure (rc 1, op-status 0): it runs on the source. Our agent answers 1 \
only when no migration happened and the VM is where it was; when it does not run on the source \
alone (nowhere, on both, or maybe moved to a target it could not read) it answers 7, and an agent \
killed by a signal (op-status 4) gave no answer at all: both read as unknown;
- `migrate_to` pending, timed out or unanswered, answers that contradict each other (a failed \
`migrate_from` after a successful `migrate_to`), or a node lost in between: the location is unknown \
between source and target;
- once both nodes have given a sure answer since (`migrate_from` or a probe on the target, a stop \
or a probe on the source), the migration is closed: a later failure there (a crashed guest's \
monitor, a failed stop) is ordinary business, recovered as Pacemaker recovers it. Likewise a \
failure on the source after a failed `migrate_to`.

The controller cancels a resource's recurring monitors before it runs `migrate_to` or \
`migrate_from` on that node; when the VM stays where a failed `migrate_to` left it, the plan starts \
those monitors again.

**What the plan does:**
- exact location, preference unchanged: finish the migration (`migrate_from` on the target, stop on \
the source, the pseudo start), or keep it;
- exact location, preference changed: migrate live from where it runs (back to the source, or \
onward), never stop and start; unless that node's `migrate_to` has failed too often (see below);
- unknown location: probe every live candidate and do nothing else; lost candidates are fenced. \
When fencing leaves a single live candidate, a start may follow, ordered after its probe (a probe \
that finds the VM aborts the transition, so the start only runs if the VM is found nowhere);
- a reboot only when live migration is impossible: the only copy was on a lost node, or every \
candidate was lost. The summary's `Atomic Migrations:` section says where the VM is, what the plan \
does and why.

**When live migration keeps failing.** A failed `migrate_to` leaves the VM running on the source \
(the agent's guarantee), so the model may try again, but not forever: once the resource's fail \
count for `migrate_to` on the node it runs on (`fail-count-<rsc>#migrate_to_0`, the node attribute \
Pacemaker keeps) reaches 3, or the resource's `migration-threshold` when that is lower, the plan \
stops migrating from that node. If the VM must still leave it, it moves by stop and start, and \
the summary says why (`move node1 -> node2 by stop and start (live migration from node1 failed 3 \
times)`). If it may stay, it stays. The count is Pacemaker's: `crm_resource --cleanup` or an \
expired `failure-timeout` resets it, and live migration is tried again.

**Nothing erases the only record.** When a node leaves cleanly or is fenced, Pacemaker erases its \
history. After a successful (or unanswered) `migrate_to`, the source's record may be the only trace \
of a copy on the target; the plan therefore orders the source's `do_shutdown` and its fencing \
after the resource's actions on the other nodes (the `migrate_from`, probe or stop that records \
where the VM is), and a node's `do_shutdown` after the resource's actions on that node. When the \
source must be fenced and placement wants the VM off the target, the onward move waits one \
transition: the plan confirms the migration on the target (`migrate_from`, which the fencing waits \
for) and moves the VM on once the target has recorded it. An onward `migrate_to` cannot always be \
ordered before the fencing (other orderings put the fencing first), and a fencing that runs first \
and ends the transition would leave no record of the copy anywhere (scenario 16).

In the transition graph an atomic migration is still `migrate_to`, `migrate_from`, `stop` and the \
pseudo `start` (without `migrate_to` when the migration is only being confirmed), so Pacemaker's \
controller could execute it.
";

#[test]
fn generated_doc_is_up_to_date() {
    let doc = render_doc();
    let path = manifest_dir()
        .join("..")
        .join("docs")
        .join("atomic-migration.md");
    std::fs::create_dir_all(path.parent().expect("docs dir")).expect("create docs/");
    if let Some(f) = check_golden(&path, &doc, true) {
        panic!("{f}");
    }
}

/// Scenario 08 (migrate_to failed, the VM still on node1) edited by `edit`, planned.
fn plan_edited_08(edit: impl Fn(String) -> String) -> String {
    let path = scenarios_dir().join("08-migrate-to-failed").join("cib.xml");
    let text = edit(std::fs::read_to_string(path).expect("read CIB"));
    let cib = pengine::parse_cib(&text).expect("edited CIB parses");
    pengine::render_simulation(&cib, NOW)
}

/// Adds a 10 s recurring monitor to vm1's configuration and its entry (call 11, between the start
/// and the failed migrate_to) to node1's history.
fn with_recurring_monitor(text: String) -> String {
    let start = "<lrm_rsc_op id=\"vm1_last_0\" operation_key=\"vm1_start_0\"";
    let line_start = text.find(start).expect("vm1 start entry");
    let line_end = line_start + text[line_start..].find('\n').expect("end of line");
    let monitor = text[line_start..line_end]
        .replace("vm1_last_0", "vm1_monitor_10000")
        .replace("vm1_start_0", "vm1_monitor_10000")
        .replace("operation=\"start\"", "operation=\"monitor\"")
        .replace("call-id=\"10\"", "call-id=\"11\"")
        .replace("interval=\"0\"", "interval=\"10000\"");
    assert!(monitor.contains("call-id=\"11\"") && monitor.contains("interval=\"10000\""));
    let mut out = text.clone();
    out.insert_str(line_end, &format!("\n{monitor}"));
    out.replacen(
        "      </primitive>\n    </resources>",
        "        <operations>\n          <op id=\"vm1-monitor-10s\" name=\"monitor\" interval=\"10s\"/>\n        </operations>\n      </primitive>\n    </resources>",
        1,
    )
}

/// Seeds 9034, 9067, 9072, 9077: a failed migrate_to leaves the VM on the source, but the
/// controller cancelled its recurring monitor before running migrate_to. When the VM stays, the
/// plan starts the monitor again (before, nothing watched it: a guest crash went unnoticed).
#[test]
fn a_vm_kept_after_a_failed_migrate_to_is_monitored_again() {
    let out = plan_edited_08(|t| {
        with_recurring_monitor(t).replace(
            "<rsc_location id=\"cli-ban-vm1-on-node1\" rsc=\"vm1\" node=\"node1\" score=\"-INFINITY\" role=\"Started\"/>",
            "<rsc_location id=\"prefer-vm1-on-node1\" rsc=\"vm1\" node=\"node1\" score=\"100\"/>",
        )
    });
    assert!(
        out.contains("vm1: runs on node1; keep it on node1"),
        "the VM stays:\n{out}"
    );
    assert!(
        out.contains("Resource action: vm1             monitor=10000 on node1"),
        "the cancelled monitor is started again:\n{out}"
    );
}

/// Seed 613161548: migrate_to kept failing and the plan retried it every transition. With the
/// fail count for migrate_to at 3 on node1, the plan moves the VM by stop and start and says why;
/// at 2 it still migrates live.
#[test]
fn migrate_to_failing_three_times_moves_by_stop_and_start() {
    let with_failures = |n: u32| {
        move |t: String| {
            t.replacen(
                "<node_state id=\"1\" uname=\"node1\" in_ccm=\"true\" crmd=\"online\" join=\"member\" expected=\"member\" crm-debug-origin=\"do_update_resource\">",
                &format!(
                    "<node_state id=\"1\" uname=\"node1\" in_ccm=\"true\" crmd=\"online\" join=\"member\" expected=\"member\" crm-debug-origin=\"do_update_resource\">\n      <transient_attributes id=\"1\">\n        <instance_attributes id=\"status-1\">\n          <nvpair id=\"status-1-fail-count-vm1.migrate_to_0\" name=\"fail-count-vm1#migrate_to_0\" value=\"{n}\"/>\n          <nvpair id=\"status-1-last-failure-vm1.migrate_to_0\" name=\"last-failure-vm1#migrate_to_0\" value=\"1764490000\"/>\n        </instance_attributes>\n      </transient_attributes>"
                ),
                1,
            )
        }
    };
    let out = plan_edited_08(with_failures(2));
    assert!(
        out.contains("migrate live node1 -> node2"),
        "below the limit: live\n{out}"
    );
    let out = plan_edited_08(with_failures(3));
    assert!(
        out.contains(
            "move node1 -> node2 by stop and start (live migration from node1 failed 3 times)"
        ),
        "at the limit: stop and start, with the reason\n{out}"
    );
    assert!(
        out.contains("Resource action: vm1             stop on node1")
            && out.contains("Resource action: vm1             start on node2")
            && !out.contains("migrate_to on node1"),
        "stop and start, no migrate_to\n{out}"
    );
}

/// Scenario 04 with node1 (the source of the pending migrate_to) online, and a Dummy `dep` active
/// there that needs ticket T with loss-policy=fence; `granted` is T's state.
fn scenario_04_with_ticket(granted: bool) -> pengine::unstable::Transition {
    let path = scenarios_dir()
        .join("04-source-lost-during-migrate-to")
        .join("cib.xml");
    let mut text = std::fs::read_to_string(path).expect("read CIB");
    let edits: [(&str, String); 5] = [
        (
            r#"in_ccm="false" crmd="offline" join="down""#,
            r#"in_ccm="true" crmd="online" join="member""#.to_string(),
        ),
        (
            "    </resources>",
            r#"      <primitive id="dep" class="ocf" provider="pacemaker" type="Dummy"/>
    </resources>"#
                .to_string(),
        ),
        (
            "    </constraints>",
            r#"      <rsc_ticket id="dep-needs-T" rsc="dep" ticket="T" loss-policy="fence"/>
    </constraints>"#
                .to_string(),
        ),
        (
            "  <status>",
            format!(r#"  <status><tickets><ticket_state id="T" granted="{granted}"/></tickets>"#),
        ),
        (
            "        <lrm_resources>",
            r#"        <lrm_resources><lrm_resource id="dep" class="ocf" provider="pacemaker" type="Dummy"><lrm_rsc_op id="dep_last_0" operation_key="dep_start_0" operation="start" transition-key="8:1:0:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" call-id="11" rc-code="0" op-status="0" interval="0" last-rc-change="1764489610"/></lrm_resource>"#
                .to_string(),
        ),
    ];
    for (from, to) in edits {
        // The first <lrm_resources> is node1's: dep runs there.
        assert!(text.contains(from), "scenario 04 has {from}");
        text = text.replacen(from, &to, 1);
    }
    let cib = pengine::parse_cib(&text).expect("edited CIB parses");
    pengine::unstable::schedule(&cib, NOW)
}

/// A ticket's `fence` loss policy marks the node unclean after the status is unpacked. The atomic
/// model reads presence after that (`atomic::observe` runs after `tickets::apply`), so the pending
/// migrate_to whose source the ticket fences is read as "source lost": the fencing settles node1,
/// and nothing starts the VM before it and the target's probe. With the ticket granted, the same
/// source is a live candidate and is probed instead.
#[test]
fn a_ticket_fence_of_the_source_is_seen_by_the_atomic_model() {
    let revoked = scenario_04_with_ticket(false);
    let t = &revoked;
    let node1 = t.observed.node_index("node1").expect("node1");
    let node2 = t.observed.node_index("node2").expect("node2");
    let vm = t.observed.rsc_index("vm1").expect("vm1");
    assert!(
        t.reconciliation.fence.iter().any(|(n, _)| *n == node1),
        "the ticket fences node1: {:?}",
        t.reconciliation.fence
    );
    let e = t
        .atomic
        .entries
        .iter()
        .find(|e| e.rsc == vm)
        .expect("vm1 has an open migration");
    let fenced = match &e.decision {
        Some(Decision::ProbeThenStart { fence, probe, .. }) => {
            assert_eq!(*probe, node2);
            fence.clone()
        }
        Some(Decision::Probe { fence, probe, .. }) => {
            assert_eq!(probe, &vec![node2]);
            fence.clone()
        }
        other => panic!("vm1: {other:?}"),
    };
    assert_eq!(fenced, vec![node1], "{:?}", e.decision);
    let g = &t.graph;
    let stonith = (0..g.actions.len())
        .find(|&i| g.actions[i].task == "stonith" && g.actions[i].node == Some(node1))
        .expect("node1's fencing is in the graph");
    let probe = (0..g.actions.len())
        .find(|&i| {
            let a = &g.actions[i];
            a.rsc == Some(vm) && a.task == "monitor" && a.interval_ms == 0 && a.node == Some(node2)
        })
        .expect("vm1 is probed on node2");
    for i in 0..g.actions.len() {
        let a = &g.actions[i];
        if a.rsc == Some(vm) && a.event == EventKind::RscOp && a.task == "start" {
            let firsts = graph_before(g, i);
            assert!(
                firsts.contains(&stonith) && firsts.contains(&probe),
                "{} before the fencing of node1 and the probe of node2",
                a.key
            );
        }
    }

    let granted = scenario_04_with_ticket(true);
    let e = granted
        .atomic
        .entries
        .iter()
        .find(|e| e.rsc == vm)
        .expect("vm1 has an open migration");
    match &e.decision {
        Some(Decision::Probe { fence, probe, .. }) => {
            assert!(fence.is_empty(), "{:?}", e.decision);
            assert_eq!(probe, &vec![node1, node2]);
        }
        other => panic!("vm1 with the ticket granted: {other:?}"),
    }
}

/// Scenario 08 after a killed migrate_to (op-status 4, the executor's error: no word on where the
/// VM is) whose ends have both answered since: node1's probe found the VM running (it replaced the
/// start as vm1_last_0), node2's probe found nothing. `prefer_node1` swaps the ban on node1 for a
/// preference.
fn plan_08_killed_then_answered(prefer_node1: bool) -> String {
    plan_edited_08(|t| {
        let mut t = t
            .replace(
                r#"transition-magic="0:1;9:2:0:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" exit-reason="migration to node2 failed: domain vm1 still runs on node1" call-id="12" rc-code="1" op-status="0""#,
                r#"transition-magic="4:1;9:2:0:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" exit-reason="" call-id="12" rc-code="1" op-status="4""#,
            )
            .replacen(
                r#"<lrm_rsc_op id="vm1_last_0" operation_key="vm1_start_0" operation="start" crm-debug-origin="do_update_resource" crm_feature_set="3.16.1" transition-key="7:1:0:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" transition-magic="0:0;7:1:0:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" exit-reason="" call-id="10" rc-code="0" op-status="0" interval="0" last-rc-change="1764489610""#,
                r#"<lrm_rsc_op id="vm1_last_0" operation_key="vm1_monitor_0" operation="monitor" crm-debug-origin="do_update_resource" crm_feature_set="3.16.1" transition-key="3:3:7:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" transition-magic="0:0;3:3:7:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" exit-reason="" call-id="13" rc-code="0" op-status="0" interval="0" last-rc-change="1764490130""#,
                1,
            );
        // node2's probe (the second vm1_last_0 entry, call 6) is repeated after the migrate_to.
        let node2_probe = r#"transition-key="3:0:7:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" transition-magic="0:7;3:0:7:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" exit-reason="" call-id="6" rc-code="7" op-status="0" interval="0" last-rc-change="1764489600""#;
        assert!(t.contains(node2_probe), "node2's probe entry");
        t = t.replace(
            node2_probe,
            r#"transition-key="4:3:7:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" transition-magic="0:7;4:3:7:6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7" exit-reason="" call-id="7" rc-code="7" op-status="0" interval="0" last-rc-change="1764490130""#,
        );
        assert!(
            t.contains(r#"op-status="4""#) && t.contains(r#"call-id="13""#),
            "the edits apply"
        );
        if prefer_node1 {
            t = t.replace(
                r#"<rsc_location id="cli-ban-vm1-on-node1" rsc="vm1" node="node1" score="-INFINITY" role="Started"/>"#,
                r#"<rsc_location id="prefer-vm1-on-node1" rsc="vm1" node="node1" score="100"/>"#,
            );
        }
        t
    })
}

/// Seed 40045 (atomic profile, T7): the agent was killed during migrate_to node1 -> node5, then
/// node1's probe found the VM running and node5's found nothing. The location is exact (node1),
/// so the plan keeps the VM there; Pacemaker's reading of the killed migrate_to (a failure to
/// recover, the source a dangling migration) restarted it on node1. Where placement wants it
/// elsewhere, it migrates live (one failed migrate_to is below the limit), not by stop and start.
#[test]
fn a_killed_migrate_to_whose_ends_both_answered_does_not_reboot_the_vm() {
    let out = plan_08_killed_then_answered(true);
    assert!(
        !out.contains("stop on node1") && !out.contains("start on node"),
        "the VM keeps running on node1:\n{out}"
    );
    assert!(
        !out.contains("Restart") && !out.contains("Recover"),
        "no restart:\n{out}"
    );
    let out = plan_08_killed_then_answered(false);
    assert!(
        out.contains("migrate_to on node1") && out.contains("migrate_from on node2"),
        "moved live:\n{out}"
    );
    assert!(
        !out.contains("start on node2") && !out.contains("Recover"),
        "not by stop and start:\n{out}"
    );
}
