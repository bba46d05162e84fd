//! Fuzz target: the agent's domain XML reader (`config::domain_name_from_xml`), the only thing the
//! agent reads from `config` before handing the file to libvirt.
#![no_main]

use highlander_agent::config::domain_name_from_xml;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match domain_name_from_xml(text) {
        Ok(name) => {
            assert!(!name.is_empty());
            assert_eq!(name, name.trim());
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
