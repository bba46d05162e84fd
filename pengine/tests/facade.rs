//! The public API as an outside tool (the scheduler daemon, a C or Python binding) uses it: a CIB
//! parsed from text, planned at a given time, optionally with every resource in the two-phase
//! migration model; the graph XML exactly as `pengine simulate -G` writes it; the Transition
//! Summary lines as `pengine simulate -S` prints them; the what-if simulation and the explanation
//! as the CLI prints them. The CLI is the oracle for the byte-for-byte checks, and the two-phase
//! option is checked against the same CIB with the meta-attribute written into it.

use std::path::{Path, PathBuf};
use std::process::Command;

use pengine::{Cib, MigrationModel, PlanOptions};

/// A fixed "now" for CIBs without an execution date.
const NOW: i64 = 1_767_225_600;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every scenario CIB and oracle CIB of the repository (the test fails when there are none).
fn cibs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["scenarios/migration", "scenarios/recovery"] {
        for entry in std::fs::read_dir(root().join(dir)).expect("scenario folder") {
            let cib = entry.expect("entry").path().join("cib.xml");
            if cib.exists() {
                out.push(cib);
            }
        }
    }
    for entry in std::fs::read_dir(root().join("tests/oracle-cibs")).expect("oracle CIBs") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "xml") {
            out.push(path);
        }
    }
    out.sort();
    assert!(
        out.len() > 50,
        "expected the scenario and oracle CIBs, found {}",
        out.len()
    );
    out
}

fn read(path: &Path) -> (String, Cib) {
    let text = std::fs::read_to_string(path).expect("readable CIB");
    let cib = Cib::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (text, cib)
}

fn now_of(cib: &Cib) -> i64 {
    cib.execution_date.unwrap_or(NOW)
}

