//! Clones of a group (anonymous or globally unique) as Pacemaker 2.1.5 models them: each instance
//! is a group `group:N` of numbered members (`member:N`), kept as an ordinary `observed::Group`
//! (chained, its own pseudo actions) listed in the clone's `CloneSpec::instances`; the clone
//! `Group`'s members are every instance's members, instance by instance. This module owns what
//! differs from a clone of a primitive: building the instances, which instance a resource belongs
//! to, and the instances' lines of the "Clone Set" status block.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::cib::{Cib, Group as GroupDef};
use crate::clones::CloneSpec;
use crate::observed::{Group, Observed, Top, make_resource, merge_sets};

/// Adds clone `id` of group `g` to `obs`: `spec.max` instances (one orphan instance when it is
/// 0, for the history), each a group `g:N` whose meta are the group's own then the clone's
/// (`clone_meta`), whose members inherit both; then the clone itself, at the top level.
pub fn add_instances(
    obs: &mut Observed,
    id: &str,
    g: &GroupDef,
    clone_meta: BTreeMap<String, String>,
    mut spec: CloneSpec,
    cib: &Cib,
    now: i64,
) {
    let mut gmeta = BTreeMap::new();
    merge_sets(&mut gmeta, &g.meta, now, None);
    for (k, v) in &clone_meta {
        gmeta.entry(k.clone()).or_insert_with(|| v.clone());
    }
    spec.child = g.id.clone();
    // A globally unique clone forced anonymous by a member's standard (`pe__force_anon`):
    // Pacemaker clears the flag on the clone and what it has unpacked so far when it unpacks
    // that member, so the members before it in the last instance stay unique
    // (force-anon-clone-max).
    let forced_at = clone_meta
        .get("globally-unique")
        .filter(|v| crate::cib::is_true(v) && !spec.unique)
        .and_then(|_| {
            g.members
                .iter()
                .position(|m| !crate::cib::clones::supports_unique(&m.class))
        });
    let last = spec.max.max(1) - 1;
    let mut all_members = Vec::new();
    for n in 0..spec.max.max(1) {
        let gi = obs.groups.len();
        let mut members = Vec::new();
        for (k, p) in g.members.iter().enumerate() {
            let mut rsc = make_resource(p, cib, Some(&gmeta), now);
            rsc.id = format!("{}:{n}", p.id);
            rsc.group = Some(gi);
            // A unique instance's members are known by their own ids only.
            rsc.clone_base = (!spec.unique).then(|| p.id.clone());
            rsc.orphan = n >= spec.max;
            rsc.unique_in_graph = n == last && n < spec.max && forced_at.is_some_and(|f| k < f);
            members.push(obs.resources.len());
            obs.resources.push(rsc);
        }
        all_members.extend(members.iter().copied());
        obs.groups.push(Group {
            id: format!("{}:{n}", g.id),
            members,
            meta: gmeta.clone(),
            clone: None,
        });
        spec.instances.push(gi);
    }
    let ci = obs.groups.len();
    obs.groups.push(Group {
        id: id.to_string(),
        members: all_members,
        meta: clone_meta,
        clone: Some(spec),
    });
    obs.top.push(Top::Group(ci));
}

/// The clone whose instance group is `gi`, if it is one.
pub fn parent_clone(obs: &Observed, gi: usize) -> Option<usize> {
    obs.groups
        .iter()
        .position(|p| p.clone.as_ref().is_some_and(|c| c.instances.contains(&gi)))
}

/// The clone resource `ri` is an instance of, or a member of an instance of.
pub fn clone_of(obs: &Observed, ri: usize) -> Option<usize> {
    let gi = obs.resources.get(ri)?.group?;
    if obs.groups[gi].clone.is_some() {
        return Some(gi);
    }
    parent_clone(obs, gi)
}

/// Whether group `gi` is an instance of a clone of a group.
pub fn is_instance(obs: &Observed, gi: usize) -> bool {
    parent_clone(obs, gi).is_some()
}

/// The instances of clone `gi` as lists of resources: one member each for a clone of a
/// primitive, the instance group's members for a clone of a group.
pub fn instances(obs: &Observed, gi: usize) -> Vec<Vec<usize>> {
    let g = &obs.groups[gi];
    match g.clone.as_ref() {
        Some(spec) if !spec.instances.is_empty() => spec
            .instances
            .iter()
            .map(|&ig| obs.groups[ig].members.clone())
            .collect(),
        _ => g.members.iter().map(|&m| vec![m]).collect(),
    }
}

