//! Rules and dates: Pacemaker's `rule`, `expression`, `date_expression` and `date_spec`
//! evaluated against node attributes, resource data and a time; ISO 8601 dates and durations;
//! when a date expression's result changes (for `recheck-by`). Stages read rules from `cib` and
//! evaluate them here, so observe, placement, reconcile and graph share one evaluator.

use std::collections::BTreeMap;

use crate::cib::{Element, INFINITY, parse_score};

/// A matching location rule's score on a node: its `score`, or the node's value of its
/// `score-attribute` (-INFINITY when the node has none, as Pacemaker's `get_node_score`), or 0.
pub(crate) fn rule_score(rule: &Element, attrs: &BTreeMap<String, String>) -> i64 {
    match (rule.attr("score"), rule.attr("score-attribute")) {
        (Some(s), _) => parse_score(s).unwrap_or(0),
        (None, Some(a)) => attrs
            .get(a)
            .map_or(-INFINITY, |v| parse_score(v).unwrap_or(0)),
        _ => 0,
    }
}

fn cmp_values(lhs: &str, rhs: &str, kind: &str) -> Option<std::cmp::Ordering> {
    match kind {
        "integer" => {
            let a: i64 = lhs
                .trim()
                .parse::<f64>()
                .ok()
                .map(|v| v as i64)
                .or_else(|| lhs.trim().parse().ok())?;
            let b: i64 = rhs
                .trim()
                .parse::<f64>()
                .ok()
                .map(|v| v as i64)
                .or_else(|| rhs.trim().parse().ok())?;
            Some(a.cmp(&b))
        }
        "number" => {
            let a: f64 = lhs.trim().parse().ok()?;
            let b: f64 = rhs.trim().parse().ok()?;
            a.partial_cmp(&b)
        }
        "version" => {
            let pa: Vec<i64> = lhs.split('.').map(|p| p.parse().unwrap_or(0)).collect();
            let pb: Vec<i64> = rhs.split('.').map(|p| p.parse().unwrap_or(0)).collect();
            let n = pa.len().max(pb.len());
            for i in 0..n {
                let (x, y) = (
                    pa.get(i).copied().unwrap_or(0),
                    pb.get(i).copied().unwrap_or(0),
                );
                if x != y {
                    return Some(x.cmp(&y));
                }
            }
            Some(std::cmp::Ordering::Equal)
        }
        _ => Some(lhs.cmp(rhs)),
    }
}

/// The resource a location rule is evaluated for: its parameters and meta-attributes, which
/// an expression's `value-source="param"` or `"meta"` reads.
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct RscData<'a> {
    pub params: &'a BTreeMap<String, String>,
    pub meta: &'a BTreeMap<String, String>,
}

pub(crate) fn eval_expression(
    e: &Element,
    attrs: &BTreeMap<String, String>,
    rsc: Option<RscData<'_>>,
) -> bool {
    let Some(attr) = e.attr("attribute") else {
        return false;
    };
    let op = e.attr("operation").unwrap_or("").to_ascii_lowercase();
    let lhs = attrs.get(attr);
    let mut value = e.attr("value").map(str::to_string);
    if let (Some(src), Some(v)) = (e.attr("value-source"), value.as_deref()) {
        match src {
            "param" => value = rsc.and_then(|r| r.params.get(v).cloned()),
            "meta" => value = rsc.and_then(|r| r.meta.get(v).cloned()),
            _ => {}
        }
    }
    match op.as_str() {
        "defined" => return lhs.is_some(),
        "not_defined" => return lhs.is_none(),
        _ => {}
    }
    let (Some(lhs), Some(rhs)) = (lhs, value) else {
        return op == "ne";
    };
    let kind = match e.attr("type").map(|t| t.to_ascii_lowercase()) {
        Some(t) => {
            if t == "number" || t == "integer" || t == "version" || t == "string" {
                t
            } else {
                "string".into()
            }
        }
        None => {
            if matches!(op.as_str(), "lt" | "gt" | "lte" | "gte") {
                if lhs.contains('.') || rhs.contains('.') {
                    "number".into()
                } else {
                    "integer".into()
                }
            } else {
                "string".into()
            }
        }
    };
    let ord = match cmp_values(lhs, &rhs, &kind) {
        Some(o) => o,
        None => {
            // Unparsable numbers fall back to string comparison.
            lhs.as_str().cmp(rhs.as_str())
        }
    };
    use std::cmp::Ordering::*;
    match op.as_str() {
        "eq" => ord == Equal,
        "ne" => ord != Equal,
        "lt" => ord == Less,
        "lte" => ord != Greater,
        "gt" => ord == Greater,
        "gte" => ord != Less,
        _ => false,
    }
}

