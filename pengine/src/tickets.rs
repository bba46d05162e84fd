//! Ticket dependencies (`rsc_ticket`) as Pacemaker 2.1.5 applies them, before placement.
//!
//! A resource that depends on a ticket may run only while the ticket is granted and not in
//! standby (a ticket without a `ticket_state` is revoked). Otherwise, for each primitive (a
//! group's members one by one), with the dependency's role (`rsc-role`; `Started` or none means
//! any role):
//! - ticket revoked, resource active: the loss policy decides. `stop` bans it from every node;
//!   `demote` does the same unless the dependency is for the promoted role; `fence` (only with
//!   stonith enabled, otherwise it is `stop`), when the role matches the resource's, bans it and
//!   fences every node it is active on ("deadman ticket was lost"); `freeze`, when the role
//!   matches, leaves it where it is, unmanaged and blocked: no action at all.
//! - ticket revoked, resource inactive; or ticket granted but in standby: banned from every node,
//!   unless the dependency is for the promoted role with a loss policy other than `stop`.
//!
//! Without `loss-policy` (or with an unknown one) the policy is `demote` for the promoted role,
//! `stop` otherwise. These effects are the scheduler's, not the cluster's state: the status
//! crm_simulate prints before the transition does not show them (see `alters_status`).
//! Promotable clones (the promoted-role ban) are not supported: `cib` reports clones.

use crate::cib::{Cib, INFINITY, RscTicket};
use crate::observed::{Observed, Role};

/// What to do with an active resource when its ticket is revoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossPolicy {
    Stop,
    Demote,
    Fence,
    Freeze,
}

/// The location's name Pacemaker gives the ban, by cause.
pub const LOSS_OF_TICKET: &str = "__loss_of_ticket__";
pub const NO_TICKET: &str = "__no_ticket__";
pub const TICKET_STANDBY: &str = "__ticket_standby__";
/// The fencing reason of the `fence` loss policy.
pub const FENCE_REASON: &str = "deadman ticket was lost";

/// The role a dependency is for: None for any role (`rsc-role` absent, `Started`, or a word
/// Pacemaker does not know).
pub fn dependency_role(written: Option<&str>) -> Option<Role> {
    written
        .and_then(Role::parse)
        .filter(|r| *r != Role::Started)
}

/// The loss policy in effect: `fence` needs stonith enabled (else `stop`); none or an unknown
/// word is `demote` for the promoted role and `stop` otherwise.
pub fn loss_policy(written: Option<&str>, role: Option<Role>, stonith_enabled: bool) -> LossPolicy {
    match written.map(str::to_ascii_lowercase).as_deref() {
        Some("fence") if stonith_enabled => LossPolicy::Fence,
        Some("fence") | Some("stop") => LossPolicy::Stop,
        Some("freeze") => LossPolicy::Freeze,
        Some("demote") => LossPolicy::Demote,
        _ if role == Some(Role::Promoted) => LossPolicy::Demote,
        _ => LossPolicy::Stop,
    }
}

/// What one ticket dependency did to one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Banned from every node (the location's name).
    Ban(&'static str),
    /// Its node is fenced (the node's index).
    Fence(usize),
    /// Left as it is: unmanaged and blocked.
    Freeze,
}

/// One effect, with the dependency (its id) and the resource (index) it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: String,
    pub ticket: String,
    pub rsc: usize,
    pub effect: Effect,
}

/// Whether the notes change what the status shows (a fenced node is unclean, a frozen resource
/// blocked): crm_simulate prints the status before the scheduler applies them.
pub fn alters_status(notes: &[Note]) -> bool {
    notes
        .iter()
        .any(|n| matches!(n.effect, Effect::Fence(_) | Effect::Freeze))
}

/// The primitives a dependency names: the resource, or a group's members.
fn dependents(obs: &Observed, rsc: &str) -> Option<Vec<usize>> {
    if let Some(gi) = obs.group_index(rsc) {
        return Some(obs.groups[gi].members.clone());
    }
    obs.rsc_index(rsc).map(|ri| vec![ri])
}

