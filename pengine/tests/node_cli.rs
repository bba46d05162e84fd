//! `pengine node` against Pacemaker 2.1.5's own tools: the command writes into a CIB file
//! (`CIB_file`, which cibadmin, crm_resource and crm_attribute honour) and `crm_simulate -S`
//! plays the cluster, so Pacemaker's scheduler, not ours, decides every move. This checks that
//! what `pengine node` writes (origin records, `hl-lifecycle-*` constraints, the `evacuate`
//! attribute) makes a cluster that never runs pengine evacuate, restore and fail back.

use std::path::{Path, PathBuf};
use std::process::Command;

const PENGINE: &str = env!("CARGO_BIN_EXE_pengine");

fn have_pacemaker() -> bool {
    let found = ["crm_simulate", "cibadmin", "crm_resource", "crm_attribute"]
        .iter()
        .all(|t| Command::new(t).arg("--version").output().is_ok());
    if !found {
        let msg = "SKIPPED node_cli: Pacemaker's command line tools are not installed";
        assert!(std::env::var_os("CI").is_none(), "{msg}; CI must not skip");
        eprintln!("{msg}");
    }
    found
}

/// A CIB file in a temporary directory, driven by Pacemaker's tools.
struct CibFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl CibFile {
    /// Copies a scenario's initial CIB and lets Pacemaker start everything.
    fn from_scenario(name: &str) -> CibFile {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cib.xml");
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/recovery")
            .join(name)
            .join("cib.xml");
        std::fs::copy(&source, &path).expect("copy cib");
        let f = CibFile { _dir: dir, path };
        f.simulate(&[]);
        f
    }

