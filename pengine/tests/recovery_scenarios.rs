//! Recovery and node-lifecycle scenarios in pve-ha-manager's style: every directory under
//! `scenarios/recovery/` holds `cib.xml`, `cmdlist` and a reviewed golden `log.expect`; the runner
//! (`pengine::scenario`) replays the events over virtual time and the log must match exactly.
//! `HIGHLANDER_BLESS=1` rewrites the goldens (review the diff like code). Where a directory holds
//! `crm_simulate.expect` (Pacemaker 2.1.5 on the same `cib.xml`, written by `regen.sh`), our
//! Transition Summary for that CIB must equal Pacemaker's.

use std::path::{Path, PathBuf};

/// The scenarios' virtual start time (seconds since the epoch); log times are relative to it.
const START: i64 = 1_764_500_000;

fn scenarios() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join("recovery");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("scenarios/recovery exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("cib.xml").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn update() -> bool {
    std::env::var("HIGHLANDER_BLESS").is_ok_and(|v| v == "1")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The "Transition Summary" block of a crm_simulate-style output.
fn transition_summary(text: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with("Transition Summary:"))
        .skip(1)
        .take_while(|l| !l.is_empty() && !l.starts_with("Executing"))
        .map(|l| format!("{}\n", l.split_whitespace().collect::<Vec<_>>().join(" ")))
        .collect()
}

