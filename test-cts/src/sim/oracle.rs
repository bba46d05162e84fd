//! Pacemaker's own scheduler as an oracle for stalls: `crm_simulate -S` (Pacemaker 2.1.5, when
//! installed) on the CIB the simulator's planner read, to tell a stall Pacemaker has as well (its
//! scheduler also has work there, and its controller would not run it before the recheck timer
//! either) from one of our own. Used by `cts-sim --crm-simulate` only; the tests never need it.

use std::path::Path;
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
}