/// Applies every ticket dependency of `cib` to `obs` (bans, fencing, freezing), in configuration
/// order, and returns what it did.
pub fn apply(cib: &Cib, obs: &mut Observed) -> Vec<Note> {
    let mut notes = Vec::new();
    // A set naming a resource that does not exist ends its constraint (the sets before stay).
    let mut broken: Option<&str> = None;
    for dep in &cib.rsc_tickets {
        if broken == Some(dep.constraint.as_str()) {
            continue;
        }
        let Some(leaves) = dependents(obs, &dep.rsc) else {
            if dep.set.is_some() {
                broken = Some(dep.constraint.as_str());
            }
            continue;
        };
        let state = cib.tickets.iter().find(|t| t.id == dep.ticket);
        let granted = state.is_some_and(|t| t.granted);
        let standby = state.is_some_and(|t| t.standby);
        if granted && !standby {
            continue;
        }
        for ri in leaves {
            for effect in effects(obs, dep, ri, granted) {
                match effect {
                    Effect::Ban(why) => {
                        obs.resources[ri]
                            .history_bans
                            .push((None, -INFINITY, why.to_string()));
                    }
                    Effect::Fence(ni) => {
                        let n = &mut obs.nodes[ni];
                        if !n.unclean {
                            n.unclean = true;
                            n.fence_reason = Some(FENCE_REASON.to_string());
                        }
                    }
                    Effect::Freeze => {
                        let r = &mut obs.resources[ri];
                        r.managed = false;
                        r.blocked = true;
                        // Frozen after the status was unpacked: held nowhere.
                        r.blocked_after = Some(r.running_on.len());
                    }
                }
                notes.push(Note {
                    id: dep.id.clone(),
                    ticket: dep.ticket.clone(),
                    rsc: ri,
                    effect,
                });
            }
        }
    }
    notes
}

