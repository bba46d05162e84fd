//! Promotable clones (`<clone>` with meta `promotable=true`, or the legacy `<master>`) as
//! Pacemaker 2.1.5 schedules them: their options (`promoted-max`, `promoted-node-max` and the
//! legacy `master-max`, `master-node-max`), the roles of their instances, and the status lines
//! ("Promoted:", "Unpromoted:"). Placement of roles is `placement/promotable.rs`.

use std::collections::BTreeMap;

use crate::cib::{CloneDef, is_true};
use crate::observed::{Observed, Role};

/// What a promotable clone's meta attributes say about promotion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromotableSpec {
    /// `promoted-max` (legacy `master-max`): how many instances may be promoted (default 1).
    pub promoted_max: usize,
    /// `promoted-node-max` (legacy `master-node-max`): how many per node (default 1).
    pub promoted_node_max: usize,
}

/// A count option as Pacemaker reads it: 1 when unset, 0 when invalid or negative.
fn count_option(meta: &BTreeMap<String, String>, name: &str, legacy: &str) -> usize {
    match meta.get(name).or_else(|| meta.get(legacy)) {
        None => 1,
        Some(v) => v
            .trim()
            .parse::<i64>()
            .map(|n| n.max(0) as usize)
            .unwrap_or(0),
    }
}

/// The promotion options of clone `c` with merged meta `meta`, or `None` when it is not
/// promotable.
pub fn spec(c: &CloneDef, meta: &BTreeMap<String, String>) -> Option<PromotableSpec> {
    let promotable = c.legacy_master || meta.get("promotable").is_some_and(|v| is_true(v));
    promotable.then(|| PromotableSpec {
        promoted_max: count_option(meta, "promoted-max", "master-max"),
        promoted_node_max: count_option(meta, "promoted-node-max", "master-node-max"),
    })
}

/// Whether resource `ri` is an instance of a promotable clone.
pub fn is_instance(obs: &Observed, ri: usize) -> bool {
    obs.resources[ri]
        .group
        .and_then(|gi| obs.groups[gi].clone.as_ref())
        .is_some_and(|c| c.promotable.is_some())
}

/// After unpacking: an instance of a promotable clone found running is shown and scheduled as
/// unpromoted (Pacemaker's "Started" is never a promotable instance's role).
pub fn settle_roles(obs: &mut Observed) {
    for ri in 0..obs.resources.len() {
        if obs.resources[ri].role == Role::Started && is_instance(obs, ri) {
            obs.resources[ri].role = Role::Unpromoted;
        }
    }
}

/// The label of a clone's list of active, not promoted instances: "Started", or for a
/// promotable clone "Unpromoted" (with "(target-role)" when its target role is Unpromoted).
pub fn started_label(g: &crate::observed::Group) -> &'static str {
    if g.clone.as_ref().is_none_or(|c| c.promotable.is_none()) {
        return "Started";
    }
    match g.meta.get("target-role").and_then(|t| Role::parse(t)) {
        Some(Role::Unpromoted) => "Unpromoted (target-role)",
        _ => "Unpromoted",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn promotion_counts_default_to_one_and_read_legacy_names() {
        let def = CloneDef::default();
        assert_eq!(spec(&def, &meta(&[])), None);
        let s = spec(&def, &meta(&[("promotable", "true")])).expect("promotable");
        assert_eq!((s.promoted_max, s.promoted_node_max), (1, 1));
        let legacy = CloneDef {
            legacy_master: true,
            ..CloneDef::default()
        };
        let s = spec(
            &legacy,
            &meta(&[("master-max", "2"), ("promoted-node-max", "x")]),
        )
        .expect("a <master> is promotable");
        assert_eq!((s.promoted_max, s.promoted_node_max), (2, 0));
        let s = spec(
            &legacy,
            &meta(&[("master-max", "2"), ("promoted-max", "-3")]),
        )
        .unwrap();
        assert_eq!(s.promoted_max, 0);
    }
}