#[test]
fn every_scenario_matches_its_golden_log() {
    let dirs = scenarios();
    assert!(
        !dirs.is_empty(),
        "expected the scenario families, found {dirs:?}"
    );
    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        assert!(dir.join("README.md").is_file(), "{name}: no README.md");
        let log = pengine::run_scenario(
            &read(&dir.join("cib.xml")),
            &read(&dir.join("cmdlist")),
            START,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let golden = dir.join("log.expect");
        match std::fs::read_to_string(&golden) {
            Ok(expected) if expected == log => {}
            _ if update() => {
                std::fs::write(&golden, &log).expect("write log.expect");
                eprintln!("rewrote {}", golden.display());
            }
            Ok(expected) => failures.push(format!(
                "{name}: log differs from log.expect\n--- expected\n{expected}\n--- actual\n{log}"
            )),
            Err(_) => failures.push(format!(
                "{name}: no log.expect (run with HIGHLANDER_BLESS=1 and review it); actual:\n{log}"
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn initial_plans_match_pacemaker_where_it_has_an_equivalent() {
    let mut compared = 0;
    for dir in scenarios() {
        let pacemaker = dir.join("crm_simulate.expect");
        if !pacemaker.is_file() {
            continue;
        }
        let cib = pengine::parse_cib(&read(&dir.join("cib.xml"))).expect("cib parses");
        let ours = pengine::render_simulation(&cib, START);
        assert_eq!(
            transition_summary(&ours),
            transition_summary(&read(&pacemaker)),
            "{}: our Transition Summary differs from crm_simulate's",
            dir.display()
        );
        compared += 1;
    }
    assert!(compared > 0, "no scenario has a crm_simulate.expect");
}

#[test]
fn a_changed_golden_fails() {
    // The comparison must be able to fail: a log with one event fewer differs from the golden.
    let dir = &scenarios()[0];
    let cmdlist = read(&dir.join("cmdlist"));
    let fewer: String = cmdlist.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let log = pengine::run_scenario(&read(&dir.join("cib.xml")), &fewer, START).expect("runs");
    assert_ne!(log, read(&dir.join("log.expect")));
}

/// The plan and resource-state lines of a log (what Pacemaker and the policy must agree on).
fn plans_and_states(log: &str) -> Vec<String> {
    log.lines()
        .map(str::trim)
        .map(|l| l.split_once("  ").map(|(_, rest)| rest.trim()).unwrap_or(l))
        .filter(|l| l.contains(" plan: ") || l.starts_with("rsc ") || l.starts_with("> "))
        .map(String::from)
        .collect()
}

/// One scenario's CIB (its `recovery-relocations` must be 1) in two versions: our policy with
/// `recovery-restarts=restarts` and unlimited relocations, and Pacemaker's knobs alone
/// (`migration-threshold=threshold`, the policy attributes gone). Returns the directory, the
/// original CIB and the two versions.
fn policy_and_pacemaker(
    scenario: &str,
    restarts: u32,
    threshold: u32,
) -> (PathBuf, String, String, String) {
    let dir = scenarios()
        .into_iter()
        .find(|d| d.ends_with(scenario))
        .unwrap_or_else(|| panic!("scenario {scenario} exists"));
    let cib = read(&dir.join("cib.xml"));
    let restarts = format!(r#"name="recovery-restarts" value="{restarts}"/>"#);
    let relocations = r#"name="recovery-relocations" value="1"/>"#;
    assert!(cib.contains(&restarts) && cib.contains(relocations));
    let policy = cib.replace(
        relocations,
        r#"name="recovery-relocations" value="INFINITY"/>"#,
    );
    let pacemaker = cib
        .replace(
            &restarts,
            &format!(r#"name="migration-threshold" value="{threshold}"/>"#),
        )
        .replace(relocations, r#"name="target-role" value="Started"/>"#);
    (dir, cib, policy, pacemaker)
}

#[test]
fn restart_limit_is_migration_threshold_when_relocations_are_unlimited() {
    // Scenario 01's claim: recovery-restarts=2 with unlimited relocations plans what
    // migration-threshold=3 plans (restart twice in place, then move to the best other node).
    let (dir, _, policy, pacemaker) = policy_and_pacemaker("01-restart-limit", 2, 3);
    let cmdlist = read(&dir.join("cmdlist"));
    let ours = pengine::run_scenario(&policy, &cmdlist, START).expect("policy runs");
    let theirs = pengine::run_scenario(&pacemaker, &cmdlist, START).expect("pacemaker runs");
    assert_eq!(plans_and_states(&ours), plans_and_states(&theirs));
    assert!(
        plans_and_states(&ours)
            .iter()
            .any(|l| l.ends_with("Recover vm1 ( node1 -> node2 )")),
        "{ours}"
    );
}

#[test]
fn pacemaker_equivalent_combination() {
    // docs/recovery.md: recovery-restarts=0 with recovery-relocations=INFINITY plans what
    // migration-threshold=1 plans, failure after failure, down to every node banned.
    let (_, cib, policy, pacemaker) = policy_and_pacemaker("04-error-and-cleanup", 0, 1);
    let cmdlist = "fail vm1 node1 monitor\nfail vm1 node2 monitor\nfail vm1 node3 monitor\n\
                   advance 1h\ncleanup vm1\n";
    let ours = pengine::run_scenario(&policy, cmdlist, START).expect("policy runs");
    let theirs = pengine::run_scenario(&pacemaker, cmdlist, START).expect("pacemaker runs");
    assert_eq!(plans_and_states(&ours), plans_and_states(&theirs));
    // And the comparison has teeth: it saw the relocations and the final stop.
    let lines = plans_and_states(&ours).join("\n");
    assert!(lines.contains("Recover vm1 ( node2 -> node3 )"), "{lines}");
    assert!(lines.contains("Stop vm1 ( node3 )"), "{lines}");
    // With only one relocation allowed the plans differ: the policy stops after node2.
    let limited = pengine::run_scenario(&cib, cmdlist, START);
    assert!(
        limited.is_err(),
        "vm1 no longer runs on node3 when relocations=1"
    );
}

#[test]
fn never_two_copies_except_where_pacemaker_is_asked_to_risk_it() {
    // The runner models a lost node as cut off, not dead, and logs TWO COPIES when a resource is
    // started elsewhere before the node is fenced. Only scenario 21's vm2 (Pacemaker's default
    // with fencing disabled) may do that; its vm1 (requires=fencing) must not.
    let mut seen = Vec::new();
    for dir in scenarios() {
        let log = pengine::run_scenario(
            &read(&dir.join("cib.xml")),
            &read(&dir.join("cmdlist")),
            START,
        )
        .expect("runs");
        for l in log.lines().filter(|l| l.contains("TWO COPIES")) {
            let name = dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            seen.push(format!("{name}: {}", l.trim()));
        }
    }
    assert_eq!(
        seen,
        vec!["21-node-lost-no-fencing: 0s    TWO COPIES of vm2: node1 node2".to_string()]
    );
}
