//! Recovery policy per resource (meta attributes `recovery-restarts`, `recovery-relocations`):
//! restart in place up to a limit, then relocate only to nodes not tried yet, then an error state
//! that waits for an administrator. Kept in Pacemaker's own fail counts, so `crm_resource
//! --cleanup` and `failure-timeout` reset it. A hook after `observed`: it only adds history bans.
//!
//! Terms: a node is *tried* when the resource has a live fail count there (one not expired by
//! `failure-timeout`), *used up* when that count exceeds `recovery-restarts`. Each used-up node
//! but the first is one relocation; more used-up nodes than `recovery-relocations` allow, or no
//! untried node left to relocate to, is the error state: banned everywhere, with the reason.

use std::collections::BTreeMap;

use crate::cib::{INFINITY, parse_interval_ms, parse_score};
use crate::observed::{Observed, Resource, Role};
use crate::placement::node_available;

/// Meta attribute: restarts in place allowed on one node before it is given up.
pub const RESTARTS: &str = "recovery-restarts";
/// Meta attribute: moves to a further node allowed after the first node is given up.
pub const RELOCATIONS: &str = "recovery-relocations";
/// Defaults when only one of the two is set (those of Proxmox VE's ha-manager).
pub const RESTARTS_DEFAULT: i64 = 1;
pub const RELOCATIONS_DEFAULT: i64 = 1;

/// A resource's recovery policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub restarts: i64,
    pub relocations: i64,
}

/// What the policy decided for one resource, for the summary and the scenario log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub rsc: String,
    pub text: String,
}

/// The policy of a resource, if it has one (either attribute set; unparsable values count as 0).
pub fn policy(r: &Resource) -> Option<Policy> {
    let get = |name: &str| r.meta.get(name).map(|v| parse_score(v).unwrap_or(0).max(0));
    let restarts = get(RESTARTS);
    let relocations = get(RELOCATIONS);
    if restarts.is_none() && relocations.is_none() {
        return None;
    }
    Some(Policy {
        restarts: restarts.unwrap_or(RESTARTS_DEFAULT),
        relocations: relocations.unwrap_or(RELOCATIONS_DEFAULT),
    })
}

/// Fail counts that still count: expired ones (`failure-timeout`) are left out, by the rule
/// placement uses for `migration-threshold`.
pub fn live_fail_counts(obs: &Observed, r: &Resource) -> BTreeMap<usize, i64> {
    let timeout_s = r
        .meta
        .get("failure-timeout")
        .map(|v| parse_interval_ms(v) / 1000)
        .unwrap_or(0) as i64;
    r.fail_count
        .iter()
        .filter(|&(_, &c)| c > 0)
        .filter(|&(ni, _)| {
            !(timeout_s > 0
                && r.last_failure
                    .get(ni)
                    .is_some_and(|&t| obs.now > t.saturating_add(timeout_s)))
        })
        .map(|(&ni, &c)| (ni, c))
        .collect()
}

fn count_text(c: i64) -> String {
    if c >= INFINITY {
        "INFINITY".into()
    } else {
        c.to_string()
    }
}

