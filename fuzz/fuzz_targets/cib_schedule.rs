//! Fuzz target: the whole planner on a parsed CIB (`schedule`, `render_simulation`, graph XML and
//! DOT), checking that the output is deterministic: the same input gives the same bytes.
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
    let first = pengine::render_simulation(&cib, now, None);
    let t = pengine::schedule(&cib, now);
    let xml = pengine::graph::render_graph_xml(&t.observed, &t.graph);
    let dot = pengine::graph::render_dot(&t.observed, &t.graph);
    let scores = pengine::graph::render_scores(&t.observed, &t.desired);
    let again = pengine::parse_cib(text).expect("parsed once");
    assert_eq!(first, pengine::render_simulation(&again, now, None));
    let t2 = pengine::schedule(&again, now);
    assert_eq!(xml, pengine::graph::render_graph_xml(&t2.observed, &t2.graph));
    assert_eq!(dot, pengine::graph::render_dot(&t2.observed, &t2.graph));
    assert_eq!(scores, pengine::graph::render_scores(&t2.observed, &t2.desired));
});