/// Parses an ISO 8601 date-time ("2005-01-01 12:00:00Z", "2019-09-26T10:00") to epoch seconds (UTC).
pub fn parse_iso_date(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], s[i + 1..].trim()),
        None => (s, ""),
    };
    let dp: Vec<&str> = date.split('-').collect();
    let (y, m, d) = match dp.len() {
        3 => (
            dp[0].parse::<i64>().ok()?,
            dp[1].parse::<i64>().ok()?,
            dp[2].parse::<i64>().ok()?,
        ),
        2 => (dp[0].parse().ok()?, dp[1].parse().ok()?, 1),
        1 => (dp[0].parse().ok()?, 1, 1),
        _ => return None,
    };
    let mut offset = 0i64;
    let mut t = time.trim_end_matches('Z').to_string();
    if let Some(i) = t.rfind(['+', '-']) {
        let tz = t[i..].to_string();
        t.truncate(i);
        let sign = if tz.starts_with('-') { -1 } else { 1 };
        let digits: String = tz[1..].chars().filter(|c| c.is_ascii_digit()).collect();
        let (hh, mm) = if digits.len() >= 4 {
            (
                digits[..2].parse().unwrap_or(0),
                digits[2..4].parse().unwrap_or(0),
            )
        } else {
            (digits.parse().unwrap_or(0), 0)
        };
        offset = sign * (hh * 3600 + mm * 60);
    }
    let tp: Vec<i64> = if t.is_empty() {
        vec![]
    } else {
        t.split(':')
            .map(|p| p.trim().parse::<f64>().unwrap_or(0.0) as i64)
            .collect()
    };
    let secs = tp.first().copied().unwrap_or(0) * 3600
        + tp.get(1).copied().unwrap_or(0) * 60
        + tp.get(2).copied().unwrap_or(0);
    Some(days_from_civil(y, m, d) * 86400 + secs - offset)
}

/// Days since 1970-01-01 for a proleptic Gregorian date.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// Civil date from days since the epoch: (year, month, day).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn in_spec_range(spec: Option<&str>, value: i64) -> bool {
    let Some(spec) = spec else { return true };
    match spec.split_once('-') {
        Some((a, b)) => {
            let a: i64 = a.trim().parse().unwrap_or(i64::MIN);
            let b: i64 = b.trim().parse().unwrap_or(i64::MAX);
            value >= a && value <= b
        }
        None => spec
            .trim()
            .parse::<i64>()
            .map(|v| v == value)
            .unwrap_or(false),
    }
}

fn eval_date_spec(spec: &Element, now: i64) -> bool {
    let days = now.div_euclid(86400);
    let secs = now.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    let yday = days - days_from_civil(y, 1, 1) + 1;
    let wday = (days + 3).rem_euclid(7) + 1; // Monday = 1
    in_spec_range(spec.attr("years"), y)
        && in_spec_range(spec.attr("months"), m)
        && in_spec_range(spec.attr("monthdays"), d)
        && in_spec_range(spec.attr("hours"), secs / 3600)
        && in_spec_range(spec.attr("minutes"), (secs / 60) % 60)
        && in_spec_range(spec.attr("seconds"), secs % 60)
        && in_spec_range(spec.attr("yeardays"), yday)
        && in_spec_range(spec.attr("weekdays"), wday)
}

pub(crate) fn add_duration(start: i64, dur: &Element) -> i64 {
    let g = |n: &str| {
        dur.attr(n)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(0)
    };
    let mut t = start
        + g("seconds")
        + g("minutes") * 60
        + g("hours") * 3600
        + g("days") * 86400
        + g("weeks") * 7 * 86400;
    let months = g("months") + g("years") * 12;
    if months != 0 {
        let days = t.div_euclid(86400);
        let secs = t.rem_euclid(86400);
        let (y, m, d) = civil_from_days(days);
        let total = y * 12 + (m - 1) + months;
        t = days_from_civil(total.div_euclid(12), total.rem_euclid(12) + 1, d) * 86400 + secs;
    }
    t
}