/// `pengine simulate -x PATH -t DATE ARGS`: stdout.
fn cli(path: &Path, now: i64, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pengine"))
        .args(["simulate", "-x"])
        .arg(path)
        .args(["-t", &pengine::format_date(now)])
        .args(args)
        .output()
        .expect("pengine runs");
    assert!(out.status.success(), "{}: {:?}", path.display(), out);
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn graph_xml_is_what_simulate_g_writes() {
    let dir = tempfile::tempdir().expect("scratch dir");
    let file = dir.path().join("graph.xml");
    for path in cibs() {
        let (_, cib) = read(&path);
        let now = now_of(&cib);
        cli(&path, now, &["-G", file.to_str().expect("UTF-8 path")]);
        let written = std::fs::read_to_string(&file).expect("graph written");
        assert_eq!(cib.plan(now).graph_xml(), written, "{}", path.display());
    }
}

#[test]
fn summary_lines_are_what_simulate_s_prints() {
    for path in cibs() {
        let (_, cib) = read(&path);
        let now = now_of(&cib);
        let printed = cli(&path, now, &["-S"]);
        let section: Vec<&str> = printed
            .split("Transition Summary:\n")
            .nth(1)
            .expect("a Transition Summary section")
            .lines()
            .take_while(|l| l.starts_with("  "))
            .collect();
        let plan = cib.plan(now);
        assert_eq!(plan.summary_lines(), section, "{}", path.display());
        assert_eq!(plan.summary().lines().collect::<Vec<_>>(), section);
    }
}

#[test]
fn scores_dot_and_simulation_match_the_cli() {
    for path in cibs().into_iter().step_by(5) {
        let (_, cib) = read(&path);
        let now = now_of(&cib);
        let plan = cib.plan(now);
        assert_eq!(
            plan.scores(),
            cli(&path, now, &["-s", "-Q"]),
            "{}",
            path.display()
        );
        assert_eq!(
            pengine::render_simulation(&cib, now),
            cli(&path, now, &["-S"])
        );
    }
}

/// The CIB text with `migration-model` set on every primitive, as the first meta-attribute set.
fn with_model_written(text: &str, model: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    let mut n = 0;
    while let Some(i) = rest.find("<primitive ") {
        let end = i + rest[i..].find('>').expect("a closed tag");
        n += 1;
        let set = format!(
            "<meta_attributes id=\"forced-mm-{n}\"><nvpair id=\"forced-mm-{n}-v\" \
             name=\"migration-model\" value=\"{model}\"/></meta_attributes>"
        );
        if rest[..end].ends_with('/') {
            // <primitive .../> becomes <primitive ...>SET</primitive>
            out.push_str(&rest[..end - 1]);
            out.push('>');
            out.push_str(&set);
            out.push_str("</primitive>");
        } else {
            out.push_str(&rest[..=end]);
            out.push_str(&set);
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn forcing_the_two_phase_model_plans_as_the_meta_attribute_does() {
    let two_phase = PlanOptions::default().force_migration_model(MigrationModel::TwoPhase);
    let mut changed = 0;
    let dir = root().join("scenarios/migration");
    for entry in std::fs::read_dir(&dir).expect("migration scenarios") {
        let path = entry.expect("entry").path().join("cib.xml");
        if !path.exists() {
            continue;
        }
        let (text, cib) = read(&path);
        let now = now_of(&cib);
        let forced = cib.plan_with(now, &two_phase);
        let written = Cib::parse(&with_model_written(&text, "two-phase"))
            .expect("rewritten CIB")
            .plan(now);
        assert_eq!(
            forced.graph_xml(),
            written.graph_xml(),
            "{}",
            path.display()
        );
        assert_eq!(forced.summary(), written.summary(), "{}", path.display());
        if forced.graph_xml() != cib.plan(now).graph_xml() {
            changed += 1;
        }
    }
    // The scenarios' VMs are ocf:highlander:VirtualDomain (atomic by default): forcing must
    // change some plans, or the option does nothing.
    assert!(
        changed > 0,
        "forcing two-phase changed no migration scenario's graph"
    );
}

#[test]
fn forcing_the_two_phase_model_leaves_two_phase_cibs_alone() {
    let two_phase = PlanOptions::default().force_migration_model(MigrationModel::TwoPhase);
    for path in cibs() {
        let (text, cib) = read(&path);
        if text.contains("highlander") || text.contains("migration-model") {
            continue;
        }
        let now = now_of(&cib);
        assert_eq!(
            cib.plan_with(now, &two_phase).graph_xml(),
            cib.plan(now).graph_xml(),
            "{}",
            path.display()
        );
    }
}

#[test]
fn what_if_matches_the_cli_injections() {
    let path = root().join("scenarios/migration/04-source-lost-during-migrate-to/cib.xml");
    let (_, cib) = read(&path);
    let now = now_of(&cib);
    let sim = cib
        .what_if(now)
        .results_at(now)
        .node_fail("node1")
        .expect("a node name")
        .op_fail("vm1_start_0@node2=1")
        .expect("an op spec")
        .run();
    // The CLI records results at the wall clock: the injected last-failure time differs.
    let printed = cli(
        &path,
        now,
        &["-S", "-f", "node1", "-F", "vm1_start_0@node2=1"],
    );
    let timeless = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| match l.split_once("last-failure-vm1#start_0=") {
                Some((head, _)) => format!("{head}last-failure-vm1#start_0=TIME"),
                None => l.to_string(),
            })
            .collect()
    };
    assert_eq!(timeless(sim.text()), timeless(&printed));
    assert!(sim.text().contains("last-failure-vm1#start_0=1767225600"));
    assert!(sim.text().contains("Performing Requested Modifications"));
    assert!(matches!(
        cib.what_if(now).op_inject("vm1_monitor"),
        Err(pengine::InjectionError::Shape { .. })
    ));
}

#[test]
fn explanation_and_errors() {
    let path = root().join("scenarios/migration/01-constraint-removed-before-migrate-from/cib.xml");
    let (_, cib) = read(&path);
    let text = cib
        .explain(now_of(&cib), "vm1")
        .expect("vm1 is configured")
        .render();
    assert!(text.contains("vm1"), "{text}");
    assert!(matches!(
        cib.explain(0, "nope"),
        Err(pengine::ExplainError::UnknownResource { .. })
    ));
    assert!(matches!(
        Cib::parse("<foo/>"),
        Err(pengine::CibError::NotCib { .. })
    ));
    assert!(matches!(
        Cib::parse("<cib"),
        Err(pengine::CibError::Xml { .. })
    ));
}

#[test]
fn cib_document_writes_the_status_back() {
    let path = root().join("scenarios/migration/01-constraint-removed-before-migrate-from/cib.xml");
    let text = std::fs::read_to_string(&path).expect("readable");
    let doc = pengine::CibDocument::parse(&text).expect("XML");
    let cib = doc.cib().expect("a CIB");
    let sim = cib.what_if(now_of(&cib)).run();
    let written = doc.render_with_status(sim.cib());
    let again = Cib::parse(&written).expect("the written CIB reads back");
    assert_eq!(again.status.len(), sim.cib().status.len());
    // The written status holds the simulated history: as many operation records per node.
    let ops = |c: &Cib| -> Vec<usize> {
        c.status
            .iter()
            .map(|n| n.lrm.iter().map(|r| r.ops.len()).sum())
            .collect()
    };
    assert_eq!(ops(&again), ops(sim.cib()));
    assert_ne!(ops(&again), ops(&cib), "the transition ran nothing");
}