/// Applies every resource's policy as bans on `obs`; returns the notes.
pub fn apply(obs: &mut Observed) -> Vec<Note> {
    let mut notes = Vec::new();
    for ri in 0..obs.resources.len() {
        let r = &obs.resources[ri];
        let Some(p) = policy(r) else { continue };
        let mut prefer: Option<usize> = None;
        if !r.managed || r.orphan {
            continue;
        }
        let counts = live_fail_counts(obs, r);
        let name = |ni: usize| obs.nodes[ni].uname.clone();
        let used_up: Vec<usize> = counts
            .iter()
            .filter(|&(_, &c)| c > p.restarts)
            .map(|(&ni, _)| ni)
            .collect();
        let mut bans: Vec<(usize, String)> = used_up
            .iter()
            .map(|&ni| {
                (
                    ni,
                    format!(
                        "recovery: {} failures on {} > {RESTARTS}={}",
                        count_text(counts[&ni]),
                        name(ni),
                        p.restarts
                    ),
                )
            })
            .collect();
        let may_stay = r.role > Role::Stopped
            && r.running_on
                .iter()
                .any(|&ni| node_available(obs, ni) && !used_up.contains(&ni));
        let tried: Vec<String> = counts.keys().map(|&ni| name(ni)).collect();
        let untried: Vec<usize> = (0..obs.nodes.len())
            .filter(|ni| !counts.contains_key(ni) && node_available(obs, *ni))
            .collect();
        let error = if used_up.len() as i64 > p.relocations {
            Some(format!(
                "error: gave up after using up {} node(s) ({}) with {RELOCATIONS}={}",
                used_up.len(),
                used_up
                    .iter()
                    .map(|&n| name(n))
                    .collect::<Vec<_>>()
                    .join(", "),
                p.relocations
            ))
        } else if !may_stay && !used_up.is_empty() && untried.is_empty() {
            Some(format!(
                "error: no untried node left to relocate to (tried {})",
                tried.join(", ")
            ))
        } else {
            None
        };
        if let Some(why) = &error {
            for ni in 0..obs.nodes.len() {
                bans.push((ni, format!("recovery {why}")));
            }
            notes.push(Note {
                rsc: r.id.clone(),
                text: format!("{why}; crm_resource --cleanup -r {} resets it", r.id),
            });
        } else if !counts.is_empty() {
            // Never back to a tried node while an untried one exists (no ping-pong), except where
            // it runs now and may still restart.
            let current: Vec<usize> = if may_stay || used_up.is_empty() {
                r.running_on.clone()
            } else {
                Vec::new()
            };
            if !untried.is_empty() {
                for (&ni, _) in counts.iter().filter(|(ni, _)| !current.contains(ni)) {
                    if !used_up.contains(&ni) {
                        bans.push((ni, format!("recovery: {} already tried", name(ni))));
                    }
                }
            }
            // Restart in place means in place: a failed resource loses its stickiness, and
            // Pacemaker would recover it on whichever node scores best.
            if may_stay && r.failed {
                if let Some(&ni) = r.running_on.first() {
                    prefer = Some(ni);
                }
            }
            let restarts_here = r
                .running_on
                .iter()
                .find_map(|ni| counts.get(ni).map(|&c| (*ni, c)));
            let state = if let (true, Some((ni, c))) = (may_stay, restarts_here) {
                format!("restart {} of {} on {}", c, p.restarts, name(ni))
            } else if may_stay {
                format!("running; avoids tried {}", tried.join(", "))
            } else if !used_up.is_empty() {
                format!(
                    "relocation {} of {}: untried {}",
                    used_up.len(),
                    p.relocations,
                    untried
                        .iter()
                        .map(|&n| name(n))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                format!("restart in place; tried {}", tried.join(", "))
            };
            notes.push(Note {
                rsc: r.id.clone(),
                text: state,
            });
        }
        let r = &mut obs.resources[ri];
        for (ni, why) in bans {
            r.history_bans.push((Some(ni), -INFINITY, why));
        }
        if let Some(ni) = prefer {
            r.history_bans
                .push((Some(ni), INFINITY, "recovery: restart in place".into()));
        }
    }
    notes
}

/// After placement: a resource under a policy that has failed somewhere and got no node is in
/// the error state even when untried nodes exist, if none of them may run it (a node group
/// restricted by location constraints smaller than the relocation limit).
pub fn after_placement(obs: &Observed, desired: &crate::placement::Desired, notes: &mut [Note]) {
    for note in notes.iter_mut() {
        let Some(ri) = obs.rsc_index(&note.rsc) else {
            continue;
        };
        let unplaced = desired.assigned.get(ri).is_some_and(|a| a.is_none());
        // Only a relocation that found nowhere to go (not a resource stopped for other reasons).
        if !unplaced || !note.text.starts_with("relocation") {
            continue;
        }
        let r = &obs.resources[ri];
        let tried: Vec<String> = live_fail_counts(obs, r)
            .keys()
            .map(|&ni| obs.nodes[ni].uname.clone())
            .collect();
        note.text = format!(
            "error: no untried node may run it (tried {}); crm_resource --cleanup -r {} resets it",
            tried.join(", "),
            r.id
        );
    }
}

/// Renders the notes as a summary section (empty when no resource has a policy at work).
pub fn render_notes(notes: &[Note]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut s = String::from("Recovery Policy:\n");
    for n in notes {
        s.push_str(&format!("  * {}: {}\n", n.rsc, n.text));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rsc(meta: &[(&str, &str)]) -> Resource {
        Resource {
            id: "vm1".into(),
            meta: meta
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn policy_needs_one_attribute_and_fills_the_other() {
        assert_eq!(policy(&rsc(&[])), None);
        assert_eq!(
            policy(&rsc(&[(RESTARTS, "3")])),
            Some(Policy {
                restarts: 3,
                relocations: RELOCATIONS_DEFAULT
            })
        );
        assert_eq!(
            policy(&rsc(&[(RELOCATIONS, "INFINITY"), (RESTARTS, "-4")])),
            Some(Policy {
                restarts: 0,
                relocations: INFINITY
            })
        );
    }
}
