//! The library examples (`src/bin/plan_summary.rs`, `what_if.rs`, `explain.rs`) run on the sample
//! cluster and say what `pengine simulate` says about it: vm-web live-migrates from node1 (in
//! standby) to node3.

use std::path::PathBuf;
use std::process::Command;

fn sample() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cibs/sample-cluster.xml");
    assert!(path.exists(), "missing {}", path.display());
    path
}

fn run(exe: &str, args: &[&str]) -> String {
    let out = Command::new(exe)
        .arg(sample())
        .args(args)
        .output()
        .expect("the example runs");
    assert!(out.status.success(), "{exe}: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn plan_summary_prints_the_migration() {
    let out = run(
        env!("CARGO_BIN_EXE_plan_summary"),
        &["2026-01-01 00:00:00Z"],
    );
    assert!(
        out.starts_with("Transition Summary (2026-01-01 00:00:00Z):\n"),
        "{out}"
    );
    assert!(
        out.contains("* Migrate    vm-web     ( node1 -> node3 )"),
        "{out}"
    );
}

#[test]
fn what_if_a_node_fails_and_a_start_fails() {
    let dir = tempfile::tempdir().expect("scratch dir");
    let saved = dir.path().join("after.xml");
    let out = run(
        env!("CARGO_BIN_EXE_what_if"),
        &[
            "--node-fail",
            "node2",
            "--op-fail",
            "vm-db_start_0@node3=1",
            "--save",
            saved.to_str().expect("UTF-8 path"),
        ],
    );
    assert!(out.contains("* Failing node node2"), "{out}");
    assert!(out.contains("Pretending action"), "{out}");
    let after = std::fs::read_to_string(&saved).expect("the CIB after the transition");
    assert!(after.contains("vm-db_last_failure_0"), "{after}");
    // A bad spec is an error naming it, no panic.
    let bad = Command::new(env!("CARGO_BIN_EXE_what_if"))
        .arg(sample())
        .args(["--op-fail", "vm-web"])
        .output()
        .expect("runs");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("'vm-web'"));
}

#[test]
fn explain_names_the_standby_node_and_the_target() {
    let out = run(env!("CARGO_BIN_EXE_explain"), &["vm-web"]);
    assert!(out.contains("vm-web"), "{out}");
    assert!(out.contains("node3"), "{out}");
    assert!(out.contains("node1"), "{out}");
}