/// The window a date expression names: its `start`, and its `end` (for `in_range` without an
/// end, the start plus its `duration`). Unparsable dates count as absent.
pub(crate) fn date_window(e: &Element) -> (Option<i64>, Option<i64>) {
    let start = e.attr("start").and_then(parse_iso_date);
    let mut end = e.attr("end").and_then(parse_iso_date);
    if end.is_none() && e.attr("operation").unwrap_or("in_range") == "in_range" {
        if let (Some(s), Some(d)) = (start, e.child("duration")) {
            end = Some(add_duration(s, d));
        }
    }
    (start, end)
}

pub(crate) fn eval_date_expression(e: &Element, now: i64) -> bool {
    let (start, end) = date_window(e);
    match e.attr("operation").unwrap_or("in_range") {
        "in_range" => {
            start.map(|s| now >= s).unwrap_or(true) && end.map(|en| now <= en).unwrap_or(true)
        }
        "gt" => start.map(|s| now > s).unwrap_or(false),
        "lt" => end.map(|en| now < en).unwrap_or(false),
        "date_spec" => e
            .child("date_spec")
            .map(|s| eval_date_spec(s, now))
            .unwrap_or(false),
        _ => false,
    }
}

/// Evaluates a rule against node attributes at time `now` (as `eval_rule_noting`
/// does, without noting the change times of its date expressions).
pub fn eval_rule(
    rule: &Element,
    attrs: &BTreeMap<String, String>,
    now: i64,
    rsc: Option<RscData<'_>>,
) -> bool {
    eval_rule_noting(rule, attrs, now, rsc, None)
}

/// When the result of a date expression changes after `now` (None: never, as far as Pacemaker
/// tracks it).
pub fn date_expression_change(e: &Element, now: i64) -> Option<i64> {
    let (start, end) = date_window(e);
    match e.attr("operation").unwrap_or("in_range") {
        "in_range" => match (start, end) {
            (Some(s), _) if now < s => Some(s),
            (_, Some(en)) if now > en => None,
            (_, Some(en)) => Some(en.saturating_add(1)),
            _ => None,
        },
        "gt" => start.filter(|&s| now <= s).map(|s| s.saturating_add(1)),
        "lt" => end.filter(|&en| now < en),
        _ => None,
    }
}

/// Evaluates a rule as `eval_rule` does, stopping where Pacemaker stops, and lowers
/// `next`, when given, to the change time of every date expression it evaluates.
pub fn eval_rule_noting(
    rule: &Element,
    attrs: &BTreeMap<String, String>,
    now: i64,
    rsc: Option<RscData<'_>>,
    mut next: Option<&mut Option<i64>>,
) -> bool {
    let or = rule
        .attr("boolean-op")
        .map(|b| b.eq_ignore_ascii_case("or"))
        .unwrap_or(false);
    let mut any = false;
    for c in &rule.children {
        let v = match c.name.as_str() {
            "expression" => eval_expression(c, attrs, rsc),
            "date_expression" => {
                if let Some(next) = next.as_deref_mut() {
                    if let Some(t) = date_expression_change(c, now) {
                        if next.is_none_or(|n| n > t) {
                            *next = Some(t);
                        }
                    }
                }
                eval_date_expression(c, now)
            }
            "rule" => eval_rule_noting(c, attrs, now, rsc, next.as_deref_mut()),
            "rsc_expression" | "op_expression" => true,
            _ => continue,
        };
        any = true;
        if or == v {
            return v;
        }
    }
    !any || !or
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cib::parse_xml;

    #[test]
    fn rules_compare_by_type() {
        let mut attrs = BTreeMap::new();
        attrs.insert("a".to_string(), "10".to_string());
        for (xml, want) in [
            (
                r#"<rule><expression attribute="a" operation="gt" value="9"/></rule>"#,
                true,
            ),
            (
                r#"<rule><expression attribute="a" operation="gt" value="9" type="string"/></rule>"#,
                false,
            ),
            (
                r#"<rule><expression attribute="a" operation="defined"/></rule>"#,
                true,
            ),
            (
                r#"<rule boolean-op="or"><expression attribute="b" operation="defined"/><expression attribute="a" operation="eq" value="10"/></rule>"#,
                true,
            ),
        ] {
            let el = parse_xml(xml).expect("xml");
            assert_eq!(eval_rule(&el, &attrs, 0, None), want, "{xml}");
        }
    }

    #[test]
    fn dates_parse_to_epoch() {
        assert_eq!(parse_iso_date("1970-01-02 00:00:00Z"), Some(86400));
        assert_eq!(parse_iso_date("2022-04-01 17:57:38Z"), Some(1648835858));
        assert_eq!(civil_from_days(19083), (2022, 4, 1));
    }
}