/// Where an instance is (or, with `pending`, is pending), as Pacemaker's location of a
/// resource while unpacking: the first member's node that is active or pending.
pub fn instance_location(obs: &Observed, members: &[usize]) -> Option<usize> {
    members.iter().find_map(|&m| {
        let r = &obs.resources[m];
        r.running_on
            .first()
            .copied()
            .or(r.pending_task.as_ref().map(|(_, n)| *n))
    })
}

/// The instances' lines of clone `gi`'s "Clone Set" block (the header printed, the Started
/// and Stopped lists left to the caller): an instance active on one node, all members there,
/// none failed, orphaned or unmanaged, is counted in `started` (or `promoted`, when a member
/// is promoted); any other active instance is
/// printed in full as its group.
pub fn render_instances(
    obs: &Observed,
    gi: usize,
    show_pending: bool,
    started: &mut Vec<usize>,
    promoted: &mut Vec<usize>,
    out: &mut String,
) {
    let Some(spec) = obs.groups[gi].clone.as_ref() else {
        return;
    };
    for &ig in &spec.instances {
        let members = &obs.groups[ig].members;
        let rs = || members.iter().map(|&m| &obs.resources[m]);
        let pending = show_pending
            && rs().any(|r| {
                r.pending_task
                    .as_ref()
                    .is_some_and(|(task, _)| task != "probe")
            });
        let partially = rs().any(|r| !r.running_on.is_empty());
        // A unique clone shows every instance (Pacemaker tests the clone's orphan flag, not
        // the instance's).
        let full = if pending || spec.unique {
            true
        } else if !partially {
            false
        } else if rs().any(|r| r.orphan || !r.managed || r.failed) {
            true
        } else if rs().all(|r| !r.running_on.is_empty()) {
            let mut nodes: Vec<usize> = rs().flat_map(|r| r.running_on.iter().copied()).collect();
            nodes.sort_unstable();
            nodes.dedup();
            match nodes[..] {
                [ni] if obs.nodes[ni].online || !obs.nodes[ni].unclean => {
                    // (a promotable instance's role is its members' highest)
                    if rs().any(|r| r.role > crate::observed::Role::Unpromoted) {
                        promoted.push(ni);
                    } else {
                        started.push(ni);
                    }
                    false
                }
                _ => true,
            }
        } else {
            true
        };
        if !full {
            continue;
        }
        let _ = writeln!(out, "      * Resource Group: {}:", obs.groups[ig].id);
        for r in rs() {
            let mut shown = r.clone();
            shown.id = r.history_id().to_string();
            let _ = writeln!(
                out,
                "        * {}",
                crate::status::primitive_line_with(obs, &shown, show_pending)
            );
        }
    }
}

/// For a history entry `lrm_id` of an anonymous clone that no instance can take: a new orphan
/// instance (N the clone's next instance number): `child:N` for a clone of a primitive, else
/// `group:N` with every member an orphan, added to the clone as Pacemaker does, so later
/// entries find it as an active instance; returns its resource named by the entry. `None` for
/// other histories.
pub fn orphan_member(
    obs: &mut Observed,
    cib: &Cib,
    clones: &std::collections::HashMap<String, usize>,
    lrm_id: &str,
    now: i64,
) -> Option<usize> {
    let base = crate::clones::strip_instance(lrm_id);
    let &ci = clones.get(base)?;
    let spec = obs.groups[ci].clone.as_ref()?;
    let clone_def = cib.resources.iter().find_map(|r| match r {
        crate::cib::ResourceDef::Clone(c) if c.id == obs.groups[ci].id => Some(c),
        _ => None,
    })?;
    if spec.instances.is_empty() {
        // A clone of a primitive: the orphan is its next instance `child:N`.
        let n = obs.groups[ci].members.len();
        let gmeta = obs.groups[ci].meta.clone();
        let mut rsc = make_resource(&clone_def.child, cib, Some(&gmeta), now);
        rsc.id = format!("{}:{n}", clone_def.child.id);
        rsc.group = Some(ci);
        rsc.clone_base = Some(clone_def.child.id.clone());
        rsc.orphan = true;
        rsc.managed = obs.resources[obs.groups[ci].members[0]].managed;
        let ri = obs.resources.len();
        obs.resources.push(rsc);
        obs.groups[ci].members.push(ri);
        return Some(ri);
    }
    let def = clone_def.group.as_ref()?;
    let n = spec.instances.len();
    let gmeta = obs.groups[spec.instances[0]].meta.clone();
    let ig = obs.groups.len();
    let mut members = Vec::new();
    for p in &def.members {
        let mut rsc = make_resource(p, cib, Some(&gmeta), now);
        rsc.id = format!("{}:{n}", p.id);
        rsc.group = Some(ig);
        rsc.clone_base = Some(p.id.clone());
        rsc.orphan = true;
        rsc.managed = obs.resources[obs.groups[ci].members[0]].managed;
        members.push(obs.resources.len());
        obs.resources.push(rsc);
    }
    let found = members
        .iter()
        .copied()
        .find(|&m| obs.resources[m].history_id() == base);
    obs.groups.push(Group {
        id: format!("{}:{n}", def.id),
        members: members.clone(),
        meta: gmeta,
        clone: None,
    });
    obs.groups[ci].members.extend(members);
    if let Some(spec) = obs.groups[ci].clone.as_mut() {
        spec.instances.push(ig);
    }
    found
}

