//! Pacemaker 2.1.5's one-or-more orderings: which orderings gate their then on a count of the
//! first side's starts, and the pseudo action that does it.
//!
//! Two kinds (facts from Pacemaker's ordering unpacking):
//! - a `resource_set` with `require-all=false` before another set (`OneOrMore::Set`): pseudo
//!   action `one-or-more:<set id>`, runnable once one member's start is (a group's or clone's
//!   own start pseudo action for a group or clone member);
//! - a plain `rsc_order` whose first is a clone with `clone-min` (or, deprecated,
//!   `require-all=false`, meaning `clone-min=1`; `OneOrMore::Constraint`): pseudo action
//!   `clone-one-or-more:<order id>`, runnable once `clone-min` instances' starts are (each
//!   instance's start; an instance group's own start for a clone of a group).
//!
//! Every first start is ordered before the pseudo action without making it unrunnable (only
//! runnable firsts are its graph inputs), and the pseudo action before each then action with the
//! ordering's kind plus "runnable left": an unrunnable pseudo action makes the then unrunnable
//! (a then that is active stops). The pseudo action is never required: it is in the graph only
//! when runnable and after a first start that happens. The inverse (the thens' stops before the
//! firsts' stops) stays an ordinary ordering. `reconcile::propagate_orderings` counts the
//! runnable firsts; `actions` adds the pseudo action (`Kind::OneOrMore`) and its edges.
//! Only start firsts are modelled: a clone order whose first action is another leaves the
//! ordering ordinary.

use crate::cib::{OneOrMore, Order};
use crate::observed::Observed;

/// A first of a one-or-more ordering: whose start counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    /// A primitive (or clone instance) start.
    Rsc(usize),
    /// A group's or clone's own start pseudo action.
    Group(usize),
}

/// One one-or-more pseudo action with what it gates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relaxed {
    /// The pseudo action's name (its task and key).
    pub name: String,
    /// How many firsts must be runnable.
    pub min: usize,
    pub firsts: Vec<Member>,
    /// (then resource or group id, then action), in constraint order.
    pub thens: Vec<(String, String)>,
}

/// A `clone-min` meta value as Pacemaker reads it (not a number or negative: 0).
fn scan_min(v: &str) -> usize {
    v.trim()
        .parse::<i64>()
        .map(|n| n.max(0) as usize)
        .unwrap_or(0)
}

/// The one-or-more pseudo action whose forward direction replaces ordering `o`, with the
/// minimum of runnable firsts, if any.
pub fn name_of(obs: &Observed, o: &Order) -> Option<(String, usize)> {
    match &o.one_or_more {
        OneOrMore::No => None,
        OneOrMore::Set(set) => Some((format!("one-or-more:{set}"), 1)),
        OneOrMore::Constraint { require_all } => {
            let gi = obs.group_index(&o.first)?;
            obs.groups[gi].clone.as_ref()?;
            if o.first_action != "start" {
                return None;
            }
            let min = match obs.groups[gi].meta.get("clone-min") {
                Some(v) => scan_min(v),
                None if *require_all == Some(false) => 1,
                None => 0,
            };
            (min > 0).then(|| (format!("clone-one-or-more:{}", o.id), min))
        }
    }
}

