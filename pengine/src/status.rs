//! Renders the cluster status block ("Node List" and "Full List of Resources") as crm_simulate prints it.

use std::fmt::Write;

use crate::observed::{Observed, Resource, Role, Top};

/// A node's state as the node list prints it ("online", "standby", "UNCLEAN (offline)", ...).
pub fn node_text_status(obs: &Observed, ni: usize) -> String {
    let n = &obs.nodes[ni];
    let running = obs.resources.iter().any(|r| r.running_on.contains(&ni));
    if n.unclean {
        if n.online {
            "UNCLEAN (online)".into()
        } else if n.pending {
            "UNCLEAN (pending)".into()
        } else {
            "UNCLEAN (offline)".into()
        }
    } else if n.pending {
        "pending".into()
    } else if n.standby_onfail && n.online {
        "standby (on-fail)".into()
    } else if n.standby {
        if n.online {
            if running {
                "standby (with active resources)".into()
            } else {
                "standby".into()
            }
        } else {
            "OFFLINE (standby)".into()
        }
    } else if n.maintenance {
        if n.online {
            "maintenance".into()
        } else {
            "OFFLINE (maintenance)".into()
        }
    } else if n.online {
        "online".into()
    } else {
        "OFFLINE".into()
    }
}

/// The role word crm_simulate shows for an operation still in flight (`Starting`, ...).
pub(crate) fn pending_state(task: &str) -> Option<&'static str> {
    match task {
        "start" => Some("Starting"),
        "stop" => Some("Stopping"),
        "migrate_to" | "migrate_from" => Some("Migrating"),
        "promote" => Some("Promoting"),
        "demote" => Some("Demoting"),
        _ => None,
    }
}

pub(crate) fn ocf_exit_text(rc: i32) -> &'static str {
    match rc {
        0 => "ok",
        1 => "error",
        2 => "invalid parameter",
        3 => "unimplemented feature",
        4 => "insufficient privileges",
        5 => "not installed",
        6 => "not configured",
        7 => "not running",
        8 => "promoted",
        9 => "promoted (failed)",
        _ => "unknown",
    }
}

/// One resource line, without indentation, pending operations shown ("Starting", "Monitoring").
pub fn primitive_line(obs: &Observed, r: &Resource) -> String {
    primitive_line_with(obs, r, true)
}

/// One resource line; `show_pending`: a pending operation shows as the state ("Starting") or a
/// flag ("Monitoring"). crm_simulate shows them in the current status only, never in the
/// revised one.
pub fn primitive_line_with(obs: &Observed, r: &Resource, show_pending: bool) -> String {
    let mut s = format!("{}\t({}):\t", r.id, r.agent());
    if r.orphan {
        s.push_str(" ORPHANED");
    }
    let multiple = r.running_on.len() > 1;
    // A stopped resource is shown on the node of its pending operation, else on the node it
    // is shutdown-locked to.
    let node = if multiple {
        None
    } else {
        r.running_on
            .first()
            .copied()
            .or(r
                .pending_task
                .as_ref()
                .filter(|_| show_pending)
                .map(|p| p.1))
            .or(r.lock_node)
    };
    let display_role = if r.role == Role::Unknown {
        Role::Stopped
    } else {
        r.role
    };
    if r.failed {
        s.push_str(" FAILED");
        if display_role > Role::Unpromoted {
            s.push(' ');
            s.push_str(display_role.text());
        }
    } else {
        s.push(' ');
        let pending = r
            .pending_task
            .as_ref()
            .filter(|_| show_pending)
            .and_then(|(t, _)| pending_state(t));
        s.push_str(pending.unwrap_or(display_role.text()));
    }
    if let Some(ni) = node {
        s.push(' ');
        s.push_str(&obs.nodes[ni].uname);
    }
    if display_role == Role::Stopped {
        let probe = r
            .failed_probes
            .iter()
            .find(|(pn, _)| node.is_none() || Some(*pn) == node);
        if let Some((_, rc)) = probe {
            let _ = write!(s, " ({}) ", ocf_exit_text(*rc));
        }
    }
    let mut flags: Vec<String> = Vec::new();
    if let Some(ni) = node {
        if !obs.nodes[ni].online && obs.nodes[ni].unclean {
            flags.push("UNCLEAN".into());
        }
    }
    if node.is_some() && node == r.lock_node {
        flags.push("LOCKED".into());
    }
    if let Some((task, _)) = r.pending_task.as_ref().filter(|_| show_pending) {
        if task == "monitor" {
            flags.push("Monitoring".into());
        }
    }
    if r.meta.get("target-role").and_then(|t| Role::parse(t)) == Some(Role::Stopped) {
        flags.push("disabled".into());
    }
    if r.blocked {
        flags.push("blocked".into());
    } else if !r.managed {
        flags.push("unmanaged".into());
    }
    if r.failure_ignored {
        flags.push("failure ignored".into());
    }
    if !flags.is_empty() {
        let _ = write!(s, " ({})", flags.join(", "));
    }
    if multiple {
        let names: Vec<&str> = r
            .running_on
            .iter()
            .map(|&ni| obs.nodes[ni].uname.as_str())
            .collect();
        let _ = write!(s, " [ {} ]", names.join(" "));
    }
    s
}

