//! Recheck times of date rules: the earliest moment after the planning time at which a date
//! expression the scheduler evaluated would give another result (the graph's `recheck-by`).
//!
//! Pacemaker notes, while it evaluates rules, when each date expression's result changes: an
//! `in_range` not begun yet changes at its start, one under way a second after its end; a `gt`
//! not yet true a second after its start; a true `lt` at its end; expressions that are already
//! past, and `date_spec`s, never. Only expressions actually evaluated count: an `and` stops at
//! the first false part, an `or` at the first true one, a set of rules at the first that passes.
//! The rules looked at are those of location constraints (for every node) and of the nvpair sets
//! (cluster options, resource and operation defaults, resources' meta, instance and utilization
//! sets, operations' sets, node attributes).

use std::collections::BTreeMap;

use crate::cib::{Cib, NvSet};
use crate::observed::Observed;
use crate::rules::{RscData, eval_rule_noting};

/// The rules of a set, evaluated until one passes.
fn note_set(set: &NvSet, attrs: &BTreeMap<String, String>, now: i64, next: &mut Option<i64>) {
    for rule in &set.rules {
        if eval_rule_noting(rule, attrs, now, None, Some(next)) {
            break;
        }
    }
}

/// Lowers `obs.recheck_by` to the earliest change of the date rules Pacemaker evaluates.
pub fn apply(cib: &Cib, obs: &mut Observed) {
    let now = obs.now;
    let none = BTreeMap::new();
    let mut next = None;
    let sets = |sets: &[NvSet], per_node: bool, next: &mut Option<i64>| {
        for set in sets {
            note_set(set, &none, now, next);
            if per_node {
                for n in &obs.nodes {
                    note_set(set, &n.attrs, now, next);
                }
            }
        }
    };
    sets(&cib.option_sets, false, &mut next);
    sets(&cib.rsc_defaults, false, &mut next);
    sets(&cib.op_defaults, false, &mut next);
    for node in &cib.nodes {
        sets(&node.attrs, false, &mut next);
        sets(&node.utilization, false, &mut next);
    }
    for r in &cib.resources {
        if let crate::cib::ResourceDef::Group(g) = r {
            sets(&g.meta, false, &mut next);
        }
    }
    for p in cib.primitives() {
        sets(&p.meta, false, &mut next);
        sets(&p.params, true, &mut next);
        sets(&p.utilization, false, &mut next);
        for op in &p.ops {
            sets(&op.meta, false, &mut next);
            sets(&op.params, true, &mut next);
        }
    }
    for loc in &cib.locations {
        if loc.rules.is_empty() {
            continue;
        }
        let rsc = match obs.rsc_index(&loc.rsc) {
            Some(ri) => Some(RscData {
                params: &obs.resources[ri].params,
                meta: &obs.resources[ri].meta,
            }),
            None if obs.groups.iter().any(|g| g.id == loc.rsc) => None,
            None => continue,
        };
        for rule in &loc.rules {
            for n in &obs.nodes {
                eval_rule_noting(rule, &n.attrs, now, rsc, Some(&mut next));
            }
        }
    }
    if let Some(t) = next {
        obs.update_recheck_by(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cib::Element;
    use crate::rules::{date_expression_change, parse_iso_date};

    fn date(op: &str, attrs: &[(&str, &str)]) -> Element {
        let mut a = vec![("operation".to_string(), op.to_string())];
        a.extend(attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Element {
            name: "date_expression".into(),
            attrs: a,
            children: vec![],
            line: 0,
        }
    }

    #[test]
    fn change_times_follow_pacemakers_rules() {
        let t = |s: &str| parse_iso_date(s).expect("date");
        let now = t("2019-09-23 12:00:00Z");
        let s = ("start", "2019-09-23 13:00:00Z");
        let e = ("end", "2019-09-23 14:00:00Z");
        // Not begun: at the start; under way: a second after the end; past: never.
        assert_eq!(
            date_expression_change(&date("in_range", &[s, e]), now),
            Some(t(s.1))
        );
        let during = t("2019-09-23 13:30:00Z");
        assert_eq!(
            date_expression_change(&date("in_range", &[s, e]), during),
            Some(t(e.1) + 1)
        );
        assert_eq!(
            date_expression_change(&date("in_range", &[s, e]), t(e.1) + 1),
            None
        );
        // gt: a second after its start while not true; lt: at its end while true.
        assert_eq!(
            date_expression_change(&date("gt", &[s]), now),
            Some(t(s.1) + 1)
        );
        assert_eq!(
            date_expression_change(&date("gt", &[s]), t(s.1)),
            Some(t(s.1) + 1)
        );
        assert_eq!(date_expression_change(&date("gt", &[s]), during), None);
        assert_eq!(date_expression_change(&date("lt", &[e]), now), Some(t(e.1)));
        assert_eq!(date_expression_change(&date("lt", &[e]), t(e.1)), None);
    }

    #[test]
    fn an_and_stops_at_its_first_false_part() {
        let now = parse_iso_date("2019-09-23 12:00:00Z").expect("date");
        let fails = Element {
            name: "expression".into(),
            attrs: vec![
                ("attribute".into(), "#uname".into()),
                ("operation".into(), "eq".into()),
                ("value".into(), "n1".into()),
            ],
            children: vec![],
            line: 0,
        };
        let later = date("gt", &[("start", "2019-09-23 13:00:00Z")]);
        let rule = |children: Vec<Element>, op: &str| Element {
            name: "rule".into(),
            attrs: vec![("boolean-op".into(), op.into())],
            children,
            line: 0,
        };
        let attrs = BTreeMap::from([("#uname".to_string(), "n2".to_string())]);
        let mut next = None;
        assert!(!eval_rule_noting(
            &rule(vec![fails.clone(), later.clone()], "and"),
            &attrs,
            now,
            None,
            Some(&mut next)
        ));
        assert_eq!(next, None);
        assert!(!eval_rule_noting(
            &rule(vec![later, fails], "and"),
            &attrs,
            now,
            None,
            Some(&mut next)
        ));
        assert_eq!(next, parse_iso_date("2019-09-23 13:00:01Z"));
    }
}