/// Every one-or-more pseudo action of the configuration, in the order of their first ordering.
pub fn collect(obs: &Observed) -> Vec<Relaxed> {
    let mut out: Vec<Relaxed> = Vec::new();
    for o in &obs.orders {
        let Some((name, min)) = name_of(obs, o) else {
            continue;
        };
        let k = match out.iter().position(|r| r.name == name) {
            Some(k) => k,
            None => {
                out.push(Relaxed {
                    name,
                    min,
                    firsts: Vec::new(),
                    thens: Vec::new(),
                });
                out.len() - 1
            }
        };
        let firsts: Vec<Member> = match &o.one_or_more {
            OneOrMore::Constraint { .. } => {
                let Some(gi) = obs.group_index(&o.first) else {
                    continue;
                };
                let g = &obs.groups[gi];
                match g.clone.as_ref() {
                    Some(c) if !c.instances.is_empty() => {
                        c.instances.iter().map(|&ig| Member::Group(ig)).collect()
                    }
                    _ => g.members.iter().map(|&ri| Member::Rsc(ri)).collect(),
                }
            }
            _ => match (obs.group_index(&o.first), obs.rsc_index(&o.first)) {
                (Some(gi), _) => vec![Member::Group(gi)],
                (None, Some(ri)) => vec![Member::Rsc(ri)],
                _ => vec![],
            },
        };
        let r = &mut out[k];
        for f in firsts {
            if !r.firsts.contains(&f) {
                r.firsts.push(f);
            }
        }
        let then = (o.then.clone(), o.then_action.clone());
        if !r.thens.contains(&then) {
            r.thens.push(then);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! Expected values are Pacemaker 2.1.5's rules applied by hand (module doc).
    use super::*;

    fn observed(meta: &str, constraints: &str) -> Observed {
        let prim = |id: &str| {
            format!(r#"<primitive id="{id}" class="ocf" provider="pacemaker" type="Dummy"/>"#)
        };
        let xml = format!(
            r#"<cib><configuration><crm_config/><nodes><node id="n1" uname="n1"/><node id="n2" uname="n2"/></nodes>
<resources><clone id="a-clone">{}<meta_attributes id="m">{meta}</meta_attributes></clone>{}{}</resources>
<constraints>{constraints}</constraints></configuration><status/></cib>"#,
            prim("a"),
            prim("b"),
            prim("c")
        );
        let cib = crate::cib::parse_cib(&xml).expect("valid cib");
        crate::observed::observe(&cib, 0)
    }

    #[test]
    fn a_clone_with_clone_min_gates_its_then_on_that_many_instances() {
        let obs = observed(
            r#"<nvpair id="m1" name="clone-min" value="2"/>"#,
            r#"<rsc_order id="o" first="a-clone" then="b"/>"#,
        );
        let rx = collect(&obs);
        assert_eq!(rx.len(), 1);
        assert_eq!(rx[0].name, "clone-one-or-more:o");
        assert_eq!(rx[0].min, 2);
        let instances: Vec<Member> = obs.groups[obs.group_index("a-clone").unwrap()]
            .members
            .iter()
            .map(|&ri| Member::Rsc(ri))
            .collect();
        assert_eq!(rx[0].firsts, instances);
        assert_eq!(rx[0].thens, [("b".to_string(), "start".to_string())]);
        // require-all=false without clone-min means one; neither means an ordinary ordering.
        let obs = observed(
            "",
            r#"<rsc_order id="o" first="a-clone" then="b" require-all="false"/>"#,
        );
        assert_eq!(collect(&obs)[0].min, 1);
        let obs = observed("", r#"<rsc_order id="o" first="a-clone" then="b"/>"#);
        assert!(collect(&obs).is_empty());
        // A primitive first ignores require-all.
        let obs = observed(
            "",
            r#"<rsc_order id="o" first="b" then="c" require-all="false"/>"#,
        );
        assert!(collect(&obs).is_empty());
    }

    #[test]
    fn a_set_with_require_all_false_gates_the_next_set_on_one_member() {
        let obs = observed(
            "",
            r#"<rsc_order id="o"><resource_set id="s1" require-all="false" sequential="false">
<resource_ref id="a-clone"/><resource_ref id="b"/></resource_set>
<resource_set id="s2"><resource_ref id="c"/></resource_set></rsc_order>"#,
        );
        let rx = collect(&obs);
        assert_eq!(rx.len(), 1);
        assert_eq!(rx[0].name, "one-or-more:s1");
        assert_eq!(rx[0].min, 1);
        assert_eq!(
            rx[0].firsts,
            [
                Member::Group(obs.group_index("a-clone").unwrap()),
                Member::Rsc(obs.rsc_index("b").unwrap())
            ]
        );
        assert_eq!(rx[0].thens, [("c".to_string(), "start".to_string())]);
    }

    #[test]
    fn clone_min_is_read_as_pacemaker_reads_it() {
        assert_eq!(scan_min("2"), 2);
        assert_eq!(scan_min("-1"), 0);
        assert_eq!(scan_min("x"), 0);
    }
}