    fn tool(&self, program: &str, args: &[&str]) -> (bool, String) {
        let out = Command::new(program)
            .args(args)
            .env("CIB_file", &self.path)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    /// `pengine node ARGS`; returns its output, panicking when it fails.
    fn pengine(&self, args: &[&str]) -> String {
        let mut all = vec!["node"];
        all.extend_from_slice(args);
        let (ok, text) = self.tool(PENGINE, &all);
        assert!(ok, "pengine node {args:?} failed: {text}");
        text
    }

    /// Pacemaker's scheduler plans and "executes" one transition (with crm_simulate's node
    /// injections); returns its Transition Summary lines.
    fn simulate(&self, injections: &[&str]) -> Vec<String> {
        let out = self.path.with_extension("next.xml");
        let mut args = vec!["-S", "-x", self.path.to_str().expect("utf-8 path")];
        args.extend_from_slice(injections);
        args.extend_from_slice(&["-O", out.to_str().expect("utf-8 path")]);
        let (ok, text) = self.tool("crm_simulate", &args);
        assert!(ok, "crm_simulate failed: {text}");
        std::fs::rename(&out, &self.path).expect("rename");
        let summary = text
            .split("Transition Summary:")
            .nth(1)
            .and_then(|s| s.split("Executing Cluster Transition:").next())
            .unwrap_or("");
        summary
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// Where Pacemaker says `rsc` runs (`crm_resource --locate`).
    fn located(&self, rsc: &str) -> String {
        let (_, text) = self.tool("crm_resource", &["--locate", "-r", rsc]);
        text.trim().to_string()
    }

    fn meta(&self, rsc: &str, name: &str) -> Option<String> {
        let (ok, text) = self.tool("crm_resource", &["-r", rsc, "--meta", "-g", name]);
        (ok && !text.contains("not found")).then(|| text.trim().to_string())
    }

    /// A clean shutdown as the controller sees it: pacemakerd sets the transient `shutdown`
    /// attribute, the scheduler moves or stops what runs there, then the node leaves.
    fn shut_down(&self, node: &str) -> Vec<String> {
        let (ok, text) = self.tool(
            "crm_attribute",
            &[
                "-N",
                node,
                "-n",
                "shutdown",
                "-v",
                "1796050000",
                "-l",
                "reboot",
            ],
        );
        assert!(ok, "crm_attribute: {text}");
        let plan = self.simulate(&[]);
        self.simulate(&["-d", node]);
        plan
    }

    fn pins(&self) -> Vec<String> {
        let (_, text) = self.tool("cibadmin", &["-Q", "-o", "constraints"]);
        text.lines()
            .filter(|l| l.contains("hl-lifecycle-"))
            .map(|l| l.trim().to_string())
            .collect()
    }
}

#[test]
fn evacuate_and_restore_drive_pacemakers_own_scheduler() {
    if !have_pacemaker() {
        return;
    }
    let c = CibFile::from_scenario("30-evacuate-restore");
    assert_eq!(c.located("vm1"), "resource vm1 is running on: node1");
    assert_eq!(c.located("vm2"), "resource vm2 is running on: node1");
    assert_eq!(c.located("vm3"), "resource vm3 is running on: node2");

    let out = c.pengine(&["evacuate", "node1"]);
    assert!(out.contains("vm1: meta origin-node=node1"), "{out}");
    assert!(out.contains("node1: node attribute evacuate=true"), "{out}");
    // The records are written before anything moves: Pacemaker has not run yet.
    assert_eq!(c.meta("vm1", "origin-node").as_deref(), Some("node1"));
    assert_eq!(c.meta("vm2", "origin-cause").as_deref(), Some("evacuate"));
    assert_eq!(c.meta("vm3", "origin-node"), None);
    let plan = c.simulate(&[]);
    assert!(
        plan.contains(&"* Migrate vm1 ( node1 -> node2 )".to_string()),
        "{plan:?}"
    );
    assert!(
        plan.contains(&"* Move vm2 ( node1 -> node3 )".to_string()),
        "{plan:?}"
    );
    assert_eq!(plan.len(), 2, "only vm1 and vm2 move: {plan:?}");
    // A second request changes nothing.
    assert!(
        c.pengine(&["evacuate", "node1"])
            .contains("nothing to write")
    );

    let out = c.pengine(&["restore", "node1"]);
    assert!(
        out.contains("node1: node attribute evacuate deleted"),
        "{out}"
    );
    let plan = c.simulate(&[]);
    assert!(
        plan.contains(&"* Migrate vm1 ( node2 -> node1 )".to_string()),
        "{plan:?}"
    );
    assert!(
        plan.contains(&"* Move vm2 ( node3 -> node1 )".to_string()),
        "{plan:?}"
    );
    assert_eq!(plan.len(), 2, "vm3 never ran on node1 and stays: {plan:?}");
    // Home again: the next sync clears the records and removes the preferences.
    c.pengine(&["sync"]);
    assert_eq!(c.meta("vm1", "origin-node"), None);
    assert_eq!(c.meta("vm2", "origin-node"), None);
    assert!(c.pins().is_empty(), "{:?}", c.pins());
    assert!(c.simulate(&[]).is_empty());
    assert!(c.pengine(&["sync"]).contains("nothing to write"));
}

#[test]
fn shutdown_records_let_pacemaker_fail_back_after_the_node_rejoins() {
    if !have_pacemaker() {
        return;
    }
    let c = CibFile::from_scenario("10-shutdown-migrate-reboot");
    assert_eq!(c.located("vm1"), "resource vm1 is running on: node1");
    let out = c.pengine(&["shutdown", "node1"]);
    assert!(out.contains("vm1: meta origin-cause=shutdown"), "{out}");
    // shutdown-policy=migrate pins nothing: Pacemaker moves vm1 away by itself.
    assert!(c.pins().is_empty(), "{:?}", c.pins());
    let plan = c.shut_down("node1");
    // Pacemaker picks node3 here, pengine node2 (see the recovery scenarios' README): the
    // failback below works from either.
    assert!(
        plan.contains(&"* Migrate vm1 ( node1 -> node3 )".to_string()),
        "{plan:?}"
    );
    // While node1 is away nothing is written.
    assert!(c.pengine(&["sync"]).contains("nothing to write"));
    // node1 rejoins: Pacemaker alone leaves vm1 on node3 (stickiness 100 against the
    // preference 100); the sync's INFINITY preference brings it back.
    c.simulate(&["-u", "node1"]);
    assert_eq!(c.located("vm1"), "resource vm1 is running on: node3");
    let out = c.pengine(&["sync"]);
    assert!(
        out.contains("hl-lifecycle-vm1-node1 INFINITY on node1"),
        "{out}"
    );
    let plan = c.simulate(&[]);
    assert!(
        plan.contains(&"* Migrate vm1 ( node3 -> node1 )".to_string()),
        "{plan:?}"
    );
    c.pengine(&["sync"]);
    assert_eq!(c.meta("vm1", "origin-node"), None);
    assert!(c.pins().is_empty(), "{:?}", c.pins());
}

#[test]
fn freeze_pins_hold_the_vm_on_its_node_until_it_rejoins() {
    if !have_pacemaker() {
        return;
    }
    let c = CibFile::from_scenario("15-shutdown-freeze-reboot");
    assert_eq!(c.located("vm1"), "resource vm1 is running on: node1");
    let out = c.pengine(&["shutdown", "node1"]);
    assert!(
        out.contains("hl-lifecycle-vm1-node2 -INFINITY on node2 (ban)"),
        "{out}"
    );
    let plan = c.shut_down("node1");
    assert!(
        plan.iter().any(|l| l.starts_with("* Stop vm1 ( node1 )")),
        "{plan:?}"
    );
    assert!(
        c.located("vm1").contains("NOT running"),
        "{}",
        c.located("vm1")
    );
    c.simulate(&["-u", "node1"]);
    assert_eq!(c.located("vm1"), "resource vm1 is running on: node1");
    c.pengine(&["sync"]);
    assert_eq!(c.meta("vm1", "origin-node"), None);
    assert!(c.pins().is_empty(), "{:?}", c.pins());
}

#[test]
fn an_unknown_node_is_refused_and_nothing_is_written() {
    if !have_pacemaker() {
        return;
    }
    let c = CibFile::from_scenario("30-evacuate-restore");
    let (ok, text) = c.tool(PENGINE, &["node", "evacuate", "node9"]);
    assert!(!ok);
    assert!(text.contains("no node named 'node9'"), "{text}");
    assert!(c.pins().is_empty());
}
