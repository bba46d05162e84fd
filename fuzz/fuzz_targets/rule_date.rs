//! Fuzz target: rule and date expressions: ISO 8601 dates (`-t`, `date_expression`), durations and
//! intervals, scores, and `eval_rule` on a rule element read from the input.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use pengine::parse_iso_date;
// The rule evaluator and the score and interval readers are internals (white-box fuzzing).
use pengine::unstable::{RscData, eval_rule, parse_interval_ms, parse_score, parse_xml};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_iso_date(text);
    let _ = parse_interval_ms(text);
    if let Some(s) = parse_score(text) {
        assert!((-1_000_000..=1_000_000).contains(&s));
    }
    // As a rule: `<rule ...>` XML, evaluated against attributes named in the first line.
    if let Ok(rule) = parse_xml(text) {
        let mut attrs = BTreeMap::new();
        attrs.insert("#uname".to_string(), "node1".to_string());
        attrs.insert("#kind".to_string(), "cluster".to_string());
        attrs.insert("site".to_string(), "a".to_string());
        attrs.insert("n".to_string(), "10".to_string());
        for now in [0, 1_767_225_600, -86_400, i64::MAX / 2, i64::MIN / 2] {
            let rsc = RscData {
                params: &attrs,
                meta: &attrs,
            };
            let _ = eval_rule(&rule, &attrs, now, Some(rsc));
        }
    }
});
