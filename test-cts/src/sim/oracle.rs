//! Pacemaker's own scheduler as an oracle for stalls: `crm_simulate -S` (Pacemaker 2.1.5, when
//! installed) on the CIB the simulator's planner read, to tell a stall Pacemaker has as well (its
//! scheduler also has work there, and its controller would not run it before the recheck timer
//! either) from one of our own. Used by `cts-sim --crm-simulate` only; the tests never need it.
//! Also the differential check of `cts-sim --diff-crm-simulate`: `pengine simulate -x CIB -S`
//! against `crm_simulate -x CIB -S` on every CIB the planner reads ([`compare_simulate`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// What crm_simulate planned on one CIB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacemakerPlan {
    /// Its resource, cluster and fencing actions, in our `key@node` form, sorted.
    pub actions: Vec<String>,
}

/// Runs `crm_simulate -x <cib_path> -S` and reads the actions of its transition.
pub fn crm_simulate(cib_path: &Path) -> Result<PacemakerPlan, String> {
    let out = Command::new("crm_simulate")
        .arg("-x")
        .arg(cib_path)
        .arg("-S")
        .output()
        .map_err(|e| format!("cannot run crm_simulate: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "crm_simulate on {} failed: {}",
            cib_path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PacemakerPlan {
        actions: parse_executed(&String::from_utf8_lossy(&out.stdout)),
    })
}

/// The "Executing Cluster Transition" section of crm_simulate's output, as `key@node` entries
/// (pseudo actions left out): `vm1 monitor=10000 on node2` is `vm1_monitor_10000@node2`, `vm1 stop
/// on node2` is `vm1_stop_0@node2`, `do_shutdown on node1` is `do_shutdown-node1@node1`, fencing
/// `node3 (reboot)` is `stonith-node3-reboot@node3`.
pub fn parse_executed(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("Executing Cluster Transition") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if !l.starts_with('*') {
            if !l.is_empty() {
                break;
            }
            continue;
        }
        let l = l.trim_start_matches('*').trim();
        let words: Vec<&str> = l.split_whitespace().collect();
        let entry = match words.as_slice() {
            ["Resource", "action:", rsc, op, "on", node] => {
                let (task, interval) = op.split_once('=').unwrap_or((op, "0"));
                Some(format!("{rsc}_{task}_{interval}@{node}"))
            }
            ["Cluster", "action:", task, "on", node] => Some(format!("{task}-{node}@{node}")),
            ["Fencing", node, how] => {
                let how = how.trim_matches(|c| c == '(' || c == ')');
                Some(format!("stonith-{node}-{how}@{node}"))
            }
            _ => None,
        };
        out.extend(entry);
    }
    out.sort();
    out
}

/// `cts-sim --diff-crm-simulate`: what to compare and where to keep what differs.
#[derive(Debug, Clone)]
pub struct DiffConfig {
    /// Compare every Nth planner call (1: every one).
    pub every: u64,
    /// The first differing CIB of a seed is kept here, with both outputs.
    pub out_dir: PathBuf,
    /// The `pengine` binary (`pengine simulate -x CIB -S`).
    pub pengine: PathBuf,
}

/// The tally of one run's comparisons.
#[derive(Debug, Clone, Default)]
pub struct DiffTally {
    pub compared: u64,
    pub identical: u64,
    pub differing: u64,
    /// Of the differing ones, those whose executed actions differ as sets.
    pub actions_differ: u64,
    /// Comparisons that could not run (a tool failed).
    pub errors: u64,
    /// The first differing CIB: its path, the sections and the lines that differ.
    pub first: Option<String>,
}

impl DiffTally {
    pub fn add(&mut self, other: &DiffTally) {
        self.compared += other.compared;
        self.identical += other.identical;
        self.differing += other.differing;
        self.actions_differ += other.actions_differ;
        self.errors += other.errors;
    }
}

/// The sections of a `-S` output, in the order both tools print them.
pub const SECTIONS: [&str; 4] = [
    "Current cluster status:",
    "Transition Summary:",
    "Executing Cluster Transition:",
    "Revised Cluster Status:",
];

/// How the two schedulers' `-S` outputs on one CIB differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulateDiff {
    /// The sections (of [`SECTIONS`], or "other") whose normalised lines differ.
    pub sections: Vec<&'static str>,
    /// Whether the executed actions differ as sets (`parse_executed`), not just in order.
    pub actions_differ: bool,
    /// crm_simulate's output and ours, normalised.
    pub pacemaker: String,
    pub pengine: String,
}