/// What a dependency whose ticket is revoked (`granted` false) or in standby does to the
/// primitive `ri`.
fn effects(obs: &Observed, dep: &RscTicket, ri: usize, granted: bool) -> Vec<Effect> {
    let r = &obs.resources[ri];
    let role = dependency_role(dep.role.as_deref());
    let policy = loss_policy(dep.loss_policy.as_deref(), role, obs.stonith_enabled);
    let role_matches = role.is_none_or(|want| want == r.role);
    let not_promoted_only = role != Some(Role::Promoted) || policy == LossPolicy::Stop;
    if !granted && !r.running_on.is_empty() {
        match policy {
            LossPolicy::Stop => vec![Effect::Ban(LOSS_OF_TICKET)],
            LossPolicy::Demote if role != Some(Role::Promoted) => {
                vec![Effect::Ban(LOSS_OF_TICKET)]
            }
            LossPolicy::Demote => Vec::new(),
            LossPolicy::Fence if role_matches => std::iter::once(Effect::Ban(LOSS_OF_TICKET))
                .chain(r.running_on.iter().map(|&ni| Effect::Fence(ni)))
                .collect(),
            LossPolicy::Freeze if role_matches => vec![Effect::Freeze],
            LossPolicy::Fence | LossPolicy::Freeze => Vec::new(),
        }
    } else if !granted {
        if not_promoted_only {
            vec![Effect::Ban(NO_TICKET)]
        } else {
            Vec::new()
        }
    } else if not_promoted_only {
        vec![Effect::Ban(TICKET_STANDBY)]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cib::parse_cib;

    /// Two nodes with a fencing device; `rsc1` alone, `a` and `b` in group `g`. `active` lists
    /// the resources started on node2; `rsc_tickets` and `tickets` go into their sections.
    fn cib(rsc_tickets: &str, tickets: &str, active: &[&str], stonith: bool) -> Cib {
        let history: String = active
            .iter()
            .map(|r| {
                format!(
                    r#"<lrm_resource id="{r}" class="ocf" provider="pacemaker" type="Dummy"><lrm_rsc_op id="{r}_last_0" operation="start" call-id="2" rc-code="0" op-status="0" interval="0"/></lrm_resource>"#
                )
            })
            .collect();
        let node = |n: &str, lrm: &str| {
            format!(
                r#"<node_state id="{n}" uname="{n}" in_ccm="true" crmd="online" join="member" expected="member"><lrm id="{n}"><lrm_resources>{lrm}</lrm_resources></lrm></node_state>"#
            )
        };
        let text = format!(
            r#"<cib have-quorum="1"><configuration><crm_config><cluster_property_set id="o"><nvpair id="o1" name="stonith-enabled" value="{stonith}"/></cluster_property_set></crm_config>
<nodes><node id="node1" uname="node1"/><node id="node2" uname="node2"/></nodes><resources>
<primitive id="fence" class="stonith" type="null"/>
<primitive id="rsc1" class="ocf" provider="pacemaker" type="Dummy"/>
<group id="g"><primitive id="a" class="ocf" provider="pacemaker" type="Dummy"/><primitive id="b" class="ocf" provider="pacemaker" type="Dummy"/></group>
</resources><constraints>{rsc_tickets}</constraints></configuration>
<status><tickets>{tickets}</tickets>{}{}</status></cib>"#,
            node("node1", ""),
            node("node2", &history)
        );
        parse_cib(&text).expect("valid CIB")
    }

    fn notes(cib: &Cib) -> (Observed, Vec<Note>) {
        let mut obs = crate::observed::observe(cib, 0);
        let notes = apply(cib, &mut obs);
        (obs, notes)
    }

    fn effects_on<'a>(obs: &Observed, notes: &'a [Note], rsc: &str) -> Vec<&'a Effect> {
        let ri = obs.rsc_index(rsc).expect("configured");
        notes
            .iter()
            .filter(|n| n.rsc == ri)
            .map(|n| &n.effect)
            .collect()
    }

    #[test]
    fn loss_policy_defaults_and_fence_without_stonith() {
        assert_eq!(loss_policy(None, None, true), LossPolicy::Stop);
        assert_eq!(
            loss_policy(None, Some(Role::Promoted), true),
            LossPolicy::Demote
        );
        assert_eq!(loss_policy(Some("bogus"), None, true), LossPolicy::Stop);
        assert_eq!(loss_policy(Some("FENCE"), None, true), LossPolicy::Fence);
        assert_eq!(loss_policy(Some("fence"), None, false), LossPolicy::Stop);
        assert_eq!(loss_policy(Some("Freeze"), None, false), LossPolicy::Freeze);
        assert_eq!(dependency_role(Some("Started")), None);
        assert_eq!(dependency_role(None), None);
        assert_eq!(dependency_role(Some("nonsense")), None);
        assert_eq!(dependency_role(Some("Master")), Some(Role::Promoted));
        assert_eq!(dependency_role(Some("Stopped")), Some(Role::Stopped));
    }

    #[test]
    fn granted_ticket_changes_nothing() {
        let c = cib(
            r#"<rsc_ticket id="t" rsc="rsc1" ticket="T" loss-policy="fence"/>"#,
            r#"<ticket_state id="T" granted="true"/>"#,
            &["rsc1"],
            true,
        );
        let (_, notes) = notes(&c);
        assert!(notes.is_empty(), "{notes:?}");
        let t = crate::schedule(&c, 0);
        assert!(t.reconciliation.fence.is_empty());
        let ri = t.observed.rsc_index("rsc1").expect("configured");
        assert_eq!(t.desired.assigned[ri], t.observed.node_index("node2"));
    }

    #[test]
    fn a_ticket_without_state_is_revoked_and_bans_an_inactive_resource() {
        let c = cib(
            r#"<rsc_ticket id="t" rsc="rsc1" ticket="T"/>"#,
            "",
            &[],
            true,
        );
        let (obs, notes) = notes(&c);
        assert_eq!(effects_on(&obs, &notes, "rsc1"), [&Effect::Ban(NO_TICKET)]);
        let t = crate::schedule(&c, 0);
        let ri = t.observed.rsc_index("rsc1").expect("configured");
        assert_eq!(t.desired.assigned[ri], None);
        assert!(t.desired.scores[ri].values().all(|s| *s == -INFINITY));
    }

    #[test]
    fn revoked_ticket_stop_policy_stops_an_active_resource() {
        let c = cib(
            r#"<rsc_ticket id="t" rsc="rsc1" ticket="T" loss-policy="stop"/>"#,
            r#"<ticket_state id="T" granted="false"/>"#,
            &["rsc1"],
            true,
        );
        let (obs, notes) = notes(&c);
        assert_eq!(
            effects_on(&obs, &notes, "rsc1"),
            [&Effect::Ban(LOSS_OF_TICKET)]
        );
        let t = crate::schedule(&c, 0);
        let ri = t.observed.rsc_index("rsc1").expect("configured");
        assert_eq!(t.desired.assigned[ri], None);
        assert!(t.reconciliation.fence.is_empty());
    }

    #[test]
    fn revoked_ticket_fence_policy_fences_the_node_the_resource_is_active_on() {
        let c = cib(
            r#"<rsc_ticket id="t" rsc="rsc1" rsc-role="Started" ticket="T" loss-policy="fence"/>"#,
            r#"<ticket_state id="T" granted="false"/>"#,
            &["rsc1"],
            true,
        );
        let t = crate::schedule(&c, 0);
        let node2 = t.observed.node_index("node2").expect("configured");
        assert_eq!(t.reconciliation.fence, [(node2, FENCE_REASON.to_string())]);
        let ri = t.observed.rsc_index("rsc1").expect("configured");
        assert_eq!(t.desired.assigned[ri], None);
        // The status crm_simulate prints first does not show the scheduler's fencing.
        let text = crate::render_simulation(&c, 0);
        let current = text.split("Transition Summary").next().unwrap_or("");
        assert!(current.contains("Online: [ node1 node2 ]"), "{text}");
        assert!(
            text.contains("Fence (reboot) node2 'deadman ticket was lost'"),
            "{text}"
        );
    }

    #[test]
    fn fence_policy_without_stonith_is_stop() {
        let c = cib(
            r#"<rsc_ticket id="t" rsc="rsc1" ticket="T" loss-policy="fence"/>"#,
            r#"<ticket_state id="T" granted="false"/>"#,
            &["rsc1"],
            false,
        );
        let (obs, notes) = notes(&c);
        assert_eq!(
            effects_on(&obs, &notes, "rsc1"),
            [&Effect::Ban(LOSS_OF_TICKET)]
        );
        assert!(obs.nodes.iter().all(|n| !n.unclean));
    }

    #[test]
    fn fence_and_freeze_only_apply_when_the_role_matches() {
        // rsc-role Stopped does not match a started resource: nothing happens to it.
        for policy in ["fence", "freeze"] {
            let c = cib(
                &format!(
                    r#"<rsc_ticket id="t" rsc="rsc1" rsc-role="Stopped" ticket="T" loss-policy="{policy}"/>"#
                ),
                r#"<ticket_state id="T" granted="false"/>"#,
                &["rsc1"],
                true,
            );
            let (_, notes) = notes(&c);
            assert!(notes.is_empty(), "{policy}: {notes:?}");
        }
    }

    #[test]
    fn standby_ticket_bans_without_the_loss_policy() {
        let c = cib(
            r#"<rsc_ticket id="t" rsc="rsc1" ticket="T" loss-policy="fence"/>"#,
            r#"<ticket_state id="T" granted="true" standby="true"/>"#,
            &["rsc1"],
            true,
        );
        let (obs, notes) = notes(&c);
        assert_eq!(
            effects_on(&obs, &notes, "rsc1"),
            [&Effect::Ban(TICKET_STANDBY)]
        );
        let t = crate::schedule(&c, 0);
        assert!(t.reconciliation.fence.is_empty());
    }

    #[test]
    fn promoted_role_dependency_bans_an_inactive_resource_only_with_stop() {
        for (policy, banned) in [("demote", false), ("freeze", false), ("stop", true)] {
            let c = cib(
                &format!(
                    r#"<rsc_ticket id="t" rsc="rsc1" rsc-role="Promoted" ticket="T" loss-policy="{policy}"/>"#
                ),
                "",
                &[],
                true,
            );
            let (_, notes) = notes(&c);
            assert_eq!(!notes.is_empty(), banned, "{policy}: {notes:?}");
        }
    }

    #[test]
    fn freeze_leaves_active_members_alone_and_bans_inactive_ones() {
        let c = cib(
            r#"<rsc_ticket id="t" rsc="g" ticket="T" loss-policy="freeze"/>"#,
            r#"<ticket_state id="T" granted="false"/>"#,
            &["a"],
            true,
        );
        let (obs, notes) = notes(&c);
        assert_eq!(effects_on(&obs, &notes, "a"), [&Effect::Freeze]);
        assert_eq!(effects_on(&obs, &notes, "b"), [&Effect::Ban(NO_TICKET)]);
        let a = &obs.resources[obs.rsc_index("a").expect("configured")];
        assert!(!a.managed && a.blocked);
        let t = crate::schedule(&c, 0);
        let members = [a.id.as_str(), "b"];
        let acted: Vec<&str> = t
            .graph
            .actions
            .iter()
            .filter(|ga| {
                ga.rsc
                    .is_some_and(|ri| members.contains(&obs.resources[ri].id.as_str()))
            })
            .filter(|ga| !(ga.task == "monitor" && ga.interval_ms == 0))
            .map(|ga| ga.key.as_str())
            .collect();
        assert!(acted.is_empty(), "only probes for the group: {acted:?}");
        // Not shown as blocked in the status printed before the transition.
        let text = crate::render_simulation(&c, 0);
        assert!(!text.contains("blocked"), "{text}");
    }

    #[test]
    fn every_resource_of_a_set_depends_and_a_missing_one_ends_the_constraint() {
        let c = cib(
            r#"<rsc_ticket id="t" ticket="T"><resource_set id="s1"><resource_ref id="rsc1"/></resource_set>
<resource_set id="s2"><resource_ref id="nope"/><resource_ref id="a"/></resource_set>
<resource_set id="s3"><resource_ref id="b"/></resource_set></rsc_ticket>"#,
            "",
            &[],
            true,
        );
        let (obs, notes) = notes(&c);
        assert_eq!(effects_on(&obs, &notes, "rsc1"), [&Effect::Ban(NO_TICKET)]);
        assert!(effects_on(&obs, &notes, "a").is_empty());
        assert!(effects_on(&obs, &notes, "b").is_empty());
        assert_eq!(notes[0].id, "s1");
    }
}
