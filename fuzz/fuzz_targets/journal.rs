//! Fuzz target: the agent's migration journal reader. Whatever bytes are in
//! `VirtualDomain-<rsc>.migrations.json`, reading never panics and appending replaces a corrupt
//! journal with a well-formed one of at most `KEEP` entries; the start record reader likewise.
#![no_main]

use highlander_agent::{journal, lock};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let instance = "vm:1";
    let _ = std::fs::write(journal::path(dir.path(), instance), data);
    let _ = std::fs::write(lock::record_path(dir.path(), instance), data);
    let before = journal::read(dir.path(), instance);
    let _ = lock::read_record(dir.path(), instance);
    let entry = journal::Entry {
        action: "migrate_to",
        domain: "vm1",
        source: "a",
        target: "b",
        phase: "begin",
        detail: "fuzz",
    };
    journal::append(dir.path(), instance, &entry).expect("append to a writable directory");
    let after = journal::read(dir.path(), instance);
    assert!(!after.is_empty() && after.len() <= journal::KEEP);
    assert_eq!(after[after.len() - 1]["phase"], "begin");
    assert!(after.len() <= before.len() + 1);
});
