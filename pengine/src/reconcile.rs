//! Observed x desired -> named sets per resource: keep, start, stop, migrate, move, recover, restart, probe, blocked.

use crate::observed::{Observed, Role};
use crate::placement::Desired;

/// What happens to one resource, in Pacemaker's summary vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Keep,
    Start {
        target: usize,
        blocked: Option<String>,
    },
    Stop {
        sources: Vec<usize>,
        reason: Option<String>,
        blocked: bool,
    },
    Move {
        source: usize,
        target: usize,
        stops: Vec<usize>,
    },
    Migrate {
        source: usize,
        target: usize,
    },
    Recover {
        source: usize,
        target: usize,
        stops: Vec<usize>,
    },
    Restart {
        node: usize,
    },
}

/// The named sets, one entry per resource index.
#[derive(Debug, Clone, Default)]
pub struct Reconciliation {
    pub changes: Vec<Change>,
    /// Probes to run: (resource, node).
    pub probes: Vec<(usize, usize)>,
    /// Nodes to fence, in creation order, with the reason.
    pub fence: Vec<(usize, String)>,
    /// Nodes to shut down cleanly.
    pub shutdown: Vec<usize>,
}

impl Reconciliation {
    /// One-line count per set, for logs.
    pub fn summary(&self) -> String {
        let mut counts = [0usize; 7];
        for c in &self.changes {
            let i = match c {
                Change::Keep => 0,
                Change::Start { .. } => 1,
                Change::Stop { .. } => 2,
                Change::Move { .. } => 3,
                Change::Migrate { .. } => 4,
                Change::Recover { .. } => 5,
                Change::Restart { .. } => 6,
            };
            counts[i] += 1;
        }
        format!(
            "keep={} start={} stop={} move={} migrate={} recover={} restart={} probe={} fence={}",
            counts[0],
            counts[1],
            counts[2],
            counts[3],
            counts[4],
            counts[5],
            counts[6],
            self.probes.len(),
            self.fence.len()
        )
    }
}

fn quorum_block(obs: &Observed, ri: usize) -> Option<String> {
    let r = &obs.resources[ri];
    if obs.have_quorum
        || r.meta
            .get("requires")
            .map(|v| v == "nothing")
            .unwrap_or(false)
    {
        return None;
    }
    match obs.no_quorum_policy {
        crate::observed::NoQuorum::Ignore => None,
        crate::observed::NoQuorum::Freeze => {
            if r.running_on.is_empty() {
                Some("quorum freeze".into())
            } else {
                None
            }
        }
        _ => Some("no quorum".into()),
    }
}

/// Computes the change for every resource.
pub fn reconcile(obs: &Observed, desired: &Desired) -> Reconciliation {
    let mut rec = Reconciliation::default();
    let can_fence = obs.can_fence();
    for (ni, n) in obs.nodes.iter().enumerate() {
        if n.unclean && can_fence {
            rec.fence.push((
                ni,
                n.fence_reason
                    .clone()
                    .unwrap_or_else(|| "node is unclean".into()),
            ));
        } else if n.online && n.shutdown {
            rec.shutdown.push(ni);
        }
    }
    let probes_enabled = obs
        .option("enable-startup-probes")
        .map(crate::cib::is_true)
        .unwrap_or(true);
    if probes_enabled {
        for (ni, n) in obs.nodes.iter().enumerate() {
            if !n.online || n.unclean || n.pending || n.maintenance {
                continue;
            }
            for (ri, r) in obs.resources.iter().enumerate() {
                if r.orphan || r.known_on.contains(&ni) || r.running_on.contains(&ni) {
                    continue;
                }
                rec.probes.push((ri, ni));
            }
        }
    }
    for (ri, r) in obs.resources.iter().enumerate() {
        let next = desired.assigned[ri];
        let current = r.running_on.first().copied();
        if desired.unmanaged[ri] {
            rec.changes.push(Change::Keep);
            continue;
        }
        let change = match (r.running_on.len(), next) {
            (0, None) => Change::Keep,
            (0, Some(t)) => Change::Start {
                target: t,
                blocked: quorum_block(obs, ri),
            },
            (_, None) => Change::Stop {
                sources: r.running_on.clone(),
                reason: Some(
                    desired.unplaced_reason[ri]
                        .clone()
                        .unwrap_or_else(|| "node availability".into()),
                ),
                blocked: false,
            },
            (1, Some(t)) => {
                let s = current.unwrap_or(t);
                if let Some(q) = quorum_block(obs, ri) {
                    Change::Stop {
                        sources: vec![s],
                        reason: Some(q),
                        blocked: false,
                    }
                } else if s == t {
                    if r.failed {
                        Change::Recover {
                            source: s,
                            target: t,
                            stops: vec![s],
                        }
                    } else {
                        Change::Keep
                    }
                } else if r.failed {
                    Change::Recover {
                        source: s,
                        target: t,
                        stops: vec![s],
                    }
                } else if r.meta_bool("allow-migrate", false)
                    && !r.migratable_cleared
                    && !obs.nodes[s].unclean
                    && obs.nodes[s].online
                {
                    Change::Migrate {
                        source: s,
                        target: t,
                    }
                } else {
                    Change::Move {
                        source: s,
                        target: t,
                        stops: vec![s],
                    }
                }
            }
            (_, Some(t)) => {
                let s = current.unwrap_or(t);
                if s == t {
                    Change::Recover {
                        source: s,
                        target: t,
                        stops: r.running_on.clone(),
                    }
                } else {
                    Change::Move {
                        source: s,
                        target: t,
                        stops: r.running_on.clone(),
                    }
                }
            }
        };
        let _ = Role::Started;
        rec.changes.push(change);
    }
    rec
}
