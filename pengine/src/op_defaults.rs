//! op_defaults as one operation of one resource sees them: sets whose rules name a resource
//! agent (`rsc_expression`) or an operation (`op_expression`) apply only to matching ones.
//!
//! Pacemaker evaluates op_defaults for every action with the resource's class, provider and
//! type and the action's name and interval; node attribute expressions see no node. Sets apply
//! by score, highest first; among sets of equal score the later one in the configuration wins,
//! and a name set by an applied set keeps that value.

use std::collections::BTreeMap;

use crate::cib::{Element, NvSet, parse_interval_ms};

/// The resource agent and the operation the defaults are evaluated for.
#[derive(Debug, Clone, Copy)]
pub struct OpContext<'a> {
    pub class: &'a str,
    pub provider: Option<&'a str>,
    pub kind: &'a str,
    pub task: &'a str,
    pub interval_ms: u64,
}

/// The op_defaults meta-attributes that apply to the operation `ctx` at time `now`.
pub fn for_op(sets: &[NvSet], ctx: &OpContext, now: i64) -> BTreeMap<String, String> {
    let mut ordered: Vec<&NvSet> = sets.iter().rev().collect();
    ordered.sort_by_key(|s| std::cmp::Reverse(s.score));
    let mut out = BTreeMap::new();
    for set in ordered {
        if set.rules.iter().all(|r| rule_passes(r, ctx, now)) {
            for (k, v) in &set.pairs {
                out.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    out
}

fn rule_passes(rule: &Element, ctx: &OpContext, now: i64) -> bool {
    let or = rule
        .attr("boolean-op")
        .is_some_and(|b| b.eq_ignore_ascii_case("or"));
    let mut any = false;
    let mut result = !or;
    for c in &rule.children {
        let v = match c.name.as_str() {
            "rsc_expression" => rsc_matches(c, ctx),
            "op_expression" => op_matches(c, ctx),
            "rule" => rule_passes(c, ctx, now),
            "expression" | "date_expression" => {
                // Evaluated as a rule of its own, without node attributes.
                let single = Element {
                    name: "rule".into(),
                    attrs: Vec::new(),
                    children: vec![c.clone()],
                    line: c.line,
                };
                crate::rules::eval_rule(&single, &BTreeMap::new(), now, None)
            }
            _ => continue,
        };
        any = true;
        if or && v {
            result = true;
        } else if !or && !v {
            result = false;
        }
    }
    !any || result
}

fn rsc_matches(e: &Element, ctx: &OpContext) -> bool {
    e.attr("class").is_none_or(|c| c == ctx.class)
        && e.attr("provider").is_none_or(|p| Some(p) == ctx.provider)
        && e.attr("type").is_none_or(|t| t == ctx.kind)
}

fn op_matches(e: &Element, ctx: &OpContext) -> bool {
    e.attr("name") == Some(ctx.task)
        && e.attr("interval")
            .is_none_or(|i| parse_interval_ms(i) == ctx.interval_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(name: &str, attrs: &[(&str, &str)], children: Vec<Element>) -> Element {
        Element {
            name: name.into(),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            children,
            line: 0,
        }
    }

    fn set(id: &str, score: i64, rule: Option<Element>, timeout: &str) -> NvSet {
        NvSet {
            id: id.into(),
            score,
            rules: rule.into_iter().collect(),
            pairs: vec![("timeout".into(), timeout.into())],
        }
    }

    fn ctx<'a>(kind: &'a str, task: &'a str, interval_ms: u64) -> OpContext<'a> {
        OpContext {
            class: "ocf",
            provider: Some("pacemaker"),
            kind,
            task,
            interval_ms,
        }
    }

    #[test]
    fn rules_select_by_agent_and_operation_and_the_later_equal_set_wins() {
        let dummy = el(
            "rule",
            &[("score", "INFINITY")],
            vec![el("rsc_expression", &[("type", "Dummy")], vec![])],
        );
        let monitor = el(
            "rule",
            &[("score", "INFINITY")],
            vec![el("op_expression", &[("name", "monitor")], vec![])],
        );
        let monitor_10s = el(
            "rule",
            &[],
            vec![el(
                "op_expression",
                &[("name", "monitor"), ("interval", "10s")],
                vec![],
            )],
        );
        let sets = vec![
            set("plain", 0, None, "5s"),
            set("dummy", 1_000_000, Some(dummy), "6s"),
            set("monitor", 1_000_000, Some(monitor), "7s"),
            set("monitor-10s", 1_000_000, Some(monitor_10s), "8s"),
        ];
        let timeout = |c: OpContext| for_op(&sets, &c, 0).get("timeout").cloned();
        assert_eq!(timeout(ctx("Dummy", "start", 0)).as_deref(), Some("6s"));
        assert_eq!(timeout(ctx("Dummy", "monitor", 0)).as_deref(), Some("7s"));
        assert_eq!(
            timeout(ctx("IPaddr2", "monitor", 10_000)).as_deref(),
            Some("8s")
        );
        assert_eq!(timeout(ctx("IPaddr2", "stop", 0)).as_deref(), Some("5s"));
    }
}
