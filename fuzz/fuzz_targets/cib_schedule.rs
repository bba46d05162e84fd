//! Fuzz target: the whole planner on a parsed CIB (`Cib::plan`, `render_simulation`, graph XML,
//! DOT and scores), checking that the output is deterministic: the same input gives the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cib) = pengine::parse_cib(text) else {
        return;
    };
    // A fixed "now" (2026-01-01); the execution date of the CIB wins when present.
    let now = cib.execution_date.unwrap_or(1_767_225_600);
    let first = pengine::render_simulation(&cib, now);
    let plan = cib.plan(now);
    let (xml, dot, scores) = (plan.graph_xml(), plan.dot(), plan.scores());
    let again = pengine::Cib::parse(text).expect("parsed once");
    assert_eq!(first, pengine::render_simulation(&again, now));
    let plan2 = again.plan(now);
    assert_eq!(xml, plan2.graph_xml());
    assert_eq!(dot, plan2.dot());
    assert_eq!(scores, plan2.scores());
});
