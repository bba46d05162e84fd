//! Constraints for a generated CIB: locations (by node and by rule on a node attribute),
//! colocations and orderings (pairs and sets, of each kind and role), and tickets.

use super::generator::{Model, Shape};
use super::rng::Rng;

/// A top-level resource: its id and shape.
type TopRef = (String, Shape);

const SCORES: [&str; 6] = ["INFINITY", "-INFINITY", "100", "-100", "50", "200"];

/// Generates the constraints between the model's top-level resources.
pub fn generate(rng: &mut Rng, model: &mut Model) {
    let tops: Vec<(String, Shape)> = model
        .tops
        .iter()
        .filter(|t| t.id != "fencing")
        .map(|t| (t.id.clone(), t.shape))
        .collect();
    if tops.is_empty() {
        return;
    }
    let count = rng.below(5);
    for i in 0..count {
        let constraint = match rng.below(100) {
            0..=34 => location(rng, model, &tops, i),
            35..=44 => location_rule(rng, model, &tops, i),
            45..=64 => colocation(rng, model, &tops, i),
            65..=84 => order(rng, model, &tops, i),
            85..=91 => set(rng, model, &tops, i),
            _ => ticket(rng, model, &tops, i),
        };
        if let Some(constraint) = constraint {
            model.constraints.push(constraint);
        }
    }
}

fn location(
    rng: &mut Rng,
    model: &mut Model,
    tops: &[(String, Shape)],
    i: usize,
) -> Option<String> {
    let (rsc, _) = &tops[rng.below(tops.len())];
    let node = model.nodes[rng.below(model.nodes.len())].name.clone();
    let score = rng.pick(&SCORES);
    model.feature(format!("location:{}", sign(score)));
    Some(format!(
        r#"<rsc_location id="loc{i}" rsc="{rsc}" node="{node}" score="{score}"/>"#
    ))
}

fn sign(score: &str) -> &'static str {
    match score {
        "INFINITY" => "inf",
        "-INFINITY" => "-inf",
        s if s.starts_with('-') => "negative",
        _ => "positive",
    }
}

fn location_rule(
    rng: &mut Rng,
    model: &mut Model,
    tops: &[(String, Shape)],
    i: usize,
) -> Option<String> {
    let (rsc, _) = &tops[rng.below(tops.len())];
    let score = rng.pick(&SCORES);
    let (op, value) = rng.pick(&[("eq", "a"), ("ne", "a"), ("defined", "")]);
    let value = if value.is_empty() {
        String::new()
    } else {
        format!(r#" value="{value}""#)
    };
    model.feature(format!("location-rule:{op}"));
    Some(format!(
        r#"<rsc_location id="loc{i}" rsc="{rsc}"><rule id="loc{i}-rule" score="{score}"><expression id="loc{i}-expr" attribute="site" operation="{op}"{value}/></rule></rsc_location>"#
    ))
}

/// Two different tops, or none when there is only one.
fn pair<'a>(rng: &mut Rng, tops: &'a [(String, Shape)]) -> Option<(&'a TopRef, &'a TopRef)> {
    if tops.len() < 2 {
        return None;
    }
    let a = rng.below(tops.len());
    let b = (a + 1 + rng.below(tops.len() - 1)) % tops.len();
    Some((&tops[a], &tops[b]))
}

fn colocation(
    rng: &mut Rng,
    model: &mut Model,
    tops: &[(String, Shape)],
    i: usize,
) -> Option<String> {
    let ((rsc, _), (with, with_shape)) = pair(rng, tops)?;
    let score = rng.pick(&["INFINITY", "-INFINITY", "100", "-50"]);
    let role = if *with_shape == Shape::Promotable && rng.chance(60) {
        model.feature("colocation:with-promoted");
        r#" with-rsc-role="Promoted""#
    } else {
        ""
    };
    model.feature(format!("colocation:{}", sign(score)));
    Some(format!(
        r#"<rsc_colocation id="col{i}" rsc="{rsc}" with-rsc="{with}" score="{score}"{role}/>"#
    ))
}

fn order(rng: &mut Rng, model: &mut Model, tops: &[(String, Shape)], i: usize) -> Option<String> {
    let ((first, first_shape), (then, _)) = pair(rng, tops)?;
    let kind = rng.pick(&["Mandatory", "Optional", "Serialize"]);
    model.feature(format!("order:{kind}"));
    let action = if *first_shape == Shape::Promotable && rng.chance(50) {
        model.feature("order:first-promote");
        r#" first-action="promote""#
    } else {
        ""
    };
    let symmetrical = if rng.chance(20) {
        model.feature("order:asymmetrical");
        r#" symmetrical="false""#
    } else {
        ""
    };
    Some(format!(
        r#"<rsc_order id="ord{i}" first="{first}" then="{then}" kind="{kind}"{action}{symmetrical}/>"#
    ))
}

fn set(rng: &mut Rng, model: &mut Model, tops: &[(String, Shape)], i: usize) -> Option<String> {
    let ((a, _), (b, _)) = pair(rng, tops)?;
    let refs = format!(r#"<resource_ref id="{a}"/><resource_ref id="{b}"/>"#);
    let sequential = if rng.chance(30) {
        model.feature("set:non-sequential");
        r#" sequential="false""#
    } else {
        ""
    };
    if rng.chance(50) {
        model.feature("set:colocation");
        Some(format!(
            r#"<rsc_colocation id="col{i}" score="INFINITY"><resource_set id="col{i}-set"{sequential}>{refs}</resource_set></rsc_colocation>"#
        ))
    } else {
        model.feature("set:order");
        Some(format!(
            r#"<rsc_order id="ord{i}" kind="Mandatory"><resource_set id="ord{i}-set"{sequential}>{refs}</resource_set></rsc_order>"#
        ))
    }
}

fn ticket(rng: &mut Rng, model: &mut Model, tops: &[(String, Shape)], i: usize) -> Option<String> {
    let (rsc, shape) = &tops[rng.below(tops.len())];
    let mut policies = vec!["stop", "freeze"];
    if *shape == Shape::Promotable {
        policies.push("demote");
    }
    if model.stonith {
        policies.push("fence");
    }
    let policy = rng.pick(&policies);
    let name = format!("ticket{}", i % 2);
    if !model.tickets.iter().any(|(t, _)| *t == name) {
        let granted = rng.chance(50);
        model.tickets.push((name.clone(), granted));
        model.feature(format!("ticket:granted={granted}"));
    }
    model.feature(format!("ticket:loss-policy={policy}"));
    Some(format!(
        r#"<rsc_ticket id="tkt{i}" rsc="{rsc}" ticket="{name}" loss-policy="{policy}"/>"#
    ))
}
