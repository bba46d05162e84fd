//! Fuzz target: the CIB reader (`pengine::parse_cib`: XML, configuration and status sections).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match pengine::parse_cib(text) {
        Ok(cib) => {
            for d in &cib.diagnostics {
                assert!(!d.message.is_empty());
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