#[cfg(test)]
mod tests {
    use crate::observed::observe;

    fn op(id: &str, task: &str, call: u32, rc: u32) -> String {
        format!(
            r#"<lrm_rsc_op id="{id}_{task}" operation="{task}" call-id="{call}" rc-code="{rc}" op-status="0" interval="0" transition-key="1:1:0:x" transition-magic="0:{rc};1:1:0:x"/>"#
        )
    }

    fn history(id: &str) -> String {
        format!(
            r#"<lrm_resource id="{id}" class="ocf" provider="pacemaker" type="Dummy">{}{}</lrm_resource>"#,
            op(id, "monitor", 1, 7),
            op(id, "start", 2, 0)
        )
    }

    /// Two nodes; node1's history has members a:0 and b:0 (one instance) and a second copy of
    /// `a` as a:1, which no instance can take: Pacemaker makes it an orphan instance g:2.
    fn cib() -> crate::cib::Cib {
        let text = format!(
            r#"<cib validate-with="pacemaker-3.0" epoch="1" num_updates="0" admin_epoch="0"><configuration><crm_config/>
<nodes><node id="n1" uname="node1"/><node id="n2" uname="node2"/></nodes>
<resources><clone id="c"><group id="g">
<primitive id="a" class="ocf" provider="pacemaker" type="Dummy"/>
<primitive id="b" class="ocf" provider="pacemaker" type="Dummy"/>
</group></clone></resources><constraints/></configuration>
<status>
<node_state id="n1" uname="node1" in_ccm="true" crmd="online" join="member" expected="member"><lrm id="n1"><lrm_resources>{}{}{}</lrm_resources></lrm></node_state>
<node_state id="n2" uname="node2" in_ccm="true" crmd="online" join="member" expected="member"><lrm id="n2"><lrm_resources/></lrm></node_state>
</status></cib>"#,
            history("a:0"),
            history("b:0"),
            history("a:1")
        );
        crate::cib::parse_cib(&text).expect("test CIB parses")
    }

    #[test]
    fn instances_are_groups_of_numbered_members() {
        let obs = observe(&cib(), 0);
        let ci = obs.group_index("c").expect("clone");
        let spec = obs.groups[ci].clone.as_ref().expect("clone spec");
        assert_eq!(spec.child, "g");
        let ids: Vec<&str> = spec
            .instances
            .iter()
            .map(|&ig| obs.groups[ig].id.as_str())
            .collect();
        assert_eq!(ids, ["g:0", "g:1", "g:2"]);
        let members: Vec<&str> = obs.groups[spec.instances[1]]
            .members
            .iter()
            .map(|&m| obs.resources[m].id.as_str())
            .collect();
        assert_eq!(members, ["a:1", "b:1"]);
    }

    #[test]
    fn history_fills_one_instance_per_node_and_orphans_the_rest() {
        let obs = observe(&cib(), 0);
        let node1 = obs.nodes.iter().position(|n| n.uname == "node1");
        let running = |id: &str| {
            let ri = obs.rsc_index(id).expect("member");
            (
                obs.resources[ri].running_on.first().copied(),
                obs.resources[ri].orphan,
            )
        };
        assert_eq!(running("a:0"), (node1, false));
        assert_eq!(running("b:0"), (node1, false));
        assert_eq!(running("a:1"), (None, false));
        assert_eq!(running("a:2"), (node1, true));
        assert_eq!(running("b:2"), (None, true));
        let status = crate::status::render_status(&obs, false);
        assert!(status.contains("* Clone Set: c [g]:"), "{status}");
        assert!(status.contains("* Resource Group: g:2:"), "{status}");
        assert!(status.contains("* Stopped: [ node2 ]"), "{status}");
    }

    #[test]
    fn an_instance_is_placed_on_one_node() {
        let t = crate::schedule(&cib(), 0);
        let obs = &t.observed;
        let node = |id: &str| t.desired.assigned[obs.rsc_index(id).expect("member")];
        assert_eq!(node("a:0"), node("b:0"));
        assert_eq!(node("a:1"), node("b:1"));
        assert!(node("a:0").is_some() && node("a:1").is_some());
        assert_ne!(node("a:0"), node("a:1"));
    }
}