/// Whether the node list prints a node on its own line with its status ("Node NAME: standby")
/// rather than in an "Online: [ ... ]" style list (an offline guest is then listed too).
pub fn listed_with_status(n: &crate::observed::Node) -> bool {
    n.unclean
        || n.pending
        || (n.standby_onfail && n.online)
        || n.standby
        || n.maintenance
        || n.health <= 0
}

/// Renders the status block (after the section title line); `show_pending` as for
/// [`primitive_line_with`].
pub fn render_status(obs: &Observed, show_pending: bool) -> String {
    let mut out = String::new();
    out.push_str("  * Node List:\n");
    let mut online = Vec::new();
    let mut offline = Vec::new();
    let (mut remote_online, mut remote_offline) = (Vec::new(), Vec::new());
    let mut guest_online = Vec::new();
    for (ni, n) in obs.nodes.iter().enumerate() {
        let guest = crate::guest::is_guest(obs, ni);
        if listed_with_status(n) {
            let kind = if guest {
                "GuestNode"
            } else if n.remote.is_some() {
                "RemoteNode"
            } else {
                "Node"
            };
            let mut line = format!("    * {kind} {}: {}", n.uname, node_text_status(obs, ni));
            if n.health < 0 {
                line.push_str(" (health is RED)");
            } else if n.health == 0 {
                line.push_str(" (health is YELLOW)");
            }
            out.push_str(&line);
            out.push('\n');
        } else if guest {
            // An offline guest node is not listed.
            if n.online {
                guest_online.push(n.uname.as_str());
            }
        } else if n.remote.is_some() {
            let list = if n.online {
                &mut remote_online
            } else {
                &mut remote_offline
            };
            list.push(n.uname.as_str());
        } else if n.online {
            online.push(n.uname.as_str());
        } else {
            offline.push(n.uname.as_str());
        }
    }
    for (title, list) in [
        ("Online", online),
        ("OFFLINE", offline),
        ("RemoteOnline", remote_online),
        ("RemoteOFFLINE", remote_offline),
        ("GuestOnline", guest_online),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "    * {title}: [ {} ]", list.join(" "));
        }
    }
    out.push('\n');
    out.push_str("  * Full List of Resources:\n");
    let mut any = false;
    for t in &obs.top {
        if let Some((bi, first)) = crate::bundles::bundle_of(obs, *t) {
            if first {
                any = true;
                crate::bundles::render(obs, bi, show_pending, &mut out);
            }
            continue;
        }
        match *t {
            Top::Primitive(ri) => {
                let r = &obs.resources[ri];
                if (r.orphan && r.running_on.is_empty()) || crate::guest::is_internal(r) {
                    continue;
                }
                any = true;
                let _ = writeln!(out, "    * {}", primitive_line_with(obs, r, show_pending));
            }
            Top::Group(gi) if obs.groups[gi].clone.is_some() => {
                any = true;
                crate::clones::render_clone(obs, gi, show_pending, &mut out);
            }
            Top::Group(gi) => {
                let g = &obs.groups[gi];
                any = true;
                let mut attrs = Vec::new();
                let managed = g
                    .meta
                    .get("is-managed")
                    .map(|v| crate::cib::is_true(v))
                    .unwrap_or(true)
                    && !g
                        .meta
                        .get("maintenance")
                        .is_some_and(|v| crate::cib::is_true(v))
                    && !obs.maintenance_mode;
                if !managed {
                    attrs.push("unmanaged");
                }
                if g.meta.get("target-role").and_then(|t| Role::parse(t)) == Some(Role::Stopped) {
                    attrs.push("disabled");
                }
                if attrs.is_empty() {
                    let _ = writeln!(out, "    * Resource Group: {}:", g.id);
                } else {
                    let _ = writeln!(
                        out,
                        "    * Resource Group: {} ({}):",
                        g.id,
                        attrs.join(", ")
                    );
                }
                for &ri in &g.members {
                    let _ = writeln!(
                        out,
                        "      * {}",
                        primitive_line_with(obs, &obs.resources[ri], show_pending)
                    );
                }
            }
        }
    }
    if !any {
        out.push_str("    * No resources\n");
    }
    out
}