/// Runs `crm_simulate -x <cib> -S` and `<pengine> simulate -x <cib> -S` and compares their outputs,
/// normalised as `pengine/tests/injection_oracle.rs` does (whitespace-insensitive lines, empty
/// lines dropped). None when they print the same.
pub fn compare_simulate(cib_path: &Path, pengine: &Path) -> Result<Option<SimulateDiff>, String> {
    let pacemaker = normalise(&run_simulate(Command::new("crm_simulate"), cib_path)?);
    let mut ours = Command::new(pengine);
    ours.arg("simulate");
    let pengine = normalise(&run_simulate(ours, cib_path)?);
    if pacemaker == pengine {
        return Ok(None);
    }
    let mut sections: Vec<&'static str> = SECTIONS
        .into_iter()
        .filter(|title| section(&pacemaker, title) != section(&pengine, title))
        .collect();
    if sections.is_empty() {
        sections.push("other");
    }
    Ok(Some(SimulateDiff {
        sections,
        actions_differ: parse_executed(&pacemaker) != parse_executed(&pengine),
        pacemaker,
        pengine,
    }))
}

fn run_simulate(mut cmd: Command, cib_path: &Path) -> Result<String, String> {
    let out = cmd
        .env("LC_ALL", "C")
        .arg("-x")
        .arg(cib_path)
        .arg("-S")
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{:?} on {} failed: {}",
            cmd.get_program(),
            cib_path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whitespace-insensitive lines, empty ones dropped.
fn normalise(text: &str) -> String {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lines of one section of a normalised output (up to the next section title).
fn section<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .take_while(|l| !SECTIONS.contains(l))
        .collect()
}

/// The lines only one side has, per differing section: `-` crm_simulate's, `+` ours.
pub fn render_diff(d: &SimulateDiff) -> String {
    let mut out = String::new();
    for title in &d.sections {
        let (theirs, ours): (Vec<&str>, Vec<&str>) = if *title == "other" {
            (d.pacemaker.lines().collect(), d.pengine.lines().collect())
        } else {
            (section(&d.pacemaker, title), section(&d.pengine, title))
        };
        out.push_str(&format!("  {title}\n"));
        let mut any = false;
        for l in theirs.iter().filter(|l| !ours.contains(l)) {
            out.push_str(&format!("    - {l}\n"));
            any = true;
        }
        for l in ours.iter().filter(|l| !theirs.contains(l)) {
            out.push_str(&format!("    + {l}\n"));
            any = true;
        }
        if !any {
            out.push_str("    (same lines, other order)\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_resource_cluster_and_fencing_actions_and_skips_pseudo_ones() {
        let text = "Transition Summary:\n  * Restart    vm1     ( node3 )\n\nExecuting Cluster Transition:\n  * Resource action: vm1             stop on node2\n  * Pseudo action:   vm1_start_0\n  * Resource action: vm1             monitor=10000 on node3\n  * Cluster action:  do_shutdown on node1\n  * Fencing node4 (reboot)\nUsing the original execution date of: 2025-11-30 00:00:51Z\n\nRevised Cluster Status:\n  * Resource action: vm9 stop on node9\n";
        assert_eq!(
            parse_executed(text),
            vec![
                "do_shutdown-node1@node1".to_string(),
                "stonith-node4-reboot@node4".to_string(),
                "vm1_monitor_10000@node3".to_string(),
                "vm1_stop_0@node2".to_string(),
            ]
        );
    }

    #[test]
    fn an_empty_transition_has_no_actions() {
        let text = "Transition Summary:\n\nExecuting Cluster Transition:\nUsing the original execution date of: 2025-11-30 00:00:51Z\n";
        assert!(parse_executed(text).is_empty());
    }

    #[test]
    fn sections_split_at_their_titles() {
        let text = "Current cluster status:\n* Node List:\nTransition Summary:\n* Stop vm1 ( node2 )\nExecuting Cluster Transition:\nRevised Cluster Status:\n* Node List:";
        assert_eq!(
            section(text, "Transition Summary:"),
            vec!["* Stop vm1 ( node2 )"]
        );
        assert!(section(text, "Executing Cluster Transition:").is_empty());
        assert_eq!(normalise("  a   b \n\n c"), "a b\nc");
    }
}
